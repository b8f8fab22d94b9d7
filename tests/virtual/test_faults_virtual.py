"""Faults in virtual time: crashes, restarts, pauses, partitions and a seeded chaos run,
each checked by the invariant checker. Times are pool seconds, exact on the virtual clock."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from mockpool import Pool
from mockpool.pool.check import Report, check, check_dir
from mockpool.pool.faultkinds import FaultError
from mockpool.pool.faults import contradicts
from mockpool.pool.spec import parse_spec
from mockpool.pool.specmodel import SpecError


@pytest.fixture
def check_pool():  # type: ignore[no-untyped-def]
    """The invariant checker over a running pool's events and its final ads."""

    def run(pool: Pool) -> Report:
        events = list(enumerate(pool.events, 1))
        queue, history = [], []
        for name in pool.spec.schedd_names:
            queue += pool.jobs(schedd=name)
            history += pool.jobs(schedd=name, history=True)
        return check(events, queue, history, pool.slots())

    return run


def kinds(events: list[dict], *wanted: str) -> list[dict]:
    return [e for e in events if e["kind"] in wanted]


LEASE = 120  # keepalives every min(300, 120 / 3) = 40


def spec(extra: str = "", *, jobs: int = 4, length: int = 300, machines: int = 2) -> str:
    return f"""
[pool]
clock = "virtual"
seed = 3

[config]
NEGOTIATOR_INTERVAL = 20
UPDATE_INTERVAL = 30
CLASSAD_LIFETIME = 90
SCHEDD_INTERVAL = 60

[[startds]]
count = {machines}
machines_per_actor = 1
config = "NUM_CPUS = 2"

[[schedds]]
count = 2
per_actor = 1

[[submit]]
at = 0
owner = "alice"
description = '''
executable = /bin/sleep
arguments = {length}
job_lease_duration = {LEASE}
queue {jobs}
'''
{extra}
"""


def runs(events: list[dict]) -> dict[str, list[str]]:
    """Job -> the slots its startd-side runs ended on (job_exit from startds)."""
    out: dict[str, list[str]] = {}
    for e in events:
        if e["kind"] == "job_exit" and e["daemon"].startswith("exec"):
            out.setdefault(e["job"], []).append(e["slot"])
    return out


def test_schedd_restarted_within_the_lease_reconnects_every_job(check_pool) -> None:
    with Pool(parse_spec(spec(), "<t>")) as pool:
        pool.sleep_until(60)
        assert len(pool.jobs("JobStatus == 2")) == 4
        started = {j.eval("ClusterId"): j.eval("RemoteHost") for j in pool.jobs()}
        started = {f"1.{j.eval('ProcId')}": j.eval("RemoteHost") for j in pool.jobs()}
        pool.crash("schedd1")
        pool.sleep_until(100)  # down 40 s, well within the 120 s lease
        pool.restart("schedd1")
        pool.sleep_until(700)
        events = pool.events
        assert pool.jobs() == [] and len(pool.jobs(history=True)) == 4
        report = check_pool(pool)
    assert report.violations == []
    assert len(kinds(events, "job_reconnected")) == 4
    assert kinds(events, "lease_expired", "reconnect_failed", "claim_lost") == []
    # each job finished exactly once, on the slot it started on
    assert runs(events) == {j: [slot] for j, slot in started.items()}
    died, back = kinds(events, "daemon_died")[0], kinds(events, "daemon_restarted")[0]
    assert (died["t"], died["daemons"], back["t"], back["down"]) == (60, ["schedd1"], 100, 40)


def test_schedd_down_past_the_lease_its_claims_expire_then_its_jobs_run_again(check_pool) -> None:
    with Pool(parse_spec(spec(), "<t>")) as pool:
        pool.sleep_until(60)
        pool.crash("schedd1")
        killed = pool.now
        pool.sleep_until(killed + LEASE + 60)
        # every slot back to Unclaimed and the dynamic slots merged into their parents
        slots = sorted((s.eval("Name"), s.eval("Cpus"), s.eval("State")) for s in pool.slots())
        assert slots == [("slot1@exec0001", 2, "Unclaimed"), ("slot1@exec0002", 2, "Unclaimed")]
        pool.restart("schedd1")
        pool.sleep_until(1200)
        events = pool.events
        assert pool.jobs() == [] and len(pool.jobs(history=True)) == 4
        report = check_pool(pool)
    assert report.violations == []
    expired = kinds(events, "lease_expired")
    assert len(expired) == 4
    for e in expired:
        assert e["message"] == "claim lease expired (condor_schedd gone?)"
        assert killed < e["t"] <= killed + LEASE + e["interval"]
    # the restarted schedd learns the claims are gone: its jobs run again, once each
    assert len(kinds(events, "claim_lost")) == 4
    assert Counter(len(v) for v in runs(events).values()) == Counter({1: 4})


def test_a_crashed_startd_leaves_the_collector_and_its_jobs_complete_elsewhere(check_pool) -> None:
    with Pool(parse_spec(spec(jobs=2, machines=3), "<t>")) as pool:
        pool.sleep_until(60)
        hosts = {j.eval("RemoteHost").partition("@")[2] for j in pool.jobs()}
        assert len(hosts) >= 1
        victim = sorted(hosts)[0]
        pool.crash(victim)
        t0 = pool.now
        pool.sleep_until(t0 + 90 + 30)  # CLASSAD_LIFETIME 90 (+ the collector's sweep)
        assert victim not in {s.eval("Machine") for s in pool.slots()}
        pool.sleep_until(1500)
        events = pool.events
        assert pool.jobs() == [] and len(pool.jobs(history=True)) == 2
        report = check_pool(pool)
    assert report.violations == []
    lost = kinds(events, "reconnect_failed")
    assert lost and all(e["slot"].endswith("@" + victim) for e in lost)
    assert all(t0 < e["t"] <= t0 + LEASE + 40 for e in lost)
    for job, slots in runs(events).items():
        assert not slots[-1].endswith("@" + victim), job


def test_a_paused_startd_keeps_its_slots_claimed_until_the_schedd_gives_up(check_pool) -> None:
    extra = """
[[faults]]
kind = "pause"
target = "exec0001"
at = 60
duration = 400
"""
    with Pool(parse_spec(spec(extra, jobs=2, machines=1), "<t>")) as pool:
        pool.sleep_until(150)
        # catatonic: nothing answers, but its slots stay Claimed in the collector
        assert {s.eval("State") for s in pool.slots('SlotType == "Dynamic"')} == {"Claimed"}
        pool.sleep_until(1500)
        events = pool.events
        report = check_pool(pool)
    assert report.violations == []
    gave_up = kinds(events, "reconnect_failed")
    assert len(gave_up) == 2
    for e in gave_up:
        assert 60 < e["t"] <= 60 + LEASE + 40 and e["reason"].startswith("Job disconnected")
    assert [e["kind"] for e in kinds(events, "fault_start", "fault_end")] == [
        "fault_start",
        "fault_end",
    ]


def test_a_partition_between_schedd_and_startd_ends_in_a_requeue_and_completion(check_pool) -> None:
    extra = """
[[faults]]
kind = "partition"
target = "schedd1"
peer = "exec0001"
at = 60
duration = 200
"""
    with Pool(parse_spec(spec(extra, jobs=2, machines=1), "<t>")) as pool:
        pool.sleep_until(2000)
        events = pool.events
        assert pool.jobs() == [] and len(pool.jobs(history=True)) == 2
        report = check_pool(pool)
    assert report.violations == []
    assert len(kinds(events, "lease_expired")) == 2  # the startd gave up on the schedd


CHAOS = """
[[faults]]
kind = "random"
seed = {seed}
targets = ["schedd1", "schedd2", "exec0001", "exec0002", "exec0003"]
rate = {{ crash = 3, restart = 3, pause = 2, partition = 2, drop = 2, delay = 2 }}
start = 100
until = 3000
duration = 90
"""


@pytest.mark.slow
def test_seeded_chaos_passes_the_checker_and_replays_byte_for_byte(tmp_path: Path) -> None:
    """A seeded random plan over a busy pool, run twice by ``mockpool run`` (each in a
    fresh process, as a user replays it): the checker passes and the event logs are the
    same bytes."""
    seed = 11
    print(f"chaos seed {seed}")
    text = spec(CHAOS.format(seed=seed), jobs=12, length=200, machines=3)
    text = text.replace('clock = "virtual"', 'clock = "virtual"\nduration = 6000')
    (tmp_path / "chaos.toml").write_text(text)
    outs = []
    for run in ("a", "b"):
        out = tmp_path / run
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "mockpool.cli.main",
                "run",
                str(tmp_path / "chaos.toml"),
                "--out",
                str(out),
            ],
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, f"seed {seed}: {done.stderr[-2000:]}"
        outs.append(out)
    report = check_dir(outs[0])
    assert report.violations == [], f"seed {seed}"
    events = [json.loads(line) for line in (outs[0] / "events.jsonl").read_text().splitlines()]
    faults = Counter(e["fault"] for e in kinds(events, "fault_start"))
    assert len(faults) >= 4, faults
    summary = json.loads((outs[0] / "summary.json").read_text())
    assert summary["jobs"].get("Completed", 0) == 12, f"seed {seed}: {summary['jobs']}"
    assert (outs[0] / "events.jsonl").read_bytes() == (outs[1] / "events.jsonl").read_bytes()


def test_a_hundred_schedd_crash_restart_cycles_lose_no_job_and_run_none_twice(check_pool) -> None:
    with Pool(parse_spec(spec(jobs=8, length=400, machines=2), "<t>")) as pool:
        t = 30.0
        for i in range(100):
            pool.sleep_until(t)
            pool.restart("schedd1")
            t += 7.0 + (i % 5)
        pool.sleep_until(t + 3000)
        events = pool.events
        assert pool.jobs() == [] and len(pool.jobs(history=True)) == 8
        report = check_pool(pool)
    assert report.violations == []
    assert len(kinds(events, "daemon_restarted")) == 100
    assert Counter(len(v) for v in runs(events).values()) == Counter({1: 8})


@pytest.mark.parametrize(
    ("table", "problem"),
    [
        ('kind = "crash"\ntarget = "schedd9"', "target 'schedd9': no such daemon"),
        ('kind = "pause"\ntarget = "schedd1"\nduration = 0', "duration must be > 0"),
        ('kind = "pause"\ntarget = "schedd1"\nduration = -5', "duration must be > 0"),
        ('kind = "melt"\ntarget = "schedd1"', "unknown kind 'melt'"),
        ('kind = "partition"\ntarget = "schedd1"\nduration = 5', "needs a peer"),
        ('kind = "restart"\ntarget = "schedd1"\nduration = 5', "takes no duration"),
        ('kind = "skew"\ntarget = "schedd1"\nduration = 5', "needs skew != 0"),
    ],
)
def test_a_bad_fault_is_refused_with_its_place(table: str, problem: str) -> None:
    with pytest.raises(SpecError, match=rf"<t>:\d+: \[\[faults\]\] #1: .*{problem}"):
        parse_spec(spec("[[faults]]\n" + table), "<t>")


def test_contradicting_faults_are_refused_before_anything_runs(check_pool) -> None:
    extra = """
[[faults]]
kind = "crash"
target = "schedd1"
at = 100
duration = 60
[[faults]]
kind = "pause"
target = "schedd1"
at = 130
duration = 10
"""
    with pytest.raises(SpecError, match=r"#2: pause of schedd1 at 130 contradicts .*#1: crash"):
        parse_spec(spec(extra), "<t>")


def test_a_random_plan_that_would_draw_without_end_is_refused() -> None:
    plan = """
[[faults]]
kind = "random"
targets = ["schedd1"]
rate = { restart = 1000000 }
start = 0
until = 1e12
"""
    with pytest.raises(
        SpecError, match=r"#1: rate x \(until - start\) asks for about .* at most 100,000"
    ):
        parse_spec(spec() + plan, "<t>")


def test_a_random_plan_over_machines_of_one_actor_always_runs() -> None:
    # Four machines in one actor: drawn as four targets, they are one (a crash of one
    # and a restart of another contradict; a partition between two cuts nothing). Such
    # draws are left out, so the plan is checked without error whatever its seed.
    text = spec(machines=4).replace("machines_per_actor = 1", "machines_per_actor = 4")
    plan = """
[[faults]]
kind = "random"
seed = {seed}
targets = ["exec0001", "exec0002", "exec0003", "exec0004", "schedd1"]
rate = {{ crash = 6, restart = 6, pause = 4, partition = 6, delay = 6 }}
start = 50
until = 5000
duration = 200
"""
    kept = 0
    for seed in range(20):
        faults = parse_spec(text + plan.format(seed=seed), "<t>").faults
        kept += len(faults)
        for i, a in enumerate(faults):
            assert not (a.peer and a.peer == a.target), a
            assert not any(contradicts(a, b) for b in faults[:i]), (a, faults[:i])
    assert kept > 100  # most draws are kept


def test_pool_fault_refuses_an_unknown_daemon_and_changes_nothing(check_pool) -> None:
    with Pool(parse_spec(spec(), "<t>")) as pool:
        pool.sleep_until(30)
        with pytest.raises(FaultError, match="no such daemon"):
            pool.fault("crash", "nowhere")
        pool.sleep_until(60)
        assert kinds(pool.events, "daemon_died", "fault_start") == []


def test_a_restarted_central_manager_keeps_the_accountant_and_is_refilled(check_pool) -> None:
    with Pool(parse_spec(spec(jobs=4, length=2000), "<t>")) as pool:
        pool.sleep_until(600)
        before = {a.eval("Name"): a.eval("AccumulatedUsage") for a in pool.userprio()}
        assert before and all(v > 0 for v in before.values())
        pool.restart("negotiator")
        # the collector comes back where every daemon looks for it; the next updates
        # (UPDATE_INTERVAL 30, SCHEDD_INTERVAL 60) refill it
        pool.sleep_until(700)
        assert len(pool.slots()) == 6 and len(pool.ads("Scheduler")) == 2
        after = {a.eval("Name"): a.eval("AccumulatedUsage") for a in pool.userprio()}
        assert all(after[name] >= usage for name, usage in before.items())
        pool.sleep_until(3000)
        events = pool.events
        assert pool.jobs() == [] and len(pool.jobs(history=True)) == 4
        report = check_pool(pool)
    assert report.violations == []
    (back,) = kinds(events, "daemon_restarted")
    assert back["actor"] == "central" and back["address"].endswith(":9618")


@pytest.mark.parametrize("inform", [True, False])
def test_a_match_never_claimed_times_out_when_the_negotiator_informs_startds(
    check_pool, inform: bool
) -> None:
    """NEGOTIATOR_INFORM_STARTD = true: the startd hears of the match (Matched); the
    schedd cannot reach it to claim (a partition), so after MATCH_TIMEOUT (60) the slot is
    Unclaimed again. HTCondor's default (false): the startd never hears of matches."""
    text = spec(
        """
[[faults]]
kind = "partition"
target = "schedd1"
peer = "exec0001"
at = 0
duration = 150
""",
        jobs=1,
        machines=1,
        length=100,
    ).replace(
        'config = "NUM_CPUS = 2"',
        'config = "NUM_CPUS = 1\\nSLOT_TYPE_1 = cpus=1\\nNUM_SLOTS_TYPE_1 = 1"',
    )
    text = text.replace(
        "CLASSAD_LIFETIME = 90",
        f"CLASSAD_LIFETIME = 90\nMATCH_TIMEOUT = 60\nNEGOTIATOR_INFORM_STARTD = {str(inform).lower()}",
    )
    with Pool(parse_spec(text, "<t>")) as pool:
        pool.sleep_until(40)
        assert [s.eval("State") for s in pool.slots()] == ["Matched" if inform else "Unclaimed"]
        pool.sleep_until(1000)
        events = pool.events
        assert len(pool.jobs(history=True)) == 1
        report = check_pool(pool)
    assert report.violations == []
    matched, timed_out = kinds(events, "slot_matched"), kinds(events, "match_timeout")
    if inform:
        assert timed_out and timed_out[0]["t"] == matched[0]["t"] + 60
        assert timed_out[0]["message"] == "match timed out"
    else:
        assert matched == [] and timed_out == []


def test_a_fault_on_daemons_matching_a_constraint_and_a_skewed_clock(check_pool) -> None:
    """constraint = 'Machine == "exec0002"' pauses that startd's actor only; schedd2's
    clock runs 500 s ahead for 100 s and schedd1's calls to exec0001 wait 5 s: the jobs
    still complete and the checker passes."""
    extra = """
[[faults]]
kind = "pause"
constraint = 'Machine == "exec0002"'
at = 30
duration = 60

[[faults]]
kind = "skew"
target = "schedd2"
skew = 500
at = 10
duration = 100

[[faults]]
kind = "delay"
target = "schedd1"
peer = "exec0001"
delay = 5
at = 0
duration = 200
"""
    with Pool(parse_spec(spec(extra, jobs=4, length=100), "<t>")) as pool:
        pool.sleep_until(2000)
        events = pool.events
        assert pool.jobs() == [] and len(pool.jobs(history=True)) == 4
        report = check_pool(pool)
    assert report.violations == []
    (paused,) = [e for e in kinds(events, "fault_start") if e["fault"] == "pause"]
    assert paused["actors"] == ["startd0_1"] and paused["daemons"] == ["exec0002"]
    assert [e["fault"] for e in kinds(events, "fault_end")] == ["pause", "skew", "delay"]
    (skew,) = [e for e in kinds(events, "fault_start") if e["fault"] == "skew"]
    assert (skew["t"], skew["skew"], skew["daemons"]) == (10, 500, ["schedd2"])
