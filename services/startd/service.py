"""The startd's shell: one gRPC servicer for every machine of this actor, and its loops.

What the machines decide (routing by slot name or claim id, the claim index, the job-exit
and lease schedule, the events) is the core's: ``host.StartdHost``. This module turns
protobuf into its calls and back (a schedd of this process hands over its claim requests
and activations as its core's records, ``schedd.handover``, and gets back the outcomes
its core takes), and runs the loops:

- advertise: all machines' public and private slot ads to the collector every
  UPDATE_INTERVAL (default 300), and the ads of machines that changed
  ``UPDATE_DELAY`` pool seconds after the first change, as HTCondor's startd sends the
  updates its slots need one second after the first asks (ResMgr::rip_update_needed), so
  a job's exit and the next job on its claim are one update. Ads of deleted dynamic
  slots are invalidated. Updates go in one Advertise call,
  split only where a message would pass ``MAX_ADVERTISE_BYTES`` (gRPC's default limit on
  a received message is 4 MiB). Ads are cached serialized per slot and re-encoded only
  when the slot changed: 2,500 machines of 16 dynamic slots each are ~85,000 ads a round.
  A failed update is retried after ``RETRY_INTERVAL``.
- timers: sleeps until the host's next wakeup (a job end, an eviction or a claim lease
  deadline), lets it finish what is due (HTCondor's "claim lease expired (condor_schedd
  gone?)" among it) and reports job exits with ``JobsExited``, batched per schedd
  address; a schedd that cannot be reached gets the same request (same request id)
  again every ``RETRY_INTERVAL`` pool seconds until it answers.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Any, TypeVar

import grpc
import grpc.aio

from .. import rpc, turns
from ..auth import Principal, Role, caller
from ..claimid import from_sinful
from ..classad import ClassAd, Expr, unparse
from ..classad.ad import literal_binding
from ..classad.unparse import quote_string
from ..collector.collector import CollectorUpdate
from ..config import ConfigDict
from ..daemon import RPC_TIMEOUT, DaemonContext, ReplyCache, sleep_until_or
from ..schedd.handover import HandedActivations, HandedClaims
from ..schedd.schedd import ActivationOutcome, ActivationRequest, ClaimOutcome, ClaimRequest
from ..v1 import (
    classad_pb2,
    collector_pb2,
    schedd_pb2,
    schedd_pb2_grpc,
    startd_pb2_grpc,
)
from ..v1 import startd_pb2 as pb
from ..wire import WireError, ad_from_pb, ad_to_pb, framed_batches
from .host import StartdHost
from .machine import ActivationGrant, ClaimGrant, JobExitRecord, Machine, StartdError
from .slots import VOLATILE, AdValue, Slot, ad_pairs, private_ad, public_ad, volatile_values

log = logging.getLogger(__name__)

A = TypeVar("A")  # a slot's cached ads: their bytes, or the ads themselves (in-process)
I = TypeVar("I")  # noqa: E741  # an item of a claim or activation request
G = TypeVar("G")  # what the host grants it

__all__ = ["MAX_ADVERTISE_BYTES", "RETRY_INTERVAL", "UPDATE_DELAY", "StartdService"]

_SERVICE = "/mockpool.v1.Startd/"
MAX_ADVERTISE_BYTES = 3 * 1024 * 1024
RETRY_INTERVAL = 10.0  # pool seconds between retries to an unreachable peer
UPDATE_DELAY = 1.0  # pool seconds from a slot's change to the update that carries it
_REPLAY_CACHE = 4096  # replies kept by request id, so a retried batch is not applied twice
# Machines whose ads one turn of an advertise round builds, or whose due jobs one turn
# of the exit loop ends: live, a turn of a few milliseconds (a loop's timers wait for
# one turn); a virtual clock stands still meanwhile, and larger turns save loop rounds.
_MACHINES_PER_TURN = 4
_MACHINES_PER_VIRTUAL_TURN = 8
_CLAIMS_PER_TURN = 8  # claim requests (or activations) one turn handles: each builds a slot ad


class _Servicer(startd_pb2_grpc.StartdServicer):
    """Protobuf in, core calls, protobuf out; no logic of its own."""

    def __init__(self, svc: StartdService) -> None:
        self._svc = svc

    async def RequestClaims(
        self, request: pb.RequestClaimsRequest | rpc.Handover, context: grpc.aio.ServicerContext
    ) -> pb.RequestClaimsReply | rpc.Handover:
        if isinstance(request, rpc.Handover):  # a schedd of this process: its records
            handed: HandedClaims = request.value
            return await self._svc.replayed(
                handed.request_id, lambda: self._svc.handed_claims(handed)
            )
        return await self._svc.replayed(
            request.request_id, lambda: self._svc.request_claims(request)
        )

    async def ActivateClaims(
        self, request: pb.ActivateClaimsRequest | rpc.Handover, context: grpc.aio.ServicerContext
    ) -> pb.ActivateClaimsReply | rpc.Handover:
        if isinstance(request, rpc.Handover):
            acts: HandedActivations = request.value
            return await self._svc.replayed(
                acts.request_id, lambda: self._svc.handed_activations(acts)
            )
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
        who = caller()
        if who.role is not Role.ADMIN and not (
            who.role is Role.DAEMON and who.name == "negotiator"
        ):
            await context.abort(
                grpc.StatusCode.PERMISSION_DENIED, f"{who} may not report matches: the negotiator's"
            )
        return self._svc.match_info(request)


class StartdService:
    """Every simulated machine of one startd actor behind one servicer."""

    METHOD_ROLES = {
        _SERVICE + m: frozenset({Role.DAEMON, Role.ADMIN})
        for m in ("RequestClaims", "ActivateClaims", "ReleaseClaims", "KeepAlive", "MatchInfo")
    }

    def __init__(
        self,
        ctx: DaemonContext,
        machines: list[tuple[str, ConfigDict]],
    ) -> None:
        self.host = StartdHost(machines, ad_epoch=ctx.ad_epoch)  # checks names and policies
        self.ctx = ctx
        self._update_interval = ctx.config.for_subsystem("STARTD").get_float("UPDATE_INTERVAL")
        self._machines_per_turn = _MACHINES_PER_VIRTUAL_TURN if ctx.virtual else _MACHINES_PER_TURN
        # machines whose due jobs the exit loop ends a turn (virtual: all at once)
        self._exit_limit = None if ctx.virtual else _MACHINES_PER_TURN
        self._armed: float | None = None  # when the exit loop means to wake
        self._exit_wake = asyncio.Event()
        self._change_event = asyncio.Event()
        self._invalidate: list[tuple[str, str]] = []  # (machine, slot name) to invalidate
        self._texts: dict[int, tuple[Expr, str]] = {}  # id(expr) -> (expr, its text)
        # slot name -> (slot, its version, its serialized public ad less the VOLATILE
        # attributes, its serialized private ad), both as AdUpdates
        self._ad_cache: dict[str, tuple[Slot, int, bytes, bytes]] = {}
        # slots whose ads were handed over in-process: the version sent, its public ad
        # (clocks as when built) and private ad
        self._handed: dict[str, tuple[Slot, int, ClassAd, ClassAd]] = {}
        # by (schedd address, schedd name): schedds of one actor come and go one by one
        self._pending_exits: dict[tuple[str, str], list[schedd_pb2.JobExit]] = {}
        self._senders: dict[tuple[str, str], asyncio.Task[None]] = {}
        self._moved: dict[str, str] = {}  # schedd address -> where it came back (collector)
        self._tasks: list[asyncio.Task[None]] = []
        self._replies = ReplyCache(_REPLAY_CACHE)
        self.stats: dict[str, int] = dict.fromkeys(  # the shell's own (the host has its)
            (
                "exits_reported",
                "exit_report_failures",
                "advertise_rounds",
                "ads_sent",
                "advertise_failures",
            ),
            0,
        )

    # --- Service protocol -------------------------------------------------------------

    def add_to_server(self, server: grpc.aio.Server) -> None:
        startd_pb2_grpc.add_StartdServicer_to_server(_Servicer(self), server)

    async def start(self) -> None:
        self._build_machines()
        loop = asyncio.get_running_loop()
        self._exit_wake = asyncio.Event()
        self._change_event = asyncio.Event()
        self._tasks = [
            loop.create_task(self._advertise_loop(), name="startd-advertise"),
            loop.create_task(self._exit_loop(), name="startd-exits"),
        ]

    async def stop(self) -> None:
        tasks = self._tasks + list(self._senders.values())
        self._tasks, self._senders = [], {}
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def status(self) -> dict[str, Any]:
        host = self.host
        return {
            "machines": len(host.machines) or len(host.specs),
            "slots": sum(len(m.slots) for m in host.machines.values()),
            "claims_held": host.claims_held,
            "exits_pending": sum(len(v) for v in self._pending_exits.values()),
            **host.stats,
            **self.stats,
            "by_machine": {name: dict(c) for name, c in host.machine_stats.items()},
        }

    # --- machines ---------------------------------------------------------------------

    def _build_machines(self) -> None:
        """Machines are made once the server's address (in their claim ids) is known."""
        if not self.ctx.address:
            raise RuntimeError("StartdService.start: ctx.address is not set")
        self.host.build(self.ctx.address, self.ctx.clock.now(), self.ctx.claim_rng)

    @property
    def machines(self) -> dict[str, Machine]:
        return self.host.machines

    def crash_daemon(self, name: str) -> None:
        """Machine ``name`` dies alone (the actor's other machines run on): its state
        and the job exits it had not yet reported go; a call for its slots is refused."""
        key = next(n for n in self.host.machines if n.lower() == name.lower())
        self.host.crash(key)
        at = "@" + key.lower()
        for dest, exits in list(self._pending_exits.items()):
            exits[:] = [e for e in exits if not e.slot_name.lower().endswith(at)]
            if not exits:
                del self._pending_exits[dest]

    def restart_daemon(self, name: str) -> None:
        """Machine ``name`` again, as a restarted startd: new slots and claim ids."""
        key = next(n for n, _ in self.host.specs if n.lower() == name.lower())
        self.host.restart(key, self.ctx.address, self.ctx.clock.now(), self.ctx.claim_rng)
        self._after()

    def _after(self) -> None:
        """After a core call: its events to the log, and wake the loops it gave work."""
        for daemon, kind, fields in self.host.drain_events():
            self.ctx.events.emit(daemon, kind, **fields)
        if self.host.changed:
            self._change_event.set()
        wake = self.host.next_wakeup()
        if wake is not None and (self._armed is None or wake < self._armed):
            self._exit_wake.set()

    # --- RPC bodies: a batch is applied in turns, each item on its own -----------------

    async def replayed(self, request_id: str, apply: Callable[[], Awaitable[Any]]) -> Any:
        # A replay is answered only to the caller who sent the request first.
        if request_id:
            request_id = f"{caller().name}|{request_id}"
        return await self._replies.once(request_id, apply)

    def _job(self, msg: Any, refused: str) -> ClassAd:
        """An item's job ad; a WireError, counted under ``refused``, when it does not
        decode (the item is refused)."""
        try:
            return ad_from_pb(msg)
        except WireError:
            self.host.stats[refused] += 1
            raise

    async def _each(
        self,
        items: Sequence[I],
        apply: Callable[[I, Principal, float], G],
        answer: Callable[[I, G | None, str], None],
    ) -> None:
        """``apply`` each item (a few a turn), ``answer`` it with its result or its
        refusal: one refused item refuses only itself."""
        who = caller()
        async for part in turns.in_turns(items, _CLAIMS_PER_TURN):
            now = self.ctx.clock.now()
            for item in part:
                try:
                    got = apply(item, who, now)
                except Exception as e:
                    answer(item, None, _refusal(e))
                    continue
                answer(item, got, "")
            self._after()

    async def request_claims(self, request: pb.RequestClaimsRequest) -> pb.RequestClaimsReply:
        reply = pb.RequestClaimsReply()

        def apply(item: Any, who: Principal, now: float) -> ClaimGrant:
            return self.host.request_claim(
                item.claim_id,
                item.slot_name,
                self._job(item.job, "claims_refused"),
                item.schedd_name,
                item.schedd_address,
                item.owner,
                who,
                now,
                leftovers=item.send_leftovers,
            )

        def answer(item: Any, grant: ClaimGrant | None, error: str) -> None:
            result = reply.results.add(claim_id=item.claim_id, slot_name=item.slot_name)
            if grant is None:
                result.ok, result.error = False, error
                return
            result.ok, result.claim_id = True, grant.claim_id
            result.slot_name = grant.slot_name
            ad_to_pb(grant.slot_ad, result.slot)
            if grant.ready:
                result.ready_time = grant.ready
            if grant.leftover_ad is not None:
                result.leftover_claim_id = grant.leftover_claim_id
                ad_to_pb(grant.leftover_ad, result.leftover_slot)

        await self._each(request.claims, apply, answer)
        return reply

    async def handed_claims(self, handed: HandedClaims) -> rpc.Handover:
        """``request_claims`` for a schedd of this process: its claim requests in, the
        outcomes its core takes out."""
        outcomes: list[ClaimOutcome] = []

        def apply(r: ClaimRequest, who: Principal, now: float) -> ClaimGrant:
            return self.host.request_claim(
                r.claim_id,
                r.slot_name,
                r.job_ad,
                handed.schedd_name,
                handed.schedd_address,
                r.owner,
                who,
                now,
                leftovers=r.leftovers,
            )

        def answer(r: ClaimRequest, grant: ClaimGrant | None, error: str) -> None:
            if grant is None:
                outcomes.append(ClaimOutcome(r.claim_id, False, error, r.claim_id, r.slot_name))
                return
            left = grant.leftover_ad is not None
            outcomes.append(
                ClaimOutcome(
                    r.claim_id,
                    True,
                    "",
                    grant.claim_id,
                    grant.slot_name,
                    grant.slot_ad,
                    grant.ready,
                    grant.leftover_claim_id if left else "",
                    grant.leftover_ad,
                )
            )

        await self._each(handed.claims, apply, answer)
        return rpc.Handover(outcomes)

    async def activate_claims(self, request: pb.ActivateClaimsRequest) -> pb.ActivateClaimsReply:
        reply = pb.ActivateClaimsReply()

        def apply(item: Any, who: Principal, now: float) -> ActivationGrant:
            job = self._job(item.job, "activations_refused")
            return self.host.activate(item.claim_id, job, who, now)

        def answer(item: Any, act: ActivationGrant | None, error: str) -> None:
            result = reply.results.add(claim_id=item.claim_id)
            if act is None:
                result.ok, result.error = False, error
            else:
                result.ok, result.start_time = True, act.start

        await self._each(request.activations, apply, answer)
        return reply

    async def handed_activations(self, handed: HandedActivations) -> rpc.Handover:
        """``activate_claims`` for a schedd of this process: its activations in, the
        outcomes its core takes out."""
        outcomes: list[ActivationOutcome] = []

        def apply(a: ActivationRequest, who: Principal, now: float) -> ActivationGrant:
            return self.host.activate(a.claim_id, a.job_ad, who, now)

        def answer(a: ActivationRequest, act: ActivationGrant | None, error: str) -> None:
            ok = act is not None
            outcomes.append(ActivationOutcome(a.claim_id, ok, error, act.start if ok else 0.0))

        await self._each(handed.activations, apply, answer)
        return rpc.Handover(outcomes)

    async def release_claims(self, request: pb.ReleaseClaimsRequest) -> pb.ReleaseClaimsReply:
        reply = pb.ReleaseClaimsReply()
        who = caller()
        async for part in turns.in_turns(request.claim_ids, turns.ADS_PER_TURN):
            now = self.ctx.clock.now()
            for claim_id in part:
                result = reply.results.add(claim_id=claim_id)
                try:
                    rel = self.host.release(claim_id, who, now)
                except Exception as e:
                    result.ok, result.error = False, _refusal(e)
                    continue
                result.ok, result.slot_name = True, rel.slot_name
                ad_to_pb(rel.slot_ad, result.slot)
            self._after()
        return reply

    def keep_alive(self, request: pb.KeepAliveRequest) -> pb.KeepAliveReply:
        unknown = self.host.keep_alive(list(request.claim_ids), caller(), self.ctx.clock.now())
        self._after()
        return pb.KeepAliveReply(unknown_claim_ids=unknown)

    def match_info(self, request: pb.MatchInfoRequest) -> pb.MatchInfoReply:
        """Matched slots (NEGOTIATOR_INFORM_STARTD)."""
        refused = self.host.match_info(list(request.claim_ids), self.ctx.clock.now())
        self._after()
        return pb.MatchInfoReply(refused_claim_ids=refused)

    # --- advertising ------------------------------------------------------------------

    async def _advertise_loop(self) -> None:
        clock = self.ctx.clock
        next_full = clock.now()  # advertise everything at start
        while True:
            try:
                changed = self.host.changed
                if clock.now() < next_full and not changed:
                    self._change_event.clear()
                    await sleep_until_or(self.ctx.clock, next_full, self._change_event)
                full = clock.now() >= next_full
                if not full:
                    # what else changes meanwhile goes with it
                    await clock.sleep_until(clock.now() + UPDATE_DELAY)
                now = clock.now()
                full = full or now >= next_full
                names = list(self.host.machines) if full else sorted(changed)
                changed.clear()
                self._change_event.clear()
                if full:
                    next_full = now + self._update_interval
                batch = [m for n in names if (m := self.host.machines.get(n)) is not None]
                if not await self.advertise(batch, now, only_changed=not full):
                    changed.update(names)
                    next_full = min(next_full, now + RETRY_INTERVAL)
                    await clock.sleep_until(now + RETRY_INTERVAL)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("startd: advertise round failed")
                await clock.sleep_until(clock.now() + RETRY_INTERVAL)

    def build_updates(
        self, machines: list[Machine], now: float, *, only_changed: bool = False
    ) -> tuple[list[bytes], dict[str, int]]:
        """Serialized ``AdUpdate``s: invalidations first (a slot name may come back in the
        same request), then every slot's public and private ad (``only_changed``: only the
        slots that changed since their ads were last built, as HTCondor's startd updates
        one slot at a time; the other slots' ads in the collector are still current).

        The wire form of a slot's ads is cached (serialized, ~1 KB a slot) and rebuilt only
        when the slot changed; otherwise only its time-dependent attributes are encoded
        and appended (protobuf merges a repeated field split over concatenated messages).
        """
        versions = {m.name: m.version for m in machines}
        updates = self._invalidations(machines)
        updates += self._slot_updates(machines, now, only_changed=only_changed)
        return updates, versions

    def _invalidations(self, machines: list[Machine]) -> list[bytes]:
        """The pending invalidations, these machines' removed slots among them."""
        updates: list[bytes] = []
        for slot_name in self._invalidated(machines):
            key = ClassAd({"Name": slot_name})
            for ad_type in ("Machine", "MachinePrivate"):
                update = collector_pb2.AdUpdate(ad_type=ad_type, ad=ad_to_pb(key), invalidate=True)
                updates.append(update.SerializeToString())
        return updates

    def _invalidated(self, machines: list[Machine]) -> list[str]:
        """The names of the slots whose ads are to be invalidated, these machines'
        removed slots among them."""
        for m in machines:
            for slot_name in m.take_removed():
                self._invalidate.append((m.name, slot_name))
                self._ad_cache.pop(slot_name, None)
                self._handed.pop(slot_name, None)
        names = []
        for machine_name, slot_name in self._invalidate:
            m = self.host.machines.get(machine_name)
            if m is not None and slot_name in m.slots:
                continue  # the name is in use again: its new ad replaces the old one
            names.append(slot_name)
        return names

    def _records(
        self, machines: list[Machine], now: float, *, only_changed: bool
    ) -> list[CollectorUpdate]:
        """What ``build_updates`` serialises, as the collector's own records: handed to a
        collector of this process (a virtual run), no message is built or decoded. Each
        slot's ad is a new ad sharing the values of the slot's current one."""
        out: list[CollectorUpdate] = []
        for slot_name in self._invalidated(machines):
            for ad_type in ("Machine", "MachinePrivate"):
                key = ClassAd({"Name": slot_name})
                out.append(CollectorUpdate(len(out), ad_type, key, invalidate=True))

        def build(m: Machine, slot: Slot, seq: int) -> tuple[ClassAd, ClassAd]:
            return public_ad(slot, m.info, now, seq), private_ad(slot, m.info)

        for slot, seq, (_, _, pub, priv) in self._to_send(
            machines, self._handed, build, only_changed=only_changed
        ):
            # the slot's ad with this update's clocks (the base holds them in place), their
            # bindings shared by the slots that read alike (the time, the update's seq)
            clocks = map(
                literal_binding, VOLATILE, volatile_values(slot, now, seq, self.host.ad_epoch)
            )
            out.append(CollectorUpdate(len(out), "Machine", ClassAd.from_exprs(clocks, pub)))
            out.append(CollectorUpdate(len(out), "MachinePrivate", priv.copy()))
        return out

    def _slot_updates(
        self, machines: list[Machine], now: float, *, only_changed: bool
    ) -> list[bytes]:
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

        updates: list[bytes] = []
        for slot, seq, (_, _, pub, priv) in self._to_send(
            machines, self._ad_cache, build, only_changed=only_changed
        ):
            tail = collector_pb2.AdUpdate()
            add = tail.ad.attributes.add
            for name, value in zip(VOLATILE, volatile_values(slot, now, seq, self.host.ad_epoch)):
                add(name=name).literal.integer = value
            updates.append(pub + tail.SerializeToString())
            updates.append(priv)
        return updates

    @staticmethod
    def _to_send(
        machines: list[Machine],
        cache: dict[str, tuple[Slot, int, A, A]],
        build: Callable[[Machine, Slot, int], tuple[A, A]],
        *,
        only_changed: bool,
    ) -> Iterator[tuple[Slot, int, tuple[Slot, int, A, A]]]:
        """Each slot whose ads go in this update (``only_changed``: only those changed
        since ``cache`` last built them), with the update's sequence number and the
        slot's cached ads, built (``build``) when the slot changed."""
        for m in machines:
            seq = m.next_sequence()
            for slot in m.ordered_slots():
                cached = cache.get(slot.name)
                stale = cached is None or cached[0] is not slot or cached[1] != slot.version
                if only_changed and not stale:
                    continue
                if stale:
                    cached = cache[slot.name] = (slot, slot.version, *build(m, slot, seq))
                assert cached is not None
                yield slot, seq, cached

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

    async def advertise(
        self, machines: list[Machine], now: float, *, only_changed: bool = False
    ) -> bool:
        """Send these machines' ads (and pending invalidations); True when all arrived.
        The ads are built a few machines at a time, with turns for the loop between (a
        full round of 2,500 slots held it 0.2 s)."""
        versions = {m.name: m.version for m in machines}
        address = self.ctx.collector_address
        channel = self.ctx.channel(address) if address else None
        requests: list[tuple[int, bytes | rpc.Handover]] = []
        if channel is not None and rpc.can_hand_over(channel):
            records: list[CollectorUpdate] = []
            async for part in turns.in_turns(machines, self._machines_per_turn):
                records += self._records(part, now, only_changed=only_changed)
            if records:
                requests.append((len(records), rpc.Handover(records)))
        else:
            updates = self._invalidations(machines)
            async for part in turns.in_turns(machines, self._machines_per_turn):
                updates += self._slot_updates(part, now, only_changed=only_changed)
            requests = list(_requests(updates, MAX_ADVERTISE_BYTES))
        if not requests:
            return True
        if channel is None:
            return False
        # AdvertiseRequest bytes made from the serialized updates (field 1, repeated)
        advertise = channel.unary_unary(
            "/mockpool.v1.Collector/Advertise",
            request_serializer=None,
            response_deserializer=collector_pb2.AdvertiseReply.FromString,
        )
        self.stats["advertise_rounds"] += 1
        try:
            for count, request in requests:
                reply = await rpc.call(advertise, request, timeout=RPC_TIMEOUT)
                for line in reply.errors:
                    log.warning("collector refused an update: %s", line)
                self.stats["ads_sent"] += count
        except grpc.aio.AioRpcError as e:
            self.stats["advertise_failures"] += 1
            log.warning("startd: cannot advertise to the collector: %s", e.details())
            for m in machines:  # not sent: the retry must build (and send) them again
                for slot in m.ordered_slots():
                    self._ad_cache.pop(slot.name, None)
                    self._handed.pop(slot.name, None)
            return False
        self._invalidate.clear()
        for m in machines:
            m.mark_clean(versions[m.name])
        return True

    # --- job exits --------------------------------------------------------------------

    async def _exit_loop(self) -> None:
        clock = self.ctx.clock
        while True:
            try:
                self._exit_wake.clear()
                self._armed = self.host.next_wakeup()
                if self._armed is None:
                    await self._exit_wake.wait()
                    continue
                if self._armed > clock.now():
                    await sleep_until_or(self.ctx.clock, self._armed, self._exit_wake)
                    continue
                now = clock.now()
                self.finish_jobs(now, self._exit_limit)
                wake = self.host.next_wakeup()
                if self._exit_limit is not None and wake is not None and wake <= now:
                    await turns.own_turn()  # live, more due: the loop's timers first
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("startd: job exit round failed")
                await clock.sleep_until(clock.now() + RETRY_INTERVAL)

    def finish_jobs(self, now: float, limit: int | None = None) -> list[JobExitRecord]:
        """The host's job ends due by ``now`` (of at most ``limit`` machines), each
        queued for its schedd."""
        exits = self.host.finish_jobs(now, limit)
        self._after()
        for e in exits:
            address = self._moved.get(e.schedd_address, e.schedd_address)
            self._pending_exits.setdefault((address, e.schedd_name.lower()), []).append(
                schedd_pb2.JobExit(
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
            )
        for dest in list(self._pending_exits):
            self._start_sender(dest)
        return exits

    async def _deliver(self, dest: tuple[str, str]) -> None:
        """Send the exits queued for one schedd (address, name); an unreachable one gets
        the same request (same request id) again until it answers."""
        clock = self.ctx.clock
        address, name = dest
        try:
            while exits := self._pending_exits.pop(dest, None):
                request = schedd_pb2.JobsExitedRequest(request_id=rpc.request_id(), exits=exits)
                while True:
                    try:
                        stub = schedd_pb2_grpc.ScheddStub(self.ctx.channel(from_sinful(address)))
                        await rpc.call(stub.JobsExited, request, timeout=RPC_TIMEOUT)
                        self.stats["exits_reported"] += len(exits)
                        break
                    except asyncio.CancelledError:
                        self._pending_exits.setdefault(dest, [])[:0] = exits
                        raise
                    except Exception as e:  # a failing peer never stops the startd
                        self.stats["exit_report_failures"] += 1
                        log.warning(
                            "startd: cannot report %d job exits to %s: %s", len(exits), address, e
                        )
                        moved = await self._relocate_schedd(address, exits)
                        if moved is not None:  # the schedd came back elsewhere: send there
                            self._pending_exits.setdefault((moved, name), [])[:0] = exits
                            self._start_sender((moved, name))
                            break
                        await clock.sleep_until(clock.now() + RETRY_INTERVAL)
        finally:
            self._senders.pop(dest, None)

    def _start_sender(self, dest: tuple[str, str]) -> None:
        if dest not in self._senders:
            task = asyncio.get_running_loop().create_task(
                self._deliver(dest), name=f"startd-exits-{dest[0]}-{dest[1]}"
            )
            self._senders[dest] = task

    async def _relocate_schedd(self, address: str, exits: list[schedd_pb2.JobExit]) -> str | None:
        """Where the collector says the exits' schedd is now, if not at ``address``."""
        name = exits[0].schedd_name if exits else ""
        if not name:
            return None
        try:
            found = await self.ctx.locate("Scheduler", f"Name == {quote_string(name)}")
        except Exception:  # no collector either: retry later
            return None
        if found is None or found == address:
            return None
        log.info("startd: schedd %s moved from %s to %s", name, address, found)
        self._moved[address] = found
        return found


def _requests(updates: list[bytes], limit: int) -> Iterator[tuple[int, bytes]]:
    """Serialized AdvertiseRequests (``updates``, field 1) of at most ``limit`` bytes
    (unless one update is larger), each with how many updates it holds: made one at a
    time, as they are sent (all of 10,000 slots' at once held the loop)."""
    for count, parts in framed_batches(1, ((u,) for u in updates), limit):
        yield count, b"".join(parts)


def _refusal(e: Exception) -> str:
    """The answer for one refused item; a bug fails only its own item, and is logged."""
    if isinstance(e, StartdError | WireError):
        return str(e)
    log.exception("startd: internal error on one request item")
    return f"internal error in the startd: {type(e).__name__}: {e}"
