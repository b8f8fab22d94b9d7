"""The garbage collector's pace for a pool's processes.

A pool decodes, builds and drops ClassAds by the hundred thousand: nearly all of them are
freed by reference counting, but CPython's default thresholds (700, 10, 10) still start a
collection for every 700 containers allocated, and the older generations' collections
walk every live ad. On a virtual run of ``bench/pool_load.py``'s 10,000-slot pool for
1,000 pool seconds that was 9.5 of 36 wall seconds (9,088 collections); with
:data:`THRESHOLDS` it is about 1 s (23 collections) and the run takes 27 s.

A daemon actor keeps these settings for its life and, once started, moves what it built
so far (configuration, policy trees, the machines' prepared ads) out of the collector's
sight (``gc.freeze``). It goes on doing so (:class:`Keeper`, every :data:`FREEZE_EVERY`
real seconds): what outlived a tenth of a second (the ads a collector stores and a
negotiator holds, a schedd's queue) is walked no more. Without it the older generations'
collections walked every ad received since the last: on ``bench/pool_load.py`` at 10,000
slots a single collection held the central manager's loop for 0.41 s (25 pool seconds of
lag at time scale 60). A young generation's garbage is collected before each freeze, so
little garbage is frozen; what was live then and becomes cyclic garbage later (a call in
flight at the freeze) is freed by a full collection every :data:`FULL_EVERY` real
seconds. A young collection's pause grows with what was allocated since the last one:
ticks half a second apart paused a loop for up to 75 ms (4.5 pool seconds at time scale
60); a tenth of a second apart, the young generation rarely fills up between them.

A virtual pool runs in its caller's process: it sets the thresholds while it runs and
puts the caller's back when it stops (and freezes nothing of the caller's). No loop waits
on its pauses, so its young generation may grow ten times larger
(:data:`VIRTUAL_THRESHOLDS`): fewer of the objects a run keeps for a while are walked
again and again. On ``bench/virtual_run.py``'s workload (a) the collections took 1.6 s
of about 30 at :data:`THRESHOLDS` and 0.6 s at these, with the same peak memory.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

__all__ = [
    "FREEZE_EVERY",
    "FULL_EVERY",
    "THRESHOLDS",
    "VIRTUAL_THRESHOLDS",
    "Keeper",
    "paced",
    "restore",
]

THRESHOLDS = (100_000, 20, 20)
VIRTUAL_THRESHOLDS = (1_000_000, 20, 20)  # a virtual pool's: no real-time loop to pause
FREEZE_EVERY = 0.1  # real seconds between freezes in a daemon actor
FULL_EVERY = 3600.0  # real seconds between full collections of everything frozen


def paced(thresholds: tuple[int, int, int] = THRESHOLDS) -> tuple[int, int, int]:
    """Set ``thresholds``; return the thresholds they replace."""
    previous = gc.get_threshold()
    gc.set_threshold(*thresholds)
    return previous


def restore(previous: tuple[int, int, int]) -> None:
    gc.set_threshold(*previous)


class Keeper:
    """Freezes what a daemon actor's process has kept since the last :meth:`tick`, after
    collecting the young generation's garbage; every :data:`FULL_EVERY` seconds it thaws
    everything and collects it all instead (the garbage that was live when frozen)."""

    def __init__(self, monotonic: Callable[[], float] = time.monotonic) -> None:
        self._monotonic = monotonic
        self._last_full = monotonic()
        self.full_collections = 0

    def tick(self) -> None:
        now = self._monotonic()
        if now - self._last_full >= FULL_EVERY:
            gc.unfreeze()
            gc.collect()
            self._last_full = now
            self.full_collections += 1
        else:
            gc.collect(0)
        gc.freeze()
