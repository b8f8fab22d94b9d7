"""Fair-share targets over a run, and how long the pool took to meet them.

Pure functions over numbers. A submitter's *target* in an interval is the share of the
pool's cpus it would hold if the pool were divided fairly among the demand of that
interval (an instantaneous max-min share, as KAI's and Armada's fair-share simulators
compute one; HTCondor's hierarchical group quotas give its structure):

1. Groups first. Each group with a quota (from the negotiator's cycles) is given
   min(quota, demand); submitters without a group form the ``<none>`` group, whose quota
   is the pool less the groups' quotas. What is left goes to the groups that still want
   more in proportion to their quotas (``GROUP_ACCEPT_SURPLUS``; a group that does not
   accept surplus stops at its quota), then equally to any still wanting more.
2. Within a group, equal shares capped by demand (water-filling): submitters with equal
   priority factors. HTCondor's real split also weighs accumulated usage (effective
   priority), so a run's shares may oscillate around these targets by design.

*Demand* is the mean over the interval of the cpus of a submitter's jobs that are queued
and not yet finished (running or idle; a job never started counts one cpu).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

__all__ = [
    "FAIR_TOLERANCE",
    "integral_per_bin",
    "misallocated",
    "targets",
    "time_to_fair_share",
    "water_fill",
]

FAIR_TOLERANCE = 0.1  # of the pool; at least one cpu's share on a pool under 10 cpus


def integral_per_bin(
    starts: Sequence[float], ends: Sequence[float], weights: Sequence[float], edges: np.ndarray
) -> np.ndarray:
    """∫ over each interval between ``edges`` of Σ weight·[start <= t < end]: a
    piecewise-linear cumulative area with a kink at every start and end (ends may be inf)."""
    if len(starts) == 0:
        return np.zeros(len(edges) - 1)
    hi = float(edges[-1])
    t = np.concatenate([np.minimum(starts, hi), np.minimum(ends, hi)]).astype(float)
    w = np.asarray(weights, dtype=float)
    change = np.concatenate([w, -w])
    order = np.argsort(t, kind="stable")
    t, slope = t[order], np.cumsum(change[order])
    area = np.concatenate([[0.0], np.cumsum(slope[:-1] * np.diff(t))])
    k = np.searchsorted(t, edges, "right") - 1
    kk = np.maximum(k, 0)
    at = np.where(k >= 0, area[kk] + slope[kk] * (edges - t[kk]), 0.0)
    return np.diff(at)


def water_fill(capacity: float, demand: Sequence[float], weight: Sequence[float]) -> list[float]:
    """Max-min fair shares of ``capacity``, in proportion to ``weight``, none above its
    demand: those whose demand is below their proportional share get their demand, and
    the rest is divided again among the others."""
    n = len(demand)
    got = [0.0] * n
    left = capacity
    open_ = {i for i in range(n) if demand[i] > 0 and weight[i] > 0}
    while open_ and left > 1e-12:
        total_w = sum(weight[i] for i in open_)
        full = {i for i in open_ if demand[i] - got[i] <= left * weight[i] / total_w + 1e-12}
        if not full:
            for i in open_:
                got[i] += left * weight[i] / total_w
            return got
        for i in full:
            left -= demand[i] - got[i]
            got[i] = demand[i]
        open_ -= full
    return got


def targets(
    total: float,
    demand: Mapping[str, float],
    group: Mapping[str, str],
    quotas: Mapping[str, float],
    accept_surplus: Mapping[str, bool] | None = None,
) -> dict[str, float]:
    """Each submitter's fair cpus (see the module doc). ``demand``: cpus per submitter;
    ``group``: its group ("" for none); ``quotas``: cpus per group."""
    accept = accept_surplus or {}
    groups = sorted({group[s] for s in demand})
    none_quota = max(0.0, total - sum(quotas.get(g, 0.0) for g in groups if g))
    quota = {g: (quotas.get(g, 0.0) if g else none_quota) for g in groups}
    want = {g: sum(d for s, d in demand.items() if group[s] == g) for g in groups}
    alloc = {g: min(quota[g], want[g]) for g in groups}
    left = total - sum(alloc.values())
    takers = [g for g in groups if accept.get(g, g == "")]  # the root always accepts
    extra = water_fill(
        left, [want[g] - alloc[g] for g in takers], [max(quota[g], 0.0) for g in takers]
    )
    for g, x in zip(takers, extra, strict=True):
        alloc[g] += x
    left = total - sum(alloc.values())
    extra = water_fill(left, [want[g] - alloc[g] for g in takers], [1.0] * len(takers))
    for g, x in zip(takers, extra, strict=True):
        alloc[g] += x
    out: dict[str, float] = {}
    for g in groups:
        members = sorted(s for s in demand if group[s] == g)
        fair = water_fill(alloc[g], [demand[s] for s in members], [1.0] * len(members))
        out |= dict(zip(members, fair, strict=True))
    return out


def misallocated(over: np.ndarray, under: np.ndarray) -> np.ndarray:
    """Per interval, the share of the pool held beyond their targets by some submitters
    while others were below theirs: min(Σ excess, Σ shortfall), what would have to move
    to make the split fair. A submitter below its target with nobody above (its jobs
    waiting for the next cycle, or for slots nobody else holds) is not misallocation:
    the waits measure that."""
    return np.minimum(over, under)


def time_to_fair_share(
    lows: Sequence[float],
    step: float,
    deviation: Sequence[float],
    wanted: Sequence[bool],
    first_queued: float,
    tolerance: float,
) -> float | None:
    """From the first queued job to the end of the last interval in which more than
    ``tolerance`` of the pool was misallocated (``deviation``: :func:`misallocated` per
    interval), over the intervals up to the last in which any submitter
    had demand (``wanted``). 0 if none was ever off; None if the last such interval was
    off: the pool had not settled when its demand ended or the run stopped."""
    last = max((k for k, w in enumerate(wanted) if w), default=None)
    if last is None:
        return None
    off = [k for k in range(last + 1) if deviation[k] > tolerance + 1e-9]
    if not off:
        return 0.0
    if off[-1] == last:
        return None
    return round(max(0.0, lows[off[-1]] + step - first_queued), 3)
