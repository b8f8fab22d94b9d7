"""The collector's gRPC shell: Advertise / Query / Snapshot over an :class:`AdStore`.

Housekeeping follows HTCondor's collector: the housekeeper runs every CLASSAD_LIFETIME
seconds (``scheduleHousekeeper(CLASSAD_LIFETIME)``), first one CLASSAD_LIFETIME after
start, and drops ads older than their lifetime; so a dead daemon's ad lingers for between
one and two lifetimes, as in a real pool. CLASSAD_LIFETIME <= 0 turns housekeeping off
(HTCondor's "no housekeeper"). A test or launcher may pass ``housekeeping_interval``.

The collector holds its own ad (MyType "Collector"), as HTCondor's ``sendCollectorAd``
does: Name is COLLECTOR_NAME (with ``@<host>`` added when it has no ``@``), else the
host; it carries the pool totals HTCondor publishes (HostsTotal, HostsClaimed,
HostsUnclaimed, HostsOwner, RunningJobs, IdleJobs, MachineAds, SubmitterAds). It is
refreshed every COLLECTOR_UPDATE_INTERVAL (900), or CLASSAD_LIFETIME if that is shorter,
so that it never expires.

Events: "ad_expired" (ad_type, name) for each ad the housekeeper drops, "ad_invalidated"
(ad_type, name) for each ad an invalidating update removes; the daemon is the collector's
Name. ``status()`` gives ads stored per type and request/refusal/expiry counts.

Query and Snapshot replies are assembled from the ads' stored wire bytes (see
``store.py``) and handed to gRPC already serialised; the servicer methods return bytes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

import grpc
import grpc.aio

from ..auth import Role, current_role
from ..daemon import DaemonContext, abort_invalid, periodic
from ..rpc import YIELD_EVERY
from ..v1 import collector_pb2 as cpb
from ..v1 import collector_pb2_grpc as cgrpc
from ..wire import PARTS, WireError, frame_field, room_for
from .selfad import collector_ad
from .store import (
    MACHINE_PRIVATE,
    AdStore,
    CollectorError,
    CostlyConstraint,
    projection_keys,
)

__all__ = ["SERVICE_NAME", "CollectorService"]

log = logging.getLogger(__name__)

SERVICE_NAME = "mockpool.v1.Collector"
_PRIVATE_READERS = frozenset({Role.NEGOTIATOR, Role.ADMIN})


def _method(name: str) -> str:
    return f"/{SERVICE_NAME}/{name}"


def _serialize(reply: Any) -> bytes:
    """Replies may come pre-serialised (bytes) or as messages."""
    return reply if isinstance(reply, bytes) else reply.SerializeToString()


def _pb_name(msg: Any) -> str:
    """The Name literal of a wire ad, for error lines about ads that did not decode."""
    for attr in msg.attributes:
        if (
            attr.name.lower() == "name"
            and attr.WhichOneof("expr") == "literal"
            and attr.literal.WhichOneof("kind") == "str"
        ):
            return attr.literal.str
    return ""


class CollectorService(cgrpc.CollectorServicer):
    """The collector daemon: one ad store behind the Collector gRPC service."""

    METHOD_ROLES = {
        _method("Advertise"): frozenset({Role.DAEMON, Role.NEGOTIATOR, Role.ADMIN}),
        _method("Snapshot"): frozenset({Role.NEGOTIATOR, Role.ADMIN}),
        _method("Query"): frozenset(Role),
    }

    def __init__(self, ctx: DaemonContext, *, housekeeping_interval: float | None = None) -> None:
        self.ctx = ctx
        cfg = ctx.config.for_subsystem("COLLECTOR")
        self.classad_lifetime = cfg.get_int("CLASSAD_LIFETIME", 900)
        self.update_interval = cfg.get_int("COLLECTOR_UPDATE_INTERVAL", 900)
        self._collector_name = cfg.get_str("COLLECTOR_NAME", "").strip()
        if housekeeping_interval is None and self.classad_lifetime > 0:
            housekeeping_interval = float(self.classad_lifetime)
        self.housekeeping_interval = housekeeping_interval
        self.store = AdStore(self.classad_lifetime)
        self.name = self._make_name()
        self._tasks: list[asyncio.Task[None]] = []
        self._start_time = 0
        self._self_seq = 0
        self.stats = {
            "advertise_calls": 0,
            "updates_refused": 0,
            "invalidations": 0,
            "queries": 0,
            "snapshots": 0,
            "expired": 0,
        }

    def _make_name(self) -> str:
        name = self._collector_name
        if name:
            return name if "@" in name else f"{name}@{self.ctx.host}"
        return self.ctx.host

    # -- Service protocol --------------------------------------------------------
    def add_to_server(self, server: grpc.aio.Server) -> None:
        # The generated adder's handlers, except that replies may be pre-serialised bytes.
        handlers = {
            "Advertise": grpc.unary_unary_rpc_method_handler(
                self.Advertise,
                request_deserializer=cpb.AdvertiseRequest.FromString,
                response_serializer=_serialize,
            ),
            "Query": grpc.unary_unary_rpc_method_handler(
                self.Query,
                request_deserializer=cpb.QueryRequest.FromString,
                response_serializer=_serialize,
            ),
            "Snapshot": grpc.unary_unary_rpc_method_handler(
                self.Snapshot,
                request_deserializer=cpb.SnapshotRequest.FromString,
                response_serializer=_serialize,
            ),
        }
        server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler(SERVICE_NAME, handlers),)
        )
        server.add_registered_method_handlers(SERVICE_NAME, handlers)

    async def start(self) -> None:
        self.name = self._make_name()
        self._start_time = int(self.ctx.clock.now())
        self.publish_self_ad()
        clock = self.ctx.clock
        refresh = float(self.update_interval)
        if self.classad_lifetime > 0:
            refresh = min(refresh, float(self.classad_lifetime))
        if refresh > 0:
            self._spawn(
                periodic(
                    clock,
                    refresh,
                    self._refresh_self_ad,
                    name="collector self ad",
                    first_delay=refresh,
                )
            )
        if self.housekeeping_interval and self.housekeeping_interval > 0:
            step = self.housekeeping_interval
            self._spawn(
                periodic(
                    clock, step, self._housekeep, name="collector housekeeper", first_delay=step
                )
            )

    def _spawn(self, coro: Any) -> None:
        self._tasks.append(asyncio.get_running_loop().create_task(coro))

    async def stop(self) -> None:
        tasks, self._tasks = self._tasks, []
        for t in tasks:
            t.cancel()
        for t in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await t

    def status(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "address": self.ctx.address,
            "ads": self.store.counts(),
            "total_ads": len(self.store),
            "updates": self.store.updates,
            **self.stats,
        }

    # -- loops -------------------------------------------------------------------
    async def _housekeep(self) -> None:
        self.housekeep(self.ctx.clock.now())

    def housekeep(self, now: float) -> list[tuple[str, str]]:
        """One housekeeper round: drop stale ads, one "ad_expired" event each."""
        removed = self.store.expire(now)
        for ad_type, name in removed:
            self.ctx.events.emit(self.name, "ad_expired", ad_type=ad_type, name=name)
        self.stats["expired"] += len(removed)
        if removed:
            log.info("%s: expired %d ads", self.name, len(removed))
        return removed

    async def _refresh_self_ad(self) -> None:
        self.publish_self_ad()

    def publish_self_ad(self) -> None:
        """Store the collector's own ad with fresh pool totals."""
        self._self_seq += 1
        ad = collector_ad(
            self.store,
            name=self.name,
            address=self.ctx.address,
            start_time=self._start_time,
            sequence=self._self_seq,
            update_interval=self.update_interval,
        )
        self.store.update("Collector", ad, self.ctx.clock.now(), owned=True)

    # -- RPCs --------------------------------------------------------------------
    async def Advertise(
        self, request: cpb.AdvertiseRequest, context: grpc.aio.ServicerContext
    ) -> cpb.AdvertiseReply:
        """Apply each update on its own; a refused one is an error line, not a failure."""
        self.stats["advertise_calls"] += 1
        room_for(len(self.store))  # every stored ad's repeating part
        now = self.ctx.clock.now()
        accepted = 0
        errors: list[str] = []
        for i, upd in enumerate(request.updates):
            if i and i % YIELD_EVERY == 0:
                await asyncio.sleep(0)  # a big batch must not starve queries
                now = self.ctx.clock.now()
            try:
                raw = upd.ad.SerializeToString()
                ad = PARTS.decode(raw, upd.stable_prefix)
                if upd.invalidate:
                    name = self.store.ad_name(upd.ad_type, ad)
                    for ad_type, gone in self.store.invalidate(upd.ad_type, name):
                        self.stats["invalidations"] += 1
                        self.ctx.events.emit(
                            self.name, "ad_invalidated", ad_type=ad_type, name=gone
                        )
                else:
                    self.store.update(
                        upd.ad_type, ad, now, raw, owned=True, stable_prefix=upd.stable_prefix
                    )
                accepted += 1
            except (WireError, CollectorError) as exc:
                self.stats["updates_refused"] += 1
                ad_name = _pb_name(upd.ad)
                label = " ".join(p for p in (upd.ad_type, repr(ad_name) if ad_name else "") if p)
                errors.append(f"update {i} ({label or '?'}): {exc}")
        if errors:
            log.warning(
                "%s: refused %d of %d updates; first: %s",
                self.name,
                len(errors),
                len(request.updates),
                errors[0],
            )
        return cpb.AdvertiseReply(accepted=accepted, errors=errors)

    async def Query(self, request: cpb.QueryRequest, context: grpc.aio.ServicerContext) -> bytes:
        """Ads of one type, filtered and projected, as serialised ``QueryReply`` bytes."""
        self.stats["queries"] += 1
        ad_type = request.ad_type.strip()
        if not ad_type:
            await abort_invalid(context, 'Query needs an ad_type (e.g. "Machine", "Scheduler")')
        private = ad_type.lower() == MACHINE_PRIVATE.lower()
        if private and current_role() not in _PRIVATE_READERS:
            await context.abort(
                grpc.StatusCode.PERMISSION_DENIED,
                f"{MACHINE_PRIVATE} ads hold claim ids: only the negotiator or an admin may read them",
            )
        try:
            records = self.store.select(
                ad_type, request.constraint, self.ctx.clock.now(), allow_private=private
            )
        except CostlyConstraint as exc:
            await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, str(exc))
            return b""  # not reached: abort raises
        except CollectorError as exc:
            await abort_invalid(context, str(exc))
            return b""  # not reached: abort raises
        keep = projection_keys(request.projection)
        return b"".join(frame_field(1, r.projected_wire(keep)) for r in records)

    async def Snapshot(
        self, request: cpb.SnapshotRequest, context: grpc.aio.ServicerContext
    ) -> bytes:
        """Slot ads and their private ads, as serialised ``SnapshotReply`` bytes."""
        self.stats["snapshots"] += 1
        now = self.ctx.clock.now()
        try:
            snap = self.store.snapshot(request.constraint, request.projection, now)
        except CostlyConstraint as exc:
            await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, str(exc))
            return b""  # not reached: abort raises
        except CollectorError as exc:
            await abort_invalid(context, str(exc))
            return b""  # not reached: abort raises
        parts = [frame_field(1, r.projected_wire(snap.keep)) for r in snap.slots]
        parts.extend(frame_field(2, r.wire()) for r in snap.private)
        parts.append(
            cpb.SnapshotReply(
                now=now, slot_stable_prefix=snap.stable_prefixes()
            ).SerializeToString()
        )
        return b"".join(parts)
