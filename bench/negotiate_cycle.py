"""The pure negotiation cycle at scale: `negotiate()` on 10,000 static slots.

    python bench/negotiate_cycle.py [--machines 625] [--jobs-per-schedd 6000] [--profile]
                                    [--pslots policy|whole]

Slot ads come from real startd `Machine` cores (16 one-cpu slots each) and resource
requests from real schedd cores (3 schedds, one autocluster each), so the figures are
those of the live negotiator minus the wire. Prints matches, seconds and matches/s.
``--pslots policy``: each machine is one 16-cpu partitionable slot with a consumption
policy (the negotiator splits it: 16 matches a machine); ``--pslots whole``: the same
slot without a policy (matched whole: one match a machine).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import tempfile
import time

from mockpool.config import parse_config
from mockpool.negotiator.accountant import Accountant
from mockpool.negotiator.cycle import Snapshot, negotiate, requests_from_ads
from mockpool.schedd.queue import JobQueue
from mockpool.schedd.schedd import Schedd
from mockpool.startd.machine import Machine


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--machines", type=int, default=625)
    ap.add_argument("--jobs-per-schedd", type=int, default=6000)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--pslots", choices=("policy", "whole"))
    ns = ap.parse_args()
    text = "NUM_CPUS = 16\nMEMORY = 65536\n"
    if ns.pslots is None:
        text += "NUM_SLOTS_TYPE_1 = 16\nSLOT_TYPE_1 = 1/16\n"
    else:
        text += "SLOT_TYPE_0_PARTITIONABLE = True\n"
        text += "CONSUMPTION_POLICY = True\n" if ns.pslots == "policy" else ""
    cfg = parse_config(text)
    slots, private = [], []
    for i in range(ns.machines):
        m = Machine(f"node{i:05d}", cfg, "127.0.0.1:1", 0, 0.0)
        slots += m.public_ads(0.0)
        private += m.private_ads()
    requests = []
    with tempfile.TemporaryDirectory() as d:
        for k in range(3):
            s = Schedd(f"schedd{k}", JobQueue(os.path.join(d, f"q{k}.db")), parse_config(""), 0.0)
            s.submit(
                f"executable=/bin/sleep\narguments=600\nrequest_memory=1024\nqueue {ns.jobs_per_schedd}",
                "bench.sub",
                f"user{k}",
                0.0,
            )
            reqs, _ = requests_from_ads(s.resource_requests(), f"schedd{k}", "127.0.0.1:2")
            requests += reqs
            s.queue.close()
    snapshot = Snapshot(slots, private)
    prof = cProfile.Profile() if ns.profile else None
    t = time.perf_counter()
    if prof:
        prof.enable()
    result = negotiate(snapshot, requests, Accountant(), parse_config(""), 0.0)
    if prof:
        prof.disable()
    secs = time.perf_counter() - t
    print(
        f"slots {len(slots)}  requests {len(requests)}  matches {len(result.matches)}  "
        f"cycle {secs:.3f} s  {len(result.matches) / secs:,.0f} matches/s"
    )
    if prof:
        pstats.Stats(prof).sort_stats("cumulative").print_stats(20)


if __name__ == "__main__":
    main()
