"""Faults on real Ray actors keep their word (issue 40): a schedd crashed and restarted
ten times while its jobs run completes each exactly once, and a schedd actor killed with
SIGKILL between two gatherings of events loses no event of its queue: the run's output
is written and judged from its queue file."""

from __future__ import annotations

import json
import os
import signal
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import pytest

from mockpool import Pool
from mockpool.pool.check import check_dir
from mockpool.pool.spec import parse_spec

pytestmark = [pytest.mark.live, pytest.mark.slow]

WAIT = 180  # real seconds: the machine is shared, wait on conditions generously


def spec(*, jobs: int, length: int) -> str:
    return f"""
[pool]
time_scale = 40

[config]
NEGOTIATOR_INTERVAL = 20
SCHEDD_INTERVAL = 30
CONSUMPTION_POLICY = true

[[startds]]
count = 2
machines_per_actor = 1
config = "NUM_CPUS = 2"

[[schedds]]
count = 2
per_actor = 2

[[submit]]
at = 0
owner = "alice"
description = '''
executable = /bin/sleep
arguments = {length}
job_lease_duration = 600
queue {jobs}
'''
"""


def completions(events: Iterable[dict]) -> Counter[tuple[str, str]]:
    return Counter((e["daemon"], e["job"]) for e in events if e["kind"] == "job_completed")


def test_ten_crash_restart_cycles_of_a_busy_schedd_complete_every_job_once(
    ray_session: None, tmp_path: Path
) -> None:
    with Pool(parse_spec(spec(jobs=8, length=200), "<test>"), state_dir=tmp_path / "s") as pool:
        assert pool.wait(lambda: len(pool.jobs("JobStatus == 2")) == 4, timeout=WAIT)
        for _ in range(10):
            pool.crash("schedd1")  # alone: schedd2 shares its actor and runs on
            pool.restart("schedd1")
        assert pool.wait(lambda: len(pool.jobs(history=True)) == 8, timeout=WAIT)
        summary = pool.collect(tmp_path / "out")
    events = [json.loads(line) for line in (tmp_path / "out/events.jsonl").open()]
    assert [e["daemons"] for e in events if e["kind"] == "daemon_restarted"] == [["schedd1"]] * 10
    assert summary["jobs"]["Completed"] == 8
    assert sorted(completions(events).values()) == [1] * 8
    report = check_dir(tmp_path / "out")
    assert report.ok, report.violations


def test_a_schedd_killed_with_sigkill_loses_no_event_and_the_run_is_still_written(
    ray_session: None, tmp_path: Path
) -> None:
    with Pool(parse_spec(spec(jobs=8, length=100), "<test>"), state_dir=tmp_path / "s") as pool:
        # the first four jobs end at about 100 pool s: kill as soon as the queue file
        # says so, before the pool gathers their events (every half real second)
        assert pool.wait(lambda: len(pool.jobs(history=True)) >= 4, timeout=WAIT, poll=0.01)
        pid = next(
            h["pid"]
            for h in pool.status()
            if "schedd1" in h["services"].get("ScheddService", {}).get("schedds", {})
        )
        os.kill(pid, signal.SIGKILL)
        assert pool.wait(lambda: pool._live.down_daemons() == ["schedd1", "schedd2"], timeout=WAIT)
        summary = pool.collect(tmp_path / "out")
    assert summary["down_at_end"] == ["schedd1", "schedd2"]
    events = [json.loads(line) for line in (tmp_path / "out/events.jsonl").open()]
    history = (tmp_path / "out/ads/history.ads").read_text().count("\nJobStatus = 4")
    assert history >= 4
    assert sum(completions(events).values()) == history
    report = check_dir(tmp_path / "out")
    assert report.ok, report.violations
