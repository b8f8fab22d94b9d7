"""Seconds to measure a large run's events (services/pool/measures.py) and draw its report.

A synthetic event log of a saturated pool: N one-cpu static slots, jobs of D pool seconds
matched every C with no claim reuse (each slot waits for the next cycle after a job), so
the pool loading factor must come out as the saw-tooth's D / (C·⌈D/C⌉).

    python bench/run_measures.py [--jobs 20000] [--slots 400] [--duration 600] [--interval 60]
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from pathlib import Path
from typing import Any

from mockpool.pool.measures import measure, sawtooth
from mockpool.pool.plots import render_html


def saturated_run(
    jobs: int, slots: int, d: float, c: float, submitters: int = 5
) -> tuple[list[dict[str, Any]], float]:
    """Events of ``jobs`` jobs queued at 0 on ``slots`` slots, cycles starting at k·C."""
    events: list[dict[str, Any]] = []
    clusters = max(1, jobs // 1000)
    per = jobs // clusters
    for k in range(clusters):
        events.append(
            {
                "t": 0.0,
                "daemon": "schedd1",
                "kind": "submit",
                "cluster": k + 1,
                "procs": per,
                "submitter": f"u{k % submitters}@pool",
            }
        )
    free = [c] * slots  # each slot's next match: the first cycle after its last job
    last = 0.0
    n = 0
    for k in range(clusters):
        for p in range(per):
            s = n % slots
            start, end = free[s], free[s] + d
            free[s] = math.ceil(end / c) * c
            claim, job, who = f"c{n}", f"{k + 1}.{p}", f"u{k % submitters}@pool"
            events += [
                {
                    "t": start,
                    "daemon": "e",
                    "kind": "claim",
                    "slot": f"s{s}",
                    "job": job,
                    "claim": claim,
                    "schedd": "schedd1",
                    "submitter": who,
                },
                {
                    "t": start,
                    "daemon": "e",
                    "kind": "activate",
                    "slot": f"s{s}",
                    "job": job,
                    "claim": claim,
                    "start": start,
                    "end": end,
                    "cpus": 1,
                },
                {
                    "t": end,
                    "daemon": "e",
                    "kind": "job_exit",
                    "slot": f"s{s}",
                    "job": job,
                    "claim": claim,
                    "start": start,
                    "end": end,
                },
            ]
            last = max(last, end)
            n += 1
    for i in range(int(last // c) + 2):
        events.append(
            {
                "t": (i + 1) * c,
                "daemon": "negotiator",
                "kind": "cycle",
                "cycle": i + 1,
                "duration": 0.0,
                "matches": 0,
            }
        )
    return sorted(events, key=lambda e: e["t"]), last + c


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jobs", type=int, default=20000)
    ap.add_argument("--slots", type=int, default=400)
    ap.add_argument("--duration", type=float, default=600.0)
    ap.add_argument("--interval", type=float, default=60.0)
    ns = ap.parse_args()
    events, now = saturated_run(ns.jobs, ns.slots, ns.duration, ns.interval)
    t0 = time.perf_counter()
    m = measure(events, now=now, total_cpus=ns.slots)
    t1 = time.perf_counter()
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "report.html").write_text(render_html("bench", {}, m))
        t2 = time.perf_counter()
    x = ns.duration / ns.interval
    print(
        f"{len(events)} events, {ns.jobs} jobs on {ns.slots} slots, {now:.0f} pool s, "
        f"{len(m.series['utilisation'])} intervals"
    )
    print(f"measure: {t1 - t0:.2f} s   report: {t2 - t1:.2f} s")
    print(
        f"pool loading factor {m.summary['pool_loading_factor']}  saw-tooth at D/C = {x:g}: {sawtooth(x):.4f}"
    )


if __name__ == "__main__":
    main()
