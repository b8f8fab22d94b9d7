"""Pool time: the one clock every daemon reads.

All durations in config and ads are *pool seconds*. ``ScaledClock`` maps real time to pool
time with a fixed ``time_scale`` (pool seconds per real second) from a wall-clock epoch
that every actor is given, so actors in different processes agree on "now". It records
how late each wake-up was, so a pool that cannot keep up with its time scale says so
(SimPy's ``rt`` raises; we count, and let reports decide). ``ManualClock`` is virtual
time for tests: nothing moves until the test calls ``advance``.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

__all__ = ["Clock", "LagStats", "ManualClock", "ScaledClock"]


@dataclass(frozen=True)
class LagStats:
    """How late wake-ups were, in pool seconds (0.0 everywhere when ``count == 0``)."""

    count: int
    max: float
    mean: float
    last: float


class _LagRecorder:
    # Running totals only: a long run wakes millions of times and must not grow memory.
    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self._count = 0
        self._max = 0.0
        self._total = 0.0
        self._last = 0.0

    def record(self, lag: float) -> None:
        self._count += 1
        self._total += lag
        self._last = lag
        if lag > self._max:
            self._max = lag

    def stats(self) -> LagStats:
        mean = self._total / self._count if self._count else 0.0
        return LagStats(count=self._count, max=self._max, mean=mean, last=self._last)


@runtime_checkable
class Clock(Protocol):
    """What a daemon may know about time. Never read ``time.time()`` in a daemon."""

    time_scale: float

    def now(self) -> float:
        """Current pool time in pool seconds (0 at the pool's epoch)."""
        ...

    async def sleep_until(self, t: float) -> None:
        """Return once ``now() >= t``; yields to the event loop even if ``t`` is past."""
        ...

    async def sleep(self, dt: float) -> None:
        """Sleep ``dt`` pool seconds (negative counts as 0)."""
        ...

    def lag_stats(self) -> LagStats:
        """How late ``sleep_until`` woke up so far, in pool seconds."""
        ...


def _check_scale(time_scale: float) -> float:
    scale = float(time_scale)
    if not (math.isfinite(scale) and scale > 0):
        raise ValueError(f"time_scale must be a finite number > 0, got {time_scale!r}")
    return scale


class ScaledClock:
    """Real time scaled by ``time_scale``; pool time 0 is wall time ``epoch_wall``.

    The wall clock is read once, at construction, and the monotonic clock after that:
    every process agrees on the epoch to within its clock sync, and an NTP step during
    a run cannot make pool time jump or run backwards. ``epoch_wall`` may lie in the
    future (a launcher gives actors time to start); ``now()`` is then negative.

    ``wall_time``, ``monotonic`` and ``real_sleep`` are testing hooks.
    """

    def __init__(
        self,
        time_scale: float,
        epoch_wall: float,
        *,
        wall_time: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
        real_sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    ) -> None:
        self.time_scale = _check_scale(time_scale)
        self.epoch_wall = float(epoch_wall)
        self._monotonic = monotonic
        self._real_sleep = real_sleep
        # Wall time that corresponds to monotonic reading `_mono0`.
        self._wall0 = wall_time()
        self._mono0 = monotonic()
        self._lag = _LagRecorder()

    @classmethod
    def starting_now(cls, time_scale: float, *, delay: float = 0.0) -> ScaledClock:
        """A clock whose pool time 0 is ``delay`` real seconds from now."""
        return cls(time_scale, time.time() + delay)

    def _wall_now(self) -> float:
        return self._wall0 + (self._monotonic() - self._mono0)

    def now(self) -> float:
        return self.wall_to_pool(self._wall_now())

    def pool_to_wall(self, t: float) -> float:
        """Wall-clock time (seconds since the Unix epoch) at pool time ``t``."""
        return self.epoch_wall + t / self.time_scale

    def wall_to_pool(self, wall: float) -> float:
        """Pool time at wall-clock time ``wall``."""
        return (wall - self.epoch_wall) * self.time_scale

    async def sleep_until(self, t: float) -> None:
        remaining = t - self.now()
        if remaining <= 0:
            # Still yield: a loop that is behind must not starve the event loop.
            await self._real_sleep(0)
        # Loop because the event loop may wake a hair early (clock resolution, float
        # rounding); callers rely on now() >= t afterwards.
        while remaining > 0:
            await self._real_sleep(remaining / self.time_scale)
            remaining = t - self.now()
        # Lag includes a `t` that was already past: a periodic loop whose body outran its
        # interval is exactly the "cannot keep up" we must report.
        self._lag.record(-remaining)

    async def sleep(self, dt: float) -> None:
        await self.sleep_until(self.now() + max(0.0, dt))

    def lag_stats(self) -> LagStats:
        return self._lag.stats()

    def reset_lag_stats(self) -> None:
        self._lag.reset()

    def __repr__(self) -> str:
        return f"ScaledClock(time_scale={self.time_scale}, epoch_wall={self.epoch_wall})"


class ManualClock:
    """Virtual pool time that moves only when a test calls ``advance``/``advance_to``.

    Sleepers wake in order of their wake time (ties: first come, first woken), each one
    seeing ``now()`` equal to the time it asked for. After each wake the clock yields to
    the event loop ``settle_passes`` times, so the woken task can run to its next await
    (typically its next ``sleep``) before later sleepers wake. ``time_scale`` is nominal.
    """

    def __init__(self, start: float = 0.0, *, time_scale: float = 1.0, settle_passes: int = 3):
        self.time_scale = _check_scale(time_scale)
        self._now = float(start)
        self._settle_passes = settle_passes
        self._heap: list[tuple[float, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()
        self._advancing = False
        self._lag = _LagRecorder()

    def now(self) -> float:
        return self._now

    async def sleep_until(self, t: float) -> None:
        if t <= self._now:
            self._lag.record(self._now - t)
            await asyncio.sleep(0)
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._heap, (t, next(self._seq), fut))
        await fut  # a cancelled sleeper leaves a cancelled future that advance() skips
        self._lag.record(self._now - t)

    async def sleep(self, dt: float) -> None:
        await self.sleep_until(self._now + max(0.0, dt))

    async def advance(self, dt: float) -> None:
        """Move time forward by ``dt`` pool seconds, waking sleepers in order."""
        if dt < 0:
            raise ValueError(f"cannot advance by a negative amount: {dt}")
        await self.advance_to(self._now + dt)

    async def advance_to(self, t: float) -> None:
        """Move time forward to ``t``, waking every sleeper due at or before ``t``."""
        if t < self._now:
            raise ValueError(f"cannot go back in time: now={self._now}, asked for {t}")
        if self._advancing:
            raise RuntimeError("ManualClock.advance is already running")
        self._advancing = True
        try:
            # Re-check the heap after each wake: a woken task may sleep again within `t`.
            while self._heap and self._heap[0][0] <= t:
                when, _, fut = heapq.heappop(self._heap)
                if fut.done():  # cancelled sleeper
                    continue
                self._now = when
                fut.set_result(None)
                for _ in range(self._settle_passes):
                    await asyncio.sleep(0)
            self._now = t
        finally:
            self._advancing = False

    @property
    def pending(self) -> int:
        """How many sleepers are waiting."""
        return sum(1 for _, _, fut in self._heap if not fut.done())

    def next_wakeup(self) -> float | None:
        """Pool time of the earliest live sleeper, or None."""
        live = self.wakeups()
        return live[0] if live else None

    def wakeups(self) -> list[float]:
        """Pool times the live sleepers wait for, earliest first."""
        return sorted(when for when, _, fut in self._heap if not fut.done())

    def lag_stats(self) -> LagStats:
        return self._lag.stats()

    def __repr__(self) -> str:
        return f"ManualClock(now={self._now}, pending={self.pending})"
