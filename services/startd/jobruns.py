"""Running jobs on claims: activation (MaxJobRetirementTime, concurrency limits), the
job's simulated run and its exit, CLAIM_WORKLIFE, and releasing a claim (during a
preemption too).

A mixin of :class:`.machine.Machine`.
"""

from __future__ import annotations

import heapq
import math
import random
from typing import TYPE_CHECKING

from ..claimid import redact
from ..classad import ClassAd, evaluate
from .claiming import concurrency_limits_of
from .grants import ActivationGrant, ClaimRefusedError, InvalidJobError, JobExitRecord, Release
from .slots import RunningJob, Slot, SlotClaim, current_ad, eval_number

if TYPE_CHECKING:
    from .machine import Machine


def _retirement(
    slot: Slot, slot_ad: ClassAd, job_ad: ClassAd, now: float, rng: random.Random
) -> float:
    """MaxJobRetirementTime for a job starting on ``slot``: the startd's, evaluated with
    the job as TARGET (not a number: 0), lowered by the job's own if smaller."""
    value = evaluate(slot.policy.max_job_retirement_time, slot_ad, job_ad, now=now, rng=rng)
    mine = float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0
    own = eval_number(job_ad, "MaxJobRetirementTime", slot_ad, now=now, rng=rng)
    if own is not None and own < mine:
        mine = float(own)
    return mine if math.isfinite(mine) else 0.0


class JobRuns:
    """Activations, job runs and releases (mixed into ``Machine``)."""

    # --- jobs -------------------------------------------------------------------------

    def activate(self: Machine, claim_id: str, job_ad: ClassAd, now: float) -> ActivationGrant:
        """Start a job on an idle claim; it runs for its MockDuration."""
        slot = self._held.get(claim_id)
        if slot is None or slot.claim is None:
            raise self._unknown(claim_id)
        if slot.claim.claim_id != claim_id:
            raise ClaimRefusedError(
                f"{slot.name} is still retiring its job until {slot.retire_end:g}: "
                f"activate the preempting claim {redact(claim_id)} then"
            )
        claim = slot.claim
        if claim.job is not None:
            raise ClaimRefusedError(
                f"claim {redact(claim_id)} on {slot.name} is already running job "
                f"{claim.job.cluster}.{claim.job.proc}"
            )
        age = now - claim.claimed_at
        if self._worklife_expired(claim, now):
            raise ClaimRefusedError(
                f"claim {redact(claim_id)} on {slot.name} is {age:g} s old: past "
                f"CLAIM_WORKLIFE ({self._worklife} s), it takes no new job"
            )
        at, rng = self.ad_epoch + now, self.eval_rng
        cluster, proc = (
            job_ad.eval("ClusterId", now=at, rng=rng),
            job_ad.eval("ProcId", now=at, rng=rng),
        )
        for attr, value in (("ClusterId", cluster), ("ProcId", proc)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InvalidJobError(f"job ad has no valid {attr} (got {value!r})")
        ad = current_ad(slot, self.info, now, self._sequence)
        duration = eval_number(job_ad, "MockDuration", ad, now=at, rng=rng)
        if duration is None or duration < 0:
            shown = job_ad.eval("MockDuration", now=at, rng=rng)
            raise InvalidJobError(
                f"job {cluster}.{proc} has no usable MockDuration (got {shown}): give "
                "+MockDuration = <pool seconds> or run /bin/sleep N"
            )
        exit_code = 0
        if job_ad.lookup("MockExitCode") is not None:
            code = eval_number(job_ad, "MockExitCode", ad, now=at, rng=rng)
            if not isinstance(code, int) or not -(2**31) <= code < 2**31:
                raise InvalidJobError(
                    f"job {cluster}.{proc} has no usable MockExitCode (got "
                    f"{job_ad.eval('MockExitCode', now=at, rng=rng)}): give an integer exit code"
                )
            exit_code = code
        self._check_match(slot, ad, job_ad, now)
        gjid = job_ad.eval("GlobalJobId", now=at, rng=rng)
        if not isinstance(gjid, str) or not gjid:
            qdate = eval_number(job_ad, "QDate", None, now=at, rng=rng) or 0
            gjid = f"{claim.schedd_name}#{cluster}.{proc}#{int(qdate)}"
        job = RunningJob(
            cluster,
            proc,
            gjid,
            start=now,
            end=now + float(duration),
            retirement=_retirement(slot, ad, job_ad, at, rng),
            exit_code=exit_code,
        )
        claim.job = job
        claim.activations += 1
        claim.concurrency_limits = concurrency_limits_of(job_ad, ad, at, rng)
        claim.last_heard = now
        slot.set_state("Claimed", "Busy", now)
        self._tiebreak += 1
        heapq.heappush(self._ends, (job.end, self._tiebreak, claim_id))
        self._changed()
        return ActivationGrant(
            claim_id, slot.name, f"{cluster}.{proc}", job.start, job.end, slot.cpus
        )

    def _worklife_expired(self: Machine, claim: SlotClaim, now: float) -> bool:
        """HTCondor's Resource::claimWorklifeExpired: after its first job, a claim older
        than CLAIM_WORKLIFE takes no more (0: one job per claim; -1: no limit)."""
        age = now - claim.claimed_at
        return claim.activations > 0 and self._worklife >= 0 and age > self._worklife

    def _live_end(self: Machine, end: float, claim_id: str) -> bool:
        slot = self._held.get(claim_id)
        if slot is None or slot.claim is None or slot.claim.claim_id != claim_id:
            return False
        job = slot.claim.job
        retiring = slot.preempting is not None and slot.retire_end == end
        return job is not None and (job.end == end or retiring)

    def next_event_time(self: Machine) -> float | None:
        """Pool time of the earliest job exit or eviction, or None when none is due."""
        while self._ends and not self._live_end(self._ends[0][0], self._ends[0][2]):
            heapq.heappop(self._ends)
        return self._ends[0][0] if self._ends else None

    def advance(self: Machine, now: float) -> list[JobExitRecord]:
        """Finish every job whose end time is <= ``now`` (their slots go Claimed/Idle, or
        to the preempting claim), and evict those whose retirement ended."""
        exits: list[JobExitRecord] = []
        while self._ends and self._ends[0][0] <= now:
            end, _, claim_id = heapq.heappop(self._ends)
            if not self._live_end(end, claim_id):
                continue
            slot = self._held[claim_id]
            claim = slot.claim
            assert claim is not None and claim.job is not None
            if slot.preempting is not None and claim.job.end > end:  # retirement is over
                self._give_to_preemptor(slot, end, evict=True)
                continue
            job, claim.job = claim.job, None
            slot.set_state("Claimed", "Idle", job.end)  # accounted to the exact exit time
            # HTCondor's deactivate_claim: a claim past its worklife is closing; the
            # startd ends it (Claimed/Idle -> Preempting -> Unclaimed at once here) and
            # tells the schedd, which neither reuses it nor releases it
            # a job that retired in time ends its claim too: the preempting one takes over
            taker = slot.preempting
            closing = taker is not None or self._worklife_expired(claim, job.end)
            closed_by = f"preempted by {taker.owner} (retired)" if taker is not None else ""
            exits.append(
                JobExitRecord(
                    claim_id=claim_id,
                    cluster=job.cluster,
                    proc=job.proc,
                    start=job.start,
                    end=job.end,
                    exit_code=job.exit_code,
                    slot_name=slot.name,
                    schedd_name=claim.schedd_name,
                    schedd_address=claim.schedd_address,
                    claim_closing=closing,
                    closed_by=closed_by,
                )
            )
            if taker is not None:  # retired in time: the new claim takes over
                self._give_to_preemptor(slot, job.end, evict=False, reported=True)
            elif closing:
                self.release(claim_id, job.end)
        if exits:
            self._changed()
        return self.take_evicted() + exits

    def release(self: Machine, claim_id: str, now: float) -> Release:
        """End a claim; a running job is killed. A dynamic slot is deleted."""
        slot = self._held.get(claim_id)
        if slot is None or slot.claim is None:
            raise self._unknown(claim_id)
        if slot.preempting is not None:
            return self._release_during_preemption(slot, claim_id, now)
        job = slot.claim.job
        killed = f"{job.cluster}.{job.proc}" if job is not None else None
        del self._held[claim_id]
        slot.claim = None
        self._withdraw_preempt_id(slot)
        self._changed()
        if slot.kind == "Dynamic":
            parent = slot.parent
            assert parent is not None
            parent.touch()
            parent.cpus += slot.cpus
            parent.memory += slot.memory
            parent.disk += slot.disk
            for res, units in slot.custom.items():
                parent.custom[res] += units
            for res, ids in slot.ids.items():  # back in the machine's order
                order = {d: k for k, d in enumerate(self._resource_ids[res])}
                parent.ids[res] = sorted([*parent.ids[res], *ids], key=order.__getitem__)
            del parent.children[slot.sub_id]
            del self._slots[slot.name]
            self._removed.append(slot.name)
            return Release(claim_id, slot.name, killed, self._ad_copy(parent, now))
        slot.claim_id = self._new_id()
        self._offers[slot.claim_id] = slot
        slot.set_state("Unclaimed", "Idle", now)
        return Release(claim_id, slot.name, killed, self._ad_copy(slot, now))

    def _release_during_preemption(self: Machine, slot: Slot, claim_id: str, now: float) -> Release:
        """The preempting claim's schedd gives up: the job stops retiring. The current
        claim's schedd lets go: its job is killed and the preempting claim takes over."""
        new = slot.preempting
        assert new is not None and slot.claim is not None
        if claim_id == new.claim_id:
            del self._held[claim_id]
            slot.preempting, slot.retire_end = None, 0.0
            slot.set_state("Claimed", "Busy", now)
            self._offer_preempt_id(slot)
            self._changed()
            return Release(claim_id, slot.name, None, self._ad_copy(slot, now))
        job = slot.claim.job
        killed = f"{job.cluster}.{job.proc}" if job is not None else None
        self._give_to_preemptor(slot, now, evict=False, reported=True)
        return Release(claim_id, slot.name, killed, self._ad_copy(slot, now))
