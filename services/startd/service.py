"""The startd's shell: one gRPC servicer for every machine of this actor, on the generic
pump (``pump.py``), and one sender per message type its core sends.

Everything the machines decide (routing by slot name or claim id, the claim index, the
job-exit and lease schedule, the ad cadence, the job-exit reports and their retries and
relocation, the events) is the core's: ``host.StartdCore``, driven through the daemon
contract. This module:

- decodes each request into its message record and hands it to the pump, which delivers
  it and returns the reply found in the ``Ready``, encoded here; a big batch is
  delivered a few items a turn (each builds a slot ad), so it does not hold the loop;
- gives the pump's loop its turns: a round's ads take turns with the other daemons of
  the actor, and so does a tick that leaves more due at once (the round's next
  machines);
- sends each message of a ``Ready`` with the RPC of its type (the pump delivers the
  reply, or an ``Undeliverable``, back to the core): CollectorAdvertise (the encoded ads,
  split where a message would pass ``MAX_ADVERTISE_BYTES``: gRPC's default limit on a
  received message is 4 MiB), ScheddJobsExited (a retried report keeps its request id),
  CollectorQuery;
- keeps the wire form of the slot ads, cached per slot and re-encoded only when the slot
  changed (2,500 machines of 16 dynamic slots each are ~85,000 ads a round).
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import grpc
import grpc.aio

from .. import rpc, turns
from ..auth import Role, caller
from ..claimid import from_sinful
from ..classad import ClassAd, Expr, unparse
from ..config import ConfigDict
from ..contract import Send
from ..daemon import RPC_TIMEOUT, DaemonContext, ReplyCache
from ..messages import (
    REQUEST_ROLES,
    AdvertiseAck,
    CollectorAdvertise,
    CollectorQuery,
    JobsExitedAck,
    QueryReply,
    ScheddJobsExited,
    StartdActivateClaims,
    StartdKeepAlive,
    StartdMatchInfo,
    StartdReleaseClaims,
    StartdRequestClaims,
)
from ..pump import Pump
from ..schedd.records import ActivationRequest, ClaimRequest
from ..v1 import (
    classad_pb2,
    collector_pb2,
    collector_pb2_grpc,
    schedd_pb2,
    schedd_pb2_grpc,
    startd_pb2_grpc,
)
from ..v1 import startd_pb2 as pb
from ..wire import WireError, ad_from_pb, ad_to_pb, framed_batches
from .adverts import RETRY_INTERVAL, UPDATE_DELAY, to_send
from .core import StartdCore
from .grants import ClaimRefusedError, JobExitRecord
from .machine import Machine
from .slots import VOLATILE, AdValue, Slot, ad_pairs, private_ad, volatile_values

log = logging.getLogger(__name__)

__all__ = ["MAX_ADVERTISE_BYTES", "RETRY_INTERVAL", "UPDATE_DELAY", "StartdService"]

_SERVICE = "/mockpool.v1.Startd/"
MAX_ADVERTISE_BYTES = 3 * 1024 * 1024
_REPLAY_CACHE = 4096  # replies kept by request id, so a retried batch is not applied twice
# Machines whose ads one tick builds, or whose due jobs one tick ends: a turn of a few
# milliseconds (a loop's timers wait for one turn).
_MACHINES_PER_TURN = 4
_CLAIMS_PER_TURN = 8  # claim requests (or activations) one turn handles: each builds a slot ad


class _Servicer(startd_pb2_grpc.StartdServicer):
    """Protobuf in, core calls, protobuf out; no logic of its own."""

    def __init__(self, svc: StartdService) -> None:
        self._svc = svc

    async def RequestClaims(
        self, request: pb.RequestClaimsRequest, context: grpc.aio.ServicerContext
    ) -> pb.RequestClaimsReply:
        return await self._svc.replayed(
            request.request_id, lambda: self._svc.request_claims(request)
        )

    async def ActivateClaims(
        self, request: pb.ActivateClaimsRequest, context: grpc.aio.ServicerContext
    ) -> pb.ActivateClaimsReply:
        return await self._svc.replayed(
            request.request_id, lambda: self._svc.activate_claims(request)
        )

    async def ReleaseClaims(
        self, request: pb.ReleaseClaimsRequest, context: grpc.aio.ServicerContext
    ) -> pb.ReleaseClaimsReply:
        return await self._svc.replayed(
            request.request_id, lambda: self._svc.release_claims(request)
        )

    async def KeepAlive(
        self, request: pb.KeepAliveRequest, context: grpc.aio.ServicerContext
    ) -> pb.KeepAliveReply:
        return self._svc.keep_alive(request)

    async def MatchInfo(
        self, request: pb.MatchInfoRequest, context: grpc.aio.ServicerContext
    ) -> pb.MatchInfoReply:
        try:
            return self._svc.match_info(request)
        except ClaimRefusedError as e:
            await context.abort(grpc.StatusCode.PERMISSION_DENIED, str(e))
            raise  # not reached: abort raises


class StartdService:
    """Every simulated machine of one startd actor behind one servicer."""

    METHOD_ROLES = {
        _SERVICE + m: REQUEST_ROLES[t]
        for m, t in (
            ("RequestClaims", StartdRequestClaims),
            ("ActivateClaims", StartdActivateClaims),
            ("ReleaseClaims", StartdReleaseClaims),
            ("KeepAlive", StartdKeepAlive),
            ("MatchInfo", StartdMatchInfo),
        )
    }

    def __init__(
        self,
        ctx: DaemonContext,
        machines: list[tuple[str, ConfigDict]],
    ) -> None:
        # checks names and policies
        self.core = StartdCore(machines, ad_epoch=ctx.ad_epoch, config=ctx.config)
        self.ctx = ctx
        # machines whose due jobs one tick ends, and whose ads one tick builds: the loop
        # is not held long
        self.core.tick_limit = _MACHINES_PER_TURN
        self.core.ads.per_tick = _MACHINES_PER_TURN
        # the slot ads as bytes, each re-encoded only when its slot changed
        self._wire = self.core.ads.builder = _WireAds(ctx.ad_epoch)
        self.pump = self._pump()
        self._replies = ReplyCache(_REPLAY_CACHE)
        self._request_ids: dict[str, str] = {}  # a job-exit report's corr -> its request id

    # --- Service protocol -------------------------------------------------------------

    def add_to_server(self, server: grpc.aio.Server) -> None:
        startd_pb2_grpc.add_StartdServicer_to_server(_Servicer(self), server)

    async def start(self) -> None:
        if not self.ctx.address:
            raise RuntimeError("StartdService.start: ctx.address is not set")
        address = self.ctx.collector_address
        self.pump = self._pump()
        self.pump.start(
            self.core.start(self.ctx.address, self.ctx.clock.now(), _os_secrets, address)
        )

    async def stop(self) -> None:
        await self.pump.stop()

    def _pump(self) -> Pump:
        senders = {
            CollectorAdvertise: self._advertise,
            ScheddJobsExited: self._jobs_exited,
            CollectorQuery: self._query,
        }
        return Pump(
            self.core,
            self.ctx,
            senders,
            name="startd",
            retry_after=RETRY_INTERVAL,
            before_tick=self._before_tick,
            after_tick=self._after_tick,
        )

    def status(self) -> dict[str, Any]:
        return self.core.status()

    @property
    def stats(self) -> dict[str, int]:
        return self.core.stats

    # --- machines ---------------------------------------------------------------------

    def _build_machines(self) -> None:
        """Machines are made once the server's address (in their claim ids) is known."""
        if not self.ctx.address:
            raise RuntimeError("StartdService.start: ctx.address is not set")
        self.core.build(self.ctx.address, self.ctx.clock.now(), _os_secrets)

    @property
    def machines(self) -> dict[str, Machine]:
        return self.core.machines

    def crash_daemon(self, name: str) -> None:
        """Machine ``name`` dies alone (the actor's other machines run on): its state
        and the job exits it had not yet reported go; a call for its slots is refused."""
        key = next(n for n in self.core.machines if n.lower() == name.lower())
        self.core.crash(key)

    def restart_daemon(self, name: str) -> None:
        """Machine ``name`` again, as a restarted startd: new slots and claim ids."""
        key = next(n for n, _ in self.core.specs if n.lower() == name.lower())
        now = self.ctx.clock.now()
        self.core.restart(key, self.ctx.address, now, _os_secrets)
        self.pump.act(self.core.flush(now))

    # --- the loop and the sends -------------------------------------------------------

    async def _before_tick(self, now: float) -> None:
        if self.core.ads.starting(now) and turns.others_waiting():
            await turns.own_turn()  # a round's ads are a batch: it takes turns

    async def _after_tick(self, now: float) -> None:
        wake = self.core.next_wakeup()
        if wake is not None and wake <= now:
            await turns.own_turn()  # more due (a round's next machines): turns

    async def _advertise(self, send: Send) -> Any:
        msg: CollectorAdvertise = send.msg
        channel = self.ctx.channel(send.address)
        # AdvertiseRequest bytes made from the serialized updates (field 1, repeated)
        advertise = channel.unary_unary(
            "/mockpool.v1.Collector/Advertise",
            request_serializer=None,
            response_deserializer=collector_pb2.AdvertiseReply.FromString,
        )
        accepted, errors = 0, []
        for _, request in _requests(msg.updates, MAX_ADVERTISE_BYTES):
            reply = await rpc.call(advertise, request, timeout=RPC_TIMEOUT)
            accepted += reply.accepted
            errors += reply.errors
        return AdvertiseAck(msg.corr, accepted, errors)

    async def _jobs_exited(self, send: Send) -> Any:
        msg: ScheddJobsExited = send.msg
        # the same request id for a report sent again: a schedd that took it once
        # does not apply it twice
        request_id = self._request_ids.setdefault(msg.corr, rpc.request_id())
        request = schedd_pb2.JobsExitedRequest(
            request_id=request_id, exits=[_exit_pb(e) for e in msg.exits]
        )
        stub = schedd_pb2_grpc.ScheddStub(self.ctx.channel(from_sinful(send.address)))
        reply = await rpc.call(stub.JobsExited, request, timeout=RPC_TIMEOUT)
        self._request_ids.pop(msg.corr, None)
        return JobsExitedAck(msg.corr, reply.accepted)

    async def _query(self, send: Send) -> Any:
        msg: CollectorQuery = send.msg
        channel = self.ctx.channel(send.address, Role.DAEMON)
        request = collector_pb2.QueryRequest(
            ad_type=msg.ad_type, constraint=msg.constraint, projection=list(msg.projection)
        )
        stub = collector_pb2_grpc.CollectorStub(channel)
        reply = await rpc.call(stub.Query, request, timeout=RPC_TIMEOUT)
        return QueryReply(msg.corr, [ad_from_pb(a) for a in reply.ads])

    # --- RPC bodies: a batch is delivered in turns, each item on its own ---------------

    async def replayed(self, request_id: str, apply: Callable[[], Any]) -> Any:
        # A replay is answered only to the caller who sent the request first.
        if request_id:
            request_id = f"{caller().name}|{request_id}"
        return await self._replies.once(request_id, apply)

    async def request_claims(self, request: pb.RequestClaimsRequest) -> pb.RequestClaimsReply:
        reply = pb.RequestClaimsReply()
        who = caller()
        async for part in turns.in_turns(request.claims, _CLAIMS_PER_TURN):
            now = self.ctx.clock.now()
            # items of one schedd go in one message (a request names its schedd per item)
            for (name, address), run in itertools.groupby(
                part, key=lambda i: (i.schedd_name, i.schedd_address)
            ):
                items = list(run)
                jobs = [self._job(item.job, "claims_refused") for item in items]
                claims = [
                    ClaimRequest(i.claim_id, i.slot_name, j, i.owner, "", i.send_leftovers)
                    for i, j in zip(items, jobs, strict=True)
                    if isinstance(j, ClassAd)
                ]
                msg = StartdRequestClaims("", name, address, claims)
                got = iter(self.pump.request(msg, who, now).outcomes)
                for item, job in zip(items, jobs, strict=True):
                    result = reply.results.add(claim_id=item.claim_id, slot_name=item.slot_name)
                    o = next(got) if isinstance(job, ClassAd) else None
                    if o is None or not o.ok:
                        result.ok, result.error = False, o.error if o is not None else job
                        continue
                    result.ok, result.claim_id = True, o.claim_id
                    result.slot_name = o.slot_name
                    ad_to_pb(o.slot_ad, result.slot)
                    if o.ready_time:
                        result.ready_time = o.ready_time
                    if o.leftover_slot_ad is not None:
                        result.leftover_claim_id = o.leftover_claim_id
                        ad_to_pb(o.leftover_slot_ad, result.leftover_slot)
        return reply

    def _job(self, msg: Any, refused: str) -> ClassAd | str:
        """An item's job ad; why not, counted under ``refused``, when it does not decode
        (the item is refused)."""
        try:
            return ad_from_pb(msg)
        except WireError as e:
            self.core.undecodable(refused)
            return str(e)

    async def activate_claims(self, request: pb.ActivateClaimsRequest) -> pb.ActivateClaimsReply:
        reply = pb.ActivateClaimsReply()
        who = caller()
        async for part in turns.in_turns(request.activations, _CLAIMS_PER_TURN):
            jobs = [self._job(item.job, "activations_refused") for item in part]
            acts = [
                ActivationRequest(i.claim_id, j, "")
                for i, j in zip(part, jobs, strict=True)
                if isinstance(j, ClassAd)
            ]
            msg = StartdActivateClaims("", "", acts)
            got = iter(self.pump.request(msg, who, self.ctx.clock.now()).outcomes)
            for item, job in zip(part, jobs, strict=True):
                result = reply.results.add(claim_id=item.claim_id)
                o = next(got) if isinstance(job, ClassAd) else None
                if o is None or not o.ok:
                    result.ok, result.error = False, o.error if o is not None else job
                else:
                    result.ok, result.start_time = True, o.start_time
        return reply

    async def release_claims(self, request: pb.ReleaseClaimsRequest) -> pb.ReleaseClaimsReply:
        """Each release answered with what it released (the live reply's detail: the
        core's StartdReleaseClaims answers only which ids were asked)."""
        reply = pb.ReleaseClaimsReply()
        who = caller()
        async for part in turns.in_turns(request.claim_ids, turns.ADS_PER_TURN):
            now = self.ctx.clock.now()
            for claim_id, rel in zip(part, self.core.releases(part, who, now), strict=True):
                result = reply.results.add(claim_id=claim_id)
                if isinstance(rel, str):
                    result.ok, result.error = False, rel
                    continue
                result.ok, result.slot_name = True, rel.slot_name
                ad_to_pb(rel.slot_ad, result.slot)
            self.pump.act(self.core.flush(now))
        return reply

    def keep_alive(self, request: pb.KeepAliveRequest) -> pb.KeepAliveReply:
        msg = StartdKeepAlive("", "", list(request.claim_ids))
        answer = self.pump.request(msg, caller(), self.ctx.clock.now())
        return pb.KeepAliveReply(unknown_claim_ids=answer.unknown)

    def match_info(self, request: pb.MatchInfoRequest) -> pb.MatchInfoReply:
        """Matched slots (NEGOTIATOR_INFORM_STARTD); ClaimRefusedError when the caller
        is not the negotiator (the live reply names the ids refused, which the one-way
        StartdMatchInfo does not)."""
        now = self.ctx.clock.now()
        refused = self.core.match_info_from(caller(), list(request.claim_ids), now)
        self.pump.act(self.core.flush(now))
        return pb.MatchInfoReply(refused_claim_ids=refused)

    # --- the slot ads' wire form (tests and tools read it) -----------------------------

    def build_updates(
        self, machines: list[Machine], now: float, *, only_changed: bool = False
    ) -> tuple[list[bytes], dict[str, int]]:
        """Serialized ``AdUpdate``s of a round of these machines (what the live shell
        sends to a collector of another process), and the machines' versions."""
        versions = {m.name: m.version for m in machines}
        gone = self.core.ads.invalidated(machines, self.core.machines)
        return self._wire.build(machines, now, gone, only_changed=only_changed), versions


def _exit_pb(e: JobExitRecord) -> schedd_pb2.JobExit:
    return schedd_pb2.JobExit(
        schedd_name=e.schedd_name,
        claim_id=e.claim_id,
        cluster_id=e.cluster,
        proc_id=e.proc,
        start_time=e.start,
        end_time=e.end,
        exit_code=e.exit_code,
        slot_name=e.slot_name,
        reason=e.reason,
        claim_closing=e.claim_closing,
    )


class _WireAds:
    """The slot ads of a round as serialized ``AdUpdate``s: invalidations first (a slot
    name may come back in the same request), then each slot's public and private ad.
    The wire form of a slot's ads is cached (~1 KB a slot) and rebuilt only when the slot
    changed; otherwise only its time-dependent attributes are encoded and appended
    (protobuf merges a repeated field split over concatenated messages)."""

    def __init__(self, ad_epoch: int) -> None:
        self.ad_epoch = ad_epoch
        self._texts: dict[int, tuple[Expr, str]] = {}  # id(expr) -> (expr, its text)
        # slot name -> (slot, its version, its serialized public ad less the VOLATILE
        # attributes, its serialized private ad), both as AdUpdates
        self._cache: dict[str, tuple[Slot, int, bytes, bytes]] = {}

    def forget(self, slot_name: str) -> None:
        self._cache.pop(slot_name, None)

    def build(
        self, machines: list[Machine], now: float, invalidated: list[str], *, only_changed: bool
    ) -> list[bytes]:
        updates: list[bytes] = []
        for slot_name in invalidated:
            key = ClassAd({"Name": slot_name})
            for ad_type in ("Machine", "MachinePrivate"):
                update = collector_pb2.AdUpdate(ad_type=ad_type, ad=ad_to_pb(key), invalidate=True)
                updates.append(update.SerializeToString())
        n_volatile = len(VOLATILE)

        def build(m: Machine, slot: Slot, seq: int) -> tuple[bytes, bytes]:
            pub = collector_pb2.AdUpdate(ad_type="Machine")
            self._pairs_to_pb(ad_pairs(slot, m.info, now, seq)[:-n_volatile], pub.ad)
            # the clocks follow: the rest repeats until the slot changes
            pub.stable_prefix = pub.ad.ByteSize()
            priv = collector_pb2.AdUpdate(
                ad_type="MachinePrivate", ad=ad_to_pb(private_ad(slot, m.info))
            )
            return pub.SerializeToString(), priv.SerializeToString()

        for slot, seq, (_, _, pub, priv) in to_send(
            machines, self._cache, build, only_changed=only_changed
        ):
            tail = collector_pb2.AdUpdate()
            add = tail.ad.attributes.add
            for name, value in zip(VOLATILE, volatile_values(slot, now, seq, self.ad_epoch)):
                add(name=name).literal.integer = value
            updates.append(pub + tail.SerializeToString())
            updates.append(priv)
        return updates

    def _pairs_to_pb(self, pairs: list[tuple[str, AdValue]], out: classad_pb2.ClassAd) -> None:
        """A slot ad straight to the wire (what ``ad_to_pb(public_ad(...))`` gives, faster)."""
        add = out.attributes.add
        for name, value in pairs:
            attr = add(name=name)
            if isinstance(value, bool):
                attr.literal.boolean = value
            elif isinstance(value, int):
                attr.literal.integer = value
            elif isinstance(value, float):
                attr.literal.real = value
            elif isinstance(value, str):
                attr.literal.str = value
            elif isinstance(value, list):
                # an empty list too is a list (ChildCpus = {} of a p-slot with no
                # children), not an unset literal, which reads as UNDEFINED
                attr.literal.list.SetInParent()
                items = attr.literal.list.items
                for v in value:  # ChildCpus, ChildMemory; Available<Res> of plain ids
                    if isinstance(v, str):
                        items.add(str=v)
                    else:
                        items.add(integer=v)
            else:
                attr.expression = self._text(value)

    def _text(self, expr: Expr) -> str:
        # policy expressions are a few objects shared by every slot of a type
        hit = self._texts.get(id(expr))
        if hit is None or hit[0] is not expr:
            hit = self._texts[id(expr)] = (expr, unparse(expr))
        return hit[1]


def _requests(updates: Sequence[bytes], limit: int) -> Iterator[tuple[int, bytes]]:
    """Serialized AdvertiseRequests (``updates``, field 1) of at most ``limit`` bytes
    (unless one update is larger), each with how many updates it holds: made one at a
    time, as they are sent (all of 10,000 slots' at once held the loop)."""
    for count, parts in framed_batches(1, ((u,) for u in updates), limit):
        yield count, b"".join(parts)


def _os_secrets(_machine: str) -> None:
    """The source of a live machine's claim-id secrets: none given, so the OS's CSPRNG."""
    return None
