"""The candidate search of one request: which attributes its evaluation reads, the slot
classes and p-slot states it is evaluated on (vectorised, or state by state), and its
candidates in order (pre-job rank, job Rank, post-job rank, preemption state,
PREEMPTION_RANK).

A mixin of the cycle (:class:`.cycle._Cycle`); its caches are the cycle's CycleMemo.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from ..classad import ClassAd, evaluate
from ..classad.budget import Budget
from ..classad.kernel import MatchResult, Varying, match_vector, table_budget
from ..classad.tree import unparse
from .candidates import CandidateStream
from .consumption import PslotConsumption, override_requests, sufficient, with_zero_requests
from .cycleinput import NO_RANK, ResourceRequest
from .memo import Answers
from .preemption import Diagnosis, with_submitter_attrs
from .slotclasses import ClassView
from .slottable import CycleSlots, rank_number

if TYPE_CHECKING:
    from .cycle import _Cycle

# the job attributes a request's evaluation against slots starts from
READS_KEY = ("Requirements", "Rank", "ConcurrencyLimits")  # what keys CycleMemo.reads_wide
# a request evaluated on at most this many p-slot states (and nothing else) is evaluated
# state by state with the scalar evaluator
ONE_BY_ONE = 4


class CandidateSearch:
    """Finding a request's candidates (mixed into the cycle)."""

    def candidates(
        self: _Cycle, req: ResourceRequest, slots: CycleSlots
    ) -> tuple[CandidateStream, PslotConsumption]:
        """The slots that match ``req`` now, best first, and each p-slot's consumption,
        evaluated per slot class; again slot by slot if that read a wide name."""
        eup, in_use = self.acct.eup(req.submitter), self.acct.resources_used(req.submitter)
        # copied only for a request whose order is not remembered
        made: list[ClassAd] = []

        def job() -> ClassAd:
            if not made:
                made.append(with_submitter_attrs(req.ad, eup, in_use))
            return made[0]

        offered = slots.memo.offered_shape(req.ad, eup, in_use) if slots.memo is not None else ()
        view = slots.view
        if slots.taint is None:
            out = self._candidates_in(view, req, job, slots, offered)
            assert out is not None
            return out
        # A request whose expressions read a wide name undecided once will again:
        # remember them.
        reads = self._reads_of(req.ad, slots)
        if reads not in self.caches.reads_wide:
            requirements = req.ad.lookup("Requirements")
            varies = (
                slots.varies
                if requirements is not None and self._kleene_safe(requirements, slots.taint)
                else None
            )
            view.table.touched = False
            fallbacks = self.kstats.fallbacks
            out = self._candidates_in(view, req, job, slots, offered, varies)
            # a scalar fallback reads the representative's ad unwatched: not trusted either
            if out is not None and not view.table.touched and self.kstats.fallbacks == fallbacks:
                return out
            self.caches.reads_wide.add(reads)
        self.out.stats.requests_by_slot += 1
        out = self._candidates_in(slots.fine(), req, job, slots, offered)
        assert out is not None
        return out

    def _reads_of(self: _Cycle, request: ClassAd, slots: CycleSlots) -> tuple[str, ...]:
        """The texts of the request's ``READS_KEY`` expressions, made once per request
        ad (a request is offered many times a cycle)."""
        hit = self.caches.reads.get(id(request))
        if hit is None or hit[0] is not request:
            text = slots.memo.text if slots.memo is not None else unparse
            reads = tuple(text(e) for e in map(request.lookup, READS_KEY) if e is not None)
            hit = self.caches.reads[id(request)] = (request, reads)
        return hit[1]

    def _candidates_in(
        self: _Cycle,
        view: ClassView,
        req: ResourceRequest,
        job_of: Callable[[], ClassAd],
        slots: CycleSlots,
        shape: tuple,
        varies: Varying | None = None,
    ) -> tuple[CandidateStream, PslotConsumption] | None:
        """As ``candidates`` on ``view``; with ``varies`` (the classes whose slots differ
        in a wide name), the job's Requirements in three-valued logic, and None when
        they are undecided for a live class."""
        slots.flush(view)
        self.diag = Diagnosis()
        # one budget for everything this request evaluates against the slots
        budget = table_budget(slots.n)
        ct = view.table
        # evaluated once per live class, and once per state of the live p-slot classes
        at, counts, entries = view.representatives()
        # A request of a shape seen on these same live classes and states, none Claimed,
        # gets the candidates in the order the first one got, if that one's answers were
        # all remembered (kept answers hold for the cycle, and read no wide name; the
        # order follows from them and from the rows).
        ordered_key = None
        if view is slots.view and slots.memo is not None and view.rows_fixed:
            ordered_key = (shape, at.tobytes(), entries.tobytes())
            found = self.caches.ordered.get(ordered_key)
            if found is not None:
                self.out.stats.rows_remembered += len(at)
                self.out.stats.orders_remembered += 1
                ordered, ordered_keys, cons = found
                stream = CandidateStream(ordered, ordered_keys, view, slots.alive)
                return stream, PslotConsumption.sharing(view, cons)
        job = job_of()

        def evaluate(rows: np.ndarray) -> tuple[Answers, np.ndarray] | None:
            self.out.stats.rows_evaluated += int(rows.sum())
            touched, ct.touched = ct.touched, False
            fallbacks = self.kstats.fallbacks
            got = self._evaluate(view, job, slots, at[rows], counts[rows], varies, budget)
            read_wide, ct.touched = ct.touched, touched or ct.touched
            if got is None:
                return None
            answers, keep = got
            return answers, keep & (not read_wide and self.kstats.fallbacks == fallbacks)

        row_keys = view.row_keys(at)
        if view is slots.view and slots.memo is not None:
            evaluated = self.out.stats.rows_evaluated
            ans = slots.memo.answer(shape, row_keys, evaluate)
            self.out.stats.rows_remembered += len(at) - (self.out.stats.rows_evaluated - evaluated)
            if evaluated != self.out.stats.rows_evaluated or view.preempt.rows[at].any():
                ordered_key = None  # not all remembered, or answers that follow the submitter
        else:
            got = evaluate(np.ones(len(at), dtype=bool))
            ans = None if got is None else got[0]
        if ans is None:
            return None
        hit = np.flatnonzero(ans.matched)
        allowed, state = view.preempt.classify(ct, job, at[hit], req.submitter, self.diag)
        hit, state = hit[allowed], state[allowed]
        phit = hit[view.has_cp[at[hit]]]  # the p-slot classes and states
        cons_of = PslotConsumption(view, row_keys[phit], ans.cons[phit])
        keys = np.empty((len(hit), 5))
        keys[:, 0] = ans.pre[hit]
        keys[:, 1] = ans.rank[hit]
        keys[:, 2] = ans.post[hit]
        keys[:, 3] = state
        keys[:, 4] = slots.preemption_rank(view, job, at[hit], state)
        # ties go to the first slot in snapshot order (a state's first live slot)
        first = view.reps[at[hit]]
        order = np.lexsort((first, -keys[:, 4], -keys[:, 3], -keys[:, 2], -keys[:, 1], -keys[:, 0]))
        ordered, ordered_keys = entries[hit][order], keys[order]
        if ordered_key is not None:
            self.caches.ordered[ordered_key] = (ordered, ordered_keys, cons_of.by_key)
        return CandidateStream(ordered, ordered_keys, view, slots.alive), cons_of

    def _evaluate(
        self: _Cycle,
        view: ClassView,
        job: ClassAd,
        slots: CycleSlots,
        at: np.ndarray,
        counts: np.ndarray,
        varies: Varying | None,
        budget: Budget,
    ) -> tuple[Answers, np.ndarray] | None:
        """The request's answers on the class rows ``at`` (``counts``: how many live
        rows each stands for), and which may be remembered for their row; None when its
        Requirements are undecided for one. A p-slot state's answer that read a wide
        name (three-valued, on a state of one slot) is that slot's alone: the next
        slot in the state may answer otherwise, so it is not remembered."""
        ct = view.table
        multi = (view.sizes[at] > 1) | (counts > 1)  # rows that stand for several slots
        at_cp = view.has_cp[at]
        if len(at) <= ONE_BY_ONE and at_cp.all() and not (multi.any() and slots.taint):
            return self._evaluate_one_by_one(view, job, slots, at)
        cons_at = np.full((len(at), len(slots.resources)), np.nan)
        pat = np.flatnonzero(at_cp)
        if len(pat):  # p-slot states first: most, used up, fit no job and need no more
            job_cp = with_zero_requests(job, slots.resources)
            cons = slots.consumption(view, job_cp, at[pat])
            fits = sufficient(cons, slots.avail[:, view.reps[at[pat]]].T)
            pat, cons = pat[fits], cons[fits]
            cons_at[pat] = cons
        ask = np.flatnonzero(~at_cp)
        if len(pat):
            ask = np.sort(np.concatenate((ask, pat)))
        rank = np.zeros(len(at))
        matched = np.zeros(len(at), dtype=bool)
        keep = np.ones(len(at), dtype=bool)
        if not len(ask):
            return Answers(matched, rank, rank.copy(), rank.copy(), cons_at), keep

        def match(j: ClassAd, idx: np.ndarray) -> MatchResult | None:
            """``j`` on the rows ``at[idx]``. Asked of every row, three-valued evaluation
            says where the answer follows a wide name: undecided on a row of several
            slots (None), not to be kept on a p-slot state."""
            got = match_vector(
                j,
                ct,
                now=self.expr_now,
                rng=self.rng,
                budget=budget,
                varies=None if varies is None else varies.on(np.ones(len(idx), dtype=bool)),
                rows=at[idx],
            )
            self.kstats.fallbacks += got.fallbacks
            if got.unknown is not None:
                if (got.unknown & multi[idx]).any():
                    return None
                keep[idx] &= ~(got.unknown & at_cp[idx])
            return got

        mr = match(job, ask)
        if mr is None:
            return None
        rank[ask] = mr.rank
        matched[ask] = mr.matches
        matched &= ~at_cp
        if slots.fit is not None and (held := np.flatnonzero(matched)).size:
            matched[held] = slots.fit.holds(
                ct,
                view.reps,
                at[held],
                job,
                stats=self.kstats,
                now=self.expr_now,
                rng=self.rng,
                budget=budget,
            )
        if len(pat):
            plain = np.zeros(len(at), dtype=bool)
            plain[ask] = mr.matches
            if (cons == cons[0]).all():  # the usual case: one policy, one job shape
                uniq, inverse = cons[:1], np.zeros(len(pat), dtype=np.int64)
            else:
                uniq, inverse = np.unique(cons, axis=0, return_inverse=True)
                inverse = inverse.reshape(-1)
            for k, tup in enumerate(uniq):
                sel = pat[inverse == k]
                jo = override_requests(job, tup, slots.resources)
                if jo is job:
                    matched[sel] = plain[sel]
                    continue
                mo = match(jo, sel)
                if mo is None:
                    return None
                matched[sel] = mo.matches
        pre = np.full(len(at), NO_RANK)
        post = np.full(len(at), NO_RANK)
        hit = np.flatnonzero(matched)
        if len(hit):
            pre[hit], post[hit] = slots.job_ranks(view, job, at[hit])
        return Answers(matched, rank, pre, post, cons_at), keep

    def _evaluate_one_by_one(
        self: _Cycle, view: ClassView, job: ClassAd, slots: CycleSlots, at: np.ndarray
    ) -> tuple[Answers, np.ndarray]:
        """As ``_evaluate`` on a few p-slot states of one slot each, with the scalar
        evaluator (the vector one costs a fixed time per expression, whatever the rows):
        the re-offer test, which also says whether an answer holds for every slot alike
        but for the wide names (else it is exact for this one slot, and not kept)."""
        n = len(at)
        matched = np.zeros(n, dtype=bool)
        rank = np.zeros(n)
        pre = np.full(n, NO_RANK)
        post = np.full(n, NO_RANK)
        cons_at = np.full((n, len(slots.resources)), np.nan)
        keep = np.ones(n, dtype=bool)
        rank_e = job.lookup("Rank")
        for k, c in enumerate(at.tolist()):
            row = int(view.reps[c])
            (cons, (pre_k, _rank, post_k)), keep[k] = self._reoffer_test(job, slots, row)
            if cons is None:
                continue
            matched[k], cons_at[k], pre[k], post[k] = True, cons, pre_k, post_k
            if rank_e is not None:  # as the kernel reads it (a number that is not finite too)
                rank[k] = rank_number(
                    evaluate(rank_e, job, slots.ad(row), now=self.expr_now, rng=self.rng)
                )
        return Answers(matched, rank, pre, post, cons_at), keep
