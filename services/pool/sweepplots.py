"""A sweep's report: each measure against each swept knob, and the saw-tooth.

A knob's values are drawn on a numeric axis only when they are three or more
non-negative numbers; otherwise (booleans, text, two values, or a special value such
as CLAIM_WORKLIFE = -1, "no limit") each value is a category, evenly spaced in the
order given, and the points are not joined across categories. Every axis names its
unit, and the legend (one per figure) sits outside the panels.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from .measures import MeasureError, sawtooth
from .reportpage import Plot, page, spec_rows

__all__ = ["SWEEP_AXES", "axis_values", "knob_unit", "sweep_figures", "sweep_sawtooth"]

# A sweep's plotted measures: name in the table -> axis label with its unit.
SWEEP_AXES = {
    "loading_factor": "pool loading factor (fraction)",
    "wait_mean_s": "mean wait (pool s)",
    "throughput_per_hour": "throughput (jobs per pool hour)",
    "cycles": "negotiation cycles (count)",
    "cycle_seconds": "mean cycle duration (pool s)",
    "cpu_utilisation": "CPU utilisation (fraction)",
    "time_to_fair_share_s": "time to fair share (pool s)",
    "fair_share_gap": "mean gap from fair share (fraction)",
    "work_lost_cpu_s": "work lost to preemption (cpu·s)",
}

# What a special value of a knob means (HTCondor's manual)
SPECIAL = {"CLAIM_WORKLIFE": {"-1": "-1 (no limit)"}}

_SECONDS = ("INTERVAL", "DELAY", "WORKLIFE", "TIMEOUT", "TIME", "LIFETIME", "DURATION", "ALIVE")


def knob_unit(knob: str) -> str:
    """The unit of a knob's values, for its axis label."""
    k = knob.upper()
    if k.startswith("WORKLOAD."):
        last = k.split(".")
        if "DURATION" in last or "EVERY" in last:
            return "pool s"
        if "RATE" in last:
            return "jobs per pool s"
        if "JOBS" in last or "SIZE" in last:
            return "jobs"
        if "REQUEST_MEMORY" in last:
            return "MB"
        return "value"
    if any(k.endswith(s) or f"_{s}_" in k for s in _SECONDS):
        return "pool s"
    if "QUOTA" in k and "DYNAMIC" not in k:
        return "cpus"
    return "setting"


def _float(text: str) -> float | None:
    try:
        v = float(text)
    except ValueError:
        return None
    return v if math.isfinite(v) else None


def axis_values(knob: str, values: list[str]) -> tuple[bool, list[str]]:
    """(numeric, values in axis order): numeric when three or more non-negative numbers
    and no special value; categories sorted by number where they all are numbers."""
    nums = [_float(v) for v in values]
    special = set(SPECIAL.get(knob.upper(), {}))
    if all(n is not None for n in nums):
        order = sorted(values, key=lambda v: float(v))
        numeric = len(values) >= 3 and all(n >= 0 for n in nums) and not special & set(values)
        return numeric, order
    return False, list(values)


def _label(knob: str, value: str) -> str:
    return SPECIAL.get(knob.upper(), {}).get(value, value)


def sweep_figures(sweep: dict[str, Any]) -> tuple[list[Plot], list[str]]:
    """Each measure against each swept knob: the mean over seeds with its 95% interval,
    one line per combination of the other knobs. Returns the plots and a note per panel
    left out (no value at any point)."""
    rows, knobs = sweep["table"], dict(sweep["knobs"])
    present = {
        name: label
        for name, label in SWEEP_AXES.items()
        if any(r.get(name) is not None for r in rows)
    }
    flat = {n for n in present if all((r.get(n) or 0) == 0 for r in rows)}
    notes = [
        f"{label}: not drawn, no point measured it"
        + (" (no fair-share contention, or no eviction)" if "fair" in n or "lost" in n else "")
        + "."
        for n, label in SWEEP_AXES.items()
        if n not in present
    ]
    notes += [
        f"{SWEEP_AXES[n]}: not drawn, 0 at every point"
        + (" (virtual time: a cycle costs no pool time)." if n == "cycle_seconds" else ".")
        for n in flat
    ]
    shown = {n: lab for n, lab in present.items() if n not in flat}
    out = []
    for knob, values in knobs.items():
        numeric, order = axis_values(knob, values)
        others = [k for k in knobs if k != knob]
        lines: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for r in rows:
            lines[", ".join(f"{k}={r[k]}" for k in others) or "mean over seeds"].append(r)
        cols = min(3, max(1, len(shown)))
        nrows = max(1, math.ceil(len(shown) / cols))
        fig, axes = plt.subplots(nrows, cols, figsize=(4.2 * cols, 3.2 * nrows), squeeze=False)
        for ax in axes.flat[len(shown) :]:
            ax.remove()
        pos = {v: i for i, v in enumerate(order)}
        width = 0.5 / max(1, len(lines))
        for ax, (name, label) in zip(axes.flat, shown.items(), strict=False):
            for i, (key, pts) in enumerate(lines.items()):
                pts = sorted(
                    (p for p in pts if p.get(name) is not None), key=lambda p: pos[str(p[knob])]
                )
                if not pts:
                    continue
                if numeric:
                    x = np.array([float(p[knob]) for p in pts])
                else:  # categories, dodged so the intervals do not hide each other
                    x = (
                        np.array([pos[str(p[knob])] for p in pts])
                        + (i - (len(lines) - 1) / 2) * width
                    )
                ax.errorbar(
                    x,
                    [p[name] for p in pts],
                    yerr=[p.get(f"{name}_ci95") or 0.0 for p in pts],
                    marker="o",
                    ms=4,
                    capsize=3,
                    ls="-" if numeric else "none",
                    color=f"C{i % 10}",
                    label=key,
                )
            if not numeric:
                ax.set_xticks(range(len(order)), [_label(knob, v) for v in order])
                ax.set_xlim(-0.5, len(order) - 0.5)
            ax.set_xlabel(f"{knob} ({knob_unit(knob)})", fontsize=8)
            ax.set_ylabel(label, fontsize=8)
            ax.set_title(label.split(" (")[0], fontsize=9)
            ax.tick_params(labelsize=7)
        handles, labels = axes.flat[0].get_legend_handles_labels()
        fig.suptitle(f"Measures against {knob} (mean over seeds, 95% interval)")
        fig.tight_layout()
        fig.legend(
            handles,
            labels,
            loc="upper left",
            bbox_to_anchor=(1.0, 0.95),
            fontsize="small",
            frameon=False,
            title=", ".join(others) if others else None,
        )
        kind = "a number line" if numeric else "categories, in the order given"
        out.append(
            Plot(
                f"Each measure against {knob}",
                f"One panel per measure; {knob} on the x axis as {kind}. Each point is the "
                "mean over the seeds with its 95% confidence interval (Student's t); "
                + (
                    "each colour is one combination of the other knobs (legend at the right)."
                    if others
                    else "no other knob was swept."
                ),
                fig,
            )
        )
    return out, notes


def sweep_sawtooth(sweep: dict[str, Any]) -> Figure | None:
    """Loading factor against D/C when every point ran jobs of one duration: one series
    per combination of the knobs other than NEGOTIATOR_INTERVAL, over the theory."""
    knob = next((k for k in sweep["knobs"] if k.upper() == "NEGOTIATOR_INTERVAL"), None)
    # D/C is measured where the run had a class of one duration; points of the same
    # interval (claim reuse on: too few cycles to measure one) share it
    x_of = {r.get(knob): r["d_over_c"] for r in sweep["table"] if r.get("d_over_c")}
    rows = [
        {**r, "d_over_c": r.get("d_over_c") or x_of.get(r.get(knob))}
        for r in sweep["table"]
        if r.get("loading_factor") is not None
    ]
    if len(rows) < 2 or not all(r["d_over_c"] for r in rows):
        return None
    others = [k for k in sweep["knobs"] if k != knob]
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    top = max(4.0, *(r["d_over_c"] * 1.05 for r in rows))
    x = np.linspace(0.01, top, 3000)
    ax.plot(x, [sawtooth(v) for v in x], color="tab:gray", lw=1, label="theory: no claim reuse")
    lines: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        lines[", ".join(f"{k}={r[k]}" for k in others) or "measured"].append(r)
    for label, pts in lines.items():
        pts.sort(key=lambda r: r["d_over_c"])
        ax.plot(
            [p["d_over_c"] for p in pts], [p["loading_factor"] for p in pts], "o", ms=4, label=label
        )
    ax.set_title("Loading factor against job duration in negotiation cycles")
    ax.set_xlabel("job duration D / negotiation interval C (cycles)")
    ax.set_ylabel("pool loading factor (fraction busy)")
    ax.set_ylim(0, 1.05)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8, frameon=False)
    return fig


def _base_summary(folder: Path, sweep: dict[str, Any]) -> dict[str, Any]:
    """The first point's summary: the spec the sweep varied, echoed."""
    for name in sweep.get("points", [])[:1]:
        try:
            return json.loads((folder / "points" / name / "summary.json").read_text())
        except (OSError, ValueError):
            pass
    return {}


def write_sweep_report(folder: Path) -> Path:
    try:
        sweep = json.loads((folder / "sweep.json").read_text())
        sweep["table"], sweep["knobs"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise MeasureError(f"{folder / 'sweep.json'}: not a sweep table ({exc})") from None
    rows: list[tuple[str, str]] = [
        ("spec", str(sweep.get("spec"))),
        ("clock", str(sweep.get("clock"))),
        ("knobs", "; ".join(f"{k} = {', '.join(v)}" for k, v in sweep["knobs"].items())),
        ("seeds", ", ".join(map(str, sweep.get("seeds", [])))),
    ]
    base = _base_summary(folder, sweep)
    tables = [("The sweep", rows)]
    if base:
        tables.append(("The spec (first point)", spec_rows(base)))
    plots, notes = sweep_figures(sweep)
    saw = sweep_sawtooth(sweep)
    if saw is not None:
        plots.insert(
            0,
            Plot(
                "Loading factor against job duration, with the theoretical saw-tooth",
                "One point per knob combination whose jobs all had one duration D, at D over "
                "its measured negotiation interval C; the grey line is the loading factor "
                "without claim reuse. Points above it: the schedd reused claims.",
                saw,
            ),
        )
    path = folder / "report.html"
    path.write_text(page(f"mockpool sweep: {folder.name}", tables, plots, notes, "Table", sweep))
    return path
