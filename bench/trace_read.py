"""Jobs per second of the trace readers and of loading a [[trace]] spec.

A trace of N jobs made by scripts/make_trace.py (the shipped trace's generator) is read
as condor_history -json, -long and SWF, then loaded as a spec (replay items, one submit
description per cluster).

    python bench/trace_read.py [--jobs 10000]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mockpool.pool.spec import parse_spec
from mockpool.pool.trace import read_trace

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jobs", type=int, default=10000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        script = str(ROOT / "scripts" / "make_trace.py")
        subprocess.run(
            [sys.executable, script, "--jobs", str(args.jobs), "--out", tmp],
            check=True,
            capture_output=True,
        )
        for name in ("history.json", "history.long", "history.swf"):
            t = time.perf_counter()
            n = len(read_trace(Path(tmp) / name).records)
            dt = time.perf_counter() - t
            print(f"read {name:<13} {n:>7} jobs  {dt:7.2f} s  {n / dt:>9,.0f} jobs/s")
        t = time.perf_counter()
        spec = parse_spec(
            '[[startds]]\ncount = 1\n[[trace]]\nfile = "history.json"\n',
            "bench.toml",
            base_dir=Path(tmp),
        )
        dt = time.perf_counter() - t
        print(
            f"load spec (json)   {spec.traces[0].jobs:>7} jobs  {dt:7.2f} s  "
            f"{spec.traces[0].jobs / dt:>9,.0f} jobs/s  ({len(spec.submits)} submits, "
            f"{len(spec.removals)} removals)"
        )


if __name__ == "__main__":
    main()
