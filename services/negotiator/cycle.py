"""One negotiation cycle as a pure function: ``negotiate(snapshot, requests, ...)``.

Structured in HTCondor's phases (matchmaker.cpp ``negotiationTime``/``negotiateWithGroup``/
``negotiate``/``matchmakingAlgorithm``):

1. *Obtain ads*: the caller fetched them (collector snapshot, schedds' resource requests)
   and hands them in; phase 1 ends when ``negotiate`` is called.
2. *Accounting and trimming*: the accountant ages priorities and recounts usage from the
   Claimed slot ads; slots that are neither Unclaimed nor, under
   NEGOTIATOR_CONSIDER_PREEMPTION, Claimed (see :mod:`.preemption`) are trimmed, as are
   slots the private ads give no claim id. Claimed candidates get RemoteUserPrio.
   With GROUP_NAMES, the group tree gets its quotas (:mod:`.groups`).
3. and 4. happen in each *pie* (:mod:`.pie`): without groups one pie for every submitter;
   with groups one per group and allocation round, in GROUP_SORT_EXPR order, each with
   the group's whole-number limit. A pie sorts its submitters (EUP, then starvation),
   then spins: each submitter turn (one per submitter and schedd, ``_negotiate_turn``,
   HTCondor's ``negotiate()``) matches up to its limit; a candidate whose cost would pass
   the limit is skipped unless it is the turn's first match ("submitter limit
   exceeded"); past the limit on the first spin only startd-rank preemption may match.

Matching one request (an autocluster ad with ``ResourceRequestCount`` idle jobs) uses the
numpy kernel over ONE :class:`SlotTable` per cycle: both Requirements and the job's Rank
by ``match_vector``; NEGOTIATOR_PRE_JOB_RANK / POST_JOB_RANK vectorised with the slot as
MY. Candidates are ordered, larger first, by (pre-job rank, job Rank, post-job rank,
preemption state, PREEMPTION_RANK), ties by snapshot order. Rank values that are not numbers are -DBL_MAX, and numbers are
rounded to single precision, as HTCondor's ``EvalNegotiatorMatchRank`` does.

Slots: a static slot leaves the candidates once matched (its ``Capability``); so does a
partitionable slot without a consumption policy (matched whole, once a cycle, if the job
fits what it has left, :mod:`.fit`; its cost its whole SlotWeight: the schedd carves it
and may use the leftovers itself). A
partitionable slot that advertises a consumption policy (HTCondor's
``cp_supports_policy``: MachineResources, and Consumption<Res> for each of its resources
but Swap) stays, its Cpus/Memory/Disk and custom resources (GPUs, ...) reduced by the job's Consumption<Res>
(evaluated with the job as TARGET); each match takes one unused claim id from its
``ClaimIdList`` and costs W(S) - W(S'), its SlotWeight before minus after the deduction.
It is a candidate only while every consumption is >= 0 and <= what is left, and at least
one is > 0; while matching it, the job's RequestCpus/Memory/Disk read as the consumption
values (``cp_override_requested``). A SlotWeight that is not a number, or is negative,
weighs 1 (``Accountant::GetSlotWeight``).

Concurrency limits (:mod:`.limits`): the limits in use are counted from every slot ad's
ConcurrencyLimits; a job whose ConcurrencyLimits string would take a limit over its
maximum is rejected ("concurrency limit <name> reached") before any slot is looked at; a
ConcurrencyLimits expression is evaluated against each candidate slot, skipping those
it would take over. Each match adds its job's limits.

A request that finds no slot is rejected, and its autocluster with it for the rest of
that submitter's turn; the rejection (HTCondor's reason) goes to its schedd.
"""

from __future__ import annotations

import functools
import heapq
import math
import random
import struct
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypeVar

import numpy as np

from ..claimid import from_sinful, sinful
from ..classad import UNDEFINED, ClassAd, ClassAdSyntaxError, evaluate, parse_expr
from ..classad import vector as V
from ..classad.budget import Budget, BudgetExceeded
from ..classad.kernel import (
    ColumnCarry,
    CompiledExpr,
    KernelStats,
    MatchResult,
    SlotTable,
    SuppliedColumn,
    Varying,
    match_vector,
    table_budget,
)
from ..classad.operators import truth
from ..classad.refs import DynamicReference
from ..classad.tree import AttrRef, Expr, Literal, Select, unparse
from ..config import ConfigDict, ConfigError
from .accountant import Accountant
from .candidates import CandidateStream
from .fit import PslotFit
from .groups import ROOT, Group, GroupConfig, GroupConfigError, GroupTree
from .limits import ConcurrencyLimits, LimitMaxima
from .log import CYCLE_FINISHED, CYCLE_STARTED, LogLine
from .memo import AnswerMemo, Answers
from .pie import DONE, INT_MAX, RESUME, SpinStats, TurnLimits, negotiate_with_group, permits
from .preemption import (
    NO_PREEMPTION,
    PRIO_PREEMPTION,
    RANK_PREEMPTION,
    Diagnosis,
    preempted_user_key,
    preempting_line,
    preemption_policy,
    with_submitter_attrs,
)
from .slotclasses import (
    ClassView,
    SlotClasses,
    WatchedAd,
    WideTaint,
    alike_answer,
    job_reach,
    referenced_attrs,
)
from .stats import CycleStats

__all__ = [
    "POOL_DOMAIN",
    "CycleConfig",
    "CycleResult",
    "CycleMatch",
    "NegotiatorInputError",
    "CycleRejection",
    "ResourceRequest",
    "CycleAds",
    "negotiate",
    "requests_from_ads",
    "slot_usage",
]

POOL_DOMAIN = "mockpool"  # accounting names are "<owner or group>@mockpool"
NO_RANK = -sys.float_info.max  # HTCondor: a rank that is not a number is -DBL_MAX
RESOURCES = ("Cpus", "Memory", "Disk")
DEFAULT_LOG_MATCH_LIMIT = 1000
# the job attributes a request's evaluation against slots starts from
_READS_KEY = ("Requirements", "Rank", "ConcurrencyLimits")  # what keys _reads_wide
# a request evaluated on at most this many p-slot states (and nothing else) is evaluated
# state by state with the scalar evaluator
_ONE_BY_ONE = 4
# a key of fewer slots than this is walked a slot at a time when the submitter's limit
# turns its slots down (its check costs more than the walk)
_PASS_OVER_ROWS = 64


class NegotiatorInputError(ValueError):
    """A resource request, slot ad or knob the negotiator cannot use.

    ``knob``: the knob to locate the problem by, when the message does not say where it
    is (a message from a ConfigError, or one naming a knob's file and line, already does).
    """

    def __init__(self, message: str, *, knob: str | None = None) -> None:
        super().__init__(message)
        self.knob = knob


# ------------------------------------------------------------------------------ inputs


@dataclass(frozen=True)
class CycleAds:
    """Phase 1's ads: slot ads, their private ads (claim ids), and, for counts, the
    Submitter and Scheduler ads."""

    slots: Sequence[ClassAd]
    private_ads: Sequence[ClassAd] = ()
    submitters: Sequence[ClassAd] = ()
    schedulers: Sequence[ClassAd] = ()
    # slot attributes sent as columns (a columnar snapshot), by lower-case name: read
    # from there rather than from the ads
    slot_columns: Mapping[str, SuppliedColumn] = field(default_factory=dict)


def _int_attr(
    ad: ClassAd,
    name: str,
    what: str,
    *,
    default: int | None = None,
    now: float | None = None,
    rng: random.Random | None = None,
) -> int:
    v = ad.eval(name, now=now, rng=rng)
    if v is UNDEFINED and default is not None:
        return default
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise NegotiatorInputError(f"{what}: {name} must be an integer, got {v!r}")
    return int(v)


@dataclass(frozen=True)
class ResourceRequest:
    """One autocluster of idle jobs from one schedd."""

    ad: ClassAd  # the representative job ad
    schedd: str  # schedd name
    schedd_address: str  # its gRPC address, host:port
    submitter: str
    autocluster_id: int
    count: int  # ResourceRequestCount: idle jobs in the autocluster
    cluster_id: int = 0
    proc_id: int = 0
    job_id: str = field(init=False, repr=False, compare=False)  # "cluster.proc"

    def __post_init__(self) -> None:
        object.__setattr__(self, "job_id", f"{self.cluster_id}.{self.proc_id}")

    @classmethod
    def from_ad(
        cls,
        ad: ClassAd,
        schedd: str,
        schedd_address: str,
        *,
        now: float | None = None,
        rng: random.Random | None = None,
    ) -> ResourceRequest:
        """Validates the attributes the negotiator needs (NegotiatorInputError names it);
        ``now`` and ``rng``: what time() and random() in them read (the negotiator's)."""
        what = f"resource request from {schedd}"
        ac = _int_attr(ad, "AutoClusterId", what, now=now, rng=rng)
        what = f"resource request (autocluster {ac}) from {schedd}"
        submitter = ad.eval("Submitter", now=now, rng=rng)
        if not isinstance(submitter, str) or not submitter:
            raise NegotiatorInputError(f"{what}: Submitter must be a non-empty string")
        count = _int_attr(ad, "ResourceRequestCount", what, now=now, rng=rng)
        if count < 0:
            raise NegotiatorInputError(f"{what}: ResourceRequestCount must be >= 0, got {count}")
        return cls(
            ad=ad,
            schedd=schedd,
            schedd_address=schedd_address,
            submitter=submitter,
            autocluster_id=ac,
            count=count,
            cluster_id=_int_attr(ad, "ClusterId", what, default=0, now=now, rng=rng),
            proc_id=_int_attr(ad, "ProcId", what, default=0, now=now, rng=rng),
        )


@dataclass(frozen=True)
class CycleConfig:
    """The knobs a cycle reads, parsed once (NegotiatorInputError names a bad one)."""

    pre_job_rank: Expr | None
    post_job_rank: Expr | None
    use_slot_weights: bool
    slot_weight: Expr
    limit_max: LimitMaxima
    log_match_limit: int = DEFAULT_LOG_MATCH_LIMIT
    consider_preemption: bool = True  # NEGOTIATOR_CONSIDER_PREEMPTION
    consider_early_preemption: bool = False  # NEGOTIATOR_CONSIDER_EARLY_PREEMPTION
    preemption_requirements: Expr | None = None  # None: priority preemption always allowed
    preemption_rank: Expr | None = None
    groups: GroupConfig = field(default_factory=GroupConfig)
    # NEGOTIATOR_MAX_TIME_PER_CYCLE / _SUBMITTER / _SCHEDD / _PIESPIN, pool seconds
    max_time: tuple[int, int, int, int] = (1200, 60, 120, 120)
    # Evaluate per slot class (.slotclasses); False: every slot its own class, the
    # slot-by-slot cycle the class-based one must agree with.
    slot_classes: bool = True

    @classmethod
    def from_config(
        cls, config: ConfigDict, *, log_match_limit: int = DEFAULT_LOG_MATCH_LIMIT
    ) -> CycleConfig:
        def expr(name: str, required: bool) -> Expr | None:
            try:
                text = (config.lookup(name) or "").strip()
            except ConfigError as exc:
                raise NegotiatorInputError(str(exc)) from None
            if not text:
                if required:
                    raise NegotiatorInputError(f"{name} must be set", knob=name)
                return None
            try:
                return parse_expr(text)
            except ClassAdSyntaxError as exc:
                knob = config.knob(name)
                if knob is None:
                    raise NegotiatorInputError(f"{name} = {text}: {exc}", knob=name) from None
                raise NegotiatorInputError(f"{knob.where}: {knob.name} = {text}: {exc}") from None

        try:
            use_weights = config.get_bool("NEGOTIATOR_USE_SLOT_WEIGHTS")
            consider = config.get_bool("NEGOTIATOR_CONSIDER_PREEMPTION")
            early = config.get_bool("NEGOTIATOR_CONSIDER_EARLY_PREEMPTION", False)
            prio_req = preemption_policy(config, "PREEMPTION_REQUIREMENTS")
            prio_rank = preemption_policy(config, "PREEMPTION_RANK")
            limit_max = LimitMaxima(config)
            max_time = tuple(
                config.get_int(f"NEGOTIATOR_MAX_TIME_PER_{k}", d)
                for k, d in (("CYCLE", 1200), ("SUBMITTER", 60), ("SCHEDD", 120), ("PIESPIN", 120))
            )
            groups = GroupConfig.from_config(config)
        except GroupConfigError as exc:
            raise NegotiatorInputError(str(exc), knob=exc.knob) from None
        except ValueError as exc:  # ConfigError included: its message says where
            raise NegotiatorInputError(str(exc)) from None
        slot_weight = expr("SLOT_WEIGHT", True)
        assert slot_weight is not None
        _check_number(config, "SLOT_WEIGHT", slot_weight)
        return cls(
            consider_preemption=consider,
            consider_early_preemption=early and consider,  # HTCondor ignores it without preemption
            preemption_requirements=prio_req,
            preemption_rank=prio_rank,
            pre_job_rank=expr("NEGOTIATOR_PRE_JOB_RANK", False),
            post_job_rank=expr("NEGOTIATOR_POST_JOB_RANK", False),
            use_slot_weights=use_weights,
            slot_weight=slot_weight,
            limit_max=limit_max,
            log_match_limit=log_match_limit,
            groups=groups,
            max_time=max_time,  # type: ignore[arg-type]
        )


# A one-cpu slot to type-check slot expressions against at start.
_PROBE_SLOT = ClassAd(Cpus=1, Memory=1024, Disk=1048576, SlotID=1, State="Unclaimed")


def _check_number(config: ConfigDict, name: str, e: Expr) -> None:
    """Refuse an expression that is not a number (or UNDEFINED) for a one-cpu slot."""
    # a check of the value's type: any date and any draw will do
    value = evaluate(e, _PROBE_SLOT, None, now=0, rng=random.Random(0))
    if value is UNDEFINED or (isinstance(value, (int, float)) and not isinstance(value, bool)):
        return
    knob = config.knob(name)
    where = f"{knob.where}: {knob.name}" if knob is not None else name
    shown = repr(value) if isinstance(value, (str, bool, list)) else str(value).upper()
    raise NegotiatorInputError(
        f"{where} = {config.lookup(name)}: evaluates to {shown} on a one-cpu slot, not a number",
        knob=None if knob is not None else name,
    )


# ----------------------------------------------------------------------------- outputs


class CycleMatch(NamedTuple):  # a tuple: a cycle makes up to 100,000 of them
    submitter: str
    schedd: str
    schedd_address: str
    autocluster_id: int
    job_id: str  # the autocluster's representative job (the schedd picks the real one)
    slot_name: str
    claim_id: str  # a secret: never log it (claimid.redact)
    slot_ad: ClassAd  # the slot's public ad as offered (a p-slot: before this match)
    startd_address: str  # host:port of the startd server holding the slot
    cost: float  # SlotWeight charged (a p-slot: W(S) - W(S'))


class CycleRejection(NamedTuple):  # a tuple, as CycleMatch: a cycle may reject thousands
    """A request the cycle could not serve, and HTCondor's reason (sent to its schedd,
    which sets LastRejMatchReason/LastRejMatchTime on the job)."""

    submitter: str
    schedd: str
    schedd_address: str
    autocluster_id: int
    job_id: str
    reason: str
    time: float


@dataclass
class CycleResult:
    matches: list[CycleMatch]
    accountant: Accountant
    stats: CycleStats
    log: list[LogLine]
    finished: bool = False
    _matching_end: float = 0.0
    rejections: list[CycleRejection] = field(default_factory=list)
    groups: GroupTree | None = None  # the group tree as negotiated (None without GROUP_NAMES)

    def rejections_by_schedd(self) -> dict[str, list[CycleRejection]]:
        out: dict[str, list[CycleRejection]] = {}
        for r in self.rejections:
            out.setdefault(r.schedd, []).append(r)
        return out

    def matches_by_schedd(self) -> dict[str, list[CycleMatch]]:
        out: dict[str, list[CycleMatch]] = {}
        for m in self.matches:
            out.setdefault(m.schedd, []).append(m)
        return out

    def finish(self, end: float, cpu_time: float | None = None) -> None:
        """Close the cycle at pool time ``end`` (after the matches were sent: HTCondor
        sends them during phase 4, so the sending counts in phase 4)."""
        if self.finished:
            return
        s = self.stats
        end = max(end, self._matching_end)
        s.duration_phase4 += end - self._matching_end
        s.end_time = end
        s.duration = end - s.start_time
        if cpu_time is not None:
            s.cpu_time = cpu_time
        self.log.append(LogLine(end, CYCLE_FINISHED))
        self.finished = True


# ------------------------------------------------------------------- slot table state


def _numbers(v: V.Vec, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(float values, is-a-number mask) of a Vec; booleans count as 1/0 as in the kernel."""
    tags = v.tags()
    out = np.zeros(n, dtype=np.float64)
    ok = np.zeros(n, dtype=bool)
    if v.i is not None:
        m = (tags == V.I) | (tags == V.B)
        out[m] = np.broadcast_to(v.i, (n,))[m]
        ok |= m
    if v.f is not None:
        m = tags == V.R
        out[m] = np.broadcast_to(v.f, (n,))[m]
        ok |= m
    ok &= np.isfinite(out)
    return out, ok


def _scalar_number(value: object) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)) and math.isfinite(value):
        return float(value)
    return None


def _rank_number(value: object) -> float:
    """A job's Rank as the kernel reads it (``kernel.match._as_float``): a number or a
    boolean, else 0."""
    if type(value) is bool or type(value) is int:
        return float(int(value))
    return value if type(value) is float else 0.0


def _preserve_int(x: float) -> int | float:
    return int(x) if float(x).is_integer() else float(x)


T = TypeVar("T")

_MY = AttrRef("MY")


def _my(name: str) -> Expr:
    return Select(_MY, name)


# The slot columns a cycle reads whatever its expressions (and the roots of what they
# reach): read in one pass over the ads.
_READ_EVERY_CYCLE = (
    "PartitionableSlot",
    "MachineResources",
    "State",
    "RetirementTimeRemaining",
    *RESOURCES,
    *(f"Consumption{res}" for res in RESOURCES),
    "SlotWeight",
    "Requirements",
    "Rank",
    "CurrentRank",
    "ConcurrencyLimits",
    "PreemptingConcurrencyLimits",
)


class _Slots:
    """The cycle's slots: one table, what is still on offer, what p-slots have left."""

    def __init__(
        self,
        snapshot: CycleAds,
        cfg: CycleConfig,
        stats: KernelStats,
        now: float,
        jobs: Sequence[ClassAd] = (),
        carry: CycleCarry | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.now = now  # the date the slots' and jobs' expressions see (time(), CurrentTime)
        self.rng = rng  # what random() in them draws from: the negotiator's own
        self.ads = list(snapshot.slots)
        # every slot, for the phase-2 masks
        self._carry = None if carry is None else carry.slots
        self.table = SlotTable(self.ads, carry=self._carry, supplied=snapshot.slot_columns)
        self.cfg = cfg
        self.kstats = stats
        n = self.n = len(self.ads)
        t = self.table
        # the columns the cycle reads: those of every cycle and the names the jobs'
        # expressions reach, in one pass over the ads (the slots' own expressions may
        # reach a few more: referenced_attrs reads those)
        jobs = list(jobs)
        self.fit: PslotFit | None = None  # known below; _reach_from reads it
        on_jobs = self._on_jobs(jobs) if cfg.slot_classes else None
        t.gather(
            [
                *_READ_EVERY_CYCLE,
                *(on_jobs or ()),
                *(() if carry is not None else ("MyAddress",)),
            ]
        )
        empty = ClassAd()

        def mask(text: str) -> np.ndarray:
            return CompiledExpr(text).requirements_mask(
                t, empty, "target", stats=stats, now=self.now, rng=self.rng
            )

        self.is_p = mask("PartitionableSlot =?= true")
        self.has_cp = self._consumption_policy(empty)
        self.unclaimed = mask('State == "Unclaimed"')
        self.claimed = mask('State == "Claimed"')
        self.names = self._names(empty, None if carry is None else carry.slots)
        # read with the columns: a match need not read the slot's (cold) ad for it
        self._my_address: list[Expr | None] = t.objects("MyAddress")
        # Claim ids from the private ads, joined by Name.
        private = _PrivateAds(
            snapshot.private_ads, None if carry is None else carry.private, now, rng
        )
        # Claimed slots stay candidates when preemption is considered (not p-slots, nor
        # jobs with retirement left unless early preemption): trimStartdAds.
        offered = self.unclaimed.copy()
        if cfg.consider_preemption:
            preemptible = self.claimed & ~self.is_p
            if not cfg.consider_early_preemption:
                preemptible &= ~mask("RetirementTimeRemaining > 0")
            offered |= preemptible
        self.claims, with_ids = private.claims(self.names, np.flatnonzero(offered), self.has_cp)
        has_claim = np.zeros(n, dtype=bool)
        has_claim[with_ids] = True
        self.alive = offered & has_claim
        self.n_alive = int(self.alive.sum())
        # whether any candidate is Claimed (preemption can happen at all this cycle)
        self.any_claimed = bool((self.alive & self.claimed).any())
        self.no_claim_id = int((self.unclaimed & ~has_claim).sum())
        self.remote_prio: dict[int, tuple[float, float]] = {}  # Claimed rows: (EUP, in use)
        self._deducted: set[int] = set()  # p-slots split this cycle
        # the p-slots matched whole are held to WithinResourceLimits (.fit)
        fit_rows = self.alive & self.is_p & ~self.has_cp
        self.fit = (
            PslotFit.of(t, fit_rows, stats=stats, now=now, rng=rng) if fit_rows.any() else None
        )
        # Requests are evaluated per slot class (see .slotclasses), on a table of one
        # representative ad per class whose p-slot rows follow the cycle's deductions.
        # Names with a value per machine (FileSystemDomain) are left out of the key of
        # the grouped slots; a request that reads one is evaluated slot by slot.
        # Claimed slots form classes too, apart from the Unclaimed ones and by the user
        # they would preempt (what they answer and RemoteUserPrio follow from that and
        # the names in the key).
        reached = self._referenced(jobs, on_jobs)
        claimed_rows = np.flatnonzero(self.alive & self.claimed & ~self.has_cp)
        self.classes = SlotClasses.build(
            t,
            self.alive,
            self.alive & ~self.has_cp & (self.unclaimed | self.claimed),
            self.alive & self.has_cp,
            None if reached is None else set(reached),
            self.resources,
            wide_above=max(64, int(math.sqrt(n))),
            apart=preempted_user_key(t, claimed_rows) if len(claimed_rows) else None,
        )
        self.view = self._view(self.classes)
        # a request's answers, remembered per request shape for the next one like it
        self.memo = None if reached is None else AnswerMemo(list(reached), len(self.resources))
        # A job's Requirements that read a wide name may still be decided per class in
        # three-valued logic (condor_submit's FileSystemDomain clause): see WideTaint.
        self.taint = (
            WideTaint.of(reached, self.classes.wide)
            if reached is not None and self.classes.wide
            else None
        )
        # the classes of several slots, and the names that may differ among them: one
        # for the cycle, so a request tree's walk is remembered across requests
        self.varies = (
            Varying(self.view.sizes > 1, self.taint.tainted) if self.taint is not None else None
        )
        self._fine: ClassView | None = None
        self.weight_cache: dict[tuple[int, bytes], float] = {}
        self._weight_now: dict[int, float] = {}  # p-slots' weights, by row (weight_now)
        self._owned_by_row: dict[int, list[tuple[int, str]]] = {}  # see _owned
        self._last_keys: tuple[int, bytes, tuple[tuple, tuple | None]] | None = None
        self._bases: list[int] | None = None  # see cache_keys
        self._wide_bases: list[int] | None = None
        # match_cost's last answer (row, consumption, weight after): the deduction that
        # follows it reads the weight from here
        self._costed: tuple[int, np.ndarray, float, list[float]] | None = None
        # Resources left (p-slots change during the cycle) and slot weights.
        # Custom resources (GPUs, MACHINE_RESOURCE_<name>) are rows after Cpus/Memory/Disk;
        # a slot without one has none of it and its jobs consume none (cp_deduct_assets
        # walks the slot's own MachineResources).
        self._avail = np.zeros((len(self.resources), n))
        for k, res in enumerate(self.resources):
            values = CompiledExpr(_my(res)).eval(
                t, empty, "target", stats=stats, now=self.now, rng=self.rng
            )
            vals, ok = _numbers(values, n)
            self._avail[k] = vals if k < len(RESOURCES) else np.where(self.owns[k] & ok, vals, 0.0)
        # A p-slot's resources as floats once it is matched (a deduction is a few float
        # subtractions, not array operations), written into the array before it is read
        # whole; the bytes of the floats key what is remembered of a p-slot holding them.
        self._left: dict[int, list[float]] = {}
        self._unwritten: set[int] = set()
        self._held_bytes = struct.Struct(f"={len(self.resources)}d").pack
        self.weight = self._weights(empty)
        # the same, as lists: read once a match
        self.weights: list[float] = self.weight.tolist()
        self.p_slot: list[bool] = self.is_p.tolist()
        self.cp_slot: list[bool] = self.has_cp.tolist()
        self.current: dict[int, ClassAd] = {}  # p-slots changed this cycle: their ads now
        has_limits = (
            t.column("ConcurrencyLimits").present | t.column("PreemptingConcurrencyLimits").present
        )
        self.limits = ConcurrencyLimits(
            cfg.limit_max, [self.ads[r] for r in np.flatnonzero(has_limits)], now=now, rng=rng
        )
        # Expressions compiled once a cycle.
        self.pre = CompiledExpr(cfg.pre_job_rank) if cfg.pre_job_rank is not None else None
        self.post = CompiledExpr(cfg.post_job_rank) if cfg.post_job_rank is not None else None
        self.cons_exprs = [
            (f"Consumption{res}", CompiledExpr(_my(f"Consumption{res}"))) for res in self.resources
        ]
        # A negotiator rank that reaches no resource (nor a wide name) has one value per
        # p-slot and request for the whole cycle: the re-offer test remembers it.
        changing = {r.lower() for r in self.resources} | set(self.classes.wide)
        self._rank_fixed = tuple(
            e is not None
            and (reach := referenced_attrs(t, jobs, [e], [])) is not None
            and changing.isdisjoint(reach)
            for e in (cfg.pre_job_rank, cfg.post_job_rank)
        )
        # (pre/post, row, id(job)) -> (job, rank): the job is held, so its id stays its
        # own (the re-offer test is also given a request's short-lived copies)
        self._rank_memo: dict[tuple[int, int, int], tuple[ClassAd, float]] = {}

    def _names(self, empty: ClassAd, carry: ColumnCarry | None) -> list[str]:
        """Each slot's Name (a literal, as startds send it, is kept with a carry: read
        again only where the ad was replaced; an expression is evaluated each cycle)."""
        if carry is None:
            reads = ClassAd.string_values(self.ads, "Name", empty, now=self.now, rng=self.rng)
        else:
            reads = carry.per_row("Name", self.ads, _literal_name)
            if _NOT_LITERAL in reads:
                reads = [
                    _string_attr(ad, "Name", empty, self.now, self.rng) if x is _NOT_LITERAL else x
                    for ad, x in zip(self.ads, reads, strict=True)
                ]
        if None not in reads:
            return reads  # type: ignore[return-value]
        return [x if x is not None else f"<slot {r}>" for r, x in enumerate(reads)]

    def _consumption_policy(self, empty: ClassAd) -> np.ndarray:
        """cp_supports_policy: a p-slot with MachineResources and Consumption<Res> for each
        of them but Swap. Sets ``resources`` (Cpus, Memory, Disk, then the custom ones the
        policy slots list) and ``owns`` (which slot lists which resource)."""
        out = np.zeros(self.n, dtype=bool)
        self.resources: tuple[str, ...] = RESOURCES
        self.owns = np.ones((len(RESOURCES), self.n), dtype=bool)
        prow = np.flatnonzero(self.is_p)
        if not len(prow):
            return out
        t = self.table
        mres = (
            CompiledExpr(_my("MachineResources"))
            .eval(t, empty, "target", stats=self.kstats, now=self.now, rng=self.rng)
            .to_values(t.pool)
        )
        by_text: dict[str, list[int]] = {}
        for r in prow:
            if isinstance(mres[r], str):
                by_text.setdefault(mres[r], []).append(int(r))
        for text, rows in by_text.items():
            ok = np.ones(len(rows), dtype=bool)
            for asset in text.replace(",", " ").split():
                if asset.lower() != "swap":
                    ok &= t.column(f"Consumption{asset}").present[rows]
            out[np.array(rows)[ok]] = True
        # attribute names are case-insensitive: "GPUs" and "Gpus" are one resource
        spelling: dict[str, str] = {}
        custom: dict[str, set[int]] = {}
        for text, rows in by_text.items():
            for asset in text.replace(",", " ").split():
                key = asset.lower()
                if key not in ("swap", "cpus", "memory", "disk"):
                    spelling.setdefault(key, asset)
                    custom.setdefault(key, set()).update(r for r in rows if out[r])
        keys = sorted(k for k, rs in custom.items() if rs)
        if keys:
            self.resources = RESOURCES + tuple(spelling[k] for k in keys)
            owns = np.zeros((len(keys), self.n), dtype=bool)
            for k, key in enumerate(keys):
                owns[k, sorted(custom[key])] = True
            self.owns = np.vstack([self.owns, owns])
        return out

    def _weights(self, empty: ClassAd) -> np.ndarray:
        if not self.cfg.use_slot_weights:
            return np.ones(self.n)
        t = self.table
        own, ok_own = _numbers(
            CompiledExpr(_my("SlotWeight")).eval(
                t, empty, "target", stats=self.kstats, now=self.now, rng=self.rng
            ),
            self.n,
        )
        dflt, ok_dflt = _numbers(
            CompiledExpr(self.cfg.slot_weight).eval(
                t, empty, "target", stats=self.kstats, now=self.now, rng=self.rng
            ),
            self.n,
        )
        present = t.column("SlotWeight").present
        w = np.where(present, own, dflt)
        ok = np.where(present, ok_own, ok_dflt) & (w >= 0)
        return np.where(ok, w, 1.0)

    def _reach_from(self, resources: Sequence[str]) -> tuple[list[Expr], list[str]]:
        """Where the cycle's expressions start: the negotiator's own, and the names it
        reads of every slot and job (``resources``: the slots' resources)."""
        cfg = self.cfg
        roots = [
            e
            for e in (
                cfg.pre_job_rank,
                cfg.post_job_rank,
                cfg.slot_weight,
                cfg.preemption_requirements,
                cfg.preemption_rank,
            )
            if e is not None
        ]
        names = ["Requirements", "Rank", "CurrentRank", "SlotWeight", "ConcurrencyLimits"]
        if self.fit is not None:  # its names key the classes and the request shapes
            roots += self.fit.exprs
            names.append("MachineResources")
        return roots, names + [f"Consumption{res}" for res in resources]

    def _on_jobs(self, jobs: Sequence[ClassAd]) -> dict[str, list[Expr]] | None:
        """``job_reach`` from the standard resources' names (None: unknowable)."""
        try:
            return job_reach(jobs, *self._reach_from(RESOURCES))
        except DynamicReference:
            return None

    def _referenced(
        self, jobs: Sequence[ClassAd], on_jobs: dict[str, list[Expr]] | None
    ) -> dict[str, list[Expr]] | None:
        """The attributes this cycle's expressions can reach, with the expressions they
        hold (None: unknowable)."""
        if on_jobs is None:
            return None
        return referenced_attrs(self.table, jobs, *self._reach_from(self.resources), on_jobs)

    def _view(self, classes: SlotClasses, grouped: bool = True) -> ClassView:
        cfg = self.cfg
        pbase = None
        if grouped and cfg.slot_classes:
            pbase = classes.base_wide if classes.base_wide is not None else classes.base
        view = ClassView(
            self.ads,
            classes,
            self.alive,
            self.has_cp,
            ~self.unclaimed,
            (cfg.preemption_requirements, cfg.preemption_rank),
            self.kstats,
            pbase,
            self.owns,
            self.resources,
            now=self.now,
            rng=self.rng,
        )
        view.dirty.update(self._deducted)
        if self.remote_prio:
            rows = np.fromiter(self.remote_prio, dtype=np.int64)
            prio, used = (np.array(v) for v in zip(*self.remote_prio.values(), strict=True))
            view.table.set_numbers("RemoteUserPrio", classes.of[rows], prio)
            view.table.set_numbers("RemoteUserResourcesInUse", classes.of[rows], used)
        return view

    def fine(self) -> ClassView:
        """Every live slot its own class: for a request that reads a wide name."""
        if self._fine is None:
            self._fine = self._view(
                SlotClasses.build(self.table, self.alive, self.alive, self.alive, None, ()),
                grouped=False,
            )
        return self._fine

    def views(self) -> list[ClassView]:
        return [self.view] if self._fine is None else [self.view, self._fine]

    def kill(self, row: int) -> None:
        """Row ``row`` is no longer a candidate this cycle."""
        if self.alive[row]:
            self.alive[row] = False
            self.n_alive -= 1
            self.view.kill(row)
            if self._fine is not None:
                self._fine.kill(row)

    def kill_rows(self, rows: list[int]) -> None:
        """``kill`` of each of ``rows`` (live, distinct): a run's static slots at once."""
        if len(rows) < 16:  # numpy's fixed cost is more than a few kills
            for row in rows:
                self.kill(row)
            return
        at = np.asarray(rows, dtype=np.int64)
        self.alive[at] = False
        self.n_alive -= len(at)
        for view in self.views():
            view.kill_rows(at)

    def add_remote_prios(self, acct: Accountant) -> None:
        """RemoteUserPrio and RemoteUserResourcesInUse on the Claimed candidates (as a
        float, as HTCondor's addRemoteUserPrios assigns it)."""
        view = self.view
        by_user = view.preempt.prio_inputs()  # Claimed classes: one remote user each
        if not by_user:
            return
        crows = np.fromiter((c for cs in by_user.values() for c in cs), dtype=np.int64)
        prio = np.array([float(np.float32(acct.eup(u))) for u, cs in by_user.items() for _ in cs])
        used = np.array([acct.resources_used(u) for u, cs in by_user.items() for _ in cs])
        view.table.set_numbers("RemoteUserPrio", crows, prio)
        view.table.set_numbers("RemoteUserResourcesInUse", crows, used)
        members = view.classes.members
        self.remote_prio = {
            r: inserted
            for c, inserted in zip(
                crows.tolist(), zip(prio.tolist(), used.tolist(), strict=True), strict=True
            )
            for r in members[c].tolist()
        }

    def usage(self) -> tuple[dict[str, float], dict[str, int]]:
        """``slot_usage`` of the cycle's slots; carried, a slot's accounting name is read
        again only where its ad was replaced."""
        carry = self._carry
        now, rng = self.now, self.rng
        names = (
            None
            if carry is None
            else carry.per_row("accounting", self.ads, lambda ad: _accounting_name(ad, now, rng))
        )
        return slot_usage(self.ads, self.weight, self.claimed, names, now=now, rng=rng)

    def offer_with_remote_prio(self, row: int) -> ClassAd:
        """The Claimed slot's ad with the attributes the cycle inserted (HTCondor sends
        them to the schedd with the offer); copied only for a slot being matched."""
        prio, used = self.remote_prio.get(row, (None, None))
        ad = self.ad(row)
        if prio is None:
            return ad
        ad = self.current[row] = ad.copy()
        ad["RemoteUserPrio"] = prio
        ad["RemoteUserResourcesInUse"] = _preserve_int(used)
        return ad

    # -- the current state of one slot --------------------------------------------------
    def startd_address(self, row: int, offer: ClassAd) -> str:
        """host:port of the startd holding ``row``, as ``offer`` (its ad, or a copy the
        cycle changed) names it."""
        e = self._my_address[row]
        if type(e) is Literal and offer is self.ads[row]:
            return _startd_address(e.value) if isinstance(e.value, str) else ""
        return _startd_address_of(offer, self.now, self.rng)

    def ad(self, row: int) -> ClassAd:
        ad = self.current.get(row)
        return ad if ad is not None else self.ads[row]

    @property
    def avail(self) -> np.ndarray:
        """Resources left, (resources, slots), with every deduction made so far."""
        if self._unwritten:
            rows = sorted(self._unwritten)
            self._avail[:, rows] = np.array([self._left[r] for r in rows]).T
            self._unwritten.clear()
        return self._avail

    def left(self, row: int) -> list[float]:
        """What p-slot ``row`` holds now, a float per resource (never change it)."""
        got = self._left.get(row)
        if got is None:
            got = self._left[row] = self._avail[:, row].tolist()
        return got

    def held_keys(self, row: int) -> tuple[tuple, tuple | None]:
        """``cache_keys`` of what p-slot ``row`` holds now."""
        return self._keys_after(row, self.left(row))

    def cache_keys(self, row: int, held: bytes) -> tuple[tuple, tuple | None]:
        """The keys of what is remembered about p-slot ``row`` holding ``held``: its
        base class's, and the one p-slots alike but for a wide name share (for what
        provably did not read it)."""
        if self._bases is None:  # each p-slot's base class (and shared key), as ints
            wide = self.classes.base_wide
            self._bases = self.classes.base.tolist()
            self._wide_bases = None if wide is None else [-1 - w for w in wide.tolist()]
        key = (self._bases[row], held)
        wide_bases = self._wide_bases
        shared = (wide_bases[row], held) if wide_bases is not None and key[0] >= 0 else None
        return key, shared

    def cached_weight(self, row: int, avail: list[float]) -> float | None:
        return self._cached_weight(*self._keys_after(row, avail))

    def _keys_after(self, row: int, avail: list[float]) -> tuple[tuple, tuple | None]:
        """``cache_keys`` of p-slot ``row`` holding ``avail`` (the last answer kept: the
        deduction that follows match_cost, and the re-offer that follows the deduction,
        ask for what the p-slot holds just then)."""
        held = self._held_bytes(*avail)
        last = self._last_keys
        if last is not None and last[0] == row and last[1] == held:
            return last[2]
        keys = self.cache_keys(row, held)
        self._last_keys = (row, held, keys)
        return keys

    def _cached_weight(self, key: tuple, shared: tuple | None) -> float | None:
        w = self.weight_cache.get(key) if key[0] >= 0 else None
        if w is None and shared is not None:
            w = self.weight_cache.get(shared)
        return w

    def slot_weight(self, ad: ClassAd, row: int, avail: list[float]) -> float:
        """The SlotWeight of p-slot ``row``'s ad ``ad`` holding ``avail``; remembered per
        base class and resources left."""
        if not self.cfg.use_slot_weights:
            return 1.0
        key, shared = self._keys_after(row, avail)
        w = self._cached_weight(key, shared)
        if w is None:
            watched = WatchedAd.of(ad, self.classes.wide)
            e = watched.lookup("SlotWeight") or self.cfg.slot_weight
            v = _scalar_number(evaluate(e, watched, None, now=self.now, rng=self.rng))
            w = v if v is not None and v >= 0 else 1.0
            if shared is not None and not watched.read:
                self.weight_cache[shared] = w
            elif key[0] >= 0:
                self.weight_cache[key] = w
        return w

    def deduct(self, row: int, cons: np.ndarray) -> float:
        """Take ``cons`` from p-slot ``row``; returns the cost W(S) - W(S')."""
        before = self.ad(row)
        w0 = self.weight_now(row)
        costed, self._costed = self._costed, None
        # match_cost's, on these same resources (none deducted since)
        same = costed is not None and costed[0] == row and costed[1] is cons
        left = costed[3] if same else _minus(self.left(row), cons)  # type: ignore[index]
        self._left[row] = left
        self._unwritten.add(row)
        # A fresh copy each time: the ad offered with an earlier match must not change.
        ad = self.current[row] = self._holding(row, before, left)
        self._deducted.add(row)
        self.view.dirty.add(row)
        if self._fine is not None:
            self._fine.dirty.add(row)
        if not self.cfg.use_slot_weights:
            return 1.0
        if same:
            w1 = costed[2]  # type: ignore[index]
        else:
            w1 = self.slot_weight(ad, row, left)
        self._weight_now[row] = w1
        return w0 - w1

    def _holding(self, row: int, ad: ClassAd, left: list[float]) -> ClassAd:
        """A copy of p-slot ``row``'s ``ad`` holding the resources ``left`` (whole
        numbers as integers, as _preserve_int writes them)."""
        out = ad.copy()
        out.set_literals(
            [(res, int(v) if (v := left[k]).is_integer() else v) for k, res in self._owned(row)]
        )
        return out

    def _owned(self, row: int) -> list[tuple[int, str]]:
        """(index, name) of each resource p-slot ``row`` lists."""
        got = self._owned_by_row.get(row)
        if got is None:
            owns = self.owns[:, row].tolist()
            got = self._owned_by_row[row] = [
                (k, res) for k, res in enumerate(self.resources) if owns[k]
            ]
        return got

    def weight_now(self, row: int) -> float:
        """The SlotWeight of p-slot ``row`` as it stands (what its last deduction left)."""
        w = self._weight_now.get(row)
        if w is None:
            w = self._weight_now[row] = self.slot_weight(self.ad(row), row, self.left(row))
        return w

    def match_cost(self, row: int, cons_of: PslotConsumption) -> float:
        """What matching ``row`` would cost, without taking it (cp_deduct_assets' test
        mode): a static slot's weight, a p-slot's W(S) - W(S') (what the request's job,
        ``cons_of``, consumes of it)."""
        cons = cons_of.get(row) if self.p_slot[row] else None
        if cons is None:
            return self.weights[row]
        if not self.cfg.use_slot_weights:
            return 1.0
        left = _minus(self.left(row), cons)
        w1 = self.cached_weight(row, left)
        if w1 is None:
            w1 = self.slot_weight(self._holding(row, self.ad(row), left), row, left)
        self._costed = (row, cons, w1, left)
        return self.weight_now(row) - w1

    def flush(self, view: ClassView) -> None:
        """Bring a view's resource columns up to date (once per request, not per match)."""
        view.sync(self.avail, self.owns, self.resources)

    # -- per request ------------------------------------------------------------------
    def consumption(self, view: ClassView, job: ClassAd, crows: np.ndarray) -> np.ndarray:
        """(len(crows), resources) consumption of ``job`` on the p-slot classes ``crows``;
        NaN where invalid, 0 of a resource the slot does not list."""
        t = view.table
        rows = view.reps[crows]
        out = np.full((len(crows), len(self.resources)), np.nan)
        for k, (_attr, own) in enumerate(self.cons_exprs):
            vals, ok = _numbers(
                own.eval(
                    t, job, "target", stats=self.kstats, now=self.now, rng=self.rng, rows=crows
                ),
                len(crows),
            )
            out[:, k] = np.where(self.owns[k, rows], np.where(ok, vals, np.nan), 0.0)
        return out

    def scalar_consumption(self, job: ClassAd, row: int, ad: ClassAd | None = None) -> np.ndarray:
        ad = ad if ad is not None else self.ad(row)
        out: list[float] = []
        for (attr, _own), own in zip(self.cons_exprs, self.owns[:, row].tolist(), strict=True):
            e = ad.lookup(attr) if own else None
            v = (
                _scalar_number(evaluate(e, ad, job, now=self.now, rng=self.rng))
                if e is not None
                else None
            )
            out.append(0.0 if not own else math.nan if v is None else v)
        return np.array(out)

    def _rank_values(self, view: ClassView, ce: CompiledExpr, job: ClassAd, rows: np.ndarray):
        """A negotiator rank over the class rows ``rows``, as single-precision floats
        (HTCondor keeps them in a float); NO_RANK where not a finite number."""
        vals, ok = _numbers(
            ce.eval(
                view.table, job, "target", stats=self.kstats, now=self.now, rng=self.rng, rows=rows
            ),
            len(rows),
        )
        with np.errstate(over="ignore"):
            single = vals.astype(np.float32).astype(np.float64)
        return np.where(ok & np.isfinite(single), single, NO_RANK)

    def job_ranks(
        self, view: ClassView, job: ClassAd, rows: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """NEGOTIATOR_PRE_JOB_RANK and NEGOTIATOR_POST_JOB_RANK of the class rows ``rows``."""
        none = np.full(len(rows), NO_RANK)
        return (
            none if self.pre is None else self._rank_values(view, self.pre, job, rows),
            none if self.post is None else self._rank_values(view, self.post, job, rows),
        )

    def preemption_rank(
        self, view: ClassView, job: ClassAd, rows: np.ndarray, state: np.ndarray
    ) -> np.ndarray:
        """PREEMPTION_RANK of the class rows ``rows`` where preempting (``state``)."""
        out = np.full(len(rows), NO_RANK)
        preempting = np.flatnonzero(state != NO_PREEMPTION)
        if view.preempt.rank is not None and len(preempting):
            out[preempting] = self._rank_values(view, view.preempt.rank, job, rows[preempting])
        return out

    def scalar_ranks(
        self, job: ClassAd, row: int, ad: ClassAd | None = None
    ) -> tuple[float, float, float]:
        ad = ad if ad is not None else self.ad(row)

        def neg_rank(e: Expr | None, which: int) -> float:
            if e is None:
                return NO_RANK
            key = (which, row, id(job)) if self._rank_fixed[which] else None
            if key is not None and (hit := self._rank_memo.get(key)) is not None:
                return hit[1]
            v = _scalar_number(evaluate(e, ad, job, now=self.now, rng=self.rng))
            v32 = float(np.float32(v)) if v is not None else NO_RANK
            out = v32 if math.isfinite(v32) else NO_RANK
            if key is not None:
                self._rank_memo[key] = (job, out)
            return out

        rank_e = job.lookup("Rank")
        rank = (
            _scalar_number(evaluate(rank_e, job, ad, now=self.now, rng=self.rng))
            if rank_e is not None
            else None
        )
        return neg_rank(self.cfg.pre_job_rank, 0), rank or 0.0, neg_rank(self.cfg.post_job_rank, 1)


def _string_attr(
    ad: ClassAd,
    name: str,
    target: ClassAd | None = None,
    now: float | None = None,
    rng: random.Random | None = None,
) -> str | None:
    """``ad.eval(name, target)`` when it is a string (``eval`` reads a literal without
    the evaluator)."""
    v = ad.eval(name, target, now=now, rng=rng)
    return v if isinstance(v, str) else None


@functools.lru_cache(maxsize=4096)  # a machine's slots share their startd's address
def _startd_address(my_address: str) -> str:
    return from_sinful(my_address)


def _startd_address_of(offer: ClassAd, now: float, rng: random.Random | None) -> str:
    """host:port of the startd an offered slot ad's MyAddress names ("" without one)."""
    e = offer.lookup("MyAddress")
    addr = e.value if type(e) is Literal else _string_attr(offer, "MyAddress", None, now, rng)
    return _startd_address(addr) if isinstance(addr, str) else ""


def _heap_key(pre: float, rank: float, post: float, state: float, prank: float, row: int) -> tuple:
    """A candidate's place in the order (smallest first): larger keys are better."""
    return (-pre, -rank, -post, -state, -prank, row)


_NOT_LITERAL = object()


def _literal_name(ad: ClassAd) -> str | object | None:
    """A slot ad's Name when it is a literal (a string, else None); _NOT_LITERAL when
    it is an expression, whose value may change with the time."""
    e = ad.lookup("Name")
    if e is None:
        return None
    if type(e) is not Literal:
        return _NOT_LITERAL
    return e.value if isinstance(e.value, str) else None


def _claim_ids(
    private: ClassAd, consumption_policy: bool, now: float, rng: random.Random | None
) -> list[str]:
    """Unused claim ids of a slot: a consumption-policy p-slot's ClaimIdList, else its
    Capability."""
    if consumption_policy:
        lst = private.eval("ClaimIdList", now=now, rng=rng)
        if isinstance(lst, list):
            ids = [x for x in lst if isinstance(x, str) and x]
            if ids:
                return ids
        elif isinstance(lst, str) and lst.strip():
            return [x for x in lst.replace(",", " ").split() if x]
    cap = _string_attr(private, "Capability", None, now, rng)
    return [cap] if cap else []


@dataclass
class CycleCarry:
    """What a negotiator's cycle leaves its next: the columns of its slot ads and of their
    private ads (most are the very ads of the next snapshot)."""

    slots: ColumnCarry = field(default_factory=ColumnCarry)
    private: ColumnCarry = field(default_factory=ColumnCarry)


class _PrivateAds:
    """The cycle's private ads, with their Names and Capabilities (with a carry, read
    again only where an ad was replaced)."""

    def __init__(
        self,
        ads: Sequence[ClassAd],
        carry: ColumnCarry | None,
        now: float,
        rng: random.Random | None,
    ) -> None:
        self.ads = list(ads)
        self._carry = carry
        self.now, self.rng = now, rng
        if carry is not None:
            carry.begin(self.ads)
            self.names = carry.per_row("Name", self.ads, self._name)
            self.caps = carry.per_row("Capability", self.ads, self._capability)
        else:
            self.names = ClassAd.string_values(self.ads, "Name", now=now, rng=rng)
            self.caps = ClassAd.string_values(self.ads, "Capability", now=now, rng=rng)

    def _name(self, private: ClassAd) -> str | None:
        return _string_attr(private, "Name", None, self.now, self.rng)

    def _capability(self, private: ClassAd) -> str | None:
        return _string_attr(private, "Capability", None, self.now, self.rng)

    def _made(self, key: str, sources: tuple[Any, ...], make: Callable[[], T]) -> T:
        return make() if self._carry is None else self._carry.derived(key, sources, make)

    def claims(
        self, names: Sequence[str], rows: np.ndarray, has_cp: np.ndarray
    ) -> tuple[ClaimLists, np.ndarray]:
        """Each slot's unused claim ids (empty for slots not in ``rows``), the slots named
        ``names`` (their consumption policies ``has_cp``), joined to their private ads by
        Name; and the rows that have some. The join, and which private ads hold a
        Capability, are kept while the Names and Capabilities are."""
        private_names, caps = self.names, self.caps
        join = self._made("join", (names, private_names), lambda: _join(names, private_names))
        has_cap = self._made(
            "has_cap", (caps,), lambda: np.fromiter(map(bool, caps), bool, len(caps))
        )
        k = join[rows]
        mine = k >= 0
        cp = has_cp[rows]
        plain = rows[mine & ~cp]
        plain = plain[has_cap[join[plain]]]
        lists = ClaimLists(zip(plain.tolist(), [[caps[j]] for j in join[plain].tolist()]))
        for r in rows[mine & cp].tolist():
            if ids := _claim_ids(self.ads[join[r]], True, self.now, self.rng):
                lists[r] = ids
        if len(lists) == len(plain):
            return lists, plain
        found = np.zeros(len(names), dtype=bool)
        found[list(lists)] = True
        return lists, np.flatnonzero(found)


def _join(names: Sequence[str], private_names: Sequence[str | None]) -> np.ndarray:
    """The row of each slot's private ad (-1: none), by Name."""
    at = {x: k for k, x in enumerate(private_names) if x is not None}.get
    return np.fromiter((at(x, -1) for x in names), np.int64, len(names))


class ClaimLists(dict[int, list[str]]):
    """Each slot's unused claim ids, by row (an empty list for a slot that has none)."""

    def __missing__(self, row: int) -> list[str]:
        return []


class PslotConsumption:
    """What a request's job consumes of each candidate p-slot: one row per p-slot class
    or state (``view.row_keys``), looked up by slot row for the few p-slots a request
    is matched with. A re-offered p-slot's entry is set by slot row."""

    def __init__(
        self,
        view: ClassView | None = None,
        keys: np.ndarray | None = None,
        cons: np.ndarray | None = None,
    ) -> None:
        self._view = view
        # by row key, never changed once made (requests of one shape may share it);
        # indexed at the first lookup: most requests look up none
        self.by_key = _ByKey(keys, cons)
        self._set: dict[int, np.ndarray] = {}

    @classmethod
    def sharing(cls, view: ClassView, by_key: _ByKey) -> PslotConsumption:
        """Another request's consumption by row key, with re-offers of its own."""
        out = cls(view)
        out.by_key = by_key
        return out

    def get(self, row: int) -> np.ndarray | None:
        found = self._set.get(row)
        if found is not None or not self.by_key:
            return found
        assert self._view is not None
        return self.by_key.get(self._view.row_key(int(self._view.classes.of[row])))

    def __getitem__(self, row: int) -> np.ndarray:
        found = self.get(row)
        if found is None:
            raise KeyError(row)
        return found

    def __setitem__(self, row: int, cons: np.ndarray) -> None:
        self._set[row] = cons


class _ByKey:
    """Consumption rows by row key, indexed when first asked."""

    def __init__(self, keys: np.ndarray | None, cons: np.ndarray | None) -> None:
        self._keys = keys if keys is not None and cons is not None else None
        self._cons = cons
        self._at: dict[int, int] | None = None

    def __bool__(self) -> bool:
        return self._keys is not None and len(self._keys) > 0

    def get(self, key: int) -> np.ndarray | None:
        if self._keys is None or self._cons is None:
            return None
        if self._at is None:
            self._at = dict(zip(self._keys.tolist(), range(len(self._keys)), strict=True))
        k = self._at.get(key)
        return None if k is None else self._cons[k]


def _sufficient(cons: np.ndarray, avail: np.ndarray) -> np.ndarray:
    """cp_sufficient_assets for rows of (k, resources) consumption against available."""
    valid = ~np.isnan(cons).any(axis=1)
    c = np.where(np.isnan(cons), -1.0, cons)
    return valid & (c <= avail).all(axis=1) & (c >= 0).all(axis=1) & (c > 0).any(axis=1)


def _minus(held: list[float], cons: np.ndarray) -> list[float]:
    """What a p-slot holding ``held`` holds after ``cons`` (as the arrays subtract)."""
    return [a - c for a, c in zip(held, cons.tolist(), strict=True)]


def _sufficient_one(cons: Sequence[float], avail: Sequence[float]) -> bool:
    """``_sufficient`` of one row, without numpy (asked once a re-offered p-slot)."""
    return (
        all(0.0 <= c <= a for c, a in zip(cons, avail, strict=True))  # False for NaN
        and any(c > 0.0 for c in cons)
    )


def _override_requests(job: ClassAd, cons: Sequence[float], resources: Sequence[str]) -> ClassAd:
    """The job with Request<Res> read as the consumption (where it has them)."""
    out = job
    for k, res in enumerate(resources):
        name = f"Request{res}"
        if job.lookup(name) is not None:
            if out is job:
                out = job.copy()
            out[name] = _preserve_int(cons[k])
    return out


def _with_zero_requests(job: ClassAd, resources: Sequence[str]) -> ClassAd:
    """HTCondor evaluates consumption with a missing Request<Res> read as 0."""
    missing = [f"Request{r}" for r in resources if job.lookup(f"Request{r}") is None]
    if not missing:
        return job
    out = job.copy()
    for name in missing:
        out[name] = 0
    return out


# ----------------------------------------------------------------------- accounting


def _accounting_name(
    ad: ClassAd, now: float | None = None, rng: random.Random | None = None
) -> str | None:
    for attr in ("AccountingGroup", "RemoteUser", "RemoteOwner"):
        v = ad.eval(attr, now=now, rng=rng)
        if isinstance(v, str) and v:
            return v if "@" in v else f"{v}@{POOL_DOMAIN}"
    return None


def slot_usage(
    slots: Sequence[ClassAd],
    weights: np.ndarray,
    claimed: np.ndarray,
    names: Sequence[str | None] | None = None,
    *,
    now: float | None = None,
    rng: random.Random | None = None,
) -> tuple[dict[str, float], dict[str, int]]:
    """Weighted resources in use and slots held per submitter, from the Claimed slot ads
    (the accountant's WeightedResourcesUsed and ResourcesUsed); ``names``: each slot's
    accounting name, when read already."""
    usage: dict[str, float] = {}
    counts: dict[str, int] = {}
    for r in np.flatnonzero(claimed).tolist():
        name = names[r] if names is not None else _accounting_name(slots[r], now, rng)
        if name is not None:
            usage[name] = usage.get(name, 0.0) + float(weights[r])
            counts[name] = counts.get(name, 0) + 1
    return usage, counts


# ------------------------------------------------------------------------- the cycle


@dataclass
class _Turn:
    """One submitter at one schedd (HTCondor: one Submitter ad)."""

    submitter: str
    schedd: str
    schedd_address: str
    requests: list[ResourceRequest] = field(default_factory=list)
    left: list[int] = field(default_factory=list)  # idle jobs not yet matched, per request
    seconds: float = 0.0  # time spent on it this cycle (TotalTimeInCycle)


@dataclass
class _TurnUsage:
    """What one turn has taken (negotiate()'s limitUsed and limitUsedUnclaimed)."""

    lim: TurnLimits
    used: float = 0.0
    used_unclaimed: float = 0.0
    limited: bool = False  # a job was refused for the submitter limit
    deadline: float = math.inf  # pool time when the turn must stop (the MAX_TIME_* knobs)
    begin: float = 0.0


class _Cycle:
    def __init__(
        self,
        snapshot: CycleAds,
        requests: Iterable[ResourceRequest],
        accountant: Accountant,
        cfg: CycleConfig,
        now: float,
        timer: Callable[[], float],
        cpu_timer: Callable[[], float] | None,
        notes: Sequence[LogLine] = (),
        carry: CycleCarry | None = None,
        ad_epoch: int = 0,
        rng: random.Random | None = None,
    ) -> None:
        self.snapshot = snapshot
        self.carry = carry
        self.notes = list(notes)
        self.requests = list(requests)
        self.acct = accountant.copy()
        if self.acct.groups != cfg.groups:
            self.acct.set_groups(cfg.groups)
        self.cfg = cfg
        self.now = now
        # time() and CurrentTime in the slots' and jobs' expressions: a date, as the ads'
        # own dates are (the date of pool time 0 plus pool seconds)
        self.expr_now = ad_epoch + now
        self.rng = rng  # what random() in them draws from: the negotiator's own
        self.timer = timer
        self.cpu = cpu_timer
        self.log: list[LogLine] = []
        self.stats = CycleStats(start_time=now)
        self.matches: list[CycleMatch] = []
        self.kstats = KernelStats()
        self.logged_matches = 0
        self.rejections: list[CycleRejection] = []
        self.diag = Diagnosis()  # why the last request's candidates fell out
        self.groups: GroupTree | None = None
        self._reads_wide: set[tuple[str, ...]] = set()  # texts of _READS_KEY
        self._reads: dict[int, tuple[ClassAd, tuple[str, ...]]] = {}  # by request ad
        # re-offer answers by (base, resources left), per request shape (a request's
        # own where the cycle keeps no shapes: see .memo)
        self._reoffered: dict[tuple[int, bytes], tuple] | None = None
        self._reoffered_by_shape: dict[tuple, dict[tuple[int, bytes], tuple]] = {}
        # a request's candidates in order, by its shape and the view's live classes and
        # states (see _candidates_in)
        self._ordered: dict[tuple, tuple[np.ndarray, np.ndarray, _ByKey]] = {}
        self._safe: dict[int, tuple[Expr, bool]] = {}  # WideTaint.kleene_safe, per tree

    def say(self, text: str, t: float | None = None) -> None:
        self.log.append(LogLine(self.timer() if t is None else t, text))

    def cpu_now(self) -> float:
        return self.cpu() if self.cpu is not None else 0.0

    def run(self) -> CycleResult:
        s, snap = self.stats, self.snapshot
        cpu0 = self.cpu_now()
        # Phase 1: the caller obtained the ads between `now` and this call.
        self.say(CYCLE_STARTED, self.now)
        self.say("Phase 1:  Obtaining ads from collector ...", self.now)
        t1 = self.timer()
        public = len(snap.slots) + len(snap.submitters) + len(snap.schedulers)
        self.say(f"Got ads: {public} public and {len(snap.private_ads)} private", t1)
        self.say(
            f"Public ads include {len(snap.submitters)} submitter, {len(snap.slots)} startd", t1
        )
        self.log.extend(self.notes)
        s.duration_phase1 = t1 - self.now
        s.total_slots = len(snap.slots)
        s.snapshot_columns = len(snap.slot_columns)

        # Phase 2: accounting and trimming.
        self.say("Phase 2:  Performing accounting ...", t1)
        slots = _Slots(
            snap,
            self.cfg,
            self.kstats,
            self.expr_now,
            [r.ad for r in self.requests],
            self.carry,
            self.rng,
        )
        s.slot_classes = len(slots.view.reps)
        self.acct.update_priorities(self.now)
        usage, counts = slots.usage()
        self.acct.check_matches(usage, self.now, counts)
        s.charged = dict(sorted(counts.items()))  # for the checker: slots held per submitter
        slots.add_remote_prios(self.acct)
        s.claimed_slots_skipped = int((slots.claimed & ~slots.alive).sum())
        s.slots_without_claim_id = slots.no_claim_id
        s.trimmed_slots = s.candidate_slots = int(slots.alive.sum())
        turns = self._turns()
        pool_size = float(slots.weight.sum()) if self.cfg.use_slot_weights else float(slots.n)
        min_weight = float(slots.weight.min()) if slots.n else sys.float_info.max
        tree = self._group_tree(turns, slots) if self.cfg.groups.enabled else None
        t2 = self.timer()
        s.duration_phase2 = t2 - t1
        self._t_phase3 = 0.0
        self._phase4_start = t2

        # Phases 3 and 4 happen inside each pie (negotiateWithGroup): the sort on its
        # first spin, then "Phase 4.<spin>".
        self._schedd_time: dict[str, float] = {}
        spin_stats = SpinStats()
        if tree is None:
            self._pie(turns, slots, pool_size, min_weight, spin_stats, None, INT_MAX)
        else:
            by_group: dict[str, list[_Turn]] = {}
            for tn in turns:
                by_group.setdefault(tree.assigned(tn.submitter).name, []).append(tn)
            if tree.root.autoregroup:
                for g in tree.groups[1:]:
                    if g.autoregroup:
                        by_group.setdefault(ROOT, []).extend(by_group.get(g.name, []))

            def negotiate_group(g: Group, limit: int) -> None:
                name = None if (tree.root.autoregroup and g is tree.root) else g.name
                self._pie(
                    by_group.get(g.name, []), slots, pool_size, min_weight, spin_stats, name, limit
                )

            s.slot_share_iterations = tree.negotiate_all(
                weighted=self.cfg.use_slot_weights,
                usage=self.acct.resources_used,
                negotiate=negotiate_group,
                log=self.say,
                now=self.now,
                expr_now=self.expr_now,
                rng=self.rng,
                consider_preemption=self.cfg.consider_preemption,
            )
            self.acct.group_rr_time = tree.rr_times()
            self.groups = tree
        s.pies, s.pie_spins = spin_stats.pies, spin_stats.pie_spins
        if s.pies == 0:  # HTCondor logs phase 3 even when no group negotiated
            self.say("Phase 3:  Sorting submitter ads by priority ...", t2)
        t4 = self.timer()
        s.duration_phase3 = self._t_phase3
        s.duration_phase4 = t4 - t2 - self._t_phase3
        s.end_time, s.duration = t4, t4 - self.now
        s.matches = len(self.matches)
        s.kernel_fallbacks = self.kstats.fallbacks
        s.cpu_time = self.cpu_now() - cpu0
        return CycleResult(
            self.matches, self.acct, s, self.log, False, t4, self.rejections, self.groups
        )

    def _turns(self) -> list[_Turn]:
        by_key: dict[tuple[str, str], _Turn] = {}
        for r in self.requests:
            key = (r.submitter, r.schedd)
            turn = by_key.get(key)
            if turn is None:
                turn = by_key[key] = _Turn(r.submitter, r.schedd, r.schedd_address)
            if r.count > 0:
                turn.requests.append(r)
                turn.left.append(r.count)
        return [tn for tn in by_key.values() if tn.requests]

    def _group_tree(self, turns: list[_Turn], slots: _Slots) -> GroupTree:
        """hgq_prepare_for_matchmaking: quotas from the pool, demand from the requests."""
        tree = GroupTree(self.cfg.groups, rr_times=self.acct.group_rr_time)
        if self.cfg.use_slot_weights:
            total = float(slots.weight.sum())
            self.say(
                f"group quotas: assigning group quotas from {total:g} available weighted slots"
            )
        else:
            total = float(np.where(slots.is_p, np.floor(slots.avail[0]), 1.0).sum())
            self.say(f"group quotas: assigning group quotas from {total:g} available slots")
        # Demand: WeightedRunningJobs + WeightedIdleJobs of every Submitter ad, as HTCondor
        # reads them (NEGOTIATOR_USE_WEIGHTED_DEMAND); without Submitter ads (a bare
        # snapshot), the requests' idle jobs x their weight plus the accountant's usage.
        demand: dict[str, float] = {}
        at, rng = self.expr_now, self.rng
        for ad in self.snapshot.submitters:
            name = ad.eval("Name", now=at, rng=rng)
            if not isinstance(name, str) or "@" not in name:
                continue
            got = 0.0
            for weighted, plain in (
                ("WeightedIdleJobs", "IdleJobs"),
                ("WeightedRunningJobs", "RunningJobs"),
            ):
                v = _scalar_number(
                    ad.eval(weighted, now=at, rng=rng) if self.cfg.use_slot_weights else UNDEFINED
                )
                if v is None:
                    v = _scalar_number(ad.eval(plain, now=at, rng=rng))
                got += max(0.0, v or 0.0)
            demand[name] = demand.get(name, 0.0) + got
        if not self.snapshot.submitters:
            for tn in turns:
                idle = sum(self._request_weight(r) * r.count for r in tn.requests)
                demand[tn.submitter] = demand.get(tn.submitter, 0.0) + idle
            for name in list(demand):
                demand[name] += self.acct.resources_used(name)
        self.say(f"group quotas: assigning {len(demand)} submitters to accounting groups")
        tree.prepare(total, self.acct.resources_used, demand)
        self.say("group quota: Quotas have been assigned to the following groups")
        for line in tree.display():
            self.say(line)
        return tree

    def _request_weight(self, req: ResourceRequest) -> float:
        """A job's weight for group demand (WeightedIdleJobs): SLOT_WEIGHT with the job's
        requests as the slot's resources; 1 without slot weights."""
        if not self.cfg.use_slot_weights:
            return 1.0
        probe = ClassAd()
        for res in RESOURCES:
            v = req.ad.eval(f"Request{res}", now=self.expr_now, rng=self.rng)
            probe[res] = (
                v
                if isinstance(v, (int, float)) and not isinstance(v, bool)
                else (1 if res == "Cpus" else 0)
            )
        w = _scalar_number(
            evaluate(self.cfg.slot_weight, probe, None, now=self.expr_now, rng=self.rng)
        )
        return w if w is not None and w > 0 else 1.0

    def _pie(
        self,
        turns: list[_Turn],
        slots: _Slots,
        pool_size: float,
        min_weight: float,
        spin_stats: SpinStats,
        group: str | None,
        quota: float,
    ) -> None:
        s = self.stats

        def on_sorted(_items: list[_Turn]) -> None:
            t = self.timer()
            self.say("Phase 3:  Sorting submitter ads by priority ...", t)
            self._t_phase3 += self.timer() - t

        def on_spin(spin: int) -> None:
            self.say(f"Phase 4.{spin}:  Negotiating with schedds ...")

        max_cycle, max_sub, max_schedd, max_spin = self.cfg.max_time

        def turn(tn: _Turn, lim: TurnLimits) -> tuple[str, float]:
            begin = self.timer()
            schedd_secs = self._schedd_time.get(tn.schedd_address, 0.0)
            if tn.seconds < max_sub and schedd_secs < max_schedd:
                self.say(f"  Negotiating with {tn.submitter} at {sinful(tn.schedd_address)}", begin)
                self.say(f"{int(tn.seconds)} seconds so far for this submitter", begin)
                self.say(f"{int(schedd_secs)} seconds so far for this schedd", begin)
            left_cycle = max_cycle - (begin - self.now)
            if max_sub - tn.seconds <= 0:
                self.say(f"  Negotiation with {tn.submitter} skipped because of time limits:")
                self.say(
                    f"  {int(tn.seconds)} seconds spent on this user, MAX_TIME_PER_USER is {max_sub} secs\n "
                )
                s.submitters_out_of_time.add(tn.submitter)
                return DONE, 0.0
            if max_schedd - schedd_secs <= 0:
                self.say(f"  Negotiation with {tn.submitter} skipped because of time limits:")
                self.say(
                    f"  {int(schedd_secs)} seconds spent on this schedd ({tn.schedd}), "
                    f"MAX_TIME_PER_SCHEDD is {max_schedd} secs\n "
                )
                s.schedds_out_of_time.add(tn.schedd)
                return DONE, 0.0
            if left_cycle <= 0:
                self.say(
                    f"  Negotiation with {tn.submitter} skipped because MAX_TIME_PER_CYCLE of {max_cycle} "
                    "secs exceeded"
                )
                return DONE, 0.0
            if lim.pie_left_small:
                self.say(f"  Negotiation with {tn.submitter} skipped as pieLeft < minSlotWeight")
                return RESUME, 0.0
            if tn.submitter not in s.active_submitters:
                s.num_idle_jobs += sum(tn.left)
            s.active_submitters.add(tn.submitter)
            s.active_schedds.add(tn.schedd_address)
            deadline = begin + min(
                max_spin, left_cycle, max_sub - tn.seconds, max_schedd - schedd_secs
            )
            out = self._negotiate_turn(tn, slots, lim, deadline)
            took = self.timer() - begin
            tn.seconds += took
            self._schedd_time[tn.schedd_address] = schedd_secs + took
            return out

        negotiate_with_group(
            turns,
            name=lambda tn: tn.submitter,
            idle=lambda tn: sum(tn.left),
            acct=self.acct,
            turn=turn,
            slots_left=lambda: slots.n_alive > 0,
            untrimmed_weight=pool_size,
            min_slot_weight=min_weight,
            group=group,
            group_quota=quota,
            consider_preemption=self.cfg.consider_preemption,
            log=self.say,
            on_spin=on_spin,
            on_sorted=on_sorted,
            stats=spin_stats,
            share_limited=s.submitters_share_limit,
        )

    # -- phase 4: one submitter's turn (matchmaker.cpp negotiate()) -----------------------
    def _negotiate_turn(
        self, turn: _Turn, slots: _Slots, lim: TurnLimits, deadline: float = math.inf
    ) -> tuple[str, float]:
        st = _TurnUsage(lim, deadline=deadline, begin=self.timer())
        rejected: set[int] = set()
        unlogged_before = self._unlogged
        result = DONE
        for i, req in enumerate(turn.requests):
            if turn.left[i] <= 0 or req.autocluster_id in rejected:
                continue
            stop, ok = self._match_request(req, turn, i, slots, st)
            if stop:
                result = RESUME
                break
            if not ok:
                rejected.add(req.autocluster_id)
        else:
            self.say("    Got NO_MORE_JOBS;  schedd has no more requests")
            if st.used >= st.lim.limit or st.limited:
                result = RESUME
        skipped = self._unlogged - unlogged_before
        if skipped:
            self.say(
                f"    ... {skipped} more match{'es' if skipped != 1 else ''} not logged "
                f"(NegotiatorLog shows at most {self.cfg.log_match_limit} matches a cycle)"
            )
        return result, st.used

    @property
    def _unlogged(self) -> int:
        return max(0, len(self.matches) - self.cfg.log_match_limit)

    def _candidates(
        self, req: ResourceRequest, slots: _Slots
    ) -> tuple[CandidateStream, PslotConsumption]:
        """The slots that match ``req`` now, best first, and each p-slot's consumption,
        evaluated per slot class; again slot by slot if that read a wide name."""
        eup, in_use = self.acct.eup(req.submitter), self.acct.resources_used(req.submitter)
        # copied only for a request whose order is not remembered
        made: list[ClassAd] = []

        def job() -> ClassAd:
            if not made:
                made.append(with_submitter_attrs(req.ad, eup, in_use))
            return made[0]

        offered = slots.memo.offered_shape(req.ad, eup, in_use) if slots.memo is not None else ()
        view = slots.view
        if slots.taint is None:
            out = self._candidates_in(view, req, job, slots, offered)
            assert out is not None
            return out
        # A request whose expressions read a wide name undecided once will again:
        # remember them.
        reads = self._reads_of(req.ad, slots)
        if reads not in self._reads_wide:
            requirements = req.ad.lookup("Requirements")
            varies = (
                slots.varies
                if requirements is not None and self._kleene_safe(requirements, slots.taint)
                else None
            )
            view.table.touched = False
            fallbacks = self.kstats.fallbacks
            out = self._candidates_in(view, req, job, slots, offered, varies)
            # a scalar fallback reads the representative's ad unwatched: not trusted either
            if out is not None and not view.table.touched and self.kstats.fallbacks == fallbacks:
                return out
            self._reads_wide.add(reads)
        self.stats.requests_by_slot += 1
        out = self._candidates_in(slots.fine(), req, job, slots, offered)
        assert out is not None
        return out

    def _reads_of(self, request: ClassAd, slots: _Slots) -> tuple[str, ...]:
        """The texts of the request's ``_READS_KEY`` expressions, made once per request
        ad (a request is offered many times a cycle)."""
        hit = self._reads.get(id(request))
        if hit is None or hit[0] is not request:
            text = slots.memo.text if slots.memo is not None else unparse
            reads = tuple(text(e) for e in map(request.lookup, _READS_KEY) if e is not None)
            hit = self._reads[id(request)] = (request, reads)
        return hit[1]

    def _candidates_in(
        self,
        view: ClassView,
        req: ResourceRequest,
        job_of: Callable[[], ClassAd],
        slots: _Slots,
        shape: tuple,
        varies: Varying | None = None,
    ) -> tuple[CandidateStream, PslotConsumption] | None:
        """As ``_candidates`` on ``view``; with ``varies`` (the classes whose slots differ
        in a wide name), the job's Requirements in three-valued logic, and None when
        they are undecided for a live class."""
        slots.flush(view)
        self.diag = Diagnosis()
        # one budget for everything this request evaluates against the slots
        budget = table_budget(slots.n)
        ct = view.table
        # evaluated once per live class, and once per state of the live p-slot classes
        at, counts, entries = view.representatives()
        # A request of a shape seen on these same live classes and states, none Claimed,
        # gets the candidates in the order the first one got, if that one's answers were
        # all remembered (kept answers hold for the cycle, and read no wide name; the
        # order follows from them and from the rows).
        ordered_key = None
        if view is slots.view and slots.memo is not None and view.rows_fixed:
            ordered_key = (shape, at.tobytes(), entries.tobytes())
            found = self._ordered.get(ordered_key)
            if found is not None:
                self.stats.rows_remembered += len(at)
                self.stats.orders_remembered += 1
                ordered, ordered_keys, cons = found
                stream = CandidateStream(ordered, ordered_keys, view, slots.alive)
                return stream, PslotConsumption.sharing(view, cons)
        job = job_of()

        def evaluate(rows: np.ndarray) -> tuple[Answers, np.ndarray] | None:
            self.stats.rows_evaluated += int(rows.sum())
            touched, ct.touched = ct.touched, False
            fallbacks = self.kstats.fallbacks
            got = self._evaluate(view, job, slots, at[rows], counts[rows], varies, budget)
            read_wide, ct.touched = ct.touched, touched or ct.touched
            if got is None:
                return None
            answers, keep = got
            return answers, keep & (not read_wide and self.kstats.fallbacks == fallbacks)

        row_keys = view.row_keys(at)
        if view is slots.view and slots.memo is not None:
            evaluated = self.stats.rows_evaluated
            ans = slots.memo.answer(shape, row_keys, evaluate)
            self.stats.rows_remembered += len(at) - (self.stats.rows_evaluated - evaluated)
            if evaluated != self.stats.rows_evaluated or view.preempt.rows[at].any():
                ordered_key = None  # not all remembered, or answers that follow the submitter
        else:
            got = evaluate(np.ones(len(at), dtype=bool))
            ans = None if got is None else got[0]
        if ans is None:
            return None
        hit = np.flatnonzero(ans.matched)
        allowed, state = view.preempt.classify(ct, job, at[hit], req.submitter, self.diag)
        hit, state = hit[allowed], state[allowed]
        phit = hit[view.has_cp[at[hit]]]  # the p-slot classes and states
        cons_of = PslotConsumption(view, row_keys[phit], ans.cons[phit])
        keys = np.empty((len(hit), 5))
        keys[:, 0] = ans.pre[hit]
        keys[:, 1] = ans.rank[hit]
        keys[:, 2] = ans.post[hit]
        keys[:, 3] = state
        keys[:, 4] = slots.preemption_rank(view, job, at[hit], state)
        # ties go to the first slot in snapshot order (a state's first live slot)
        first = view.reps[at[hit]]
        order = np.lexsort((first, -keys[:, 4], -keys[:, 3], -keys[:, 2], -keys[:, 1], -keys[:, 0]))
        ordered, ordered_keys = entries[hit][order], keys[order]
        if ordered_key is not None:
            self._ordered[ordered_key] = (ordered, ordered_keys, cons_of.by_key)
        return CandidateStream(ordered, ordered_keys, view, slots.alive), cons_of

    def _evaluate(
        self,
        view: ClassView,
        job: ClassAd,
        slots: _Slots,
        at: np.ndarray,
        counts: np.ndarray,
        varies: Varying | None,
        budget: Budget,
    ) -> tuple[Answers, np.ndarray] | None:
        """The request's answers on the class rows ``at`` (``counts``: how many live
        rows each stands for), and which may be remembered for their row; None when its
        Requirements are undecided for one. A p-slot state's answer that read a wide
        name (three-valued, on a state of one slot) is that slot's alone: the next
        slot in the state may answer otherwise, so it is not remembered."""
        ct = view.table
        multi = (view.sizes[at] > 1) | (counts > 1)  # rows that stand for several slots
        at_cp = view.has_cp[at]
        if len(at) <= _ONE_BY_ONE and at_cp.all() and not (multi.any() and slots.taint):
            return self._evaluate_one_by_one(view, job, slots, at)
        cons_at = np.full((len(at), len(slots.resources)), np.nan)
        pat = np.flatnonzero(at_cp)
        if len(pat):  # p-slot states first: most, used up, fit no job and need no more
            job_cp = _with_zero_requests(job, slots.resources)
            cons = slots.consumption(view, job_cp, at[pat])
            fits = _sufficient(cons, slots.avail[:, view.reps[at[pat]]].T)
            pat, cons = pat[fits], cons[fits]
            cons_at[pat] = cons
        ask = np.flatnonzero(~at_cp)
        if len(pat):
            ask = np.sort(np.concatenate((ask, pat)))
        rank = np.zeros(len(at))
        matched = np.zeros(len(at), dtype=bool)
        keep = np.ones(len(at), dtype=bool)
        if not len(ask):
            return Answers(matched, rank, rank.copy(), rank.copy(), cons_at), keep

        def match(j: ClassAd, idx: np.ndarray) -> MatchResult | None:
            """``j`` on the rows ``at[idx]``. Asked of every row, three-valued evaluation
            says where the answer follows a wide name: undecided on a row of several
            slots (None), not to be kept on a p-slot state."""
            got = match_vector(
                j,
                ct,
                now=self.expr_now,
                rng=self.rng,
                budget=budget,
                varies=None if varies is None else varies.on(np.ones(len(idx), dtype=bool)),
                rows=at[idx],
            )
            self.kstats.fallbacks += got.fallbacks
            if got.unknown is not None:
                if (got.unknown & multi[idx]).any():
                    return None
                keep[idx] &= ~(got.unknown & at_cp[idx])
            return got

        mr = match(job, ask)
        if mr is None:
            return None
        rank[ask] = mr.rank
        matched[ask] = mr.matches
        matched &= ~at_cp
        if slots.fit is not None and (held := np.flatnonzero(matched)).size:
            matched[held] = slots.fit.holds(
                ct,
                view.reps,
                at[held],
                job,
                stats=self.kstats,
                now=self.expr_now,
                rng=self.rng,
                budget=budget,
            )
        if len(pat):
            plain = np.zeros(len(at), dtype=bool)
            plain[ask] = mr.matches
            if (cons == cons[0]).all():  # the usual case: one policy, one job shape
                uniq, inverse = cons[:1], np.zeros(len(pat), dtype=np.int64)
            else:
                uniq, inverse = np.unique(cons, axis=0, return_inverse=True)
                inverse = inverse.reshape(-1)
            for k, tup in enumerate(uniq):
                sel = pat[inverse == k]
                jo = _override_requests(job, tup, slots.resources)
                if jo is job:
                    matched[sel] = plain[sel]
                    continue
                mo = match(jo, sel)
                if mo is None:
                    return None
                matched[sel] = mo.matches
        pre = np.full(len(at), NO_RANK)
        post = np.full(len(at), NO_RANK)
        hit = np.flatnonzero(matched)
        if len(hit):
            pre[hit], post[hit] = slots.job_ranks(view, job, at[hit])
        return Answers(matched, rank, pre, post, cons_at), keep

    def _evaluate_one_by_one(
        self, view: ClassView, job: ClassAd, slots: _Slots, at: np.ndarray
    ) -> tuple[Answers, np.ndarray]:
        """As ``_evaluate`` on a few p-slot states of one slot each, with the scalar
        evaluator (the vector one costs a fixed time per expression, whatever the rows):
        the re-offer test, which also says whether an answer holds for every slot alike
        but for the wide names (else it is exact for this one slot, and not kept)."""
        n = len(at)
        matched = np.zeros(n, dtype=bool)
        rank = np.zeros(n)
        pre = np.full(n, NO_RANK)
        post = np.full(n, NO_RANK)
        cons_at = np.full((n, len(slots.resources)), np.nan)
        keep = np.ones(n, dtype=bool)
        rank_e = job.lookup("Rank")
        for k, c in enumerate(at.tolist()):
            row = int(view.reps[c])
            (cons, (pre_k, _rank, post_k)), keep[k] = self._reoffer_test(job, slots, row)
            if cons is None:
                continue
            matched[k], cons_at[k], pre[k], post[k] = True, cons, pre_k, post_k
            if rank_e is not None:  # as the kernel reads it (a number that is not finite too)
                rank[k] = _rank_number(
                    evaluate(rank_e, job, slots.ad(row), now=self.expr_now, rng=self.rng)
                )
        return Answers(matched, rank, pre, post, cons_at), keep

    def _match_request(
        self, req: ResourceRequest, turn: _Turn, i: int, slots: _Slots, st: _TurnUsage
    ) -> tuple[bool, bool]:
        """Offer the request's idle jobs one by one. Returns (stop the turn, matched):
        matched is False when a job found no slot (its autocluster is then rejected), or
        when its expressions cost more than their budget (rejected for this cycle, by name)."""
        # ConcurrencyLimits: a string is checked once per job, an expression per slot.
        cl = req.ad.lookup("ConcurrencyLimits")
        fixed = cl.value.lower() if isinstance(cl, Literal) and isinstance(cl.value, str) else None
        per_slot = cl is not None and not isinstance(cl, Literal)
        over_limits: set[str] = set()
        try:
            if st.used >= st.lim.limit and not (st.lim.ignore_limit and slots.any_claimed):
                # At its limit the submitter's turn stops before a match is looked for
                # (HTCondor checks the limit before matchmaking); on the first spin only
                # a startd that prefers the job may take it, which needs a Claimed slot.
                self.diag = Diagnosis()
                stream, cons_of = (
                    CandidateStream.empty(slots.view, slots.alive),
                    PslotConsumption(slots.view),
                )
            else:
                stream, cons_of = self._candidates(req, slots)
        except BudgetExceeded as exc:
            self._reject(
                req,
                f"its expressions are too costly to evaluate ({exc.what}, "
                f"over {exc.limit:,} steps)",
            )
            return False, False
        heap: list[tuple] = []  # re-offered p-slots, by _heap_key
        self._reoffered = None  # this request's re-offer answers, found at its first re-offer
        charge: Callable[[float, float], None] | None = None  # add_match, made at the first
        s = self.stats
        limited = math.isfinite(st.lim.limit_unclaimed) or math.isfinite(st.lim.limit)
        while turn.left[i] > 0:
            now = self.timer()
            if now >= st.deadline:
                sub, schedd, cyc, spin = (
                    self.cfg.max_time[1],
                    self.cfg.max_time[2],
                    self.cfg.max_time[0],
                    self.cfg.max_time[3],
                )
                self.say(
                    f"    Reached deadline for {turn.submitter} ({sinful(turn.schedd_address)}) after "
                    f"{int(now - st.begin)} sec... stopping\n       MAX_TIME_PER_SUBMITTER = {sub} sec, "
                    f"MAX_TIME_PER_SCHEDD = {schedd} sec, MAX_TIME_PER_CYCLE = {cyc} sec, "
                    f"MAX_TIME_PER_PIESPIN = {spin} sec"
                )
                return True, True
            only_startd_rank = False
            if st.used >= st.lim.limit:
                if not st.lim.ignore_limit:
                    self.say(f"    Reached submitter resource limit: {st.used:f} ... stopping")
                    return True, True
                # Over the limit on the first spin: only a startd that prefers the job
                # (rank preemption) may take it, and unclaimed slots never do.
                only_startd_rank = True
            log_this = len(self.matches) < self.cfg.log_match_limit
            plain = not (log_this or only_startd_rank or fixed or per_slot)
            if plain and not heap and self._match_run(req, turn, i, slots, st, stream, limited):
                continue
            if (
                plain
                and heap
                and charge is not None
                and self._pslot_run(req, turn, i, slots, st, stream, cons_of, heap, limited, charge)
            ):
                continue
            k = req.count - turn.left[i]
            s.num_jobs_considered += 1
            if log_this:
                self.say(
                    f"    Request {req.cluster_id:05d}.{req.proc_id:05d}: autocluster "
                    f"{req.autocluster_id} (request count {k + 1} of {req.count})"
                )
            self.diag.submitter_limit = 0  # HTCondor's rejForSubmitterLimit, per job
            job_limits = fixed or ""
            if fixed and (name := slots.limits.over(fixed)) is not None:
                self.diag.concurrency_limit += 1
                self._reject(req, f"concurrency limit {name} reached")
                return False, False
            while True:
                row = -1
                use_heap = False
                head = stream.peek()
                if only_startd_rank:
                    # Past the limit on spin 1: only a startd that prefers the job (rank
                    # preemption); unclaimed slots and re-offered p-slots are passed over.
                    head = stream.skip_to_state(RANK_PREEMPTION)
                    if head is not None:
                        row = head
                elif head is not None:
                    use_heap = bool(heap) and heap[0] < _heap_key(*stream.key, head)
                    row = head if not use_heap else heap[0][-1]
                elif heap:
                    use_heap, row = True, heap[0][-1]
                if row < 0:
                    if over_limits:  # HTCondor's message names them; the reason is generic
                        self._reject(
                            req, f"concurrency limit {', '.join(sorted(over_limits))} reached"
                        )
                    else:
                        self._reject(req)
                    if self.diag.submitter_limit:
                        s.submitters_share_limit.add(turn.submitter)
                        st.limited = True
                        if not self.cfg.consider_preemption and not self.cfg.use_slot_weights:
                            self.say("    Hit submitter limit: done negotiating")
                            return True, False
                    return False, False
                if use_heap:
                    heapq.heappop(heap)
                    state = NO_PREEMPTION
                else:
                    state = stream.key[3]
                    stream.pop()
                if not slots.alive[row]:
                    continue
                claims = slots.claims[row]
                if not claims:  # cannot happen for alive rows; kept as HTCondor's guard
                    self.say(f"      {slots.names[row]} has no claim id")
                    slots.kill(row)
                    continue
                if per_slot:
                    value = req.ad.eval(
                        "ConcurrencyLimits", slots.ad(row), now=self.expr_now, rng=self.rng
                    )
                    job_limits = value.lower() if isinstance(value, str) else ""
                    if job_limits and (name := slots.limits.over(job_limits)) is not None:
                        self.diag.concurrency_limit += 1
                        over_limits.add(name)
                        continue
                # SubmitterLimitPermits: priority preemption against the limit, an
                # unclaimed slot against the unclaimed limit; rank preemption always.
                if limited and state != RANK_PREEMPTION:
                    cost = slots.match_cost(row, cons_of)
                    used, allowed = (
                        (st.used, st.lim.limit)
                        if state == PRIO_PREEMPTION
                        else (st.used_unclaimed, st.lim.limit_unclaimed)
                    )
                    if not permits(cost, used, allowed):
                        self.diag.submitter_limit += 1
                        if not use_heap and not per_slot:
                            self._pass_over(stream, slots, cost)
                        continue
                break
            if state != NO_PREEMPTION:
                self._preempting(req, slots, row)
            cost = self._make_match(req, slots, row, cons_of, heap, log_this)
            if charge is None:
                charge = self.acct.charger(req.submitter)
            charge(cost, self.now)
            if job_limits:
                slots.limits.add(job_limits)
            st.used += cost
            if state == NO_PREEMPTION:
                st.used_unclaimed += cost
            turn.left[i] -= 1
        return False, True

    def _match_run(
        self,
        req: ResourceRequest,
        turn: _Turn,
        i: int,
        slots: _Slots,
        st: _TurnUsage,
        stream: CandidateStream,
        limited: bool,
    ) -> int:
        """Match the request's next jobs to the unclaimed static slots at the head of its
        candidates, all of one key, in one step: the matches, in the order, that offering
        the jobs one by one makes. Stops before a slot that needs the one-by-one path (a
        p-slot, no claim id, the submitter limit, the deadline). Returns how many matched."""
        head = stream.peek()
        if head is None or stream.key[3] != NO_PREEMPTION:  # type: ignore[index]
            return 0
        p_slot, claims, weights = slots.p_slot, slots.claims, slots.weights
        lim = st.lim
        want = turn.left[i]
        if limited and weights[head] > 0:  # about what the limits leave, not every job
            room = min(lim.limit - st.used, lim.limit_unclaimed - st.used_unclaimed)
            want = min(want, max(1, int(room / weights[head]) + 1))
        rows = stream.take(want)
        costs: list[float] = []
        for row in rows:
            cost = weights[row]
            if (
                p_slot[row]
                or not claims[row]
                or st.used >= lim.limit
                or (limited and not permits(cost, st.used_unclaimed, lim.limit_unclaimed))
                or (costs and self.timer() >= st.deadline)
            ):
                break
            self._match_static(req, slots, row, cost)
            st.used += cost
            st.used_unclaimed += cost
            costs.append(cost)
        taken = len(costs)
        slots.kill_rows(rows[:taken])
        stream.unread(rows[taken:])
        if taken:
            self.acct.add_matches(req.submitter, costs, self.now)
            turn.left[i] -= taken
            self.stats.num_jobs_considered += taken
            self.stats.jobs_matched_in_runs += taken
            self.diag.submitter_limit = 0  # as each job of the run set it
        return taken

    def _pslot_run(
        self,
        req: ResourceRequest,
        turn: _Turn,
        i: int,
        slots: _Slots,
        st: _TurnUsage,
        stream: CandidateStream,
        cons_of: PslotConsumption,
        heap: list[tuple],
        limited: bool,
        charge: Callable[[float, float], None],
    ) -> int:
        """Match the request's next jobs to the p-slot re-offered first among its
        candidates, one after another while it stays first: the matches that offering
        the jobs one by one makes. Stops where that path would do something else
        (another candidate first, a slot out of claims, the submitter limit, the
        deadline), which it then does. Returns how many matched."""
        taken = 0
        lim, alive, claims = st.lim, slots.alive, slots.claims
        # the stream's head stays while the run takes re-offered p-slots only
        head = stream.peek()
        bound = None if head is None else _heap_key(*stream.key, head)
        while turn.left[i] > 0 and heap:
            top = heap[0]
            row = top[-1]
            if (
                (bound is not None and not top < bound)
                or st.used >= lim.limit
                or not alive[row]
                or not claims[row]
                or self.timer() >= st.deadline
            ):
                break
            if limited:
                cost = slots.match_cost(row, cons_of)
                if not permits(cost, st.used_unclaimed, lim.limit_unclaimed):
                    break
            heapq.heappop(heap)
            self.stats.num_jobs_considered += 1
            self.diag.submitter_limit = 0  # as each job offered one by one sets it
            cost = self._make_match(req, slots, row, cons_of, heap, False)
            charge(cost, self.now)
            st.used += cost
            st.used_unclaimed += cost
            turn.left[i] -= 1
            taken += 1
        return taken

    def _pass_over(self, stream: CandidateStream, slots: _Slots, cost: float) -> None:
        """A candidate of ``stream`` cost ``cost``, more than the submitter's limit lets
        it take: pass over the rest of its key when each live slot left there is a static
        slot that costs as much or more. Each would fail alike (nothing changes while a
        job looks for a slot), and a large class is not walked a slot at a time."""
        entries = stream.group()
        if entries is None:
            return
        view = stream.view
        if (
            (entries < 0).any()
            or view.has_cp[entries].any()
            or int(view.sizes[entries].sum()) < _PASS_OVER_ROWS
        ):
            stream.keep_group()
            return
        members, starts, alive = view.classes.members, view.starts, slots.alive
        for c in entries.tolist():
            m = members[c][starts[c] :]
            live = m[alive[m]]
            if len(live) and (slots.is_p[live].any() or slots.weight[live].min() < cost):
                stream.keep_group()
                return
        stream.skip_group()

    def _reject(self, req: ResourceRequest, message: str = "") -> None:
        """No slot for this request: count it, log it, tell its schedd why (``message``
        when HTCondor's is more precise than the reason, as for concurrency limits, or
        when the request's expressions ran past their budget)."""
        self.stats.rejections += 1
        reason = message or self.diag.reason()
        t = self.timer()
        self.say(
            f"      Rejected {req.job_id} {req.submitter} {sinful(req.schedd_address)}: {reason}", t
        )
        self.rejections.append(
            CycleRejection(
                req.submitter,
                req.schedd,
                req.schedd_address,
                req.autocluster_id,
                req.job_id,
                reason,
                t,
            )
        )

    def _preempting(self, req: ResourceRequest, slots: _Slots, row: int) -> None:
        """A Claimed slot is about to be matched: its offer gets the inserted attributes,
        and the NegotiatorLog says who is preempted for whom."""
        offer = slots.offer_with_remote_prio(row)
        remote = slots.view.preempt.remote[slots.classes.of[row]] or "?"
        prio = _scalar_number(offer.eval("RemoteUserPrio", now=self.expr_now, rng=self.rng))
        new_rank = _scalar_number(offer.eval("Rank", req.ad, now=self.expr_now, rng=self.rng))
        old_rank = _scalar_number(offer.eval("CurrentRank", now=self.expr_now, rng=self.rng))
        self.say(
            preempting_line(
                remote,
                prio or 0.0,
                old_rank or 0.0,
                slots.names[row],
                req.submitter,
                self.acct.eup(req.submitter),
                new_rank or 0.0,
            )
        )

    def _match_static(self, req: ResourceRequest, slots: _Slots, row: int, cost: float) -> None:
        """``_make_match`` of an unlogged static slot (a run's): no deduction, no re-offer;
        the caller kills the run's rows."""
        self._record(req, slots, row, slots.ad(row), slots.claims[row].pop(0), cost)

    def _record(
        self,
        req: ResourceRequest,
        slots: _Slots,
        row: int,
        offer: ClassAd,
        claim: str,
        cost: float,
    ) -> str:
        """Add the match of ``row`` (as ``offer``d, with ``claim``) to the cycle's; returns
        the startd's address."""
        startd_address = slots.startd_address(row, offer)
        self.matches.append(
            CycleMatch(
                req.submitter,
                req.schedd,
                req.schedd_address,
                req.autocluster_id,
                req.job_id,
                slots.names[row],
                claim,
                offer,
                startd_address,
                cost,
            )
        )
        return startd_address

    def _make_match(
        self,
        req: ResourceRequest,
        slots: _Slots,
        row: int,
        cons_of: PslotConsumption,
        heap: list[tuple],
        log_this: bool,
    ) -> float:
        """Match ``row`` to one job of ``req``; returns its cost (the caller charges it)."""
        offer = slots.ad(row)
        claim = slots.claims[row].pop(0)
        if slots.cp_slot[row]:
            cost = slots.deduct(row, cons_of[row])
            if not slots.claims[row]:
                slots.kill(row)
            else:
                self._reoffer(req, slots, row, cons_of, heap)
        else:
            cost = slots.weights[row]
            slots.kill(row)
        startd_address = self._record(req, slots, row, offer, claim, cost)
        if log_this:
            at, rng = self.expr_now, self.rng
            ip = _string_attr(offer, "StartdIpAddr", None, at, rng)
            startd_ip = (
                ip
                if ip is not None
                else (sinful(startd_address) if startd_address else "<0.0.0.0:0>")
            )
            remote = _string_attr(offer, "RemoteUser", None, at, rng)
            remote = remote if remote is not None else "none"
            group = _string_attr(offer, "AccountingGroup", None, at, rng)
            if group is not None:
                remote = f"{remote} (AccountingGroup={group})"
            name = slots.names[row]
            self.say(
                f"      Matched {req.job_id} {req.submitter} {sinful(req.schedd_address)} "
                f"preempting {remote} {startd_ip} {name}"
            )
            self.say(f"      Successfully matched with {name}")
        return cost

    def _reoffer(
        self,
        req: ResourceRequest,
        slots: _Slots,
        row: int,
        cons_of: PslotConsumption,
        heap: list[tuple],
    ) -> None:
        """Put a p-slot back among this request's candidates if the next job still fits
        (HTCondor's returnPslotToMatchList), ranked on what it has left. P-slots of one
        base class holding the same resources give the same answer: it is remembered."""
        reoffered = self._reoffered
        if reoffered is None:
            reoffered = self._reoffered = (
                self._reoffered_by_shape.setdefault(slots.memo.request_shape(req.ad), {})
                if slots.memo is not None
                else {}
            )
        key, shared = slots.held_keys(row)
        base = key[0]
        found = reoffered.get(key) if base >= 0 else None
        if found is None and shared is not None:
            found = reoffered.get(shared)
        if found is None:
            found, alike = self._reoffer_test(req.ad, slots, row)
            if shared is not None and alike:
                reoffered[shared] = found
            elif base >= 0:
                reoffered[key] = found
        cons, ranks = found
        if cons is None:
            return
        cons_of[row] = cons
        heapq.heappush(heap, _heap_key(*ranks, NO_PREEMPTION, NO_RANK, row))

    def _reoffer_test(
        self, job: ClassAd, slots: _Slots, row: int
    ) -> tuple[tuple[np.ndarray | None, tuple[float, float, float]], bool]:
        """(consumption or None when the job does not fit or match, its ranks), and
        whether the answer is the same on every p-slot alike but for the wide names."""
        taint = slots.taint
        ad = slots.ad(row)
        slot = WatchedAd.of(ad, slots.classes.wide) if taint is not None else ad
        no = None, (0.0, 0.0, 0.0)
        cons = slots.scalar_consumption(_with_zero_requests(job, slots.resources), row, slot)
        if not _sufficient_one(cons.tolist(), slots.left(row)):
            return no, not getattr(slot, "read", False)
        jo = _override_requests(job, cons, slots.resources)
        job_req = jo.lookup("Requirements")
        slot_req = slot.lookup("Requirements")
        ok = (
            slot_req is not None
            and job_req is not None
            and truth(evaluate(slot_req, slot, jo, now=self.expr_now, rng=self.rng)) is True
        )
        if not isinstance(slot, WatchedAd):
            ok = ok and truth(evaluate(job_req, jo, slot, now=self.expr_now, rng=self.rng)) is True
            return ((cons, slots.scalar_ranks(job, row, slot)) if ok else no), True
        found = (cons, slots.scalar_ranks(job, row, slot)) if ok else no
        alike = not slot.read  # what else it read did not touch a wide name
        if ok:
            slot.read = False
            ok = truth(evaluate(job_req, jo, slot, now=self.expr_now, rng=self.rng)) is True
            if slot.read:
                alike = (
                    alike
                    and self._kleene_safe(job_req, taint)
                    and alike_answer(job_req, jo, slot, taint, self.expr_now, self.rng)
                )
        return (found if ok else no), alike

    def _kleene_safe(self, requirements: Expr, taint: WideTaint) -> bool:
        hit = self._safe.get(id(requirements))
        if hit is None or hit[0] is not requirements:
            hit = self._safe[id(requirements)] = (requirements, taint.kleene_safe(requirements))
        return hit[1]


def negotiate(
    snapshot: CycleAds,
    requests: Iterable[ResourceRequest],
    accountant: Accountant,
    config: ConfigDict | CycleConfig,
    now: float,
    *,
    timer: Callable[[], float] | None = None,
    cpu_timer: Callable[[], float] | None = None,
    finish: bool = True,
    phase1_notes: Sequence[LogLine] = (),
    columns: CycleCarry | None = None,
    ad_epoch: int = 0,
    rng: random.Random | None = None,
) -> CycleResult:
    """Run one negotiation cycle that started (phase 1) at pool time ``now``.

    ``ad_epoch``: the date (Unix time) of pool time 0; ``time()`` in the ads' expressions
    is ``ad_epoch + now``, as the ads' own dates count from it. ``rng``: what random() in
    them draws from (the negotiator's own, seeded; without one, random() raises
    MissingEvalInput).

    ``timer`` returns the current pool time and times the phases and log lines (default:
    ``now`` throughout, so a test's log and stats are exact); ``cpu_timer`` returns CPU
    seconds (default: none measured). The input accountant is not changed: the result
    holds the updated copy. With ``finish=False`` the caller sends the matches first and
    then calls ``result.finish(end)`` so the sending counts in phase 4. ``phase1_notes``
    are the caller's own phase-1 lines (a schedd that failed), logged after "Got ads".
    ``columns``: the columns of the caller's last cycle, reused where the ads' values
    are the same objects (a negotiator passes its own from cycle to cycle).
    """
    cfg = config if isinstance(config, CycleConfig) else CycleConfig.from_config(config)
    clock = timer if timer is not None else (lambda: now)
    result = _Cycle(
        snapshot,
        requests,
        accountant,
        cfg,
        now,
        clock,
        cpu_timer,
        phase1_notes,
        columns,
        ad_epoch,
        rng,
    ).run()
    if finish:
        result.finish(clock())
    return result


def requests_from_ads(
    ads: Iterable[ClassAd],
    schedd: str,
    schedd_address: str,
    *,
    now: float | None = None,
    rng: random.Random | None = None,
) -> tuple[list[ResourceRequest], list[str]]:
    """Resource requests from one schedd's reply, and an error line for each bad one
    (``now``: the date time() in them reads, ``rng``: what random() draws from)."""
    out: list[ResourceRequest] = []
    errors: list[str] = []
    for ad in ads:
        try:
            out.append(ResourceRequest.from_ad(ad, schedd, schedd_address, now=now, rng=rng))
        except NegotiatorInputError as exc:
            errors.append(str(exc))
    return out, errors
