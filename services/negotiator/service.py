"""The negotiator's gRPC shell: the cycle loop, Reschedule, the Negotiator ad.

One loop waits until the :class:`Cadence` says a cycle is due (or a Reschedule wakes it),
then runs a cycle:

1. Phase 1 over the network: ``Collector.Snapshot`` (slot ads + claim ids, NEGOTIATOR
   role), ``Collector.Query`` for Scheduler and Submitter ads, then
   ``Schedd.GetResourceRequests`` from every schedd whose submitters have idle jobs, all
   schedds at once. A schedd that fails is logged ("Failed to connect to") and left out
   of this cycle.
2. Phases 2-4: :func:`negotiate`, in a worker thread (``DaemonContext.offload``) so the
   actor's other daemons keep serving while it computes; a virtual run computes inline
   and charges the cycle to pool time by the spec's rule (``DaemonContext.cycle_charge``).
3. One ``Schedd.Matches`` message per schedd, all at once (still phase 4, as in
   HTCondor); then the cycle is finished, its stats pushed into the history and the
   Negotiator ad advertised (also every NEGOTIATOR_UPDATE_INTERVAL, so it never expires).

What the negotiator keeps between cycles (the accountant on disk, the cadence, the
statistics history, the NegotiatorLog lines) and what it decides around a cycle is the
core's (:class:`.negotiator.Negotiator`); this shell does the network, the worker thread
and the timers. ``UserPrio`` answers condor_userprio: reading needs any role, changing
needs ADMIN. Each cycle also sends the Accounting ads (submitters and groups) to the
collector.

Cycle durations are pool seconds: real time x the clock's time scale, what a pool user
sees.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import grpc
import grpc.aio

from .. import rpc, turns
from ..auth import Role, current_role
from ..claimid import from_sinful, sinful
from ..classad import ClassAd
from ..daemon import RPC_TIMEOUT, DaemonContext, periodic
from ..packedcolumns import PackedColumn, column_from_pb
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
from .accountant import Accountant, AccountantError
from .cadence import Cadence
from .cycle import (
    CycleAds,
    CycleMatch,
    CycleResult,
    Rejection,
    ResourceRequest,
    negotiate,
    requests_from_ads,
)
from .held_ads import SnapshotPart, StaleSnapshot
from .log import LogLine
from .negotiator import Negotiator
from .phase1 import schedds_to_ask
from .stats import StatsHistory

NAMELESS = ("delete", "resetall")  # userprio actions that take no user@domain

if TYPE_CHECKING:
    from ..collector.store import CollectorSnapshot

__all__ = ["SERVICE_NAME", "NegotiatorService"]

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


def _method(name: str) -> str:
    return f"/{SERVICE_NAME}/{name}"


class NegotiatorService(ngrpc.NegotiatorServicer):
    """The negotiator daemon: cadence loop, cycle, Reschedule servicer."""

    METHOD_ROLES = {
        _method("Reschedule"): frozenset({Role.DAEMON, Role.SUBMIT, Role.ADMIN}),
        _method("UserPrio"): frozenset({Role.READ, Role.SUBMIT, Role.ADMIN, Role.DAEMON}),
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
            ctx.disk.files(ctx.state_dir.name) if ctx.disk else Path(ctx.state_dir),
            log_base_wall=log_base_wall,
            accountant=accountant,
            priorities=priorities,
        )
        self._tasks: list[asyncio.Task[None]] = []
        self._informing: set[asyncio.Task[None]] = set()  # MatchInfo to startds in flight
        self._wake: asyncio.Event | None = None
        # Slot ads that did not change since the last cycle are not decoded again.
        self._slot_decoder = AdDecoder()

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

    async def _emit(self) -> None:
        """The core's events into the event log, in turns (a cycle's 10,000 matches are
        an event each)."""
        async for part in turns.in_turns(self.core.drain_events()):
            for kind, fields in part:
                self.ctx.events.emit(self.name, kind, **fields)

    # -- Service protocol ----------------------------------------------------------------
    def add_to_server(self, server: grpc.aio.Server) -> None:
        ngrpc.add_NegotiatorServicer_to_server(self, server)

    async def start(self) -> None:
        self.core.started(self.ctx.clock.now())
        update_interval = self.core.update_interval
        self._wake = asyncio.Event()
        loop = asyncio.get_running_loop()
        self._tasks.append(loop.create_task(self._cycle_loop()))
        if update_interval > 0:
            self._tasks.append(
                loop.create_task(
                    periodic(
                        self.ctx.clock,
                        update_interval,
                        self.advertise,
                        name=f"{self.name} ad",
                        first_delay=update_interval,
                    )
                )
            )

    async def stop(self) -> None:
        tasks, self._tasks = [*self._tasks, *self._informing], []
        self._informing = set()
        for t in tasks:
            t.cancel()
        for t in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await t

    def status(self) -> dict[str, Any]:
        return self.core.status(self.ctx.address)

    # -- condor_userprio -------------------------------------------------------------------
    def accounting_ads(self) -> list[ClassAd]:
        return self.core.accounting_ads()

    def userprio(self, action: str, name: str, value: float) -> list[ClassAd]:
        """Apply one condor_userprio change (AccountantError names a bad one)."""
        return self.core.userprio(action, name, value, self.ctx.clock.now())

    async def UserPrio(
        self, request: npb.UserPrioRequest, context: grpc.aio.ServicerContext
    ) -> npb.UserPrioReply:
        if request.action and current_role() != Role.ADMIN:
            await context.abort(
                grpc.StatusCode.PERMISSION_DENIED,
                f"userprio -{request.action} needs the ADMIN role",
            )
        if request.action and "@" not in request.name and request.action not in NAMELESS:
            await context.abort(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"-{request.action}: {request.name!r} is not of the form user@domain",
            )
        try:
            ads = self.userprio(request.action, request.name, request.value)
        except AccountantError as exc:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        reply = npb.UserPrioReply(now=self.ctx.clock.now())
        for ad in ads:
            ad_to_pb(ad, reply.ads.add())
        return reply

    def drain_log(self, limit: int | None = None) -> list[str]:
        """NegotiatorLog lines written since the last drain (the oldest ``limit``)."""
        return self.core.drain_log(limit)

    # -- Reschedule ------------------------------------------------------------------------
    def reschedule(self, schedd_name: str = "") -> float:
        """Make the next cycle due now (once; the cadence's minimums still apply).
        Returns the pool time the next cycle will start."""
        self.cadence.reschedule(self.ctx.clock.now())
        if self._wake is not None:
            self._wake.set()
        return self.cadence.when_due()

    async def Reschedule(
        self, request: npb.RescheduleRequest, context: grpc.aio.ServicerContext
    ) -> npb.RescheduleReply:
        return npb.RescheduleReply(next_cycle=self.reschedule(request.schedd_name))

    # -- the loop -------------------------------------------------------------------------
    async def _wait_due(self) -> None:
        """Sleep until the next cycle is due or a reschedule wakes us."""
        clock = self.ctx.clock
        assert self._wake is not None
        while True:
            self._wake.clear()
            due = self.cadence.next_due
            if clock.now() >= due:
                return
            sleeper = asyncio.ensure_future(clock.sleep_until(due))
            waker = asyncio.ensure_future(self._wake.wait())
            try:
                await asyncio.wait({sleeper, waker}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for t in (sleeper, waker):
                    if not t.done():
                        t.cancel()
                        with contextlib.suppress(asyncio.CancelledError):
                            await t

    async def _cycle_loop(self) -> None:
        clock = self.ctx.clock
        while True:
            await self._wait_due()
            start = clock.now()
            if not self.cadence.try_start(start):
                continue
            try:
                result = await self.run_cycle(start)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("%s: negotiation cycle failed", self.name)
                result = None
            if result is not None:
                self.cadence.finished(start, max(start, clock.now()))
            # else: an aborted cycle leaves the timer on its period (start + INTERVAL),
            # and the last start/end unchanged, as HTCondor's early return does.

    # -- one cycle -------------------------------------------------------------------------
    def _collector(self, role: Role = Role.NEGOTIATOR) -> cgrpc.CollectorStub:
        return cgrpc.CollectorStub(self.ctx.channel(self.ctx.collector_address, role))

    def _schedd(self, address: str) -> sgrpc.ScheddStub:
        return sgrpc.ScheddStub(self.ctx.channel(from_sinful(address), Role.NEGOTIATOR))

    def _snapshot_call(self) -> Any:
        """The collector's Snapshot method, its reply left as bytes, read off the loop
        (a 100,000-slot reply parsed by gRPC would hold the loop for seconds)."""
        channel = self.ctx.channel(self.ctx.collector_address, Role.NEGOTIATOR)
        return channel.unary_unary(
            _SNAPSHOT_METHOD, request_serializer=cpb.SnapshotRequest.SerializeToString
        )

    def _matches_call(self, address: str) -> Any:
        """The schedd's Matches method, sent a request already serialised."""
        channel = self.ctx.channel(from_sinful(address), Role.NEGOTIATOR)
        return channel.unary_unary(
            _MATCHES_METHOD, response_deserializer=spb.MatchesReply.FromString
        )

    async def run_cycle(self, start: float) -> CycleResult | None:
        """Run one cycle that starts now; returns its result (None if phase 1 failed)."""
        clock, core = self.ctx.clock, self.core
        cpu0 = time.process_time()
        notes: list[LogLine] = []
        try:
            snapshot = await self._obtain_ads(notes)
        except (grpc.aio.AioRpcError, WireError) as exc:
            core.cycle_aborted(start, clock.now(), _why(exc))
            log.warning("%s: cannot fetch ads from the collector: %s", self.name, _why(exc))
            return None
        requests, failed = await self._fetch_requests(snapshot, notes)
        core.computing()
        result = None
        try:
            result = await self.ctx.offload(
                negotiate,
                snapshot,
                requests,
                core.accountant,
                core.cycle_config,
                start,
                timer=clock.now,
                finish=False,
                phase1_notes=notes,
                columns=core.columns,
                ad_epoch=core.ad_epoch,
                rng=core.eval_rng,
            )
        finally:
            core.computed(result)
        charge = self.ctx.cycle_charge
        if charge is not None:
            await clock.sleep(
                charge(len(snapshot.slots), len(result.matches), time.process_time() - cpu0)
            )
        await self._send_matches(result)
        core.finish_cycle(result, start, clock.now(), time.process_time() - cpu0, failed)
        await self._emit()
        await self.advertise()
        return result

    async def _obtain_ads(self, notes: list[LogLine]) -> CycleAds:
        coll = self._collector()
        held = self.core.slot_ads
        snap_reply, schedd_reply, submitter_reply = await asyncio.gather(
            self._fetch_snapshot(held.since()),
            rpc.call(coll.Query, cpb.QueryRequest(ad_type="Scheduler"), timeout=RPC_TIMEOUT),
            rpc.call(coll.Query, cpb.QueryRequest(ad_type="Submitter"), timeout=RPC_TIMEOUT),
        )
        try:
            slots, private, columns = await self.ctx.offload(self._decode_snapshot, snap_reply)
        except StaleSnapshot as exc:  # held nothing now: the whole snapshot, once
            log.warning("%s: %s; asking for every ad", self.name, exc)
            snap_reply = await self._fetch_snapshot(None)
            try:
                slots, private, columns = await self.ctx.offload(self._decode_snapshot, snap_reply)
            except StaleSnapshot as again:  # a collector that sends deltas unasked
                raise WireError(f"snapshot reply does not fit: {again}") from None
        sent, refused = columns
        for why in refused:
            log.warning("%s: %s; reading it from the ads", self.name, why)
            notes.append(LogLine(self.ctx.clock.now(), f"    Ignoring {why}"))
        return CycleAds(
            slots=slots,
            private_ads=private,
            submitters=ads_from_pb(submitter_reply.ads),
            schedulers=ads_from_pb(schedd_reply.ads),
            slot_columns=sent,
        )

    async def _fetch_snapshot(self, since: tuple[str, int] | None) -> bytes | rpc.Handover:
        request = cpb.SnapshotRequest()
        if since is not None:
            request.since_epoch, request.since_seq = since
        request.columns.extend(self.core.snapshot_columns())
        return await rpc.call(
            self._snapshot_call(), request, timeout=RPC_TIMEOUT, metadata=(rpc.HANDOVER,)
        )

    def _decode_snapshot(
        self, raw: bytes | rpc.Handover
    ) -> tuple[list[ClassAd], list[ClassAd], tuple[dict[str, PackedColumn], list[str]]]:
        """The whole snapshot: the ads the reply carries, decoded, and (a delta) the
        ones held since the last cycle; the columns it carries (see ``_columns``). A
        collector of this process hands over its records: their ads as they are
        (immutable, as decoded ones), with their bytes for the matches that send them on."""
        decoder = self._slot_decoder
        if isinstance(raw, rpc.Handover):
            snap: CollectorSnapshot = raw.value
            keep = snap.keep
            slot_ads = [r.ad if keep is None else r.projected(keep) for r in snap.slots]
            wires = [r.known_wire(keep) for r in snap.slots]
            decoder.adopt(
                [a for a, w in zip(slot_ads, wires, strict=True) if w is not None],
                [w for w in wires if w is not None],
            )
            columns: tuple[dict[str, PackedColumn], list[str]] = ({}, [])  # reads the ads
            slots, private = self.core.slot_ads.merge(
                snap.epoch,
                snap.seq,
                snap.delta,
                SnapshotPart(slot_ads, snap.slot_order, snap.slot_rows),
                SnapshotPart([r.ad for r in snap.private], snap.private_order, snap.private_rows),
                snap.same_order,
            )
        else:
            ads, rest = split_fields(raw, _SNAPSHOT_ADS)
            try:
                head = cpb.SnapshotReply.FromString(rest)
            except Exception as exc:
                raise WireError(f"not a snapshot reply: {exc}") from None
            slots, private = self.core.slot_ads.merge(
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
            )
            columns = self._columns(head.columns, slots)
        decoder.keep(slots)  # held ads: their bytes are sent on with their matches
        decoder.end_round()
        return slots, private, columns

    def _columns(
        self, sent: Sequence[cpb.SlotColumn], slots: list[ClassAd]
    ) -> tuple[dict[str, PackedColumn], list[str]]:
        """The columns a reply carries, by lower-case name, each checked against the
        snapshot's slots; and why each one that does not fit was left out (naming it and
        the slot at fault): the cycle reads that name from the ads."""
        errors: list[str] = []
        if not sent:
            return {}, errors
        names = self.core.slot_ads.slot_names()
        if len(names) != len(slots):  # a whole snapshot the collector did not name
            names = [str(ad.eval("Name")) for ad in slots]
        asked = {n.lower() for n in self.core.snapshot_columns()}
        out: dict[str, PackedColumn] = {}
        for msg in sent:
            key = msg.name.lower()
            try:
                if key not in asked or key in out:
                    why = "twice" if key in out else "unasked"
                    raise WireError(f"snapshot column {msg.name!r} sent {why}")
                out[key] = column_from_pb(msg, names)
            except WireError as exc:
                errors.append(str(exc))
        return out, errors

    async def _fetch_requests(
        self, snapshot: CycleAds, notes: list[LogLine]
    ) -> tuple[list[ResourceRequest], set[str]]:
        """Every schedd's resource requests; the submitters of schedds that failed."""
        plan = schedds_to_ask(
            snapshot.submitters,
            now=self.core.ad_epoch + self.ctx.clock.now(),
            rng=self.core.eval_rng,
        )
        schedds, submitters_at = plan.addresses, plan.submitters_at
        for _ in range(plan.ignored):
            notes.append(
                LogLine(
                    self.ctx.clock.now(),
                    "WARNING: ignoring submitter ad with no name and/or address",
                )
            )

        async def one(sname: str, addr: str) -> list[ClassAd]:
            reply = await rpc.call(
                self._schedd(addr).GetResourceRequests,
                spb.ResourceRequestsRequest(schedd_name=sname),
                timeout=RPC_TIMEOUT,
            )
            return ads_from_pb(reply.requests)

        names = plan.names()
        replies = await asyncio.gather(*(one(n, schedds[n]) for n in names), return_exceptions=True)
        requests: list[ResourceRequest] = []
        failed: set[str] = set()
        for sname, reply in zip(names, replies, strict=True):
            addr = schedds[sname]
            if isinstance(reply, BaseException):
                if isinstance(reply, asyncio.CancelledError):
                    raise reply
                self.core.peer_failures += 1
                failed |= submitters_at.get(sname, set())
                notes.append(
                    LogLine(
                        self.ctx.clock.now(), f"    Failed to connect to {sname} {sinful(addr)}"
                    )
                )
                log.warning("%s: schedd %s at %s failed: %s", self.name, sname, addr, _why(reply))
                continue
            reqs, errors = requests_from_ads(
                reply,
                sname,
                from_sinful(addr),
                now=self.core.ad_epoch + self.ctx.clock.now(),
                rng=self.core.eval_rng,
            )
            requests += reqs
            for e in errors:
                notes.append(LogLine(self.ctx.clock.now(), f"    Ignoring request: {e}"))
        return requests, failed

    def _inform_startds(self, result: CycleResult) -> None:
        """NEGOTIATOR_INFORM_STARTD: tell each startd the ids of its matched slots (in the
        background; a startd that does not hear simply never enters Matched)."""
        by_startd: dict[str, list[str]] = {}
        for m in result.matches:
            by_startd.setdefault(m.startd_address, []).append(m.claim_id)

        async def one(address: str, ids: list[str]) -> None:
            stub = startd_pb2_grpc.StartdStub(self.ctx.channel(address))
            try:
                await rpc.call(
                    stub.MatchInfo, tpb.MatchInfoRequest(claim_ids=ids), timeout=RPC_TIMEOUT
                )
            except Exception as e:  # the startd is down or slow: the match stands anyway
                log.warning("negotiator: MatchInfo to %s failed: %s", address, e)

        for address, ids in by_startd.items():
            task = asyncio.get_running_loop().create_task(one(address, ids))
            self._informing.add(task)
            task.add_done_callback(self._informing.discard)

    async def _send_matches(self, result: CycleResult) -> None:
        """Each schedd's matches and rejections, to every schedd at once: in messages of
        at most :data:`MATCHES_MESSAGE_BYTES` (the rejections with the first). A message of
        20,000 matches, their slot ads 30 MB, held the sender's loop and the schedd's for
        half a second each."""
        by_schedd = result.matches_by_schedd()
        rejected = result.rejections_by_schedd()
        address = {m.schedd: m.schedd_address for m in result.matches}
        address.update({r.schedd: r.schedd_address for r in result.rejections})
        cycle_no = self.core.cycles + 1

        def head(sname: str, rejections: list[Rejection]) -> bytes:
            msg = spb.MatchesRequest(schedd_name=sname, request_id=rpc.request_id(), cycle=cycle_no)
            for r in rejections:
                cluster, _, proc = r.job_id.partition(".")
                msg.rejections.add(
                    submitter=r.submitter,
                    autocluster_id=r.autocluster_id,
                    cluster_id=int(cluster),
                    proc_id=int(proc),
                    reason=r.reason,
                    time=r.time,
                )
            return msg.SerializeToString()

        async def one(
            sname: str, matches: list[CycleMatch], rejections: list[Rejection]
        ) -> tuple[list[CycleMatch], bool, list[CycleMatch], Exception | None]:
            """The matches the schedd took, whether it took the rejections (with the
            first message), the matches it did not take and the first failure. The
            messages go at once, not each after the last one's answer: they are
            independent, and one at a time a busy schedd got a round trip per message."""
            # each match put together from its slot ad's bytes as read from the collector,
            # or cached, copied once, into the message (see wire.frame_parts)
            entries: list[tuple[bytes, bytes, bytes]] = []
            failure: Exception | None = None
            try:
                async for part in turns.in_turns(matches):
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
            call = self._matches_call(address[sname])
            batches = list(framed_batches(_MATCHES_FIELD, entries, MATCHES_MESSAGE_BYTES))
            calls, ranges, start = [], [], 0  # each message's call and (first, end) match
            for count, parts in batches or [(0, [])]:  # rejections alone: one message
                body = b"".join([head(sname, [] if calls else rejections), *parts])
                calls.append(rpc.call(call, body, timeout=RPC_TIMEOUT))
                ranges.append((start, start + count))
                start += count
            outcomes = await asyncio.gather(*calls, return_exceptions=True)
            took: list[CycleMatch] = []
            lost: list[CycleMatch] = []
            for (first, end), out in zip(ranges, outcomes, strict=True):
                if isinstance(out, asyncio.CancelledError):
                    raise out
                if isinstance(out, Exception):
                    lost += matches[first:end]
                    failure = failure or out
                else:
                    took += matches[first:end]
            lost += matches[start:]  # not put together
            return took, not isinstance(outcomes[0], BaseException), lost, failure

        names = sorted(address)
        if self.ctx.config.get_bool("NEGOTIATOR_INFORM_STARTD"):
            self._inform_startds(result)
        outcomes = await asyncio.gather(
            *(one(n, by_schedd.get(n, []), rejected.get(n, [])) for n in names)
        )
        for sname, (took, took_rejections, lost, failure) in zip(names, outcomes, strict=True):
            self.core.matches_sent(took, rejected.get(sname, []) if took_rejections else [])
            if failure is not None:
                self.core.matches_failed(result, sname, address[sname], lost, self.ctx.clock.now())
                log.warning("%s: sending matches to %s failed: %s", self.name, sname, _why(failure))
        await self._emit()

    # -- the Negotiator ad ---------------------------------------------------------------
    def negotiator_ad(self) -> ClassAd:
        return self.core.negotiator_ad(
            self.ctx.my_address,
            self.ctx.clock.now(),
            machine=self.ctx.host,
            duty_cycle=self.ctx.duty_cycle(),
        )

    async def advertise(self) -> None:
        """Send the Negotiator ad to the collector (a failure is logged, not raised)."""
        msg = cpb.AdvertiseRequest()
        msg.updates.add(ad_type="Negotiator", ad=ad_to_pb(self.negotiator_ad()))
        for ad in self.accounting_ads():
            msg.updates.add(ad_type="Accounting", ad=ad_to_pb(ad))
        try:
            reply = await rpc.call(self._collector(Role.DAEMON).Advertise, msg, timeout=RPC_TIMEOUT)
        except grpc.aio.AioRpcError as exc:
            self.core.peer_failures += 1
            log.warning("%s: advertising to the collector failed: %s", self.name, _why(exc))
            return
        for err in reply.errors:
            log.warning("%s: collector refused the Negotiator ad: %s", self.name, err)


def _why(exc: BaseException) -> str:
    if isinstance(exc, grpc.aio.AioRpcError):
        return f"{exc.code().name}: {exc.details()}"
    return f"{type(exc).__name__}: {exc}"
