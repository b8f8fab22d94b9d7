"""One negotiation cycle as a pure function: ``negotiate(snapshot, requests, ...)``.

Structured in HTCondor's phases (matchmaker.cpp ``negotiationTime``/``negotiateWithGroup``/
``negotiate``/``matchmakingAlgorithm``):

1. *Obtain ads*: the caller fetched them (collector snapshot, schedds' resource requests)
   and hands them in; phase 1 ends when ``negotiate`` is called.
2. *Accounting and trimming*: the accountant ages priorities and recounts usage from the
   Claimed slot ads; slots that are neither Unclaimed nor, under
   NEGOTIATOR_CONSIDER_PREEMPTION, Claimed (see :mod:`.preemption`) are trimmed, as are
   slots the private ads give no claim id. Claimed candidates get RemoteUserPrio.
   With GROUP_NAMES, the group tree gets its quotas (:mod:`.groups`).
3. and 4. happen in each *pie* (:mod:`.pie`): without groups one pie for every submitter;
   with groups one per group and allocation round, in GROUP_SORT_EXPR order, each with
   the group's whole-number limit. A pie sorts its submitters (EUP, then starvation),
   then spins: each submitter (one per submitter and schedd, ``_negotiate_submitter``,
   HTCondor's ``negotiate()``) matches up to its limit; a candidate whose cost would pass
   the limit is skipped unless it is the submitter's first match of the spin
   ("submitter limit exceeded"); past the limit on the first spin only startd-rank preemption may match.

Matching one request (an autocluster ad with ``ResourceRequestCount`` idle jobs) uses the
numpy kernel over ONE :class:`SlotTable` per cycle: both Requirements and the job's Rank
by ``match_vector``; NEGOTIATOR_PRE_JOB_RANK / POST_JOB_RANK vectorised with the slot as
MY. Candidates are ordered, larger first, by (pre-job rank, job Rank, post-job rank,
preemption state, PREEMPTION_RANK), ties by snapshot order. Rank values that are not numbers are -DBL_MAX, and numbers are
rounded to single precision, as HTCondor's ``EvalNegotiatorMatchRank`` does.

Slots: a static slot leaves the candidates once matched (its ``Capability``); so does a
partitionable slot without a consumption policy (matched whole, once a cycle, if the job
fits what it has left, :mod:`.fit`; its cost its whole SlotWeight: the schedd carves it
and may use the leftovers itself). A
partitionable slot that advertises a consumption policy (HTCondor's
``cp_supports_policy``: MachineResources, and Consumption<Res> for each of its resources
but Swap) stays, its Cpus/Memory/Disk and custom resources (GPUs, ...) reduced by the job's Consumption<Res>
(evaluated with the job as TARGET); each match takes one unused claim id from its
``ClaimIdList`` and costs W(S) - W(S'), its SlotWeight before minus after the deduction.
It is a candidate only while every consumption is >= 0 and <= what is left, and at least
one is > 0; while matching it, the job's RequestCpus/Memory/Disk read as the consumption
values (``cp_override_requested``). A SlotWeight that is not a number, or is negative,
weighs 1 (``Accountant::GetSlotWeight``).

Concurrency limits (:mod:`.limits`): the limits in use are counted from every slot ad's
ConcurrencyLimits; a job whose ConcurrencyLimits string would take a limit over its
maximum is rejected ("concurrency limit <name> reached") before any slot is looked at; a
ConcurrencyLimits expression is evaluated against each candidate slot, skipping those
it would take over. Each match adds its job's limits.

A request that finds no slot is rejected, and its autocluster with it for the rest of
that submitter's negotiation; the rejection (HTCondor's reason) goes to its schedd.

Where things are: the cycle's inputs in :mod:`.cycleinput`, its outputs in
:mod:`.cycleoutput`, its slots in :mod:`.slottable` (claim ids: :mod:`.claimids`;
consumption policies: :mod:`.consumption`; usage: :mod:`.slotusage`), the candidate
search in :mod:`.search`, the matching of one request in :mod:`.matching`, what it
remembers across requests in :class:`.memo.CycleMemo`; this module holds the phases.
"""

from __future__ import annotations

import math
import random
import sys
from collections.abc import Callable, Iterable, Sequence

import numpy as np

from ..claimid import sinful
from ..classad import UNDEFINED, ClassAd, evaluate
from ..classad.kernel import (
    KernelStats,
)
from ..config import ConfigDict
from .accountant import Accountant
from .groups import ROOT, Group, GroupTree
from .log import CYCLE_STARTED, LogLine
from .pie import DONE, INT_MAX, RESUME, SpinStats, SubmitterLimits, negotiate_with_group
from .preemption import (
    Diagnosis,
)
from .stats import CycleStats

__all__ = ["negotiate"]

from .cycleinput import RESOURCES, CycleAds, CycleCarry, CycleConfig, ResourceRequest
from .cycleoutput import CycleResult
from .matching import RequestMatching, Submitter, SubmitterUsage
from .memo import CycleMemo
from .search import CandidateSearch
from .slottable import CycleSlots, scalar_number

# ------------------------------------------------------------------------- the cycle


class _Cycle(CandidateSearch, RequestMatching):
    """One cycle's run: its phases, its pies and submitters; the candidate search
    (:mod:`.search`) and the matching of a request (:mod:`.matching`) are mixed in. What
    it remembers across requests is one CycleMemo (``caches``), what it gives one
    CycleResult (``out``)."""

    def __init__(
        self,
        snapshot: CycleAds,
        requests: Iterable[ResourceRequest],
        accountant: Accountant,
        cfg: CycleConfig,
        now: float,
        timer: Callable[[], float],
        cpu_timer: Callable[[], float] | None,
        notes: Sequence[LogLine] = (),
        carry: CycleCarry | None = None,
        ad_epoch: int = 0,
        rng: random.Random | None = None,
    ) -> None:
        self.snapshot = snapshot
        self.carry = carry
        self.notes = list(notes)
        self.requests = list(requests)
        self.acct = accountant.copy()
        if self.acct.groups != cfg.groups:
            self.acct.set_groups(cfg.groups)
        self.cfg = cfg
        self.now = now
        # time() and CurrentTime in the slots' and jobs' expressions: a date, as the ads'
        # own dates are (the date of pool time 0 plus pool seconds)
        self.expr_now = ad_epoch + now
        self.rng = rng  # what random() in them draws from: the negotiator's own
        self.timer = timer
        self.cpu = cpu_timer
        # what it gives: matches, rejections, log lines, stats, the group tree
        self.out = CycleResult([], self.acct, CycleStats(start_time=now), [])
        self.kstats = KernelStats()
        self.logged_matches = 0
        self.diag = Diagnosis()  # why the last request's candidates fell out
        self.caches = CycleMemo()  # what it remembers across requests: no answer changes

    def say(self, text: str, t: float | None = None) -> None:
        self.out.log.append(LogLine(self.timer() if t is None else t, text))

    def cpu_now(self) -> float:
        return self.cpu() if self.cpu is not None else 0.0

    def run(self) -> CycleResult:
        s, snap = self.out.stats, self.snapshot
        cpu0 = self.cpu_now()
        # Phase 1: the caller obtained the ads between `now` and this call.
        self.say(CYCLE_STARTED, self.now)
        self.say("Phase 1:  Obtaining ads from collector ...", self.now)
        t1 = self.timer()
        public = len(snap.slots) + len(snap.submitters) + len(snap.schedulers)
        self.say(f"Got ads: {public} public and {len(snap.private_ads)} private", t1)
        self.say(
            f"Public ads include {len(snap.submitters)} submitter, {len(snap.slots)} startd", t1
        )
        self.out.log.extend(self.notes)
        s.duration_phase1 = t1 - self.now
        s.total_slots = len(snap.slots)
        s.snapshot_columns = len(snap.slot_columns)

        # Phase 2: accounting and trimming.
        self.say("Phase 2:  Performing accounting ...", t1)
        slots = CycleSlots(
            snap,
            self.cfg,
            self.kstats,
            self.expr_now,
            [r.ad for r in self.requests],
            self.carry,
            self.rng,
        )
        s.slot_classes = len(slots.view.reps)
        self.acct.update_priorities(self.now)
        usage, counts = slots.usage()
        self.acct.check_matches(usage, self.now, counts)
        s.charged = dict(sorted(counts.items()))  # for the checker: slots held per submitter
        slots.add_remote_prios(self.acct)
        s.claimed_slots_skipped = int((slots.claimed & ~slots.alive).sum())
        s.slots_without_claim_id = slots.no_claim_id
        s.trimmed_slots = s.candidate_slots = int(slots.alive.sum())
        submitters = self._submitters()
        pool_size = float(slots.weight.sum()) if self.cfg.use_slot_weights else float(slots.n)
        min_weight = float(slots.weight.min()) if slots.n else sys.float_info.max
        tree = self._group_tree(submitters, slots) if self.cfg.groups.enabled else None
        t2 = self.timer()
        s.duration_phase2 = t2 - t1
        self._t_phase3 = 0.0
        self._phase4_start = t2

        # Phases 3 and 4 happen inside each pie (negotiateWithGroup): the sort on its
        # first spin, then "Phase 4.<spin>".
        self._schedd_time: dict[str, float] = {}
        spin_stats = SpinStats()
        if tree is None:
            self._pie(submitters, slots, pool_size, min_weight, spin_stats, None, INT_MAX)
        else:
            by_group: dict[str, list[Submitter]] = {}
            for sub in submitters:
                by_group.setdefault(tree.assigned(sub.submitter).name, []).append(sub)
            if tree.root.autoregroup:
                for g in tree.groups[1:]:
                    if g.autoregroup:
                        by_group.setdefault(ROOT, []).extend(by_group.get(g.name, []))

            def negotiate_group(g: Group, limit: int) -> None:
                name = None if (tree.root.autoregroup and g is tree.root) else g.name
                self._pie(
                    by_group.get(g.name, []), slots, pool_size, min_weight, spin_stats, name, limit
                )

            s.slot_share_iterations = tree.negotiate_all(
                weighted=self.cfg.use_slot_weights,
                usage=self.acct.resources_used,
                negotiate=negotiate_group,
                log=self.say,
                now=self.now,
                expr_now=self.expr_now,
                rng=self.rng,
                consider_preemption=self.cfg.consider_preemption,
            )
            self.acct.group_rr_time = tree.rr_times()
            self.out.groups = tree
        s.pies, s.pie_spins = spin_stats.pies, spin_stats.pie_spins
        if s.pies == 0:  # HTCondor logs phase 3 even when no group negotiated
            self.say("Phase 3:  Sorting submitter ads by priority ...", t2)
        t4 = self.timer()
        s.duration_phase3 = self._t_phase3
        s.duration_phase4 = t4 - t2 - self._t_phase3
        s.end_time, s.duration = t4, t4 - self.now
        s.matches = len(self.out.matches)
        s.kernel_fallbacks = self.kstats.fallbacks
        s.cpu_time = self.cpu_now() - cpu0
        self.out.matching_end = t4
        return self.out

    def _submitters(self) -> list[Submitter]:
        by_key: dict[tuple[str, str], Submitter] = {}
        for r in self.requests:
            key = (r.submitter, r.schedd)
            sub = by_key.get(key)
            if sub is None:
                sub = by_key[key] = Submitter(r.submitter, r.schedd, r.schedd_address)
            if r.count > 0:
                sub.requests.append(r)
                sub.left.append(r.count)
        return [sub for sub in by_key.values() if sub.requests]

    def _group_tree(self, submitters: list[Submitter], slots: CycleSlots) -> GroupTree:
        """hgq_prepare_for_matchmaking: quotas from the pool, demand from the requests."""
        tree = GroupTree(self.cfg.groups, rr_times=self.acct.group_rr_time)
        if self.cfg.use_slot_weights:
            total = float(slots.weight.sum())
            self.say(
                f"group quotas: assigning group quotas from {total:g} available weighted slots"
            )
        else:
            total = float(np.where(slots.is_p, np.floor(slots.avail[0]), 1.0).sum())
            self.say(f"group quotas: assigning group quotas from {total:g} available slots")
        # Demand: WeightedRunningJobs + WeightedIdleJobs of every Submitter ad, as HTCondor
        # reads them (NEGOTIATOR_USE_WEIGHTED_DEMAND); without Submitter ads (a bare
        # snapshot), the requests' idle jobs x their weight plus the accountant's usage.
        demand: dict[str, float] = {}
        at, rng = self.expr_now, self.rng
        for ad in self.snapshot.submitters:
            name = ad.eval("Name", now=at, rng=rng)
            if not isinstance(name, str) or "@" not in name:
                continue
            got = 0.0
            for weighted, plain in (
                ("WeightedIdleJobs", "IdleJobs"),
                ("WeightedRunningJobs", "RunningJobs"),
            ):
                v = scalar_number(
                    ad.eval(weighted, now=at, rng=rng) if self.cfg.use_slot_weights else UNDEFINED
                )
                if v is None:
                    v = scalar_number(ad.eval(plain, now=at, rng=rng))
                got += max(0.0, v or 0.0)
            demand[name] = demand.get(name, 0.0) + got
        if not self.snapshot.submitters:
            for sub in submitters:
                idle = sum(self._request_weight(r) * r.count for r in sub.requests)
                demand[sub.submitter] = demand.get(sub.submitter, 0.0) + idle
            for name in list(demand):
                demand[name] += self.acct.resources_used(name)
        self.say(f"group quotas: assigning {len(demand)} submitters to accounting groups")
        tree.prepare(total, self.acct.resources_used, demand)
        self.say("group quota: Quotas have been assigned to the following groups")
        for line in tree.display():
            self.say(line)
        return tree

    def _request_weight(self, req: ResourceRequest) -> float:
        """A job's weight for group demand (WeightedIdleJobs): SLOT_WEIGHT with the job's
        requests as the slot's resources; 1 without slot weights."""
        if not self.cfg.use_slot_weights:
            return 1.0
        probe = ClassAd()
        for res in RESOURCES:
            v = req.ad.eval(f"Request{res}", now=self.expr_now, rng=self.rng)
            probe[res] = (
                v
                if isinstance(v, (int, float)) and not isinstance(v, bool)
                else (1 if res == "Cpus" else 0)
            )
        w = scalar_number(
            evaluate(self.cfg.slot_weight, probe, None, now=self.expr_now, rng=self.rng)
        )
        return w if w is not None and w > 0 else 1.0

    def _pie(
        self,
        submitters: list[Submitter],
        slots: CycleSlots,
        pool_size: float,
        min_weight: float,
        spin_stats: SpinStats,
        group: str | None,
        quota: float,
    ) -> None:
        s = self.out.stats

        def on_sorted(_items: list[Submitter]) -> None:
            t = self.timer()
            self.say("Phase 3:  Sorting submitter ads by priority ...", t)
            self._t_phase3 += self.timer() - t

        def on_spin(spin: int) -> None:
            self.say(f"Phase 4.{spin}:  Negotiating with schedds ...")

        max_cycle, max_sub, max_schedd, max_spin = self.cfg.max_time

        def negotiate(sub: Submitter, lim: SubmitterLimits) -> tuple[str, float]:
            begin = self.timer()
            schedd_secs = self._schedd_time.get(sub.schedd_address, 0.0)
            if sub.seconds < max_sub and schedd_secs < max_schedd:
                self.say(
                    f"  Negotiating with {sub.submitter} at {sinful(sub.schedd_address)}", begin
                )
                self.say(f"{int(sub.seconds)} seconds so far for this submitter", begin)
                self.say(f"{int(schedd_secs)} seconds so far for this schedd", begin)
            left_cycle = max_cycle - (begin - self.now)
            if max_sub - sub.seconds <= 0:
                self.say(f"  Negotiation with {sub.submitter} skipped because of time limits:")
                self.say(
                    f"  {int(sub.seconds)} seconds spent on this user, MAX_TIME_PER_USER is {max_sub} secs\n "
                )
                s.submitters_out_of_time.add(sub.submitter)
                return DONE, 0.0
            if max_schedd - schedd_secs <= 0:
                self.say(f"  Negotiation with {sub.submitter} skipped because of time limits:")
                self.say(
                    f"  {int(schedd_secs)} seconds spent on this schedd ({sub.schedd}), "
                    f"MAX_TIME_PER_SCHEDD is {max_schedd} secs\n "
                )
                s.schedds_out_of_time.add(sub.schedd)
                return DONE, 0.0
            if left_cycle <= 0:
                self.say(
                    f"  Negotiation with {sub.submitter} skipped because MAX_TIME_PER_CYCLE of {max_cycle} "
                    "secs exceeded"
                )
                return DONE, 0.0
            if lim.pie_left_small:
                self.say(f"  Negotiation with {sub.submitter} skipped as pieLeft < minSlotWeight")
                return RESUME, 0.0
            if sub.submitter not in s.active_submitters:
                s.num_idle_jobs += sum(sub.left)
            s.active_submitters.add(sub.submitter)
            s.active_schedds.add(sub.schedd_address)
            deadline = begin + min(
                max_spin, left_cycle, max_sub - sub.seconds, max_schedd - schedd_secs
            )
            out = self._negotiate_submitter(sub, slots, lim, deadline)
            took = self.timer() - begin
            sub.seconds += took
            self._schedd_time[sub.schedd_address] = schedd_secs + took
            return out

        negotiate_with_group(
            submitters,
            name=lambda sub: sub.submitter,
            idle=lambda sub: sum(sub.left),
            acct=self.acct,
            negotiate=negotiate,
            slots_left=lambda: slots.n_alive > 0,
            untrimmed_weight=pool_size,
            min_slot_weight=min_weight,
            group=group,
            group_quota=quota,
            consider_preemption=self.cfg.consider_preemption,
            log=self.say,
            on_spin=on_spin,
            on_sorted=on_sorted,
            stats=spin_stats,
            share_limited=s.submitters_share_limit,
        )

    # -- phase 4: one submitter (matchmaker.cpp negotiate()) -----------------------
    def _negotiate_submitter(
        self, sub: Submitter, slots: CycleSlots, lim: SubmitterLimits, deadline: float = math.inf
    ) -> tuple[str, float]:
        st = SubmitterUsage(lim, deadline=deadline, begin=self.timer())
        rejected: set[int] = set()
        unlogged_before = self._unlogged
        result = DONE
        for i, req in enumerate(sub.requests):
            if sub.left[i] <= 0 or req.autocluster_id in rejected:
                continue
            stop, ok = self._match_request(req, sub, i, slots, st)
            if stop:
                result = RESUME
                break
            if not ok:
                rejected.add(req.autocluster_id)
        else:
            self.say("    Got NO_MORE_JOBS;  schedd has no more requests")
            if st.used >= st.lim.limit or st.limited:
                result = RESUME
        skipped = self._unlogged - unlogged_before
        if skipped:
            self.say(
                f"    ... {skipped} more match{'es' if skipped != 1 else ''} not logged "
                f"(NegotiatorLog shows at most {self.cfg.log_match_limit} matches a cycle)"
            )
        return result, st.used

    @property
    def _unlogged(self) -> int:
        return max(0, len(self.out.matches) - self.cfg.log_match_limit)


def negotiate(
    snapshot: CycleAds,
    requests: Iterable[ResourceRequest],
    accountant: Accountant,
    config: ConfigDict | CycleConfig,
    now: float,
    *,
    timer: Callable[[], float] | None = None,
    cpu_timer: Callable[[], float] | None = None,
    finish: bool = True,
    phase1_notes: Sequence[LogLine] = (),
    columns: CycleCarry | None = None,
    ad_epoch: int = 0,
    rng: random.Random | None = None,
) -> CycleResult:
    """Run one negotiation cycle that started (phase 1) at pool time ``now``.

    ``ad_epoch``: the date (Unix time) of pool time 0; ``time()`` in the ads' expressions
    is ``ad_epoch + now``, as the ads' own dates count from it. ``rng``: what random() in
    them draws from (the negotiator's own, seeded; without one, random() raises
    MissingEvalInput).

    ``timer`` returns the current pool time and times the phases and log lines (default:
    ``now`` throughout, so a test's log and stats are exact); ``cpu_timer`` returns CPU
    seconds (default: none measured). The input accountant is not changed: the result
    holds the updated copy. With ``finish=False`` the caller sends the matches first and
    then calls ``result.finish(end)`` so the sending counts in phase 4. ``phase1_notes``
    are the caller's own phase-1 lines (a schedd that failed), logged after "Got ads".
    ``columns``: the columns of the caller's last cycle, reused where the ads' values
    are the same objects (a negotiator passes its own from cycle to cycle).
    """
    cfg = config if isinstance(config, CycleConfig) else CycleConfig.from_config(config)
    clock = timer if timer is not None else (lambda: now)
    result = _Cycle(
        snapshot,
        requests,
        accountant,
        cfg,
        now,
        clock,
        cpu_timer,
        phase1_notes,
        columns,
        ad_epoch,
        rng,
    ).run()
    if finish:
        result.finish(clock())
    return result
