"""Workload (a) of bench/virtual_run.py on mockpool's virtual clock and on LAPIS, in one run.

LAPIS (https://github.com/MatterMiners/lapis, PyPI ``lapis-sim``) is the simplest peer: a
discrete-event simulator of an HTCondor-like pool. Both run the same pool and the same
jobs: the spec is virtual_run.py's (a), 500 machines of 8 one-cpu static slots, 20,000
one-cpu jobs of 60-1200 s (uniform) all submitted at 0, NEGOTIATOR_INTERVAL 60, run until
the last job ends. LAPIS gets one static pool of as many drones (machines) with the
machines' cpus and memory, and an HTCondor-style job trace (its ``htcondor`` csv reader)
of the very jobs mockpool generates for that spec and seed (mockpool.pool.workload's
``generate``): the same requests and durations; its scheduler's interval is 60 s too.
LAPIS's reader keeps whole seconds only, so the trace holds each duration rounded to the
second (within 0.5 s of mockpool's).

LAPIS runs in a venv of its own, in a subprocess, through its own command line
(``python -m lapis.cli.simulate ... static --job-file ... --pool-file ...``):

    python -m venv .venv-lapis && .venv-lapis/bin/pip install lapis-sim

    python bench/lapis_compare.py                              # (a): 500 machines, 20,000 jobs
    python bench/lapis_compare.py --machines 100 --jobs 4000   # a quick look

``--lapis-python PATH`` names LAPIS's interpreter (default: $LAPIS_PYTHON, else
.venv-lapis/bin/python under the repository). Without LAPIS the bench says in one line
how to install it, and prints mockpool's figures alone.

It prints, for each: jobs completed, pool seconds until the last job ended, wall seconds
with start-up included (reading the spec or the input files and building the pool; the
interpreter's start and the imports are shown apart, as "imports"), jobs completed per
wall second and peak memory; then the ratio of the two jobs-per-wall-second figures
(mockpool / LAPIS).

What LAPIS does not model, so what its figure does not pay for: no fair share (no
accountant, no user priorities: one queue served first come first served), no claims
(no claim, activation, keepalive or claim reuse: a drone just runs what the scheduler
puts on it, and a finished job's resources wait for the next scheduler interval), no
Requirements or Rank (a job fits a drone by its requested cpus, memory and disk alone),
no ClassAds, daemons, messages, job queue or history, and no faults.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
VENV = ROOT / ".venv-lapis"
INSTALL = f"python -m venv {VENV} && {VENV}/bin/pip install lapis-sim"

# In LAPIS's interpreter: its own command line, with the imports timed apart.
LAPIS_DRIVER = """
import sys, time
t0 = time.perf_counter()
from lapis.cli.simulate import cli
t1 = time.perf_counter()
cli.main(args=sys.argv[1:], standalone_mode=False)
t2 = time.perf_counter()
print(f"lapis-compare: imports {t1 - t0:.6f} run {t2 - t1:.6f}")
"""


def lapis_python(given: str | None) -> Path:
    """LAPIS's interpreter: ``--lapis-python``, else $LAPIS_PYTHON, else the repository's
    .venv-lapis (which may not exist)."""
    chosen = given or os.environ.get("LAPIS_PYTHON")
    return Path(chosen) if chosen else VENV / "bin" / "python"


def lapis_missing(python: Path) -> str | None:
    """Why LAPIS cannot run with ``python`` (None: it can)."""
    if not python.is_file():
        return f"no interpreter at {python}"
    probe = subprocess.run(
        [str(python), "-c", "import lapis.cli.simulate"], capture_output=True, text=True
    )
    if probe.returncode != 0:
        last = (probe.stderr.strip().splitlines() or ["import failed"])[-1]
        return f"{python} cannot import lapis.cli.simulate ({last})"
    return None


def lapis_inputs(spec: Any) -> tuple[str, str, int]:
    """LAPIS's pool file and job file (both its ``htcondor`` csv format) for ``spec``'s
    machines and generated jobs, and the number of jobs.

    Pool: a row per machine group (Count drones of TotalSlotCPUs, TotalSlotMemory MiB and
    TotalSlotDisk MiB, enough disk never to bind before cpus do). Jobs: a row per job,
    QDate its submit time, its requests (RequestMemory in MiB, RequestDisk in KiB), and
    what it uses: its duration in whole seconds (RemoteWallClockTime; LAPIS's reader keeps
    no fraction, so the duration is rounded), one busy cpu (RemoteUserCpu = the duration)
    and its requested memory and disk."""
    from mockpool.pool.workload import generate

    clusters = generate(spec.workloads, spec.seed)
    disk_kb = max((c.disk for c in clusters), default=1)
    pool = ["Count TotalSlotCPUs TotalSlotDisk TotalSlotMemory"]
    for group in spec.startds:
        cpus = group.config.get_int("NUM_CPUS")
        memory = group.config.get_int("MEMORY")
        disk_mib = math.ceil(cpus * disk_kb / 1024)
        pool.append(f"{len(group.names)} {cpus} {disk_mib} {memory}")
    jobs = [
        "QDate RequestCpus RequestWalltime RequestMemory RequestDisk"
        " RemoteWallClockTime RemoteUserCpu RemoteSysCpu MemoryUsage DiskUsage_RAW"
    ]
    for c in clusters:
        for duration in c.durations:
            d = max(1, round(duration))
            jobs.append(f"{c.at:g} {c.cpus} {d} {c.memory} {c.disk} {d} {d} 0 {c.memory} {c.disk}")
    return "\n".join(pool) + "\n", "\n".join(jobs) + "\n", len(jobs) - 1


def run_lapis(python: Path, folder: Path, seed: int) -> dict[str, float]:
    """Run LAPIS on ``folder``'s lapis-pool.csv and lapis-jobs.csv: its pool seconds, wall
    seconds with start-up (reading the files, building the pool), its imports' and the
    whole process' wall seconds (interpreter start included), and its peak memory."""
    argv = [
        str(python),
        "-c",
        LAPIS_DRIVER,
        "--seed",
        str(seed),
        "static",
        "--job-file",
        str(folder / "lapis-jobs.csv"),
        "htcondor",
        "--pool-file",
        str(folder / "lapis-pool.csv"),
        "htcondor",
    ]
    t0 = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True)
    process = time.perf_counter() - t0
    finished = re.search(r"Finished simulation at ([\d.]+)", proc.stdout)
    timed = re.search(r"lapis-compare: imports ([\d.]+) run ([\d.]+)", proc.stdout)
    if proc.returncode != 0 or finished is None or timed is None:
        sys.exit(
            f"LAPIS failed (exit {proc.returncode}): {shlex.join(argv[:2])} ...\n"
            f"{proc.stdout}\n{proc.stderr}"
        )
    return {
        "pool_seconds": float(finished.group(1)),
        "wall": float(timed.group(2)),
        "imports": float(timed.group(1)),
        "process": process,
        # the largest child's: LAPIS's, the probe's is far smaller
        "peak_mib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
    }


def report(name: str, jobs: int, pool_s: float, wall: float, imports: str, peak: float) -> None:
    print(f"{name}:")
    print(f"  jobs completed {jobs}, pool seconds until the last ended {pool_s:.0f}")
    print(f"  wall seconds (start-up included) {wall:.1f}; {imports}")
    print(f"  jobs completed per wall second {jobs / wall:.0f}")
    print(f"  peak memory {peak:.0f} MiB")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--machines", type=int, default=500, help="machines of 8 one-cpu slots")
    ap.add_argument("--jobs", type=int, default=20_000, help="jobs submitted at 0")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--lapis-python", help="LAPIS's interpreter (default: see above)")
    ap.add_argument("--out", help="keep LAPIS's input files and mockpool's output here")
    ap.add_argument(
        "--outputs",
        action="store_true",
        help="mockpool writes its outputs, as `mockpool run` does (default: the kernel alone)",
    )
    ns = ap.parse_args()

    t0 = time.perf_counter()
    import virtual_run  # bench/, beside this file: workload (a), and mockpool

    from mockpool.pool.spec import parse_spec

    mockpool_imports = time.perf_counter() - t0
    text = virtual_run.batch_spec(ns.machines, ns.jobs, ns.seed)
    spec = parse_spec(text, "<bench lapis_compare>")
    interval = spec.config.get_int("NEGOTIATOR_INTERVAL")
    assert interval == 60, f"LAPIS's scheduler runs every 60 s, the spec's negotiator {interval}"
    print(
        f"workload (a): {ns.machines} machines of 8 one-cpu slots, {ns.jobs} one-cpu jobs "
        f"of 60-1200 s at 0, seed {ns.seed}"
    )

    python = lapis_python(ns.lapis_python)
    missing = lapis_missing(python)
    lapis: dict[str, float] | None = None
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(ns.out) if ns.out else Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        if missing is None:
            pool_csv, jobs_csv, lapis_jobs = lapis_inputs(spec)
            (folder / "lapis-pool.csv").write_text(pool_csv)
            (folder / "lapis-jobs.csv").write_text(jobs_csv)
            lapis = run_lapis(python, folder, ns.seed)
        if not ns.outputs:
            summary, wall = virtual_run.kernel_run(text, "<bench lapis_compare>")
        else:
            summary, wall = virtual_run.timed_run(
                text, "<bench lapis_compare>", folder / "mockpool"
            )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    done = summary["jobs"].get("Completed", 0)
    report(
        f"mockpool (virtual clock{', outputs written' if ns.outputs else ''})",
        done,
        summary["pool_seconds"],
        wall,
        f"imports {mockpool_imports:.1f} s",
        peak,
    )
    if lapis is None:
        print(f"LAPIS: not run ({missing}); install it: {INSTALL} (or --lapis-python PATH)")
        return 0
    report(  # LAPIS's run ends once its scheduler has no job queued or running: all done
        f"LAPIS ({python})",
        lapis_jobs,
        lapis["pool_seconds"],
        lapis["wall"],
        f"imports {lapis['imports']:.1f} s, whole process {lapis['process']:.1f} s",
        lapis["peak_mib"],
    )
    ratio = (done / wall) / (lapis_jobs / lapis["wall"])
    print(f"ratio mockpool / LAPIS, jobs per wall second: {ratio:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
