"""What a machine answers and reports: a claim or an activation granted, a release, a
job's exit record, a lease that expired, a tick's outcome; and the errors it refuses a
request with.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..classad import ClassAd


class StartdError(ValueError):
    """A request the startd refuses; the message names the problem. Nothing changed."""


class UnknownClaimError(StartdError):
    """A claim id this machine does not hold or offer."""


class ClaimRefusedError(StartdError):
    """A valid id, but the slot will not take this claim or job now."""


class InvalidJobError(StartdError):
    """The job ad lacks what the startd needs (ClusterId, MockDuration, requests)."""


@dataclass(frozen=True)
class ClaimGrant:
    claim_id: str  # the claim now held (a new id for a carved dynamic slot)
    slot_name: str
    slot_ad: ClassAd
    ready: float = 0.0  # a preempting claim: when the retiring job will have left
    preempts: str = ""  # a preempting claim: the claim it takes the slot from
    leftover_claim_id: str = ""  # the p-slot's fresh Capability, when leftovers were sent
    leftover_ad: ClassAd | None = None  # the p-slot after the carve


@dataclass(frozen=True)
class ActivationGrant:
    claim_id: str
    slot_name: str
    job_id: str
    start: float
    end: float
    cpus: int = 1  # the slot's Cpus: what the job keeps busy (for loading-factor measures)


@dataclass(frozen=True)
class Release:
    claim_id: str
    slot_name: str
    killed_job: str | None  # "12.0" when a running job was killed
    slot_ad: ClassAd  # the static slot, or the partitionable parent that got resources back


@dataclass(frozen=True)
class JobExitRecord:
    claim_id: str
    cluster: int
    proc: int
    start: float
    end: float
    exit_code: int
    slot_name: str
    schedd_name: str
    schedd_address: str
    reason: str = ""
    # the claim ended with its job (CLAIM_WORKLIFE passed, or a preempting claim took
    # the slot): the slot is already released; ``closed_by`` says why, when not worklife
    claim_closing: bool = False
    closed_by: str = ""

    @property
    def job_id(self) -> str:
        return f"{self.cluster}.{self.proc}"


@dataclass(frozen=True)
class LeaseExpiry:
    """A claim ended because its schedd was not heard from for a whole lease."""

    claim_id: str
    slot_name: str
    schedd_name: str
    last_heard: float
    lease_duration: float
    killed_job: str | None  # "12.0" when a running job was killed
    slot_ad: ClassAd  # as in Release: the static slot or the parent that got resources back
    alive_interval: float  # the startd's ALIVE_INTERVAL

    @property
    def deadline(self) -> float:
        return self.last_heard + self.lease_duration

    @property
    def keepalive_interval(self) -> float:
        """How often the holder was to send keepalives: min(ALIVE_INTERVAL, lease / 3),
        at least 10 s (the schedd's rule)."""
        return max(10.0, min(self.alive_interval, self.lease_duration / 3))


@dataclass(frozen=True)
class Tick:
    """What :meth:`Machine.tick` did: jobs that ended (or were evicted) and leases that ran out."""

    exits: list[JobExitRecord]
    expired: list[LeaseExpiry]
    unmatched: list[str] = field(default_factory=list)  # slots whose match timed out
