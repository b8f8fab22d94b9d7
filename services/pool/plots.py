"""``mockpool report DIR``: one self-contained HTML page of a run's measures and plots.

The plots are matplotlib figures (Agg backend, no display needed) embedded as base64 PNG
data URIs, so the page is a single file that opens anywhere. :func:`figures` returns the
figures before they are drawn, each with a sentence saying how to read it, so a test can
check that each says what it shows (title, axes with units, legend). A panel with nothing
to show is left out and :func:`figures` says why in a note: the page never shows an
empty chart. The measures are defined in ``docs/measures.md``.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # before pyplot: no display, the same on every machine
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import MaxNLocator

from .measures import Measures, load_run, measure, sawtooth
from .reportpage import Plot, cadence_text, page, spec_rows
from .sweepplots import sweep_figures, sweep_sawtooth, write_sweep_report

__all__ = [
    "REPORT_NAME",
    "Plot",
    "figures",
    "render_html",
    "sweep_figures",
    "sweep_sawtooth",
    "write_report",
]

REPORT_NAME = "report.html"
LEGEND_BELOW = {"loc": "upper center", "bbox_to_anchor": (0.5, -0.18), "frameon": False}


@dataclass
class Figures:
    plots: list[Plot] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # panels left out, and why


def _loading_factor(m: Measures, out: Figures) -> None:
    jb = m.summary.get("job_duration_bins") or {}
    bins, classes = jb.get("bins") or [], m.summary["duration_classes"]
    if not bins and not classes:
        out.notes.append(
            "Loading factor against job duration: not drawn, no job ended while other "
            "jobs waited and had a next job on its slot"
            + (" (fewer than two negotiation cycles)." if not jb.get("interval") else ".")
        )
        return
    c = jb.get("interval") or m.summary["negotiation_interval"]
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    top = max([4.0, *(b["high"] * 1.1 for b in bins), *(k["d_over_c"] * 1.1 for k in classes)])
    x = np.linspace(0.01, top, 3000)
    ax.plot(x, [sawtooth(v) for v in x], color="tab:gray", lw=1, label="theory: D / (C·⌈D/C⌉)")
    if bins:
        xs = np.array([b["d_over_c"] for b in bins])
        err = [xs - [b["low"] for b in bins], [b["high"] for b in bins] - xs]
        sizes = np.array([b["jobs"] for b in bins])
        ax.errorbar(
            xs,
            [b["loading_factor"] for b in bins],
            xerr=err,
            fmt="none",
            ecolor="tab:red",
            alpha=0.5,
            lw=1,
        )
        ax.scatter(
            xs,
            [b["loading_factor"] for b in bins],
            s=20 + 80 * sizes / sizes.max(),
            color="tab:red",
            zorder=3,
            label=f"every job, binned by duration ({jb['jobs']} jobs; size: jobs in the bin)",
        )
    if classes:
        ax.plot(
            [k["d_over_c"] for k in classes],
            [k["loading_factor"] for k in classes],
            "s",
            mfc="none",
            color="tab:blue",
            label="slots that ran one duration only (busy time / window)",
        )
    ax.set_title(f"Loading factor against job duration (C = {c:g} pool s, measured)")
    ax.set_xlabel("job duration D / negotiation interval C (cycles)")
    ax.set_ylabel("loading factor (fraction busy)")
    ax.set_ylim(0, 1.08)
    ax.legend(**LEGEND_BELOW, ncol=1, fontsize="small")
    out.plots.append(
        Plot(
            "Loading factor against job duration, with the theoretical saw-tooth",
            "Each red point is the jobs of one duration bin: their run time over the time "
            "each held its slot until the next job started there (the run, then the wait "
            "for a cycle). Without claim reuse the points follow the grey saw-tooth, which "
            "drops just past each whole number of cycles; points at 1 are jobs whose slot "
            "the schedd reused at once for its next job. Jobs that ended with nothing "
            f"waiting are left out ({jb.get('left_out', 0)} here).",
            fig,
        )
    )


def _utilisation(m: Measures, out: Figures) -> None:
    rows = m.series["utilisation"]
    if not rows:
        return
    fig, ax = plt.subplots(figsize=(7.5, 4))
    t = [r["t"] for r in rows]
    ax.step(t, [r["utilisation"] or 0 for r in rows], where="post", label="utilisation")
    ax.set_ylim(0, 1.05)
    twin = ax.twinx()
    twin.step(
        t, [r["idle_jobs"] for r in rows], where="post", color="tab:orange", label="idle jobs"
    )
    twin.set_ylabel("idle jobs (count)")
    ax.set_title("Pool utilisation and idle jobs over time")
    ax.set_xlabel("pool time (s)")
    ax.set_ylabel("busy cpus / total cpus (fraction)")
    lines = ax.get_lines() + twin.get_lines()
    ax.legend(lines, [ln.get_label() for ln in lines], ncol=2, **LEGEND_BELOW)
    step = t[1] - t[0] if len(t) > 1 else 0
    out.plots.append(
        Plot(
            "Utilisation over time",
            f"Blue (left scale): the share of the pool's cpus busy in each {step:g} s "
            "interval. Orange (right scale): jobs queued and not yet started at the "
            "interval's end. Idle jobs while utilisation is below 1 is time the pool "
            "waited for a negotiation cycle, or jobs no free slot could run.",
            fig,
        )
    )


def _waits(m: Measures, out: Figures) -> None:
    waits = [r["wait"] for r in m.series["jobs"] if r["wait"] is not None]
    if not waits:
        out.notes.append("Wait times: not drawn, no job started.")
        return
    fig, ax = plt.subplots(figsize=(7.5, 4))
    stats = m.summary["wait"]
    ax.hist(waits, bins=min(40, max(5, len(waits) // 3)), color="tab:green", alpha=0.8)
    ax.plot([], [], "s", color="tab:green", alpha=0.8, label="jobs")
    for key, style in (("mean", "-"), ("p50", "--"), ("p95", ":")):
        ax.axvline(stats[key], color="black", ls=style, label=f"{key} {stats[key]:g} s")
    ax.set_title("Job wait times (queued to started)")
    ax.set_xlabel("wait (pool s)")
    ax.set_ylabel("jobs (count)")
    ax.legend(ncol=4, **LEGEND_BELOW)
    out.plots.append(
        Plot(
            "Wait-time distribution",
            "How many jobs waited how long from their queue date to their (first) start. "
            "Waits pile up at multiples of the negotiation interval when jobs wait for "
            "cycles, and spread out when they wait for slots to free.",
            fig,
        )
    )


def _fair_share(m: Measures, out: Figures) -> None:
    by: dict[str, list[dict[str, Any]]] = defaultdict(list)
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in m.series["usage"]:
        (by if r["kind"] == "submitter" else groups)[r["name"]].append(r)
    if not by:
        out.notes.append("Fair share: not drawn, no submitter queued a job.")
        return
    fs = m.summary.get("fair_share") or {}
    has_quota = {g: rs for g, rs in groups.items() if any(r["target"] for r in rs)}
    n = 3 if has_quota else 2
    fig, axes = plt.subplots(n, 1, figsize=(7.5, 2.6 * n + 1), sharex=True)
    top, dev = axes[0], axes[1]
    names = sorted(by)
    t = np.array([r["t"] for r in by[names[0]]])
    step = t[1] - t[0] if len(t) > 1 else 1.0
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    shares = np.array([[r["share"] or 0 for r in by[n_]] for n_ in names])
    tgts = np.array([[r["target"] or 0 for r in by[n_]] for n_ in names])
    edges = np.append(t, t[-1] + step)
    below_s, below_t = np.zeros(len(t)), np.zeros(len(t))
    for i, name in enumerate(names):
        c = colours[i % len(colours)]
        top.stairs(below_s + shares[i], edges, baseline=below_s, fill=True, color=c, alpha=0.55)
        top.stairs(below_t + tgts[i], edges, color=c, ls="--", lw=1.5)
        top.plot([], [], "s", color=c, alpha=0.55, label=f"{name}: share")
        below_s, below_t = below_s + shares[i], below_t + tgts[i]
    top.plot([], [], "--", color="black", lw=1, label="its target (stacked, dashed)")
    top.set_ylim(0, 1.05)
    top.set_title("Fair share: each submitter's share of the pool, stacked, against its target")
    top.set_ylabel("share of cpus (fraction)")
    top.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small", frameon=False)
    gap = np.array([r.get("misallocated", 0.0) for r in m.series["utilisation"]])
    dev.stairs(gap, edges, color="tab:red", label="share misallocated")
    tol = fs.get("tolerance", 0.1)
    dev.axhline(tol, color="black", ls=":", label=f"tolerance {tol:g}")
    ttfs = fs.get("time_to_fair_share")
    if ttfs is not None:
        queued = min((j["qdate"] for j in m.series["jobs"] if j["qdate"] is not None), default=0.0)
        dev.axvline(queued + ttfs, color="tab:green", label=f"fair from here ({ttfs:g} s)")
    dev.set_ylim(0, max(0.5, float(gap.max()) * 1.1))
    dev.set_title("Share of the pool held beyond targets while others were below theirs")
    dev.set_ylabel("misallocated (fraction)")
    dev.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small", frameon=False)
    if has_quota:
        gax = axes[2]
        for i, (g, rs) in enumerate(sorted(has_quota.items())):
            c = colours[(i + len(names)) % len(colours)]
            gt = [r["t"] for r in rs]
            gax.step(gt, [r["share"] or 0 for r in rs], where="post", color=c, label=f"{g} share")
            gax.step(gt, [r["target"] or 0 for r in rs], where="post", color=c, ls="--", lw=1)
            gax.plot([], [], "--", color=c, lw=1, label=f"{g} quota")
        gax.set_ylim(0, 1.05)
        gax.set_title("Groups: share against quota")
        gax.set_ylabel("share of cpus (fraction)")
        gax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small", frameon=False)
    axes[-1].set_xlabel("pool time (s)")
    fig.tight_layout()
    when = (
        f"no more than {tol:g} of the pool was misallocated from {ttfs:g} s after the "
        "first job was queued on"
        if ttfs is not None
        else "the pool never settled within the tolerance before the demand ended"
    )
    out.plots.append(
        Plot(
            "Fair share over time: shares stacked against targets",
            "Top: each coloured band is a submitter's share of the pool's cpus in each "
            f"{step:g} s interval, stacked; the dashed line of the same colour is the top of "
            "its target band (the max-min fair split of the pool among the jobs wanted then, "
            "groups' quotas first: docs/measures.md). A band that fills its dashed outline "
            "has its fair share. Middle: the share of the pool some submitters held beyond "
            "their targets while others were below theirs (what would have to move to make "
            f"the split fair); here {when}.",
            fig,
        )
    )


def _cycles(m: Measures, out: Figures) -> None:
    rows = m.series["cycles"]
    if len(rows) < 2:
        out.notes.append("Negotiation cycles: not drawn, fewer than two cycles ran.")
        return
    cad = m.summary.get("cadence") or {}
    durations = [r["duration"] or 0 for r in rows]
    show_d = any(d > 0 for d in durations)
    n = 3 if show_d else 2
    fig, axes = plt.subplots(n, 1, figsize=(7.5, 2.3 * n + 1), sharex=True)
    num = [r["cycle"] for r in rows]
    gaps = np.diff([r["t"] for r in rows])
    conf = cad.get("configured_interval")
    axes[0].bar(num[1:], gaps, color="tab:gray", label="gap since the previous cycle's start")
    if conf is not None:
        axes[0].axhline(conf, color="black", ls="--", label=f"NEGOTIATOR_INTERVAL {conf:g} s")
    if cad.get("cycle_delay") is not None:
        axes[0].axhline(cad["cycle_delay"], color="tab:red", ls=":", label="NEGOTIATOR_CYCLE_DELAY")
    axes[0].set_title("Negotiation cadence: time between cycle starts")
    axes[0].set_ylabel("gap (pool s)")
    axes[0].legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small", frameon=False)
    axes[1].bar(num, [r["matches"] for r in rows], color="tab:cyan", label="matches")
    axes[1].set_title("Matches per negotiation cycle")
    axes[1].set_ylabel("matches (count)")
    axes[1].legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small", frameon=False)
    if show_d:
        axes[2].bar(num, durations, color="tab:purple", label="cycle duration")
        axes[2].set_title("Negotiation cycle durations")
        axes[2].set_ylabel("duration (pool s)")
        axes[2].legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small", frameon=False)
    else:
        out.notes.append(
            "Negotiation cycle durations: not drawn, every cycle took 0 pool s (in virtual "
            "time a cycle costs no pool time unless [pool] cycle_cost gives it a price)."
        )
    axes[-1].set_xlabel("cycle (number)")
    axes[-1].xaxis.set_major_locator(MaxNLocator(integer=True))
    fig.tight_layout()
    out.plots.append(
        Plot(
            "Negotiation cycles: cadence and matches",
            "Top: each bar is the time from one cycle's start to the next. Bars below the "
            "dashed NEGOTIATOR_INTERVAL are cycles a reschedule brought forward (a submit "
            "asks for one), never closer than NEGOTIATOR_CYCLE_DELAY after the previous "
            "cycle ended. Below: the matches each cycle made; a cycle with none found no "
            "idle job that fitted a free slot. " + cadence_text(cad),
            fig,
        )
    )


def figures(m: Measures) -> Figures:
    """Every plot of the report, and a note for each panel left out."""
    out = Figures()
    for draw in (_loading_factor, _utilisation, _waits, _fair_share, _cycles):
        draw(m, out)
    return out


def _fmt(v: Any, unit: str = "") -> str:
    if v is None:
        return "—"
    if isinstance(v, float):
        v = f"{v:.4g}"
    return f"{v} {unit}".strip()


def headline_rows(summary: dict[str, Any], m: Measures) -> list[tuple[str, str]]:
    s = m.summary
    cad = s.get("cadence") or {}
    fs = s.get("fair_share") or {}
    pre = s.get("preemption") or {}
    return [
        ("pool loading factor", _fmt(s.get("pool_loading_factor"))),
        (
            "negotiation interval: configured / measured",
            f"{_fmt(cad.get('configured_interval'), 'pool s')} / "
            f"{_fmt(s.get('negotiation_interval'), 'pool s')} — {cadence_text(cad)}",
        ),
        ("throughput", _fmt(s.get("throughput_per_hour"), "jobs per pool hour")),
        ("jobs started / finished", f"{s.get('jobs_started')} / {s.get('jobs_finished')}"),
        ("mean / p95 wait", f"{_fmt(s['wait']['mean'])} / {_fmt(s['wait']['p95'], 'pool s')}"),
        (
            "time to fair share",
            _fmt(fs.get("time_to_fair_share"), "pool s")
            + f" (from the first queued job until at most {_fmt(fs.get('tolerance'))} of "
            f"the pool stays misallocated; mean misallocated {_fmt(fs.get('mean_deviation'))})",
        ),
        (
            "work lost to preemption",
            f"{_fmt(pre.get('cpu_seconds'), 'cpu·s')} in {pre.get('runs', 0)} evicted runs "
            f"({_fmt(100 * pre.get('fraction', 0.0))}% of the work done)",
        ),
        ("cycles / matches", f"{summary.get('cycles')} / {summary.get('matches')}"),
        ("worst clock lag", _fmt(s["clock_lag"]["max"], "pool s")),
    ]


def render_html(title: str, summary: dict[str, Any], m: Measures) -> str:
    """The report page for a run's summary and measures."""
    figs = figures(m)
    return page(
        title,
        [("The run", spec_rows(summary)), ("Measures", headline_rows(summary, m))],
        figs.plots,
        figs.notes,
        "All measures (summary.json)",
        m.summary,
    )


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
        config=(summary.get("spec") or {}).get("config"),
    )
    path = folder / REPORT_NAME
    path.write_text(render_html(f"mockpool run: {folder.name}", summary, m))
    return path
