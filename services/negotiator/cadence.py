"""When the next negotiation cycle runs: HTCondor's negotiation timer, as a pure object.

The rules (matchmaker.cpp, ``negotiationTime`` and ``RESCHEDULE_commandHandler``):

- The first cycle is due at start.
- When the timer fires at ``now``: if ``now - last_end < NEGOTIATOR_CYCLE_DELAY`` the
  cycle is skipped and the timer re-armed for ``last_end + CYCLE_DELAY``; else if
  ``now - last_start < NEGOTIATOR_MIN_INTERVAL`` it is re-armed for
  ``last_start + MIN_INTERVAL``; otherwise the cycle starts (and the pending-reschedule
  flag is cleared).
- After a cycle of length ``d`` that ended at ``end``, the next is due at
  ``end + max(CYCLE_DELAY, NEGOTIATOR_INTERVAL - d)``.
- A reschedule makes the next cycle due now, once: further reschedules before the next
  cycle starts change nothing (HTCondor's ``GotRescheduleCmd``). The two minimums still
  apply when the timer fires.

Use: ``while True: sleep until cadence.next_due; if cadence.try_start(now): run the cycle;
cadence.finished(start, end)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..config import ConfigDict

__all__ = ["Cadence", "CadenceError"]


class CadenceError(ValueError):
    """A negative or non-finite interval, or a cycle that ends before it starts."""


def _check(name: str, value: float) -> float:
    v = float(value)
    if not (math.isfinite(v) and v >= 0):
        raise CadenceError(f"{name} must be a number >= 0, got {value!r}")
    return v


@dataclass
class Cadence:
    interval: float = 60.0
    min_interval: float = 5.0
    cycle_delay: float = 20.0
    next_due: float = 0.0
    last_start: float | None = None
    last_end: float | None = None
    reschedule_pending: bool = False

    def __post_init__(self) -> None:
        self.interval = _check("NEGOTIATOR_INTERVAL", self.interval)
        self.min_interval = _check("NEGOTIATOR_MIN_INTERVAL", self.min_interval)
        self.cycle_delay = _check("NEGOTIATOR_CYCLE_DELAY", self.cycle_delay)

    @classmethod
    def from_config(cls, config: ConfigDict, start: float = 0.0) -> Cadence:
        return cls(
            interval=config.get_float("NEGOTIATOR_INTERVAL"),
            min_interval=config.get_float("NEGOTIATOR_MIN_INTERVAL"),
            cycle_delay=config.get_float("NEGOTIATOR_CYCLE_DELAY"),
            next_due=start,
        )

    def due(self, now: float) -> bool:
        return now >= self.next_due

    def try_start(self, now: float) -> bool:
        """The timer fired at ``now``: True if a cycle starts now, else it is re-armed."""
        # Compare with the very sums the timer was armed at: ``now - last < delay`` can
        # be true at ``now == last + delay`` in floating point, re-arming the timer at the
        # instant it fired, forever (a virtual clock never moves past it by itself).
        if self.last_end is not None and now < self.last_end + self.cycle_delay:
            self.next_due = self.last_end + self.cycle_delay
            return False
        if self.last_start is not None and now < self.last_start + self.min_interval:
            self.next_due = self.last_start + self.min_interval
            return False
        self.reschedule_pending = False
        # Until finished() says otherwise, the periodic timer would fire an interval on.
        self.next_due = now + self.interval
        return True

    def finished(self, start: float, end: float) -> float:
        """A cycle ran from ``start`` to ``end``; returns when the next one is due."""
        if end < start:
            raise CadenceError(f"cycle ends ({end}) before it starts ({start})")
        self.last_start, self.last_end = start, end
        self.next_due = end + max(self.cycle_delay, self.interval - (end - start))
        return self.next_due

    def when_due(self) -> float:
        """When the next cycle will actually start: ``next_due`` pushed back by the two
        minimums that ``try_start`` applies."""
        t = self.next_due
        if self.last_end is not None:
            t = max(t, self.last_end + self.cycle_delay)
        if self.last_start is not None:
            t = max(t, self.last_start + self.min_interval)
        return t

    def reschedule(self, now: float) -> float:
        """A reschedule request: the next cycle is due now (once). Returns ``next_due``."""
        if not self.reschedule_pending:
            self.reschedule_pending = True
            self.next_due = now
        return self.next_due
