"""What startds report and the job policy: a job's exit (completed, or evicted and idle
again), the periodic and on-exit policy (hold, release, remove, vacate), a claim finished
or reused, releases answered, claims lost.

A mixin of :class:`.schedd.Schedd`; its methods use the core's own records and
transaction.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..claimid import redact
from ..jobstates import COMPLETED, HELD, IDLE, REMOVED, RUNNING
from . import userlog as ulog
from .policy import PolicyVerdict, at_exit, periodic
from .records import ActivationRequest, HeldClaim, Job, JobExit, Outbox, machine_of

if TYPE_CHECKING:
    from .schedd import Schedd


class JobExits:
    """Job exits, job policy and the end of a claim (mixed into ``Schedd``)."""

    # --- startds ------------------------------------------------------------------------

    def on_job_exits(self: Schedd, exits: Iterable[JobExit], now: float) -> Outbox:
        """Jobs that ended on their slots: Completed (or Idle again when evicted), their
        run accounted, their claims finished. A stale or repeated report (a claim given
        up, a job not running on the claim it names) changes nothing: ``job_exit_ignored``."""
        out = Outbox()
        for e in exits:
            job = self.jobs.get((e.cluster, e.proc))
            claim = self.claims.get(e.claim_id)
            if (
                job is not None
                and claim is not None
                and claim.state == "activating"
                and claim.job is job
                and job.status == IDLE
            ):
                # a short job's exit overtook the answer to its activation: it did start
                self._start_running(claim, job, e.start_time if e.start_time > 0 else now, now)
            if job is None or claim is None or job.claim is not claim or job.status != RUNNING:
                # a claim given up (its job may run elsewhere now), or a report repeated
                # after a restart: nothing of this job changes
                why = "claim not held" if claim is None else "job not running on the claim"
                self._emit(
                    "job_exit_ignored",
                    job=f"{e.cluster}.{e.proc}",
                    slot=e.slot_name,
                    claim=redact(e.claim_id),
                    why=why,
                )
                continue
            # from its shadow's birthday: the activation, or a restart's reconnect
            start = max(e.start_time, claim.activated)
            end = e.end_time if e.end_time > 0 else now
            claim.heard, claim.reconnecting = now, False
            self._account_run(job, start, end)
            job.claim = None
            claim.job = None
            claim.state = "idle"
            evicted = bool(e.reason)
            if evicted:  # evicted (killed, lease expired): back to the queue
                job.set("LastVacateTime", self._date(end))
                job.set("VacateReason", e.reason)
                self._left_slot(job)
                self._transition(job, IDLE, now)
                self._emit("job_evicted", job=job.job_id, slot=claim.slot_name, reason=e.reason)
                self._log(job, ulog.EVICTED, end, claim.slot_ad, reason=e.reason)
            else:
                job.set("ExitCode", int(e.exit_code))
                job.set("ExitBySignal", False)
                done = job.number("NumJobCompletions", now=self.ad_epoch + now, rng=self.eval_rng)
                job.set("NumJobCompletions", int(done) + 1)
                job.set("LastRemoteHost", claim.slot_name)
                self._exited(job, claim, int(e.exit_code), end, now, out)
            if e.claim_closing:  # HTCondor's JOB_EXITED_AND_CLAIM_CLOSING: no reuse, no release
                self._drop_claim(claim, out, release=False)
            else:
                self._claim_finished(claim, now, out, reuse=not evicted)
        self._commit(now)
        return out

    def _exited(
        self: Schedd,
        job: Job,
        claim: HeldClaim,
        exit_code: int,
        end: float,
        now: float,
        out: Outbox,
    ) -> None:
        """A job ended on its own: the shadow's policy at exit says whether it completes,
        is held (OnExitHold, or a periodic hold that fires now) or runs again."""
        verdict = PolicyVerdict("complete", "")
        if job.key in self._policed or self.system_policy.any or _exit_policed(job):
            verdict = at_exit(job.ad, self.ad_epoch + now, self.system_policy, rng=self.eval_rng)
        if verdict.action == "complete":
            job.set("CompletionDate", self._date(end))
            self._transition(job, COMPLETED, now)
            self._to_history(job)
            self._emit(
                "job_completed",
                job=job.job_id,
                slot=claim.slot_name,
                exit_code=exit_code,
                submitter=job.submitter,
            )
            self._log(job, ulog.TERMINATED, end, claim.slot_ad, return_value=exit_code)
            return
        self._left_slot(job)
        if verdict.action == "requeue":  # OnExitRemove false: it runs again
            self._transition(job, IDLE, now)
            self._emit("requeue", job=job.job_id, submitter=job.submitter, reason=verdict.reason)
            self._log(
                job,
                ulog.EVICTED,
                end,
                claim.slot_ad,
                requeued=True,
                return_value=exit_code,
                reason=verdict.reason,
            )
        else:
            self._apply_verdict(job, verdict, now, out)

    def next_policy_time(self: Schedd) -> float | None:
        """When the periodic policy is next evaluated (None: PERIODIC_EXPR_INTERVAL 0)."""
        return self.policy_next

    def policy_due(self: Schedd, now: float) -> list[tuple[int, int]]:
        """The jobs whose periodic policy is looked at in the round due at ``now`` (every
        job under a SYSTEM_PERIODIC_* knob, else those with expressions of their own);
        none before the round's time. The next round is PERIODIC_EXPR_INTERVAL later."""
        if self.policy_next is None or now < self.policy_next:
            return []
        self.policy_next = now + self.policy_every
        return sorted(self.jobs if self.system_policy.any else self._policed)

    def policy_round(self: Schedd, keys: Iterable[tuple[int, int]], now: float) -> Outbox | None:
        """Evaluate these jobs' periodic policy (HTCondor's PeriodicExprHandler, and the
        shadow's for running jobs) and carry out what fires. None: nothing fired."""
        out, fired = Outbox(), False
        for key in keys:
            job = self.jobs.get(key)  # (a round in turns: it may have left since)
            if job is None:
                continue
            verdict = periodic(
                job.ad, job.status, self.ad_epoch + now, self.system_policy, rng=self.eval_rng
            )
            if verdict is not None:
                self._apply_verdict(job, verdict, now, out)
                fired = True
        if not fired:
            return None
        self._commit(now)
        return out

    def _apply_verdict(
        self: Schedd, job: Job, verdict: PolicyVerdict, now: float, out: Outbox
    ) -> None:
        action, status = verdict.action, job.status
        if action == "hold" and status != HELD:
            self._hold(job, verdict.reason, verdict.code, now, out, verdict.subcode)
        elif action == "release" and status == HELD:
            self._release_hold(job, verdict.reason, now)
            self.ad_cadence.expedite(now)
        elif action == "remove" and status != REMOVED:
            self._remove(job, verdict.reason, now, out)
        elif action == "vacate" and status == RUNNING:
            self._vacate(job, verdict, now, out)

    def _vacate(self: Schedd, job: Job, verdict: PolicyVerdict, now: float, out: Outbox) -> None:
        """A running job off its slot and back to Idle (its claim released), for a
        policy or condor_vacate_job (code 0: no VacateReasonCode, as for a user's)."""
        claim = self._stop(job, now, out, evicted=True)
        job.set("LastVacateTime", self._date(now))
        job.set("VacateReason", verdict.reason)
        if verdict.code:
            job.set("VacateReasonCode", verdict.code)
            job.set("VacateReasonSubCode", verdict.subcode)
        self._transition(job, IDLE, now)
        self._emit("vacate", job=job.job_id, submitter=job.submitter, reason=verdict.reason)
        self._log(
            job,
            ulog.EVICTED,
            now,
            claim.slot_ad if claim is not None else None,
            reason=verdict.reason,
            code=verdict.code,
            subcode=verdict.subcode,
        )

    def _claim_finished(
        self: Schedd, claim: HeldClaim, now: float, out: Outbox, *, reuse: bool
    ) -> None:
        """A job left ``claim``: claim reuse. The next idle job of the same submitter that
        matches the slot (both Requirements) and fits it runs on the same claim, with no
        negotiation cycle. (A claim past CLAIM_WORKLIFE comes back closing with its job's
        exit and is not reused; should one get here, the startd refuses the activation and
        the job goes back to Idle.) Nothing to run, or an evicted job: the claim is
        released."""
        job = None
        if reuse and claim.slot_ad is not None:
            job = self._take_runnable_job(claim.submitter, claim.slot_ad, now, fit=True)
        if job is None:
            self._drop_claim(claim, out)
            return
        claim.job, job.claim = job, claim
        self._reserved += 1
        claim.state = "activating"
        out.activations[claim.startd_address].append(
            ActivationRequest(claim.claim_id, job.ad, job.job_id)
        )
        self._emit(
            "claim_reuse",
            job=job.job_id,
            slot=claim.slot_name,
            claim=redact(claim.claim_id),
            submitter=claim.submitter,
        )

    def on_releases_done(
        self: Schedd, claim_ids: Iterable[str], now: float, *, answered: bool
    ) -> None:
        """ReleaseClaims was sent: removed jobs that waited for their claim leave. When
        the startd ``answered`` (whatever it said, it holds none of these claims now), the
        jobs of unanswered activations on them may run again."""
        for cid in claim_ids:
            job = self._releasing.pop(cid, None)
            if job is not None and job.key in self.jobs:
                self._to_history(job)
            if answered and cid in self._unsure:
                self._settle_unsure(cid, now, "the startd answered the release")
        self._commit(now)

    def on_claims_lost(self: Schedd, claim_ids: Iterable[str], now: float) -> None:
        """Claims a startd no longer has (KeepAlive): their jobs are evicted."""
        for cid in claim_ids:
            claim = self.claims.get(cid)
            if claim is None:
                continue
            self.claims.pop(cid)
            self._batch.claims_del.add(cid)
            job = claim.job
            claim.job = None
            self._emit("claim_lost", slot=claim.slot_name, claim=redact(cid))
            if job is None:
                continue
            job.claim = None
            if claim.state == "active" and job.status == RUNNING:
                self._account_run(job, claim.activated, now)
                self._left_slot(job)
                self._transition(job, IDLE, now)
                self._log(
                    job,
                    ulog.RECONNECT_FAILED,
                    now,
                    reason="Job not found at execution machine",
                    startd=machine_of(claim.slot_name),
                )
            elif job.status == IDLE:
                self._reserved -= 1
                self._unreserve(job)
        for cid in list(self._releasing):
            if cid in claim_ids:
                self.on_releases_done([cid], now, answered=True)
        self._commit(now)


def _exit_policed(job: Job) -> bool:
    ad = job.ad
    return ad.lookup("OnExitHold") is not None or ad.lookup("OnExitRemove") is not None
