"""Preemption on a machine: the preempting claim id a claimed slot offers, a claim that
takes a slot from the claim it names (the job retiring first, or evicted), and the
evicted jobs and taken-over claims reported after.

A mixin of :class:`.machine.Machine`.
"""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING

from ..classad import ClassAd
from .grants import ClaimGrant, ClaimRefusedError, JobExitRecord
from .slots import Slot, current_ad

if TYPE_CHECKING:
    from .machine import Machine


class Preempting:
    """Preempting claims (mixed into ``Machine``)."""

    # --- preemption -------------------------------------------------------------------

    def _offer_preempt_id(self: Machine, slot: Slot) -> None:
        """A claimed slot offers a fresh id for a preempting claim request."""
        self._withdraw_preempt_id(slot)
        slot.preempt_id = self._new_id()
        self._offers[slot.preempt_id] = slot
        slot.touch()

    def _withdraw_preempt_id(self: Machine, slot: Slot) -> None:
        if slot.preempt_id:
            self._offers.pop(slot.preempt_id, None)
            slot.preempt_id = ""
            slot.touch()

    def _preempt(
        self: Machine,
        slot: Slot,
        claim_id: str,
        job_ad: ClassAd,
        schedd_name: str,
        schedd_address: str,
        owner: str,
        now: float,
    ) -> ClaimGrant:
        """A claim request with the slot's preempting id: evict the current claim's job
        (now, or when its retirement ends) and give the slot to the new claim."""
        old = slot.claim
        assert old is not None
        ad = current_ad(slot, self.info, now, self._sequence)
        self._check_match(slot, ad, job_ad, now)
        new = self._new_claim(claim_id, ad, job_ad, schedd_name, schedd_address, owner, now)
        if new.rank < old.rank:
            raise ClaimRefusedError(
                f"{slot.name}: RANK of job {self._job_id(job_ad, now)} is {new.rank:g}, below the "
                f"current claim's {old.rank:g}: not preempting"
            )
        new.job_ad = job_ad
        self._withdraw_preempt_id(slot)
        self._held[claim_id] = slot
        slot.preempting = new
        job = old.job
        end = min(job.end, job.start + job.retirement) if job is not None else now
        self._changed()
        if end <= now:
            self._give_to_preemptor(slot, now, evict=True)
            return ClaimGrant(
                claim_id, slot.name, self._ad_copy(slot, now), now, preempts=old.claim_id
            )
        slot.retire_end = end
        slot.set_state("Claimed", "Retiring", now)
        self._tiebreak += 1
        heapq.heappush(self._ends, (end, self._tiebreak, old.claim_id))
        return ClaimGrant(claim_id, slot.name, self._ad_copy(slot, now), end, preempts=old.claim_id)

    def _give_to_preemptor(
        self: Machine, slot: Slot, now: float, *, evict: bool, reported: bool = False
    ) -> None:
        """The slot's current claim ends (its job evicted if ``evict``); the preempting
        claim takes the slot, Claimed/Idle. The end of the current claim is reported
        with its evicted job, or alone, unless ``reported`` (its schedd released it; its
        job's exit says it closed)."""
        old, new = slot.claim, slot.preempting
        assert old is not None and new is not None
        job = old.job
        why = "startd RANK" if new.rank > old.rank else "user priority"
        reason = f"preempted by {new.owner} ({why})"
        if job is None and not reported:
            self._taken_over.append((slot.name, old.claim_id, reason))
        if evict and job is not None:
            self._evicted.append(
                JobExitRecord(
                    claim_id=old.claim_id,
                    cluster=job.cluster,
                    proc=job.proc,
                    start=job.start,
                    end=now,
                    exit_code=0,
                    slot_name=slot.name,
                    schedd_name=old.schedd_name,
                    schedd_address=old.schedd_address,
                    reason=reason,
                    claim_closing=True,
                    closed_by=reason,
                )
            )
        self._held.pop(old.claim_id, None)
        new.claimed_at = now
        slot.claim, slot.preempting, slot.retire_end = new, None, 0.0
        slot.claim_id = new.claim_id
        slot.set_state("Claimed", "Idle", now)
        self._offer_preempt_id(slot)
        self._changed()

    def take_taken_over(self: Machine) -> list[tuple[str, str, str]]:
        """Claims with no job that a preempting claim ended since the last call: (slot
        name, claim id, why)."""
        out, self._taken_over = self._taken_over, []
        return out

    def take_evicted(self: Machine) -> list[JobExitRecord]:
        """Jobs evicted by a preemption since the last call (the shell reports them)."""
        out, self._evicted = self._evicted, []
        return out
