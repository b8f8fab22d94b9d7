"""What users do to jobs (condor_rm, condor_hold, condor_release, condor_vacate_job) and
the job-state changes they share with the rest of the core: remove, hold, release, stop
a running job, account its run and credit its checkpoints, leave its slot.

A mixin of :class:`.schedd.Schedd` (as :mod:`.readymade`); its methods use the core's
own records and transaction.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..claimid import redact
from ..classad import (
    Budget,
    BudgetExceeded,
    ClassAd,
    ClassAdSyntaxError,
    evaluate,
    parse_expr,
    unparse,
)
from ..classad.budget import PER_AD_STEPS
from ..classad.tree import Expr
from ..jobstates import HELD, HOLD_CODE_USER, IDLE, REMOVED, RUNNING
from . import userlog as ulog
from .policy import PolicyVerdict
from .records import (
    AR_ALREADY_DONE,
    AR_BAD_STATUS,
    AR_ERROR,
    AR_NOT_FOUND,
    AR_PERMISSION_DENIED,
    AR_SUCCESS,
    ActResult,
    ConstraintError,
    CostlyConstraint,
    HeldClaim,
    Job,
    Outbox,
    ScheddError,
)
from .wallclock import CHECKPOINT, checkpoint, credited

if TYPE_CHECKING:
    from .schedd import Schedd

_JOB_ID = re.compile(r"(\d+)(?:\.(\d+))?\Z")
_VERBS = {"remove": "remove", "hold": "hold", "release": "release", "vacate": "vacate"}
_TOOLS = {
    "remove": "condor_rm",
    "hold": "condor_hold",
    "release": "condor_release",
    "vacate": "condor_vacate_job",
}


class JobActions:
    """A user's actions on jobs, and the state changes they share (mixed into ``Schedd``)."""

    # --- user actions -------------------------------------------------------------------

    def _constraint(self: Schedd, text: str) -> Expr | None:
        text = text.strip()
        if not text:
            return None
        try:
            return parse_expr(text)
        except ClassAdSyntaxError as exc:
            raise ConstraintError(f"bad constraint {text!r}: {exc}") from None

    def _true(self: Schedd, expr: Expr | None, ad: ClassAd, now: float, budget: Budget) -> bool:
        """Whether ``expr`` selects ``ad`` at date ``now``; one request shares one budget,
        which grows by PER_AD_STEPS for each ad scanned (CostlyConstraint past it)."""
        if expr is None:
            return True
        budget.grant(PER_AD_STEPS)
        try:
            v = evaluate(expr, ad, None, now=now, rng=self.eval_rng, budget=budget)
        except BudgetExceeded as exc:
            text = unparse(expr)
            short = text if len(text) <= 200 else text[:200] + "..."
            raise CostlyConstraint(f"constraint {short!r} is too costly: {exc}") from None
        if isinstance(v, bool):
            return v
        return isinstance(v, (int, float)) and v != 0

    def act(
        self: Schedd,
        action: str,
        job_ids: Sequence[str],
        constraint: str,
        reason: str,
        owner: str,
        now: float,
        *,
        only_owner: str | None = None,
        others_denied: bool = False,
        hold_subcode: int = 0,
    ) -> tuple[list[ActResult], Outbox]:
        """condor_rm / condor_hold / condor_release / condor_vacate_job on ids ("12.0", or
        "12" for a cluster) and/or a constraint. Per-job errors read as HTCondor's tools
        print them; each result carries HTCondor's action_result_t.

        ``owner`` is who acts (for the default reason). ``only_owner``, when given, is a
        user who is not a queue superuser: a job of another Owner named by id is refused
        ("Permission denied to remove job 3.0", as the schedd answers condor_rm), and a
        constraint selects among that user's jobs only (the tools add that clause), or,
        ``others_denied``, selects every job and refuses the others' (the schedd's own
        answer to ACT_ON_JOBS with a bare constraint, as htcondor2 sends it). Vacate
        takes a running job off its slot back to Idle. ``hold_subcode``: a hold's
        HoldReasonSubCode (its code is 1, UserRequest)."""
        if action not in _VERBS:
            raise ScheddError(
                f"unknown action {action!r}: expected remove, hold, release or vacate"
            )
        expr = self._constraint(constraint)
        if not job_ids and expr is None:
            raise ScheddError(f"{action}: no job ids and no constraint")
        verb = _VERBS[action]
        results: list[ActResult] = []
        targets: list[Job] = []
        seen: set[tuple[int, int]] = set()

        def take(job: Job) -> None:
            if job.key not in seen:
                seen.add(job.key)
                targets.append(job)

        for text in job_ids:
            m = _JOB_ID.match(text.strip())
            if not m:
                results.append(
                    ActResult(
                        text,
                        False,
                        f"Invalid job id {text!r}: expected cluster or cluster.proc",
                        AR_ERROR,
                    )
                )
                continue
            cluster = int(m.group(1))
            if m.group(2) is None:
                members = [
                    j
                    for j in self.jobs.values()
                    if j.cluster == cluster and _applies(action, j.status)
                ]
                if not members:
                    results.append(
                        ActResult(
                            text,
                            False,
                            f"Couldn't find/{verb} all jobs in cluster {cluster}",
                            AR_NOT_FOUND,
                        )
                    )
                for job in members:
                    take(job)
                continue
            job = self.jobs.get((cluster, int(m.group(2))))
            if job is None:
                results.append(
                    ActResult(
                        text, False, f"Job {cluster}.{int(m.group(2))} not found", AR_NOT_FOUND
                    )
                )
            else:
                take(job)
        if expr is not None:
            before = len(targets)
            budget = Budget()
            for job in list(self.jobs.values()):
                if (
                    _applies(action, job.status)
                    and (only_owner is None or others_denied or self._owner(job, now) == only_owner)
                    and self._true(expr, job.ad, self.ad_epoch + now, budget)
                ):
                    take(job)
            if len(targets) == before and not job_ids:
                results.append(
                    ActResult(
                        "",
                        False,
                        f"Couldn't find/{verb} all jobs matching constraint ({constraint.strip()})",
                        AR_NOT_FOUND,
                    )
                )
        out = Outbox()
        why = reason.strip() or f"via {_TOOLS[action]} (by user {owner or 'unknown'})"
        for job in targets:
            error, code = _refusal(action, job)
            if only_owner is not None and self._owner(job, now) != only_owner:
                error = f"Permission denied to {verb} job {job.job_id}"
                code = AR_PERMISSION_DENIED
            if error:
                results.append(ActResult(job.job_id, False, error, code))
                continue
            if action == "remove":
                self._remove(job, why, now, out)
            elif action == "hold":
                self._hold(job, why, HOLD_CODE_USER, now, out, hold_subcode)
            elif action == "vacate":
                self._vacate(job, PolicyVerdict("vacate", why), now, out)
            else:
                self._release_hold(job, why, now)
                self.ad_cadence.expedite(now)  # releaseJob: needReschedule
            results.append(ActResult(job.job_id, True))
        self._commit(now)
        return results, out

    def _remove(self: Schedd, job: Job, reason: str, now: float, out: Outbox) -> None:
        was_running = job.status == RUNNING
        claim = self._stop(job, now, out, evicted=True)
        job.set("RemoveReason", reason)
        self._transition(job, REMOVED, now)
        self._emit("remove", job=job.job_id, submitter=job.submitter, reason=reason)
        self._log(job, ulog.ABORTED, now, reason=reason)
        if was_running and claim is not None:
            self._releasing[claim.claim_id] = job  # leaves when the release is done
        else:
            self._to_history(job)

    def _owner(self: Schedd, job: Job, now: float) -> str | None:
        value = job.ad.get_value("Owner", now=self.ad_epoch + now, rng=self.eval_rng)
        return value if isinstance(value, str) else None

    def _batch_name(self: Schedd, job: Job, now: float) -> dict[str, str]:
        """The submit event's JobBatchName note, when the job has one."""
        if "JobBatchName" not in job.texts and "JobBatchName" not in job.base.texts:
            return {}
        name = job.ad.eval("JobBatchName", now=self.ad_epoch + now, rng=self.eval_rng)
        return {"batch_name": name} if isinstance(name, str) else {}

    def _hold(
        self: Schedd, job: Job, reason: str, code: int, now: float, out: Outbox, subcode: int = 0
    ) -> None:
        self._stop(job, now, out, evicted=True)
        job.set("HoldReason", reason)
        job.set("HoldReasonCode", code)
        job.set("HoldReasonSubCode", subcode)
        holds = job.number("NumHolds", now=self.ad_epoch + now, rng=self.eval_rng)
        job.set("NumHolds", int(holds) + 1)  # qmgmt counts every hold
        self._transition(job, HELD, now)
        self._emit("hold", job=job.job_id, submitter=job.submitter, code=code, reason=reason)
        self._log(job, ulog.HELD, now, reason=reason, code=code, subcode=subcode)

    def _release_hold(self: Schedd, job: Job, reason: str, now: float) -> None:
        for name in ("HoldReason", "HoldReasonCode", "HoldReasonSubCode"):
            value = job.ad.lookup(name)
            if value is not None:
                job.set("Last" + name, value)
                job.delete(name)
        job.set("ReleaseReason", reason)
        self._transition(job, IDLE, now)
        self._emit("release_hold", job=job.job_id, submitter=job.submitter, reason=reason)
        self._log(job, ulog.RELEASED, now, reason=reason)
        unsure = next((u for u in self._unsure.values() if u.job is job), None)
        if unsure is not None:  # it may still run where its activation went unanswered
            self._idle.discard((job.submitter, job.autocluster), job.cluster, job.proc)
            job.claim = unsure.claim
            self._reserved += 1

    def _stop(
        self: Schedd, job: Job, now: float, out: Outbox, *, evicted: bool
    ) -> HeldClaim | None:
        """Take ``job`` off its claim: account its run, release (or disown) the claim."""
        claim = job.claim
        if claim is None:
            return None
        job.claim = None
        claim.job = None
        if job.status == IDLE:
            self._reserved -= 1
        if claim.state == "active":
            self._account_run(job, claim.activated, now)
            if evicted:
                self._left_slot(job)
            self._drop_claim(claim, out)
        elif claim.state == "waiting":
            self._drop_claim(claim, out)  # gives the preempted job its slot back
        # requesting/activating: the startd's answer finds no job and releases the claim
        return claim

    def _account_run(self: Schedd, job: Job, start: float, end: float) -> None:
        wall = max(0.0, end - start)
        before = job.number("RemoteWallClockTime", now=self.ad_epoch + end, rng=self.eval_rng)
        job.set("RemoteWallClockTime", before + wall)
        if CHECKPOINT in job.texts:  # counted now: in the same transaction
            job.delete(CHECKPOINT)

    def _credit_checkpoint(self: Schedd, job: Job, now: float) -> None:
        at, rng = self.ad_epoch + now, self.eval_rng
        total = credited(
            job.number("RemoteWallClockTime", now=at, rng=rng),
            job.number(CHECKPOINT, now=at, rng=rng),
        )
        job.set("RemoteWallClockTime", total)
        job.delete(CHECKPOINT)
        self._touch(job)

    def wall_clock_round(self: Schedd, now: float) -> None:
        """HTCondor's CkptWallClock, when its round is due (every WALL_CLOCK_CKPT_INTERVAL
        from the start): each running job's run so far, in the queue (wallclock.py)."""
        if self.wallclock_next is None or now < self.wallclock_next:
            return
        self.wallclock_next = now + self.wallclock_every
        for claim in self.claims.values():
            job = claim.job
            if claim.state == "active" and job is not None and job.status == RUNNING:
                ckpt = checkpoint(claim.activated, now, self.wallclock_every)
                if ckpt is not None:
                    job.set(CHECKPOINT, ckpt)
                    self._touch(job)
        if self._batch:
            self._commit(now)

    def _left_slot(self: Schedd, job: Job) -> None:
        host = job.ad.lookup("RemoteHost")
        if host is not None:
            job.set("LastRemoteHost", host)
            job.delete("RemoteHost")

    def _drop_claim(self: Schedd, claim: HeldClaim, out: Outbox, *, release: bool = True) -> None:
        """Forget a claim here and (``release``) tell its startd to release it; a claim
        the startd closed itself needs no release."""
        self.claims.pop(claim.claim_id, None)
        self._batch.claims_del.add(claim.claim_id)
        if release:
            out.releases[claim.startd_address].append(claim.claim_id)
        self._emit("claim_dropped", slot=claim.slot_name, claim=redact(claim.claim_id))

    def _unreserve(self: Schedd, job: Job) -> None:
        if job.claim is not None and job.status == IDLE:
            self._reserved -= 1
        job.claim = None
        if job.status == IDLE:
            self._idle.add((job.submitter, job.autocluster), job.prio, job.cluster, job.proc)


def _applies(action: str, status: int) -> bool:
    """Whether a constraint or cluster selects a job in ``status`` for ``action``."""
    if action == "remove":
        return status in (IDLE, RUNNING, HELD)
    if action == "hold":
        return status in (IDLE, RUNNING)
    if action == "vacate":
        return status == RUNNING
    return status == HELD


def _refusal(action: str, job: Job) -> tuple[str, int]:
    """HTCondor's per-job error text when ``action`` does not apply (else '') and its
    action_result_t (the schedd's actOnJobs: a removed job cannot be held, "permission
    denied")."""
    jid = job.job_id
    if action == "remove":
        if job.status == REMOVED:
            return f"Job {jid} already marked for removal", AR_ALREADY_DONE
        return "", AR_SUCCESS
    if action == "hold":
        if job.status == HELD:
            return f"Job {jid} already held", AR_ALREADY_DONE
        if job.status == REMOVED:
            return f"Job {jid} already marked for removal", AR_PERMISSION_DENIED
        return "", AR_SUCCESS
    if action == "vacate":
        if job.status != RUNNING:
            return f"Job {jid} not running to be vacated", AR_BAD_STATUS
        return "", AR_SUCCESS
    if job.status != HELD:
        return f"Job {jid} not held to be released", AR_BAD_STATUS
    return "", AR_SUCCESS
