"""How busy an actor's event loop is: HTCondor's ``RecentDaemonCoreDutyCycle``.

HTCondor's DaemonCore times its select loop (``self_monitor.cpp``): the duty cycle is
``1 - SelectWaittime / PumpCycle`` over the recent window, the share of the loop's time
spent on work rather than waiting in ``select()``; a negative value (window jitter) is
published as 0. Tools read it as the daemon's health (``htcondor ap status`` calls a
daemon past 95% unhealthy).

Here the loop of an actor is the daemon's loop: :func:`install` wraps the asyncio loop's
selector so that each ``select()`` call's wait is recorded, and :class:`DutyCycle` keeps
those waits in buckets over the recent window (``STATISTICS_WINDOW_SECONDS``, 1200 s in
HTCondor; the caller converts it to real seconds). Pure apart from the monotonic clock
it is given, which a test drives by hand.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .config import ConfigDict

__all__ = ["DEFAULT_WINDOW", "DutyCycle", "install", "window_of"]

DEFAULT_WINDOW = 1200.0  # HTCondor's STATISTICS_WINDOW_SECONDS default
_BUCKETS = 20  # the window moves in steps of a twentieth (HTCondor's quantum, roughly)


def window_of(config: ConfigDict, time_scale: float) -> float:
    """The recent window in real seconds: DCSTATISTICS_WINDOW_SECONDS, else
    STATISTICS_WINDOW_SECONDS (pool seconds, as every duration in config; ConfigError
    names a knob that is not a number), over the time scale."""
    pool = DEFAULT_WINDOW
    for knob in ("DCSTATISTICS_WINDOW_SECONDS", "STATISTICS_WINDOW_SECONDS"):
        if config.get_str(knob, "").strip():
            pool = config.get_float(knob)
            break
    if not (math.isfinite(pool) and pool > 0):
        pool = DEFAULT_WINDOW
    return pool / time_scale if time_scale > 0 else pool


class DutyCycle:
    """Waits in ``select()`` over the last ``window`` seconds of the loop's life."""

    def __init__(self, window: float, *, monotonic: Callable[[], float] = time.monotonic) -> None:
        if not (math.isfinite(window) and window > 0):
            raise ValueError(f"duty cycle window must be a number of seconds > 0, got {window}")
        self.window = float(window)
        self._step = self.window / _BUCKETS
        self._monotonic = monotonic
        self._born = monotonic()
        self._waits: deque[list[float]] = deque()  # [bucket index, seconds waited]

    def waited(self, start: float, end: float) -> None:
        """The loop waited in ``select()`` from ``start`` to ``end`` (monotonic seconds);
        a wait across buckets is shared out among them. Buckets are stepped by index, so
        a start that rounds onto a bucket's edge (18.599999999999998 with steps of 0.6)
        cannot make a zero-length share and spin; a wait longer than the window only
        counts its recent part, the rest would be trimmed at once."""
        start = max(start, end - self.window)
        k = math.floor(start / self._step)
        while end > start:
            edge = (k + 1) * self._step
            if edge > start:
                stop = min(end, edge)
                if self._waits and self._waits[-1][0] == k:
                    self._waits[-1][1] += stop - start
                else:
                    self._waits.append([k, stop - start])
                start = stop
            k += 1
        self._trim(end)

    def _trim(self, now: float) -> None:
        oldest = math.floor((now - self.window) / self._step)
        while self._waits and self._waits[0][0] < oldest:
            self._waits.popleft()

    def recent(self) -> float:
        """1 - waited / elapsed over the window (its whole buckets, the current one so far,
        and no time before the meter began); 0.0 when no time has passed."""
        now = self._monotonic()
        self._trim(now)
        start = max(self._born, (math.floor((now - self.window) / self._step) + 1) * self._step)
        elapsed = now - start
        if elapsed <= 1e-9:
            return 0.0
        first = math.floor(start / self._step)
        waited = sum(w for k, w in self._waits if k >= first)
        return min(1.0, max(0.0, 1.0 - waited / elapsed))


class _TimedSelector:
    """A selector whose ``select()`` waits are told to a :class:`DutyCycle`."""

    def __init__(self, inner: Any, meter: DutyCycle) -> None:
        self.inner = inner
        self._meter = meter
        self._clock = meter._monotonic

    def select(self, timeout: float | None = None) -> Any:
        t0 = self._clock()
        try:
            return self.inner.select(timeout)
        finally:
            self._meter.waited(t0, self._clock())

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def install(loop: asyncio.AbstractEventLoop, meter: DutyCycle) -> Callable[[], None] | None:
    """Time ``loop``'s ``select()`` calls into ``meter``; returns what undoes it, or None
    for a loop with no selector to wrap (then the duty cycle reads 0)."""
    inner = getattr(loop, "_selector", None)
    if inner is None or not hasattr(inner, "select"):
        return None
    timed = _TimedSelector(inner, meter)
    loop._selector = timed  # type: ignore[attr-defined]

    def undo() -> None:
        if getattr(loop, "_selector", None) is timed:
            loop._selector = inner  # type: ignore[attr-defined]

    return undo
