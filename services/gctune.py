"""The garbage collector's pace for a pool's processes.

A pool decodes, builds and drops ClassAds by the hundred thousand: nearly all of them are
freed by reference counting, but CPython's default thresholds (700, 10, 10) still start a
collection for every 700 containers allocated, and the older generations' collections
walk every live ad. On a virtual run of ``bench/pool_load.py``'s 10,000-slot pool for
1,000 pool seconds that was 9.5 of 36 wall seconds (9,088 collections); with
:data:`THRESHOLDS` it is about 1 s (23 collections) and the run takes 27 s.

A daemon actor keeps these settings for its life and, once started, moves what it built
so far (configuration, policy trees, the machines' prepared ads) out of the collector's
sight (``gc.freeze``). A virtual pool runs in its caller's process: it sets the
thresholds while it runs and puts the caller's back when it stops.

A negotiation cycle holds a whole snapshot of decoded ads (millions of containers at
100,000 slots) and allocates as it matches: a full collection that falls inside it walks
every ad for nothing (0.7 s at 100,000 slots; where it falls moves with any change in
what the cycle allocates). The cycle runs with the collector paused (:func:`paused`);
what it left as cyclic garbage is collected after.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["THRESHOLDS", "paced", "paused", "restore"]

THRESHOLDS = (100_000, 20, 20)


def paced() -> tuple[int, int, int]:
    """Set :data:`THRESHOLDS`; return the thresholds they replace."""
    previous = gc.get_threshold()
    gc.set_threshold(*THRESHOLDS)
    return previous


def restore(previous: tuple[int, int, int]) -> None:
    gc.set_threshold(*previous)


_lock = threading.Lock()
_pausing = 0  # how many paused() blocks are open, in any thread
_was_enabled = False


@contextmanager
def paused() -> Iterator[None]:
    """No automatic collection inside the block (blocks may nest or overlap across
    threads: the collector resumes, if it ran before, when the last one ends)."""
    global _pausing, _was_enabled
    with _lock:
        if _pausing == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _pausing += 1
    try:
        yield
    finally:
        with _lock:
            _pausing -= 1
            if _pausing == 0 and _was_enabled:
                gc.enable()
