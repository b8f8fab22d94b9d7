"""Virtual pool time: an asyncio event loop whose clock jumps to the next thing that happens.

The virtual driver runs every daemon's shell, unchanged, on this loop in one process: the
same services, the same loops, the same cores, only the transport (``inprocess``) and the
clock differ. Nothing sleeps for real. When no callback is ready, the loop's time moves
straight to the earliest timer (SimPy's kernel, on asyncio's own timer heap), so an idle
pool-day costs a few timer pops and a busy one costs what happens in it.

The *horizon* is how far time may run: the loop never passes it. A driver that wants the
pool to stand still between its own steps (the Python API: submit, query, then let an
hour pass) holds the horizon where it is and raises it to let time go on; while time is
held, the loop waits for real on calls from other threads, as a normal loop does.

Determinism: asyncio runs ready callbacks in FIFO order and timers in time order, and the
loop never looks at the wall clock, so the same program gives the same interleaving.
Nothing may run in threads: a worker thread finishing "later" would be a race with the
virtual clock (the daemons ask ``DaemonContext.offload``, which runs inline here).
"""

from __future__ import annotations

import asyncio
import math
import selectors
from typing import Any

__all__ = ["VirtualClock", "VirtualEventLoop"]

# Timers this close to the jump target are snapped onto it: a jump lands exactly on the
# timer's own time, so ``now() >= t`` holds after ``sleep_until(t)`` without a second hop.
_SNAP = 1e-6


class _VirtualSelector(selectors.DefaultSelector):  # type: ignore[misc,valid-type]
    """A selector that turns "block for ``timeout``" into "advance time by ``timeout``"."""

    # A busy loop polls for I/O every time round (timeout 0); a virtual run has little
    # (other threads' calls are already in the ready queue: the self-pipe only wakes a
    # loop that blocks), so it polls one time in this many.
    POLL_EVERY = 64

    def __init__(self) -> None:
        super().__init__()
        self.loop: VirtualEventLoop | None = None
        self._busy_rounds = 0

    def select(self, timeout: float | None = None) -> list[Any]:
        loop = self.loop
        if loop is None:
            return super().select(timeout)
        if timeout == 0:
            self._busy_rounds += 1
            if self._busy_rounds % self.POLL_EVERY:
                return []
            return super().select(0)
        # Calls from other threads come in on the self-pipe. The look costs a system call
        # per jump, and that is what lets them in: the call releases the GIL, without which
        # a loop that jumps from timer to timer would keep it for a whole switch interval
        # and beyond (a caller's round trip took a second, not a millisecond).
        ready = super().select(0)
        if ready:
            return ready
        target = loop._jump_target(timeout)
        if target <= loop.horizon and math.isfinite(target):
            loop._vtime = max(loop._vtime, target)
            return []
        # Nothing may happen before the horizon: time runs up to it, then we wait for
        # real until another thread raises it or hands us work. With no timer and no
        # horizon, time stands: nothing is due, ever, until someone calls in.
        if math.isfinite(loop.horizon):
            loop._vtime = max(loop._vtime, loop.horizon)
        if loop._wake_settled():  # the pool is still: those waiting for that go first
            return []
        return super().select(None)


class VirtualEventLoop(asyncio.SelectorEventLoop):
    """An event loop on virtual time (pool seconds, starting at ``start``)."""

    def __init__(self, start: float = 0.0) -> None:
        selector = _VirtualSelector()
        self._vtime = float(start)
        self.horizon = math.inf
        self._settled: list[asyncio.Future[None]] = []
        super().__init__(selector)
        selector.loop = self
        # asyncio runs the timers due before time() + resolution; its default (the
        # monotonic clock's 1 ns) vanishes in rounding past ~2e7 s (a pool-year), where
        # a due timer would then never run. A microsecond holds to ~1e10 s.
        self._clock_resolution = _SNAP

    def time(self) -> float:
        return self._vtime

    def _jump_target(self, timeout: float | None) -> float:
        if timeout is None:  # no timer at all: time can only run to the horizon
            return math.inf
        target = self._vtime + timeout
        scheduled = getattr(self, "_scheduled", None)
        if scheduled:
            when = scheduled[0].when()
            if abs(when - target) <= _SNAP:
                target = when
        return target

    async def settled(self) -> None:
        """Return once nothing is left to run before the horizon: every callback ready
        and every timer due up to it has run. A caller in another thread that waits for
        this between its calls sees the pool still, whatever the threads' timing."""
        fut: asyncio.Future[None] = self.create_future()
        self._settled.append(fut)
        await fut

    def _wake_settled(self) -> bool:
        woken = False
        while self._settled:
            fut = self._settled.pop()
            if not fut.done():
                fut.set_result(None)
                woken = True
        return woken

    def next_timer(self) -> float | None:
        """When the earliest timer still armed is due (None: none is)."""
        scheduled = getattr(self, "_scheduled", ())
        return min((h.when() for h in scheduled if not h.cancelled()), default=None)

    @property
    def held(self) -> bool:
        """Whether time may run only to a horizon (a driver steps it)."""
        return math.isfinite(self.horizon)

    def hold(self, t: float | None = None) -> None:
        """Let time run to ``t`` and no further (default: stand still where it is)."""
        self.horizon = self._vtime if t is None else max(float(t), self._vtime)

    def release(self) -> None:
        """Let time run freely (the loop stops only when told to)."""
        self.horizon = math.inf


class VirtualClock:
    """The pool clock of a virtual run: the loop's own time (see ``clock.Clock``).

    ``time_scale`` is nominal (``inf``: pool time does not follow the wall clock); lag is
    zero by construction, since nothing wakes late in virtual time.
    """

    time_scale = math.inf

    def __init__(self, loop: VirtualEventLoop) -> None:
        self.loop = loop

    def now(self) -> float:
        return self.loop.time()

    async def sleep_until(self, t: float) -> None:
        loop = self.loop
        if t <= loop.time():
            await asyncio.sleep(0)
            return
        fut: asyncio.Future[None] = loop.create_future()
        handle = loop.call_at(t, _wake, fut, loop, t)
        try:
            await fut
        finally:
            handle.cancel()

    async def sleep(self, dt: float) -> None:
        await self.sleep_until(self.now() + max(0.0, dt))

    def lag_stats(self) -> Any:
        from .clock import LagStats

        return LagStats(count=0, max=0.0, mean=0.0, last=0.0)


def _wake(fut: asyncio.Future[None], loop: VirtualEventLoop, t: float) -> None:
    # asyncio runs every timer due within the clock's resolution of its time: time may
    # stand on an earlier timer a hair before ``t`` (495.04999999999995 for 495.05). It
    # moves on to ``t``, or a daemon that sleeps until ``t`` and finds ``now() < t``
    # would sleep again, wake at once, and spin with time stuck.
    if loop._vtime < t:
        loop._vtime = t
    if not fut.done():
        fut.set_result(None)
