"""The run's spec as ``summary.json`` echoes it (``spec``): what ran, in plain data.

A report read months later must say which pool produced it: machines and their slot
knobs, the pool-wide knobs, the schedds, the workload, traces and faults. Values are
the spec's own text (knobs as HTCondor reads them), not the defaults it left alone.
"""

from __future__ import annotations

from typing import Any

from .specmodel import PoolSpec
from .workload import Arrival, Distribution

__all__ = ["echo_spec", "describe_distribution"]


def _num(v: Any) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


def describe_distribution(d: Distribution | Arrival) -> str:
    """``90`` for a fixed value, else ``normal(mean=60, sigma=15)``."""
    if d.kind == "fixed":
        return _num(d.p("value"))
    args = ", ".join(f"{k}={_num(v)}" for k, v in d.params if v is not None)
    return f"{d.kind}({args})"


def _names(names: tuple[str, ...]) -> str:
    return names[0] if len(names) == 1 else f"{names[0]} .. {names[-1]}"


def echo_spec(spec: PoolSpec) -> dict[str, Any]:
    """``summary["spec"]``: what the run was asked to be."""
    pool = {k: spec.config[k] for k in spec.config}
    machines = []
    for g in spec.startds:
        own = {k: g.config[k] for k in g.config if k not in pool or pool[k] != g.config[k]}
        machines.append({"names": _names(g.names), "count": len(g.names), "config": own})
    workload = [
        {
            "name": w.name,
            "owner": w.owner,
            "accounting_group": w.accounting_group,
            "schedd": w.schedd,
            "jobs": w.jobs,
            "duration": describe_distribution(w.duration),
            "arrival": describe_distribution(w.arrival),
            "request_cpus": describe_distribution(w.request_cpus),
            "request_memory": describe_distribution(w.request_memory),
        }
        for w in spec.workloads
    ]
    return {
        "source": spec.source,
        "clock": spec.clock,
        "time_scale": spec.time_scale,
        "duration": spec.duration,
        "until_done": spec.until_done,
        "seed": spec.seed,
        "config": pool,
        "machines": machines,
        "schedds": [n for g in spec.schedds for n in g.names],
        "workload": workload,
        "submits": len(spec.submits),
        "traces": [{"name": t.name, "file": t.file, "jobs": t.jobs} for t in spec.traces],
        "faults": [
            {"kind": f.kind, "target": f.target or f.constraint, "at": f.at, "for": f.duration}
            for f in spec.faults
        ],
    }
