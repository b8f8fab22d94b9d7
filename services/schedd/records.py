"""The schedd core's records: a job and its cluster's shared attributes, a claim it
holds, what it exchanges with the negotiator and startds (match notices, claim and
activation requests and outcomes, job exits, rejections), the outcome of a user's
action, the Outbox of sends, and the errors it refuses requests with.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..classad import ClassAd, unparse
from ..classad.ad import to_expr
from ..classad.tree import Expr
from ..jobstates import IDLE
from .policy import has_policy

# HTCondor's action_result_t (dc_schedd.h): the per-job outcomes of ACT_ON_JOBS
AR_ERROR, AR_SUCCESS, AR_NOT_FOUND, AR_BAD_STATUS, AR_ALREADY_DONE, AR_PERMISSION_DENIED = range(6)


class ScheddError(ValueError):
    """A request the schedd refuses (the message names the problem); nothing changed."""


class ConstraintError(ScheddError):
    """A constraint or projection that is not a valid ClassAd expression."""


class CostlyConstraint(ConstraintError):
    """A constraint that ran past its evaluation budget; the request did nothing."""


# --------------------------------------------------------------------------- records


@dataclass(eq=False)
class ClusterBase:
    """A submit's shared attributes (HTCondor's cluster ad); never changed after submit."""

    cluster: int
    texts: dict[str, str]
    ad: ClassAd
    parse: Callable[[str], Expr]
    # whether the cluster's attributes give its jobs a policy (see .policy)
    policed: bool = field(init=False)

    def __post_init__(self) -> None:
        self.policed = has_policy(self.texts)


@dataclass(eq=False)
class Job:
    """A job in the queue.

    ``texts`` holds the job's own attributes over its cluster's (what the queue stores
    for it; None: a cluster attribute the job deleted). The ad is built from both on
    first use, so queueing 10,000 alike jobs builds no ad per job.
    """

    cluster: int
    proc: int
    base: ClusterBase
    texts: dict[str, str | None]
    submitter: str = ""
    autocluster: int = 0
    autocluster_attrs: str = ""
    touched: frozenset[str] = frozenset()  # names the autocluster signature may read
    prio: int = 0
    weight: float = 1.0  # RequestCpus: the job's slot weight for Weighted*Jobs
    status: int = IDLE
    claim: HeldClaim | None = None
    _ad: ClassAd | None = None

    @property
    def key(self) -> tuple[int, int]:
        return self.cluster, self.proc

    @property
    def job_id(self) -> str:
        return f"{self.cluster}.{self.proc}"

    @property
    def ad(self) -> ClassAd:
        ad = self._ad
        if ad is None:
            ad = self.base.ad.copy()
            for name, text in self.texts.items():
                if text is None:
                    if name in ad:
                        del ad[name]
                else:
                    ad[name] = self.base.parse(text)
            if self.autocluster:
                ad["AutoClusterId"] = self.autocluster
                ad["AutoClusterAttrs"] = self.autocluster_attrs
            self._ad = ad
        return ad

    def full_texts(self) -> dict[str, str]:
        """The whole ad as attribute texts (what history stores)."""
        out = dict(self.base.texts)
        for name, text in self.texts.items():
            if text is None:
                out.pop(name, None)
            else:
                out[name] = text
        return out

    def set(self, name: str, value: Any) -> None:
        if type(value) is int:  # counters and times: their text without the unparser
            self.ad[name] = value
            self.texts[name] = str(value)
            return
        expr = to_expr(value)
        self.ad[name] = expr
        self.texts[name] = unparse(expr)

    def delete(self, name: str) -> None:
        ad = self.ad
        if name in ad:
            del ad[name]
        if name in self.base.texts:
            self.texts[name] = None
        else:
            self.texts.pop(name, None)

    def number(self, name: str, default: float = 0.0, *, now: float, rng: random.Random) -> float:
        """The attribute's number at date ``now`` (``default`` when not a number)."""
        v = self.ad.get_value(name, default, now=now, rng=rng)
        return v if isinstance(v, (int, float)) and not isinstance(v, bool) else default


@dataclass(eq=False)
class HeldClaim:
    """A claim this schedd holds (or is acquiring) on one slot.

    States: ``requesting`` (RequestClaims in flight), ``waiting`` (a preempting claim
    whose slot's job is still retiring, until ``ready``), ``activating`` (ActivateClaims in
    flight), ``active`` (a job runs on it), ``idle`` (claimed, no job: the point where claim
    reuse will pick the next job; see ``Schedd._claim_finished``). ``job`` is None when the
    job was held or removed while a request was in flight: the answer then releases it.
    """

    claim_id: str
    startd_address: str
    slot_name: str
    submitter: str
    job: Job | None
    state: str
    since: float
    slot_ad: ClassAd | None = None
    activated: float = 0.0
    jobs_run: int = 0  # for CLAIM_WORKLIFE-style reuse decisions later
    ready: float = 0.0  # waiting: when the startd will have evicted the slot's job
    alive_every: float = 0.0  # keepalive period from the job it was claimed for (0: not yet)
    lease: float = 0.0  # the claim's lease, as its startd keeps it (0: not yet known)
    heard: float = 0.0  # when its startd last answered for it (claim, activation, keepalive)
    reconnecting: bool = False  # loaded at a restart: not yet confirmed by its startd


@dataclass(frozen=True)
class MatchNotice:
    """One match from the negotiator (schedd.proto Match)."""

    submitter: str
    autocluster_id: int
    slot_name: str
    claim_id: str
    startd_address: str
    slot_ad: ClassAd | None = None


@dataclass(frozen=True)
class ClaimRequest:
    """A claim to request from a startd (startd.proto ClaimRequest, less the schedd's ids)."""

    claim_id: str
    slot_name: str
    job_ad: ClassAd
    owner: str  # RemoteOwner: the submitter name
    job_id: str
    leftovers: bool = False  # ask a p-slot for its leftovers (CLAIM_PARTITIONABLE_LEFTOVERS)


@dataclass(frozen=True)
class ClaimOutcome:
    """A startd's answer to one ClaimRequest, paired with the id that was requested."""

    requested_claim_id: str
    ok: bool
    error: str = ""
    claim_id: str = ""  # the claim now held (a new id for a carved dynamic slot)
    slot_name: str = ""
    slot_ad: ClassAd | None = None
    ready_time: float = 0.0  # a preempting claim: activate it at this pool time
    leftover_claim_id: str = ""  # a carved p-slot's leftovers: its new claim id
    leftover_slot_ad: ClassAd | None = None  # and its ad


@dataclass(frozen=True)
class ActivationRequest:
    claim_id: str
    job_ad: ClassAd
    job_id: str


@dataclass(frozen=True)
class ActivationOutcome:
    """A startd's answer to one activation; ``answered`` False when none came (the call
    failed or timed out): the job may then be running there."""

    claim_id: str
    ok: bool
    error: str = ""
    start_time: float = 0.0
    answered: bool = True


@dataclass
class UnsureActivation:
    """A claim whose activation went unanswered: its job may be running at the startd.
    The job stays reserved (it runs nowhere else) until the startd answers a release of
    the claim, or until the claim's lease has run out since the schedd stopped renewing
    it (the startd has then ended the job itself), as HTCondor's shadow waits out the
    job lease before a disconnected job runs elsewhere."""

    claim: HeldClaim
    job: Job
    until: float  # give up waiting: the startd's lease on the claim is over by then
    again: float  # when to send the release again (it may have been lost)


@dataclass(frozen=True)
class JobExit:
    """A startd's report that a job ended; ``reason`` empty for a normal exit."""

    claim_id: str
    cluster: int
    proc: int
    start_time: float
    end_time: float
    exit_code: int = 0
    slot_name: str = ""
    reason: str = ""
    claim_closing: bool = False  # the startd ended the claim with the job (CLAIM_WORKLIFE)


@dataclass(frozen=True)
class RejectionNotice:
    """The negotiator could not serve a request (schedd.proto Rejection)."""

    cluster: int
    proc: int
    reason: str
    time: float


@dataclass(frozen=True)
class ActResult:
    """One job's outcome; ``code`` is HTCondor's action_result_t (AR_SUCCESS, ...)."""

    job_id: str
    ok: bool
    error: str = ""
    code: int = AR_SUCCESS


@dataclass
class Outbox:
    """Messages for the shell to send, grouped by startd address (one RPC per address)."""

    claims: dict[str, list[ClaimRequest]] = field(default_factory=lambda: defaultdict(list))
    activations: dict[str, list[ActivationRequest]] = field(
        default_factory=lambda: defaultdict(list)
    )
    releases: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    accepted: int = 0  # matches turned into claim requests
    dropped: int = 0  # matches not used (no idle job left, duplicate, limit)

    def __bool__(self) -> bool:
        return bool(self.claims or self.activations or self.releases)

    def extend(self, other: Outbox) -> None:
        """Add ``other``'s messages after this one's (still one RPC per address)."""
        for mine, theirs in (
            (self.claims, other.claims),
            (self.activations, other.activations),
            (self.releases, other.releases),
        ):
            for address, items in theirs.items():
                mine[address].extend(items)
        self.accepted += other.accepted
        self.dropped += other.dropped


def machine_of(slot_name: str) -> str:
    """The startd's name of a slot ``slot1_1@host``: ``host``."""
    return slot_name.rpartition("@")[2] or slot_name
