"""A startd paused for longer than its claims' lease, in virtual time: when it wakes it
ends those claims at their deadlines (``lease_expired``, a job still running then is
killed), reports only the exits of jobs that ended before, and the schedd, which gave the
claims up meanwhile and ran the jobs elsewhere, ignores those. Each job completes once."""

from __future__ import annotations

from collections import Counter

from mockpool import Pool
from mockpool.pool.check import check
from mockpool.pool.spec import parse_spec

LEASE = 120  # keepalives every min(300, 120 / 3) = 40 s


def job(length: int) -> str:
    return f"""
[[submit]]
at = 0
owner = "alice"
description = '''
executable = /bin/sleep
arguments = {length}
job_lease_duration = {LEASE}
queue 2
'''
"""


SPEC = (
    """
[pool]
clock = "virtual"
seed = 3

[config]
NEGOTIATOR_INTERVAL = 20
UPDATE_INTERVAL = 30
CLASSAD_LIFETIME = 90

[[startds]]
count = 2
machines_per_actor = 1
config = "NUM_CPUS = 2"

[[schedds]]
count = 1
"""
    + job(100)
    + job(300)
)


def test_a_startd_paused_past_the_lease_ends_its_claims_before_any_exit() -> None:
    """Each machine runs a 100 s and a 300 s job from t0. exec0001 pauses from 30 to
    430: last heard at t0, its claims' lease runs out at t0 + 120. Job 1.0 ended at t0 + 100,
    before that: its exit is reported (and ignored: the schedd gave the claim up at
    t0 + 120 and ran the job again on exec0002). Job 2.0 was to end at t0 + 300: it was
    killed at t0 + 120 and never exits there. (t0 = 5: the jobs start with the first
    cycle.)"""
    t0 = 5.0
    with Pool(parse_spec(SPEC, "<t>")) as pool:
        pool.sleep_until(30)
        on = {
            f"{j.eval('ClusterId')}.{j.eval('ProcId')}": j.eval("RemoteHost") for j in pool.jobs()
        }
        assert on["1.0"].endswith("@exec0001") and on["2.0"].endswith("@exec0001")
        pool.fault("pause", "exec0001", duration=400)
        pool.sleep_until(600)
        events = pool.events
        queue, history = pool.jobs(), pool.jobs(history=True)
        report = check(list(enumerate(events, 1)), queue, history, pool.slots())
    assert report.violations == []
    assert queue == [] and len(history) == 4
    completed = Counter(e["job"] for e in events if e["kind"] == "job_completed")
    assert completed == Counter({"1.0": 1, "1.1": 1, "2.0": 1, "2.1": 1})
    paused = [e for e in events if e["daemon"] == "exec0001"]
    expired = [e for e in paused if e["kind"] == "lease_expired"]
    assert sorted((e["t"], e["deadline"], e.get("job", "")) for e in expired) == [
        (round(t0 + LEASE, 3), round(t0 + LEASE, 3), ""),  # 1.0's claim, idle since its job ended
        (round(t0 + LEASE, 3), round(t0 + LEASE, 3), "2.0"),  # killed at the deadline
    ]
    exits = [(e["t"], e["job"], e["end"]) for e in paused if e["kind"] == "job_exit"]
    assert exits == [(round(t0 + 100, 3), "1.0", round(t0 + 100, 3))]
    # the schedd had given both claims up at t0 + 120: the report woke it to nothing
    ignored = [e for e in events if e["kind"] == "job_exit_ignored"]
    assert [(e["t"], e["job"], e["why"]) for e in ignored] == [(430.0, "1.0", "claim not held")]
    gave_up = sorted(e["job"] for e in events if e["kind"] == "reconnect_failed")
    assert gave_up == ["1.0", "2.0"]
