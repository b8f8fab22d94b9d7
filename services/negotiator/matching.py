"""Matching one request: a submitter's negotiation and what it has used against its limit,
walking its ordered candidates (static slots, p-slots whole or by consumption policy,
preemption), recording each match or the rejection, and re-offering a p-slot that still
fits the next job (HTCondor's returnPslotToMatchList).

A mixin of the cycle (:class:`.cycle._Cycle`); its caches are the cycle's CycleMemo.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ..claimid import sinful
from ..classad import ClassAd, evaluate
from ..classad.budget import BudgetExceeded
from ..classad.operators import truth
from ..classad.tree import Expr, Literal
from .candidates import CandidateStream
from .claimids import string_attr
from .consumption import PslotConsumption, override_requests, sufficient_one, with_zero_requests
from .cycleinput import NO_RANK, ResourceRequest
from .cycleoutput import CycleMatch, CycleRejection
from .pie import SubmitterLimits, permits
from .preemption import NO_PREEMPTION, PRIO_PREEMPTION, RANK_PREEMPTION, Diagnosis, preempting_line
from .slotclasses import WatchedAd, WideTaint, alike_answer
from .slottable import CycleSlots, scalar_number

if TYPE_CHECKING:
    from .cycle import _Cycle

# a key of fewer slots than this is walked a slot at a time when the submitter's limit
# turns its slots down (its check costs more than the walk)
PASS_OVER_ROWS = 64


@dataclass
class Submitter:
    """One submitter at one schedd (HTCondor: one Submitter ad)."""

    submitter: str
    schedd: str
    schedd_address: str
    requests: list[ResourceRequest] = field(default_factory=list)
    left: list[int] = field(default_factory=list)  # idle jobs not yet matched, per request
    seconds: float = 0.0  # time spent on it this cycle (TotalTimeInCycle)


@dataclass
class SubmitterUsage:
    """What one submitter has taken in a spin (negotiate()'s limitUsed and limitUsedUnclaimed)."""

    lim: SubmitterLimits
    used: float = 0.0
    used_unclaimed: float = 0.0
    limited: bool = False  # a job was refused for the submitter limit
    deadline: float = math.inf  # pool time when its negotiation must stop (the MAX_TIME_* knobs)
    begin: float = 0.0


def heap_key(pre: float, rank: float, post: float, state: float, prank: float, row: int) -> tuple:
    """A candidate's place in the order (smallest first): larger keys are better."""
    return (-pre, -rank, -post, -state, -prank, row)


class RequestMatching:
    """Matching a request with its candidates (mixed into the cycle)."""

    def _match_request(
        self: _Cycle,
        req: ResourceRequest,
        sub: Submitter,
        i: int,
        slots: CycleSlots,
        st: SubmitterUsage,
    ) -> tuple[bool, bool]:
        """Offer the request's idle jobs one by one. Returns (stop the submitter, matched):
        matched is False when a job found no slot (its autocluster is then rejected), or
        when its expressions cost more than their budget (rejected for this cycle, by name)."""
        # ConcurrencyLimits: a string is checked once per job, an expression per slot.
        cl = req.ad.lookup("ConcurrencyLimits")
        fixed = cl.value.lower() if isinstance(cl, Literal) and isinstance(cl.value, str) else None
        per_slot = cl is not None and not isinstance(cl, Literal)
        over_limits: set[str] = set()
        try:
            if st.used >= st.lim.limit and not (st.lim.ignore_limit and slots.any_claimed):
                # At its limit the submitter's negotiation stops before a match is looked for
                # (HTCondor checks the limit before matchmaking); on the first spin only
                # a startd that prefers the job may take it, which needs a Claimed slot.
                self.diag = Diagnosis()
                stream, cons_of = (
                    CandidateStream.empty(slots.view, slots.alive),
                    PslotConsumption(slots.view),
                )
            else:
                stream, cons_of = self.candidates(req, slots)
        except BudgetExceeded as exc:
            self._reject(
                req,
                f"its expressions are too costly to evaluate ({exc.what}, "
                f"over {exc.limit:,} steps)",
            )
            return False, False
        heap: list[tuple] = []  # re-offered p-slots, by heap_key
        self.caches.reoffered = None  # this request's re-offer answers, found at its first re-offer
        charge: Callable[[float, float], None] | None = None  # add_match, made at the first
        s = self.out.stats
        limited = math.isfinite(st.lim.limit_unclaimed) or math.isfinite(st.lim.limit)
        while sub.left[i] > 0:
            now = self.timer()
            if now >= st.deadline:
                per_sub, schedd, cyc, spin = (
                    self.cfg.max_time[1],
                    self.cfg.max_time[2],
                    self.cfg.max_time[0],
                    self.cfg.max_time[3],
                )
                self.say(
                    f"    Reached deadline for {sub.submitter} ({sinful(sub.schedd_address)}) after "
                    f"{int(now - st.begin)} sec... stopping\n       MAX_TIME_PER_SUBMITTER = {per_sub} sec, "
                    f"MAX_TIME_PER_SCHEDD = {schedd} sec, MAX_TIME_PER_CYCLE = {cyc} sec, "
                    f"MAX_TIME_PER_PIESPIN = {spin} sec"
                )
                return True, True
            only_startd_rank = False
            if st.used >= st.lim.limit:
                if not st.lim.ignore_limit:
                    self.say(f"    Reached submitter resource limit: {st.used:f} ... stopping")
                    return True, True
                # Over the limit on the first spin: only a startd that prefers the job
                # (rank preemption) may take it, and unclaimed slots never do.
                only_startd_rank = True
            log_this = len(self.out.matches) < self.cfg.log_match_limit
            plain = not (log_this or only_startd_rank or fixed or per_slot)
            if plain and not heap and self._match_run(req, sub, i, slots, st, stream, limited):
                continue
            if (
                plain
                and heap
                and charge is not None
                and self._pslot_run(req, sub, i, slots, st, stream, cons_of, heap, limited, charge)
            ):
                continue
            k = req.count - sub.left[i]
            s.num_jobs_considered += 1
            if log_this:
                self.say(
                    f"    Request {req.cluster_id:05d}.{req.proc_id:05d}: autocluster "
                    f"{req.autocluster_id} (request count {k + 1} of {req.count})"
                )
            self.diag.submitter_limit = 0  # HTCondor's rejForSubmitterLimit, per job
            job_limits = fixed or ""
            if fixed and (name := slots.limits.over(fixed)) is not None:
                self.diag.concurrency_limit += 1
                self._reject(req, f"concurrency limit {name} reached")
                return False, False
            while True:
                row = -1
                use_heap = False
                head = stream.peek()
                if only_startd_rank:
                    # Past the limit on spin 1: only a startd that prefers the job (rank
                    # preemption); unclaimed slots and re-offered p-slots are passed over.
                    head = stream.skip_to_state(RANK_PREEMPTION)
                    if head is not None:
                        row = head
                elif head is not None:
                    use_heap = bool(heap) and heap[0] < heap_key(*stream.key, head)
                    row = head if not use_heap else heap[0][-1]
                elif heap:
                    use_heap, row = True, heap[0][-1]
                if row < 0:
                    if over_limits:  # HTCondor's message names them; the reason is generic
                        self._reject(
                            req, f"concurrency limit {', '.join(sorted(over_limits))} reached"
                        )
                    else:
                        self._reject(req)
                    if self.diag.submitter_limit:
                        s.submitters_share_limit.add(sub.submitter)
                        st.limited = True
                        if not self.cfg.consider_preemption and not self.cfg.use_slot_weights:
                            self.say("    Hit submitter limit: done negotiating")
                            return True, False
                    return False, False
                if use_heap:
                    heapq.heappop(heap)
                    state = NO_PREEMPTION
                else:
                    state = stream.key[3]
                    stream.pop()
                if not slots.alive[row]:
                    continue
                claims = slots.claims[row]
                if not claims:  # cannot happen for alive rows; kept as HTCondor's guard
                    self.say(f"      {slots.names[row]} has no claim id")
                    slots.kill(row)
                    continue
                if per_slot:
                    value = req.ad.eval(
                        "ConcurrencyLimits", slots.ad(row), now=self.expr_now, rng=self.rng
                    )
                    job_limits = value.lower() if isinstance(value, str) else ""
                    if job_limits and (name := slots.limits.over(job_limits)) is not None:
                        self.diag.concurrency_limit += 1
                        over_limits.add(name)
                        continue
                # SubmitterLimitPermits: priority preemption against the limit, an
                # unclaimed slot against the unclaimed limit; rank preemption always.
                if limited and state != RANK_PREEMPTION:
                    cost = slots.match_cost(row, cons_of)
                    used, allowed = (
                        (st.used, st.lim.limit)
                        if state == PRIO_PREEMPTION
                        else (st.used_unclaimed, st.lim.limit_unclaimed)
                    )
                    if not permits(cost, used, allowed):
                        self.diag.submitter_limit += 1
                        if not use_heap and not per_slot:
                            self._pass_over(stream, slots, cost)
                        continue
                break
            if state != NO_PREEMPTION:
                self._preempting(req, slots, row)
            cost = self._make_match(req, slots, row, cons_of, heap, log_this)
            if charge is None:
                charge = self.acct.charger(req.submitter)
            charge(cost, self.now)
            if job_limits:
                slots.limits.add(job_limits)
            st.used += cost
            if state == NO_PREEMPTION:
                st.used_unclaimed += cost
            sub.left[i] -= 1
        return False, True

    def _match_run(
        self: _Cycle,
        req: ResourceRequest,
        sub: Submitter,
        i: int,
        slots: CycleSlots,
        st: SubmitterUsage,
        stream: CandidateStream,
        limited: bool,
    ) -> int:
        """Match the request's next jobs to the unclaimed static slots at the head of its
        candidates, all of one key, in one step: the matches, in the order, that offering
        the jobs one by one makes. Stops before a slot that needs the one-by-one path (a
        p-slot, no claim id, the submitter limit, the deadline). Returns how many matched."""
        head = stream.peek()
        if head is None or stream.key[3] != NO_PREEMPTION:  # type: ignore[index]
            return 0
        p_slot, claims, weights = slots.p_slot, slots.claims, slots.weights
        lim = st.lim
        want = sub.left[i]
        if limited and weights[head] > 0:  # about what the limits leave, not every job
            room = min(lim.limit - st.used, lim.limit_unclaimed - st.used_unclaimed)
            want = min(want, max(1, int(room / weights[head]) + 1))
        rows = stream.take(want)
        costs: list[float] = []
        for row in rows:
            cost = weights[row]
            if (
                p_slot[row]
                or not claims[row]
                or st.used >= lim.limit
                or (limited and not permits(cost, st.used_unclaimed, lim.limit_unclaimed))
                or (costs and self.timer() >= st.deadline)
            ):
                break
            self._match_static(req, slots, row, cost)
            st.used += cost
            st.used_unclaimed += cost
            costs.append(cost)
        taken = len(costs)
        slots.kill_rows(rows[:taken])
        stream.unread(rows[taken:])
        if taken:
            self.acct.add_matches(req.submitter, costs, self.now)
            sub.left[i] -= taken
            self.out.stats.num_jobs_considered += taken
            self.out.stats.jobs_matched_in_runs += taken
            self.diag.submitter_limit = 0  # as each job of the run set it
        return taken

    def _pslot_run(
        self: _Cycle,
        req: ResourceRequest,
        sub: Submitter,
        i: int,
        slots: CycleSlots,
        st: SubmitterUsage,
        stream: CandidateStream,
        cons_of: PslotConsumption,
        heap: list[tuple],
        limited: bool,
        charge: Callable[[float, float], None],
    ) -> int:
        """Match the request's next jobs to the p-slot re-offered first among its
        candidates, one after another while it stays first: the matches that offering
        the jobs one by one makes. Stops where that path would do something else
        (another candidate first, a slot out of claims, the submitter limit, the
        deadline), which it then does. Returns how many matched."""
        taken = 0
        lim, alive, claims = st.lim, slots.alive, slots.claims
        # the stream's head stays while the run takes re-offered p-slots only
        head = stream.peek()
        bound = None if head is None else heap_key(*stream.key, head)
        while sub.left[i] > 0 and heap:
            top = heap[0]
            row = top[-1]
            if (
                (bound is not None and not top < bound)
                or st.used >= lim.limit
                or not alive[row]
                or not claims[row]
                or self.timer() >= st.deadline
            ):
                break
            if limited:
                cost = slots.match_cost(row, cons_of)
                if not permits(cost, st.used_unclaimed, lim.limit_unclaimed):
                    break
            heapq.heappop(heap)
            self.out.stats.num_jobs_considered += 1
            self.diag.submitter_limit = 0  # as each job offered one by one sets it
            cost = self._make_match(req, slots, row, cons_of, heap, False)
            charge(cost, self.now)
            st.used += cost
            st.used_unclaimed += cost
            sub.left[i] -= 1
            taken += 1
        return taken

    def _pass_over(self: _Cycle, stream: CandidateStream, slots: CycleSlots, cost: float) -> None:
        """A candidate of ``stream`` cost ``cost``, more than the submitter's limit lets
        it take: pass over the rest of its key when each live slot left there is a static
        slot that costs as much or more. Each would fail alike (nothing changes while a
        job looks for a slot), and a large class is not walked a slot at a time."""
        entries = stream.group()
        if entries is None:
            return
        view = stream.view
        if (
            (entries < 0).any()
            or view.has_cp[entries].any()
            or int(view.sizes[entries].sum()) < PASS_OVER_ROWS
        ):
            stream.keep_group()
            return
        members, starts, alive = view.classes.members, view.starts, slots.alive
        for c in entries.tolist():
            m = members[c][starts[c] :]
            live = m[alive[m]]
            if len(live) and (slots.is_p[live].any() or slots.weight[live].min() < cost):
                stream.keep_group()
                return
        stream.skip_group()

    def _reject(self: _Cycle, req: ResourceRequest, message: str = "") -> None:
        """No slot for this request: count it, log it, tell its schedd why (``message``
        when HTCondor's is more precise than the reason, as for concurrency limits, or
        when the request's expressions ran past their budget)."""
        self.out.stats.rejections += 1
        reason = message or self.diag.reason()
        t = self.timer()
        self.say(
            f"      Rejected {req.job_id} {req.submitter} {sinful(req.schedd_address)}: {reason}", t
        )
        self.out.rejections.append(
            CycleRejection(
                req.submitter,
                req.schedd,
                req.schedd_address,
                req.autocluster_id,
                req.job_id,
                reason,
                t,
            )
        )

    def _preempting(self: _Cycle, req: ResourceRequest, slots: CycleSlots, row: int) -> None:
        """A Claimed slot is about to be matched: its offer gets the inserted attributes,
        and the NegotiatorLog says who is preempted for whom."""
        offer = slots.offer_with_remote_prio(row)
        remote = slots.view.preempt.remote[slots.classes.of[row]] or "?"
        prio = scalar_number(offer.eval("RemoteUserPrio", now=self.expr_now, rng=self.rng))
        new_rank = scalar_number(offer.eval("Rank", req.ad, now=self.expr_now, rng=self.rng))
        old_rank = scalar_number(offer.eval("CurrentRank", now=self.expr_now, rng=self.rng))
        self.say(
            preempting_line(
                remote,
                prio or 0.0,
                old_rank or 0.0,
                slots.names[row],
                req.submitter,
                self.acct.eup(req.submitter),
                new_rank or 0.0,
            )
        )

    def _match_static(
        self: _Cycle, req: ResourceRequest, slots: CycleSlots, row: int, cost: float
    ) -> None:
        """``_make_match`` of an unlogged static slot (a run's): no deduction, no re-offer;
        the caller kills the run's rows."""
        self._record(req, slots, row, slots.ad(row), slots.claims[row].pop(0), cost)

    def _record(
        self: _Cycle,
        req: ResourceRequest,
        slots: CycleSlots,
        row: int,
        offer: ClassAd,
        claim: str,
        cost: float,
    ) -> str:
        """Add the match of ``row`` (as ``offer``d, with ``claim``) to the cycle's; returns
        the startd's address."""
        startd_address = slots.startd_address(row, offer)
        self.out.matches.append(
            CycleMatch(
                req.submitter,
                req.schedd,
                req.schedd_address,
                req.autocluster_id,
                req.job_id,
                slots.names[row],
                claim,
                offer,
                startd_address,
                cost,
            )
        )
        return startd_address

    def _make_match(
        self: _Cycle,
        req: ResourceRequest,
        slots: CycleSlots,
        row: int,
        cons_of: PslotConsumption,
        heap: list[tuple],
        log_this: bool,
    ) -> float:
        """Match ``row`` to one job of ``req``; returns its cost (the caller charges it)."""
        offer = slots.ad(row)
        claim = slots.claims[row].pop(0)
        if slots.cp_slot[row]:
            cost = slots.deduct(row, cons_of[row])
            if not slots.claims[row]:
                slots.kill(row)
            else:
                self._reoffer(req, slots, row, cons_of, heap)
        else:
            cost = slots.weights[row]
            slots.kill(row)
        startd_address = self._record(req, slots, row, offer, claim, cost)
        if log_this:
            at, rng = self.expr_now, self.rng
            ip = string_attr(offer, "StartdIpAddr", None, at, rng)
            startd_ip = (
                ip
                if ip is not None
                else (sinful(startd_address) if startd_address else "<0.0.0.0:0>")
            )
            remote = string_attr(offer, "RemoteUser", None, at, rng)
            remote = remote if remote is not None else "none"
            group = string_attr(offer, "AccountingGroup", None, at, rng)
            if group is not None:
                remote = f"{remote} (AccountingGroup={group})"
            name = slots.names[row]
            self.say(
                f"      Matched {req.job_id} {req.submitter} {sinful(req.schedd_address)} "
                f"preempting {remote} {startd_ip} {name}"
            )
            self.say(f"      Successfully matched with {name}")
        return cost

    def _reoffer(
        self: _Cycle,
        req: ResourceRequest,
        slots: CycleSlots,
        row: int,
        cons_of: PslotConsumption,
        heap: list[tuple],
    ) -> None:
        """Put a p-slot back among this request's candidates if the next job still fits
        (HTCondor's returnPslotToMatchList), ranked on what it has left. P-slots of one
        base class holding the same resources give the same answer: it is remembered."""
        reoffered = self.caches.reoffered
        if reoffered is None:
            reoffered = self.caches.reoffered = (
                self.caches.reoffered_by_shape.setdefault(slots.memo.request_shape(req.ad), {})
                if slots.memo is not None
                else {}
            )
        key, shared = slots.held_keys(row)
        base = key[0]
        found = reoffered.get(key) if base >= 0 else None
        if found is None and shared is not None:
            found = reoffered.get(shared)
        if found is None:
            found, alike = self._reoffer_test(req.ad, slots, row)
            if shared is not None and alike:
                reoffered[shared] = found
            elif base >= 0:
                reoffered[key] = found
        cons, ranks = found
        if cons is None:
            return
        cons_of[row] = cons
        heapq.heappush(heap, heap_key(*ranks, NO_PREEMPTION, NO_RANK, row))

    def _reoffer_test(
        self: _Cycle, job: ClassAd, slots: CycleSlots, row: int
    ) -> tuple[tuple[np.ndarray | None, tuple[float, float, float]], bool]:
        """(consumption or None when the job does not fit or match, its ranks), and
        whether the answer is the same on every p-slot alike but for the wide names."""
        taint = slots.taint
        ad = slots.ad(row)
        slot = WatchedAd.of(ad, slots.classes.wide) if taint is not None else ad
        no = None, (0.0, 0.0, 0.0)
        cons = slots.scalar_consumption(with_zero_requests(job, slots.resources), row, slot)
        if not sufficient_one(cons.tolist(), slots.left(row)):
            return no, not getattr(slot, "read", False)
        jo = override_requests(job, cons, slots.resources)
        job_req = jo.lookup("Requirements")
        slot_req = slot.lookup("Requirements")
        ok = (
            slot_req is not None
            and job_req is not None
            and truth(evaluate(slot_req, slot, jo, now=self.expr_now, rng=self.rng)) is True
        )
        if not isinstance(slot, WatchedAd):
            ok = ok and truth(evaluate(job_req, jo, slot, now=self.expr_now, rng=self.rng)) is True
            return ((cons, slots.scalar_ranks(job, row, slot)) if ok else no), True
        found = (cons, slots.scalar_ranks(job, row, slot)) if ok else no
        alike = not slot.read  # what else it read did not touch a wide name
        if ok:
            slot.read = False
            ok = truth(evaluate(job_req, jo, slot, now=self.expr_now, rng=self.rng)) is True
            if slot.read:
                alike = (
                    alike
                    and self._kleene_safe(job_req, taint)
                    and alike_answer(job_req, jo, slot, taint, self.expr_now, self.rng)
                )
        return (found if ok else no), alike

    def _kleene_safe(self: _Cycle, requirements: Expr, taint: WideTaint) -> bool:
        hit = self.caches.safe.get(id(requirements))
        if hit is None or hit[0] is not requirements:
            hit = self.caches.safe[id(requirements)] = (
                requirements,
                taint.kleene_safe(requirements),
            )
        return hit[1]
