"""Slots of one machine: their policy, state, claims, time accounting and ads.

A slot is Static (a fixed share of the machine), Partitionable (a pool of resources that
dynamic slots are carved from; always Unclaimed/Idle itself) or Dynamic (carved from a
partitionable parent for one claim, deleted when the claim is released), as in HTCondor's
startd (condor_startd.V6/Resource.cpp, ResState.cpp, claim.cpp).

Per-type policy follows HTCondor's ``SlotType::param``: a knob ``SLOT_TYPE_<N>_<KNOB>``
overrides ``<KNOB>`` for slots of type N (START, RANK, SLOT_WEIGHT, NUM_CLAIMS,
CONSUMPTION_POLICY, CONSUMPTION_<RES> and the MODIFY_REQUEST_EXPR_* knobs here), and a
dynamic slot follows its parent's type.

Consumption policy (Resource.cpp): a partitionable slot has one when CONSUMPTION_POLICY
(or SLOT_TYPE_<N>_CONSUMPTION_POLICY) is true. Only then does it advertise
ConsumptionCpus/Memory/Disk (CONSUMPTION_<RES>, evaluated with the job as TARGET),
NumClaims, and NUM_CLAIMS claim ids in ClaimIdList (private); MachineResources ("Cpus
Memory Disk Swap") is on every slot. The negotiator splits only a slot with all of
these (``cp_supports_policy``); a p-slot without a policy is matched whole and the
schedd carves it.

A claimed slot also offers a *preempting* claim id (HTCondor's ``r_pre``): its private ad
shows that id as Capability, so the negotiator can hand it to another schedd, whose claim
request then preempts the claim (see ``Machine.request_claim``).
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from ..claimid import redact
from ..classad import ClassAd, Expr, parse_expr
from ..classad.ad import literal_binding, shared_binding, shared_literal
from ..classad.tree import AdExpr, ListExpr, Literal
from ..condor_version import CONDOR_VERSION, condor_platform
from ..config import ConfigDict, ConfigError
from ..config.resources import MachineResource
from .reqexp import requirements, within_resource_limits

if TYPE_CHECKING:
    import random

__all__ = [
    "ACCOUNTED",
    "VOLATILE",
    "VOLATILE_KINDS",
    "AdValue",
    "SlotClaim",
    "MachineInfo",
    "RunningJob",
    "Slot",
    "SlotPolicy",
    "ad_pairs",
    "current_ad",
    "eval_number",
    "private_ad",
    "public_ad",
    "version_ad",
    "volatile_values",
]

# Job attributes a partitionable slot edits with MODIFY_REQUEST_EXPR_<ATTR> (defaults in
# mockpool.config's table).
MODIFY_REQUEST_ATTRS = ("RequestCpus", "RequestMemory", "RequestDisk")
# What every slot advertises as MachineResources (no custom resources are modelled).
MACHINE_RESOURCES = "Cpus Memory Disk Swap"
CONSUMPTION_RESOURCES = ("Cpus", "Memory", "Disk")

# (state, activity) -> ad attribute, published always (HTCondor publishes only non-zero
# totals; always having them keeps reports simple).
ACCOUNTED: dict[tuple[str, str], str] = {
    ("Unclaimed", "Idle"): "TotalTimeUnclaimedIdle",
    ("Claimed", "Idle"): "TotalTimeClaimedIdle",
    ("Claimed", "Busy"): "TotalTimeClaimedBusy",
}


def type_knob(cfg: ConfigDict, type_id: int, name: str) -> str | None:
    """``SLOT_TYPE_<N>_<name>`` if set (even empty, as HTCondor's type table), else ``name``."""
    knob = cfg.knob(f"SLOT_TYPE_{type_id}_{name}")
    if knob is not None:
        return cfg[knob.name].strip() or None
    value = cfg.get_str(name)
    return value or None


def knob_where(cfg: ConfigDict, type_id: int, name: str) -> str:
    """Where the knob a slot type reads as ``name`` was set: ``file:line: KNOB``."""
    knob = cfg.knob(f"SLOT_TYPE_{type_id}_{name}") or cfg.knob(name)
    return f"{knob.where}: {knob.name}" if knob is not None else f"<defaults>: {name}"


# A policy's text parsed once a process: the machines of a startd actor (a thousand at
# 10,000 slots) then share one tree per expression, as ads decoded from the wire do (a
# nested ad, which knows its holder, is copied into each ad: _binding).
_policy_expr = functools.lru_cache(maxsize=4096)(parse_expr)


def _expr(cfg: ConfigDict, type_id: int, name: str, default: str) -> Expr:
    text = type_knob(cfg, type_id, name) or default
    try:
        return _policy_expr(text)
    except ValueError as e:
        raise ConfigError(
            f"{knob_where(cfg, type_id, name)} = {text!r} (slot type {type_id}): {e}"
        ) from None


@dataclass(frozen=True)
class SlotPolicy:
    """What the configuration says about every slot of one type."""

    type_id: int
    start: Expr
    rank: Expr
    slot_weight: Expr
    max_job_retirement_time: Expr  # MAXJOBRETIREMENTTIME, evaluated with the job as TARGET
    num_claims: int | None  # None: ceil(Cpus) of the partitionable slot
    modify_request: tuple[tuple[str, Expr], ...]
    # CONSUMPTION_CPUS/_MEMORY/_DISK when the type has a consumption policy, else None
    consumption: tuple[Expr, Expr, Expr] | None = None
    # (resource, CONSUMPTION_<RES>) for the machine's custom resources, with a policy
    custom_consumption: tuple[tuple[str, Expr], ...] = ()

    @classmethod
    def from_config(cls, cfg: ConfigDict, type_id: int, custom: tuple[str, ...] = ()) -> SlotPolicy:
        num_claims_text = type_knob(cfg, type_id, "NUM_CLAIMS")
        num_claims = None
        if num_claims_text is not None:
            try:
                num_claims = int(num_claims_text)
            except ValueError:
                raise ConfigError(
                    f"NUM_CLAIMS for slot type {type_id} = {num_claims_text!r}: expected an integer"
                ) from None
            if num_claims < 1:
                raise ConfigError(f"NUM_CLAIMS for slot type {type_id} must be at least 1")
        modify = tuple(
            (attr, _expr(cfg, type_id, f"MODIFY_REQUEST_EXPR_{attr.upper()}", attr))
            for attr in MODIFY_REQUEST_ATTRS
        )
        policy_text = type_knob(cfg, type_id, "CONSUMPTION_POLICY") or "False"
        word = policy_text.strip().lower()
        if word not in ("true", "false", "yes", "no", "1", "0"):
            raise ConfigError(
                f"{knob_where(cfg, type_id, 'CONSUMPTION_POLICY')} = {policy_text!r}: "
                "expected True or False"
            )
        consumption = None
        if word in ("true", "yes", "1"):
            consumption = tuple(
                _expr(  # HTCondor's fallback if the knob is empty (its default is set)
                    cfg,
                    type_id,
                    f"CONSUMPTION_{res.upper()}",
                    f"ifThenElse(target.Request{res} =?= undefined, 0, target.Request{res})",
                )
                for res in CONSUMPTION_RESOURCES
            )
        custom_consumption = ()
        if consumption is not None:
            custom_consumption = tuple(
                (
                    res,
                    _expr(
                        cfg,
                        type_id,
                        f"CONSUMPTION_{res.upper()}",
                        f"ifthenelse(target.Request{res} =?= undefined, 0, target.Request{res})",
                    ),
                )
                for res in custom
            )
        return cls(
            type_id=type_id,
            start=_expr(cfg, type_id, "START", "True"),
            rank=_expr(cfg, type_id, "RANK", "0"),
            slot_weight=_expr(cfg, type_id, "SLOT_WEIGHT", "Cpus"),
            max_job_retirement_time=_expr(cfg, type_id, "MAXJOBRETIREMENTTIME", "0"),
            num_claims=num_claims,
            modify_request=modify,
            consumption=consumption,  # type: ignore[arg-type]
            custom_consumption=custom_consumption,
        )


def eval_number(
    ad: ClassAd, name: str, target: ClassAd | None, *, now: float, rng: random.Random
) -> int | float | None:
    """``name`` evaluated in ``ad`` against ``target`` (time() is ``now``, a date; random()
    draws from ``rng``) if it is a number (not a bool)."""
    value = ad.eval(name, target, now=now, rng=rng)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def is_true(value: Any) -> bool:
    """A requirements result counts only when it is exactly true (UNDEFINED is false)."""
    if isinstance(value, bool):
        return value
    return isinstance(value, int | float) and value != 0 and math.isfinite(value)


@dataclass(slots=True)
class RunningJob:
    cluster: int
    proc: int
    global_job_id: str
    start: float
    end: float
    retirement: float = 0.0  # MaxJobRetirementTime for this job (pool seconds from its start)
    exit_code: int = 0  # what the job exits with (its MockExitCode)


@dataclass(slots=True)
class SlotClaim:
    """A claim held by a schedd on a static or dynamic slot."""

    claim_id: str
    schedd_name: str
    schedd_address: str
    owner: str  # the submitter, e.g. "group_physics.alice@mockpool"
    user: str
    client_machine: str
    rank: float  # the startd's RANK of the claiming job (CurrentRank)
    claimed_at: float
    last_heard: float
    lease_duration: float
    job: RunningJob | None = None
    job_ad: ClassAd | None = None  # the job the claim was requested for (a preempting claim's)
    concurrency_limits: str = ""  # the job's ConcurrencyLimits as evaluated, published
    activations: int = 0  # jobs started on this claim (CLAIM_WORKLIFE counts from the 2nd)


@dataclass(slots=True, eq=False)
class Slot:
    """One slot; resources are its own (for a partitionable slot: what is left)."""

    name: str  # slot1@exec0001, slot1_3@exec0001
    slot_id: int
    sub_id: int  # 0 unless dynamic
    kind: str  # "Static" | "Partitionable" | "Dynamic"
    policy: SlotPolicy
    cpus: int
    memory: int  # MB
    disk: int  # KB
    total_cpus: int  # TotalSlotCpus...: the slot as configured (a p-slot's whole share)
    total_memory: int
    total_disk: int
    claim_id: str  # static: offered (unclaimed) or held; dynamic: held; p-slot: Capability
    state: str = "Unclaimed"
    activity: str = "Idle"
    entered_state: float = 0.0
    matched_until: float = 0.0  # Matched (NEGOTIATOR_INFORM_STARTD): when MATCH_TIMEOUT ends it
    entered_activity: float = 0.0
    times: dict[tuple[str, str], float] = field(default_factory=dict)
    claim: SlotClaim | None = None
    parent: Slot | None = None
    # partitionable only
    claim_id_list: list[str] = field(default_factory=list)
    children: dict[int, Slot] = field(default_factory=dict)
    # static and dynamic, while claimed: the id a preempting claim request must bring, and
    # the claim waiting for the running job to retire (HTCondor's r_pre)
    preempt_id: str = ""
    preempting: SlotClaim | None = None
    retire_end: float = 0.0  # when the retiring job is evicted
    # custom resources (GPUs, MACHINE_RESOURCE_<name>): units left (a p-slot's) or owned,
    # the slot's configured share, and the ids among them (a p-slot's: those not carved)
    custom: dict[str, int] = field(default_factory=dict)
    total_custom: dict[str, int] = field(default_factory=dict)
    ids: dict[str, list[str]] = field(default_factory=dict)
    version: int = 0  # bumped on every change of the slot's ads
    ad_cache: tuple[int, ClassAd] | None = None  # (version, ad): see current_ad

    def touch(self) -> None:
        self.version += 1
        self.ad_cache = None  # a changed slot's ad is rebuilt when next needed

    def set_state(self, state: str, activity: str, now: float) -> None:
        """Close the current interval into the totals and enter ``state``/``activity``."""
        self.touch()
        key = (self.state, self.activity)
        self.times[key] = self.times.get(key, 0.0) + max(0.0, now - self.entered_activity)
        if state != self.state:
            self.entered_state = now
        self.state, self.activity = state, activity
        self.entered_activity = now

    def lowest_free_sub_id(self) -> int:
        # HTCondor's IdDispenser: the lowest id not in use, so freed ids are reused.
        n = 1
        while n in self.children:
            n += 1
        return n


@dataclass(frozen=True)
class MachineInfo:
    """What every slot ad of one machine shares."""

    name: str
    address: str  # <host:port>
    birthday: int
    total_cpus: int
    total_memory: int
    total_disk: int
    total_slots: int
    identity: tuple[tuple[str, AdValue], ...] = ()  # see machine_identity
    resources: tuple[MachineResource, ...] = ()  # custom resources, in name order
    ad_epoch: int = 0  # Unix time of pool time 0: the ads' dates count from it
    detected_cpus: int = 0  # DetectedCpus, DetectedMemory (MB): the mock hardware
    detected_memory: int = 0

    @cached_property
    def constants(self) -> tuple[tuple[str, AdValue], ...]:
        """The attributes every slot ad of this machine shares. A mock job runs nothing,
        so the load averages are 0.0 (as a machine whose jobs sleep)."""
        ident = dict(self.identity)
        major = ident.get("OpSysMajorVer", 9)
        return (
            ("MyType", "Machine"),
            ("TargetType", "Job"),
            ("Machine", self.name),
            ("MyAddress", self.address),
            ("StartdIpAddr", self.address),
            ("CondorVersion", CONDOR_VERSION),
            (
                "CondorPlatform",
                condor_platform(
                    str(ident.get("Arch", "X86_64")),
                    str(ident.get("OpSysName", "AlmaLinux")),
                    major if isinstance(major, int) else 9,
                ),
            ),
            *self.identity,
            ("DetectedCpus", self.detected_cpus or self.total_cpus),
            ("DetectedMemory", self.detected_memory or self.total_memory),
            ("TotalCpus", self.total_cpus),
            ("TotalMemory", self.total_memory),
            ("TotalDisk", self.total_disk),
            ("TotalSlots", self.total_slots),
            ("TotalLoadAvg", 0.0),
            ("TotalCondorLoadAvg", 0.0),
            ("DaemonStartTime", self.birthday),
            *self.resource_constants,
        )

    @cached_property
    def constant_ad(self) -> ClassAd | None:
        """:attr:`constants` as an ad, the base of every slot ad; None when one is a nested
        ad (each slot ad needs its own)."""
        ad = ClassAd.from_exprs(itertools.starmap(_binding, self.constants))
        return None if ad.holds_nested_ads else ad

    @cached_property
    def machine_resources(self) -> str:
        """MachineResources: the standard resources, then the custom ones."""
        return " ".join([MACHINE_RESOURCES, *(r.name for r in self.resources)])

    @cached_property
    def resource_constants(self) -> tuple[tuple[str, AdValue], ...]:
        """Total<Res> and Detected<Res> of each custom resource; for devices with
        properties (the GPUs of the mock inventory), one nested ad per device,
        ``<Res>_<id>`` (the id's dashes as underscores), and the properties all share as
        ``<Res>_<Property>``, as HTCondor's startd publishes condor_gpu_discovery's."""
        out: list[tuple[str, AdValue]] = []
        for res in self.resources:
            out.append((f"Total{res.name}", res.count))
            out.append((f"Detected{res.name}", ", ".join(res.ids) if res.ids else res.count))
            if res.properties:
                out += [(f"{res.name}_{prop}", value) for prop, value in res.properties]
                for dev in res.ids:
                    fields = "; ".join(
                        f"{p} = {_literal_text(v)}" for p, v in (("Id", dev), *res.properties)
                    )
                    out.append((device_attr(res.name, dev), parse_expr(f"[ {fields} ]")))
        return tuple(out)


# (attribute, knob, default): the machine identity HTCondor's startd advertises from its
# configuration; a mock machine "detects" HTCondor's usual x86_64 AlmaLinux 9 host.
IDENTITY_KNOBS = (
    ("Arch", "ARCH", "X86_64"),
    ("OpSys", "OPSYS", "LINUX"),
    ("OpSysAndVer", "OPSYSANDVER", "AlmaLinux9"),
    ("OpSysMajorVer", "OPSYSMAJORVER", "9"),
    ("OpSysName", "OPSYSNAME", "AlmaLinux"),
    ("UidDomain", "UID_DOMAIN", "mockpool"),
)


def machine_identity(cfg: ConfigDict, machine: str) -> tuple[tuple[str, AdValue], ...]:
    """Arch, OpSys..., UidDomain, FileSystemDomain (default: the machine's name, as
    HTCondor's $(FULL_HOSTNAME)), HasFileTransfer and the STARTD_ATTRS from one machine's
    configuration."""
    pairs: list[tuple[str, AdValue]] = []
    for attr, knob, default in IDENTITY_KNOBS:
        text = cfg.get_str(knob, default).strip() or default
        if attr == "OpSysMajorVer":
            try:
                pairs.append((attr, int(text)))
            except ValueError:
                found = cfg.knob(knob)
                where = f"{found.where}: {knob}" if found is not None else knob
                raise ConfigError(f"{where} = {text!r}: not an integer") from None
        else:
            pairs.append((attr, text))
    pairs.append(("FileSystemDomain", cfg.get_str("FILESYSTEM_DOMAIN", "").strip() or machine))
    pairs.append(("HasFileTransfer", True))
    return tuple(pairs) + startd_attrs(cfg, {a.lower() for a, _ in pairs})


def startd_attrs(cfg: ConfigDict, taken: set[str]) -> tuple[tuple[str, Expr], ...]:
    """STARTD_ATTRS (and the older STARTD_EXPRS): each named knob that is defined is
    published in every slot ad as an attribute of that name, its value an expression."""
    names = (cfg.get_str("STARTD_ATTRS") + " " + cfg.get_str("STARTD_EXPRS", "")).replace(",", " ")
    out: list[tuple[str, Expr]] = []
    for name in dict.fromkeys(names.split()):
        if name.lower() in taken or not cfg.is_defined(name):
            continue
        taken.add(name.lower())
        out.append((name, _policy_expr(cfg.get_expr(name, validate=parse_expr))))
    return tuple(out)


def device_attr(resource: str, dev: str) -> str:
    """The attribute holding one device's property ad: GPUs_GPU_1a2b3c4d."""
    return f"{resource}_{dev.replace('-', '_').replace('.', '_')}"


@functools.lru_cache(maxsize=4096)
def _device_refs(resource: str, ids: tuple[str, ...]) -> Expr:
    """``{ GPUs_GPU_a, GPUs_GPU_b }``, one shared object per set of ids (the shell caches
    an expression's text by the object)."""
    return parse_expr("{" + ", ".join(device_attr(resource, d) for d in ids) + "}")


def _literal_text(value: str | int | float) -> str:
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return repr(value)


def resource_pairs(slot: Slot, info: MachineInfo) -> list[tuple[str, AdValue]]:
    """The slot's custom resources: <Res> (units it has or, for a p-slot, has left),
    TotalSlot<Res>, Assigned<Res> (its ids, comma-joined; a p-slot's not yet carved off)
    and Available<Res> (the ids a
    job could get here, as references to the devices' property ads when they have some,
    so that ``countMatches(MY.RequireGPUs, TARGET.AvailableGPUs)`` reads them)."""
    out: list[tuple[str, AdValue]] = []
    for res in info.resources:
        name = res.name
        out.append((name, slot.custom.get(name, 0)))
        out.append((f"TotalSlot{name}", slot.total_custom.get(name, 0)))
        if res.ids:
            ids = slot.ids.get(name, [])
            out.append((f"Assigned{name}", ",".join(ids)))
            if res.properties:
                out.append((f"Available{name}", _device_refs(name, tuple(ids))))
            else:
                out.append((f"Available{name}", list(ids)))
    return out


# Attributes that change with time alone; they come last, in this order, so a shell that
# caches an ad's wire form can refresh just these.
VOLATILE = (
    *ACCOUNTED.values(),
    "TotalJobRunTime",
    "RetirementTimeRemaining",
    "MyCurrentTime",
    "UpdateSequenceNumber",
)

# the type of every VOLATILE value (shared_binding's key)
VOLATILE_KINDS = itertools.repeat(int)

# A value in an ad: a scalar, a list of scalars, or an expression (the slot's policy).
AdValue = bool | int | float | str | list | Expr


def ad_pairs(slot: Slot, info: MachineInfo, now: float, sequence: int) -> list[tuple[str, AdValue]]:
    """The slot's "Machine" ad as (name, value) pairs, :data:`VOLATILE` last.

    The one description of a slot ad: :func:`public_ad` makes a ClassAd of it, and the
    shell writes it to the wire directly (building ClassAds for every advertisement of
    thousands of slots would cost more than the rest of the startd).
    """
    policy = slot.policy
    pairs: list[tuple[str, AdValue]] = [
        *info.constants,
        ("Name", slot.name),
        ("SlotID", slot.slot_id),
        ("SlotTypeID", policy.type_id),
        ("SlotType", slot.kind),
        ("PartitionableSlot", slot.kind == "Partitionable"),
        ("DynamicSlot", slot.kind == "Dynamic"),
        ("State", slot.state),
        ("Activity", slot.activity),
        ("EnteredCurrentState", info.ad_epoch + int(slot.entered_state)),
        ("EnteredCurrentActivity", info.ad_epoch + int(slot.entered_activity)),
        ("Cpus", slot.cpus),
        ("Memory", slot.memory),
        ("Disk", slot.disk),
        ("TotalSlotCpus", slot.total_cpus),
        ("TotalSlotMemory", slot.total_memory),
        ("TotalSlotDisk", slot.total_disk),
        ("Start", policy.start),
        ("Requirements", requirements(slot.kind)),
        ("Rank", policy.rank),
        ("SlotWeight", policy.slot_weight),
        ("LoadAvg", 0.0),
        ("CondorLoadAvg", 0.0),
    ]
    if slot.kind != "Static":
        custom = tuple(r.name for r in info.resources)
        cp = policy.consumption is not None
        pairs.append(("WithinResourceLimits", within_resource_limits(custom, cp)))
    pairs.append(("MachineResources", info.machine_resources))
    if info.resources:
        pairs += resource_pairs(slot, info)
    if slot.kind != "Static" and policy.consumption is not None:
        pairs += zip((f"Consumption{r}" for r in CONSUMPTION_RESOURCES), policy.consumption)
        pairs += [(f"Consumption{r}", e) for r, e in policy.custom_consumption]
    if slot.kind == "Dynamic":
        pairs.append(("DSlotId", slot.sub_id))
    elif slot.kind == "Partitionable":
        children = slot.children.values()
        pairs += [
            ("NumDynamicSlots", len(slot.children)),
            ("ChildCpus", [c.cpus for c in children]),
            ("ChildMemory", [c.memory for c in children]),
        ]
        if policy.consumption is not None:
            pairs.append(("NumClaims", len(slot.claim_id_list)))
    claim = slot.claim
    if claim is not None:
        pairs += [
            ("RemoteOwner", claim.owner),
            ("RemoteUser", claim.user),
            ("AccountingGroup", claim.owner),
            ("RemoteScheddName", claim.schedd_name),
            ("ClientMachine", claim.client_machine),
            ("CurrentRank", claim.rank),
            ("MaxJobRetirementTime", policy.max_job_retirement_time),
            ("PublicClaimId", redact(claim.claim_id)),
            ("ClaimStartTime", info.ad_epoch + int(claim.claimed_at)),
        ]
        if claim.concurrency_limits:
            pairs.append(("ConcurrencyLimits", claim.concurrency_limits))
        job = claim.job
        if job is not None:
            pairs += [
                ("JobId", f"{job.cluster}.{job.proc}"),
                ("GlobalJobId", job.global_job_id),
                ("JobStart", info.ad_epoch + int(job.start)),
            ]
        pre = slot.preempting
        if pre is not None:
            pairs += [
                ("PreemptingUser", pre.user),
                ("PreemptingAccountingGroup", pre.owner),
                ("PreemptingRank", pre.rank),
            ]
            if pre.concurrency_limits:  # counted as in use by the negotiator, as HTCondor does
                pairs.append(("PreemptingConcurrencyLimits", pre.concurrency_limits))
    pairs += zip(VOLATILE, volatile_values(slot, now, sequence, info.ad_epoch))
    return pairs


def retirement_remaining(slot: Slot, now: float) -> int:
    """Seconds of MaxJobRetirementTime the running job has left (HTCondor's
    evalRetirementRemaining: the retirement time minus the job's age; 0 with no job)."""
    job = slot.claim.job if slot.claim is not None else None
    if job is None:
        return 0
    if slot.preempting is not None:
        return max(0, math.ceil(slot.retire_end - now))
    return max(0, math.ceil(job.start + job.retirement - now))


def volatile_values(slot: Slot, now: float, sequence: int, epoch: int) -> list[int]:
    """The values of :data:`VOLATILE` for this slot at ``now`` (MyCurrentTime: the date,
    ``epoch`` + pool seconds)."""
    # the time spent in each ACCOUNTED state and activity, the current interval up to now
    # included
    times, current = slot.times, (slot.state, slot.activity)
    out: list[int] = []
    for key in ACCOUNTED:
        total = times.get(key, 0.0)
        if key == current:
            total += max(0.0, now - slot.entered_activity)
        out.append(int(total))
    job = slot.claim.job if slot.claim is not None else None
    run_time = int(max(0.0, now - job.start)) if job is not None else 0
    out += [run_time, retirement_remaining(slot, now), epoch + int(now), sequence]
    return out


# (name, id(tree)) -> its binding, for the policy trees every slot of a type holds (the
# binding holds the tree, so the id stays its own while kept)
_tree_bindings: dict[tuple[str, int], tuple[str, Expr]] = {}


def _binding(name: str, value: AdValue) -> tuple[str, Expr]:
    """``(name, value as an expression)``, shared by the slot ads that hold it but for a
    nested ad (which looks attributes up in the ad that holds it: a copy each)."""
    kind = type(value)
    if kind is bool or kind is int or kind is float or kind is str:
        return literal_binding(name, value)  # type: ignore[arg-type]
    if isinstance(value, AdExpr):
        return name, AdExpr(value.ad.copy())
    if isinstance(value, list):
        return name, ListExpr(tuple(map(shared_literal, value)))
    key = (name, id(value))
    hit = _tree_bindings.get(key)
    if hit is None:
        if len(_tree_bindings) >= 65_536:
            _tree_bindings.clear()
        hit = _tree_bindings[key] = (name, value)
    return hit


def public_ad(slot: Slot, info: MachineInfo, now: float, sequence: int) -> ClassAd:
    """The slot's "Machine" ad, as the collector and the negotiator see it (a new ad)."""
    pairs = ad_pairs(slot, info, now, sequence)
    base = info.constant_ad
    if base is not None:  # the machine's constants lead the pairs: copy them in one step
        pairs = pairs[len(info.constants) :]
    # _binding, its usual cases (strings, ints, bools) without a Python call each
    bound = [
        shared_binding(name, kind, value)
        if (kind := type(value)) is str or kind is int or kind is bool
        else _binding(name, value)
        for name, value in pairs
    ]
    return ClassAd.from_exprs(bound, base)


def current_ad(slot: Slot, info: MachineInfo, now: float, sequence: int) -> ClassAd:
    """The slot's ad for evaluating policy, rebuilt only when the slot changed.

    Shared with later calls (only its :data:`VOLATILE` attributes are refreshed in place):
    read it, never keep or change it; :func:`public_ad` makes an ad to keep.
    """
    cached = slot.ad_cache
    if cached is not None and cached[0] == slot.version:
        ad = cached[1]
        ad.set_bindings(
            map(
                shared_binding,
                VOLATILE,
                VOLATILE_KINDS,
                volatile_values(slot, now, sequence, info.ad_epoch),
            )
        )
        return ad
    return version_ad(slot, info, now, sequence)


def version_ad(slot: Slot, info: MachineInfo, now: float, sequence: int) -> ClassAd:
    """The slot's ad as of its version, built once per version (:func:`current_ad`'s,
    and the base of the ads the startd sends): its :data:`VOLATILE` attributes are those
    of some earlier call, to be overwritten by whoever reads them."""
    cached = slot.ad_cache
    if cached is not None and cached[0] == slot.version:
        return cached[1]
    ad = public_ad(slot, info, now, sequence)
    slot.ad_cache = (slot.version, ad)
    return ad


def private_ad(slot: Slot, info: MachineInfo) -> ClassAd:
    """The slot's "MachinePrivate" ad: its claim ids, for the negotiator only."""
    pairs = [
        ("MyType", Literal("MachinePrivate")),
        ("Name", Literal(slot.name)),
        ("MyAddress", Literal(info.address)),
        ("Capability", Literal(slot.preempt_id if slot.claim is not None else slot.claim_id)),
    ]
    if slot.kind == "Partitionable" and slot.policy.consumption is not None:
        # HTCondor joins the ids with spaces in one string.
        pairs.append(("ClaimIdList", Literal(" ".join(slot.claim_id_list))))
        pairs.append(("NumClaims", Literal(len(slot.claim_id_list))))
    # (not shared bindings: a claim id is seen once, it would only churn their cache)
    return ClassAd.from_exprs(pairs)
