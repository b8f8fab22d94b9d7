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
- ``EUP = RUP * priority factor``; the factor is DEFAULT_PRIO_FACTOR unless set.

Pure: every method takes ``now``; :meth:`copy` gives an independent accountant so a cycle
can return a new one and leave its input untouched. ``to_dict``/``from_dict`` are the
persisted form (the shell writes it to disk; a later issue).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any

from ..config import ConfigDict

__all__ = ["MIN_PRIORITY", "Accountant", "AccountantError", "SubmitterRecord"]

MIN_PRIORITY = 0.5  # HTCondor's MinPriority: no RUP is ever lower


class AccountantError(ValueError):
    """A bad value given to the accountant (negative factor, half-life <= 0, ...)."""


@dataclass
class SubmitterRecord:
    priority: float = MIN_PRIORITY  # RUP
    factor: float | None = None  # None: DEFAULT_PRIO_FACTOR
    resources_used: float = 0.0  # weighted (SlotWeight) resources held now
    accumulated_usage: float = 0.0  # weighted resource-seconds ever charged
    begin_usage_time: float | None = None
    last_usage_time: float | None = None


class Accountant:
    """Per-submitter priorities and usage."""

    def __init__(
        self,
        *,
        halflife: float = 86400.0,
        default_factor: float = 1000.0,
        records: Mapping[str, SubmitterRecord] | None = None,
        last_update: float | None = None,
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

    @classmethod
    def from_config(cls, config: ConfigDict) -> Accountant:
        return cls(
            halflife=config.get_float("PRIORITY_HALFLIFE", 86400.0),
            default_factor=config.get_float("DEFAULT_PRIO_FACTOR", 1000.0),
        )

    def copy(self) -> Accountant:
        return Accountant(
            halflife=self.halflife,
            default_factor=self.default_factor,
            records=self.records,
            last_update=self.last_update,
        )

    # -- reading ------------------------------------------------------------------------
    def _rec(self, name: str) -> SubmitterRecord:
        rec = self.records.get(name)
        if rec is None:
            rec = self.records[name] = SubmitterRecord()
        return rec

    def rup(self, name: str) -> float:
        rec = self.records.get(name)
        return max(MIN_PRIORITY, rec.priority) if rec else MIN_PRIORITY

    def factor(self, name: str) -> float:
        rec = self.records.get(name)
        return rec.factor if rec and rec.factor is not None else self.default_factor

    def eup(self, name: str) -> float:
        """Effective user priority: RUP x priority factor (smaller is better)."""
        return self.rup(name) * self.factor(name)

    def resources_used(self, name: str) -> float:
        rec = self.records.get(name)
        return rec.resources_used if rec else 0.0

    # -- changing -----------------------------------------------------------------------
    def set_factor(self, name: str, factor: float) -> None:
        """``condor_userprio -setfactor``: factor >= 1 as HTCondor requires."""
        if not (math.isfinite(factor) and factor >= 1):
            raise AccountantError(f"priority factor for {name} must be >= 1, got {factor}")
        self._rec(name).factor = float(factor)

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
            rec.priority = max(MIN_PRIORITY, prio * beta + rec.resources_used * (1.0 - beta))
            rec.accumulated_usage += rec.resources_used * dt
        return beta

    def check_matches(self, usage: Mapping[str, float], now: float) -> None:
        """Replace every submitter's usage with ``usage`` (from the Claimed slot ads)."""
        for name, rec in self.records.items():
            if name not in usage:
                rec.resources_used = 0.0
        for name, used in usage.items():
            if used < 0 or not math.isfinite(used):
                raise AccountantError(f"usage of {name} must be a number >= 0, got {used}")
            rec = self._rec(name)
            rec.resources_used = float(used)
            if used > 0:
                if rec.begin_usage_time is None:
                    rec.begin_usage_time = now
                rec.last_usage_time = now

    def add_match(self, name: str, cost: float, now: float) -> None:
        """A match made this cycle: charge its cost until the next recount."""
        rec = self._rec(name)
        rec.resources_used += cost
        if rec.begin_usage_time is None:
            rec.begin_usage_time = now
        rec.last_usage_time = now

    # -- persistence --------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "halflife": self.halflife,
            "default_factor": self.default_factor,
            "last_update": self.last_update,
            "records": {k: asdict(v) for k, v in self.records.items()},
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Accountant:
        try:
            records = {k: SubmitterRecord(**v) for k, v in data.get("records", {}).items()}
            return cls(
                halflife=data["halflife"],
                default_factor=data["default_factor"],
                records=records,
                last_update=data.get("last_update"),
            )
        except (KeyError, TypeError) as exc:
            raise AccountantError(f"bad accountant state: {exc}") from None
