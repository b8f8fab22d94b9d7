"""Virtual-time runs at scale: how much pool time one wall second buys.

(a) ``--scenario batch`` (default): 500 machines of 8 one-cpu static slots, 20,000
    one-cpu jobs of 60-1200 s (uniform) all submitted at 0, NEGOTIATOR_INTERVAL 60, run
    until the queue is empty. Prints pool seconds simulated, wall seconds (start-up
    included), jobs completed per wall second and peak memory.
(b) ``--scenario day``: 10,000 one-cpu slots (1,250 machines of 8), 3 schedds, one
    pool-day of a steady Poisson workload that keeps the pool about 80% busy
    (``--job-hours`` long jobs); prints wall seconds per pool-day.

    python bench/virtual_run.py                     # (a)
    python bench/virtual_run.py --scenario day      # (b)
    python bench/virtual_run.py --machines 100 --jobs 4000   # a quick look
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from mockpool.pool.api import run_pool
from mockpool.pool.spec import parse_spec

BATCH = """
[pool]
clock = "virtual"
duration = 10000000
until_done = true
seed = {seed}

[config]
NEGOTIATOR_INTERVAL = 60

[[startds]]
count = {machines}
machines_per_actor = {machines}
config = '''
NUM_CPUS = 8
MEMORY = 16384
SLOT_TYPE_0_PARTITIONABLE = False
'''

[[schedds]]
count = {schedds}

{workloads}
"""

BATCH_WORKLOAD = """
[[workload]]
name = "batch{i}"
owner = "user{i}"
schedd = {i}
jobs = {jobs}
duration = {{ dist = "uniform", low = 60, high = 1200 }}
request_memory = 1024
"""

DAY_WORKLOAD = """
[[workload]]
name = "steady{i}"
owner = "user{i}"
schedd = {i}
jobs = {jobs}
duration = {{ dist = "exponential", mean = {mean} }}
arrival = {{ kind = "poisson", rate = {rate} }}
request_memory = 1024
"""


def batch_spec(machines: int = 500, jobs: int = 20_000, seed: int = 0) -> str:
    """Workload (a)'s spec: ``machines`` of 8 one-cpu static slots, ``jobs`` one-cpu jobs
    of 60-1200 s (uniform) submitted at 0 (bench/lapis_compare.py and
    bench/profile_virtual.py run it too)."""
    workloads = BATCH_WORKLOAD.format(i=0, jobs=jobs)
    return BATCH.format(seed=seed, machines=machines, schedds=1, workloads=workloads)


def timed_run(
    text: str, source: str, out: str | Path | None = None
) -> tuple[dict[str, Any], float]:
    """Run spec ``text`` as ``mockpool run`` does, outputs written: (its summary, wall
    seconds with spec parsing and start-up)."""
    t0 = time.perf_counter()
    spec = parse_spec(text, source)
    with tempfile.TemporaryDirectory() as tmp:
        summary = run_pool(spec, Path(out) if out else Path(tmp) / "out")
    return summary, time.perf_counter() - t0


def kernel_run(text: str, source: str) -> tuple[dict[str, Any], float]:
    """Run spec ``text`` on the simulation kernel (the cores stepped directly): the
    figures the summary would give, and wall seconds with parsing and start-up."""
    t0 = time.perf_counter()
    from mockpool.kernel.pool import KernelPool

    spec = parse_spec(text, source)
    pool = KernelPool(spec)
    pool.start()
    pool.run(spec.duration, until_done=spec.until_done)
    wall = time.perf_counter() - t0
    kinds = Counter(e["kind"] for e in pool.kernel.events)
    summary = {
        "jobs": {"Completed": kinds["job_completed"]},
        "jobs_submitted": sum(n for _, _, n in pool.submitted),
        "cycles": kinds["cycle"],
        "matches": kinds["match"],
        "pool_seconds": pool.kernel.now,
        "messages": pool.kernel.delivered,
    }
    return summary, wall


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--scenario", choices=("batch", "day"), default="batch")
    ap.add_argument("--machines", type=int, help="machines of 8 slots (a: 500, b: 1250)")
    ap.add_argument("--jobs", type=int, default=20_000, help="(a) jobs submitted at 0")
    ap.add_argument("--job-hours", type=float, default=2.0, help="(b) mean job length, hours")
    ap.add_argument("--pool-hours", type=float, default=24.0, help="(b) pool time to run")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", help="keep the run's output folder here")
    ap.add_argument(
        "--outputs",
        action="store_true",
        help="run as `mockpool run` does, writing the outputs (events, NegotiatorLog, ads, "
        "summary); by default the kernel runs and nothing is written",
    )
    ns = ap.parse_args()
    if ns.scenario == "batch":
        machines = ns.machines or 500
        schedds = 1
        text = batch_spec(machines, ns.jobs, ns.seed)
    else:
        machines = ns.machines or 1250
        schedds = 3
        mean = ns.job_hours * 3600
        slots = machines * 8
        rate = 0.8 * slots / mean / schedds  # jobs per pool second per schedd
        jobs = int(rate * ns.pool_hours * 3600)
        workloads = "".join(
            DAY_WORKLOAD.format(i=i, jobs=jobs, mean=mean, rate=rate) for i in range(schedds)
        )
        text = BATCH.format(seed=ns.seed, machines=machines, schedds=schedds, workloads=workloads)
        text = text.replace("until_done = true", "until_done = false").replace(
            "duration = 10000000", f"duration = {ns.pool_hours * 3600:g}"
        )
    if ns.outputs or ns.out:
        summary, wall = timed_run(text, f"<bench {ns.scenario}>", ns.out)
    else:
        summary, wall = kernel_run(text, f"<bench {ns.scenario}>")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    done = summary["jobs"].get("Completed", 0)
    pool_s = summary["pool_seconds"]
    print("outputs written" if ns.outputs or ns.out else "kernel only, no outputs written")
    print(f"scenario {ns.scenario}: {machines} machines, {machines * 8} slots, {schedds} schedds")
    print(f"  jobs submitted {summary['jobs_submitted']}, completed {done}")
    print(f"  cycles {summary['cycles']}, matches {summary['matches']}")
    print(f"  pool seconds simulated {pool_s:.0f}")
    print(f"  wall seconds (start-up included) {wall:.1f}")
    print(f"  jobs completed per wall second {done / wall:.0f}")
    print(f"  pool seconds per wall second {pool_s / wall:.0f}")
    if ns.scenario == "day":
        print(f"  wall seconds per pool-day {wall * 86400 / pool_s:.0f}")
    print(f"  peak memory (this process) {peak:.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
