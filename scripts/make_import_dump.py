"""Write the condor_status -long / condor_q -long pair the import tests ship with.

    python scripts/make_import_dump.py [--out tests/data/import]

Runs a small pool in virtual time (deterministic: seed 7) until it is busy, then writes
``status.txt`` (every slot ad, as ``condor_status -long`` prints them: partitionable,
dynamic and static slots) and ``queue.txt`` (every job in the queue, as ``condor_q
-long``: running, idle and held). The pool:

- ``x86-01``, ``x86-02``: x86_64, one partitionable slot of 8 cpus and 16 GB, with the
  site attributes ``HasSingularity`` and ``Site`` (STARTD_ATTRS);
- ``arm-01``, ``arm-02``: aarch64, 4 static one-cpu slots;
- ``gpu-01``: x86_64, 16 cpus, two GPUs (the mock inventory: compute capability 7.5).

The jobs (30 in all): alice's 12 short jobs, bob's 10 two-cpu jobs in ``group_physics``,
carol's 3 GPU jobs, 3 of dave's aarch64 jobs, and 2 held jobs of alice's. A unit test
regenerates the files and compares them with the shipped ones.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from mockpool import Pool
from mockpool.cli.layouts import format_long, format_q_long
from mockpool.pool.spec import parse_spec

SPEC = """
[pool]
clock = "virtual"
seed = 7

[config]
NEGOTIATOR_INTERVAL = 60

[[startds]]
name = "x86-{:02d}"
count = 2
config = '''
NUM_CPUS = 8
MEMORY = 16384
HasSingularity = True
Site = "CHTC"
STARTD_ATTRS = $(STARTD_ATTRS) HasSingularity Site
'''

[[startds]]
name = "arm-{:02d}"
count = 2
config = '''
NUM_CPUS = 4
MEMORY = 8192
ARCH = AARCH64
SLOT_TYPE_0_PARTITIONABLE = False
'''

[[startds]]
name = "gpu-{:02d}"
count = 1
config = '''
use FEATURE : GPUs
NUM_CPUS = 16
MEMORY = 65536
MOCK_GPUS = 2
MOCK_GPU_CAPABILITY = 7.5
MOCK_GPU_DEVICE_NAME = Tesla T4
MOCK_GPU_MEMORY_MB = 15102
'''

[[submit]]
owner = "alice"
description = '''
executable = /bin/sleep
arguments = 900
request_memory = 1G
queue 12
'''

[[submit]]
owner = "bob"
description = '''
executable = /bin/sleep
arguments = 3600
request_cpus = 2
request_memory = 4G
accounting_group = group_physics
queue 10
'''

[[submit]]
owner = "carol"
description = '''
executable = /bin/sleep
arguments = 1800
request_gpus = 1
gpus_minimum_capability = 7.0
queue 3
'''

[[submit]]
owner = "dave"
description = '''
executable = /bin/sleep
arguments = 600
requirements = TARGET.Arch == "AARCH64"
queue 3
'''

[[submit]]
owner = "alice"
description = '''
executable = /bin/sleep
arguments = 60
hold = true
queue 2
'''
"""


def make_dumps() -> tuple[str, str]:
    """(condor_status -long text, condor_q -long text) of the pool at its busiest."""
    # submitted from a fixed folder (the jobs' Iwd), wherever the script runs
    with Pool(parse_spec(SPEC, "<import-dump>", base_dir=Path("/home/alice"))) as pool:
        pool.sleep_until(650.0)  # ten cycles, and two startd updates (UPDATE_INTERVAL 300)
        return format_long(pool.slots()), format_q_long(pool.jobs())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="tests/data/import")
    ns = ap.parse_args()
    out = Path(ns.out)
    out.mkdir(parents=True, exist_ok=True)
    status, queue = make_dumps()
    (out / "status.txt").write_text(status)
    (out / "queue.txt").write_text(queue)
    print(f"wrote {out / 'status.txt'} and {out / 'queue.txt'}")


if __name__ == "__main__":
    main()
