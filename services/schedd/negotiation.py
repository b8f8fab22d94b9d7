"""What the negotiator's matches become: resource requests per autocluster, match
notices, claim requests to startds and their outcomes (with a partitionable slot's
leftovers claimed at once), activations and their outcomes, rejections, and a claim
that waits for a preempted job to retire.

A mixin of :class:`.schedd.Schedd`; its methods use the core's own records and
transaction.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..claimid import redact, sinful
from ..classad import ClassAd, evaluate
from ..classad.tree import Literal
from ..jobstates import IDLE, RUNNING
from . import userlog as ulog
from .queue import StoredClaim
from .records import (
    ActivationOutcome,
    ActivationRequest,
    ClaimOutcome,
    ClaimRequest,
    HeldClaim,
    Job,
    MatchNotice,
    Outbox,
    RejectionNotice,
    UnsureActivation,
)

if TYPE_CHECKING:
    from .schedd import Schedd


class NegotiatedClaims:
    """From a match to a running job (mixed into ``Schedd``)."""

    # --- the negotiator -----------------------------------------------------------------

    def resource_requests(self: Schedd, submitter: str | None = None) -> list[ClassAd]:
        """One ad per (submitter, autocluster) with idle unreserved jobs: a representative
        job ad plus AutoClusterId, Submitter and ResourceRequestCount."""
        out = []
        for group in self._idle.groups():
            if submitter and group[0] != submitter:
                continue
            first = self._idle.first(group)
            if first is None:
                continue
            ad = self.jobs[first].ad.copy()
            ad["AutoClusterId"] = group[1]
            ad["Submitter"] = group[0]
            ad["ResourceRequestCount"] = self._idle.count(group)
            out.append(ad)
        return out

    def on_matches(self: Schedd, matches: Iterable[MatchNotice], now: float) -> Outbox:
        """Reserve one idle job per match and return the claim requests to send."""
        out = Outbox()
        running = self.totals()[RUNNING]
        for m in matches:
            if (
                not m.claim_id
                or not m.startd_address
                or m.claim_id in self.claims
                or running + self._reserved >= self.max_jobs_running
            ):
                out.dropped += 1
                continue
            key = self._idle.pop((m.submitter, m.autocluster_id))
            if key is None:  # no idle job left in that request: the claim id goes unused
                out.dropped += 1
                continue
            job = self.jobs[key]
            claim = HeldClaim(
                m.claim_id,
                m.startd_address,
                m.slot_name,
                m.submitter,
                job,
                "requesting",
                now,
                m.slot_ad,
            )
            self.claims[m.claim_id] = claim
            job.claim = claim
            self._reserved += 1
            out.claims[m.startd_address].append(
                ClaimRequest(
                    m.claim_id, m.slot_name, job.ad, m.submitter, job.job_id, self.claim_leftovers
                )
            )
            out.accepted += 1
            # the negotiator owns the match ("match", naming the autocluster's first job);
            # the schedd owns which job took it
            self._emit(
                "job_matched",
                job=job.job_id,
                slot=m.slot_name,
                claim=redact(m.claim_id),
                submitter=m.submitter,
            )
        return out

    def on_claim_results(self: Schedd, outcomes: Iterable[ClaimOutcome], now: float) -> Outbox:
        """Claimed: activate the job on it. Refused: the job is idle again."""
        out = Outbox()
        for o in outcomes:
            claim = self.claims.get(o.requested_claim_id)
            if claim is None or claim.state != "requesting":
                continue
            job = claim.job
            if not o.ok:
                self.claims.pop(claim.claim_id, None)
                if job is not None:
                    self._unreserve(job)
                self._emit(
                    "claim_refused",
                    slot=claim.slot_name,
                    claim=redact(claim.claim_id),
                    error=o.error,
                )
                continue
            if o.claim_id and o.claim_id != claim.claim_id:  # a carved dynamic slot
                del self.claims[claim.claim_id]
                claim.claim_id = o.claim_id
                self.claims[claim.claim_id] = claim
            claim.slot_name = o.slot_name or claim.slot_name
            claim.slot_ad = o.slot_ad if o.slot_ad is not None else claim.slot_ad
            claim.since = claim.heard = now
            self._emit(
                "claim_held",
                slot=claim.slot_name,
                claim=redact(claim.claim_id),
                job=job.job_id if job else "",
                submitter=claim.submitter,
            )
            if o.leftover_claim_id and o.leftover_slot_ad is not None:
                self._claim_leftovers(claim, o.leftover_claim_id, o.leftover_slot_ad, now, out)
            if job is None or job.status != IDLE:  # held or removed meanwhile
                claim.state = "idle"
                self._drop_claim(claim, out)
                continue
            if o.ready_time > now:  # preempting: the slot's job is retiring until then
                claim.state, claim.ready = "waiting", o.ready_time
                self._waiting[claim.claim_id] = claim
                self._alive_soon(claim)
                continue
            claim.state = "activating"
            out.activations[claim.startd_address].append(
                ActivationRequest(claim.claim_id, job.ad, job.job_id)
            )
        self._commit(now)
        return out

    def next_ready_time(self: Schedd) -> float | None:
        """When the earliest waiting claim may be activated (None: no claim waits)."""
        waiting = self._waiting
        for cid, c in list(waiting.items()):
            if c.state != "waiting" or self.claims.get(cid) is not c:
                del waiting[cid]
        return min((c.ready for c in waiting.values()), default=None)

    def activate_ready(self: Schedd, now: float) -> Outbox:
        """Activate the waiting claims whose slots are free by ``now``."""
        out = Outbox()
        for claim in list(self.claims.values()):
            if claim.state != "waiting" or claim.ready > now:
                continue
            job = claim.job
            if job is None or job.status != IDLE:
                claim.state = "idle"
                self._drop_claim(claim, out)
                continue
            claim.state = "activating"
            out.activations[claim.startd_address].append(
                ActivationRequest(claim.claim_id, job.ad, job.job_id)
            )
        self._commit(now)
        return out

    def on_rejections(self: Schedd, rejections: Iterable[RejectionNotice], now: float) -> None:
        """The negotiator's reasons for requests it could not serve, on the jobs it named."""
        for r in rejections:
            job = self.jobs.get((r.cluster, r.proc))
            if job is None:
                continue
            job.set("LastRejMatchReason", r.reason)
            job.set("LastRejMatchTime", self._date(r.time))
            self._touch(job)
            self._emit("rejected", job=job.job_id, reason=r.reason, submitter=job.submitter)
        self._commit(now)

    def _claim_leftovers(
        self: Schedd, claim: HeldClaim, claim_id: str, slot_ad: ClassAd, now: float, out: Outbox
    ) -> None:
        """A p-slot's leftovers came back with a claim: claim them for the submitter's best
        idle job that matches them, without a negotiation cycle (HTCondor's schedd:
        scheduler_handleMatch for LEFTOVER, FindRunnableJob). As there, only a job without
        concurrency limits may take them (the leftovers carry no MatchedConcurrencyLimits,
        and CLAIM_RECYCLING_CONSIDER_LIMITS wants the limits to be equal). Nothing found:
        the id stays the p-slot's Capability, for the negotiator to hand out."""
        if claim_id in self.claims or claim_id == claim.claim_id:
            return
        job = self._take_runnable_job(claim.submitter, slot_ad, now, fit=False)
        if job is None:
            return
        slot_name = slot_ad.get_value(
            "Name", claim.slot_name, now=self.ad_epoch + now, rng=self.eval_rng
        )
        left = HeldClaim(
            claim_id,
            claim.startd_address,
            slot_name if isinstance(slot_name, str) else claim.slot_name,
            claim.submitter,
            job,
            "requesting",
            now,
            slot_ad,
        )
        self.claims[claim_id] = left
        job.claim = left
        self._reserved += 1
        out.claims[claim.startd_address].append(
            ClaimRequest(claim_id, left.slot_name, job.ad, claim.submitter, job.job_id, True)
        )
        self._emit(
            "leftover_match",
            job=job.job_id,
            slot=left.slot_name,
            claim=redact(claim_id),
            submitter=claim.submitter,
        )

    def _take_runnable_job(
        self: Schedd, submitter: str, slot_ad: ClassAd, now: float, *, fit: bool
    ) -> Job | None:
        """The submitter's best idle job (JobPrio, then Cluster.Proc) that matches
        ``slot_ad`` both ways, taken off the idle index (HTCondor's FindRunnableJob).
        As HTCondor's claim recycling does by default, a job with concurrency limits is
        left to the negotiator, which counts them. ``fit``: the job's requests must also
        fit the slot as it is (a claimed static or dynamic slot is not carved again)."""
        if self.totals()[RUNNING] + self._reserved >= self.max_jobs_running:
            return None
        best: tuple[int, int, int] | None = None  # (-prio, cluster, proc) as IdleIndex orders
        best_group: tuple[str, int] | None = None
        for group in self._idle.groups():
            if group[0] != submitter:
                continue
            key = self._idle.first(group)
            if key is None:
                continue
            job = self.jobs[key]
            order = (-job.prio, job.cluster, job.proc)
            if best is not None and order >= best:
                continue
            at, rng = self.ad_epoch + now, self.eval_rng
            limits = job.ad.eval("ConcurrencyLimits", slot_ad, now=at, rng=rng)
            if isinstance(limits, str) and limits:
                continue
            if fit and not _fits(job.ad, slot_ad, at, rng):
                continue
            if not self.memo.matches(job.ad, slot_ad, now=at, rng=rng):
                continue
            best, best_group = order, group
        if best_group is None:
            return None
        key = self._idle.pop(best_group)
        assert key is not None
        return self.jobs[key]

    def on_activation_results(
        self: Schedd, outcomes: Iterable[ActivationOutcome], now: float
    ) -> Outbox:
        """Activated: the job is Running. Refused: the job is idle, the claim released."""
        out = Outbox()
        for o in outcomes:
            claim = self.claims.get(o.claim_id)
            if claim is None or claim.state != "activating":
                continue
            job = claim.job
            if not o.ok and not o.answered and job is not None and job.status == IDLE:
                self._activation_unsure(claim, job, o.error, now, out)
                continue
            if not o.ok or job is None or job.status != IDLE:
                claim.job = None
                claim.state = "idle"
                if job is not None:
                    self._unreserve(job)
                    self._emit(
                        "activate_failed", job=job.job_id, slot=claim.slot_name, error=o.error
                    )
                self._drop_claim(claim, out)
                continue
            self._start_running(claim, job, o.start_time if o.start_time > 0 else now, now)
        self._commit(now)
        return out

    def _activation_unsure(
        self: Schedd, claim: HeldClaim, job: Job, error: str, now: float, out: Outbox
    ) -> None:
        """No answer to an activation: release the claim, and keep its job reserved until
        the startd answers the release or the claim's lease is over."""
        every = self._alive_every(claim)  # and claim.lease, from the job
        lease = claim.lease
        self.claims.pop(claim.claim_id, None)
        self._batch.claims_del.add(claim.claim_id)
        claim.state = "releasing"
        self._unsure[claim.claim_id] = UnsureActivation(claim, job, now + lease, now + every)
        self._look_by(now + min(lease, every))
        out.releases[claim.startd_address].append(claim.claim_id)
        self._emit(
            "activate_unanswered",
            job=job.job_id,
            slot=claim.slot_name,
            claim=redact(claim.claim_id),
            error=error,
            until=round(now + lease, 3),
        )

    def _settle_unsure(self: Schedd, claim_id: str, now: float, why: str) -> None:
        """The job of an unanswered activation runs nowhere now: it may run again."""
        u = self._unsure.pop(claim_id)
        job = u.job
        if job.claim is u.claim and job.key in self.jobs:
            self._unreserve(job)
            self._emit("activate_settled", job=job.job_id, slot=u.claim.slot_name, why=why)

    def _start_running(self: Schedd, claim: HeldClaim, job: Job, start: float, now: float) -> None:
        claim.state = "active"
        claim.heard = now
        self._alive_soon(claim)
        claim.activated = start
        claim.jobs_run += 1
        self._reserved -= 1
        if job.ad.lookup("JobStartDate") is None:
            job.set("JobStartDate", self._date(start))
        at, rng = self.ad_epoch + now, self.eval_rng
        previous = job.ad.eval("JobCurrentStartDate", now=at, rng=rng)
        if isinstance(previous, int):  # run before (evicted): schedd.cpp keeps the last start
            job.set("JobLastStartDate", previous)
        job.set("JobCurrentStartDate", self._date(start))
        job.set("NumJobStarts", int(job.number("NumJobStarts", now=at, rng=rng)) + 1)
        # schedd.cpp add_shadow_rec: a started match counts (what -better-analyze reads)
        job.set("NumMatches", int(job.number("NumMatches", now=at, rng=rng)) + 1)
        job.set("LastMatchTime", self._date(start))
        job.set("RemoteHost", claim.slot_name)
        self._transition(job, RUNNING, now)
        self._batch.claims_put[claim.claim_id] = StoredClaim(
            claim.claim_id,
            job.cluster,
            job.proc,
            claim.startd_address,
            claim.slot_name,
            claim.submitter,
            start,
        )
        self._emit(
            "job_started",
            job=job.job_id,
            slot=claim.slot_name,
            claim=redact(claim.claim_id),
            submitter=job.submitter,
        )
        self._log(job, ulog.EXECUTE, start, host=sinful(claim.startd_address), slot=claim.slot_name)


_FITTED = ("Cpus", "Memory", "Disk")


def _fits(job_ad: ClassAd, slot_ad: ClassAd, now: float, rng: random.Random) -> bool:
    """Whether the job's RequestCpus/Memory/Disk fit the slot's Cpus/Memory/Disk."""
    for res in _FITTED:
        request = job_ad.lookup(f"Request{res}")
        if request is None:
            continue
        want = (
            request.value
            if type(request) is Literal
            else evaluate(request, job_ad, slot_ad, now=now, rng=rng)
        )
        have = slot_ad.eval(res, now=now, rng=rng)
        if isinstance(want, bool) or not isinstance(want, int | float):
            continue  # no request of this resource
        if isinstance(have, bool) or not isinstance(have, int | float) or want > have:
            return False
    return True
