"""Measures of a run, from its own records: the events the daemons logged and the summary.

Pure functions over data (events as dicts, pool times as numbers), so a live run, a
virtual run and a test's hand-made events give their measures the same way.

A job's *run* is joined from the startd's events by claim id: ``claim`` (which schedd and
submitter), ``activate`` (slot, start, planned end, the slot's cpus) and ``job_exit``
(actual end); a run without an exit ends when the startd releases its claim or, still
running, when the run stopped. Its queue time comes from the schedd's ``submit`` event of
its cluster. The negotiator's ``cycle`` events give cycle durations, matches and the
groups' quotas.

The *window* of the loading factors is from the first job start to the first negotiation
cycle that starts after the last job end (when the run stopped before that cycle, as an
until-done run does, the time it was due by the median interval; the run's end while
jobs still run): the pool before its first match and after its last job
is idle by construction and says nothing about the cadence, and a slot freed by the last
job could take no new one before that cycle, so a saturated pool's window holds whole
match periods and its loading factor is the saw-tooth's.
"""

from __future__ import annotations

import csv
import itertools
import json
import math
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .fairshare import (
    FAIR_TOLERANCE,
    integral_per_bin,
    misallocated,
    targets,
    time_to_fair_share,
)
from .jobmeasures import cadence, duration_bins, work_lost

__all__ = [
    "JobRun",
    "MeasureError",
    "Measures",
    "job_runs",
    "load_run",
    "measure",
    "sawtooth",
    "write_series",
]

PERCENTILES = (50, 90, 95, 99)
MAX_DURATION_CLASSES = 12  # more distinct durations than this: no per-class points


class MeasureError(ValueError):
    """A folder that holds no run, or records that cannot be read."""


def sawtooth(d_over_c: float) -> float:
    """The loading factor of a slot that runs jobs of duration D and is matched every C
    (no claim reuse): D / (C·(⌊D/C⌋ + ⌈D/C - ⌊D/C⌋⌉)), with x = D/C."""
    if d_over_c <= 0:
        return 0.0
    whole = math.floor(d_over_c)
    return d_over_c / (whole + math.ceil(d_over_c - whole))


@dataclass(frozen=True)
class JobRun:
    job: str  # cluster.proc
    schedd: str
    submitter: str
    slot: str
    cpus: int
    qdate: float | None  # when its cluster was queued (None: no submit event)
    start: float
    end: float
    finished: bool  # a job_exit ended it
    # what ended it: "exit", "evicted" (preempted or vacated by policy: job_evicted),
    # "lost" (its claim released or its lease run out under it), "running" (at the stop)
    ended: str = "exit"


def group_of(submitter: str) -> str:
    """The accounting group of ``group_a.alice@domain`` (``""`` without one)."""
    user = submitter.split("@", 1)[0]
    return user.rsplit(".", 1)[0] if "." in user else ""


def job_runs(events: list[dict[str, Any]], now: float) -> list[JobRun]:
    """Every job run the startds logged, in start order."""
    claims: dict[str, dict[str, Any]] = {}
    acts: dict[tuple[str, str], dict[str, Any]] = {}  # (claim, job): a reused claim runs several
    exits: dict[tuple[str, str], dict[str, Any]] = {}
    evicted: dict[tuple[str, str], float] = {}
    releases: dict[str, list[float]] = defaultdict(list)
    qdates: dict[tuple[str, int], float] = {}
    schedds = {e["daemon"] for e in events if e.get("kind") == "submit"}
    for e in events:
        kind, claim = e.get("kind"), e.get("claim")
        if kind == "submit":
            qdates[(e["daemon"], int(e["cluster"]))] = float(e["t"])
        elif e["daemon"] in schedds or claim is None:
            continue  # the schedd's echo of a startd fact
        elif kind == "claim":
            claims[claim] = e
        elif kind == "activate":
            acts[(claim, str(e["job"]))] = e
        elif kind == "job_exit":
            exits[(claim, str(e["job"]))] = e
        elif kind == "job_evicted":  # preempted: the run ends there, unfinished
            evicted[(claim, str(e["job"]))] = float(e["end"])
        elif kind in ("release", "lease_expired"):  # the claim ends; a job on it too
            releases[claim].append(float(e["t"]))
    runs = []
    for (claim, job), a in acts.items():
        c = claims.get(claim, {})
        start = float(a.get("start", a["t"]))
        if (claim, job) in exits:
            end, finished, ended = float(exits[(claim, job)]["end"]), True, "exit"
        elif (claim, job) in evicted:
            end, finished, ended = min(evicted[(claim, job)], now), False, "evicted"
        else:
            released = min((t for t in releases.get(claim, []) if t >= start), default=now)
            end, finished = min(float(a["end"]), released, now), False
            ended = "running" if end >= now and released >= now else "lost"
        schedd = str(c.get("schedd", ""))
        cluster = int(job.split(".")[0])
        runs.append(
            JobRun(
                job,
                schedd,
                str(c.get("submitter", "")),
                str(a["slot"]),
                int(a.get("cpus", 1)),
                qdates.get((schedd, cluster)),
                start,
                max(start, end),
                finished,
                ended,
            )
        )
    runs.sort(key=lambda r: (r.start, r.slot))
    return runs


def _stats(values: list[float]) -> dict[str, float | int | None]:
    if not values:
        return {"count": 0, "mean": None, "max": None} | {f"p{p}": None for p in PERCENTILES}
    arr = np.asarray(values, dtype=float)
    out: dict[str, float | int | None] = {
        "count": len(values),
        "mean": round(float(arr.mean()), 3),
        "max": round(float(arr.max()), 3),
    }
    for p in PERCENTILES:
        out[f"p{p}"] = round(float(np.percentile(arr, p)), 3)
    return out


def _busy_per_bin(runs: list[JobRun], edges: np.ndarray) -> np.ndarray:
    """Busy cpu-seconds of ``runs`` in each interval between ``edges``."""
    return integral_per_bin(
        [r.start for r in runs], [r.end for r in runs], [r.cpus for r in runs], edges
    )


def _demand(
    runs: list[JobRun],
    submitted: list[tuple[str, str, int, float, int]],
    names: list[str],
    edges: np.ndarray,
) -> dict[str, np.ndarray]:
    """Per submitter and interval: the mean cpus of its jobs queued and not finished
    (running or idle; a job never started counts one cpu; one run again after an
    eviction is wanted from its queue date to its last end)."""
    by_job: dict[tuple[str, str], list[JobRun]] = defaultdict(list)
    ran: dict[tuple[str, int], set[str]] = defaultdict(set)
    for r in runs:
        by_job[(r.schedd, r.job)].append(r)
        ran[(r.schedd, int(r.job.split(".")[0]))].add(r.job)
    spans: dict[str, list[tuple[float, float, int]]] = {n: [] for n in names}
    for rs in by_job.values():
        q = min(r.qdate if r.qdate is not None else r.start for r in rs)
        end = max((r.end for r in rs if r.finished), default=math.inf)
        spans[rs[0].submitter].append((q, end, max(r.cpus for r in rs)))
    for schedd, who, cluster, q, procs in submitted:
        spans[who] += [(q, math.inf, 1)] * max(0, procs - len(ran[(schedd, cluster)]))
    width = float(edges[1] - edges[0]) if len(edges) > 1 else 1.0
    return {
        n: integral_per_bin([x[0] for x in sp], [x[1] for x in sp], [x[2] for x in sp], edges)
        / width
        for n, sp in spans.items()
    }


def _time_to_quota(rows: list[dict[str, Any]], qdates: list[float], step: float) -> float | None:
    """From a group's first queued job to the end of the first interval in which its share
    reached its quota (within 1%): None if it never did or has no quota."""
    if not qdates:
        return None
    first = min(qdates)
    for u in rows:
        if u["target"] and u["t"] + step > first and (u["share"] or 0) >= 0.99 * u["target"]:
            return round(u["t"] + step - first, 3)
    return None


def _accept_surplus(config: Mapping[str, str], groups: list[str]) -> dict[str, bool]:
    """GROUP_ACCEPT_SURPLUS[_<g>] per group (HTCondor's default False); ``<none>`` (the
    root, "") always accepts surplus."""
    knobs = {k.upper(): str(v).strip().lower() for k, v in config.items()}
    default = knobs.get("GROUP_ACCEPT_SURPLUS", "false") == "true"
    out = {"": True}
    for g in groups:
        v = knobs.get(f"GROUP_ACCEPT_SURPLUS_{g.upper()}")
        out[g.lower()] = default if v is None else v == "true"
    return out


@dataclass
class Measures:
    """``summary`` goes into summary.json under ``measures``; ``series`` are CSV tables."""

    summary: dict[str, Any]
    series: dict[str, list[dict[str, Any]]]


def _submitted(events: list[dict[str, Any]]) -> list[tuple[str, str, int, float, int]]:
    """(schedd, submitter, cluster, qdate, procs) of every submit."""
    return [
        (
            e["daemon"],
            str(e.get("submitter", "")),
            int(e["cluster"]),
            float(e["t"]),
            int(e.get("procs", 1)),
        )
        for e in events
        if e.get("kind") == "submit"
    ]


def measure(
    events: list[dict[str, Any]],
    *,
    now: float,
    total_cpus: float,
    lag: dict[str, Any] | None = None,
    bin_seconds: float | None = None,
    config: Mapping[str, str] | None = None,
) -> Measures:
    """The run's measures; ``now`` is when it stopped, ``total_cpus`` the pool's cpus,
    ``config`` the knobs the spec set (the cadence's and the groups' configuration)."""
    runs = job_runs(events, now)
    cycles = sorted((e for e in events if e.get("kind") == "cycle"), key=lambda e: e["t"])
    starts = [float(c["t"]) - float(c.get("duration", 0.0)) for c in cycles]
    periods = np.diff(starts)
    interval = float(np.median(periods)) if len(periods) else None
    t0 = min((r.start for r in runs), default=0.0)
    t1 = max((r.end for r in runs), default=0.0)
    # strictly after: a cycle that starts at the very instant the last job ends cannot
    # give its slot a new job (the startd's update reaches the collector after the cycle
    # fetched its ads), so a slot's match period holds to the cycle after that one
    after = [t for t in starts if t > t1]
    if after:
        t1 = max(t1, min(after[0], now))
    elif starts and interval and runs and all(r.finished for r in runs):
        # the run stopped before that cycle was due (an until-done run): when it was due
        due = starts[-1] + interval * (math.floor((t1 - starts[-1]) / interval + 1e-9) + 1)
        if due > now:
            t1 = due
    window = t1 - t0

    # loading factor: per slot, and over the pool's cpus
    by_slot: dict[str, list[JobRun]] = defaultdict(list)
    for r in runs:
        by_slot[r.slot].append(r)
    slot_rows, gaps = [], []
    for slot, rs in sorted(by_slot.items()):
        busy = sum(r.end - r.start for r in rs)
        slot_gaps = [b.start - a.end for a, b in itertools.pairwise(rs) if b.start >= a.end]
        gaps += slot_gaps
        slot_rows.append(
            {
                "slot": slot,
                "jobs": len(rs),
                "busy_seconds": round(busy, 3),
                "loading_factor": round(busy / window, 4) if window > 0 else None,
                "mean_idle_gap": round(float(np.mean(slot_gaps)), 3) if slot_gaps else None,
            }
        )
    busy_cpu = sum((r.end - r.start) * r.cpus for r in runs)
    pool_lf = busy_cpu / (total_cpus * window) if total_cpus > 0 and window > 0 else None

    # one point per job-duration class, for the saw-tooth plot
    classes: list[dict[str, Any]] = []
    done = [r for r in runs if r.finished]
    durations = sorted({round(r.end - r.start) for r in done})
    if interval and 0 < len(durations) <= MAX_DURATION_CLASSES:
        for d in durations:
            slots = {r.slot for r in done if round(r.end - r.start) == d}
            only = [
                s
                for s in slots
                if all(round(r.end - r.start) == d for r in by_slot[s] if r.finished)
            ]
            lfs = [
                row["loading_factor"]
                for row in slot_rows
                if row["slot"] in only and row["loading_factor"]
            ]
            if lfs:
                classes.append(
                    {
                        "duration": d,
                        "d_over_c": round(d / interval, 4),
                        "loading_factor": round(float(np.mean(lfs)), 4),
                        "theory": round(sawtooth(d / interval), 4),
                        "slots": len(lfs),
                    }
                )

    waits = [r.start - r.qdate for r in runs if r.qdate is not None]
    submitted = _submitted(events)
    n_submitted = sum(s[4] for s in submitted)
    started = {(r.schedd, r.job) for r in runs}

    # time series on a common grid (vectorised: a pool-day has thousands of intervals)
    step = bin_seconds or interval or max(1.0, now / 50)
    edges = np.arange(0.0, now + step, step)
    lows, width = edges[:-1], step
    names = sorted({r.submitter for r in runs} | {s[1] for s in submitted})
    groups = sorted({group_of(n) for n in names} - {""})
    busy = {n: _busy_per_bin([r for r in runs if r.submitter == n], edges) for n in names}
    total = sum(busy.values(), np.zeros(len(lows)))
    ends_done = np.sort([r.end for r in runs if r.finished])
    completed = np.diff(np.searchsorted(ends_done, edges, "left"))
    by_qdate = sorted((q, p) for _, _, _, q, p in submitted)
    queued_by = np.concatenate([[0], np.cumsum([p for _, p in by_qdate])])
    queued = queued_by[np.searchsorted([q for q, _ in by_qdate], edges[1:], "left")]
    began = np.searchsorted(np.sort([r.start for r in runs]), edges[1:], "left")
    idle = np.maximum(0, queued - began)
    util_rows = [
        {
            "t": round(float(lo), 3),
            "busy_cpus": round(float(b) / width, 4),
            "utilisation": round(float(b) / (width * total_cpus), 4) if total_cpus else None,
            "completed": int(c),
            "idle_jobs": int(i),
        }
        for lo, b, c, i in zip(lows, total, completed, idle, strict=True)
    ]
    demand = _demand(runs, submitted, names, edges)
    accept = _accept_surplus(config or {}, groups)
    cycle_t = [float(c["t"]) for c in cycles]
    quota_idx = np.searchsorted(cycle_t, edges[1:], "right") - 1  # the last cycle by the end
    usage_rows: list[dict[str, Any]] = []
    over, under = np.zeros(len(lows)), np.zeros(len(lows))
    wanted = np.zeros(len(lows), dtype=bool)
    for k, lo in enumerate(lows):
        t = round(float(lo), 3)
        quotas = cycles[quota_idx[k]].get("quotas", {}) if quota_idx[k] >= 0 else {}
        quotas = {str(g).lower(): float(q) for g, q in quotas.items()}
        want = {n: float(demand[n][k]) for n in names}
        fair = targets(total_cpus, want, {n: group_of(n).lower() for n in names}, quotas, accept)
        for name in names:
            used = float(busy[name][k])
            row = {
                "t": t,
                "kind": "submitter",
                "name": name,
                "busy_cpus": round(used / width, 4),
                "share": round(used / (width * total_cpus), 4) if total_cpus else None,
                "target": round(fair[name] / total_cpus, 4) if total_cpus else None,
                "demand_cpus": round(want[name], 4),
            }
            usage_rows.append(row)
            if want[name] > 1e-9 and total_cpus:
                wanted[k] = True
            if total_cpus:
                gap = (used / width - fair[name]) / total_cpus
                over[k] += max(0.0, gap)
                under[k] += max(0.0, -gap)
        for g in groups:
            used = float(sum(busy[n][k] for n in names if group_of(n) == g))
            quota = quotas.get(g.lower())
            usage_rows.append(
                {
                    "t": t,
                    "kind": "group",
                    "name": g,
                    "busy_cpus": round(used / width, 4),
                    "share": round(used / (width * total_cpus), 4) if total_cpus else None,
                    "target": round(quota / total_cpus, 4)
                    if quota is not None and total_cpus
                    else None,
                    "demand_cpus": round(sum(want[n] for n in names if group_of(n) == g), 4),
                }
            )
    deviation = misallocated(over, under)
    for row, d in zip(util_rows, deviation, strict=True):
        row["misallocated"] = round(float(d), 4)
    tolerance = max(FAIR_TOLERANCE, 1 / total_cpus) if total_cpus else FAIR_TOLERANCE
    fair_share = {
        "tolerance": round(tolerance, 4),
        "time_to_fair_share": time_to_fair_share(
            lows, step, deviation, wanted, min((x[3] for x in submitted), default=0.0), tolerance
        ),
        "mean_deviation": round(float(np.mean(deviation[wanted])), 4) if wanted.any() else None,
        "max_deviation": round(float(np.max(deviation[wanted])), 4) if wanted.any() else None,
        "intervals_off": int(np.sum(deviation[wanted] > tolerance + 1e-9)),
        "intervals": int(np.sum(wanted)),
    }

    share: dict[str, dict[str, float]] = {}
    for kind in ("submitter", "group"):
        for name in names if kind == "submitter" else groups:
            rows = [u for u in usage_rows if u["kind"] == kind and u["name"] == name]
            share[f"{kind}:{name}"] = {
                "cpu_seconds": round(sum(u["busy_cpus"] for u in rows) * step, 3),
                "mean_share": round(float(np.mean([u["share"] or 0 for u in rows])), 4)
                if rows
                else 0.0,
                "mean_target": (
                    round(float(np.mean([u["target"] for u in rows if u["target"] is not None])), 4)
                    if any(u["target"] is not None for u in rows)
                    else None
                ),
            }
            if kind == "group":
                share[f"group:{name}"]["time_to_quota"] = _time_to_quota(
                    rows, [s[3] for s in submitted if group_of(s[1]) == name], step
                )
    lags = [v for v in (lag or {}).values() if v]
    summary = {
        "window": [round(t0, 3), round(t1, 3)],
        "negotiation_interval": round(interval, 3) if interval else None,
        "pool_loading_factor": round(pool_lf, 4) if pool_lf is not None else None,
        "slot_loading_factor": _stats(
            [row["loading_factor"] for row in slot_rows if row["loading_factor"] is not None]
        ),
        "duration_classes": classes,
        "idle_gaps": _stats(gaps),
        "wait": _stats(waits) | {"never_started": n_submitted - len(started)},
        "throughput_per_hour": round(len(done) / window * 3600, 3) if window > 0 else None,
        "jobs_started": len(started),
        "jobs_finished": len(done),
        "cycle_duration": _stats([float(c.get("duration", 0.0)) for c in cycles]),
        "matches_per_cycle": _stats([float(c.get("matches", 0)) for c in cycles]),
        "usage": share,
        "fair_share": fair_share,
        **work_lost(runs),
        "job_duration_bins": duration_bins(runs, [(s[3], s[4]) for s in submitted], interval),
        "cadence": cadence(starts, config),
        "clock_lag": {
            "max": round(max((v["max"] for v in lags), default=0.0), 4),
            "mean": round(float(np.mean([v["mean"] for v in lags])), 4) if lags else 0.0,
        },
    }
    series = {
        "jobs": [
            {
                "job": r.job,
                "schedd": r.schedd,
                "submitter": r.submitter,
                "slot": r.slot,
                "cpus": r.cpus,
                "qdate": r.qdate,
                "start": r.start,
                "end": r.end,
                "finished": r.finished,
                "wait": round(r.start - r.qdate, 3) if r.qdate is not None else None,
            }
            for r in runs
        ],
        "slots": slot_rows,
        "utilisation": util_rows,
        "usage": usage_rows,
        "cycles": [
            {
                "t": round(s, 3),
                "cycle": c.get("cycle"),
                "duration": c.get("duration"),
                "matches": c.get("matches"),
            }
            for s, c in zip(starts, cycles, strict=True)
        ],
    }
    return Measures(summary, series)


def write_series(out: Path, m: Measures) -> list[Path]:
    """``<name>.csv`` for every series; returns the paths written."""
    paths = []
    for name, rows in m.series.items():
        path = out / f"{name}.csv"
        with path.open("w", newline="") as f:
            if rows:
                w = csv.DictWriter(f, fieldnames=list(rows[0]))
                w.writeheader()
                w.writerows(rows)
        paths.append(path)
    return paths


def load_run(folder: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The events and summary of a run's output folder; MeasureError if it holds no run."""
    events_path, summary_path = folder / "events.jsonl", folder / "summary.json"
    if not folder.is_dir():
        raise MeasureError(f"{folder}: no such folder")
    missing = [p.name for p in (events_path, summary_path) if not p.is_file()]
    if missing:
        raise MeasureError(
            f"{folder}: holds no run (no {' or '.join(missing)}; "
            "write one with `mockpool run SPEC --out DIR`)"
        )
    events = []
    with events_path.open() as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                e = json.loads(line)
            except json.JSONDecodeError as exc:
                raise MeasureError(f"{events_path}:{n}: not a JSON event: {exc.msg}") from None
            if not isinstance(e, dict) or not {"t", "daemon", "kind"} <= set(e):
                raise MeasureError(f"{events_path}:{n}: an event needs t, daemon and kind")
            events.append(e)
    try:
        summary = json.loads(summary_path.read_text())
    except json.JSONDecodeError as exc:
        raise MeasureError(f"{summary_path}:{exc.lineno}: not JSON: {exc.msg}") from None
    if not isinstance(summary, dict) or "pool_seconds" not in summary:
        raise MeasureError(f"{summary_path}: not a run summary (no pool_seconds)")
    return events, summary
