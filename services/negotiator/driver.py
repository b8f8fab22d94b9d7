"""The negotiator behind the core contract (:class:`~mockpool.contract.Core`): the cycle
as a state machine, the ad timer, Reschedule and condor_userprio.

:class:`.negotiator.Negotiator` keeps what lasts between cycles (the accountant, the
cadence, the statistics, the NegotiatorLog); this driver holds the cycle in flight and
turns it into messages. One cycle (HTCondor's ``negotiationTime``):

1. Phase 1a: the snapshot of slot ads (``CollectorSnapshotRequest``) and the Scheduler
   and Submitter ads (two ``CollectorQuery``), all at once. A failure of any aborts the
   cycle at once (its four NegotiatorLog lines, no statistics, the timer left on its
   period); a delta that does not fit what is held is asked for again whole, once.
2. Phase 1b: ``ScheddResourceRequestsRequest`` to every schedd whose submitters have idle
   jobs, all at once; a schedd that fails is left out ("Failed to connect to").
3. The computation, :func:`.cycle.negotiate`: inside the call that completed phase 1, or,
   with ``offload=True``, handed out by :meth:`NegotiatorDriver.pending_compute` for the
   caller to run elsewhere (a worker thread) and hand back to :meth:`computed`.
4. After the cycle's charge in pool time (a virtual run's price of a cycle; none live):
   ``StartdMatchInfo`` (NEGOTIATOR_INFORM_STARTD) and one ``ScheddMatches`` per schedd,
   the rejections with it; when every schedd answered, the cycle is finished (its
   statistics, log lines and events) and the Negotiator and Accounting ads advertised;
   when the collector answered that, the cadence times the next cycle.

Every id of a conversation (``corr``) names the cycle's round, so a late answer to an
aborted or finished cycle is ignored. Whatever a reply's arrival times (NegotiatorLog
lines, events) is dated when the last answer of its phase is in, as the shell's
gathers did.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..claimid import from_sinful, sinful
from ..collector.collector import CollectorUpdate
from ..contract import Peer, Ready, Undeliverable
from ..messages import (
    AdvertiseAck,
    CollectorAdvertise,
    CollectorQuery,
    CollectorSnapshotRequest,
    MatchesAck,
    NegotiatorReschedule,
    NegotiatorResourceRequests,
    NegotiatorUserPrio,
    QueryReply,
    RescheduleAck,
    ScheddMatches,
    ScheddResourceRequestsRequest,
    SnapshotReply,
    StartdMatchInfo,
    UserPrioReply,
)
from ..schedd.records import MatchNotice, RejectionNotice
from .accountant import AccountantError
from .cycle import negotiate
from .cycleinput import CycleAds, requests_from_ads
from .cycleoutput import CycleMatch, CycleRejection, CycleResult
from .held_ads import SnapshotPart, StaleSnapshot, WireSnapshot
from .log import LogLine
from .phase1 import ScheddsToAsk, schedds_to_ask

if TYPE_CHECKING:
    from ..classad import ClassAd
    from .negotiator import Negotiator

__all__ = ["NAMELESS", "NegotiatorDriver"]

log = logging.getLogger(__name__)

NAMELESS = ("delete", "resetall")  # userprio actions that take no user@domain
_QUERIES = ("Scheduler", "Submitter")

CycleCharge = Callable[[int, int, float], float]  # (slots, matches, cpu s) -> pool s


def why(u: Undeliverable) -> str:
    """What a failed call says in the log: ``CODE: details``; DATA_LOSS is a reply the
    live codec could not decode (its WireError)."""
    return f"{'WireError' if u.code == 'DATA_LOSS' else u.code}: {u.detail}"


@dataclass
class _Cycle:
    """One cycle in flight."""

    round: int  # the driver's count of started cycles
    tag: str  # in every corr of the cycle: its round and the driver's start
    start: float
    cpu0: float
    state: str = "ads"  # ads, requests, compute, charge, matches, advertise
    notes: list[LogLine] = field(default_factory=list)
    snapshot: SnapshotReply | None = None  # held until the two queries are in too
    queries: dict[str, list[ClassAd]] = field(default_factory=dict)
    asked_whole: bool = False  # a stale delta was asked for again whole
    ads: CycleAds | None = None
    plan: ScheddsToAsk | None = None
    waiting: set[str] = field(default_factory=set)  # schedds asked, not yet answered
    replies: dict[str, list[ClassAd] | Undeliverable] = field(default_factory=dict)
    failed: set[str] = field(default_factory=set)  # submitters of schedds that failed
    result: CycleResult | None = None
    send_at: float = 0.0
    # schedd -> (matches sent, rejections sent, its address); answers as they come in
    sent: dict[str, tuple[list[CycleMatch], list[CycleRejection], str]] = field(
        default_factory=dict
    )
    answers: dict[str, MatchesAck | Undeliverable] = field(default_factory=dict)


class NegotiatorDriver:
    """A negotiator (:class:`Negotiator`) answering the core contract.

    ``collector_address``: where the collector's messages go; ``address``: this daemon's
    MyAddress in its ad (a sinful string), ``machine`` its host. Injected, as the core
    reads no clock: ``timer`` (pool time for the phase timings of a cycle that computes
    elsewhere; default the ``now`` of the call), ``cpu_timer`` (CPU seconds, for the
    cycle's statistics and a CPU-priced charge; default none), ``cycle_charge`` (pool
    seconds a cycle costs before its matches go; None: nothing), ``duty_cycle`` (the
    loop's RecentDaemonCoreDutyCycle for the ad). ``offload``: the caller runs the
    computation (:meth:`pending_compute`, :meth:`computed`)."""

    def __init__(
        self,
        core: Negotiator,
        *,
        collector_address: str = "",
        address: str = "",
        machine: str = "",
        timer: Callable[[], float] | None = None,
        cpu_timer: Callable[[], float] | None = None,
        cycle_charge: CycleCharge | None = None,
        duty_cycle: Callable[[], float] | None = None,
        offload: bool = False,
        columns: bool = True,
    ) -> None:
        self.core = core
        # the snapshot's packed columns make a reply over the wire small; a caller that
        # hands the collector's records over as they are (the kernel) asks for none
        self.columns = columns
        self.name = core.name
        self.collector_address = collector_address
        self.address = address
        self.machine = machine
        self.timer = timer
        self.cpu_timer = cpu_timer
        self.cycle_charge = cycle_charge
        self.duty_cycle = duty_cycle
        self.offload = offload
        self.inform_startd = core.config.get_bool("NEGOTIATOR_INFORM_STARTD")
        self.cycle: _Cycle | None = None
        self.rounds = 0  # cycles started (an aborted one too)
        self._compute: Callable[[], CycleResult] | None = None
        self._ad_due: float | None = None  # the periodic ad's time (None: none)
        self._ad_flying = False  # sent, not yet answered: the timer waits for the answer
        self._ads_sent = 0
        self._life = ""  # this incarnation's start, in every corr: a restarted core's
        # first round is not its predecessor's (whose answers may still come in)

    # -- the contract ------------------------------------------------------------------
    def start(self, now: float) -> Ready:
        """The daemon starts at ``now``: the first cycle is due now, the ad timer runs
        (nothing to send yet: ``next_wakeup`` is ``now``)."""
        self.core.started(now)
        self._life = repr(float(now))
        if self.core.update_interval > 0:
            self._ad_due = now + self.core.update_interval
        return Ready()

    def next_wakeup(self) -> float | None:
        times = [t for t in (self.ad_wakeup(), self.cycle_wakeup()) if t is not None]
        return min(times) if times else None

    def tick(self, now: float) -> Ready:
        return self.tick_ad(now).extend(self.tick_cycle(now))

    # The two timers apart (next_wakeup and tick join them).
    def ad_wakeup(self) -> float | None:
        """When the periodic ad is due (None: no timer, or the last one unanswered)."""
        return None if self._ad_flying else self._ad_due

    def cycle_wakeup(self) -> float | None:
        """When the cycle next wants to run: its start when none is in flight, the end of
        its charge; None while it waits for answers or its computation."""
        c = self.cycle
        if c is None:
            return self.core.cadence.next_due
        return c.send_at if c.state == "charge" else None

    def tick_ad(self, now: float) -> Ready:
        ready = Ready()
        if self._ad_due is not None and not self._ad_flying and now >= self._ad_due:
            self._ad_flying = True  # re-armed when the collector answered
            self._ads_sent += 1
            self._advertise(ready, f"ad:p{self._ads_sent}@{self._life}", now)
        return ready

    def tick_cycle(self, now: float) -> Ready:
        ready = Ready()
        c = self.cycle
        if c is None and self.core.cadence.due(now):
            if self.core.cadence.try_start(now):
                self._start_cycle(ready, now)
        elif c is not None and c.state == "charge" and now >= c.send_at:
            self._send_matches(ready, c, now)
        return ready

    def deliver(self, msg: Any, sender: Peer, now: float) -> Ready:
        ready = Ready()
        if isinstance(msg, NegotiatorReschedule):
            self.core.cadence.reschedule(now)
            ready.send(sender.address, RescheduleAck(msg.corr, self.core.cadence.when_due()))
        elif isinstance(msg, NegotiatorUserPrio):
            ready.send(sender.address, self._userprio(msg, sender, now))
        else:
            self._answer(ready, msg, now)
        return ready

    def drop_cycle(self) -> None:
        """The caller lost the cycle in flight (an error of its own): it is forgotten, no
        statistics, and the timer stays on its period, as after an abort."""
        if self.cycle is not None and self.cycle.state == "compute":
            self.core.computed(None)
        self.cycle, self._compute = None, None

    # -- requests ----------------------------------------------------------------------
    def _userprio(self, msg: NegotiatorUserPrio, sender: Peer, now: float) -> Any:
        """Reading needs any role the role table admits; a change needs ADMIN and (but
        for delete and resetall) a name of the form user@domain."""
        if msg.action and sender.principal.role != "admin":
            return Undeliverable(
                msg, "PERMISSION_DENIED", f"userprio -{msg.action} needs the ADMIN role"
            )
        if msg.action and "@" not in msg.name and msg.action not in NAMELESS:
            return Undeliverable(
                msg,
                "INVALID_ARGUMENT",
                f"-{msg.action}: {msg.name!r} is not of the form user@domain",
            )
        try:
            ads = self.core.userprio(msg.action, msg.name, msg.value, now)
        except AccountantError as exc:
            return Undeliverable(msg, "INVALID_ARGUMENT", str(exc))
        return UserPrioReply(msg.corr, now, ads)

    # -- answers to what the driver sent -----------------------------------------------
    def _answer(self, ready: Ready, msg: Any, now: float) -> None:
        sent = msg.msg if isinstance(msg, Undeliverable) else msg
        kind, _, rest = sent.corr.partition(":")
        round_text, _, what = rest.partition(":")
        if kind == "ad":
            self._advertised(ready, msg, round_text, now)
            return
        if kind == "mi":  # NEGOTIATOR_INFORM_STARTD: the match stands anyway
            if isinstance(msg, Undeliverable):
                log.warning("negotiator: MatchInfo to %s failed: %s", what, why(msg))
            return
        c = self.cycle
        if c is None or round_text != c.tag:
            return  # an answer to a cycle that is over
        if kind in ("s", "q") and c.state == "ads":
            self._ads_answer(ready, c, kind, what, msg, now)
        elif kind == "rr" and c.state == "requests" and what in c.waiting:
            self._requests_answer(ready, c, what, msg, now)
        elif kind == "m" and c.state == "matches" and what in c.sent and what not in c.answers:
            c.answers[what] = msg
            if len(c.answers) == len(c.sent):
                self._matches_answered(ready, c, now)

    # -- phase 1a: the ads ----------------------------------------------------------------
    def _start_cycle(self, ready: Ready, now: float) -> None:
        self.rounds += 1
        tag = f"{self.rounds}@{self._life}"
        c = self.cycle = _Cycle(self.rounds, tag, now, self._cpu())
        self._ask_snapshot(ready, c, self.core.slot_ads.since())
        for ad_type in _QUERIES:
            ready.send(self.collector_address, CollectorQuery(f"q:{c.tag}:{ad_type}", ad_type))

    def _ask_snapshot(self, ready: Ready, c: _Cycle, since: tuple[str, int] | None) -> None:
        msg = CollectorSnapshotRequest(
            f"s:{c.tag}:{'whole' if c.asked_whole else 'since'}",
            since=since,  # type: ignore[arg-type]
            columns=tuple(self.core.snapshot_columns()) if self.columns else (),
        )
        ready.send(self.collector_address, msg)

    def _ads_answer(
        self, ready: Ready, c: _Cycle, kind: str, what: str, msg: Any, now: float
    ) -> None:
        if isinstance(msg, Undeliverable):
            self._abort(c, now, why(msg))
            return
        if isinstance(msg, QueryReply) and msg.error:
            self._abort(c, now, f"INVALID_ARGUMENT: {msg.error}")
            return
        if kind == "s" and isinstance(msg, SnapshotReply):
            c.snapshot = msg
        elif kind == "q" and isinstance(msg, QueryReply) and what in _QUERIES:
            c.queries[what] = list(msg.ads)
        if c.snapshot is None or len(c.queries) < len(_QUERIES):
            return
        try:
            slots, private, sent, refused = self.take_snapshot(c.snapshot.snapshot, now)
        except StaleSnapshot as exc:
            if c.asked_whole:  # a collector that sends deltas unasked
                self._abort(c, now, f"WireError: snapshot reply does not fit: {exc}")
                return
            log.warning("%s: %s; asking for every ad", self.name, exc)
            c.asked_whole, c.snapshot = True, None
            self._ask_snapshot(ready, c, None)
            return
        for text in refused:
            log.warning("%s: %s; reading it from the ads", self.name, text)
            c.notes.append(LogLine(now, f"    Ignoring {text}"))
        c.ads = CycleAds(
            slots=slots,
            private_ads=private,
            submitters=c.queries["Submitter"],
            schedulers=c.queries["Scheduler"],
            slot_columns=sent,
        )
        self._ask_schedds(ready, c, now)

    def take_snapshot(
        self, snap: Any, now: float = 0.0
    ) -> tuple[list[ClassAd], list[ClassAd], dict[str, Any], list[str]]:
        """The whole snapshot from a reply (merged with the ads held), the columns it
        carries that fit, and why each that does not was left out (the cycle reads that
        attribute from the ads). Raises StaleSnapshot for a delta that does not fit."""
        held = self.core.slot_ads
        if not isinstance(snap, WireSnapshot):  # the collector's own records
            keep = snap.keep
            slots, private = held.merge(
                snap.epoch,
                snap.seq,
                snap.delta,
                SnapshotPart(
                    [r.ad if keep is None else r.projected(keep) for r in snap.slots],
                    snap.slot_order,
                    snap.slot_rows,
                ),
                SnapshotPart([r.ad for r in snap.private], snap.private_order, snap.private_rows),
                snap.same_order,
            )
            return slots, private, {}, []  # the cycle reads the ads themselves
        slots, private = held.merge(
            snap.epoch, snap.seq, snap.delta, snap.slots, snap.private, snap.same_order
        )
        errors: list[str] = []
        columns: dict[str, Any] = {}
        if not snap.columns:
            return slots, private, columns, errors
        names: Sequence[str] = held.slot_names()
        if len(names) != len(slots):  # a whole snapshot the collector did not name
            at, rng = self.core.ad_epoch + now, self.core.eval_rng
            names = [str(ad.eval("Name", now=at, rng=rng)) for ad in slots]
        asked = {n.lower() for n in self.core.snapshot_columns()}
        for name, read in snap.columns:
            key = name.lower()
            if key not in asked or key in columns:
                errors.append(
                    f"snapshot column {name!r} sent {'twice' if key in columns else 'unasked'}"
                )
                continue
            try:
                columns[key] = read(names)
            except ValueError as exc:
                errors.append(str(exc))
        return slots, private, columns, errors

    def _abort(self, c: _Cycle, now: float, text: str) -> None:
        """Phase 1 could not fetch the ads: the cycle ends with no statistics, and the
        timer stays on its period (start + INTERVAL), as HTCondor's early return."""
        self.core.cycle_aborted(c.start, now, text)
        log.warning("%s: cannot fetch ads from the collector: %s", self.name, text)
        self.cycle = None

    # -- phase 1b: the resource requests ---------------------------------------------------
    def _ask_schedds(self, ready: Ready, c: _Cycle, now: float) -> None:
        assert c.ads is not None
        core = self.core
        plan = c.plan = schedds_to_ask(c.ads.submitters, now=core.ad_epoch + now, rng=core.eval_rng)
        for _ in range(plan.ignored):
            c.notes.append(
                LogLine(now, "WARNING: ignoring submitter ad with no name and/or address")
            )
        c.state = "requests"
        for sname in plan.names():
            ready.send(
                from_sinful(plan.addresses[sname]),
                ScheddResourceRequestsRequest(f"rr:{c.tag}:{sname}", sname),
            )
        c.waiting = set(plan.names())
        if not c.waiting:
            self._requests_in(ready, c, now)

    def _requests_answer(self, ready: Ready, c: _Cycle, sname: str, msg: Any, now: float) -> None:
        if not isinstance(msg, NegotiatorResourceRequests | Undeliverable):
            return
        c.waiting.discard(sname)
        c.replies[sname] = msg if isinstance(msg, Undeliverable) else list(msg.ads)
        if not c.waiting:
            self._requests_in(ready, c, now)

    def _requests_in(self, ready: Ready, c: _Cycle, now: float) -> None:
        """Every schedd answered: their requests in name order (the order the cycle
        reads them), each failure counted and noted."""
        assert c.plan is not None
        core, requests = self.core, []
        for sname in c.plan.names():
            addr, reply = c.plan.addresses[sname], c.replies[sname]
            if isinstance(reply, Undeliverable):
                core.peer_failures += 1
                c.failed |= c.plan.submitters_at.get(sname, set())
                c.notes.append(LogLine(now, f"    Failed to connect to {sname} {sinful(addr)}"))
                log.warning("%s: schedd %s at %s failed: %s", self.name, sname, addr, why(reply))
                continue
            reqs, errors = requests_from_ads(
                reply, sname, from_sinful(addr), now=core.ad_epoch + now, rng=core.eval_rng
            )
            requests += reqs
            c.notes.extend(LogLine(now, f"    Ignoring request: {e}") for e in errors)
        assert c.ads is not None
        ads, notes, start, rng = c.ads, c.notes, c.start, core.eval_rng
        timer = self.timer or (lambda: now)
        accountant, config, columns = core.accountant, core.cycle_config, core.columns

        def compute() -> CycleResult:
            return negotiate(
                ads,
                requests,
                accountant,
                config,
                start,
                timer=timer,
                finish=False,
                phase1_notes=notes,
                columns=columns,
                ad_epoch=core.ad_epoch,
                rng=rng,
            )

        core.computing()
        c.state = "compute"
        if self.offload:
            self._compute = compute
            return
        try:
            result: CycleResult | BaseException = compute()
        except Exception as exc:
            result = exc
        ready.extend(self.computed(result, now))

    # -- the computation -----------------------------------------------------------------
    def pending_compute(self) -> Callable[[], CycleResult] | None:
        """With ``offload``: the cycle's computation, once, when it is due (a function of
        its inputs only: run it anywhere, then hand its result to :meth:`computed`)."""
        job, self._compute = self._compute, None
        return job

    def computed(self, result: CycleResult | BaseException, now: float) -> Ready:
        """The computation ended at ``now`` (an exception: it failed, and the cycle with
        it; the timer stays on its period)."""
        ready = Ready()
        c = self.cycle
        if c is None or c.state != "compute":
            return ready
        if isinstance(result, BaseException):
            self.core.computed(None)
            log.error("%s: negotiation cycle failed", self.name, exc_info=result)
            self.cycle = None
            return ready
        self.core.computed(result)
        c.result = result
        assert c.ads is not None
        if self.cycle_charge is None:
            self._send_matches(ready, c, now)
            return ready
        cpu = self._cpu() - c.cpu0
        c.state, c.send_at = (
            "charge",
            now + self.cycle_charge(len(c.ads.slots), len(result.matches), cpu),
        )
        return ready

    # -- phase 4: the matches ----------------------------------------------------------
    def _send_matches(self, ready: Ready, c: _Cycle, now: float) -> None:
        result = c.result
        assert result is not None
        by_schedd = result.matches_by_schedd()
        rejected = result.rejections_by_schedd()
        address = {m.schedd: m.schedd_address for m in result.matches}
        address.update({r.schedd: r.schedd_address for r in result.rejections})
        cycle_no = self.core.cycles + 1
        if self.inform_startd:
            by_startd: dict[str, list[str]] = {}
            for m in result.matches:
                by_startd.setdefault(m.startd_address, []).append(m.claim_id)
            for addr, ids in by_startd.items():
                ready.send(addr, StartdMatchInfo(f"mi:{c.tag}:{addr}", ids))
        c.state = "matches"
        for sname in sorted(address):
            matches, rejections = by_schedd.get(sname, []), rejected.get(sname, [])
            c.sent[sname] = (matches, rejections, address[sname])
            ready.send(
                from_sinful(address[sname]),
                ScheddMatches(
                    f"m:{c.tag}:{sname}",
                    sname,
                    cycle_no,
                    [
                        MatchNotice(
                            m.submitter,
                            m.autocluster_id,
                            m.slot_name,
                            m.claim_id,
                            m.startd_address,
                            m.slot_ad,
                        )
                        for m in matches
                    ],
                    [_rejection(r) for r in rejections],
                ),
            )
        if not c.sent:
            self._matches_answered(ready, c, now)

    def _matches_answered(self, ready: Ready, c: _Cycle, now: float) -> None:
        """Every schedd answered (an Undeliverable's message holds the matches and the
        rejections it did not take): the events of what each took, in name order, the
        failures noted, and the cycle finished."""
        core, result = self.core, c.result
        assert result is not None
        failures: list[tuple[str, str, list[CycleMatch], Undeliverable]] = []
        for sname in sorted(c.sent):
            matches, rejections, addr = c.sent[sname]
            answer = c.answers.get(sname)
            if isinstance(answer, Undeliverable):
                lost_ids = {n.claim_id for n in answer.msg.matches}
                took = [m for m in matches if m.claim_id not in lost_ids]
                lost = [m for m in matches if m.claim_id in lost_ids]
                core.matches_sent(took, [] if answer.msg.rejections else rejections)
                failures.append((sname, addr, lost, answer))
            else:
                core.matches_sent(matches, rejections)
        for sname, addr, lost, answer in failures:
            core.matches_failed(result, sname, addr, lost, now)
            log.warning("%s: sending matches to %s failed: %s", self.name, sname, why(answer))
        self._events(ready)
        assert c.ads is not None
        core.finish_cycle(result, c.start, now, self._cpu() - c.cpu0, c.failed)
        self._events(ready)
        c.state = "advertise"
        self._advertise(ready, f"ad:{c.tag}", now)

    # -- the Negotiator and Accounting ads --------------------------------------------------
    def negotiator_ad(self, now: float) -> ClassAd:
        duty = self.duty_cycle() if self.duty_cycle is not None else 0.0
        return self.core.negotiator_ad(self.address, now, machine=self.machine, duty_cycle=duty)

    def _advertise(self, ready: Ready, corr: str, now: float) -> None:
        ads = [("Negotiator", self.negotiator_ad(now))]
        ads += [("Accounting", ad) for ad in self.core.accounting_ads()]
        updates = [CollectorUpdate(i, t, ad) for i, (t, ad) in enumerate(ads)]
        ready.send(self.collector_address, CollectorAdvertise(corr, updates))

    def _advertised(self, ready: Ready, msg: Any, round_text: str, now: float) -> None:
        if isinstance(msg, Undeliverable):
            self.core.peer_failures += 1
            log.warning("%s: advertising to the collector failed: %s", self.name, why(msg))
        elif isinstance(msg, AdvertiseAck):
            for err in msg.errors:
                log.warning("%s: collector refused the Negotiator ad: %s", self.name, err)
        if round_text.startswith("p"):  # the periodic ad: the next an interval on
            if round_text == f"p{self._ads_sent}@{self._life}" and self._ad_due is not None:
                self._ad_flying = False
                self._ad_due = max(self._ad_due + self.core.update_interval, now)
            return
        c = self.cycle
        if c is not None and c.state == "advertise" and round_text == c.tag:
            self.cycle = None  # the cycle ended once the collector answered its ads
            self.core.cadence.finished(c.start, max(c.start, now))

    # -- helpers -------------------------------------------------------------------------
    def _cpu(self) -> float:
        return self.cpu_timer() if self.cpu_timer is not None else 0.0

    def _events(self, ready: Ready) -> None:
        ready.events += [(self.name, kind, fields) for kind, fields in self.core.drain_events()]


def _rejection(r: CycleRejection) -> RejectionNotice:
    cluster, _, proc = r.job_id.partition(".")
    return RejectionNotice(int(cluster), int(proc), r.reason, r.time)
