"""Hierarchical group quotas: the GROUP_NAMES tree and its quota arithmetic.

Follows HTCondor's GroupEntry.cpp step by step (``hgq_construct_tree``,
``hgq_prepare_for_matchmaking``, ``hgq_assign_quotas``, ``hgq_fairshare``,
``hgq_allocate_surplus`` with its two surplus loops, ``hgq_recover_remainders`` and
``hgq_round_robin`` for unweighted slots, ``strict_enforce_quota``,
``hgq_negotiate_with_all_groups``):

- Names are case-insensitive; a group whose parent is not defined is ignored; the root
  is ``<none>`` and always accepts surplus.
- GROUP_QUOTA_<g> (a static count) wins over GROUP_QUOTA_DYNAMIC_<g> (a fraction of the
  parent's quota); neither gives 0.
- Quotas flow top-down (``assign_quotas``), requests bottom-up (``fairshare``): each group
  gets min(requested, quota), and unused quota is surplus shared among the groups that
  accept it, in proportion to their subtree quota, then equally among zero-quota groups.
- NEGOTIATOR_ALLOW_QUOTA_OVERSUBSCRIPTION (default True): static children's quotas are
  not scaled to fit their parent, and a parent keeps its whole quota for its own
  submitters (the root keeps only what its children did not take).
- Each round, groups are negotiated in GROUP_SORT_EXPR order with a limit that the
  negotiator receives as a whole number (HTCondor's callback takes an ``int``: a limit
  of 14.85 negotiates as 14), after a parent that does not accept surplus caps its
  subtree (NEGOTIATOR_STRICT_ENFORCE_QUOTA, default True). A round that did not use all
  it allocated hands the rest to the next, up to GROUP_QUOTA_MAX_ALLOCATION_ROUNDS.

Pure: the caller gives usage through a function and negotiates through a callback.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from ..classad import ClassAd, ClassAdSyntaxError, evaluate, parse_expr
from ..classad.tree import Expr
from ..config import ConfigDict, ConfigError

__all__ = [
    "DEFAULT_GROUP_SORT_EXPR",
    "ROOT",
    "Group",
    "GroupConfig",
    "GroupConfigError",
    "GroupTree",
    "group_of",
]

ROOT = "<none>"
DEFAULT_GROUP_SORT_EXPR = (
    'ifThenElse(AccountingGroup=?="<none>",3.4e+38,'
    "ifThenElse(GroupQuota>0,GroupResourcesInUse/GroupQuota,3.3e+38))"
)
FLT_MAX = 3.4028234663852886e38
_EPS = 0.00001


class GroupConfigError(ValueError):
    """A group-quota knob that cannot be used; ``knob`` names it."""

    def __init__(self, knob: str, problem: str) -> None:
        super().__init__(f"{knob}: {problem}")
        self.knob = knob


@dataclass(frozen=True)
class GroupSpec:
    name: str
    config_quota: float
    static_quota: bool
    accept_surplus: bool
    autoregroup: bool


@dataclass(frozen=True)
class GroupConfig:
    """The group knobs, checked once (GroupConfigError names a bad one)."""

    groups: tuple[GroupSpec, ...] = ()  # parents before children, as HTCondor sorts them
    allow_oversubscription: bool = True
    strict_enforce: bool = True
    max_rounds: int = 3
    round_robin_rate: float = math.inf
    sort_expr: Expr | None = None
    sort_expr_text: str = DEFAULT_GROUP_SORT_EXPR
    prio_factors: tuple[tuple[str, float], ...] = ()  # GROUP_PRIO_FACTOR_<g>, lower-cased name

    @property
    def enabled(self) -> bool:
        return bool(self.groups)

    @classmethod
    def from_config(cls, config: ConfigDict) -> GroupConfig:
        def knob(name: str) -> str | None:
            try:
                v = config.lookup(name)
            except ConfigError as exc:
                raise GroupConfigError(name, str(exc)) from None
            return v.strip() if v is not None and v.strip() else None

        def number(name: str, lo: float, hi: float) -> float | None:
            text = knob(name)
            if text is None:
                return None
            try:
                v = config.get_float(name)
            except (ConfigError, ValueError):
                raise GroupConfigError(name, f"must be a number, got {text!r}") from None
            if not math.isfinite(v) or v < lo or v > hi:
                raise GroupConfigError(name, f"must be a number in [{lo:g}, {hi:g}], got {text}")
            return v

        def boolean(name: str, default: bool) -> bool:
            if knob(name) is None:
                return default
            try:
                return config.get_bool(name)
            except (ConfigError, ValueError):
                raise GroupConfigError(name, f"must be True or False, got {knob(name)!r}") from None

        names: list[str] = []
        for raw in (knob("GROUP_NAMES") or "").replace(",", " ").split():
            if raw == ROOT:
                raise GroupConfigError("GROUP_NAMES", f"{ROOT} is reserved for the root group")
            if any(not part for part in raw.split(".")):
                raise GroupConfigError("GROUP_NAMES", f"bad group name {raw!r}")
            names.append(raw)
        lowered = [n.lower() for n in names]
        for n in names:
            if lowered.count(n.lower()) > 1:
                raise GroupConfigError("GROUP_NAMES", f"group {n} is listed twice")
            parent = n.rsplit(".", 1)[0] if "." in n else None
            if parent is not None and parent.lower() not in lowered:
                raise GroupConfigError(
                    "GROUP_NAMES", f"group {n} has no parent {parent} in GROUP_NAMES"
                )
        # A quota knob for a group that is not defined is a mistake worth stopping for.
        for k in config:
            ku = k.upper()
            for prefix in (
                "GROUP_QUOTA_DYNAMIC_",
                "GROUP_QUOTA_",
                "GROUP_ACCEPT_SURPLUS_",
                "GROUP_AUTOREGROUP_",
                "GROUP_PRIO_FACTOR_",
            ):
                if ku.startswith(prefix):
                    g = k[len(prefix) :]
                    if prefix == "GROUP_QUOTA_" and ku.startswith(
                        ("GROUP_QUOTA_DYNAMIC_", "GROUP_QUOTA_MAX_", "GROUP_QUOTA_ROUND_ROBIN_")
                    ):
                        break
                    if g.lower() not in lowered:
                        raise GroupConfigError(k, f"group {g} is not in GROUP_NAMES")
                    break
        accept = boolean("GROUP_ACCEPT_SURPLUS", False)
        regroup = boolean("GROUP_AUTOREGROUP", False)
        specs = []
        for n in sorted(names, key=str.lower):
            q = number(f"GROUP_QUOTA_{n}", 0, 2**31 - 1)
            static = q is not None
            if q is None:
                q = number(f"GROUP_QUOTA_DYNAMIC_{n}", 0, 1)
            specs.append(
                GroupSpec(
                    n,
                    q or 0.0,
                    static,
                    boolean(f"GROUP_ACCEPT_SURPLUS_{n}", accept),
                    boolean(f"GROUP_AUTOREGROUP_{n}", regroup),
                )
            )
        factors = []
        for n in names:
            f = number(f"GROUP_PRIO_FACTOR_{n}", 0, math.inf)
            if f is not None and f > 0:
                factors.append((n.lower(), f))
        text = knob("GROUP_SORT_EXPR") or DEFAULT_GROUP_SORT_EXPR
        try:
            sort_expr = parse_expr(text)
        except ClassAdSyntaxError as exc:
            raise GroupConfigError("GROUP_SORT_EXPR", f"cannot parse {text!r}: {exc}") from None
        # a check of the value's type: any date and any draw will do
        probe = evaluate(
            sort_expr, _sort_ad(ROOT, 1.0, 0.0, 0.0), None, now=0, rng=random.Random(0)
        )
        if isinstance(probe, (bool, str, list, ClassAd)) or not isinstance(probe, (int, float)):
            raise GroupConfigError(
                "GROUP_SORT_EXPR", f"must evaluate to a number, {text!r} gives {probe!r}"
            )
        rounds = number("GROUP_QUOTA_MAX_ALLOCATION_ROUNDS", 1, 1e9)
        rate = number("GROUP_QUOTA_ROUND_ROBIN_RATE", 1, math.inf)
        return cls(
            groups=tuple(specs),
            allow_oversubscription=boolean("NEGOTIATOR_ALLOW_QUOTA_OVERSUBSCRIPTION", True),
            strict_enforce=boolean("NEGOTIATOR_STRICT_ENFORCE_QUOTA", True),
            max_rounds=int(rounds) if rounds is not None else 3,
            round_robin_rate=rate if rate is not None else math.inf,
            sort_expr=sort_expr,
            sort_expr_text=text,
            prio_factors=tuple(factors),
        )


def _sort_ad(name: str, quota: float, allocated: float, in_use: float) -> ClassAd:
    ad = ClassAd()
    ad["AccountingGroup"] = name
    ad["GroupQuota"] = quota
    ad["GroupResourcesAllocated"] = allocated
    ad["GroupResourcesInUse"] = in_use
    return ad


@dataclass(eq=False)
class Group:
    """One node (HTCondor's GroupEntry): configuration plus this cycle's figures."""

    name: str
    config_quota: float = 0.0
    static_quota: bool = False
    accept_surplus: bool = False
    autoregroup: bool = False
    parent: Group | None = None
    children: list[Group] = field(default_factory=list)
    submitters: list[str] = field(default_factory=list)
    usage: float = 0.0
    quota: float = 0.0
    requested: float = 0.0
    currently_requested: float = 0.0
    allocated: float = 0.0
    subtree_quota: float = 0.0
    subtree_requested: float = 0.0
    subtree_usage: float = 0.0
    rr: bool = False
    rr_time: float = 0.0
    subtree_rr_time: float = 0.0
    sort_key: float = 0.0

    def __repr__(self) -> str:
        return f"Group({self.name!r}, quota={self.quota:g}, allocated={self.allocated:g})"


def group_of(submitter: str, names: Mapping[str, str]) -> str:
    """The deepest defined group on a submitter's accounting path (``names`` maps
    lower-cased group names to their spelling); ROOT when there is none.

    ``group_physics.hep.alice@pool`` -> ``group_physics.hep``; ``alice@pool`` -> ROOT; a
    name without ``@`` is a group's own record: itself if defined, else ROOT."""
    if "@" not in submitter:
        return names.get(submitter.lower(), ROOT)
    acct = submitter[: submitter.rfind("@")]
    if "." not in acct:
        return ROOT
    path = acct[: acct.rfind(".")].split(".")
    found = ROOT
    for k in range(1, len(path) + 1):
        g = names.get(".".join(path[:k]).lower())
        if g is None:
            break
        found = g
    return found


Log = Callable[[str], None]


class GroupTree:
    """The tree for one cycle, built from :class:`GroupConfig`."""

    def __init__(self, cfg: GroupConfig, *, rr_times: Mapping[str, float] | None = None) -> None:
        self.cfg = cfg
        self.root = Group(ROOT, accept_surplus=True)
        self.by_lower: dict[str, Group] = {ROOT.lower(): self.root}
        for spec in cfg.groups:
            parent = (
                self.by_lower[spec.name.rsplit(".", 1)[0].lower()]
                if "." in spec.name
                else self.root
            )
            g = Group(
                spec.name,
                spec.config_quota,
                spec.static_quota,
                spec.accept_surplus,
                spec.autoregroup,
                parent=parent,
            )
            parent.children.append(g)
            self.by_lower[spec.name.lower()] = g
        self.root.autoregroup = any(s.autoregroup for s in cfg.groups)
        self.accept_surplus = any(s.accept_surplus for s in cfg.groups)
        self.groups: list[Group] = []  # breadth first
        queue = [self.root]
        while queue:
            g = queue.pop(0)
            self.groups.append(g)
            queue.extend(g.children)
        for g in self.groups:
            g.rr_time = (rr_times or {}).get(g.name, 0.0)
        self.names = {k: g.name for k, g in self.by_lower.items()}
        self.total_quota = 0.0

    def group(self, name: str) -> Group:
        return self.by_lower[name.lower()]

    def assigned(self, submitter: str) -> Group:
        return self.by_lower[group_of(submitter, self.names).lower()]

    # -- hgq_prepare_for_matchmaking ------------------------------------------------------
    def prepare(
        self, total_quota: float, usage: Callable[[str], float], demand: Mapping[str, float]
    ) -> None:
        """Attach submitters (``demand``: weighted running + idle per submitter), read
        usage, and assign quotas from the pool's size."""
        for g in self.groups:
            g.quota = g.requested = g.currently_requested = g.allocated = 0.0
            g.subtree_quota = g.subtree_requested = 0.0
            g.submitters = []
            g.usage = usage(g.name)
        for sub, d in demand.items():
            g = self.assigned(sub)
            g.submitters.append(sub)
            g.requested += d
            g.currently_requested = g.requested
        if self.root.autoregroup:
            for g in self.groups[1:]:
                if g.autoregroup:
                    self.root.submitters.extend(g.submitters)
        self.total_quota = total_quota
        self._assign_quotas(self.root, total_quota)

    def _assign_quotas(self, g: Group, quota: float) -> None:
        if quota <= 0:
            return
        g.subtree_quota = quota
        sq = sum(c.config_quota for c in g.children if c.static_quota)
        dq = sum(c.config_quota for c in g.children if not c.static_quota)
        oversub = self.cfg.allow_oversubscription
        sqa = sq if oversub else min(sq, quota)
        dqa = max(0.0, quota - sqa)
        zs = sq if sq > 0 else 1.0
        zd = max(dq, 1.0)
        chq = 0.0
        for c in g.children:
            q = c.config_quota * (sqa / zs) if c.static_quota else c.config_quota * (dqa / zd)
            q = max(q, 0.0)
            self._assign_quotas(c, q)
            chq += q
        g.quota = quota if oversub else quota - chq
        if g is self.root:
            g.quota = quota - chq
        g.quota = max(g.quota, 0.0)

    # -- hgq_fairshare / hgq_allocate_surplus ---------------------------------------------
    def _fairshare(self, g: Group) -> float:
        g.allocated = min(g.requested, g.quota)
        g.requested -= g.allocated
        g.subtree_requested = g.requested
        surplus = g.quota - g.allocated
        if not g.children:
            return surplus
        for c in g.children:
            surplus += self._fairshare(c)
            if c.accept_surplus:
                g.subtree_requested += c.subtree_requested
        return self._allocate_surplus(g, surplus)

    def _allocate_surplus(self, g: Group, surplus: float) -> float:
        if surplus <= 0:
            return 0.0
        if g.subtree_requested <= 0:
            return surplus
        groups = [*g.children, g]
        allocated = [0.0] * len(groups)
        saved = (g.accept_surplus, g.subtree_quota)
        g.accept_surplus, g.subtree_quota = True, g.quota
        requested = g.subtree_requested
        g.subtree_requested = g.requested
        if surplus >= requested:
            for j, x in enumerate(groups):
                if x.accept_surplus and x.subtree_requested > 0:
                    allocated[j] = x.subtree_requested
            surplus -= requested
            requested = 0.0
        else:
            sub_req = [
                x.subtree_requested if (x.accept_surplus and x.subtree_requested > 0) else 0.0
                for x in groups
            ]
            for by_quota in (True, False):
                surplus, requested = _surplus_loop(
                    by_quota, groups, allocated, sub_req, surplus, requested
                )
        for j, x in enumerate(groups[:-1]):
            if allocated[j] > 0:
                self._allocate_surplus(x, allocated[j])
        g.allocated += allocated[-1]
        g.requested -= allocated[-1]
        g.subtree_requested = requested
        g.accept_surplus, g.subtree_quota = saved
        return surplus

    # -- unweighted slots: hgq_recover_remainders / hgq_round_robin ------------------------
    def _recover_remainders(self, g: Group) -> float:
        surplus = g.allocated - math.floor(g.allocated)
        g.allocated -= surplus
        g.requested += surplus
        g.allocated = math.floor(0.5 + g.allocated)
        g.requested = math.floor(0.5 + g.requested)
        g.subtree_requested = g.requested
        g.subtree_rr_time = g.rr_time if g.requested > 0 else math.inf
        if not g.children:
            return surplus
        for c in g.children:
            surplus += self._recover_remainders(c)
            if c.accept_surplus:
                g.subtree_requested += c.subtree_requested
                if c.subtree_requested > 0:
                    g.subtree_rr_time = min(g.subtree_rr_time, c.subtree_rr_time)
        return self._round_robin(g, surplus)

    def _round_robin(self, g: Group, surplus: float) -> float:
        g.subtree_requested = math.floor(g.subtree_requested)
        if g.subtree_requested <= 0 or surplus < 1:
            return surplus
        groups = [*g.children, g]
        allocated = [0.0] * len(groups)
        saved = (g.accept_surplus, g.subtree_quota, g.subtree_rr_time)
        g.accept_surplus, g.subtree_quota, g.subtree_rr_time = True, g.quota, g.rr_time
        requested = g.subtree_requested
        g.subtree_requested = g.requested
        sub_req = [0.0] * len(groups)
        outstanding = 0.0
        for j, x in enumerate(groups):
            if x.accept_surplus and x.subtree_requested > 0:
                sub_req[j] = x.subtree_requested
                outstanding += 1
        idx = sorted(
            range(len(groups)),
            key=lambda j: (
                groups[j].subtree_rr_time,
                -groups[j].subtree_quota,
                -groups[j].subtree_requested,
            ),
        )
        while surplus >= 1 and requested > 0:
            amax = max(1.0, math.floor(surplus / outstanding)) if outstanding > 0 else math.inf
            outstanding = 0.0
            sumalloc = 0.0
            for j in idx:
                x = groups[j]
                if x.accept_surplus and sub_req[j] > 0:
                    a = min(sub_req[j], amax)
                    allocated[j] += a
                    sub_req[j] -= a
                    sumalloc += a
                    surplus -= a
                    requested -= a
                    x.rr = True
                    if sub_req[j] > 0:
                        outstanding += 1
                    if surplus < amax:
                        break
            if sumalloc < 1:
                break
        for j, x in enumerate(groups[:-1]):
            if allocated[j] > 0:
                self._round_robin(x, allocated[j])
        g.allocated += allocated[-1]
        g.requested -= allocated[-1]
        g.subtree_requested = requested
        g.accept_surplus, g.subtree_quota, g.subtree_rr_time = saved
        return surplus

    # -- strict_enforce_quota -------------------------------------------------------------
    def _subtree_usage(self, g: Group, usage: Callable[[str], float]) -> float:
        g.subtree_usage = sum(self._subtree_usage(c, usage) for c in g.children) + usage(g.name)
        return g.subtree_usage

    def strict_enforce(
        self, g: Group, slots: float, usage: Callable[[str], float], log: Log
    ) -> float:
        if not self.cfg.strict_enforce:
            return slots
        self._subtree_usage(self.root, usage)
        new = slots - g.usage
        limiting: Group | None = g
        while limiting is not None:
            if not limiting.accept_surplus:
                cap = limiting.config_quota if limiting.static_quota else limiting.subtree_quota
                avail = max(0.0, cap - limiting.subtree_usage)
                if new > avail:
                    log(
                        f"Group {limiting.name} with accept_surplus=false has total usage = "
                        f"{_g(limiting.subtree_usage)} and config quota of {_g(limiting.config_quota)} -- "
                        f"constraining allocation in subgroup {g.name} to {_g(avail + g.usage)}"
                    )
                    new = avail
            limiting = limiting.parent
        return new + g.usage

    # -- the rounds: hgq_negotiate_with_all_groups ----------------------------------------
    def sort_key(
        self, g: Group, in_use: float, now: float | None, rng: random.Random | None
    ) -> float:
        """GROUP_SORT_EXPR for ``g`` (time() is the date ``now``; random() draws from
        ``rng``); FLT_MAX when not a number."""
        expr = self.cfg.sort_expr or parse_expr(DEFAULT_GROUP_SORT_EXPR)
        ad = _sort_ad(g.name, g.quota, g.allocated, in_use)
        v = evaluate(expr, ad, None, now=now, rng=rng)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or math.isnan(v):
            return FLT_MAX
        return float(v)

    def negotiate_all(
        self,
        *,
        weighted: bool,
        usage: Callable[[str], float],
        negotiate: Callable[[Group, int], None],
        log: Log,
        now: float,
        consider_preemption: bool = True,
        expr_now: float | None = None,
        rng: random.Random | None = None,
    ) -> int:
        """Run the allocation rounds; ``negotiate(group, limit)`` matches for one group.
        Returns the number of rounds. ``expr_now`` and ``rng``: the date time() reads in
        GROUP_SORT_EXPR and what random() draws from."""
        autoregroup = self.root.autoregroup
        rounds = 0
        while True:
            if rounds >= self.cfg.max_rounds:
                log(f"group quotas: halting allocation rounds after {rounds} iterations")
                break
            rounds += 1
            log(f"group quotas: allocation round {rounds}")
            for g in self.groups:
                g.allocated = g.subtree_requested = 0.0
                g.rr = False
            surplus = self._fairshare(self.root)
            if not weighted:
                surplus += self._recover_remainders(self.root)
            if autoregroup:
                log(
                    f"group quotas: autoregroup mode: allocating {_g(self.total_quota)} to group {ROOT}"
                )
                self.root.quota = self.root.allocated = self.total_quota
            maxdelta = requested_total = allocated_total = 0.0
            served = unserved = 0
            for g in self.groups:
                requested_total += g.requested
                allocated_total += g.allocated
                if g.allocated > 0:
                    served += 1
                elif g.requested > 0:
                    unserved += 1
                target = g.allocated if self.accept_surplus else g.quota
                maxdelta = max(maxdelta, max(0.0, target - g.usage))
            log(
                f"group quotas: groups= {len(self.groups)}  requesting= {served + unserved}  served= {served}  "
                f"unserved= {unserved}  requested= {_g(requested_total + allocated_total)}  "
                f"allocated= {_g(allocated_total)}  surplus= {_g(surplus)}  maxdelta= {_g(maxdelta)}"
            )
            for g in self.groups:
                g.sort_key = self.sort_key(g, usage(g.name), expr_now, rng)
            order = sorted(self.groups, key=lambda x: (autoregroup and x is self.root, x.sort_key))
            n = 0.0
            while True:
                n = min(n + self.cfg.round_robin_rate, maxdelta)
                log(f"group quotas: entering RR iteration n= {_g(n)}")
                for g in order:
                    if g.allocated <= 0:
                        log(f"Group {g.name} - skipping, zero slots allocated")
                        continue
                    if g.usage >= g.allocated and not consider_preemption:
                        log(
                            f"Group {g.name} - skipping, at or over quota (quota={_g(g.quota)}) "
                            f"(usage={_g(g.usage)}) (allocation={_g(g.allocated)})"
                        )
                        continue
                    if not g.submitters:
                        log(f"Group {g.name} - skipping, no submitters (usage={_g(g.usage)})")
                        continue
                    target = max(g.allocated, g.quota)
                    delta = max(0.0, target - g.usage)
                    # maxdelta can be 0 while delta > 0 (usage at its allocation, quota
                    # above it): HTCondor divides 0 by 0 and negotiates with NaN, which
                    # its int conversion and the pie turn into no new matches.
                    ratio = n / maxdelta if maxdelta > 0 else math.nan
                    slots = g.usage + delta * ratio if delta > 0 else target
                    slots = min(slots, target)
                    if not weighted and not math.isnan(slots):
                        slots = math.floor(slots)
                    slots = self.strict_enforce(g, slots, usage, log)
                    log(f"Group {g.name} - BEGIN NEGOTIATION with a quota limit of {_g(slots)}")
                    negotiate(g, _c_int(slots))
                if n >= maxdelta:
                    break
            usage_total = 0.0
            for g in self.groups:
                g.usage = usage(g.name)
                usage_total += min(g.usage, g.allocated)
                if g.usage < g.allocated:
                    g.requested = g.usage
                else:
                    g.requested += g.allocated
            log(
                f"Round {rounds} totals: allocated= {_g(allocated_total)}  usage= {_g(usage_total)}"
            )
            if usage_total >= allocated_total:
                break
        for g in self.groups:
            if g.rr or g.requested <= 0:
                g.rr_time = now
        return rounds

    def display(self) -> list[str]:
        """displayGroups: the table HTCondor logs after assigning quotas."""
        out = [
            f"{'Group':<20} {'Computed':>8} {'Config':>8} {'Quota':>8} {'Use':>8} {'Auto':>8} {'Claimed':>8} "
            f"{'Requestd':>8} {'Submters':>8}{'Allocatd':>8}",
            f"{'Name':<20} {'quota':>8} {'quota':>8} {'static':>8} {'surplus':>8} {'Regroup':>8} {'cores':>8} "
            f"{'cores':>8} {'in group':>8}{'cores':>8}",
            "-" * 92 + "-" * 8,
        ]

        def walk(g: Group) -> None:
            yn = {True: "Y", False: "N"}
            out.append(
                f"{g.name:<20} {_g(g.quota):>8} {_g(g.config_quota):>8} {yn[g.static_quota]:>8} "
                f"{yn[g.accept_surplus]:>8} {yn[g.autoregroup]:>8} {_g(g.usage):>8} {_g(g.requested):>8} "
                f"{len(g.submitters):>8}{_g(g.allocated):>8}"
            )
            for c in g.children:
                walk(c)

        walk(self.root)
        return out

    def rr_times(self) -> dict[str, float]:
        return {g.name: g.rr_time for g in self.groups}


def _surplus_loop(
    by_quota: bool,
    groups: list[Group],
    allocated: list[float],
    sub_req: list[float],
    surplus: float,
    requested: float,
) -> tuple[float, float]:
    while surplus > 0:
        z = sum(
            (x.subtree_quota if by_quota else 1.0) for j, x in enumerate(groups) if sub_req[j] > 0
        )
        if z <= 0:
            break
        never_gt = True
        sumalloc = 0.0
        for j, x in enumerate(groups):
            if sub_req[j] > 0:
                a = surplus * ((x.subtree_quota if by_quota else 1.0) / z)
                if a > sub_req[j]:
                    a = sub_req[j]
                    never_gt = False
                allocated[j] += a
                sub_req[j] -= a
                sumalloc += a
        surplus -= sumalloc
        requested -= sumalloc
        if never_gt or surplus < 0:
            surplus = 0.0
    return surplus, requested


def _c_int(x: float) -> int:
    """C's double -> int conversion: truncation toward zero, saturating."""
    if math.isnan(x):
        return 0
    if x >= 2**31 - 1:
        return 2**31 - 1
    return int(x)


def _g(x: float) -> str:
    """printf's %g."""
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:g}"
