"""Pairs per second of the kernel and the scalar evaluator on Requirements built from the
policy functions (versionGE, version_in_range, stringListsIntersect, stringListSubsetMatch),
and the kernel's fallback count (0: they run inside the kernel, once per distinct value).

    python bench/policy_functions.py [--slots 100000] [--sample 5000] [--repeat 10]
"""

from __future__ import annotations

import argparse
import random
import time

import numpy as np

from mockpool.classad import ClassAd, evaluate, parse_expr
from mockpool.classad.kernel import CompiledExpr, KernelStats, SlotTable

CASES = {
    "versionGE": 'versionGE(TARGET.CondorVersionNumber, "10.0.0")',
    "version_in_range": 'version_in_range(TARGET.CUDADriverVersion, "11.0", "12.4")',
    "stringListsIntersect": 'stringListsIntersect(TARGET.SupportedProjects, "cms,atlas")',
    "stringListSubsetMatch": 'stringListSubsetMatch("avx,avx2", TARGET.CpuFeatures)',
    "stringListMember": 'stringListMember("cvmfs", TARGET.HasFileSystems)',
}


def make_slots(n: int, seed: int = 1) -> list[ClassAd]:
    rng = random.Random(seed)
    return [
        ClassAd(
            Name=f"slot1@exec{k:06d}",
            CondorVersionNumber=rng.choice(["9.0.17", "10.0.9", "23.0.3", "23.10.1", "24.0.1"]),
            CUDADriverVersion=rng.choice(["10.2", "11.4", "12.2", "12.10"]),
            SupportedProjects=rng.choice(["cms", "atlas,lhcb", "icecube", "", "lhcb alice"]),
            CpuFeatures=rng.choice(["sse4_1 avx avx2", "avx", "neon asimd", "avx,avx2,avx512f"]),
            HasFileSystems=rng.choice(["cvmfs,nfs", "nfs", "cvmfs,singularity,nfs", "singularity"]),
        )
        for k in range(n)
    ]


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--slots", type=int, default=100_000)
    ap.add_argument("--sample", type=int, default=5_000)
    ap.add_argument("--repeat", type=int, default=10)
    ns = ap.parse_args()
    slots = make_slots(ns.slots)
    table = SlotTable.from_ads(slots)
    job = ClassAd()
    print(f"slots: {ns.slots}")
    for name, text in CASES.items():
        compiled = CompiledExpr(parse_expr(text))
        stats = KernelStats()
        mask = compiled.requirements_mask(table, job, stats=stats)
        times = []
        for _ in range(ns.repeat):
            t = time.perf_counter()
            mask = compiled.requirements_mask(table, job)
            times.append(time.perf_counter() - t)
        med = float(np.median(times))
        sample = slots[: ns.sample]
        t = time.perf_counter()
        ours = [evaluate(text, job, s) is True for s in sample]
        dt = time.perf_counter() - t
        assert ours == list(mask[: ns.sample]), f"{name}: kernel and scalar evaluator disagree"
        print(
            f"{name:22s} kernel {ns.slots / med:12,.0f} pairs/s  scalar {len(sample) / dt:10,.0f} pairs/s"
            f"  matching {int(mask.sum()):6d}  fallbacks {stats.fallbacks}"
        )


if __name__ == "__main__":
    main()
