"""Claim leases on a machine: the claims it holds, their lease deadlines and keepalives,
matches that were never claimed (MATCH_TIMEOUT), and the tick that expires them.

A mixin of :class:`.machine.Machine`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .grants import JobExitRecord, LeaseExpiry, Tick
from .slots import SlotClaim

if TYPE_CHECKING:
    from .machine import Machine


class ClaimLeases:
    """Leases, keepalives and match timeouts (mixed into ``Machine``)."""

    # --- leases -----------------------------------------------------------------------

    def _held_claims(self: Machine) -> list[SlotClaim]:
        out = []
        for cid, slot in self._held.items():
            if slot.preempting is not None and slot.preempting.claim_id == cid:
                out.append(slot.preempting)
            elif slot.claim is not None:
                out.append(slot.claim)
        return out

    def next_lease_deadline(self: Machine) -> float | None:
        """The earliest time a held claim's lease runs out, or None with no claims."""
        return min((c.last_heard + c.lease_duration for c in self._held_claims()), default=None)

    def next_wakeup(self: Machine) -> float | None:
        """When :meth:`tick` next has something to do: a job end, an eviction, a lease
        deadline or a match timeout (None: nothing is due until a request comes)."""
        times = [t for t in (self.next_event_time(), self.next_lease_deadline()) if t is not None]
        times += [s.matched_until for s in self._top if s.state == "Matched"]
        return min(times, default=None)

    def match_info(self: Machine, claim_ids: list[str], now: float) -> list[str]:
        """The negotiator matched these ids (NEGOTIATOR_INFORM_STARTD): each one that is an
        Unclaimed static slot's current id puts that slot in Matched until it is claimed
        or MATCH_TIMEOUT passes (claim.cpp start_match_timer). Returns the ids refused
        (unknown, claimed, a preempting id, or a partitionable slot's)."""
        refused = []
        for cid in claim_ids:
            slot = self._offers.get(cid)
            if (
                slot is None
                or slot.claim_id != cid
                or slot.state != "Unclaimed"
                or slot.kind != "Static"
            ):
                refused.append(cid)
                continue
            slot.set_state("Matched", "Idle", now)
            slot.matched_until = now + self._match_timeout
            self._changed()
        return refused

    def _match_timeouts(self: Machine, now: float) -> list[str]:
        """Matched slots never claimed within MATCH_TIMEOUT: Unclaimed again, their claim
        id unchanged (claim.cpp match_timed_out)."""
        out = []
        for slot in self._top:
            if slot.state == "Matched" and slot.matched_until <= now:
                slot.set_state("Unclaimed", "Idle", slot.matched_until)
                slot.matched_until = 0.0
                out.append(slot.name)
        if out:
            self._changed()
        return out

    def expire_leases(self: Machine, now: float) -> list[LeaseExpiry]:
        """End every claim whose lease ran out by ``now``, in deadline order (each at its
        deadline, so slot times are accounted to the exact moment)."""
        due = sorted(
            (c.last_heard + c.lease_duration, c.claim_id, c)
            for c in self._held_claims()
            if c.last_heard + c.lease_duration <= now
        )
        out = []
        for deadline, cid, claim in due:
            if cid not in self._held:  # ended with an earlier one (its preemption partner)
                continue
            rel = self.release(cid, deadline)
            out.append(
                LeaseExpiry(
                    cid,
                    rel.slot_name,
                    claim.schedd_name,
                    claim.last_heard,
                    claim.lease_duration,
                    rel.killed_job,
                    rel.slot_ad,
                    self._alive_interval,
                )
            )
        return out

    def tick(self: Machine, now: float) -> Tick:
        """Everything due by ``now``, in time order, however long since the last tick (a
        paused startd catches up in one): a claim whose lease ran out ends at its
        deadline, its job killed (HTCondor's startd kills the starter when the claim
        lease expires), so a job planned to end after that never exits; a job that ends
        no later than its lease deadline exits normally."""
        exits: list[JobExitRecord] = []
        expired: list[LeaseExpiry] = []
        while (deadline := self.next_lease_deadline()) is not None and deadline <= now:
            exits += self.advance(deadline)  # what ended by then, before the lease
            ended = self.expire_leases(deadline)
            if not ended:  # every claim due by ``deadline`` ends in expire_leases
                break
            expired += ended
        exits += self.advance(now)
        return Tick(exits, expired, self._match_timeouts(now))

    def keepalive(self: Machine, claim_ids: list[str], now: float) -> list[str]:
        """Record that the schedd was heard from; returns the ids this machine lacks."""
        unknown = []
        for cid in claim_ids:
            slot = self._held.get(cid)
            if slot is None or slot.claim is None:
                unknown.append(cid)
            elif slot.preempting is not None and slot.preempting.claim_id == cid:
                slot.preempting.last_heard = now
            else:
                slot.claim.last_heard = now
        return unknown
