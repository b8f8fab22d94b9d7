"""A run keeps its word whatever is down at its end: its output folder is written from
what is up, a dead schedd's queue and history are read from its queue file, and a
schedd's events are as durable as the queue changes they describe (issue 40)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import pytest

from mockpool import Pool
from mockpool.pool.api import run_pool
from mockpool.pool.check import check_dir
from mockpool.pool.spec import parse_spec
from mockpool.schedd.queue import JobQueue


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


def completions(events: Iterable[dict]) -> Counter[tuple[str, str]]:
    """(schedd, job) -> its job_completed events."""
    return Counter((e["daemon"], e["job"]) for e in events if e["kind"] == "job_completed")


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


def test_a_crash_of_one_schedd_leaves_the_others_of_its_actor_running(tmp_path: Path) -> None:
    """schedd1 and schedd2 share an actor; a crash of schedd1 is schedd1's alone, and
    its restart brings it back from its queue file."""
    faults = '[[faults]]\nkind = "crash"\ntarget = "schedd1"\nat = 300\nduration = 600\n'
    text = spec(faults, schedds=2, per_actor=2, duration=3000).replace("queue 20", "queue 10")
    text += """
[[submit]]
at = 0
schedd = 1
owner = "bob"
description = '''
executable = /bin/sleep
arguments = 600
queue 10
'''
"""
    with Pool(parse_spec(text, "<test>"), state_dir=tmp_path / "state") as pool:
        pool.sleep_until(400)
        assert pool.down_daemons() == ["schedd1"]
        assert [e["daemons"] for e in pool.events if e["kind"] == "daemon_died"] == [["schedd1"]]
        assert pool.jobs(schedd="schedd2")  # still answers
        pool.sleep_until(1000)
        assert pool.down_daemons() == []
        assert (
            len(pool.jobs(schedd="schedd1")) + len(pool.jobs(schedd="schedd1", history=True)) == 10
        )
        pool.sleep_until(3000)
        summary = pool.collect(tmp_path / "out")
    assert summary["jobs"]["Completed"] == 20
    done = completions(json.loads(line) for line in (tmp_path / "out/events.jsonl").open())
    assert sorted(done.values()) == [1] * 20
    assert check_dir(tmp_path / "out").ok


@pytest.mark.slow
def test_a_hundred_crash_restart_cycles_of_a_busy_schedd_in_a_shared_actor(
    tmp_path: Path,
) -> None:
    """schedd1 shares its actor with schedd2 and is crashed and restarted 100 times while
    its jobs run: every job of both completes exactly once, and the checker passes."""
    text = spec("", schedds=2, per_actor=2, duration=6000).replace("queue 20", "queue 12")
    text = text.replace("arguments = 600", "arguments = 300\njob_lease_duration = 120")
    with Pool(parse_spec(text, "<test>"), state_dir=tmp_path / "state") as pool:
        t = 30.0
        for i in range(100):
            pool.sleep_until(t)
            pool.crash("schedd1")
            pool.sleep_until(t + 2.0 + (i % 3))
            pool.restart("schedd1")
            t += 9.0 + (i % 5)
        pool.sleep_until(t + 3000)
        summary = pool.collect(tmp_path / "out")
    assert summary["jobs"]["Completed"] == 12
    done = completions(json.loads(line) for line in (tmp_path / "out/events.jsonl").open())
    assert sorted(done.values()) == [1] * 12
    report = check_dir(tmp_path / "out")
    assert report.ok, report.violations


def test_a_virtual_pool_on_a_folder_a_pool_ran_in_is_refused_clearly(tmp_path: Path) -> None:
    """Its time would start at 0 again over queues written later, and its workload be
    queued twice: refused, saying why and what to do. A virtual pool itself keeps its
    durable state on a simulated disk: it leaves no queue or accountant in the folder."""
    with Pool(spec("", duration=300), state_dir=tmp_path / "state") as pool:
        pool.sleep_until(100)
    assert not [p for p in (tmp_path / "state").rglob("*") if p.suffix in (".sqlite", ".json")]
    JobQueue(tmp_path / "state" / "schedd" / "schedd1.sqlite").close()  # a live pool's
    with pytest.raises(ValueError, match=r"a pool ran on this state folder before .*empty"):
        Pool(spec("", duration=300), state_dir=tmp_path / "state")


def test_a_crash_of_one_machine_leaves_the_others_of_its_actor_running(tmp_path: Path) -> None:
    """exec0001 and exec0002 share an actor; exec0001's crash is its own: its jobs run
    again, exec0002's run on undisturbed, and it comes back with new claim ids."""
    faults = '[[faults]]\nkind = "crash"\ntarget = "exec0001"\nat = 300\nduration = 200\n'
    text = spec(faults, duration=4000).replace("machines_per_actor = 1", "machines_per_actor = 2")
    text = text.replace("queue 20", "queue 8")
    with Pool(parse_spec(text, "<test>"), state_dir=tmp_path / "state") as pool:
        pool.sleep_until(400)
        assert pool.down_daemons() == ["exec0001"]
        pool.sleep_until(4000)
        summary = pool.collect(tmp_path / "out")
    events = [json.loads(line) for line in (tmp_path / "out/events.jsonl").open()]
    assert [e["daemons"] for e in events if e["kind"] == "daemon_died"] == [["exec0001"]]
    # exec0002's four jobs ended at 600 on their first run; exec0001's ran again
    exits = Counter(e["daemon"] for e in events if e["kind"] == "job_exit")
    assert exits["exec0002"] >= 4
    assert summary["jobs"]["Completed"] == 8
    assert sorted(completions(events).values()) == [1] * 8
    report = check_dir(tmp_path / "out")
    assert report.ok, report.violations


def test_a_restarted_actors_daemons_start_at_the_pools_time_not_at_zero() -> None:
    """A schedd rebuilt by its actor's restart at 850 starts then: its timers (policy,
    wall clock, keepalives) count from 850."""
    faults = '[[faults]]\nkind = "crash"\ntarget = "schedd1"\nat = 750\nduration = 100\n'
    with Pool(parse_spec(spec(faults, duration=1000), "<test>")) as pool:
        pool.sleep_until(900)
        core = pool.kp.schedd_node("schedd1").core.core
        assert core.started == 850
        assert core.policy_next == 850 + 60  # PERIODIC_EXPR_INTERVAL


def test_the_workload_reaches_its_schedd_while_the_collector_refills(tmp_path: Path) -> None:
    """The central manager restarted at 70 has no schedd ad until the schedd's next
    update (SCHEDD_INTERVAL, 300 s): a submit at 100 still reaches the schedd."""
    faults = '[[faults]]\nkind = "restart"\ntarget = "central"\nat = 70\n'
    text = (
        spec(faults, duration=400)
        + """
[[submit]]
at = 100
owner = "bob"
description = '''
executable = /bin/sleep
arguments = 60
queue 1
'''
"""
    )
    summary = run_pool(parse_spec(text, "<test>"), tmp_path / "out")
    assert summary["workload_errors"] == []
    assert summary["jobs_submitted"] == 21


def test_a_fault_between_the_collector_and_a_negotiator_of_its_own_is_accepted() -> None:
    """``[placement] negotiator = "own"`` puts them in two actors: a cut between them is
    a fault of two actors (the plan was checked before the placement was read)."""
    text = spec(
        '[placement]\nnegotiator = "own"\n\n[[faults]]\nkind = "partition"\n'
        'target = "collector"\npeer = "negotiator"\nat = 100\nduration = 60\n'
    )
    assert [(f.target, f.peer) for f in parse_spec(text, "<test>").faults] == [
        ("central", "negotiator")
    ]
