"""The schedd's core: jobs, their states, claims, and the ads a schedd publishes.

Pure apart from the queue object it is given: no clock (every method takes ``now``, pool
seconds), no network. Methods that must send something return an :class:`Outbox` (claim
requests, activations, releases, grouped by startd address) for the shell to send, and
what happened is queued as events (``drain_events``). Every mutating method ends with one
queue transaction, so a submit is on disk before it is acknowledged and a round of 10,000
state changes costs one commit.

Job states (JobStatus): 1 Idle, 2 Running, 3 Removed, 4 Completed, 5 Held. Transitions,
as HTCondor's schedd makes them::

    Idle --activate--> Running --exit--> Completed (leaves the queue: history)
    Idle|Running --hold--> Held --release--> Idle
    Idle|Held --rm--> Removed (leaves the queue at once)
    Running --rm--> Removed (leaves once its claim is released)
    Running --evicted (exit with a reason, claim lost)--> Idle

A claim on a partitionable slot without a consumption policy may come back with the
slot's leftovers (CLAIM_PARTITIONABLE_LEFTOVERS, default $(NEGOTIATOR_USE_SLOT_WEIGHTS)):
the schedd claims them at once for the same submitter's best idle job that matches them
(``_claim_leftovers``), and so on until nothing fits, without a negotiation cycle.

Every change sets LastJobStatus, JobStatus and EnteredCurrentStatus. A job that stops
running adds its run to RemoteWallClockTime, whatever stopped it. A matched job stays
Idle (reserved: not offered again) until its activation succeeds.

Preemption: a job evicted from its slot (its startd reports an exit with a reason) goes
back to Idle with its run accounted (RemoteWallClockTime, LastVacateTime, LastRemoteHost)
and is matched again later. A claim this schedd won by preempting may have to wait for
the slot's job to retire: the claim is ``waiting`` until its ready time, then activated
(``activate_ready``). A request the negotiator rejected sets LastRejMatchReason and
LastRejMatchTime on the job it named (schedd.cpp's ``scheduler_handleJobRejected``).
"""

from __future__ import annotations

import json
import math
import random
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..claimid import redact, sinful
from ..classad import (
    UNDEFINED,
    Budget,
    BudgetExceeded,
    ClassAd,
    ClassAdSyntaxError,
    evaluate,
    matches,
    parse_expr,
    unparse,
)
from ..classad.ad import to_expr
from ..classad.budget import PER_AD_STEPS
from ..classad.numbers import INT64_MAX, out_of_range_number
from ..classad.tree import Expr, Literal
from ..condor_version import CONDOR_PLATFORM, CONDOR_VERSION
from ..config import ConfigDict
from ..jobstates import COMPLETED, HELD, HOLD_CODE_USER, IDLE, REMOVED, RUNNING
from . import userlog as ulog
from .autocluster import Autoclusters, IdleIndex
from .cadence import AdCadence
from .jobads import JobAttrRules
from .joblog import JobLogBook, usage_rows
from .memqueue import MemoryJobQueue
from .policy import PolicyVerdict, SystemPolicy, at_exit, has_policy, periodic
from .queue import Batch, JobQueue, QueueError, StoredClaim
from .readymade import ReadyMadeJobs
from .requirements import RequirementsMemo, SubmitHost
from .submit import SubmitError, parse_submit
from .submitter import submitter_of
from .wallclock import CHECKPOINT, DEFAULT_INTERVAL, checkpoint, credited

__all__ = [
    "COMPLETED",
    "HELD",
    "IDLE",
    "REMOVED",
    "RUNNING",
    "ActResult",
    "ActivationRequest",
    "ActivationOutcome",
    "HeldClaim",
    "ClaimOutcome",
    "ClaimRequest",
    "ConstraintError",
    "Job",
    "JobExit",
    "MatchNotice",
    "Outbox",
    "RejectionNotice",
    "Schedd",
    "ScheddError",
    "ScheddKnobs",
    "submitter_of",
]

# No claim is kept alive more often than this (pool seconds), whatever its job lease: so
# a claim made now needs nothing before now + MIN_ALIVE_EVERY.
MIN_ALIVE_EVERY = 10.0

_JOB_ID = re.compile(r"(\d+)(?:\.(\d+))?\Z")
_VERBS = {"remove": "remove", "hold": "hold", "release": "release", "vacate": "vacate"}
_TOOLS = {
    "remove": "condor_rm",
    "hold": "condor_hold",
    "release": "condor_release",
    "vacate": "condor_vacate_job",
}
# HTCondor's action_result_t (dc_schedd.h): the per-job outcomes of ACT_ON_JOBS
AR_ERROR, AR_SUCCESS, AR_NOT_FOUND, AR_BAD_STATUS, AR_ALREADY_DONE, AR_PERMISSION_DENIED = range(6)
_PARSE_CACHE_LIMIT = 100_000
# the states of a claim that keepalives renew
_KEPT_ALIVE = frozenset(("active", "idle", "waiting"))
_ID_ATTRS = frozenset({"ProcId", "GlobalJobId"})
# attributes the job record caches (submitter, priority, weight, state)
_DERIVED = frozenset({"jobprio", "requestcpus", "accountinggroup", "owner", "jobstatus"})
_PLAIN_STRING = re.compile(r'"[^"\\]*"\Z')
_LONG_NUMBER = re.compile(r"\d{19}|\d[eE][+-]?\d{3}")  # may not fit 64 bits or a double


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
        expr = to_expr(value)
        self.ad[name] = expr
        # counters and times: their text without the unparser
        self.texts[name] = str(value) if type(value) is int else unparse(expr)

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


# --------------------------------------------------------------------------- the core


@dataclass(frozen=True)
class ScheddKnobs:
    """The schedd's own knobs, read once; a bad one raises ConfigError naming it (the
    spec reads them before a pool starts, so a bad one stops it there)."""

    max_jobs_running: int
    claim_leftovers: bool
    system_policy: SystemPolicy
    policy_every: int  # PERIODIC_EXPR_INTERVAL, pool seconds (0: no periodic policy)
    wallclock_every: int  # WALL_CLOCK_CKPT_INTERVAL, pool seconds (0 or less: none)

    @classmethod
    def from_config(cls, config: ConfigDict) -> ScheddKnobs:
        return cls(
            max_jobs_running=config.get_int("MAX_JOBS_RUNNING"),
            claim_leftovers=config.get_bool("CLAIM_PARTITIONABLE_LEFTOVERS"),
            system_policy=SystemPolicy.from_config(config),
            policy_every=config.get_int("PERIODIC_EXPR_INTERVAL", 60),
            wallclock_every=config.get_int("WALL_CLOCK_CKPT_INTERVAL", DEFAULT_INTERVAL),
        )


class Schedd(ReadyMadeJobs):
    """One schedd: its queue, autoclusters, claims and ads (ready-made job ads and edits:
    :mod:`.readymade`)."""

    def __init__(
        self,
        name: str,
        queue: JobQueue | MemoryJobQueue,
        config: ConfigDict,
        now: float,
        *,
        address: str = "",
        ad_epoch: int = 0,
    ) -> None:
        self.name = name
        # Unix time of pool time 0: the job and daemon ads' dates (QDate, ...) are Unix
        # times, and time() in their expressions counts from the same date
        self.ad_epoch = int(ad_epoch)
        # Machine: the host part of a "schedd@host" name, else the name (mock host names).
        self.machine = name.rpartition("@")[2] or name
        self.queue = queue
        self.config = config
        self.address = address  # MyAddress, "<host:port>"; set by the shell
        self.started = float(now)
        # what random() in the jobs' expressions draws from: the schedd's own, seeded by
        # the pool's seed (a virtual run replays its draws)
        self.eval_rng = random.Random(f"{config.seed}:{name}:random()")
        knobs = ScheddKnobs.from_config(config)
        self.max_jobs_running = knobs.max_jobs_running
        self.claim_leftovers = knobs.claim_leftovers
        self.submit_host = SubmitHost.from_config(config, name)
        self.requirements_memo = RequirementsMemo(self.submit_host)
        self.autoclusters = Autoclusters.from_config(config)
        self.jobs: dict[tuple[int, int], Job] = {}
        self.claims: dict[str, HeldClaim] = {}
        # claims set waiting (for a retiring slot), looked at by next_ready_time without
        # a walk over every claim; one that left or stopped waiting is dropped when seen
        self._waiting: dict[str, HeldClaim] = {}
        self._releasing: dict[str, Job] = {}  # claim id -> removed job leaving on release
        self._unsure: dict[str, UnsureActivation] = {}  # by claim id
        self._idle = IdleIndex()
        self._counts: Counter[tuple[str, int]] = Counter()  # (submitter, status) -> jobs
        self.left_queue: Counter[int] = Counter()  # JobStatus -> jobs gone to history
        # Submitter ads the collector has (acknowledged), and those last handed out
        self._submitters_advertised: set[str] = set()
        self._submitters_offered: set[str] = set()
        self._weights: Counter[tuple[str, int]] = Counter()  # (submitter, status) -> cpus
        self._reserved = 0  # idle jobs with a claim being acquired
        # cluster ids handed out for ready-made ads (qmgmt's NewCluster): none below this
        # is given again while this schedd runs, committed or not (as HTCondor's schedd)
        self._reserved_cluster = 0
        self._handed_out: dict[int, None] = {}  # ... and not yet queued, oldest first
        self.job_rules = JobAttrRules.from_config(config)
        self._batch = Batch()
        self._events: list[tuple[str, dict[str, Any]]] = []
        # the user log events of jobs with a log = (joblog.py), for the shell to write
        self.joblog = JobLogBook(config.get_str("DEFAULT_USERLOG_FORMAT_OPTIONS"))
        self._seqs: list[int] = []  # the numbers of self._events[: len(_seqs)], committed
        # events committed before this schedd started (a crash may have kept some that no
        # one gathered: whoever gathers reads them with events_between(seen, loaded_seq))
        self.loaded_event_seq = self.event_seq = queue.last_event_seq()
        self._parse_cache: dict[str, Expr] = {}
        self._served: dict[str, Expr] = {}  # see _stored_expr
        self._startup = Outbox()
        self._reported: set[str] = set()  # bad records already reported (history)
        self._alive_sent: dict[str, float] = {}  # startd address -> last keepalive sent
        self._reconnect_asked: set[str] = set()  # startds asked about reloaded claims
        self.alive_next: float | None = None  # next_keepalive() as the last alive_round left it
        # when the ads go to the collector, and whether a reschedule follows them
        self.ad_cadence = AdCadence.from_config(config, now)
        # job policy: the periodic expressions every PERIODIC_EXPR_INTERVAL (0: never)
        self.system_policy = knobs.system_policy
        self.policy_every = knobs.policy_every
        self.policy_next: float | None = now + self.policy_every if self.policy_every > 0 else None
        self._policed: set[tuple[int, int]] = set()  # jobs with policy attributes of their own
        # running jobs' wall clock checkpointed every WALL_CLOCK_CKPT_INTERVAL (wallclock.py)
        self.wallclock_every = knobs.wallclock_every
        self.wallclock_next = now + self.wallclock_every if self.wallclock_every > 0 else None
        self._load(now)

    # --- small helpers ------------------------------------------------------------------

    def _expr(self, text: str) -> Expr:
        if text.isdigit() and text.isascii():  # ProcId and counters: no parser, no cache
            return to_expr(int(text))
        if _PLAIN_STRING.match(text):  # GlobalJobId and the like
            return to_expr(text[1:-1])
        expr = self._parse_cache.get(text)
        if expr is None:
            if len(self._parse_cache) >= _PARSE_CACHE_LIMIT:
                self._parse_cache.clear()
            expr = self._parse_cache[text] = parse_expr(text)
        return expr

    def _record_problem(
        self, texts: Mapping[str, str | None], *, deletions: bool = False
    ) -> str | None:
        """Why a stored record cannot be served (``_stored_expr``); None when it is
        sound. Only a job's own attributes may be None (``deletions``: a cluster
        attribute it deleted)."""
        for name, text in texts.items():
            if text is None:
                if deletions:
                    continue
                return f"{name}: no value"
            if isinstance(got := self._stored_expr(name, text), str):
                return got
        return None

    def _stored_expr(self, name: str, text: str) -> Expr | str:
        """A stored text's expression, or why it cannot be served: a text that does not
        parse, or a number past 64 bits that would be read as something else. A text
        served once is served again as the same expression (a history of thousands of
        jobs repeats most of its texts)."""
        hit = self._served.get(text)
        if hit is not None:
            return hit
        if _PLAIN_STRING.match(text):  # GlobalJobId and the like
            expr: Expr = Literal(text[1:-1])
        elif text.isdigit() and text.isascii():  # ProcId and counters: no parser
            if int(text) > INT64_MAX:
                return f"{name}: number out of range: {text}"
            expr = Literal(int(text))
        else:
            try:
                expr = self._expr(text)
            except ClassAdSyntaxError as exc:
                return f"{name}: {exc}"
            if _LONG_NUMBER.search(text) and (number := out_of_range_number(text)):
                return f"{name}: number out of range: {number}"
        if len(self._served) >= _PARSE_CACHE_LIMIT:
            self._served.clear()
        self._served[text] = expr
        return expr

    def _stored_ad(self, texts: Mapping[str, str | None]) -> ClassAd | str:
        """The ad of a stored record (its texts read and checked in one pass), or why it
        cannot be served, as ``_record_problem`` says."""
        if "" in texts:  # not a name: ClassAd refuses it, naming it
            return self._ad_from_texts(texts)  # type: ignore[arg-type]
        pairs: list[tuple[str, Expr]] = []
        for name, text in texts.items():
            if text is None:
                return f"{name}: no value"
            got = self._stored_expr(name, text)
            if isinstance(got, str):
                return got
            pairs.append((name, got))
        return ClassAd.from_exprs(pairs)

    def _skip_record(self, job_id: str, where: str, problem: str) -> None:
        """Report a stored record that is left out (once), leaving it as it is stored."""
        key = f"{where} {job_id}"
        if key not in self._reported:
            self._reported.add(key)
            self._emit("bad_record", job=job_id, where=where, problem=problem)

    def _ad_from_texts(self, texts: Mapping[str, str]) -> ClassAd:
        if "" in texts:  # not a name: ClassAd refuses it, naming it
            ad = ClassAd()
            for name, text in texts.items():
                ad[name] = self._expr(text)
            return ad
        return ClassAd.from_exprs((name, self._expr(text)) for name, text in texts.items())

    def _emit(self, kind: str, **fields: Any) -> None:
        self._events.append((kind, fields))

    def _log(
        self, job: Job, event: int, t: float, slot_ad: ClassAd | None = None, **fields: Any
    ) -> None:
        """Event number ``event`` of ``job``'s life at pool time ``t`` for its user log, if
        it keeps one (``slot_ad``: the slot of the run an evicted or terminated event ends)."""
        if "UserLog" not in job.texts and "UserLog" not in job.base.texts:
            return  # no ad built for the 10,000 jobs of a submit without a log
        at, rng = self.ad_epoch + t, self.eval_rng
        usage = (
            usage_rows(job.ad, slot_ad, now=at, rng=rng)
            if event in (ulog.EVICTED, ulog.TERMINATED)
            else ()
        )
        self.joblog.add(job.ad, job.cluster, job.proc, event, t, fields, usage, now=at, rng=rng)

    def drain_events(self) -> list[tuple[str, dict[str, Any]]]:
        """Events since the last call: (kind, ids) pairs for the shell's event log."""
        return [(kind, fields) for kind, fields, _ in self.drain_numbered()]

    def drain_numbered(self) -> list[tuple[str, dict[str, Any], int | None]]:
        """``drain_events`` with each event's number in the queue file, for one committed
        with the queue change it describes (None: not stored), so that whoever gathers
        events knows which a crash kept (``queue.events_between``)."""
        out, self._events = self._events, []
        seqs, self._seqs = self._seqs, []
        return [(k, f, seqs[i] if i < len(seqs) else None) for i, (k, f) in enumerate(out)]

    def _persist_events(self, now: float) -> int:
        """The events since the last commit go into this commit (a crash loses the change
        and its events together, or neither); how many."""
        new = self._events[len(self._seqs) :]
        for kind, fields in new:
            self.event_seq += 1
            self._seqs.append(self.event_seq)
            self._batch.events.append(
                (self.event_seq, round(now, 3), kind, json.dumps(fields, separators=(",", ":")))
            )
        return len(new)

    def _commit(self, now: float) -> None:
        numbered = self._persist_events(now)
        batch, self._batch = self._batch, Batch()
        try:
            self.queue.apply(batch)
        except QueueError:  # not stored: the next commit numbers them again
            del self._seqs[len(self._seqs) - numbered :]
            self.event_seq -= numbered
            raise

    def _touch(self, job: Job) -> None:
        self._batch.jobs[job.key] = job.texts

    def _count(self, job: Job, sign: int) -> None:
        key = (job.submitter, job.status)
        self._counts[key] += sign
        self._weights[key] += sign * job.weight

    def _base(self, cluster: int, texts: dict[str, str]) -> ClusterBase:
        return ClusterBase(cluster, texts, self._ad_from_texts(texts), self._expr)

    def _new_job(
        self,
        cluster: int,
        proc: int,
        base: ClusterBase,
        texts: dict[str, str | None],
        like: Job | None = None,
        *,
        now: float,
    ) -> Job:
        """A job record. ``like`` is an earlier job of the same cluster: when neither job's
        own attributes touch what the autocluster signature reads nor what the record
        caches, the new job shares like's autocluster and fields and its ad is not built."""
        job = Job(cluster, proc, base, texts)
        if like is not None and like.base is base:
            differs = {k.lower() for k in texts} | {k.lower() for k in like.texts}
            if not differs & (like.touched | _DERIVED):
                job.submitter, job.autocluster = like.submitter, like.autocluster
                job.autocluster_attrs, job.touched = like.autocluster_attrs, like.touched
                job.prio, job.weight, job.status = like.prio, like.weight, like.status
                return job
        ad = job.ad
        acid, names, job.touched = self.autoclusters.assign(ad)
        job.autocluster, job.autocluster_attrs = acid, ",".join(names)
        ad["AutoClusterId"] = acid  # in memory only: recomputed when the queue is loaded
        ad["AutoClusterAttrs"] = job.autocluster_attrs
        at, rng = self.ad_epoch + now, self.eval_rng
        prio = ad.get_value("JobPrio", 0, now=at, rng=rng)
        cpus = ad.get_value("RequestCpus", 1, now=at, rng=rng)
        status = ad.get_value("JobStatus", IDLE, now=at, rng=rng)
        job.submitter = submitter_of(ad, at, rng)
        job.prio = int(prio) if _is_num(prio) and math.isfinite(prio) else 0
        job.weight = float(cpus) if _is_num(cpus) and math.isfinite(cpus) else 1.0
        job.status = (
            int(status) if isinstance(status, int) and not isinstance(status, bool) else IDLE
        )
        return job

    def _register(self, job: Job) -> None:
        self.jobs[job.key] = job
        self._count(job, +1)
        if job.base.policed or has_policy(job.texts):
            self._policed.add(job.key)
        if job.status == IDLE and job.claim is None:
            self._idle.add((job.submitter, job.autocluster), job.prio, job.cluster, job.proc)

    def _transition(self, job: Job, new: int, now: float) -> None:
        old = job.status
        self._count(job, -1)
        if old == IDLE:
            self._idle.discard((job.submitter, job.autocluster), job.cluster, job.proc)
        job.status = new
        self._count(job, +1)
        job.set("LastJobStatus", old)
        job.set("JobStatus", new)
        job.set("EnteredCurrentStatus", self._date(now))
        if new == IDLE and job.claim is None:
            self._idle.add((job.submitter, job.autocluster), job.prio, job.cluster, job.proc)
        self._touch(job)

    def _to_history(self, job: Job) -> None:
        """The job leaves the queue (completed, or removed and off its claim)."""
        self._count(job, -1)
        self.left_queue[job.status] += 1
        if job.status == IDLE:
            self._idle.discard((job.submitter, job.autocluster), job.cluster, job.proc)
        del self.jobs[job.key]
        self._policed.discard(job.key)
        self._batch.jobs.pop(job.key, None)
        self._batch.to_history.append((job.cluster, job.proc, job.full_texts()))

    # --- loading ------------------------------------------------------------------------

    def _load(self, now: float) -> None:
        """Jobs and claims from the queue file. A record that cannot be served (a damaged
        row, no cluster ad, a text that does not parse, a number past 64 bits) is reported as a
        ``bad_record`` event and left out, as stored: the other jobs go on."""
        clusters = self.queue.load_clusters()
        bases: dict[int, ClusterBase] = {}
        bad_clusters: dict[int, str] = {}
        like: Job | None = None
        for cluster, proc, texts in self.queue.load_jobs():
            job_id = f"{cluster}.{proc}"
            problem = bad_clusters.get(cluster)
            base = bases.get(cluster)
            if problem is None and base is None:
                if cluster not in clusters:
                    problem = bad_clusters[cluster] = "no cluster ad"
                elif (shared := clusters[cluster]) is None:
                    problem = bad_clusters[cluster] = "cluster ad: unreadable row"
                elif (problem := self._record_problem(shared)) is not None:
                    problem = bad_clusters[cluster] = f"cluster ad: {problem}"
                else:
                    base = bases[cluster] = self._base(cluster, shared)  # type: ignore[arg-type]
            if problem is None:
                problem = (
                    "unreadable row"
                    if texts is None
                    else self._record_problem(texts, deletions=True)
                )
            if problem is not None or base is None or texts is None:
                self._skip_record(job_id, "queue", problem or "unreadable row")
                next_id = max(
                    self.queue.next_cluster_id, int(self._batch.meta.get("next_cluster_id", 0))
                )
                if cluster >= next_id:  # never reuse its id
                    self._batch.meta["next_cluster_id"] = str(cluster + 1)
                continue
            job = self._new_job(cluster, proc, base, texts, like, now=now)
            if like is None or like.base is not base or texts.keys() <= _ID_ATTRS:
                like = job
            self._register(job)
        running = {}
        for stored in self.queue.load_claims():
            job = self.jobs.get((stored.cluster, stored.proc))
            if job is None or job.status not in (RUNNING, REMOVED):
                # the job left or never started: the claim is of no use any more
                self._startup.releases[stored.startd_address].append(stored.claim_id)
                self._batch.claims_del.add(stored.claim_id)
                continue
            claim = HeldClaim(
                stored.claim_id,
                stored.startd_address,
                stored.slot_name,
                stored.submitter,
                job,
                "active",
                now,
                # its wall clock counts from the reconnect (wallclock.py), never from
                # before what its checkpoint credits
                activated=max(
                    now,
                    stored.activated
                    + job.number(CHECKPOINT, now=self.ad_epoch + now, rng=self.eval_rng),
                ),
                jobs_run=1,
                heard=now,
                reconnecting=True,
            )
            running[job.key] = claim
        for job in list(self.jobs.values()):
            if CHECKPOINT in job.texts:  # died running: credited up to its last checkpoint
                self._credit_checkpoint(job, now)
            claim = running.get(job.key)
            if job.status == RUNNING and claim is not None:
                job.claim = claim
                self.claims[claim.claim_id] = claim
            elif job.status == RUNNING:
                # running with no claim on record: HTCondor's mark_jobs_idle
                self._transition(job, IDLE, now)
                job.delete("RemoteHost")
            elif job.status == REMOVED:
                # removed while running; finish what the crash interrupted
                if claim is not None:
                    self._startup.releases[claim.startd_address].append(claim.claim_id)
                    self._batch.claims_del.add(claim.claim_id)
                self._to_history(job)
            elif job.status == COMPLETED:
                self._to_history(job)
        self._commit(now)

    def startup_outbox(self) -> Outbox:
        """Releases left over from before a restart (claims of jobs that are gone)."""
        out, self._startup = self._startup, Outbox()
        return out

    # --- submit -------------------------------------------------------------------------

    def submit(
        self,
        description: str,
        source: str,
        owner: str,
        now: float,
        request_id: str | None = None,
        *,
        item_files: Mapping[str, str] | None = None,
        env: Mapping[str, str] | None = None,
        iwd: str = "",
        log_refused: str | None = None,
    ) -> tuple[int, int]:
        """Queue a submit description; (cluster id, number of jobs).

        SubmitError (``source:line: problem``) propagates and nothing is stored. A
        ``request_id`` already applied returns its first answer without queueing again.
        The jobs are committed to the queue file before this returns. ``item_files`` and
        ``env`` are the submitting user's (the schedd reads neither files nor its own
        environment for a user); more than MAX_JOBS_PER_SUBMISSION jobs are refused.
        ``iwd``: the submitting side's folder (absolute), under which condor_submit puts
        the jobs' Iwd and log (empty: not known; both as written). ``log_refused``: why
        this submitter's jobs may not keep a job event log (a ``log =`` is refused).
        """
        if request_id:
            prior = self.queue.lookup_request(request_id)
            if prior is not None:
                return prior
        cluster = max(self.queue.next_cluster_id, self._reserved_cluster)
        qdate = self._date(now)
        result = parse_submit(
            description,
            source,
            owner=owner,
            cluster_id=cluster,
            qdate=qdate,
            validate=parse_expr,
            item_files=item_files,
            env=env,
            max_jobs=self.config.get_int("MAX_JOBS_PER_SUBMISSION"),
            host=self.submit_host,
            requirements=self.requirements_memo,
            iwd=iwd if iwd.startswith("/") else "",
        )
        if log_refused is not None:
            logged = next((t["UserLog"] for t in result.procs if "UserLog" in t), None)
            if logged is not None:
                raise SubmitError(f"{source}: log = {logged}: {log_refused}")
        values: dict[str, Any] = {}  # Owner text -> value: procs nearly always share one
        for texts in result.procs:
            # As HTCondor's schedd refuses to set Owner to anyone but the submitter ("security
            # violation: setting owner to X when active owner is Y"): +Owner cannot hand a
            # job (and its fair share) to another user. UNDEFINED means the submitter.
            text = texts.get("Owner", "undefined")
            if text not in values:
                values[text] = evaluate(text, now=qdate, rng=self.eval_rng)
            value = values[text]
            if value is UNDEFINED:
                texts["Owner"], value = unparse(to_expr(owner)), owner
            if value != owner:
                raise SubmitError(
                    f"{source}: Owner may not be set to {unparse(to_expr(value))}: "
                    f"jobs are owned by the submitting user {owner!r}"
                )
        return self._enqueue(cluster, result.procs, qdate, owner, now, request_id)

    def _enqueue(
        self,
        cluster: int,
        procs: list[dict[str, str]],
        qdate: int,
        owner: str,
        now: float,
        request_id: str | None,
    ) -> tuple[int, int]:
        """Queue ``procs`` (each job's whole ad as texts, ProcId set) as ``cluster`` in one
        transaction, written before it returns; (cluster id, number of jobs)."""
        jobs: list[Job] = []
        if procs:
            first = procs[0]
            extras = {
                "EnteredCurrentStatus": str(qdate),
                "NumJobStarts": "0",
                "RemoteWallClockTime": "0.0",
            }
            shared = {k: v for k, v in first.items() if k != "ProcId"} | extras
            base = self._base(cluster, shared)
            like: Job | None = None
            for proc_texts in procs:
                proc = int(proc_texts["ProcId"])
                own: dict[str, str | None] = {
                    "ProcId": proc_texts["ProcId"],
                    "GlobalJobId": f'"{self.name}#{cluster}.{proc}#{qdate}"',
                }
                if proc_texts is not first:
                    _own_attributes(proc_texts, shared, extras, own)
                job = self._new_job(cluster, proc, base, own, like, now=now)
                if like is None:
                    like = job
                jobs.append(job)
            self._batch.clusters[cluster] = shared
        batch = self._batch
        for job in jobs:
            batch.jobs[job.key] = job.texts
        if jobs:
            next_id = max(self.queue.next_cluster_id, cluster + 1)
            batch.meta["next_cluster_id"] = str(next_id)
        if request_id:
            batch.request = (request_id, cluster, len(jobs))
        try:
            self._commit(now)  # write before acknowledge
        except Exception:
            self._batch = Batch()
            raise
        host = sinful(self.address) if self.address else f"<{self.machine}>"
        for job in jobs:
            self._register(job)
            self._log(job, ulog.SUBMIT, now, host=host, **self._batch_name(job, now))
        if jobs:
            self._emit(
                "submit", cluster=cluster, procs=len(jobs), owner=owner, submitter=jobs[0].submitter
            )
            idle = sum(job.status == IDLE for job in jobs)
            self.ad_cadence.submitted(now, idle)
        return cluster, len(jobs)

    # --- user actions -------------------------------------------------------------------

    def _constraint(self, text: str) -> Expr | None:
        text = text.strip()
        if not text:
            return None
        try:
            return parse_expr(text)
        except ClassAdSyntaxError as exc:
            raise ConstraintError(f"bad constraint {text!r}: {exc}") from None

    def _true(self, expr: Expr | None, ad: ClassAd, now: float, budget: Budget) -> bool:
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
        self,
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

    def _remove(self, job: Job, reason: str, now: float, out: Outbox) -> None:
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

    def _owner(self, job: Job, now: float) -> str | None:
        value = job.ad.get_value("Owner", now=self.ad_epoch + now, rng=self.eval_rng)
        return value if isinstance(value, str) else None

    def _batch_name(self, job: Job, now: float) -> dict[str, str]:
        """The submit event's JobBatchName note, when the job has one."""
        if "JobBatchName" not in job.texts and "JobBatchName" not in job.base.texts:
            return {}
        name = job.ad.eval("JobBatchName", now=self.ad_epoch + now, rng=self.eval_rng)
        return {"batch_name": name} if isinstance(name, str) else {}

    def _hold(
        self, job: Job, reason: str, code: int, now: float, out: Outbox, subcode: int = 0
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

    def _release_hold(self, job: Job, reason: str, now: float) -> None:
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

    def _stop(self, job: Job, now: float, out: Outbox, *, evicted: bool) -> HeldClaim | None:
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

    def _account_run(self, job: Job, start: float, end: float) -> None:
        wall = max(0.0, end - start)
        before = job.number("RemoteWallClockTime", now=self.ad_epoch + end, rng=self.eval_rng)
        job.set("RemoteWallClockTime", before + wall)
        if CHECKPOINT in job.texts:  # counted now: in the same transaction
            job.delete(CHECKPOINT)

    def _credit_checkpoint(self, job: Job, now: float) -> None:
        at, rng = self.ad_epoch + now, self.eval_rng
        total = credited(
            job.number("RemoteWallClockTime", now=at, rng=rng),
            job.number(CHECKPOINT, now=at, rng=rng),
        )
        job.set("RemoteWallClockTime", total)
        job.delete(CHECKPOINT)
        self._touch(job)

    def wall_clock_round(self, now: float) -> None:
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

    def _left_slot(self, job: Job) -> None:
        host = job.ad.lookup("RemoteHost")
        if host is not None:
            job.set("LastRemoteHost", host)
            job.delete("RemoteHost")

    def _drop_claim(self, claim: HeldClaim, out: Outbox, *, release: bool = True) -> None:
        """Forget a claim here and (``release``) tell its startd to release it; a claim
        the startd closed itself needs no release."""
        self.claims.pop(claim.claim_id, None)
        self._batch.claims_del.add(claim.claim_id)
        if release:
            out.releases[claim.startd_address].append(claim.claim_id)
        self._emit("claim_dropped", slot=claim.slot_name, claim=_redact(claim.claim_id))

    def _unreserve(self, job: Job) -> None:
        if job.claim is not None and job.status == IDLE:
            self._reserved -= 1
        job.claim = None
        if job.status == IDLE:
            self._idle.add((job.submitter, job.autocluster), job.prio, job.cluster, job.proc)

    # --- the negotiator -----------------------------------------------------------------

    def resource_requests(self, submitter: str | None = None) -> list[ClassAd]:
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

    def on_matches(self, matches: Iterable[MatchNotice], now: float) -> Outbox:
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
                claim=_redact(m.claim_id),
                submitter=m.submitter,
            )
        return out

    def on_claim_results(self, outcomes: Iterable[ClaimOutcome], now: float) -> Outbox:
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
                    claim=_redact(claim.claim_id),
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
                claim=_redact(claim.claim_id),
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
                continue
            claim.state = "activating"
            out.activations[claim.startd_address].append(
                ActivationRequest(claim.claim_id, job.ad, job.job_id)
            )
        self._commit(now)
        return out

    def next_ready_time(self) -> float | None:
        """When the earliest waiting claim may be activated (None: no claim waits)."""
        waiting = self._waiting
        for cid, c in list(waiting.items()):
            if c.state != "waiting" or self.claims.get(cid) is not c:
                del waiting[cid]
        return min((c.ready for c in waiting.values()), default=None)

    def activate_ready(self, now: float) -> Outbox:
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

    def on_rejections(self, rejections: Iterable[RejectionNotice], now: float) -> None:
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
        self, claim: HeldClaim, claim_id: str, slot_ad: ClassAd, now: float, out: Outbox
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
            claim=_redact(claim_id),
            submitter=claim.submitter,
        )

    def _take_runnable_job(
        self, submitter: str, slot_ad: ClassAd, now: float, *, fit: bool
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
            if not matches(job.ad, slot_ad, now=at, rng=rng):
                continue
            best, best_group = order, group
        if best_group is None:
            return None
        key = self._idle.pop(best_group)
        assert key is not None
        return self.jobs[key]

    def on_activation_results(self, outcomes: Iterable[ActivationOutcome], now: float) -> Outbox:
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
        self, claim: HeldClaim, job: Job, error: str, now: float, out: Outbox
    ) -> None:
        """No answer to an activation: release the claim, and keep its job reserved until
        the startd answers the release or the claim's lease is over."""
        every = self._alive_every(claim)  # and claim.lease, from the job
        lease = claim.lease
        self.claims.pop(claim.claim_id, None)
        self._batch.claims_del.add(claim.claim_id)
        claim.state = "releasing"
        self._unsure[claim.claim_id] = UnsureActivation(claim, job, now + lease, now + every)
        out.releases[claim.startd_address].append(claim.claim_id)
        self._emit(
            "activate_unanswered",
            job=job.job_id,
            slot=claim.slot_name,
            claim=_redact(claim.claim_id),
            error=error,
            until=round(now + lease, 3),
        )

    def _settle_unsure(self, claim_id: str, now: float, why: str) -> None:
        """The job of an unanswered activation runs nowhere now: it may run again."""
        u = self._unsure.pop(claim_id)
        job = u.job
        if job.claim is u.claim and job.key in self.jobs:
            self._unreserve(job)
            self._emit("activate_settled", job=job.job_id, slot=u.claim.slot_name, why=why)

    def _start_running(self, claim: HeldClaim, job: Job, start: float, now: float) -> None:
        claim.state = "active"
        claim.heard = now
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
            claim=_redact(claim.claim_id),
            submitter=job.submitter,
        )
        self._log(job, ulog.EXECUTE, start, host=sinful(claim.startd_address), slot=claim.slot_name)

    # --- startds ------------------------------------------------------------------------

    def on_job_exits(self, exits: Iterable[JobExit], now: float) -> Outbox:
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
                    claim=_redact(e.claim_id),
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
        self, job: Job, claim: HeldClaim, exit_code: int, end: float, now: float, out: Outbox
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

    def next_policy_time(self) -> float | None:
        """When the periodic policy is next evaluated (None: PERIODIC_EXPR_INTERVAL 0)."""
        return self.policy_next

    def policy_due(self, now: float) -> list[tuple[int, int]]:
        """The jobs whose periodic policy is looked at in the round due at ``now`` (every
        job under a SYSTEM_PERIODIC_* knob, else those with expressions of their own);
        none before the round's time. The next round is PERIODIC_EXPR_INTERVAL later."""
        if self.policy_next is None or now < self.policy_next:
            return []
        self.policy_next = now + self.policy_every
        return sorted(self.jobs if self.system_policy.any else self._policed)

    def policy_round(self, keys: Iterable[tuple[int, int]], now: float) -> Outbox | None:
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

    def _apply_verdict(self, job: Job, verdict: PolicyVerdict, now: float, out: Outbox) -> None:
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

    def _vacate(self, job: Job, verdict: PolicyVerdict, now: float, out: Outbox) -> None:
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

    def _claim_finished(self, claim: HeldClaim, now: float, out: Outbox, *, reuse: bool) -> None:
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
            claim=_redact(claim.claim_id),
            submitter=claim.submitter,
        )

    def on_releases_done(self, claim_ids: Iterable[str], now: float, *, answered: bool) -> None:
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

    def on_claims_lost(self, claim_ids: Iterable[str], now: float) -> None:
        """Claims a startd no longer has (KeepAlive): their jobs are evicted."""
        for cid in claim_ids:
            claim = self.claims.get(cid)
            if claim is None:
                continue
            self.claims.pop(cid)
            self._batch.claims_del.add(cid)
            job = claim.job
            claim.job = None
            self._emit("claim_lost", slot=claim.slot_name, claim=_redact(cid))
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
                    startd=_machine(claim.slot_name),
                )
            elif job.status == IDLE:
                self._reserved -= 1
                self._unreserve(job)
        for cid in list(self._releasing):
            if cid in claim_ids:
                self.on_releases_done([cid], now, answered=True)
        self._commit(now)

    def claims_by_startd(self) -> dict[str, list[str]]:
        """Claims this schedd holds, per startd address (what keepalives carry)."""
        out: dict[str, list[str]] = defaultdict(list)
        for claim in self.claims.values():
            if claim.state in ("active", "idle", "waiting"):
                out[claim.startd_address].append(claim.claim_id)
        return dict(out)

    def _alive_every(self, claim: HeldClaim) -> float:
        """min(ALIVE_INTERVAL, JobLeaseDuration / 3) of the claim's job, at least 10 s;
        kept when the job leaves (the startd's lease was set when the claim was made).
        Sets the claim's lease as its startd computes it: the job's JobLeaseDuration, else
        MAX_CLAIM_ALIVES_MISSED x ALIVE_INTERVAL."""
        if claim.alive_every:  # the usual case: set when the claim got its job
            return claim.alive_every
        interval = float(self.config.get_int("ALIVE_INTERVAL"))
        if claim.job is not None:
            every = interval
            # read as the claim got its job: when the startd set its lease
            lease = claim.job.number(
                "JobLeaseDuration", 0.0, now=self.ad_epoch + claim.since, rng=self.eval_rng
            )
            if lease > 0:
                every = min(every, lease / 3)
            claim.alive_every = max(MIN_ALIVE_EVERY, every)
            claim.lease = (
                lease if lease > 0 else self.config.get_int("MAX_CLAIM_ALIVES_MISSED") * interval
            )
        return claim.alive_every or max(MIN_ALIVE_EVERY, interval)

    def _keepalive_times(
        self, now: float = -math.inf
    ) -> tuple[dict[str, float], list[HeldClaim], float, dict[str, float]]:
        """One look over the claims (a schedd holds thousands): per startd address, when
        its claims next need a keepalive (each claim within its period of being made or
        of the last keepalive to that startd; a claim loaded at a restart at once, the
        reconnect); the claims whose lease ran out by ``now``, in order (the schedd gives
        up on them), and the earliest end of any claim's lease, for every claim past its
        request (a reconnecting claim's lease runs from the restart's first keepalive);
        and per address the shortest period of its claims (when the next is due once
        one is sent now; reconnecting claims left out, whose first keepalive is a
        reconnect)."""
        due: dict[str, float] = {}
        every: dict[str, float] = {}
        expired: list[HeldClaim] = []
        first_end = math.inf
        sent, asked, inf = self._alive_sent, self._reconnect_asked, math.inf
        for claim in self.claims.values():
            if claim.state not in _KEPT_ALIVE:
                continue
            addr, since = claim.startd_address, claim.since
            if claim.reconnecting and addr not in asked:
                t = since
            else:
                period = claim.alive_every or self._alive_every(claim)
                last = sent.get(addr, since)
                t = (last if last > since else since) + period
                if claim.lease > 0:
                    end = claim.heard + claim.lease
                    if end <= now:
                        expired.append(claim)
                    if end < first_end:
                        first_end = end
                if period < every.get(addr, inf):
                    every[addr] = period
            if t < due.get(addr, inf):
                due[addr] = t
        return due, expired, first_end, every

    def next_keepalive(self) -> float | None:
        """When :meth:`alive_round` next has something to do (None: no claims): a
        keepalive to send or a lease to give up on."""
        due, _expired, first_end, _every = self._keepalive_times()
        return self._next_alive(due.values(), first_end)

    def _next_alive(self, due: Iterable[float], first_end: float) -> float | None:
        times = list(due)
        if first_end < math.inf:
            times.append(first_end)
        times += [min(u.until, u.again) for u in self._unsure.values()]
        return min(times, default=None)

    def alive_round(self, now: float) -> tuple[Outbox, dict[str, list[str]]]:
        """What is due now: claims whose startd has not answered for a whole lease are
        given up (the job is Idle again, as HTCondor's shadow gives up reconnecting once
        the job lease has run out), then the keepalives to send. Sets :attr:`alive_next`,
        :meth:`next_keepalive` as the round leaves the claims (without a second look)."""
        out = Outbox()
        due, expired, first_end, every = self._keepalive_times(now)
        changed = bool(expired)
        for claim in expired:
            self._give_up(claim, now, out)
        for cid, u in list(self._unsure.items()):
            if u.until <= now:
                self._settle_unsure(cid, now, "the claim's lease is over")
                changed = True
            elif u.again <= now:  # the release may have been lost: again
                u.again = now + self._alive_every(u.claim)
                out.releases[u.claim.startd_address].append(cid)
        self._commit(now)
        asked = len(self._reconnect_asked)
        keepalives = self.keepalives_due(now, None if changed else due)
        if changed or len(self._reconnect_asked) != asked:
            # claims given up, or reconnects asked (their leases start now): look again
            self.alive_next = self.next_keepalive()
        else:
            # a startd sent a keepalive now is next due a period of its claims from now
            for addr in keepalives:
                due[addr] = now + every[addr]
            self.alive_next = self._next_alive(due.values(), first_end)
        return out, keepalives

    def _give_up(self, claim: HeldClaim, now: float, out: Outbox) -> None:
        job = claim.job
        reason = f"Job disconnected too long: JobLeaseDuration ({claim.lease:g} seconds) expired"
        claim.job = None
        if job is not None:
            job.claim = None
            if claim.state == "active" and job.status == RUNNING:
                self._account_run(job, claim.activated, now)
                self._left_slot(job)
                self._transition(job, IDLE, now)
                self._log(
                    job, ulog.RECONNECT_FAILED, now, reason=reason, startd=_machine(claim.slot_name)
                )
            elif job.status == IDLE:
                self._reserved -= 1
                self._unreserve(job)
        self._emit(
            "reconnect_failed",
            job=job.job_id if job is not None else "",
            slot=claim.slot_name,
            claim=_redact(claim.claim_id),
            reason=reason,
            heard=round(claim.heard, 3),
            lease=claim.lease,
        )
        self._drop_claim(claim, out)
        if claim.claim_id in self._releasing:
            self.on_releases_done([claim.claim_id], now, answered=False)

    def keepalives_due(
        self, now: float, alive_due: dict[str, float] | None = None
    ) -> dict[str, list[str]]:
        """The keepalives to send now: every claim held at each startd that has one due
        (one KeepAlive per startd carries them all, so the others are renewed early).
        ``alive_due``: when each startd's next is due, if just worked out."""
        if alive_due is None:
            alive_due = self._keepalive_times()[0]
        due = {a for a, t in alive_due.items() if t <= now}
        if not due:
            return {}
        held = self.claims_by_startd()
        for addr in set(self._alive_sent) - set(held):
            del self._alive_sent[addr]  # no claims left there
        out = {a: ids for a, ids in held.items() if a in due}
        for addr, ids in out.items():
            self._alive_sent[addr] = now
            if addr not in self._reconnect_asked:
                self._reconnect_asked.add(addr)
                for cid in ids:
                    claim = self.claims[cid]
                    if claim.reconnecting:  # its lease and its wall clock run from now
                        claim.heard = claim.activated = now
        return out

    def on_keepalive_answer(
        self, claim_ids: Iterable[str], unknown: Iterable[str], now: float
    ) -> None:
        """A startd answered a keepalive: the claims it knows are heard from (a claim
        loaded at a restart is reconnected: its job runs on); those it does not know are
        lost and their jobs Idle again (in the startd's order: a set's order would change
        with the interpreter's string hashing, and the events with it)."""
        lost = dict.fromkeys(unknown)
        for cid in claim_ids:
            claim = self.claims.get(cid)
            if claim is None or cid in lost:
                continue
            claim.heard = now
            if claim.reconnecting:
                claim.reconnecting = False
                self._emit(
                    "job_reconnected",
                    job=claim.job.job_id if claim.job is not None else "",
                    slot=claim.slot_name,
                    claim=_redact(cid),
                )
        if lost:
            self.on_claims_lost(lost, now)

    def readdress(self, old: str, new: str) -> None:
        """A startd came back on a new address (found through the collector): its claims
        are reached there."""
        for claim in self.claims.values():
            if claim.startd_address == old:
                claim.startd_address = new
        self._alive_sent.pop(old, None)
        self._reconnect_asked.discard(old)

    # --- queries ------------------------------------------------------------------------

    def _projection(self, ad: ClassAd, projection: Sequence[str]) -> ClassAd:
        if not projection:
            return ad
        out = ClassAd()
        for name in projection:
            expr = ad.lookup(name)
            if expr is not None:
                out[name] = expr
        return out

    def query(
        self,
        constraint: str = "",
        projection: Sequence[str] = (),
        limit: int = 0,
        *,
        now: float = 0.0,
    ) -> list[ClassAd]:
        """Job ads in the queue matching ``constraint``, by cluster and proc (not copies
        when unprojected: do not change them)."""
        expr = self._constraint(constraint)
        out = []
        budget = Budget()
        for job in sorted(self.jobs.values(), key=lambda j: j.key):
            try:
                ad = job.ad
            except ClassAdSyntaxError as exc:  # defensive: records are checked at load
                self._skip_record(job.job_id, "queue", str(exc))
                continue
            if self._true(expr, ad, self.ad_epoch + now, budget):
                out.append(self._projection(ad, projection))
                if limit and len(out) >= limit:
                    break
        return out

    def history(
        self,
        constraint: str = "",
        projection: Sequence[str] = (),
        limit: int = 0,
        *,
        now: float = 0.0,
        since: str = "",
    ) -> list[ClassAd]:
        """Jobs that left the queue, newest first; ``since``: a constraint that ends the
        scan at the first job (newest first) it selects, that job left out (condor_history
        -since)."""
        expr = self._constraint(constraint)
        stop = self._constraint(since)
        out = []
        budget = Budget()
        for cluster, proc, texts in self.queue.history():
            ad = "unreadable row" if texts is None else self._stored_ad(texts)
            if isinstance(ad, str):
                self._skip_record(f"{cluster}.{proc}", "history", ad)
                continue
            if stop is not None and self._true(stop, ad, self.ad_epoch + now, budget):
                break
            if self._true(expr, ad, self.ad_epoch + now, budget):
                out.append(self._projection(ad, projection))
                if limit and len(out) >= limit:
                    break
        return out

    # --- ads ----------------------------------------------------------------------------

    def _date(self, t: float) -> int:
        """The ads' date (a Unix time) of pool time ``t``."""
        return self.ad_epoch + int(t)

    def totals(self) -> dict[int, int]:
        """Jobs in the queue per JobStatus."""
        out = dict.fromkeys((IDLE, RUNNING, REMOVED, HELD), 0)
        for (_, status), n in self._counts.items():
            out[status] = out.get(status, 0) + n
        return out

    def schedd_ad(self, now: float, duty_cycle: float = 0.0) -> ClassAd:
        """The Scheduler ad, with HTCondor's attribute names (``duty_cycle``: the loop's
        RecentDaemonCoreDutyCycle, which the shell measures)."""
        t = self.totals()
        submitters = {s for (s, st), n in self._counts.items() if n > 0 and st != REMOVED}
        ad = ClassAd()
        ad["MyType"] = "Scheduler"
        ad["Name"] = self.name
        ad["Machine"] = self.machine
        ad["CondorVersion"] = CONDOR_VERSION
        ad["CondorPlatform"] = CONDOR_PLATFORM
        ad["MyAddress"] = self.address
        ad["ScheddIpAddr"] = self.address
        ad["TotalIdleJobs"] = t[IDLE]
        ad["TotalRunningJobs"] = t[RUNNING]
        ad["TotalHeldJobs"] = t[HELD]
        ad["TotalRemovedJobs"] = t[REMOVED]
        ad["TotalJobAds"] = len(self.jobs)
        ad["TotalFlockedJobs"] = 0
        ad["ShadowsRunning"] = t[RUNNING]
        ad["NumUsers"] = len(submitters)
        ad["MaxJobsRunning"] = self.max_jobs_running
        ad["Autoclusters"] = len(self._idle.groups())
        ad["DaemonStartTime"] = self._date(self.started)
        ad["JobQueueBirthdate"] = self._date(self.queue.birth)
        ad["MyCurrentTime"] = self._date(now)
        ad["RecentDaemonCoreDutyCycle"] = float(duty_cycle)
        return ad

    def submitter_ads(self, now: float) -> list[ClassAd]:
        """One Submitter ad per submitter with idle, running or held jobs."""
        names = sorted({s for (s, st), n in self._counts.items() if n > 0 and st != REMOVED})
        out = []
        for name in names:
            ad = ClassAd()
            ad["MyType"] = "Submitter"
            ad["Name"] = name
            ad["ScheddName"] = self.name
            ad["Machine"] = self.machine
            ad["MyAddress"] = self.address
            ad["ScheddIpAddr"] = self.address
            ad["IdleJobs"] = self._counts[(name, IDLE)]
            ad["RunningJobs"] = self._counts[(name, RUNNING)]
            ad["HeldJobs"] = self._counts[(name, HELD)]
            ad["FlockedJobs"] = 0
            ad["WeightedIdleJobs"] = _num(self._weights[(name, IDLE)])
            ad["WeightedRunningJobs"] = _num(self._weights[(name, RUNNING)])
            ad["MyCurrentTime"] = self._date(now)
            out.append(ad)
        return out

    def submitter_updates(self, now: float) -> tuple[list[ClassAd], list[ClassAd]]:
        """What to send the collector about submitters: their ads, and the keys of ads
        it holds for submitters left without jobs, to invalidate (HTCondor's schedd
        invalidates a submitter's ad once its last job has left). Until
        :meth:`submitters_advertised` says they arrived, the same invalidations come
        again."""
        ads = self.submitter_ads(now)
        at, rng = self.ad_epoch + now, self.eval_rng
        names = {str(ad.get_value("Name", now=at, rng=rng)) for ad in ads}
        gone = [
            ClassAd({"MyType": "Submitter", "Name": name, "ScheddName": self.name})
            for name in sorted(self._submitters_advertised - names)
        ]
        self._submitters_offered = names
        if ads:
            self.ad_cadence.submitters_sent(sum(self._counts[(n, IDLE)] for n in names))
        return ads, gone

    def submitters_advertised(self) -> None:
        """The collector has the updates of the last :meth:`submitter_updates`."""
        self._submitters_advertised = self._submitters_offered

    def status(self) -> dict[str, Any]:
        t = self.totals()
        return {
            "idle": t[IDLE],
            "running": t[RUNNING],
            "held": t[HELD],
            "removed": t[REMOVED],
            "jobs": len(self.jobs),
            "claims": len(self.claims),
            "reserved": self._reserved,
            "by_status": dict(t),  # in the queue, per JobStatus
            "left_queue": dict(self.left_queue),  # since this core started, per JobStatus
        }


# --------------------------------------------------------------------------- rules


_FITTED = ("Cpus", "Memory", "Disk")


def _fits(job_ad: ClassAd, slot_ad: ClassAd, now: float, rng: random.Random) -> bool:
    """Whether the job's RequestCpus/Memory/Disk fit the slot's Cpus/Memory/Disk."""
    for res in _FITTED:
        request = job_ad.lookup(f"Request{res}")
        if request is None:
            continue
        want = evaluate(request, job_ad, slot_ad, now=now, rng=rng)
        have = slot_ad.eval(res, now=now, rng=rng)
        if isinstance(want, bool) or not isinstance(want, int | float):
            continue  # no request of this resource
        if isinstance(have, bool) or not isinstance(have, int | float) or want > have:
            return False
    return True


def _exit_policed(job: Job) -> bool:
    ad = job.ad
    return ad.lookup("OnExitHold") is not None or ad.lookup("OnExitRemove") is not None


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


def _own_attributes(
    texts: Mapping[str, str],
    shared: Mapping[str, str],
    extras: Mapping[str, str],
    own: dict[str, str | None],
) -> None:
    """Add to ``own`` what ``texts`` (one job of a submit) sets differently from the
    cluster's ``shared`` attributes, and None for shared ones it lacks."""
    get = shared.get
    for k, v in texts.items():
        w = get(k)
        if w is not v and w != v and k != "ProcId":
            own[k] = v
    if len(texts) - 1 != len(shared) - len(extras):
        for k in shared:
            if k not in texts and k not in extras:
                own[k] = None


def _is_num(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _num(x: float) -> int | float:
    # an integer only when it fits the wire's 64 bits: a sum of RequestCpus may not
    return int(x) if float(x).is_integer() and abs(x) <= INT64_MAX else float(x)


def _machine(slot_name: str) -> str:
    """The startd's name of a slot ``slot1_1@host``: ``host``."""
    return slot_name.rpartition("@")[2] or slot_name


def _redact(claim_id: str) -> str:
    return redact(claim_id)
