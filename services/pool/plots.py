"""``mockpool report DIR``: one self-contained HTML page of a run's measures and plots.

The plots are matplotlib figures (Agg backend, no display needed) embedded as base64 PNG
data URIs, so the page is a single file that opens anywhere. :func:`figures` returns the
figures before they are drawn, so a test can check that each says what it shows (title,
axes with units, legend).
"""

from __future__ import annotations

import base64
import html
import io
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # before pyplot: no display, the same on every machine
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from .measures import Measures, load_run, measure, sawtooth

__all__ = ["REPORT_NAME", "figures", "render_html", "sweep_figures", "write_report"]

REPORT_NAME = "report.html"


def _loading_factor(m: Measures) -> Figure:
    fig, ax = plt.subplots(figsize=(7, 4))
    classes = m.summary["duration_classes"]
    top = max([6.0, *(c["d_over_c"] * 1.1 for c in classes)])
    x = np.linspace(0.01, top, 3000)
    ax.plot(x, [sawtooth(v) for v in x], color="tab:gray", lw=1, label="theory: D / (C·⌈D/C⌉)")
    if classes:
        ax.plot(
            [c["d_over_c"] for c in classes],
            [c["loading_factor"] for c in classes],
            "o",
            color="tab:red",
            label="measured (one point per job duration)",
        )
    else:
        ax.text(
            0.5, 0.1, "no job-duration classes in this run", transform=ax.transAxes, ha="center"
        )
    ax.set_title("Loading factor against job duration in negotiation cycles")
    ax.set_xlabel("job duration D / negotiation interval C (cycles)")
    ax.set_ylabel("loading factor (busy time / total)")
    ax.set_ylim(0, 1.05)
    ax.legend(loc="lower right")
    return fig


def _utilisation(m: Measures) -> Figure:
    fig, ax = plt.subplots(figsize=(7, 4))
    rows = m.series["utilisation"]
    t = [r["t"] for r in rows]
    ax.step(
        t,
        [r["utilisation"] or 0 for r in rows],
        where="post",
        color="tab:blue",
        label="utilisation",
    )
    ax.set_ylim(0, 1.05)
    twin = ax.twinx()
    twin.step(
        t, [r["idle_jobs"] for r in rows], where="post", color="tab:orange", label="idle jobs"
    )
    twin.set_ylabel("idle jobs (count)")
    ax.set_title("Pool utilisation over time")
    ax.set_xlabel("pool time (s)")
    ax.set_ylabel("busy cpus / total cpus (fraction)")
    lines = ax.get_lines() + twin.get_lines()
    ax.legend(lines, [ln.get_label() for ln in lines], loc="upper right")
    return fig


def _waits(m: Measures) -> Figure:
    fig, ax = plt.subplots(figsize=(7, 4))
    waits = [r["wait"] for r in m.series["jobs"] if r["wait"] is not None]
    stats = m.summary["wait"]
    if waits:
        ax.hist(
            waits, bins=min(40, max(5, len(waits) // 3)), color="tab:green", alpha=0.8, label="jobs"
        )
        for key, style in (("mean", "-"), ("p50", "--"), ("p95", ":")):
            ax.axvline(stats[key], color="black", ls=style, label=f"{key} {stats[key]:g} s")
    else:
        ax.text(0.5, 0.5, "no job started", transform=ax.transAxes, ha="center")
    ax.set_title("Job wait times (queued to started)")
    ax.set_xlabel("wait (pool s)")
    ax.set_ylabel("jobs (count)")
    ax.legend(loc="upper right")
    return fig


def _usage(m: Measures) -> Figure:
    fig, ax = plt.subplots(figsize=(7, 4))
    by: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in m.series["usage"]:
        by[(r["kind"], r["name"])].append(r)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, ((kind, name), rows) in enumerate(sorted(by.items())):
        c = colours[i % len(colours)]
        t = [r["t"] for r in rows]
        ax.step(t, [r["share"] or 0 for r in rows], where="post", color=c, label=f"{kind} {name}")
        if any(r["target"] is not None for r in rows):
            ax.step(
                t,
                [np.nan if r["target"] is None else r["target"] for r in rows],
                where="post",
                color=c,
                ls="--",
                lw=1,
                label=f"{name} target",
            )
    if not by:
        ax.text(0.5, 0.5, "no submitters", transform=ax.transAxes, ha="center")
    ax.set_title("Usage share per submitter and group against its target")
    ax.set_xlabel("pool time (s)")
    ax.set_ylabel("share of the pool's cpus (fraction)")
    ax.set_ylim(0, 1.05)
    ax.legend(
        loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small"
    )  # beside: the lines fill the axes
    return fig


def _cycles(m: Measures) -> Figure:
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(7, 5), sharex=True)
    rows = m.series["cycles"]
    n = [r["cycle"] for r in rows]
    top.bar(n, [r["duration"] for r in rows], color="tab:purple", label="cycle duration")
    top.set_title("Negotiation cycle durations")
    top.set_xlabel("cycle (number)")
    top.set_ylabel("duration (pool s)")
    top.legend(loc="upper right")
    bottom.bar(n, [r["matches"] for r in rows], color="tab:cyan", label="matches")
    bottom.set_title("Matches per negotiation cycle")
    bottom.set_xlabel("cycle (number)")
    bottom.set_ylabel("matches (count)")
    bottom.legend(loc="upper right")
    fig.tight_layout()
    return fig


def figures(m: Measures) -> list[tuple[str, Figure]]:
    """(caption, figure) for every plot of the report."""
    return [
        ("Loading factor against job duration, with the theoretical saw-tooth", _loading_factor(m)),
        ("Utilisation over time", _utilisation(m)),
        ("Wait-time distribution", _waits(m)),
        ("Usage share per submitter and group against its target", _usage(m)),
        ("Negotiation cycle durations and matches per cycle", _cycles(m)),
    ]


def _png(fig: Figure) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


_HEADLINE = (
    ("pool_loading_factor", "pool loading factor"),
    ("negotiation_interval", "negotiation interval (pool s)"),
    ("throughput_per_hour", "throughput (jobs per pool hour)"),
    ("jobs_started", "jobs started"),
    ("jobs_finished", "jobs finished"),
)


def render_html(title: str, summary: dict[str, Any], m: Measures) -> str:
    """The report page for a run's summary and measures."""
    rows = [(label, m.summary.get(key)) for key, label in _HEADLINE]
    rows += [
        ("mean wait (pool s)", m.summary["wait"]["mean"]),
        ("p95 wait (pool s)", m.summary["wait"]["p95"]),
        ("cycles", summary.get("cycles")),
        ("matches", summary.get("matches")),
        ("worst clock lag (pool s)", m.summary["clock_lag"]["max"]),
    ]
    return _page(title, rows, figures(m), "All measures (summary.json)", m.summary)


def _page(
    title: str,
    rows: list[tuple[str, Any]],
    figs: list[tuple[str, Figure]],
    details_title: str,
    details: Any,
) -> str:
    e = html.escape
    table = "\n".join(f"<tr><th>{e(k)}</th><td>{e(str(v))}</td></tr>" for k, v in rows)
    images = "\n".join(
        f'<figure><img alt="{e(caption)}" src="data:image/png;base64,{_png(fig)}">'
        f"<figcaption>{e(caption)}</figcaption></figure>"
        for caption, fig in figs
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{e(title)}</title>
<style>body{{font-family:sans-serif;max-width:60em;margin:auto}}th{{text-align:left;padding-right:2em}}
figure{{margin:2em 0}}img{{max-width:100%}}</style></head>
<body><h1>{e(title)}</h1>
<table>{table}</table>
{images}
<details><summary>{e(details_title)}</summary><pre>{e(json.dumps(details, indent=1))}</pre></details>
</body></html>
"""


# A sweep's plotted measures: name in the table -> axis label.
SWEEP_AXES = {
    "loading_factor": "pool loading factor",
    "wait_mean_s": "mean wait (pool s)",
    "throughput_per_hour": "throughput (jobs per pool hour)",
    "cycles": "negotiation cycles",
    "cycle_seconds": "mean cycle duration (pool s)",
    "cpu_utilisation": "CPU utilisation (fraction)",
}


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def sweep_figures(sweep: dict[str, Any]) -> list[tuple[str, Figure]]:
    """Each measure against each swept knob: the mean over seeds with its 95% interval,
    one line per combination of the other knobs."""
    rows, knobs = sweep["table"], list(sweep["knobs"])
    out = []
    for knob in knobs:
        others = [k for k in knobs if k != knob]
        fig, axes = plt.subplots(2, 3, figsize=(12, 6.5))
        for ax, (name, label) in zip(axes.flat, SWEEP_AXES.items(), strict=True):
            lines: dict[tuple[str, ...], list[dict[str, Any]]] = defaultdict(list)
            for r in rows:
                lines[tuple(f"{k}={r[k]}" for k in others)].append(r)
            for key, pts in lines.items():
                pts = [p for p in pts if p.get(name) is not None]
                xs = [_number(str(p[knob])) for p in pts]
                if not pts or any(x is None for x in xs):  # a knob with text values
                    xs = list(range(len(pts)))
                    ax.set_xticks(xs, [str(p[knob]) for p in pts])
                order = np.argsort(xs)
                x = np.asarray(xs, dtype=float)[order]
                y = np.asarray([p[name] for p in pts], dtype=float)[order]
                err = np.asarray([p.get(f"{name}_ci95") or 0.0 for p in pts])[order]
                ax.errorbar(x, y, yerr=err, marker="o", capsize=3, label=", ".join(key) or "all")
            ax.set_xlabel(knob)
            ax.set_ylabel(label)
            ax.set_title(label, fontsize=9)
            ax.legend(fontsize=7)
        fig.suptitle(f"Measures against {knob} (mean over seeds, 95% interval)")
        fig.tight_layout()
        out.append((f"Each measure against {knob}", fig))
    return out


def sweep_sawtooth(sweep: dict[str, Any]) -> Figure | None:
    """Loading factor against D/C when every point ran jobs of one duration: one line per
    combination of the knobs other than NEGOTIATOR_INTERVAL, over the theory."""
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
    fig, ax = plt.subplots(figsize=(7, 4))
    top = max(6.0, *(r["d_over_c"] * 1.05 for r in rows))
    x = np.linspace(0.01, top, 3000)
    ax.plot(x, [sawtooth(v) for v in x], color="tab:gray", lw=1, label="theory: no claim reuse")
    lines: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        lines[", ".join(f"{k}={r[k]}" for k in others) or "measured"].append(r)
    for label, pts in lines.items():
        pts.sort(key=lambda r: r["d_over_c"])
        ax.plot(
            [p["d_over_c"] for p in pts],
            [p["loading_factor"] for p in pts],
            "o",
            ms=4,
            label=label,
        )
    ax.set_title("Loading factor against job duration in negotiation cycles")
    ax.set_xlabel("job duration D / negotiation interval C (cycles)")
    ax.set_ylabel("pool loading factor (busy time / total)")
    ax.set_ylim(0, 1.05)
    ax.legend(loc="lower right", fontsize=8)
    return fig


def write_sweep_report(folder: Path) -> Path:
    from .measures import MeasureError

    try:
        sweep = json.loads((folder / "sweep.json").read_text())
        sweep["table"], sweep["knobs"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise MeasureError(f"{folder / 'sweep.json'}: not a sweep table ({exc})") from None
    rows: list[tuple[str, Any]] = [
        ("spec", sweep.get("spec")),
        ("clock", sweep.get("clock")),
        ("knobs", ", ".join(f"{k} = {', '.join(v)}" for k, v in sweep["knobs"].items())),
        ("seeds", sweep.get("seeds")),
    ]
    figs = sweep_figures(sweep)
    saw = sweep_sawtooth(sweep)
    if saw is not None:
        figs.insert(0, ("Loading factor against job duration, with the theoretical saw-tooth", saw))
    path = folder / REPORT_NAME
    page = _page(f"mockpool sweep: {folder.name}", rows, figs, "Table", sweep)
    path.write_text(page)
    return path


def write_report(folder: str | Path) -> Path:
    """Write ``report.html`` into a run's (or a sweep's) output folder (MeasureError if it
    holds neither)."""
    folder = Path(folder)
    if (folder / "sweep.json").exists():
        return write_sweep_report(folder)
    events, summary = load_run(folder)
    m = measure(
        events,
        now=float(summary["pool_seconds"]),
        total_cpus=float(summary.get("total_cpus", 0)),
        lag=summary.get("lag"),
    )
    path = folder / REPORT_NAME
    path.write_text(render_html(f"mockpool run: {folder.name}", summary, m))
    return path
