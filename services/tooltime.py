"""The wall clock and the generator a tool evaluates ClassAd expressions with.

The evaluator has no clock and no generator of its own: time() and random() read what the
caller passes. A daemon's core passes the pool's date and its own seeded generator; a tool
(or a shell that knows no pool date) passes HTCondor's own inputs from here, the wall
clock and an unseeded generator, at its call site. No core imports this module (the
purity test walks their imports).
"""

from __future__ import annotations

import random
import time

TOOL_RNG = random.Random()  # what random() in a tool's expressions draws from


def wall_now(date: float | None = None) -> float:
    """``date`` when the caller knows the pool's, else the wall clock (as HTCondor's tools)."""
    return time.time() if date is None else date
