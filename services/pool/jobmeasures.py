"""Measures drawn from every job of a run: the saw-tooth by job duration, work lost, and
the negotiation cadence against its configuration. Pure functions over job runs.

*Job loading factor.* A job of duration D that ends on a slot while other jobs wait
holds that slot for its *period*: from its start to the next job's start on the same
slot (its run, then the wait for a cycle to match the slot again, or none when the
schedd reuses the claim). D / period is the job's loading factor: the saw-tooth
D / (C·⌈D/C⌉) without claim reuse, 1 with it. Jobs are binned by D/C (one bin per
duration when the run has few; else quarter-cycle bins that never straddle a whole
number of cycles, where the saw-tooth jumps), and a bin's loading factor is
Σ D / Σ period. A job is left out when it did not finish, when nothing ran on its slot
after it, or when no job was waiting as it ended (the slot's idle time then says
nothing about the cadence).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from .measures import JobRun

__all__ = ["BIN_CYCLES", "cadence", "duration_bins", "work_lost"]

BIN_CYCLES = 0.25  # bin width in negotiation cycles when durations are many
MAX_EXACT = 12  # at most this many distinct durations: one bin each


def _sawtooth(x: float) -> float:
    if x <= 0:
        return 0.0
    whole = math.floor(x)
    return x / (whole + math.ceil(x - whole))


def duration_bins(
    runs: Sequence[JobRun], queued: Sequence[tuple[float, int]], interval: float | None
) -> dict[str, Any]:
    """The job loading factor per duration bin (see the module doc). ``queued``: (pool
    time, jobs) of every submit; ``interval``: the negotiation interval C."""
    out: dict[str, Any] = {"interval": interval, "bins": [], "jobs": 0, "left_out": 0}
    if not interval or not runs:
        return out
    q = sorted(queued)
    qt = np.array([t for t, _ in q])
    qn = np.concatenate([[0], np.cumsum([n for _, n in q])])
    first_start: dict[tuple[str, str], float] = {}
    for r in runs:
        key = (r.schedd, r.job)
        first_start[key] = min(first_start.get(key, r.start), r.start)
    starts = np.sort(np.array(list(first_start.values())))

    def waiting(t: float) -> bool:  # a job queued by t and not started by t
        return int(qn[np.searchsorted(qt, t, "right")]) > int(np.searchsorted(starts, t, "right"))

    by_slot: dict[str, list[JobRun]] = defaultdict(list)
    for r in runs:
        by_slot[r.slot].append(r)
    samples: list[tuple[float, float]] = []  # (D, period)
    left_out = 0
    for rs in by_slot.values():
        rs.sort(key=lambda r: r.start)
        for a, b in zip(rs, [*rs[1:], None], strict=True):
            if not a.finished or b is None or b.start < a.end or not waiting(a.end):
                left_out += 1
                continue
            samples.append((a.end - a.start, b.start - a.start))
    out["left_out"] = left_out
    out["jobs"] = len(samples)
    if not samples:
        return out
    exact = len({round(d) for d, _ in samples}) <= MAX_EXACT
    groups: dict[float, list[tuple[float, float]]] = defaultdict(list)
    for d, p in samples:
        key = round(d) if exact else math.floor(d / interval / BIN_CYCLES) * BIN_CYCLES
        groups[key].append((d, p))
    for key in sorted(groups):
        pts = groups[key]
        xs = [d / interval for d, _ in pts]
        lo, hi = (min(xs), max(xs)) if exact else (key, key + BIN_CYCLES)
        out["bins"].append(
            {
                "d_over_c": round(float(np.mean(xs)), 4),
                "low": round(lo, 4),
                "high": round(hi, 4),
                "jobs": len(pts),
                "loading_factor": round(sum(d for d, _ in pts) / sum(p for _, p in pts), 4),
                "theory": round(float(np.mean([_sawtooth(x) for x in xs])), 4),
            }
        )
    return out


def work_lost(runs: Sequence[JobRun]) -> dict[str, Any]:
    """Work the pool did and threw away, in cpu-seconds (run time x cpus): runs evicted
    before they finished (``job_evicted``: preempted by a better claim or vacated by the
    startd's policy), and runs whose claim ended under them (released, lease run out)."""
    busy = sum((r.end - r.start) * r.cpus for r in runs)

    def lost(kind: str) -> dict[str, Any]:
        rs = [r for r in runs if r.ended == kind]
        cpu_s = sum((r.end - r.start) * r.cpus for r in rs)
        return {
            "runs": len(rs),
            "cpu_seconds": round(cpu_s, 3),
            "fraction": round(cpu_s / busy, 4) if busy > 0 else 0.0,
        }

    return {"preemption": lost("evicted"), "claims_lost": lost("lost")}


def _knob(config: Mapping[str, str], name: str, default: float) -> float:
    for k, v in config.items():
        if k.upper() == name:
            try:
                return float(v)
            except ValueError:
                return default
    return default


def cadence(starts: Sequence[float], config: Mapping[str, str] | None) -> dict[str, Any]:
    """The configured negotiation interval beside the measured one. ``starts``: cycle
    start times. A gap shorter than NEGOTIATOR_INTERVAL (less half a second) is a cycle
    that came early: a reschedule (condor_submit, or a schedd whose ads start showing
    idle jobs, asks for one), held back only by NEGOTIATOR_CYCLE_DELAY after the last
    cycle's end and NEGOTIATOR_MIN_INTERVAL after its start."""
    cfg = config or {}
    interval = _knob(cfg, "NEGOTIATOR_INTERVAL", 60.0)
    gaps = np.diff(sorted(starts))
    early = int(np.sum(gaps < interval - 0.5)) if len(gaps) else 0
    late = int(np.sum(gaps > interval + 0.5)) if len(gaps) else 0
    return {
        "configured_interval": interval,
        "cycle_delay": _knob(cfg, "NEGOTIATOR_CYCLE_DELAY", 20.0),
        "min_interval": _knob(cfg, "NEGOTIATOR_MIN_INTERVAL", 5.0),
        "median_gap": round(float(np.median(gaps)), 3) if len(gaps) else None,
        "mean_gap": round(float(np.mean(gaps)), 3) if len(gaps) else None,
        "gaps": len(gaps),
        "early_gaps": early,
        "late_gaps": late,
    }
