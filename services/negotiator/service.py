"""The negotiator's gRPC shell over its core (:class:`.driver.NegotiatorDriver`).

Every rule of the negotiator lives in the core: the cadence of cycles, the cycle's
phases and the NegotiatorLog lines of each, NEGOTIATOR_INFORM_STARTD, the ad timer,
Reschedule and condor_userprio's checks. This shell only:

- runs on the generic pump (``pump.py``): its loop sleeps until the core's
  ``next_wakeup()`` (or until something delivered to it moved it), ticks, acts on the
  ``Ready``; each answer is delivered as it comes (the core's cycle waits for the last
  of a phase), and the cycle's computation, when the core hands it out, runs in a worker
  thread (``DaemonContext.offload``);
- turns each message the core sends into its RPC (one small function per message type:
  the Collector's Snapshot, Query and Advertise, the Schedd's GetResourceRequests and
  Matches, the Startd's MatchInfo): the reply, or an ``Undeliverable`` naming the gRPC
  status, is what the pump delivers back to the core;
- splits a schedd's matches into messages of about :data:`MATCHES_MESSAGE_BYTES`, the
  rejections with the first (the core sends one per schedd), sending the slot ads' bytes
  as they were read from the collector;
- answers Reschedule and UserPrio with what the core's ``deliver`` replies.

Cycle durations are pool seconds: real time x the clock's time scale, what a pool user
sees.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import grpc
import grpc.aio

from .. import rpc, turns
from ..auth import Role, caller
from ..classad import ClassAd
from ..contract import Send, Undeliverable
from ..daemon import RPC_TIMEOUT, DaemonContext
from ..messages import (
    REQUEST_ROLES,
    AdvertiseAck,
    CollectorAdvertise,
    CollectorQuery,
    CollectorSnapshotRequest,
    MatchesAck,
    NegotiatorReschedule,
    NegotiatorResourceRequests,
    NegotiatorUserPrio,
    QueryReply,
    ScheddMatches,
    ScheddResourceRequestsRequest,
    SnapshotReply,
    StartdMatchInfo,
    sending_role,
)
from ..packedcolumns import column_from_pb
from ..pump import Pump, Sender
from ..v1 import collector_pb2 as cpb
from ..v1 import collector_pb2_grpc as cgrpc
from ..v1 import negotiator_pb2 as npb
from ..v1 import negotiator_pb2_grpc as ngrpc
from ..v1 import schedd_pb2 as spb
from ..v1 import schedd_pb2_grpc as sgrpc
from ..v1 import startd_pb2 as tpb
from ..v1 import startd_pb2_grpc
from ..wire import (
    AdDecoder,
    WireError,
    ad_to_bytes,
    ad_to_pb,
    ads_from_pb,
    frame_head,
    framed_batches,
    split_fields,
)
from .accountant import Accountant
from .cadence import Cadence
from .driver import NAMELESS, NegotiatorDriver
from .held_ads import SnapshotPart, WireSnapshot
from .negotiator import Negotiator
from .stats import StatsHistory

__all__ = ["NAMELESS", "SERVICE_NAME", "NegotiatorService"]

log = logging.getLogger(__name__)

_MATCHES_METHOD = f"/{spb.DESCRIPTOR.services_by_name['Schedd'].full_name}/Matches"
_SNAPSHOT_METHOD = f"/{cpb.DESCRIPTOR.services_by_name['Collector'].full_name}/Snapshot"
_SNAPSHOT_SLOTS = cpb.SnapshotReply.DESCRIPTOR.fields_by_name["slots"].number
_SNAPSHOT_PRIVATE = cpb.SnapshotReply.DESCRIPTOR.fields_by_name["private_ads"].number
_SNAPSHOT_ADS = frozenset({_SNAPSHOT_SLOTS, _SNAPSHOT_PRIVATE})
_MATCHES_FIELD = spb.MatchesRequest.DESCRIPTOR.fields_by_name["matches"].number
_SLOT_FIELD = spb.Match.DESCRIPTOR.fields_by_name["slot"].number
# a schedd's matches go in messages of about this many bytes (their slot ads, mostly)
MATCHES_MESSAGE_BYTES = 2 * 1024 * 1024

SERVICE_NAME = "mockpool.v1.Negotiator"
# pool seconds before the loop ticks again after a tick that raised (a bug, logged)
_RETRY_AFTER = 10.0


def _method(name: str) -> str:
    return f"/{SERVICE_NAME}/{name}"


class NegotiatorService(ngrpc.NegotiatorServicer):
    """The negotiator daemon: its core's loop, its calls, Reschedule and UserPrio."""

    METHOD_ROLES = {
        _method("Reschedule"): REQUEST_ROLES[NegotiatorReschedule],
        _method("UserPrio"): REQUEST_ROLES[NegotiatorUserPrio],
    }

    def __init__(
        self,
        ctx: DaemonContext,
        name: str = "negotiator",
        log_base_wall: float = 0.0,
        *,
        accountant: Accountant | None = None,
        priorities: Mapping[str, Mapping[str, float]] | None = None,
    ) -> None:
        self.ctx = ctx
        self.name = name
        self.config = ctx.config.for_subsystem("NEGOTIATOR")
        self.core = Negotiator(
            name,
            self.config,
            Path(ctx.state_dir),
            log_base_wall=log_base_wall,
            accountant=accountant,
            priorities=priorities,
        )
        self.driver = NegotiatorDriver(
            self.core,
            collector_address=ctx.collector_address,
            machine=ctx.host,
            timer=lambda: self.ctx.clock.now(),
            cpu_timer=time.process_time,
            duty_cycle=lambda: self.ctx.duty_cycle(),
            offload=True,
        )
        self._corr = itertools.count(1)
        # Slot ads that did not change since the last cycle are not decoded again.
        self._slot_decoder = AdDecoder()
        d = self.driver
        senders = {t: self._sender(call) for t, call in _CALLS.items()}
        self.pump = Pump(
            d,
            ctx,
            senders,
            name=name,
            retry_after=_RETRY_AFTER,
            failure=_undeliverable,
            offload=(d.pending_compute, d.computed),
            on_error=d.drop_cycle,  # a cycle a bug stopped is forgotten, as after an abort
        )

    # What tools and tests read of the core, by the names they have always used.
    @property
    def accountant(self) -> Accountant:
        return self.core.accountant

    @property
    def cycles(self) -> int:
        return self.core.cycles

    @property
    def history(self) -> StatsHistory:
        return self.core.history

    @property
    def cadence(self) -> Cadence:
        return self.core.cadence

    # -- Service protocol ----------------------------------------------------------------
    def add_to_server(self, server: grpc.aio.Server) -> None:
        ngrpc.add_NegotiatorServicer_to_server(self, server)

    async def start(self) -> None:
        d = self.driver
        # known only once the actor serves: its address, a central manager's collector
        d.address = self.ctx.my_address
        d.collector_address = self.ctx.collector_address
        self.pump.start(d.start(self.ctx.clock.now()))

    async def stop(self) -> None:
        await self.pump.stop()

    def _sender(self, call: Any) -> Sender:
        async def send(s: Send) -> Any:
            return await call(self, s.address, s.msg)

        return send

    def status(self) -> dict[str, Any]:
        return self.core.status(self.ctx.address)

    # -- requests: decoded, delivered, the core's reply returned --------------------------
    async def _ask_core(self, msg: Any, context: grpc.aio.ServicerContext) -> Any:
        """Deliver a request from the caller; its reply (an Undeliverable: the refusal
        the call aborts with)."""
        reply = self.pump.request(msg, caller(), self.ctx.clock.now())
        if isinstance(reply, Undeliverable):
            await context.abort(getattr(grpc.StatusCode, reply.code), reply.detail)
        return reply

    def _new_corr(self, what: str) -> str:
        return f"{what}:{next(self._corr)}"

    async def Reschedule(
        self, request: npb.RescheduleRequest, context: grpc.aio.ServicerContext
    ) -> npb.RescheduleReply:
        msg = NegotiatorReschedule(self._new_corr("reschedule"), request.schedd_name)
        reply = await self._ask_core(msg, context)  # (the pump's loop looks again)
        return npb.RescheduleReply(next_cycle=reply.next_cycle)

    async def UserPrio(
        self, request: npb.UserPrioRequest, context: grpc.aio.ServicerContext
    ) -> npb.UserPrioReply:
        msg = NegotiatorUserPrio(
            self._new_corr("userprio"), request.action, request.name, request.value
        )
        reply = await self._ask_core(msg, context)
        out = npb.UserPrioReply(now=reply.now)
        for ad in reply.ads:
            ad_to_pb(ad, out.ads.add())
        return out

    # -- what the host, CEDAR and tests read -------------------------------------------------
    def accounting_ads(self) -> list[ClassAd]:
        return self.core.accounting_ads()

    def userprio(self, action: str, name: str, value: float) -> list[ClassAd]:
        """Apply one condor_userprio change (AccountantError names a bad one)."""
        return self.core.userprio(action, name, value, self.ctx.clock.now())

    def drain_log(self, limit: int | None = None) -> list[str]:
        """NegotiatorLog lines written since the last drain (the oldest ``limit``)."""
        return self.core.drain_log(limit)

    def negotiator_ad(self) -> ClassAd:
        return self.driver.negotiator_ad(self.ctx.clock.now())

    # -- the core's messages, each to its RPC; the answer delivered back ---------------------
    def _channel(self, address: str, msg_type: type[Any]) -> grpc.aio.Channel:
        """A channel for sending ``msg_type``, with the token it goes with."""
        return self.ctx.channel(address, sending_role(Role.NEGOTIATOR, msg_type))

    async def _snapshot(self, address: str, msg: CollectorSnapshotRequest) -> SnapshotReply:
        """The collector's Snapshot, its reply left as bytes and read off the loop (a
        100,000-slot reply parsed by gRPC would hold the loop for seconds); a collector
        of this process hands its records over."""
        request = cpb.SnapshotRequest()
        if msg.since is not None:
            request.since_epoch, request.since_seq = msg.since
        request.columns.extend(msg.columns)
        call = self._channel(address, type(msg)).unary_unary(
            _SNAPSHOT_METHOD, request_serializer=cpb.SnapshotRequest.SerializeToString
        )
        raw = await rpc.call(call, request, timeout=RPC_TIMEOUT, metadata=(rpc.HANDOVER,))
        return SnapshotReply(msg.corr, await self.ctx.offload(self._wire_snapshot, raw))

    def _wire_snapshot(self, raw: bytes | rpc.Handover) -> Any:
        """A snapshot reply as the core reads it: the collector's own records handed over
        (their bytes known for the matches that send them on), or the reply decoded."""
        decoder = self._slot_decoder
        if isinstance(raw, rpc.Handover):
            snap = raw.value
            keep = snap.keep
            slot_ads = [r.ad if keep is None else r.projected(keep) for r in snap.slots]
            wires = [r.known_wire(keep) for r in snap.slots]
            decoder.adopt(
                [a for a, w in zip(slot_ads, wires, strict=True) if w is not None],
                [w for w in wires if w is not None],
            )
        else:
            ads, rest = split_fields(raw, _SNAPSHOT_ADS)
            try:
                head = cpb.SnapshotReply.FromString(rest)
            except Exception as exc:
                raise WireError(f"not a snapshot reply: {exc}") from None
            snap = WireSnapshot(
                head.epoch,
                head.seq,
                head.delta,
                SnapshotPart(
                    decoder.decode_bytes(ads[_SNAPSHOT_SLOTS], head.slot_stable_prefix),
                    head.slot_order,
                    head.slot_rows,
                ),
                SnapshotPart(
                    decoder.decode_bytes(ads[_SNAPSHOT_PRIVATE]),
                    head.private_order,
                    head.private_rows,
                ),
                head.same_order,
                [(c.name, functools.partial(column_from_pb, c)) for c in head.columns],
            )
        # the ads held and those of this reply keep their bytes (sent on with matches)
        decoder.keep(self.core.slot_ads.slots())
        decoder.end_round()
        return snap

    def _decode_snapshot(self, raw: bytes | rpc.Handover) -> tuple[Any, Any, Any]:
        """A reply read and merged into the held ads, as a cycle does: (slots, private,
        (columns, why each refused column was))."""
        slots, private, columns, refused = self.driver.take_snapshot(
            self._wire_snapshot(raw), self.ctx.clock.now()
        )
        return slots, private, (columns, refused)

    async def _query(self, address: str, msg: CollectorQuery) -> QueryReply:
        stub = cgrpc.CollectorStub(self._channel(address, type(msg)))
        request = cpb.QueryRequest(
            ad_type=msg.ad_type, constraint=msg.constraint, projection=list(msg.projection)
        )
        reply = await rpc.call(stub.Query, request, timeout=RPC_TIMEOUT)
        return QueryReply(msg.corr, ads_from_pb(reply.ads))

    async def _advertise(self, address: str, msg: CollectorAdvertise) -> AdvertiseAck:
        request = cpb.AdvertiseRequest()
        for u in msg.updates:
            request.updates.add(ad_type=u.ad_type, ad=ad_to_pb(u.ad))
        stub = cgrpc.CollectorStub(self._channel(address, type(msg)))
        reply = await rpc.call(stub.Advertise, request, timeout=RPC_TIMEOUT)
        return AdvertiseAck(msg.corr, reply.accepted, list(reply.errors))

    async def _resource_requests(
        self, address: str, msg: ScheddResourceRequestsRequest
    ) -> NegotiatorResourceRequests:
        stub = sgrpc.ScheddStub(self._channel(address, type(msg)))
        request = spb.ResourceRequestsRequest(schedd_name=msg.schedd_name)
        reply = await rpc.call(stub.GetResourceRequests, request, timeout=RPC_TIMEOUT)
        return NegotiatorResourceRequests(msg.corr, msg.schedd_name, ads_from_pb(reply.requests))

    async def _match_info(self, address: str, msg: StartdMatchInfo) -> None:
        stub = startd_pb2_grpc.StartdStub(self._channel(address, type(msg)))
        request = tpb.MatchInfoRequest(claim_ids=msg.claim_ids)
        await rpc.call(stub.MatchInfo, request, timeout=RPC_TIMEOUT)
        # one-way: only a failure is delivered back

    async def _matches(self, address: str, msg: ScheddMatches) -> MatchesAck | Undeliverable:
        """One schedd's matches in messages of at most :data:`MATCHES_MESSAGE_BYTES`, the
        rejections with the first, all at once (independent; one at a time, a busy schedd
        got a round trip per message). A message of 20,000 matches, their slot ads 30 MB,
        held the sender's loop and the schedd's for half a second each. Any failure: an
        Undeliverable holding the matches (and the rejections) not taken."""
        entries: list[tuple[bytes, bytes, bytes]] = []
        failure: Exception | None = None
        try:
            async for part in turns.in_turns(msg.matches):
                for m in part:
                    fixed = spb.Match(
                        submitter=m.submitter,
                        autocluster_id=m.autocluster_id,
                        slot_name=m.slot_name,
                        claim_id=m.claim_id,
                        startd_address=m.startd_address,
                    ).SerializeToString()
                    ad = self._slot_decoder.bytes_of(m.slot_ad) or ad_to_bytes(m.slot_ad)
                    entries.append((fixed, frame_head(_SLOT_FIELD, len(ad)), ad))
        except Exception as exc:  # a slot ad that cannot be sent (ad_to_bytes)
            failure = exc

        def head(rejections: list[Any]) -> bytes:
            out = spb.MatchesRequest(
                schedd_name=msg.schedd_name, request_id=rpc.request_id(), cycle=msg.cycle
            )
            for r in rejections:
                out.rejections.add(
                    cluster_id=r.cluster, proc_id=r.proc, reason=r.reason, time=r.time
                )
            return out.SerializeToString()

        call = self._channel(address, type(msg)).unary_unary(
            _MATCHES_METHOD, response_deserializer=spb.MatchesReply.FromString
        )
        batches = list(framed_batches(_MATCHES_FIELD, entries, MATCHES_MESSAGE_BYTES))
        calls, ranges, start = [], [], 0  # each message's call and (first, end) match
        for count, parts in batches or [(0, [])]:  # rejections alone: one message
            body = b"".join([head([] if calls else msg.rejections), *parts])
            calls.append(rpc.call(call, body, timeout=RPC_TIMEOUT))
            ranges.append((start, start + count))
            start += count
        outcomes = await asyncio.gather(*calls, return_exceptions=True)
        took, lost = 0, list(msg.matches[start:])  # those not put together: lost
        for (first, end), out in zip(ranges, outcomes, strict=True):
            if isinstance(out, asyncio.CancelledError):
                raise out
            if isinstance(out, Exception):
                lost += msg.matches[first:end]
                failure = failure or out
            else:
                took += end - first
        if failure is None:
            return MatchesAck(msg.corr, took)
        first_lost = isinstance(outcomes[0], BaseException)
        kept = ScheddMatches(
            msg.corr, msg.schedd_name, msg.cycle, lost, msg.rejections if first_lost else []
        )
        return _undeliverable(kept, failure)


# each message type the core sends -> the shell's call that carries it
_CALLS: dict[type[Any], Any] = {
    CollectorSnapshotRequest: NegotiatorService._snapshot,
    CollectorQuery: NegotiatorService._query,
    CollectorAdvertise: NegotiatorService._advertise,
    ScheddResourceRequestsRequest: NegotiatorService._resource_requests,
    ScheddMatches: NegotiatorService._matches,
    StartdMatchInfo: NegotiatorService._match_info,
}


def _undeliverable(msg: Any, exc: BaseException) -> Undeliverable:
    """A failed call as the core reads it: the gRPC status, or DATA_LOSS for a reply
    that did not decode (WireError), UNKNOWN for anything else."""
    if isinstance(exc, grpc.aio.AioRpcError):
        return Undeliverable(msg, exc.code().name, exc.details() or "")
    if isinstance(exc, WireError):
        return Undeliverable(msg, "DATA_LOSS", str(exc))
    return Undeliverable(msg, "UNKNOWN", f"{type(exc).__name__}: {exc}")
