"""Pools in virtual time: the same daemons in one process, a clock that jumps ahead.

No Ray here: every pool runs in the test's process on the simulation kernel.
"""

from __future__ import annotations

import gc
import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mockpool import Pool, gctune
from mockpool.negotiator.log import NegotiatorLog
from mockpool.pool.api import run_pool
from mockpool.pool.check import check_dir
from mockpool.pool.spec import load_spec, parse_spec
from mockpool.pool.specmodel import SpecError

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def _events(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]


def test_pslot_example_gives_the_seed_numbers(tmp_path: Path) -> None:
    spec = load_spec(EXAMPLES / "pslot.toml")
    spec.clock = "virtual"
    summary = run_pool(spec, tmp_path / "out")
    cycles = NegotiatorLog((tmp_path / "out" / "NegotiatorLog").read_text().splitlines()).cycles
    assert len(cycles[0].matches) == 10
    assert summary["jobs"]["Completed"] == 15 and summary["jobs_submitted"] == 15
    assert check_dir(tmp_path / "out").ok
    # 60 s jobs, NEGOTIATOR_INTERVAL 60: ten start in the first cycle, five in the third
    # (the second comes before the first ten end); every job runs exactly 60 pool s.
    events = _events(tmp_path / "out")
    exits = [e for e in events if e["kind"] == "job_exit"]
    first = [e["t"] for e in events if e["kind"] == "cycle"]
    assert [round(b - a, 6) for a, b in itertools.pairwise(first)] == [60.0] * 4
    assert len({e["job"] for e in exits}) == 15


def _run_cli(spec: Path, out: Path, *args: str, hashseed: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONHASHSEED": hashseed}
    return subprocess.run(
        [sys.executable, "-m", "mockpool.cli.main", "run", str(spec), "--out", str(out), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


@pytest.mark.parametrize("example", ["pslot.toml", "workload.toml"])
def test_same_spec_and_seed_give_identical_bytes(tmp_path: Path, example: str) -> None:
    # Two processes with different string hashing: nothing may depend on set order.
    outs = []
    for i, hashseed in enumerate(("1", "2")):
        out = tmp_path / f"run{i}"
        proc = _run_cli(EXAMPLES / example, out, "--clock", "virtual", hashseed=hashseed)
        assert proc.returncode == 0, proc.stderr
        outs.append(out)
    for name in ("events.jsonl", "NegotiatorLog"):
        a, b = ((o / name).read_bytes() for o in outs)
        assert a == b, name
        assert a  # not two empty files


def test_a_fault_heavy_pool_gives_identical_bytes_under_four_hash_seeds(tmp_path: Path) -> None:
    # Startd crashes that take several claims at once (their schedd learns of the lost
    # claims at one instant), a schedd restart, pauses, partitions, drops and delays: no
    # order may come from a set of strings. Two runs at a time, one per core.
    spec = ROOT / "tests" / "data" / "determinism" / "fault_heavy.toml"
    env = dict(os.environ)
    runs = []
    for pair in (("0", "1"), ("2", "3")):
        procs = []
        for hashseed in pair:
            out = tmp_path / f"run{hashseed}"
            cmd = [sys.executable, "-m", "mockpool.cli.main", "run", str(spec), "--out", str(out)]
            procs.append(
                subprocess.Popen(
                    cmd,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                    text=True,
                    env={**env, "PYTHONHASHSEED": hashseed},
                )
            )
        for proc in procs:
            _, err = proc.communicate(timeout=300)
            assert proc.returncode == 0, err
        runs.extend(tmp_path / f"run{h}" for h in pair)
    events = (runs[0] / "events.jsonl").read_text()
    for kind in ("claim_lost", "daemon_died", "fault_start"):
        assert f'"kind":"{kind}"' in events, kind  # the faults did happen
    for name in ("events.jsonl", "NegotiatorLog"):
        first = (runs[0] / name).read_bytes()
        for other in runs[1:]:
            assert (other / name).read_bytes() == first, (name, other.name)


def _allocation_and_claims(seed: int) -> tuple[list[tuple[str, str]], list[str]]:
    with Pool(EXAMPLES / "pslot.toml", clock="virtual", seed=seed) as pool:
        pool.sleep_until(30)
        claims = sorted(str(a.get_value("Capability")) for a in pool.ads("MachinePrivate"))
        matches = [(m.job, m.slot) for c in pool.negotiator_log.cycles for m in c.matches]
    return matches, claims


def test_a_different_seed_changes_claim_ids_and_not_the_allocation() -> None:
    m1, c1 = _allocation_and_claims(1)
    m1b, c1b = _allocation_and_claims(1)
    m2, c2 = _allocation_and_claims(2)
    assert len(m1) == 10 and m1 == m2 == m1b
    assert c1 == c1b  # seeded: a replay has the same secrets
    # same public part (address, birthday, sequence), other secrets
    assert [c.rsplit("#", 1)[0] for c in c1] == [c.rsplit("#", 1)[0] for c in c2]
    assert not set(c1) & set(c2)


def test_until_done_stops_when_the_queue_is_empty(tmp_path: Path) -> None:
    spec = load_spec(EXAMPLES / "pslot.toml")
    spec.clock, spec.duration, spec.until_done = "virtual", 1_000_000.0, True
    summary = run_pool(spec, tmp_path / "out")
    assert summary["jobs"]["Completed"] == 15
    last_exit = max(e["t"] for e in _events(tmp_path / "out") if e["kind"] == "job_exit")
    # the run ends within a step (one pool second) of the last job leaving the queue
    assert last_exit <= summary["pool_seconds"] <= last_exit + 1.0 + 1e-6


def _cycle_durations(spec_text: str) -> list[float]:
    spec = parse_spec(spec_text, "<test>", base_dir=EXAMPLES)
    with Pool(spec) as pool:
        pool.sleep_until(200)
        pool.drain()
        return [e["duration"] for e in pool.events if e["kind"] == "cycle"]


PSLOT = (EXAMPLES / "pslot.toml").read_text()


def test_a_cycle_is_charged_per_slot_and_per_match() -> None:
    text = PSLOT.replace(
        "seed = 1",
        'seed = 1\nclock = "virtual"\ncycle_cost = { per_slot = 0.5, per_match = 1.0 }',
    )
    durations = _cycle_durations(text)
    # cycle 1: one p-slot in the snapshot, 10 matches -> 0.5 + 10 = 10.5 pool s; cycle 2
    # sees the p-slot and its 10 dynamic slots and matches nothing -> 11 x 0.5 = 5.5.
    assert durations[:2] == [10.5, 5.5]


def test_a_free_cycle_takes_no_pool_time() -> None:
    durations = _cycle_durations(PSLOT.replace("seed = 1", 'seed = 1\nclock = "virtual"'))
    assert durations and set(durations) == {0.0}


def test_time_stands_still_between_api_calls(mockpool_virtual_factory) -> None:  # type: ignore[no-untyped-def]
    pool = mockpool_virtual_factory(EXAMPLES / "pslot.toml")
    t0 = pool.now
    for _ in range(3):
        assert pool.jobs("JobStatus == 1")  # queries take no pool time
    assert pool.now == t0
    assert pool.wait(lambda: len(pool.jobs("JobStatus == 4", history=True)) == 15, timeout=10)
    assert 125 <= pool.now < 200  # the last five jobs run from the third cycle (~125 s)


def test_wait_gives_up_after_its_timeout_in_pool_time(mockpool_virtual_factory) -> None:  # type: ignore[no-untyped-def]
    pool = mockpool_virtual_factory(EXAMPLES / "pslot.toml", time_scale=10)
    t0 = pool.now
    assert not pool.wait(lambda: False, timeout=3)
    assert pool.now == pytest.approx(t0 + 30)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--clock", "sundial"], "invalid choice: 'sundial'"),
        (["--clock", "virtual", "--time-dilation", "-1"], "time dilation must be"),
        (["--clock", "virtual", "--time-dilation", "fast"], "time dilation must be a number"),
        (["--clock", "virtual", "--time-dilation", "nan"], "time dilation must be"),
    ],
)
def test_bad_clock_options_are_refused_before_anything_starts(
    tmp_path: Path, args: list[str], message: str
) -> None:
    out = tmp_path / "out"
    proc = _run_cli(EXAMPLES / "pslot.toml", out, *args, hashseed="0")
    assert proc.returncode == 2
    assert message in proc.stderr
    assert not out.exists()


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('clock = "sundial"', "clock: must be one of live, virtual"),
        ("cycle_cost = { cpu_factor = -2 }", "cpu_factor must be a finite number >= 0"),
        ('cycle_cost = { per_match = "1" }', "per_match must be a number"),
        ("cycle_cost = { cpu_factor = 1, per_slot = 1 }", "cannot be combined"),
        ("cycle_cost = { per_hour = 1 }", "unknown key 'per_hour'"),
        ("latency = -0.1", "latency: must be >= 0"),
    ],
)
def test_bad_clock_settings_in_a_spec_name_their_line(line: str, message: str) -> None:
    text = PSLOT.replace("seed = 1", f"seed = 1\n{line}")
    with pytest.raises(SpecError, match=message) as e:
        parse_spec(text, "pool.toml")
    assert str(e.value).startswith("pool.toml:11:")


def test_a_virtual_pool_paces_the_collector_while_it_runs_and_gives_it_back() -> None:
    mine = (900, 11, 12)
    before = gc.get_threshold()
    gc.set_threshold(*mine)
    try:
        spec = load_spec(EXAMPLES / "pslot.toml")
        with Pool(spec, clock="virtual") as pool:
            assert gc.get_threshold() == gctune.VIRTUAL_THRESHOLDS
            pool.sleep_until(60)
        assert gc.get_threshold() == mine
    finally:
        gc.set_threshold(*before)


LATE_SUBMIT = """
[pool]
clock = "virtual"
duration = 700
seed = 1

[config]
NEGOTIATOR_INTERVAL = 300
{extra}

[[startds]]
name = "exec{{:04d}}"
count = 2

[[schedds]]
count = 1

[[submit]]
at = 100
owner = "alice"
description = \"\"\"
executable = /bin/sleep
arguments = 60
queue 2
\"\"\"
"""


@pytest.mark.parametrize(
    ("extra", "started"),
    [
        ("", 100.0),
        # the schedd asks on its own: idle jobs where its last ads showed none
        ('SUBMIT_SEND_RESCHEDULE = "False"', 100.0),
        ('SCHEDD_SEND_RESCHEDULE = "False"', 300.0),
    ],
)
def test_a_submit_gets_a_cycle_once_the_schedds_ads_are_out(
    tmp_path: Path, extra: str, started: float
) -> None:
    # HTCondor's schedd sends its Submitter ad, then RESCHEDULE: the cycle that a submit
    # at 100 asks for sees alice and starts her jobs at 100, not at the next interval
    # (300). Without the reschedule they wait for it.
    run_pool(parse_spec(LATE_SUBMIT.format(extra=extra), "late.toml"), tmp_path / "out")
    events = _events(tmp_path / "out")
    starts = sorted(e["start"] for e in events if e["kind"] == "activate")
    assert starts == [started, started]
    cycles = [(e["start"], e["matches"]) for e in events if e["kind"] == "cycle"]
    assert (started, 2) in cycles


def test_a_pool_with_network_latency_runs_and_answers_while_held(
    mockpool_virtual_factory,  # type: ignore[no-untyped-def]
) -> None:
    # Messages between daemons take 0.5 pool s each way; the driver's own calls (queries
    # while time is held, the run's final collection) arrive at once, or they never would.
    latency = 0.5
    pool = mockpool_virtual_factory(EXAMPLES / "pslot.toml", latency=latency)
    t0 = pool.now
    assert len(pool.jobs("JobStatus == 1")) == 15
    assert pool.now == t0
    assert pool.wait(lambda: len(pool.jobs("JobStatus == 4", history=True)) == 15, timeout=400)
    events = pool.events
    matched = {e["job"]: e["t"] for e in events if e["kind"] == "job_matched"}
    started: dict[str, float] = {}
    for e in events:
        if e["kind"] == "activate":
            started.setdefault(e["job"], e["t"])
    assert len(started) == 15 and set(matched) <= set(started)
    # the schedd, told of the match, claims the slot (there and back) and activates the
    # claim: three one-way messages
    assert {round(started[j] - matched[j], 9) for j in matched} == {3 * latency}


def test_a_virtual_runs_events_keep_the_order_they_happened_in_across_daemons(
    tmp_path: Path,
) -> None:
    # Every hop of a job's start happens at one pool time (no latency): the file must
    # still read cause before effect, whichever actors the daemons live in.
    spec = load_spec(EXAMPLES / "pslot.toml")
    spec.clock, spec.until_done, spec.duration = "virtual", True, 100_000.0
    run_pool(spec, tmp_path / "out")
    order = ("job_matched", "claim", "claim_held", "activate", "job_started", "job_exit")
    seen: dict[str, list[str]] = {}
    for e in _events(tmp_path / "out"):
        if e["kind"] in order and "job" in e:
            seen.setdefault(e["job"], []).append(e["kind"])
    first = {job: kinds for job, kinds in seen.items() if "job_matched" in kinds}
    assert len(first) == 10  # the ten the first cycle matched (the rest reuse claims)
    for job, kinds in first.items():
        assert kinds[: len(order)] == list(order), job


def test_a_restart_and_a_call_after_it_take_no_pool_time(mockpool_virtual_factory) -> None:  # type: ignore[no-untyped-def]
    # With latency 0.5 the restarted schedd's new address still reaches the collector at
    # once for the caller: a call through the API takes no pool time, and a submit to that
    # schedd right after the restart finds it.
    pool = mockpool_virtual_factory(EXAMPLES / "pslot.toml", latency=0.5)
    before = pool.now
    pool.restart("schedd1")
    cluster, procs = pool.submit(
        "executable = /bin/sleep\narguments = 5\nqueue 2", owner="bob", schedd="schedd1"
    )
    assert procs == 2 and cluster > 1
    pool.jobs()
    assert pool.now == before
    assert [e["kind"] for e in pool.events if e["kind"] == "daemon_restarted"] == [
        "daemon_restarted"
    ]
