"""`mockpool run`, `sweep`, `report` and `check`: a spec run to its end, a grid of runs, and
what a run's output folder says."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ..pool.check import CheckError, check_dir, format_report
from ..pool.cluster import ClusterError
from ..pool.spec import load_spec
from ..pool.specmodel import SpecError
from ..pool.virtual import CycleCost
from . import layouts


def fail(message: str, code: int = 1) -> int:
    """Say what went wrong as the mockpool command does (on stderr); the exit status."""
    print(f"mockpool: {message}", file=sys.stderr)
    return code


def cmd_run(ns: argparse.Namespace) -> int:
    from ..pool.api import run_pool
    from ..pool.report import format_summary

    try:
        spec = load_spec(ns.spec)
    except SpecError as e:
        return fail(str(e), 2)
    if ns.duration is not None:
        spec.duration = ns.duration
    if ns.time_scale is not None:
        spec.time_scale = ns.time_scale
    if ns.clock is not None:
        spec.clock = ns.clock
    if ns.until_done:
        spec.until_done = True
    if ns.latency is not None:
        spec.latency = ns.latency
    if ns.time_dilation is not None:
        spec.cycle_cost = CycleCost(cpu_factor=ns.time_dilation)
    if ns.metrics_port is not None:
        spec.metrics_port = ns.metrics_port
    if ns.metrics_htcondor:
        spec.metrics_htcondor = True
    if spec.metrics_port and spec.clock == "virtual":  # it would be over before a scrape
        print(
            "mockpool: a virtual run serves no metrics; they are in metrics.prom", file=sys.stderr
        )
    out = Path(ns.out) if ns.out else Path("mockpool-out") / Path(ns.spec).stem
    until = " or until the work is done" if spec.until_done else ""
    if spec.clock == "virtual":
        how = "in virtual time"
    else:
        how = (
            f"at time scale {spec.time_scale:g} "
            f"(about {spec.duration / spec.time_scale:.0f} real s)"
        )
    print(
        f"Running {ns.spec}: {len(spec.machine_names)} machines, {len(spec.schedd_names)} schedds, "
        f"{spec.duration:g} pool s{until} {how}",
        flush=True,
    )
    for trace in spec.traces:
        print(trace.describe(), flush=True)
    with _progress_bar() as progress:
        try:
            summary = run_pool(spec, out, progress, address=ns.address or "")
        except ClusterError as e:
            return fail(str(e), 1)
    print(format_summary(summary))
    print(
        f"Output written to {out}/ (events.jsonl, NegotiatorLog, ads/, summary.json, *.csv, "
        "metrics.prom)"
    )
    print(format_report(check_dir(out)))  # informative: `mockpool check DIR` sets the status
    if ns.report:
        return cmd_report(argparse.Namespace(dir=str(out)))
    return 0


@contextlib.contextmanager
def _progress_bar() -> Iterator[Callable[[float, float], None] | None]:
    """A rich progress bar over pool time (pool time, wall time, ETA) on a terminal."""
    if not sys.stdout.isatty():
        yield None
        return
    from rich.progress import (
        BarColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    columns = (
        TextColumn("pool time {task.completed:>9.0f} / {task.total:.0f} s"),
        BarColumn(),
        TextColumn("wall"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
    )
    with Progress(*columns, transient=True) as bar:
        task = bar.add_task("run", total=None)

        def update(now: float, total: float) -> None:
            bar.update(task, completed=now, total=total)

        yield update


def cmd_sweep(ns: argparse.Namespace) -> int:
    from ..pool.sweep import MEASURES, SweepError, parse_set, run_sweep

    try:
        sets = [parse_set(t) for t in ns.set or []]
        if not sets:
            raise SweepError("give at least one --set KNOB=VALUE[,VALUE...]")
    except SweepError as e:
        return fail(str(e), 2)
    overrides: dict[str, Any] = {}
    if ns.duration is not None:
        overrides["duration"] = ns.duration
    if ns.until_done:
        overrides["until_done"] = True
    out = Path(ns.out) if ns.out else Path("mockpool-out") / f"sweep-{Path(ns.spec).stem}"
    print(f"Sweeping {ns.spec} ({ns.clock} clock) into {out}/", flush=True)
    with _count_bar() as progress:
        try:
            rows = run_sweep(
                ns.spec,
                sets,
                seeds=ns.seeds,
                clock=ns.clock,
                out=out,
                workers=ns.workers,
                overrides=overrides,
                progress=progress,
                address=ns.address or "",
            )
        except SweepError as e:
            return fail(str(e), 2)
        except KeyboardInterrupt:
            print("\ninterrupted: finished points are kept; run again to resume", flush=True)
            return 130
    knobs = [k for k, _ in sets]
    shown = ["loading_factor", "wait_mean_s", "cycles", "cycle_seconds"]
    assert all(m in MEASURES for m in shown)
    print(layouts.sweep_table(rows, knobs, shown))
    print(f"Table written to {out}/sweep.csv and {out}/sweep.json")
    return 0


@contextlib.contextmanager
def _count_bar() -> Iterator[Callable[[int, int, int], None]]:
    """Points done out of the total, with ETA (rich on a terminal, lines otherwise)."""
    if not sys.stdout.isatty():

        def line(done: int, total: int, reused: int) -> None:
            print(f"  {done}/{total} points ({reused} from an earlier run)", flush=True)

        yield line
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    with Progress(
        "points", BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(), transient=True
    ) as bar:
        task = bar.add_task("sweep", total=None)

        def update(done: int, total: int, reused: int) -> None:
            bar.update(task, completed=done, total=total)

        yield update


def cmd_report(ns: argparse.Namespace) -> int:
    from ..pool.measures import MeasureError
    from ..pool.plots import write_report

    try:
        path = write_report(ns.dir)
    except MeasureError as e:
        return fail(str(e), 2)
    print(f"Report written to {path}")
    return 0


def cmd_check(ns: argparse.Namespace) -> int:
    try:
        report = check_dir(ns.dir)
    except CheckError as e:
        return fail(str(e), 2)
    print(format_report(report))
    return 0 if report.ok else 1
