"""The collector's gRPC shell: Advertise / Query / Snapshot over its core
(:class:`~.collector.Collector`, which holds the ad store, the own ad and the timers).

Query and Snapshot replies are assembled from the ads' stored wire bytes (see
``store.py``) and handed to gRPC already serialised; the servicer methods return bytes.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from typing import Any

import grpc
import grpc.aio

from .. import rpc, turns
from ..auth import Principal, Role, current_principal
from ..classad.tree import Expr
from ..contract import Ready, Undeliverable
from ..daemon import DaemonContext
from ..messages import (
    REQUEST_ROLES,
    AdvertiseAck,
    CollectorAdvertise,
    CollectorQuery,
    CollectorSnapshotRequest,
    SnapshotReply,
)
from ..packedcolumns import column_to_pb
from ..pump import Pump
from ..v1 import collector_pb2 as cpb
from ..v1 import collector_pb2_grpc as cgrpc
from ..wire import PARTS, WireError, frame_parts, room_for
from .collector import Collector, CollectorUpdate, refusal_code
from .store import AdRecord, CollectorError, matching, projection_keys

__all__ = ["SERVICE_NAME", "CollectorService"]

log = logging.getLogger(__name__)

SERVICE_NAME = "mockpool.v1.Collector"
_FRAMED_PER_TURN = 4096  # stored ads framed into a reply between turns (a few ms)
# a query over this many ads has its constraint evaluated and its reply framed off the
# loop (its records are a list of their own, and ads never change once stored)
_QUERY_OFFLOAD_AT = 5_000
# pool seconds before a timer round that failed (a bug, logged) is tried again
_RETRY_AFTER = 10.0


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


def _caller() -> Principal:
    """Who calls the RPC being handled (the core's sender; a reply's address is the
    RPC's own response: none needed)."""
    return current_principal() or _NOBODY


_NOBODY = Principal(Role.READ)


async def _refuse(context: grpc.aio.ServicerContext, exc: CollectorError) -> None:
    """End the call as the core refused it (abort raises)."""
    await context.abort(getattr(grpc.StatusCode, refusal_code(exc)), str(exc))


def _query_reply(
    records: list[AdRecord], constraint: str, now: float, keep: frozenset[str] | None
) -> bytes:
    """A ``QueryReply``'s bytes: the records whose constraint holds, projected."""
    selected = matching(records, constraint, now)
    return b"".join(frame_parts(1, [r.projected_wire(keep) for r in selected]))


def _received(updates: Sequence[cpb.AdUpdate], index: int) -> CollectorUpdate:
    """Update ``index`` decoded for the core (or the reason it did not decode)."""
    upd = updates[index]
    try:
        raw = upd.ad.SerializeToString()
        ad = PARTS.decode(raw, upd.stable_prefix)
    except WireError as exc:
        return CollectorUpdate(index, upd.ad_type, None, name=_pb_name(upd.ad), error=str(exc))
    return CollectorUpdate(index, upd.ad_type, ad, raw, upd.invalidate, upd.stable_prefix)


class CollectorService(cgrpc.CollectorServicer):
    """The collector daemon: one ad store behind the Collector gRPC service."""

    METHOD_ROLES = {
        _method("Advertise"): REQUEST_ROLES[CollectorAdvertise],
        _method("Snapshot"): REQUEST_ROLES[CollectorSnapshotRequest],
        _method("Query"): REQUEST_ROLES[CollectorQuery],
    }

    def __init__(self, ctx: DaemonContext, *, housekeeping_interval: float | None = None) -> None:
        self.ctx = ctx
        self.core = Collector(
            ctx.config,
            housekeeping_interval=housekeeping_interval,
            ad_epoch=ctx.ad_epoch,
            duty_cycle=ctx.duty_cycle,
        )
        self.store = self.core.store
        # the collector sends nothing of its own: no senders
        self.pump = Pump(
            self.core,
            ctx,
            {},
            name=f"collector {self.name}",
            retry_after=_RETRY_AFTER,
            after_act=self._expired,
        )

    @property
    def name(self) -> str:
        return self.core.name or self.core.name_on(self.ctx.host)

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
        self.pump.start(self.core.start(self.ctx.clock.now(), self.ctx.host, self.ctx.my_address))

    def _expired(self, ready: Ready) -> None:
        expired = sum(kind == "ad_expired" for _, kind, _ in ready.events)
        if expired:
            log.info("%s: expired %d ads", self.core.name, expired)

    async def stop(self) -> None:
        await self.pump.stop()

    def status(self) -> dict[str, Any]:
        return self.core.status()

    # -- RPCs --------------------------------------------------------------------
    async def Advertise(
        self, request: cpb.AdvertiseRequest, context: grpc.aio.ServicerContext
    ) -> cpb.AdvertiseReply:
        """Apply each update on its own; a refused one is an error line, not a failure."""
        room_for(len(self.store))  # every stored ad's repeating part
        updates = list(request.updates)  # decoded as their turn comes
        update_at = functools.partial(_received, updates)
        # a big batch must not starve queries, nor the other daemons of this actor: in
        # turns of a few ads (256 updates held the central actor's loop 30 to 60 ms),
        # each turn a delivery of its own whose acks add up
        accepted = 0
        errors: list[str] = []
        turns_taken = 0
        async for part in turns.in_turns(range(len(updates)), turns.ADS_PER_TURN):
            ack: AdvertiseAck = self._deliver(CollectorAdvertise("", [*map(update_at, part)]))
            accepted += ack.accepted
            errors += ack.errors
            turns_taken += 1
        # the core counted each turn's delivery: the call is one
        self.core.stats["advertise_calls"] += 1 - turns_taken
        if errors:
            log.warning(
                "%s: refused %d of %d updates; first: %s",
                self.core.name,
                len(errors),
                len(updates),
                errors[0],
            )
        return cpb.AdvertiseReply(accepted=accepted, errors=errors)

    def _deliver(self, msg: Any) -> Any:
        """A caller's request delivered; the core's reply to it."""
        return self.pump.request(msg, _caller(), self.ctx.clock.now())

    async def Query(self, request: cpb.QueryRequest, context: grpc.aio.ServicerContext) -> bytes:
        """Ads of one type, filtered and projected, as serialised ``QueryReply`` bytes
        (framed from the stored wire bytes: the core chooses the records, the shell frames
        them, a big table off the loop)."""
        try:
            records = self.core.candidates(request.ad_type, current_principal(), typed=True)
            now = self.core.date(self.ctx.clock.now())  # time() in the constraint
            keep = projection_keys(request.projection)
            if len(records) < _QUERY_OFFLOAD_AT:
                return _query_reply(records, request.constraint, now, keep)
            # a constraint over 100,000 slot ads takes most of a second: off the loop
            return await self.ctx.offload(_query_reply, records, request.constraint, now, keep)
        except CollectorError as exc:
            await _refuse(context, exc)
            return b""  # not reached: abort raises

    async def select(self, ad_type: str, constraint: str | Expr | None) -> list[AdRecord]:
        """The stored records of ``ad_type`` whose constraint holds, chosen as Query
        chooses them (HTCondor's own clients' queries, over CEDAR, come here): private
        ads only for the negotiator or an admin (PrivateAdsRefused), a big table's
        constraint evaluated off the loop; CollectorError for a bad constraint."""
        records = self.core.candidates(ad_type, current_principal())
        now = self.core.date(self.ctx.clock.now())  # time() in the constraint
        if constraint is None or len(records) < _QUERY_OFFLOAD_AT:
            return matching(records, constraint, now)
        return await self.ctx.offload(matching, records, constraint, now)

    async def Snapshot(
        self, request: cpb.SnapshotRequest, context: grpc.aio.ServicerContext
    ) -> bytes | rpc.Handover:
        """Slot ads and their private ads, as serialised ``SnapshotReply`` bytes; to a
        caller of this process that asks (``rpc.handover_wanted``), the snapshot's records
        themselves."""
        handover = rpc.handover_wanted(context)  # the negotiator of this process
        msg = CollectorSnapshotRequest(
            "",
            since=(request.since_epoch, request.since_seq) if request.since_epoch else None,
            # a negotiator of this process reads the ads it is handed
            columns=() if handover else tuple(request.columns),
            constraint=request.constraint,
            projection=tuple(request.projection),
        )
        try:
            # new columns read from every slot ad, a step a turn (100,000 ads a column)
            names = self.store.columns_asked(msg.columns)
            for _ in self.store.columns.catch_up([c.lower() for c in names]):
                await turns.own_turn()
        except CollectorError:
            pass  # the core refuses it, and counts it
        reply = self._deliver(msg)
        if isinstance(reply, Undeliverable):
            await context.abort(getattr(grpc.StatusCode, reply.code), reply.detail)
        assert isinstance(reply, SnapshotReply)
        snap = reply.snapshot
        if handover:
            return rpc.Handover(snap)
        # framed in turns (100,000 slots take a few tenths of a second); the records are
        # those of the moment the snapshot was taken, whatever arrives meanwhile
        parts: list[bytes] = []
        async for part in turns.in_turns(snap.slots, _FRAMED_PER_TURN):
            parts += frame_parts(1, [r.projected_wire(snap.keep) for r in part])
        async for part in turns.in_turns(snap.private, _FRAMED_PER_TURN):
            parts += frame_parts(2, [r.wire() for r in part])
        parts.append(
            cpb.SnapshotReply(
                now=snap.now,
                slot_stable_prefix=snap.stable_prefixes(),
                epoch=snap.epoch,
                seq=snap.seq,
                delta=snap.delta,
                slot_order=() if snap.same_order else snap.slot_order,
                slot_rows=snap.slot_rows,
                private_order=() if snap.same_order else snap.private_order,
                private_rows=snap.private_rows,
                same_order=snap.same_order,
                columns=[column_to_pb(c) for c in snap.columns],
            ).SerializeToString()
        )
        return b"".join(parts)
