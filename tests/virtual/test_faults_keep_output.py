"""A run keeps its word whatever is down at its end: its output folder is written from
what is up, a dead schedd's queue and history are read from its queue file, and a
schedd's events are as durable as the queue changes they describe (issue 40)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from mockpool import Pool
from mockpool.pool.api import run_pool
from mockpool.pool.check import check_dir
from mockpool.pool.spec import parse_spec


def spec(faults: str, *, schedds: int = 1, per_actor: int = 1, duration: int = 1500) -> str:
    return f"""
[pool]
clock = "virtual"
duration = {duration}
seed = 5

[config]
NEGOTIATOR_INTERVAL = 60
UPDATE_INTERVAL = 60

[[startds]]
count = 2
machines_per_actor = 1
config = "NUM_CPUS = 4"

[[schedds]]
count = {schedds}
per_actor = {per_actor}

[[submit]]
at = 0
owner = "alice"
description = '''
executable = /bin/sleep
arguments = 600
queue 20
'''
{faults}
"""


def completions(events: list[dict]) -> Counter[str]:
    return Counter(e["job"] for e in events if e["kind"] == "job_completed")


# Eight 600 s jobs start at 0 on 8 cpus; their claims are reused at 600 for eight more
# (ending at 1200), then for the last four. A schedd gone at 1000 has seen eight jobs
# end; with the central manager gone, the claims go on being reused: sixteen.
@pytest.mark.parametrize(
    ("target", "down", "completed"),
    [("schedd1", ["schedd1"], 8), ("central", ["collector", "negotiator"], 16)],
)
def test_a_run_whose_daemon_crashed_for_good_writes_its_output(
    tmp_path: Path, target: str, down: list[str], completed: int
) -> None:
    faults = f'[[faults]]\nkind = "crash"\ntarget = "{target}"\nat = 1000\n'
    out = tmp_path / "out"
    summary = run_pool(parse_spec(spec(faults), "<test>"), out)
    assert summary["down_at_end"] == down
    for name in ("events.jsonl", "NegotiatorLog", "summary.json", "ads/jobs.ads"):
        assert (out / name).is_file(), name
    assert json.loads((out / "summary.json").read_text())["down_at_end"] == down
    report = check_dir(out)
    assert report.ok, report.violations
    assert report.jobs == 20
    assert sum(summary["jobs"].values()) == 20
    assert summary["jobs"]["Completed"] == completed


def test_one_of_three_schedds_down_at_the_end_leaves_the_others_asked(tmp_path: Path) -> None:
    faults = '[[faults]]\nkind = "crash"\ntarget = "schedd1"\nat = 1000\n'
    out = tmp_path / "out"
    summary = run_pool(parse_spec(spec(faults, schedds=3), "<test>"), out)
    assert summary["down_at_end"] == ["schedd1"]
    assert check_dir(out).ok


def test_a_schedd_killed_between_gatherings_loses_no_event_of_its_queue(tmp_path: Path) -> None:
    """kill -9 of a schedd's process: its events since the pool last gathered them are
    not in memory any more, but were committed with the queue changes they describe."""
    with Pool(spec("", duration=3000), state_dir=tmp_path / "state") as pool:
        pool.sleep_until(500)
        before = completions(pool.events)  # gathered up to here
        pool.sleep_until(700)  # eight jobs end at 600, not gathered
        live = pool._live
        actor = live.actor("schedd1")
        pool._run(actor.handle.host.crash())  # no last gathering: as kill -9
        live._died(actor, "killed")
        summary = pool.collect(tmp_path / "out")
    done = completions(json.loads(line) for line in (tmp_path / "out/events.jsonl").open())
    assert not before
    assert summary["jobs"]["Completed"] == 8
    assert sorted(done.values()) == [1] * 8
    assert check_dir(tmp_path / "out").ok


def test_a_restarted_schedd_hands_over_the_events_its_crash_kept(tmp_path: Path) -> None:
    with Pool(spec("", duration=3000), state_dir=tmp_path / "state") as pool:
        pool.sleep_until(700)
        live = pool._live
        actor = live.actor("schedd1")
        pool._run(actor.handle.host.crash())
        live._died(actor, "killed")
        pool.restart("schedd1")
        assert sorted(completions(pool.events).values()) == [1] * 8
        pool.sleep_until(2000)
        pool.collect(tmp_path / "out")  # the same events are not gathered twice
    done = completions(json.loads(line) for line in (tmp_path / "out/events.jsonl").open())
    assert set(done.values()) == {1}
    assert check_dir(tmp_path / "out").ok
