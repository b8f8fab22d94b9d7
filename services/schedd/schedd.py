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
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..claimid import sinful
from ..classad import (
    UNDEFINED,
    ClassAd,
    ClassAdSyntaxError,
    evaluate,
    parse_expr,
    unparse,
)
from ..classad.ad import shared_literal, to_expr
from ..classad.evalmemo import EvalMemo
from ..classad.numbers import INT64_MAX, out_of_range_number
from ..classad.tree import Expr, Literal
from ..config import ConfigDict
from ..jobstates import COMPLETED, HELD, IDLE, REMOVED, RUNNING
from . import userlog as ulog
from .actions import JobActions
from .autocluster import Autoclusters, IdleIndex
from .cadence import AdCadence
from .jobads import JobAttrRules
from .jobexits import JobExits
from .joblog import JobLogBook, usage_rows
from .keepalive import ClaimKeepalive
from .memqueue import MemoryJobQueue
from .negotiation import NegotiatedClaims
from .policy import SystemPolicy, has_policy
from .queue import Batch, JobQueue, QueueError
from .readymade import ReadyMadeJobs
from .records import ClusterBase, HeldClaim, Job, Outbox, UnsureActivation
from .requirements import RequirementsMemo, SubmitHost
from .submit import SubmitError, parse_submit
from .submitter import submitter_of
from .views import ScheddViews
from .wallclock import CHECKPOINT

__all__ = [
    "COMPLETED",
    "HELD",
    "IDLE",
    "REMOVED",
    "RUNNING",
    "Schedd",
    "ScheddKnobs",
    "submitter_of",
]


_PARSE_CACHE_LIMIT = 100_000
_ID_ATTRS = frozenset({"ProcId", "GlobalJobId"})
# attributes the job record caches (submitter, priority, weight, state)
_DERIVED = frozenset({"jobprio", "requestcpus", "accountinggroup", "owner", "jobstatus"})
_PLAIN_STRING = re.compile(r'"[^"\\]*"\Z')
_LONG_NUMBER = re.compile(r"\d{19}|\d[eE][+-]?\d{3}")  # may not fit 64 bits or a double
# an event's fields as json.dumps(fields, separators=(",", ":")) writes them, without
# an encoder made per event (thousands a cycle)
_EVENT_JSON = json.JSONEncoder(separators=(",", ":"))


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
            policy_every=config.get_int("PERIODIC_EXPR_INTERVAL"),
            wallclock_every=config.get_int("WALL_CLOCK_CKPT_INTERVAL"),
        )


class Schedd(ReadyMadeJobs, JobActions, NegotiatedClaims, JobExits, ClaimKeepalive, ScheddViews):
    """One schedd: its queue, autoclusters, claims and ads. This module holds its state,
    loading, submit and transaction; the rest is in rooms of its own, mixed in: ready-made
    job ads and edits (:mod:`.readymade`), users' actions (:mod:`.actions`), matches to
    running jobs (:mod:`.negotiation`), exits and job policy (:mod:`.jobexits`), claim
    keepalives (:mod:`.keepalive`), queries and ads (:mod:`.views`); the records they
    share are in :mod:`.records`."""

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
        self.memo = EvalMemo()  # the match checks of jobs started on held claims
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
        # next_keepalive() as the last alive_round left it, or earlier: a claim kept
        # alive since (_alive_soon)
        self.alive_next: float | None = None
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
        # one object per text: equal values (RequestCpus 1, FileSystemDomain) are one
        # expression to the autocluster memo, which goes by object
        if text.isdigit() and text.isascii():  # ProcId and counters: no parser
            return shared_literal(int(text))
        expr = self._parse_cache.get(text)
        if expr is None:
            if len(self._parse_cache) >= _PARSE_CACHE_LIMIT:
                self._parse_cache.clear()
            plain = _PLAIN_STRING.match(text)  # GlobalJobId and the like: no parser
            expr = to_expr(text[1:-1]) if plain else parse_expr(text)
            self._parse_cache[text] = expr
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
                (self.event_seq, round(now, 3), kind, _EVENT_JSON.encode(fields))
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
