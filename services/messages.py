"""The messages daemons send each other, as core records (the kernel delivers these as
they are; the live pump turns each into its protobuf through one codec per type).

Each type is named for the daemon that RECEIVES it (``Startd...`` goes to a startd,
``Schedd...`` to a schedd), so a record's name says which side it is on. A request
carries ``corr``, the sender's id for the conversation; its reply carries the same
``corr`` back, and an :class:`~services.contract.Undeliverable` carries the request
itself, so a sender keeps no copy of what it sent. A corr id is the sender's own
business: put in it what a late reply must be checked against (a cycle number, a round).

Records inside (``ClaimRequest``, ``MatchNotice``, ``JobExitRecord``, ...) are the cores'
own; a job or slot ad in a message is a copy made at sending, as bytes on a wire would be.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .principals import Role

if TYPE_CHECKING:
    from .classad import ClassAd
    from .collector.collector import CollectorUpdate
    from .collector.store import CollectorSnapshot
    from .schedd.records import (
        ActivationOutcome,
        ActivationRequest,
        ClaimOutcome,
        ClaimRequest,
        MatchNotice,
        RejectionNotice,
    )
    from .startd.grants import JobExitRecord

# ------------------------------------------------------------------ to the collector


@dataclass(frozen=True, slots=True)
class CollectorAdvertise:
    """Ads to store or invalidate (Collector.Advertise)."""

    corr: str
    updates: list[CollectorUpdate]


@dataclass(frozen=True, slots=True)
class CollectorQuery:
    """Ads of one type matching a constraint (Collector.Query); ``projection`` empty: all."""

    corr: str
    ad_type: str
    constraint: str = ""
    projection: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class CollectorSnapshotRequest:
    """The negotiator's slot ads, whole or since ``since`` (Collector.Snapshot)."""

    corr: str
    since: tuple[str, int] | None = None  # (store epoch, sequence) of the last snapshot
    columns: tuple[str, ...] = ()
    constraint: str = ""
    projection: tuple[str, ...] = ()


# ------------------------------------------------------------------ from the collector


@dataclass(frozen=True, slots=True)
class AdvertiseAck:
    corr: str
    accepted: int
    errors: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class QueryReply:
    corr: str
    ads: list[ClassAd] = field(default_factory=list)
    error: str = ""  # a refused query: why (the constraint did not parse, ...)


@dataclass(frozen=True, slots=True)
class SnapshotReply:
    corr: str
    snapshot: CollectorSnapshot


# ------------------------------------------------------------------ to the negotiator


@dataclass(frozen=True, slots=True)
class NegotiatorReschedule:
    """Negotiate soon (condor_reschedule; a schedd after its ads)."""

    corr: str
    schedd_name: str = ""


@dataclass(frozen=True, slots=True)
class RescheduleAck:
    corr: str
    next_cycle: float


@dataclass(frozen=True, slots=True)
class NegotiatorUserPrio:
    """condor_userprio: read the accountant ("" action) or change one record (ADMIN)."""

    corr: str
    action: str = ""  # setfactor, setprio, setaccum, setbegin, setlast, resetusage, ...
    name: str = ""  # user@domain (delete and resetall take none)
    value: float = 0.0


@dataclass(frozen=True, slots=True)
class UserPrioReply:
    corr: str
    now: float
    ads: list[ClassAd] = field(default_factory=list)  # the Accounting ads after the change


@dataclass(frozen=True, slots=True)
class NegotiatorResourceRequests:
    """A schedd's answer to :class:`ScheddResourceRequestsRequest`."""

    corr: str
    schedd_name: str
    ads: list[ClassAd]


@dataclass(frozen=True, slots=True)
class MatchesAck:
    """A schedd took ``received`` matches of one :class:`ScheddMatches` message."""

    corr: str
    received: int


# ------------------------------------------------------------------ to a schedd


@dataclass(frozen=True, slots=True)
class ScheddResourceRequestsRequest:
    corr: str
    schedd_name: str
    submitter: str = ""  # empty: every submitter of this schedd


@dataclass(frozen=True, slots=True)
class ScheddMatches:
    """One message of a cycle's matches (and, in a schedd's first, its rejections)."""

    corr: str
    schedd_name: str
    cycle: int
    matches: list[MatchNotice]
    rejections: list[RejectionNotice] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class ScheddClaimResults:
    """A startd's answers to :class:`StartdRequestClaims`, in request order."""

    corr: str
    schedd_name: str
    outcomes: list[ClaimOutcome | None]  # None: an answer the schedd cannot use


@dataclass(frozen=True, slots=True)
class ScheddActivationResults:
    corr: str
    schedd_name: str
    outcomes: list[ActivationOutcome]


@dataclass(frozen=True, slots=True)
class ScheddReleaseResults:
    corr: str
    schedd_name: str
    claim_ids: list[str]


@dataclass(frozen=True, slots=True)
class ScheddKeepAliveAnswer:
    corr: str
    schedd_name: str
    claim_ids: list[str]  # the ids renewed
    unknown: list[str]  # ids the startd does not hold


@dataclass(frozen=True, slots=True)
class ScheddJobsExited:
    """A startd's job ends for one schedd (Schedd.JobsExited)."""

    corr: str
    schedd_name: str
    exits: list[JobExitRecord]


# ------------------------------------------------------------------ to a startd


@dataclass(frozen=True, slots=True)
class StartdRequestClaims:
    corr: str
    schedd_name: str
    schedd_address: str
    claims: list[ClaimRequest]


@dataclass(frozen=True, slots=True)
class StartdActivateClaims:
    corr: str
    schedd_name: str
    activations: list[ActivationRequest]


@dataclass(frozen=True, slots=True)
class StartdReleaseClaims:
    corr: str
    schedd_name: str
    claim_ids: list[str]


@dataclass(frozen=True, slots=True)
class StartdKeepAlive:
    corr: str
    schedd_name: str
    claim_ids: list[str]


@dataclass(frozen=True, slots=True)
class StartdMatchInfo:
    """NEGOTIATOR_INFORM_STARTD: these claims were matched (one-way)."""

    corr: str
    claim_ids: list[str]


@dataclass(frozen=True, slots=True)
class JobsExitedAck:
    """A schedd took ``accepted`` of a :class:`ScheddJobsExited` message's exits."""

    corr: str
    accepted: int


# The message types that answer a request: the live pump sends these as the reply of the
# call that carried the request with the same ``corr``, not as calls of their own.
REPLIES: tuple[type[Any], ...] = (
    AdvertiseAck,
    QueryReply,
    SnapshotReply,
    RescheduleAck,
    UserPrioReply,
    NegotiatorResourceRequests,
    MatchesAck,
    ScheddClaimResults,
    ScheddActivationResults,
    ScheddReleaseResults,
    ScheddKeepAliveAnswer,
    JobsExitedAck,
)

_ANYONE = frozenset(Role)
_DAEMONS = frozenset({Role.DAEMON, Role.ADMIN})
_NEGOTIATOR = frozenset({Role.NEGOTIATOR, Role.ADMIN})

# Who may send each request: the role its sender's token must hold (HTCondor's
# authorization levels on each command). The live servers' role tables read their
# daemon-to-daemon methods from here, and the kernel checks every message against it.
REQUEST_ROLES: dict[type[Any], frozenset[Role]] = {
    CollectorAdvertise: frozenset({Role.DAEMON, Role.NEGOTIATOR, Role.ADMIN}),
    CollectorQuery: _ANYONE,
    CollectorSnapshotRequest: _NEGOTIATOR,
    NegotiatorReschedule: frozenset({Role.DAEMON, Role.SUBMIT, Role.ADMIN}),
    NegotiatorUserPrio: frozenset({Role.READ, Role.SUBMIT, Role.ADMIN, Role.DAEMON}),
    ScheddResourceRequestsRequest: _NEGOTIATOR,
    ScheddMatches: _NEGOTIATOR,
    ScheddJobsExited: _DAEMONS,
    StartdRequestClaims: _DAEMONS,
    StartdActivateClaims: _DAEMONS,
    StartdReleaseClaims: _DAEMONS,
    StartdKeepAlive: _DAEMONS,
    StartdMatchInfo: _DAEMONS,
}

# The negotiator holds two tokens: NEGOTIATOR for its cycle's calls, DAEMON for these (its
# ads, NEGOTIATOR_INFORM_STARTD). The live negotiator picks its channel by it; the kernel
# presents the role it picks.
_NEGOTIATOR_SENDS_AS_DAEMON = frozenset({CollectorAdvertise, StartdMatchInfo})


def sending_role(role: Role, msg_type: type[Any]) -> Role:
    """The role of the token a daemon holding ``role`` sends a ``msg_type`` with."""
    if role == Role.NEGOTIATOR and msg_type in _NEGOTIATOR_SENDS_AS_DAEMON:
        return Role.DAEMON
    return role
