"""The accountant: each submitter's real user priority (RUP), priority factor and usage.

Follows HTCondor's Accountant (Accountant.cpp, UpdatePriorities/CheckMatches/AddMatch):

- Once per cycle, with ``dt`` pool seconds since the last update,
  ``beta = 0.5 ** (dt / PRIORITY_HALFLIFE)`` and
  ``RUP = max(0.5, beta * RUP + (1 - beta) * usage)``, where ``usage`` is the weighted
  resources the submitter held *over that interval*: the value recorded at the previous
  cycle plus its matches (HTCondor decays before it recounts, so the usage of the last
  interval is charged, not the usage found now). The first update only starts the clock.
- Then usage is rebuilt from the Claimed slot ads (:meth:`Accountant.check_matches`),
  and each match of the cycle adds its cost (:meth:`Accountant.add_match`).
- ``EUP = RUP * priority factor``. A submitter's factor, unless set, is fixed the first
  time it is read (HTCondor's GetPriorityFactor writes it): NICE_USER_PRIO_FACTOR for
  names starting ``nice-user`` (nice_user jobs), else GROUP_PRIO_FACTOR_<g> of its
  assigned group when set, else DEFAULT_PRIO_FACTOR.
- Accounting groups have records of their own (``group_physics``, ``<none>``): a match
  charges the submitter and its assigned group; a group's RUP ages toward the usage of
  its whole subtree (HierWeightedResourcesUsed).

Pure: every method takes ``now``; :meth:`copy` gives an independent accountant so a cycle
can return a new one and leave its input untouched. ``to_dict``/``from_dict`` are the
persisted form (the negotiator shell writes it to disk each cycle).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from ..config import ConfigDict
from .groups import ROOT, GroupConfig, group_of

__all__ = ["MIN_PRIORITY", "NICE_USER_PREFIX", "Accountant", "AccountantError", "SubmitterRecord"]

MIN_PRIORITY = 0.5  # HTCondor's MinPriority: no RUP is ever lower
MIN_PRIORITY_FACTOR = 1.0
NICE_USER_PREFIX = "nice-user"  # condor_constants.h NiceUserName: a prefix match


class AccountantError(ValueError):
    """A bad value given to the accountant (negative factor, half-life <= 0, ...)."""


@functools.lru_cache(maxsize=1024)
def _lineage(group: str) -> tuple[str, ...]:
    """A group and its ancestors, deepest first ("a.b.c", "a.b", "a")."""
    parts = group.split(".") if group else []
    return tuple(".".join(parts[:k]) for k in range(len(parts), 0, -1))


@dataclass
class SubmitterRecord:
    priority: float = MIN_PRIORITY  # RUP
    factor: float | None = None  # None: DEFAULT_PRIO_FACTOR
    resources_used: float = 0.0  # weighted (SlotWeight) resources held now
    accumulated_usage: float = 0.0  # weighted resource-seconds ever charged
    begin_usage_time: float | None = None
    last_usage_time: float | None = None
    resources_count: int = 0  # slots held now (ResourcesUsed)
    hier_used: float = 0.0  # a group's whole subtree (HierWeightedResourcesUsed)


class Accountant:
    """Per-submitter priorities and usage."""

    def __init__(
        self,
        *,
        halflife: float = 86400.0,
        default_factor: float = 1000.0,
        records: Mapping[str, SubmitterRecord] | None = None,
        last_update: float | None = None,
        nice_factor: float = 1e10,
        groups: GroupConfig | None = None,
    ) -> None:
        if not (math.isfinite(halflife) and halflife > 0):
            raise AccountantError(f"PRIORITY_HALFLIFE must be > 0, got {halflife}")
        if not (math.isfinite(default_factor) and default_factor > 0):
            raise AccountantError(f"DEFAULT_PRIO_FACTOR must be > 0, got {default_factor}")
        self.halflife = float(halflife)
        self.default_factor = float(default_factor)
        self.records: dict[str, SubmitterRecord] = {
            k: replace(v) for k, v in (records or {}).items()
        }
        self.last_update = last_update
        if not (math.isfinite(nice_factor) and nice_factor > 0):
            raise AccountantError(f"NICE_USER_PRIO_FACTOR must be > 0, got {nice_factor}")
        self.nice_factor = float(nice_factor)
        self.set_groups(groups or GroupConfig())
        self.group_rr_time: dict[str, float] = {}  # HGQ round-robin times, kept across cycles

    @classmethod
    def from_config(cls, config: ConfigDict, groups: GroupConfig | None = None) -> Accountant:
        return cls(
            halflife=config.get_float("PRIORITY_HALFLIFE"),
            default_factor=config.get_float("DEFAULT_PRIO_FACTOR"),
            nice_factor=config.get_float("NICE_USER_PRIO_FACTOR"),
            groups=groups if groups is not None else GroupConfig.from_config(config),
        )

    def reconfigured(self, template: Accountant) -> Accountant:
        """This accountant's records under ``template``'s knobs (a restart with config)."""
        out = template.copy()
        out.records = {k: replace(v) for k, v in self.records.items()}
        out.last_update = self.last_update
        out.group_rr_time = dict(self.group_rr_time)
        return out

    def copy(self) -> Accountant:
        out = Accountant(
            halflife=self.halflife,
            default_factor=self.default_factor,
            records=self.records,
            last_update=self.last_update,
            nice_factor=self.nice_factor,
            groups=self.groups,
        )
        out.group_rr_time = dict(self.group_rr_time)
        return out

    def set_groups(self, groups: GroupConfig) -> None:
        """Use this group tree (GROUP_NAMES, GROUP_PRIO_FACTOR_<g>) to charge groups."""
        self.groups = groups
        self._names = {ROOT.lower(): ROOT} | {g.name.lower(): g.name for g in groups.groups}
        self._group_factors = dict(groups.prio_factors)
        self._group_of: dict[str, str] = {}  # answers for this tree, asked once a match

    def group_of(self, name: str) -> str:
        """The accounting group a submitter (or group record) is charged to."""
        group = self._group_of.get(name)
        if group is None:
            group = self._group_of[name] = group_of(name, self._names)
        return group

    # -- reading ------------------------------------------------------------------------
    def _rec(self, name: str) -> SubmitterRecord:
        rec = self.records.get(name)
        if rec is None:
            rec = self.records[name] = SubmitterRecord()
        return rec

    def rup(self, name: str) -> float:
        rec = self.records.get(name)
        return max(MIN_PRIORITY, rec.priority) if rec else MIN_PRIORITY

    def default_factor_of(self, name: str) -> float:
        if name.startswith(NICE_USER_PREFIX):
            return self.nice_factor
        gf = self._group_factors.get(self.group_of(name).lower())
        return gf if gf else self.default_factor

    def factor(self, name: str) -> float:
        """The priority factor; an unset one is fixed now, as HTCondor's read does."""
        rec = self._rec(name)
        if rec.factor is None or rec.factor < MIN_PRIORITY_FACTOR:
            rec.factor = self.default_factor_of(name)
        return rec.factor

    def eup(self, name: str) -> float:
        """Effective user priority: RUP x priority factor (smaller is better)."""
        return self.rup(name) * self.factor(name)

    def is_group(self, name: str) -> bool:
        return "@" not in name

    def resources_used(self, name: str) -> float:
        rec = self.records.get(name)
        return rec.resources_used if rec else 0.0

    # -- changing -----------------------------------------------------------------------
    def set_factor(self, name: str, factor: float) -> None:
        """``condor_userprio -setfactor``: factor >= 1 as HTCondor requires."""
        if not (math.isfinite(factor) and factor >= 1):
            raise AccountantError(f"priority factor for {name} must be >= 1, got {factor}")
        self._rec(name).factor = float(factor)

    def set_priority(self, name: str, priority: float) -> None:
        """``condor_userprio -setprio``: the real priority, >= MIN_PRIORITY."""
        if not (math.isfinite(priority) and priority >= MIN_PRIORITY):
            raise AccountantError(f"priority for {name} must be >= {MIN_PRIORITY}, got {priority}")
        self._rec(name).priority = float(priority)

    def reset_usage(self, name: str, now: float) -> None:
        """``condor_userprio -resetusage``: accumulated usage to 0, usage start to now."""
        rec = self._rec(name)
        rec.accumulated_usage = 0.0
        rec.begin_usage_time = now

    def reset_all_usage(self, now: float) -> None:
        """``condor_userprio -resetall`` (Accountant::ResetAllUsage): every record's
        accumulated usage to 0 and its usage start to now, groups' too."""
        for name in list(self.records):
            self.reset_usage(name, now)

    def set_accumulated_usage(self, name: str, usage: float) -> None:
        """``condor_userprio -setaccum`` (Accountant::SetAccumUsage): the accumulated
        weighted usage, in resource-seconds (>= 0)."""
        if not (math.isfinite(usage) and usage >= 0):
            raise AccountantError(f"accumulated usage of {name} must be >= 0, got {usage}")
        self._rec(name).accumulated_usage = float(usage)

    def set_begin_usage_time(self, name: str, when: float) -> None:
        """``condor_userprio -setbegin`` (Accountant::SetBeginTime), in pool seconds."""
        self._rec(name).begin_usage_time = float(int(when))

    def set_last_usage_time(self, name: str, when: float) -> None:
        """``condor_userprio -setlast`` (Accountant::SetLastTime), in pool seconds."""
        self._rec(name).last_usage_time = float(int(when))

    def delete(self, name: str) -> bool:
        """``condor_userprio -delete``: forget a record; False if there was none."""
        return self.records.pop(name, None) is not None

    def update_priorities(self, now: float) -> float:
        """Age every RUP toward its usage over the time since the last update.

        Returns the aging factor beta (1.0 on the first update or when no time passed).
        """
        if self.last_update is None or now <= self.last_update:
            # First update starts the clock; a clock that went back only resets it
            # (HTCondor does the same when TimePassed < 0).
            if self.last_update is None or now < self.last_update:
                self.last_update = now
            return 1.0
        dt = now - self.last_update
        beta = 0.5 ** (dt / self.halflife)
        self.last_update = now
        for rec in self.records.values():
            prio = max(MIN_PRIORITY, rec.priority)
            recent = rec.hier_used if rec.hier_used > 0 else rec.resources_used
            rec.priority = max(MIN_PRIORITY, prio * beta + recent * (1.0 - beta))
            rec.accumulated_usage += rec.resources_used * dt
            if rec.accumulated_usage > 0 and rec.begin_usage_time is None:
                rec.begin_usage_time = now
            if rec.resources_used > 0:
                rec.last_usage_time = now
        return beta

    def check_matches(
        self, usage: Mapping[str, float], now: float, counts: Mapping[str, int] | None = None
    ) -> None:
        """Replace every submitter's usage with ``usage`` (from the Claimed slot ads);
        ``counts`` are the slots held (ResourcesUsed), one per claimed slot if not given."""
        for rec in self.records.values():
            rec.resources_used = 0.0
            rec.resources_count = 0
            rec.hier_used = 0.0
        for name, used in usage.items():
            if used < 0 or not math.isfinite(used):
                raise AccountantError(f"usage of {name} must be a number >= 0, got {used}")
            n = counts.get(name, 0) if counts is not None else (1 if used > 0 else 0)
            self._charge(name, float(used), n, now)

    def add_match(self, name: str, cost: float, now: float) -> None:
        """A match made this cycle: charge its cost until the next recount."""
        self._charge(name, cost, 1, now)

    def add_matches(self, name: str, costs: Sequence[float], now: float) -> None:
        """``add_match`` for each of ``costs`` in turn (the records looked up once)."""
        charged = self._charged(name)
        for cost in costs:
            self._add(charged, cost, 1, now)

    def charger(self, name: str) -> Callable[[float, float], None]:
        """``add_match(name, cost, now)`` as ``f(cost, now)``, the records looked up once
        (a request's matches)."""
        charged, add = self._charged(name), self._add

        def charge(cost: float, now: float) -> None:
            add(charged, cost, 1, now)

        return charge

    def _charge(self, name: str, cost: float, count: int, now: float) -> None:
        self._add(self._charged(name), cost, count, now)

    def _charged(
        self, name: str
    ) -> tuple[SubmitterRecord, SubmitterRecord | None, list[SubmitterRecord]]:
        """What a charge to ``name`` adds to: its record, its group's (a submitter's), and
        the records of the group and its ancestors (their subtree usage)."""
        if self.is_group(name):
            return self._rec(name), None, []
        group = self.group_of(name)
        return self._rec(name), self._rec(group), [self._rec(p) for p in _lineage(group)]

    @staticmethod
    def _add(
        charged: tuple[SubmitterRecord, SubmitterRecord | None, list[SubmitterRecord]],
        cost: float,
        count: int,
        now: float,
    ) -> None:
        rec, grec, lineage = charged
        rec.resources_used += cost
        rec.resources_count += count
        if cost > 0:
            if rec.begin_usage_time is None:
                rec.begin_usage_time = now
            rec.last_usage_time = now
        if grec is None:
            return
        grec.resources_used += cost
        grec.resources_count += count
        for part in lineage:  # nested groups: every ancestor's subtree usage
            part.hier_used += cost

    # -- persistence --------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "halflife": self.halflife,
            "default_factor": self.default_factor,
            "last_update": self.last_update,
            "nice_factor": self.nice_factor,
            "group_rr_time": dict(self.group_rr_time),
            "records": {k: asdict(v) for k, v in self.records.items()},
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Accountant:
        try:
            records = {k: SubmitterRecord(**v) for k, v in data.get("records", {}).items()}
            out = cls(
                halflife=data["halflife"],
                default_factor=data["default_factor"],
                records=records,
                last_update=data.get("last_update"),
                nice_factor=data.get("nice_factor", 1e10),
            )
            out.group_rr_time = {str(k): float(v) for k, v in data.get("group_rr_time", {}).items()}
            return out
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise AccountantError(f"bad accountant state: {exc}") from None
