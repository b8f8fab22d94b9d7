"""Load benchmark: a live pool of 10,000 slots and 3 schedds.

    python bench/pool_load.py [--slots 10000] [--startd-actors N] [--schedds 3]
                              [--jobs-per-schedd 6000] [--job-length 600]
                              [--duration 1800] [--time-scale 60]
                              [--negotiator central|own]

Machines have 16 static one-cpu slots each, so the pool has ``--slots`` slots from the
start. Their startd actors are laid out as a spec without ``machines_per_actor`` lays
them out (1,000 machines an actor: one for the 625 machines of 10,000 slots, seven for
100,000 slots) unless ``--startd-actors`` spreads them over that many. Each schedd
queues ``--jobs-per-schedd`` jobs of ``--job-length`` pool seconds at time 0. Prints
(figures, not pass/fail):

- sustained job starts per real second (activations over the run, in the busiest 10
  real seconds, over the middle 90% of the starts, and while the empty pool fills: from
  its first start to the one that takes its last slot),
- RPCs per real second received by all actors (and by method),
- negotiation cycle durations (pool seconds as the negotiator reports them, and real
  seconds), matches per cycle,
- the peak resident memory of every actor and their sum,
- loop lag: how late the actors' loops woke (a pool that cannot keep its time scale),
- each actor's CPU seconds, the collector's ad updates,
- start-up: the local Ray's, then the pool's on it (what a pool on a running cluster pays).

``--negotiator own`` runs the negotiator in an actor of its own (``[placement]``), reading
columnar snapshots from the collector over gRPC, instead of beside the collector.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from collections import Counter

from mockpool.pool.api import Pool
from mockpool.pool.localray import start_local_ray, stop_local_ray
from mockpool.pool.spec import parse_spec


def build_spec(ns: argparse.Namespace) -> str:
    machines = math.ceil(ns.slots / 16)
    layout = (
        f"machines_per_actor = {math.ceil(machines / ns.startd_actors)}" if ns.startd_actors else ""
    )
    return f"""
[pool]
time_scale = {ns.time_scale}
duration = {ns.duration}

[config]
NEGOTIATOR_INTERVAL = 60
UPDATE_INTERVAL = 300
SCHEDD_INTERVAL = 300

[[startds]]
name = "node{{:05d}}"
count = {machines}
{layout}
config = '''
NUM_CPUS = 16
MEMORY = 65536
NUM_SLOTS_TYPE_1 = 16
SLOT_TYPE_1 = 1/16
'''

[[schedds]]
count = {ns.schedds}

[placement]
negotiator = "{ns.negotiator}"
""" + "".join(
        f"""
[[submit]]
at = 0
schedd = {i}
owner = "user{i}"
description = '''
executable = /bin/sleep
arguments = {ns.job_length}
request_memory = 1024
queue {ns.jobs_per_schedd}
'''
"""
        for i in range(ns.schedds)
    )


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--slots", type=int, default=10_000)
    ap.add_argument(
        "--startd-actors", type=int, help="spread the machines over this many startd actors"
    )
    ap.add_argument("--schedds", type=int, default=3)
    ap.add_argument("--jobs-per-schedd", type=int, default=6000)
    ap.add_argument("--job-length", type=float, default=600)
    ap.add_argument("--duration", type=float, default=1800)
    ap.add_argument("--time-scale", type=float, default=60)
    ap.add_argument("--negotiator", choices=("central", "own"), default="central")
    ap.add_argument("--json", help="also write the figures to this file")
    ns = ap.parse_args()
    spec = parse_spec(build_spec(ns), "<bench>")
    # Ray first, on its own clock: a pool on a running Ray cluster starts without it.
    t_ray = time.monotonic()
    local_ray = start_local_ray(
        max(2, os.cpu_count() or 2), log_to_driver=False, configure_logging=False
    )
    ray_startup = time.monotonic() - t_ray
    t_start = time.monotonic()
    pool = Pool(spec)
    pool.start()
    startup = time.monotonic() - t_start
    try:
        t0 = time.monotonic()
        first_cycle: dict = {}  # the negotiator's figures of its first cycle
        while pool.now < spec.duration:
            pool.sleep_until(min(spec.duration, pool.now + 60))
            pool.drain()
            if not first_cycle:
                last = [
                    h["services"].get("NegotiatorService", {}).get("last") for h in pool.status()
                ]
                first_cycle = next((x for x in last if x), {})
        real = time.monotonic() - t0
        events = pool.events
        status = pool.status()
        negotiator = pool.ads("Negotiator")
    finally:
        pool.stop()
        stop_local_ray(local_ray)

    # a job start is the startd's "activate" event
    startd_starts = [e for e in events if e["kind"] == "activate"]
    per_second: Counter[int] = Counter(int(e["t"] / spec.time_scale) for e in startd_starts)
    busiest = max(
        (sum(per_second.get(s + k, 0) for k in range(10)) / 10 for s in per_second), default=0.0
    )
    # the middle 90% of the starts: the rate while jobs are starting, without the wait
    # for the first cycle or the tail
    times = sorted(e["t"] / spec.time_scale for e in startd_starts)
    lo, hi = int(len(times) * 0.05), int(len(times) * 0.95)
    span = times[hi - 1] - times[lo] if hi - lo > 1 else 0.0
    # while the empty pool fills: its first start to the start that fills its last slot
    filled = times[: min(ns.slots, len(times))]
    fill_span = filled[-1] - filled[0] if len(filled) > 1 else 0.0
    rpcs: Counter[str] = Counter()
    for h in status:
        rpcs.update(h.get("rpcs_received", {}))
    cycles = [e for e in events if e["kind"] == "cycle"]
    peak = {f"{h['role']}:{h['pid']}": round(h["peak_rss_mb"], 1) for h in status}
    figures = {
        "machine": f"{os.cpu_count()} cores",
        "slots": ns.slots,
        "startd_actors": sum(h["role"] == "startd" for h in status),
        "schedds": ns.schedds,
        "time_scale": ns.time_scale,
        "ray_startup_real_s": round(ray_startup, 2),
        "startup_real_s": round(startup, 2),  # the pool's, Ray already up
        "run_real_s": round(real, 2),
        "job_starts": len(startd_starts),
        "job_starts_per_real_s": round(len(startd_starts) / real, 1) if real else 0,
        "job_starts_per_real_s_busiest_10s": round(busiest, 1),
        "job_starts_per_real_s_middle_90pct": round((hi - lo) / span, 1) if span else 0,
        "job_starts_per_real_s_filling": round((len(filled) - 1) / fill_span, 1)
        if fill_span
        else 0,
        "rpcs_total": sum(rpcs.values()),
        "rpcs_per_real_s": round(sum(rpcs.values()) / real, 1) if real else 0,
        "rpcs_by_method": dict(rpcs.most_common()),
        "cycles": len(cycles),
        "cycle_durations": [c.get("duration") for c in cycles],
        "cycle_real_durations": [round(c.get("duration", 0) / ns.time_scale, 3) for c in cycles],
        "matches_per_cycle": [c.get("matches") for c in cycles],
        # phases 1 to 4 of the first cycle (phase 4 includes sending the matches)
        "first_cycle_phases_real_s": [
            round(p / ns.time_scale, 3) for p in first_cycle.get("phases", [])
        ],
        "peak_rss_mb": peak,
        "peak_rss_mb_total": round(sum(peak.values()), 1),
        "cpu_s": {f"{h['role']}:{h['pid']}": round(h.get("cpu_s", 0.0), 2) for h in status},
        "collector_updates": sum(
            h["services"].get("CollectorService", {}).get("updates", 0) for h in status
        ),
        "lag": {f"{h['role']}:{h['pid']}": h.get("lag") for h in status},
        "negotiator_last_cycle": {
            k: negotiator[0].get_value(k)
            for k in negotiator[0]
            if k.startswith("LastNegotiationCycle") and k.endswith("0")
        }
        if negotiator
        else {},
    }
    print(json.dumps(figures, indent=2, default=str))
    if ns.json:
        with open(ns.json, "w") as f:
            json.dump(figures, f, indent=2, default=str)


if __name__ == "__main__":
    main()
