"""Pairs per second of the match kernel, the scalar evaluator and HTCondor's classad2.

A typical job Requirements (memory, cpus, disk, an arch/opsys compare and a
stringListMember) against N slot ads, on one core.

    python bench/match_kernel.py [--slots 100000] [--sample 5000] [--repeat 20]

The scalar evaluator and classad2 run on the first --sample slots (they are ~1000x
slower); the rate is pairs per second either way.
"""

from __future__ import annotations

import argparse
import random
import time

import numpy as np

from mockpool.classad import ClassAd, evaluate, parse_expr
from mockpool.classad.kernel import CompiledExpr, SlotTable

REQUIREMENTS = (
    "TARGET.Memory >= RequestMemory && TARGET.Cpus >= RequestCpus && TARGET.Disk >= RequestDisk"
    ' && TARGET.Arch == "X86_64" && TARGET.OpSys == "LINUX"'
    ' && stringListMember("cvmfs", TARGET.HasFileSystems)'
)


def make_slots(n: int, seed: int = 1) -> list[ClassAd]:
    rng = random.Random(seed)
    fs = ["cvmfs,nfs", "nfs", "cvmfs,singularity,nfs", "singularity", "cvmfs"]
    return [
        ClassAd(
            Name=f"slot1@exec{k:06d}",
            Memory=rng.choice([1024, 2048, 4096, 8192, 16384]),
            Cpus=rng.choice([1, 2, 4, 8]),
            Disk=rng.choice([10_000_000, 50_000_000, 100_000_000]),
            Arch=rng.choice(["X86_64", "x86_64", "aarch64"]),
            OpSys="LINUX",
            HasFileSystems=rng.choice(fs),
        )
        for k in range(n)
    ]


def job_ad() -> ClassAd:
    return ClassAd(
        RequestMemory=2048,
        RequestCpus=2,
        RequestDisk=20_000_000,
        Requirements=parse_expr(REQUIREMENTS),
    )


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--slots", type=int, default=100_000)
    ap.add_argument("--sample", type=int, default=5_000)
    ap.add_argument("--repeat", type=int, default=20)
    ns = ap.parse_args()

    slots = make_slots(ns.slots)
    job = job_ad()
    t0 = time.perf_counter()
    table = SlotTable.from_ads(slots)
    compiled = CompiledExpr(job.lookup("Requirements"))
    mask = compiled.requirements_mask(table, job)  # first call builds the columns
    build = time.perf_counter() - t0
    times = []
    for _ in range(ns.repeat):
        t = time.perf_counter()
        mask = compiled.requirements_mask(table, job)
        times.append(time.perf_counter() - t)
    best = min(times)
    med = float(np.median(times))
    print(f"slots: {ns.slots}, matching: {int(mask.sum())}")
    print(
        f"numpy kernel   : {ns.slots / med:14,.0f} pairs/s (median of {ns.repeat}; best {ns.slots / best:,.0f})"
        f"  [columns built in {build:.2f} s, once per snapshot]"
    )

    sample = slots[: ns.sample]
    req = job.lookup("Requirements")
    t = time.perf_counter()
    ours = [evaluate(req, job, s) is True for s in sample]
    dt = time.perf_counter() - t
    print(f"scalar (ours)  : {len(sample) / dt:14,.0f} pairs/s")
    assert ours == list(mask[: ns.sample]), "kernel and scalar evaluator disagree"

    try:
        import classad2
        import htcondor2  # noqa: F401  (switches on the daemons' semantics)
    except ImportError:
        print("classad2       : not installed (pip install htcondor)")
        return
    job2 = classad2.ClassAd({"RequestMemory": 2048, "RequestCpus": 2, "RequestDisk": 20_000_000})
    expr2 = classad2.ExprTree(REQUIREMENTS)
    sample2 = [classad2.ClassAd({k: s.eval(k) for k in s}) for s in sample]
    t = time.perf_counter()
    theirs = [expr2.eval(job2, s) is True for s in sample2]
    dt = time.perf_counter() - t
    print(f"classad2       : {len(sample2) / dt:14,.0f} pairs/s")
    assert theirs == ours, "classad2 and the scalar evaluator disagree"


if __name__ == "__main__":
    main()
