"""A pool spec on the simulation kernel: the cores stepped directly give what the same
cores give on the virtualised event loop (the live shells over the in-process network).

The one difference is the start: the event-loop driver polls for the daemons' first
ads in steps of 0.05 pool seconds, so everything it records after the start comes 0.05 s
later; the kernel waits for them exactly. Within one instant the order of events may differ (the
kernel delivers in the order messages are sent: a schedd's acknowledgement of its
matches reaches the negotiator before its claim requests reach the startds, where the
event loop ran whichever task came first); each instant's events are the same.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

from mockpool.eventkinds import event_problem
from mockpool.kernel.pool import KernelPool
from mockpool.pool.api import run_pool
from mockpool.pool.spec import parse_spec

SPEC = """
[pool]
clock = "virtual"
duration = 100000
until_done = true
seed = {seed}

[config]
NEGOTIATOR_INTERVAL = 60

[[startds]]
count = 4
config = '''
NUM_CPUS = 4
SLOT_TYPE_0_PARTITIONABLE = False
'''

[[schedds]]
count = 2

[[workload]]
name = "a"
owner = "alice"
schedd = 0
jobs = 30
duration = {{ dist = "uniform", low = 60, high = 900 }}

[[workload]]
name = "b"
owner = "bob"
schedd = 1
jobs = 20
duration = {{ dist = "uniform", low = 60, high = 900 }}
"""


def _key(e: dict) -> tuple:
    return (round(float(e["t"]), 3), e["daemon"], e["kind"], e.get("job"), e.get("slot"))


def test_a_runs_events_file_holds_every_event_the_kernel_recorded(tmp_path: Path) -> None:
    text = SPEC.format(seed=5)
    pool = KernelPool(parse_spec(text, "<kernel>"))
    pool.start()
    pool.run(100000, until_done=True)
    assert pool.jobs_in_queue() == 0 and not pool.workload_errors
    kernel = Counter(_key(e) for e in pool.kernel.events)

    run_pool(parse_spec(text, "<run>"), tmp_path / "out")
    lines = (tmp_path / "out" / "events.jsonl").read_text().splitlines()
    written = Counter(_key(json.loads(line)) for line in lines)
    assert sum(1 for k in kernel if k[2] == "job_completed") == 50
    assert kernel == written
    both = pool.kernel.events + [json.loads(line) for line in lines]
    assert [p for e in both if (p := event_problem(e))] == []


def test_a_kernel_run_is_the_same_run_twice() -> None:
    def run() -> list[dict]:
        pool = KernelPool(parse_spec(SPEC.format(seed=9), "<kernel>"))
        pool.start()
        pool.run(100000, until_done=True)
        return pool.kernel.events

    first = run()
    assert first == run()
    assert any(e["kind"] == "job_completed" for e in first)


PROGRAM = """
import sys
from mockpool.kernel.pool import KernelPool
pool = KernelPool(spec)
pool.start()
pool.run(600)
assert sum(e["kind"] == "job_completed" for e in pool.kernel.events) == 2
print(sorted(m for m in ("asyncio", "grpc", "ray") if m in sys.modules))
"""


def test_a_kernel_run_imports_no_asyncio_grpc_or_ray(run_two_jobs_in_a_child) -> None:
    assert run_two_jobs_in_a_child(PROGRAM) == "[]"


LOGGED = """
[pool]
clock = "virtual"
duration = 2000

[[startds]]
count = 1

[[schedds]]
count = 1

[[submit]]
at = 0
schedd = 0
owner = "alice"
description = '''
executable = /bin/sleep
arguments = 100
log = {log}
queue 3
'''
"""


def _codes(path: Path) -> list[str]:
    """The event codes of a job event log, in order (``000 (001.000.000) ...``)."""
    return [line.split()[0] for line in path.read_text().splitlines() if line[:3].isdigit()]


def test_a_kernel_run_writes_each_jobs_event_log(tmp_path: Path) -> None:
    kernel_log = tmp_path / "kernel.log"
    pool = KernelPool(parse_spec(LOGGED.format(log=kernel_log), "<kernel>"))
    pool.start()
    pool.run(2000)
    # three submitted (000); one slot (one cpu): each runs (001) and ends (005) in turn
    assert _codes(kernel_log) == ["000"] * 3 + ["001", "005"] * 3


def test_a_job_event_log_that_cannot_be_written_is_said_once(tmp_path: Path) -> None:
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("")
    pool = KernelPool(parse_spec(LOGGED.format(log=blocked / "job.log"), "<kernel>"))
    pool.start()
    pool.run(2000)
    failed = [e for e in pool.kernel.events if e["kind"] == "user_log_failed"]
    assert [e["job"] for e in failed] == ["1.0"]
    assert sum(e["kind"] == "job_completed" for e in pool.kernel.events) == 3


FAULT_HEAVY = Path(__file__).parents[1] / "data" / "determinism" / "fault_heavy.toml"


def test_a_fault_heavy_pool_on_the_kernel_keeps_every_invariant(tmp_path: Path) -> None:
    from mockpool.pool.check import check_dir
    from mockpool.pool.spec import load_spec

    summary = run_pool(load_spec(FAULT_HEAVY), tmp_path / "out")
    report = check_dir(tmp_path / "out")
    assert report.ok, [str(v) for v in report.violations]
    lines = (tmp_path / "out" / "events.jsonl").read_text().splitlines()
    events = [json.loads(line) for line in lines]
    kinds = {e["fault"] for e in events if e["kind"] == "fault_start"}
    assert kinds == {"crash", "restart", "pause", "partition", "drop"}
    assert [p for e in events if (p := event_problem(e))] == []
    assert sum(e["kind"] == "daemon_restarted" for e in events) >= 3
    assert summary["jobs"]["Completed"] + len(summary["workload_errors"]) == 70


def test_a_fault_heavy_kernel_run_gives_identical_bytes_under_four_hash_seeds(
    tmp_path: Path,
) -> None:
    outs = []
    for hashseed in ("0", "1", "2", "3"):
        out = tmp_path / f"h{hashseed}"
        cmd = [sys.executable, "-m", "mockpool.cli.main", "run", str(FAULT_HEAVY)]
        cmd += ["--out", str(out)]
        env = {**os.environ, "PYTHONHASHSEED": hashseed}
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
        assert proc.returncode == 0, proc.stderr[-2000:]
        outs.append(((out / "events.jsonl").read_bytes(), (out / "NegotiatorLog").read_bytes()))
    assert all(o == outs[0] for o in outs[1:])
    assert outs[0][0].count(b'"daemon_died"') >= 3


SKEW_AND_DELAY = """
[pool]
clock = "virtual"
duration = 1500
seed = 3

[config]
NEGOTIATOR_INTERVAL = 60

[[startds]]
count = 2
config = "NUM_CPUS = 4"

[[schedds]]
count = 1

[[workload]]
name = "w"
owner = "alice"
jobs = 8
duration = 200

[[submit]]
at = 100
schedd = 0
owner = "bob"
description = "executable = /bin/sleep\\narguments = 100\\nqueue 8\\n"

[[faults]]
kind = "skew"
target = "exec0001"
skew = 30
at = 100
duration = 400

[[faults]]
kind = "delay"
target = "schedd1"
peer = "exec0002"
delay = 4
at = 50
duration = 600

[[faults]]
kind = "delay"
target = "schedd1"
peer = "collector"
delay = 12
at = 150
duration = 100
"""


def test_skew_and_delay_faults_act_on_the_kernel(tmp_path: Path) -> None:
    from mockpool.pool.check import check_dir

    summary = run_pool(parse_spec(SKEW_AND_DELAY, "<kernel>"), tmp_path / "out")
    assert check_dir(tmp_path / "out").ok
    assert summary["jobs"]["Completed"] == 16
    lines = (tmp_path / "out" / "events.jsonl").read_text().splitlines()
    events = [json.loads(line) for line in lines]
    faults = [(e["kind"], e["fault"]) for e in events if e["kind"].startswith("fault_")]
    assert faults.count(("fault_start", "delay")) == 2 and ("fault_end", "skew") in faults
    # a claim made through the 4 s delay: the schedd's request reached the startd actor
    # later than its match (both at the cycle's instant without the fault)
    cycles = [e["t"] for e in events if e["kind"] == "cycle"]
    claimed = [e["t"] for e in events if e["kind"] == "claim"]

    def after_cycle(t: float) -> float:
        return t - max(c for c in cycles if c <= t)

    assert claimed and all(after_cycle(t) == 0 for t in claimed if t < 50)
    assert any(after_cycle(t) >= 4 for t in claimed if 50 < t < 650)
    # the negotiator's requests to the schedd delayed past the deadline: a failed schedd
    log = (tmp_path / "out" / "NegotiatorLog").read_text()
    assert "Failed to connect to schedd1" in log
