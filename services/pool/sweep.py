"""Sweeps: one spec run for every combination of knob values, several seeds each.

A swept parameter is an HTCondor knob or ``workload.NAME.KEY[.SUBKEY]`` of the spec's
``[[workload]]`` named NAME (``--set workload.batch.duration.sigma=0,20,40``).

``mockpool sweep SPEC --set NEGOTIATOR_INTERVAL=30,60,120 --seeds 5`` plans the grid
(every combination of the ``--set`` values, times seeds ``s .. s+N-1`` from the spec's
own seed), runs each point as a whole pool (virtual time by default) in worker
processes (or, with ``--address``, as Ray tasks spread over a cluster's nodes:
sweepray.py), and gathers each point's measures (its summary.json) into one table: per
combination, the mean of each measure over the seeds and a 95% confidence interval
(Student's t). Each point's run is kept under ``OUT/points/<point>/`` and written there
atomically, so an interrupted sweep resumes where it stopped: points already on disk are
read, not run again.
"""

from __future__ import annotations

import csv
import json
import math
import multiprocessing
import os
import shutil
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from itertools import product
from pathlib import Path
from typing import Any

from ..config import ConfigError
from ..config.defaults import is_known
from .spec import load_spec
from .specchecks import check_knobs
from .specmodel import SpecError
from .virtual import CLOCKS

__all__ = [
    "MEASURES",
    "Point",
    "SweepError",
    "aggregate",
    "parse_set",
    "plan",
    "run_sweep",
]

SWEEP_JSON = "sweep.json"
SWEEP_CSV = "sweep.csv"


class SweepError(ValueError):
    """A sweep that cannot run: the message names the parameter or file."""


def _get(*path: str) -> Callable[[dict[str, Any]], float | None]:
    def read(summary: dict[str, Any]) -> float | None:
        value: Any = summary
        for key in path:
            if not isinstance(value, dict):
                return None
            value = value.get(key)
        return float(value) if isinstance(value, int | float) else None

    return read


# The measures of the table: name -> where it is in a run's summary.json.
MEASURES: dict[str, Callable[[dict[str, Any]], float | None]] = {
    "loading_factor": _get("measures", "pool_loading_factor"),
    "wait_mean_s": _get("measures", "wait", "mean"),
    "wait_p95_s": _get("measures", "wait", "p95"),
    "throughput_per_hour": _get("measures", "throughput_per_hour"),
    "jobs_completed": _get("jobs", "Completed"),
    "cycles": _get("cycles"),
    "matches_per_cycle": _get("measures", "matches_per_cycle", "mean"),
    "cycle_seconds": _get("measures", "cycle_duration", "mean"),
    "cpu_utilisation": _get("cpu_utilisation"),
    "time_to_fair_share_s": _get("measures", "fair_share", "time_to_fair_share"),
    "fair_share_gap": _get("measures", "fair_share", "mean_deviation"),
    "work_lost_cpu_s": _get("measures", "preemption", "cpu_seconds"),
    "d_over_c": lambda s: _single_class(s, "d_over_c"),
}


def _single_class(summary: dict[str, Any], key: str) -> float | None:
    """A run whose jobs all have one duration: its D/C (the saw-tooth's x), else None."""
    classes = summary.get("measures", {}).get("duration_classes") or []
    if len(classes) != 1 or not isinstance(classes[0].get(key), int | float):
        return None
    return float(classes[0][key])


# Two-sided 95% Student's t for 1..30 degrees of freedom; 1.96 beyond.
_T95 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip


def parse_set(text: str) -> tuple[str, list[str]]:
    """``KNOB=v1,v2,...`` -> (knob, values); the knob must be one mockpool reads."""
    knob, eq, values = text.partition("=")
    knob = knob.strip()
    if not eq or not knob:
        raise SweepError(f"--set {text!r}: expected KNOB=VALUE[,VALUE...]")
    if not knob.startswith(WORKLOAD_PREFIX) and not is_known(knob):
        raise SweepError(
            f"--set {knob}: not a configuration knob mockpool knows "
            f"(or {WORKLOAD_PREFIX}NAME.KEY of a [[workload]])"
        )
    items = [v.strip() for v in values.split(",")]
    if not values.strip() or any(not v for v in items):
        raise SweepError(f"--set {knob}: needs values, e.g. {knob}=30,60,120")
    if len(set(items)) != len(items):
        raise SweepError(f"--set {knob}: a value is given twice")
    return knob, items


@dataclass(frozen=True)
class Point:
    knobs: tuple[tuple[str, str], ...]
    seed: int

    @property
    def name(self) -> str:
        """A folder name: ``NEGOTIATOR_INTERVAL-60__seed3``."""
        parts = [f"{k}-{v}" for k, v in self.knobs] + [f"seed{self.seed}"]
        return "__".join("".join(c if c.isalnum() or c in "-._" else "_" for c in p) for p in parts)

    def config_text(self) -> str:
        return "\n".join(f"{k} = {v}" for k, v in self.knobs if not _workload_key(k))

    def workload(self) -> dict[str, str]:
        """``NAME.KEY`` of [[workload]] tables -> value, for ``load_spec``."""
        return {k[len(WORKLOAD_PREFIX) :]: v for k, v in self.knobs if _workload_key(k)}


WORKLOAD_PREFIX = "workload."


def _workload_key(knob: str) -> bool:
    return knob.startswith(WORKLOAD_PREFIX)


def plan(sets: Sequence[tuple[str, list[str]]], seeds: Sequence[int]) -> list[Point]:
    """Every combination of the values, for every seed (the order runs are reported)."""
    names = [k.upper() for k, _ in sets]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise SweepError(f"--set {dup}: given twice")
    combos = product(*(values for _, values in sets)) if sets else [()]
    return [
        Point(tuple(zip((k for k, _ in sets), combo, strict=True)), seed)
        for combo in combos
        for seed in seeds
    ]


def _spec_for(spec_path: str, point: Point, clock: str, overrides: dict[str, Any]) -> Any:
    from .apibase import spec_from

    spec = load_spec(spec_path, seed=point.seed, workload=point.workload())
    return spec_from(spec, point.config_text() or None, {"clock": clock, **overrides})


def check(spec_path: str, points: Sequence[Point], clock: str, overrides: dict[str, Any]) -> None:
    """Refuse a sweep whose spec or knob values would not run, before anything runs."""
    if clock not in CLOCKS:
        raise SweepError(f"--clock must be one of {', '.join(CLOCKS)}, got {clock!r}")
    seen: set[tuple[tuple[str, str], ...]] = set()
    for p in points:
        if p.knobs in seen:
            continue
        seen.add(p.knobs)
        try:
            spec = _spec_for(spec_path, p, clock, overrides)
            check_knobs(spec.config, f"--set {p.config_text()!r}")
        except (SpecError, ConfigError, ValueError) as exc:
            where = ", ".join(f"{k}={v}" for k, v in p.knobs)
            raise SweepError(f"{where}: {exc}" if where else str(exc)) from None


def run_point(
    spec_path: str, point: Point, clock: str, overrides: dict[str, Any], out: str
) -> dict[str, Any]:
    """Run one point into ``out`` (atomically: a ``.partial`` folder renamed at the end);
    returns its summary. Runs in a worker process."""
    from .api import run_pool

    final = Path(out)
    partial = final.with_name(final.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    summary = run_pool(_spec_for(spec_path, point, clock, overrides), partial)
    partial.rename(final)
    return summary


def _finished(out: Path) -> dict[str, Any] | None:
    try:
        return json.loads((out / "summary.json").read_text())
    except (OSError, ValueError):
        return None


def _mean_ci(values: list[float]) -> tuple[float | None, float | None]:
    if not values:
        return None, None
    n = len(values)
    mean = sum(values) / n
    if n < 2:
        return mean, None
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    t = _T95[n - 2] if n - 1 <= len(_T95) else 1.96
    return mean, t * sd / math.sqrt(n)


def aggregate(results: Sequence[tuple[Point, dict[str, Any]]]) -> list[dict[str, Any]]:
    """One row per knob combination: each measure's mean over seeds and 95% CI."""
    groups: dict[tuple[tuple[str, str], ...], list[dict[str, Any]]] = {}
    for point, summary in results:
        groups.setdefault(point.knobs, []).append(summary)
    rows = []
    for knobs, summaries in groups.items():
        row: dict[str, Any] = dict(knobs)
        row["seeds"] = len(summaries)
        for name, read in MEASURES.items():
            values = [v for s in summaries if (v := read(s)) is not None]
            mean, ci = _mean_ci(values)
            row[name] = None if mean is None else round(mean, 6)
            row[f"{name}_ci95"] = None if ci is None else round(ci, 6)
        rows.append(row)
    return rows


def _write_table(out: Path, header: dict[str, Any], rows: list[dict[str, Any]]) -> None:
    tmp = out / (SWEEP_JSON + ".tmp")
    tmp.write_text(json.dumps({**header, "table": rows}, indent=2) + "\n")
    tmp.replace(out / SWEEP_JSON)
    if rows:
        with (out / SWEEP_CSV).open("w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)


def run_sweep(
    spec_path: str,
    sets: Sequence[tuple[str, list[str]]],
    *,
    seeds: int = 1,
    clock: str = "virtual",
    out: str | os.PathLike[str],
    workers: int | None = None,
    overrides: dict[str, Any] | None = None,
    progress: Callable[[int, int, int], None] | None = None,
    address: str = "",
) -> list[dict[str, Any]]:
    """Run (or resume) a sweep into ``out``; returns the table. ``progress(done, total,
    reused)`` is called as points finish. With ``address``, the points run as Ray tasks
    spread over that cluster's nodes (sweepray.py)."""
    if seeds < 1:
        raise SweepError(f"--seeds must be at least 1, got {seeds}")
    if address and clock == "live":
        raise SweepError(
            "--address runs each point as a Ray task in virtual time; a live point is a "
            "pool of Ray actors of its own: run it with `mockpool run SPEC --address`"
        )
    overrides = dict(overrides or {})
    try:
        base = load_spec(spec_path).seed
    except SpecError as exc:
        raise SweepError(str(exc)) from None
    points = plan(sets, range(base, base + seeds))
    check(spec_path, points, clock, overrides)
    root = Path(out)
    (root / "points").mkdir(parents=True, exist_ok=True)
    header = {
        "spec": str(spec_path),
        "clock": clock,
        "knobs": {k: v for k, v in sets},
        "seeds": list(range(base, base + seeds)),
    }
    results: dict[Point, dict[str, Any]] = {}
    todo: list[Point] = []
    for p in points:
        done = _finished(root / "points" / p.name)
        if done is not None:
            results[p] = done
        else:
            todo.append(p)
    reused = len(results)
    if progress:
        progress(len(results), len(points), reused)
    n = workers or max(1, min(len(todo), os.cpu_count() or 1))
    if todo and address:
        from .cluster import ClusterError
        from .sweepray import run_on_cluster

        def arrived(p: Point, summary: dict[str, Any]) -> None:
            results[p] = summary
            if progress:
                progress(len(results), len(points), reused)

        specs = [(p, _spec_for(spec_path, p, clock, overrides)) for p in todo]
        try:
            run_on_cluster(address, specs, root / "points", arrived)
        except ClusterError as exc:
            raise SweepError(str(exc)) from None
    elif todo and n == 1 and clock == "virtual":
        for p in todo:  # one at a time, in this process
            results[p] = run_point(spec_path, p, clock, overrides, str(root / "points" / p.name))
            if progress:
                progress(len(results), len(points), reused)
    elif todo:
        if clock == "live":
            n = 1  # each live point is a pool of Ray actors of its own: one at a time
        ctx = multiprocessing.get_context("spawn")  # no fork of a process that ran gRPC
        with ProcessPoolExecutor(max_workers=n, mp_context=ctx) as pool:
            futures: dict[Future[dict[str, Any]], Point] = {
                pool.submit(
                    run_point, spec_path, p, clock, overrides, str(root / "points" / p.name)
                ): p
                for p in todo
            }
            try:
                pending = set(futures)
                while pending:
                    finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                    for f in finished:
                        results[futures[f]] = f.result()
                    if progress:
                        progress(len(results), len(points), reused)
            except BaseException:
                for f in futures:
                    f.cancel()
                raise
    ordered = [(p, results[p]) for p in points]
    rows = aggregate(ordered)
    _write_table(root, {**header, "points": [p.name for p in points]}, rows)
    return rows
