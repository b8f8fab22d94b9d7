"""The HTML of ``report.html``: tables, figures with a sentence on how to read each, the
notes on panels left out, and the run's spec echoed. Self-contained: images are PNG data
URIs, no script, no link out."""

from __future__ import annotations

import base64
import html
import io
import json
from dataclasses import dataclass
from typing import Any

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

__all__ = ["Plot", "cadence_text", "page", "spec_rows"]


@dataclass
class Plot:
    caption: str  # what it shows (also the image's alt text)
    reading: str  # how to read it
    figure: Figure


def cadence_text(cad: dict[str, Any]) -> str:
    """Why the measured negotiation interval differs from the configured one."""
    if not cad or cad.get("median_gap") is None:
        return "Fewer than two cycles ran: no interval was measured."
    conf, med = cad["configured_interval"], cad["median_gap"]
    gaps, early, late = cad["gaps"], cad["early_gaps"], cad["late_gaps"]
    text = (
        f"The measured interval is the median gap between cycle starts ({med:g} s over "
        f"{gaps} gaps; NEGOTIATOR_INTERVAL is {conf:g} s)."
    )
    if early:
        text += (
            f" {early} of {gaps} gaps were shorter: those cycles came early on a reschedule "
            "(condor_submit, or a schedd whose ads start showing idle jobs, asks for one), "
            f"held back only by NEGOTIATOR_CYCLE_DELAY ({cad['cycle_delay']:g} s after the "
            f"previous cycle ended) and NEGOTIATOR_MIN_INTERVAL ({cad['min_interval']:g} s "
            "after it started)."
        )
    if late:
        text += (
            f" {late} gaps were longer: a cycle that took more than NEGOTIATOR_INTERVAL less "
            "NEGOTIATOR_CYCLE_DELAY, or a negotiator that ran late."
        )
    if not early and not late:
        text += " Every cycle came on time."
    return text


def _kv(d: dict[str, Any]) -> str:
    return ", ".join(f"{k} = {v}" for k, v in d.items()) or "(no knobs of their own)"


def spec_rows(summary: dict[str, Any]) -> list[tuple[str, str]]:
    """The run's spec as label/value rows (from ``summary["spec"]``; older summaries have
    only the counts)."""
    spec = summary.get("spec") or {}
    rows = []
    if spec:
        rows.append(
            (
                "spec",
                f"{spec.get('source')} (clock {spec.get('clock')}, seed {spec.get('seed')}, "
                f"{'until its jobs are done' if spec.get('until_done') else ''}"
                f"{'' if spec.get('until_done') else 'for ' + format(spec.get('duration', 0), 'g') + ' pool s'}"
                f", time scale {spec.get('time_scale')})",
            )
        )
    rows.append(
        (
            "pool",
            f"{summary.get('machines', '?')} machines, {summary.get('slots', '?')} slots, "
            f"{summary.get('total_cpus', '?')} cpus; ran {summary.get('pool_seconds', '?')} pool s",
        )
    )
    for g in spec.get("machines", []):
        rows.append((f"machines {g['names']} ({g['count']})", _kv(g["config"])))
    if spec:
        rows.append(("schedds", ", ".join(spec.get("schedds", [])) or "none"))
        rows.append(("knobs", _kv(spec.get("config", {}))))
    for w in spec.get("workload", []):
        who = w["owner"] + (
            f" (group {w['accounting_group']})" if w.get("accounting_group") else ""
        )
        rows.append(
            (
                f"workload {w['name']}",
                f"{w['jobs']} jobs of {who} on {w['schedd']}: duration {w['duration']} s, "
                f"arrival {w['arrival']}, cpus {w['request_cpus']}, memory "
                f"{w['request_memory']} MB",
            )
        )
    for t in spec.get("traces", []):
        rows.append((f"trace {t['name']}", f"{t['jobs']} jobs from {t['file']}"))
    if spec.get("faults"):
        rows.append(
            (
                "faults",
                "; ".join(f"{f['kind']} {f['target']} at {f['at']:g} s" for f in spec["faults"]),
            )
        )
    return rows


def _png(fig: Figure) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


_STYLE = (
    "body{font-family:sans-serif;max-width:62em;margin:auto;padding:0 1em;line-height:1.4}"
    "th{text-align:left;padding-right:2em;vertical-align:top;white-space:nowrap}"
    "td{vertical-align:top}figure{margin:2em 0}img{max-width:100%}"
    "figcaption b{display:block}.notes li{color:#555}"
)


def page(
    title: str,
    tables: list[tuple[str, list[tuple[str, str]]]],
    plots: list[Plot],
    notes: list[str],
    details_title: str,
    details: Any,
) -> str:
    """The whole page: titled tables, the figures, the notes, the raw data folded away."""
    e = html.escape
    parts = [f"<h1>{e(title)}</h1>"]
    for heading, rows in tables:
        body = "\n".join(f"<tr><th>{e(k)}</th><td>{e(str(v))}</td></tr>" for k, v in rows)
        parts.append(f"<h2>{e(heading)}</h2>\n<table>{body}</table>")
    parts.append("<h2>Plots</h2>")
    parts += [
        f'<figure><img alt="{e(p.caption)}" src="data:image/png;base64,{_png(p.figure)}">'
        f"<figcaption><b>{e(p.caption)}</b>{e(p.reading)}</figcaption></figure>"
        for p in plots
    ]
    if notes:
        items = "".join(f"<li>{e(n)}</li>" for n in notes)
        parts.append(f'<h2>Not drawn</h2><ul class="notes">{items}</ul>')
    parts.append(
        f"<details><summary>{e(details_title)}</summary>"
        f"<pre>{e(json.dumps(details, indent=1))}</pre></details>"
    )
    body = "\n".join(parts)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{e(title)}</title><style>{_STYLE}</style></head>\n"
        f"<body>{body}\n</body></html>\n"
    )
