"""The pure negotiation cycle at scale: `negotiate()` on 10,000 static slots.

    python bench/negotiate_cycle.py [--machines 625] [--jobs-per-schedd 6000] [--profile]
                                    [--submitters 200] [--jobs-per-submitter 100]
                                    [--pslots policy|whole]

Slot ads come from real startd `Machine` cores (16 one-cpu slots each) and resource
requests from real schedd cores, so the figures are those of the live negotiator minus
the wire. Two runs, each printing matches, seconds, matches/s and the time of each phase:

1. three submitters (3 schedds, one autocluster each), no groups;
2. ``--submitters`` submitters in a three-level group tree (4 groups x 5 subgroups x 2
   sub-subgroups, dynamic quotas, surplus accepted at the leaves), spread over 4 schedds.

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


def _tree_config(top: int = 4, mid: int = 5, leaf: int = 2) -> tuple[str, list[str]]:
    names, lines, leaves = [], [], []
    for a in range(top):
        ga = f"group_{a}"
        names.append(ga)
        lines.append(f"GROUP_QUOTA_DYNAMIC_{ga} = {1 / top}")
        for b in range(mid):
            gb = f"{ga}.sub{b}"
            names.append(gb)
            lines.append(f"GROUP_QUOTA_DYNAMIC_{gb} = {1 / mid}")
            for c in range(leaf):
                gc = f"{gb}.leaf{c}"
                names.append(gc)
                leaves.append(gc)
                lines.append(f"GROUP_QUOTA_DYNAMIC_{gc} = {1 / leaf}")
                lines.append(f"GROUP_ACCEPT_SURPLUS_{gc} = True")
    return "GROUP_NAMES = " + ", ".join(names) + "\n" + "\n".join(lines) + "\n", leaves


def _report(label: str, slots: int, requests: int, result, secs: float) -> None:  # type: ignore[no-untyped-def]
    s = result.stats
    print(
        f"{label}: slots {slots}  requests {requests}  matches {len(result.matches)}  "
        f"cycle {secs:.3f} s  {len(result.matches) / secs:,.0f} matches/s"
    )
    print(
        f"  phase 1 {s.duration_phase1:.3f} s  phase 2 {s.duration_phase2:.3f} s  "
        f"phase 3 {s.duration_phase3:.3f} s  phase 4 {s.duration_phase4:.3f} s  "
        f"pies {s.pies}  pie spins {s.pie_spins}  allocation rounds {s.slot_share_iterations}"
    )


def _timed(snapshot, requests, config, prof):  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    if prof:
        prof.enable()
    result = negotiate(
        snapshot, requests, Accountant(), config, 0.0, timer=lambda: time.perf_counter() - t0
    )
    if prof:
        prof.disable()
    return result, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--machines", type=int, default=625)
    ap.add_argument("--jobs-per-schedd", type=int, default=6000)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--pslots", choices=("policy", "whole"))
    ap.add_argument("--submitters", type=int, default=200)
    ap.add_argument("--jobs-per-submitter", type=int, default=100)
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
        group_text, leaves = _tree_config()
        tree_requests = []
        schedds = [
            Schedd(f"gschedd{k}", JobQueue(os.path.join(d, f"g{k}.db")), parse_config(""), 0.0)
            for k in range(4)
        ]
        for u in range(ns.submitters):
            s = schedds[u % len(schedds)]
            s.submit(
                f"executable=/bin/sleep\narguments=600\nrequest_memory=1024\n"
                f"accounting_group = {leaves[u % len(leaves)]}\nqueue {ns.jobs_per_submitter}",
                "bench.sub",
                f"user{u}",
                0.0,
            )
        for s in schedds:
            reqs, _ = requests_from_ads(s.resource_requests(), s.name, "127.0.0.1:3")
            tree_requests += reqs
            s.queue.close()
    snapshot = Snapshot(slots, private)
    prof = cProfile.Profile() if ns.profile else None
    result, secs = _timed(snapshot, requests, parse_config(""), prof)
    _report("3 submitters, no groups", len(slots), len(requests), result, secs)
    result, secs = _timed(snapshot, tree_requests, parse_config(group_text), prof)
    _report(
        f"{ns.submitters} submitters, {len(leaves)} leaf groups in 3 levels",
        len(slots),
        len(tree_requests),
        result,
        secs,
    )
    if prof:
        pstats.Stats(prof).sort_stats("cumulative").print_stats(20)


if __name__ == "__main__":
    main()
