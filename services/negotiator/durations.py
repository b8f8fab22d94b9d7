"""A histogram of negotiation cycle durations, kept by the negotiator for its metrics.

The negotiator ad keeps only the last few cycles (NEGOTIATION_CYCLE_STATS_LENGTH); a
Prometheus histogram needs every cycle since the daemon started, so the core counts each
one into fixed buckets (pool seconds, as the ad's LastNegotiationCycleDuration). Pure: no
prometheus_client here; ``mockpool.pool.metrics`` turns :meth:`to_dict` into a family.
"""

from __future__ import annotations

import bisect
from typing import Any

__all__ = ["BUCKETS", "DurationHistogram"]

# Upper bounds, pool seconds: a 20 ms cycle at time scale 60 is 1.2 pool seconds, and a
# 100,000-slot cycle of seconds is minutes of pool time at the same scale.
BUCKETS: tuple[float, ...] = (
    0.01,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    25.0,
    50.0,
    100.0,
    250.0,
    500.0,
    1000.0,
)


class DurationHistogram:
    """Cycles counted per bucket (not cumulative), with their count and sum."""

    def __init__(self, bounds: tuple[float, ...] = BUCKETS) -> None:
        if list(bounds) != sorted(set(bounds)):
            raise ValueError(f"histogram bounds must increase strictly, got {bounds}")
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)  # the last: above every bound (+Inf)
        self.sum = 0.0

    def observe(self, duration: float) -> None:
        # Prometheus' le: a value equal to a bound falls in that bound's bucket
        self.counts[bisect.bisect_left(self.bounds, duration)] += 1
        self.sum += duration

    @property
    def count(self) -> int:
        return sum(self.counts)

    def to_dict(self) -> dict[str, Any]:
        """Cumulative buckets as Prometheus exposes them: [[le, count], ...] ending at +Inf."""
        buckets: list[list[Any]] = []
        running = 0
        for bound, n in zip([*self.bounds, float("inf")], self.counts, strict=True):
            running += n
            buckets.append([bound, running])
        return {"buckets": buckets, "count": running, "sum": round(self.sum, 6)}
