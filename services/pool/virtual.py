"""What a virtual run adds to a pool spec: the clock it runs on and the price of a cycle.

``clock = "virtual"`` runs every daemon's core in this process on virtual time (the
simulation kernel, ``kernel/``). Time there moves only from event to event, so a
negotiation cycle takes no pool time unless the spec says what it costs
(``cycle_cost``): nothing (the default: deterministic), a fixed price per slot and per
match, or the CPU time the cycle really took times a factor (Batsim's "time dilation";
not deterministic, since CPU time varies from run to run).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

__all__ = ["CLOCKS", "VIRTUAL_EPOCH", "CycleCost", "parse_cycle_cost", "parse_dilation"]

CLOCKS = ("live", "virtual")

# The date a virtual run prints for pool time 0 (its NegotiatorLog and tools): fixed, so
# two runs of one spec and seed write the same bytes. 2026-01-01 00:00:00 UTC.
VIRTUAL_EPOCH = 1_767_225_600.0


@dataclass(frozen=True)
class CycleCost:
    """Pool seconds a cycle costs: ``per_slot`` x slots + ``per_match`` x matches +
    ``cpu_factor`` x the cycle's CPU seconds."""

    per_slot: float = 0.0
    per_match: float = 0.0
    cpu_factor: float = 0.0

    @property
    def free(self) -> bool:
        return not (self.per_slot or self.per_match or self.cpu_factor)

    def charge(self, slots: int, matches: int, cpu_seconds: float) -> float:
        return self.per_slot * slots + self.per_match * matches + self.cpu_factor * cpu_seconds


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{what} must be a number >= 0, got {value!r}")
    v = float(value)
    if not math.isfinite(v) or v < 0:
        raise ValueError(f"{what} must be a finite number >= 0, got {value!r}")
    return v


def parse_dilation(text: str) -> float:
    """A ``--time-dilation`` factor from the command line."""
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"time dilation must be a number >= 0, got {text!r}") from None
    return _number(value, "time dilation")


def parse_cycle_cost(value: Any) -> CycleCost:
    """``"zero"``, ``{ per_slot = s, per_match = s }`` or ``{ cpu_factor = f }``."""
    if value == "zero":
        return CycleCost()
    if not isinstance(value, dict):
        raise ValueError(
            f'must be "zero" or a table of per_slot/per_match or cpu_factor, got {value!r}'
        )
    known = {"per_slot", "per_match", "cpu_factor"}
    for k in value:
        if k not in known:
            raise ValueError(f"unknown key {k!r} (expected one of {', '.join(sorted(known))})")
    cost = CycleCost(**{k: _number(v, k) for k, v in value.items()})
    if cost.cpu_factor and (cost.per_slot or cost.per_match):
        raise ValueError("cpu_factor cannot be combined with per_slot/per_match")
    return cost
