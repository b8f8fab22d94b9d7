"""Faults on real Ray actors: a crashed schedd restarted within its lease reconnects, a
crashed startd's jobs complete elsewhere, a catatonic startd keeps its slots Claimed until
the schedd gives up, and an `up` pool survives kill -9 of one schedd actor until
`mockpool fault restart` brings it back. Every run passes the invariant checker."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mockpool import Pool
from mockpool.pool.check import check
from mockpool.pool.spec import parse_spec

pytestmark = [pytest.mark.live, pytest.mark.slow]

WAIT = 180  # real seconds: the machine is shared, wait on conditions generously
LEASE = 120  # pool seconds; keepalives every 40


def spec(
    *,
    jobs: int,
    machines: int,
    length: int = 400,
    schedds: int = 1,
    extra: str = "",
    lease: int = LEASE,
) -> str:
    return f"""
[pool]
time_scale = 40

[config]
NEGOTIATOR_INTERVAL = 20
UPDATE_INTERVAL = 30
SCHEDD_INTERVAL = 30
CLASSAD_LIFETIME = 90
CONSUMPTION_POLICY = true

[[startds]]
count = {machines}
machines_per_actor = 1
config = "NUM_CPUS = 2"

[[schedds]]
count = {schedds}
per_actor = 1

[[submit]]
at = 0
owner = "alice"
description = '''
executable = /bin/sleep
arguments = {length}
job_lease_duration = {lease}
queue {jobs}
'''
{extra}
"""


def kinds(events: list[dict], *wanted: str) -> list[dict]:
    return [e for e in events if e["kind"] in wanted]


def violations(pool: Pool) -> list:
    events = list(enumerate(pool.events, 1))
    queue, history = [], []
    for name in pool.spec.schedd_names:
        queue += pool.jobs(schedd=name)
        history += pool.jobs(schedd=name, history=True)
    return check(events, queue, history, pool.slots()).violations


def finished_on(events: list[dict]) -> dict[str, list[str]]:
    """Job -> the slots its runs ended on, as the startds saw it."""
    out: dict[str, list[str]] = {}
    for e in events:
        if e["kind"] == "job_exit" and e["daemon"].startswith("exec"):
            out.setdefault(e["job"], []).append(e["slot"])
    return out


def test_crashed_schedd_restarted_within_the_lease_finishes_every_job_once(
    ray_session: None,
) -> None:
    # a 600 s lease (15 real seconds): room for a new actor to start on a busy machine
    with Pool(parse_spec(spec(jobs=4, machines=2, lease=600, length=1000), "<test>")) as pool:
        assert pool.wait(lambda: len(pool.jobs("JobStatus == 2")) == 4, timeout=WAIT)
        started = {f"1.{j.eval('ProcId')}": j.eval("RemoteHost") for j in pool.jobs()}
        pool.crash("schedd1")
        time.sleep(0.5)  # 20 pool seconds down: well within the lease
        pool.restart("schedd1")
        assert pool.wait(lambda: len(pool.jobs(history=True)) == 4, timeout=WAIT)
        events = pool.events
        assert violations(pool) == []
    assert len(kinds(events, "job_reconnected")) == 4
    assert kinds(events, "lease_expired", "reconnect_failed", "claim_lost") == []
    assert finished_on(events) == {job: [slot] for job, slot in started.items()}
    assert [e["actor"] for e in kinds(events, "daemon_died", "daemon_restarted")] == [
        "schedd1",
        "schedd1",
    ]


def test_crashed_startd_leaves_the_collector_and_its_jobs_complete_elsewhere(
    ray_session: None,
) -> None:
    with Pool(parse_spec(spec(jobs=2, machines=3, length=200), "<test>")) as pool:
        assert pool.wait(lambda: len(pool.jobs("JobStatus == 2")) == 2, timeout=WAIT)
        victim = sorted(j.eval("RemoteHost").partition("@")[2] for j in pool.jobs())[0]
        pool.crash(victim)
        t0 = pool.now
        assert pool.wait(
            lambda: victim not in {s.eval("Machine") for s in pool.slots()}, timeout=WAIT
        )
        gone_at = pool.now
        assert pool.wait(lambda: len(pool.jobs(history=True)) == 2, timeout=WAIT)
        events = pool.events
        assert violations(pool) == []
    assert gone_at - t0 >= 90 - 30  # CLASSAD_LIFETIME after its last update
    lost = kinds(events, "reconnect_failed")
    assert lost and all(e["slot"].endswith("@" + victim) for e in lost)
    for job, slots in finished_on(events).items():
        assert not slots[-1].endswith("@" + victim), job


def test_paused_startd_keeps_its_slots_claimed_until_the_schedd_gives_up(
    ray_session: None,
) -> None:
    with Pool(parse_spec(spec(jobs=2, machines=1, length=2000), "<test>")) as pool:
        assert pool.wait(lambda: len(pool.jobs("JobStatus == 2")) == 2, timeout=WAIT)
        pool.fault("pause", "exec0001", duration=300)
        paused_at = pool.now
        assert pool.wait(lambda: pool.now > paused_at + 60, timeout=WAIT)
        assert {s.eval("State") for s in pool.slots('SlotType == "Dynamic"')} == {"Claimed"}
        assert pool.wait(lambda: len(pool.jobs("JobStatus == 1")) == 2, timeout=WAIT)
        gave_up = pool.now
        events = pool.events
    # the schedd gave up a lease after it last heard from the startd
    assert paused_at < gave_up <= paused_at + LEASE + 40 + 60
    assert len(kinds(events, "reconnect_failed")) == 2
    assert kinds(events, "fault_start")[0]["daemons"] == ["exec0001"]


def mockpool(*args: str, home: Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, MOCKPOOL_HOME=str(home))
    proc = subprocess.run(
        [sys.executable, "-m", "mockpool.cli.main", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"mockpool {' '.join(args)}: {proc.stdout}\n{proc.stderr}")
    return proc


def _wait(cond, timeout: float = WAIT) -> bool:  # type: ignore[no-untyped-def]
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.5)
    return False


def running(home: Path) -> int:
    """schedd1's running jobs, from `mockpool q -nobatch` (the ST column)."""
    out = mockpool("q", "-nobatch", "-name", "schedd1", home=home).stdout
    return sum(1 for line in out.splitlines() if line.strip()[:1].isdigit() and " R " in line)


def test_up_pool_survives_kill_9_of_one_schedd_until_fault_restart(tmp_path: Path) -> None:
    home = tmp_path / "pool"
    spec_file = tmp_path / "two.toml"
    text = spec(jobs=2, machines=2, length=4000, schedds=2)
    text += """
[[submit]]
at = 0
schedd = 1
owner = "bob"
description = '''
executable = /bin/sleep
arguments = 60
job_lease_duration = 120
queue 2
'''
"""
    spec_file.write_text(text)
    mockpool("up", str(spec_file), home=home)
    try:
        assert _wait(lambda: "schedd1" in mockpool("daemons", home=home).stdout)
        rows = [r.split() for r in mockpool("daemons", home=home).stdout.splitlines()[1:]]
        pid = next(int(r[3]) for r in rows if r[0] == "schedd1")
        assert _wait(lambda: running(home) == 2)
        os.kill(pid, signal.SIGKILL)
        assert _wait(
            lambda: (
                "down"
                in next(
                    r for r in mockpool("daemons", home=home).stdout.splitlines() if "schedd1" in r
                )
            )
        )
        # the pool runs on: bob's jobs on schedd2 complete
        assert _wait(lambda: "bob" in mockpool("history", "-name", "schedd2", home=home).stdout)
        # a READ token may not inject faults
        denied = mockpool(
            "fault",
            "restart",
            "schedd1",
            "--token",
            str(home / "tokens" / "read"),
            home=home,
            check=False,
        )
        assert denied.returncode != 0 and "may not call /mockpool.v1.Master/Fault" in denied.stderr
        unknown = mockpool("fault", "crash", "schedd9", home=home, check=False)
        assert unknown.returncode != 0 and "no such daemon" in unknown.stderr
        out = mockpool("fault", "restart", "schedd1", home=home).stdout
        assert "restart of schedd1" in out
        assert _wait(
            lambda: (
                "up"
                in next(
                    r for r in mockpool("daemons", home=home).stdout.splitlines() if "schedd1" in r
                ).split()
            )
        )
        # its jobs come back: reconnected within the lease, or requeued and run again
        assert _wait(lambda: running(home) == 2)
        events = (home / "events.jsonl").read_text()
        assert '"daemon_died"' in events and '"daemon_restarted"' in events
    finally:
        down = mockpool("down", home=home, check=False)
        assert down.returncode == 0, down.stderr


def test_a_pool_on_an_old_state_folder_resumes_it_instead_of_doubling_its_workload(
    ray_session: None, tmp_path: Path
) -> None:
    text = spec(jobs=3, machines=2, length=100_000)
    with Pool(parse_spec(text, "<test>"), state_dir=tmp_path) as pool:
        assert pool.wait(lambda: len(pool.jobs("JobStatus == 2")) == 3, timeout=WAIT)
        stopped_at = pool.now
        began, qdates = pool.start_date, sorted(j.get_value("QDate") for j in pool.jobs())
    with Pool(parse_spec(text, "<test>"), state_dir=tmp_path) as pool:
        assert pool.now >= stopped_at  # pool time goes on
        # and so do the dates: the same start date, the jobs' QDates as they were
        assert pool.start_date == began
        assert sorted(j.get_value("QDate") for j in pool.jobs()) == qdates
        assert len(pool.jobs()) == 3  # the spec's workload is not submitted again
        # the old startds are gone: the new ones do not know the claims (found through
        # the collector by machine name), so the jobs are Idle and run again
        assert pool.wait(lambda: len(kinds(pool.events, "claim_lost")) == 3, timeout=WAIT)
        assert pool.wait(lambda: len(kinds(pool.events, "job_started")) >= 3, timeout=WAIT)
        assert pool.wait(lambda: len(pool.jobs("JobStatus == 2")) == 3, timeout=WAIT)
        events = pool.events
    assert kinds(events, "submit") == []


def test_ray_restarts_a_killed_schedd_when_the_spec_asks(ray_session: None) -> None:
    # a long lease: Ray takes real seconds to restart an actor (minutes of pool time)
    text = spec(jobs=2, machines=1, length=100_000, lease=2400).replace(
        "time_scale = 40", "time_scale = 40\nrestarts = 2"
    )
    with Pool(parse_spec(text, "<test>")) as pool:
        assert pool.wait(lambda: len(pool.jobs("JobStatus == 2")) == 2, timeout=WAIT)
        pid = next(st["pid"] for st in pool.status() if st["identity"] == "schedd/schedd1")
        os.kill(pid, signal.SIGKILL)
        assert pool.wait(lambda: len(kinds(pool.events, "job_reconnected")) == 2, timeout=WAIT)
        # restarted: once the collector has it at its new address
        assert pool.wait(lambda: kinds(pool.events, "daemon_restarted"), timeout=WAIT)
        events = pool.events
        assert len(pool.jobs("JobStatus == 2")) == 2
    (died,) = kinds(events, "daemon_died")
    (back,) = kinds(events, "daemon_restarted")
    assert died["actor"] == back["actor"] == "schedd1" and back["cause"] == "ray"
