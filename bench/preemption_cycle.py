"""The pure negotiation cycle on a half-claimed pool: what considering preemption costs.

    python bench/preemption_cycle.py [--machines 625] [--jobs 6000]

Slot ads come from real startd `Machine` cores (16 one-cpu slots each); bob's jobs run on
the first half of the machines (claimed and activated through the startd core, so their
ads carry RemoteUser, CurrentRank and a preempting claim id). alice asks for ``--jobs``
slots. Prints, for preemption off, on with PREEMPTION_REQUIREMENTS False, and on with a
20% priority rule that bob's priority passes: matches, preempting matches and seconds.
"""

from __future__ import annotations

import argparse
import time

from mockpool.classad import ClassAd
from mockpool.config import parse_config
from mockpool.negotiator.accountant import Accountant, SubmitterRecord
from mockpool.negotiator.cycle import negotiate
from mockpool.negotiator.cycleinput import CycleAds, ResourceRequest
from mockpool.startd.machine import Machine

RUNS = {
    "preemption off": "NEGOTIATOR_CONSIDER_PREEMPTION = False",
    "on, PREEMPTION_REQUIREMENTS False": "",
    "on, 20% better priority": "PREEMPTION_REQUIREMENTS = RemoteUserPrio > SubmitterUserPrio * 1.2",
}


def _job(cluster: int, owner: str) -> ClassAd:
    ad = ClassAd(
        ClusterId=cluster,
        ProcId=0,
        Owner=owner,
        User=f"{owner}@mockpool",
        RequestCpus=1,
        RequestMemory=1024,
        RequestDisk=1024,
        MockDuration=100_000,
    )
    ad["Requirements"] = True
    return ad


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--machines", type=int, default=625)
    ap.add_argument("--jobs", type=int, default=6000)
    ns = ap.parse_args()
    cfg = parse_config(
        "NUM_CPUS = 16\nMEMORY = 65536\nNUM_SLOTS_TYPE_1 = 16\nSLOT_TYPE_1 = 1/16\n"
        "SLOT_TYPE_1_PARTITIONABLE = False\n"
    )
    slots, private = [], []
    for i in range(ns.machines):
        m = Machine(f"node{i:05d}", cfg, "127.0.0.1:1", 0, 0.0)
        if i < ns.machines // 2:
            for ad in m.private_ads():
                g = m.request_claim(
                    ad.eval("Capability"),
                    ad.eval("Name"),
                    _job(1, "bob"),
                    "s0",
                    "<127.0.0.1:2>",
                    "bob@mockpool",
                    0.0,
                )
                m.activate(g.claim_id, _job(1, "bob"), 0.0)
        slots += m.public_ads(10.0)
        private += m.private_ads()
    req = _job(2, "alice")
    for k, v in {
        "AutoClusterId": 1,
        "Submitter": "alice@mockpool",
        "ResourceRequestCount": ns.jobs,
    }.items():
        req[k] = v
    requests = [ResourceRequest.from_ad(req, "schedd1", "127.0.0.1:3")]
    snapshot = CycleAds(slots, private)
    claimed = sum(1 for a in slots if a.eval("State") == "Claimed")
    print(f"slots {len(slots)} ({claimed} claimed by bob)  alice asks for {ns.jobs}")
    for label, text in RUNS.items():
        acct = Accountant(
            records={
                "alice@mockpool": SubmitterRecord(priority=0.5),
                "bob@mockpool": SubmitterRecord(priority=claimed),
            }
        )
        t = time.perf_counter()
        result = negotiate(snapshot, requests, acct, parse_config(text), 20.0)
        secs = time.perf_counter() - t
        preempting = sum(1 for m in result.matches if m.slot_ad.eval("State") == "Claimed")
        print(
            f"  {label:36s} matches {len(result.matches):6d}  preempting {preempting:6d}  "
            f"cycle {secs:.3f} s  {len(result.matches) / secs:,.0f} matches/s"
        )


if __name__ == "__main__":
    main()
