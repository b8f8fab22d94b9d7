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
"""

from __future__ import annotations

import gc

__all__ = ["THRESHOLDS", "paced", "restore"]

THRESHOLDS = (100_000, 20, 20)


def paced() -> tuple[int, int, int]:
    """Set :data:`THRESHOLDS`; return the thresholds they replace."""
    previous = gc.get_threshold()
    gc.set_threshold(*THRESHOLDS)
    return previous


def restore(previous: tuple[int, int, int]) -> None:
    gc.set_threshold(*previous)
