"""What a negotiation cycle is given: the collector's ads (CycleAds), the schedds'
resource requests (ResourceRequest, read from their ads by ``requests_from_ads``), the
negotiator's knobs (CycleConfig, checked before a pool starts), and what the last cycle
left it (CycleCarry).
"""

from __future__ import annotations

import math
import random
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from ..classad import UNDEFINED, ClassAd, ClassAdSyntaxError, evaluate, parse_expr
from ..classad.kernel import ColumnCarry, SuppliedColumn
from ..classad.tree import Expr
from ..config import ConfigDict, ConfigError
from .groups import GroupConfig, GroupConfigError
from .limits import LimitMaxima
from .preemption import preemption_policy

NO_RANK = -sys.float_info.max  # HTCondor: a rank that is not a number is -DBL_MAX
RESOURCES = ("Cpus", "Memory", "Disk")
DEFAULT_LOG_MATCH_LIMIT = 1000


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
            early = config.get_bool("NEGOTIATOR_CONSIDER_EARLY_PREEMPTION")
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


@dataclass
class CycleCarry:
    """What a negotiator's cycle leaves its next: the columns of its slot ads and of their
    private ads (most are the very ads of the next snapshot)."""

    slots: ColumnCarry = field(default_factory=ColumnCarry)
    private: ColumnCarry = field(default_factory=ColumnCarry)


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
