"""Claim reuse and CLAIM_WORKLIFE, end to end in virtual time (the live twin is in
tests/live/test_claim_reuse_live.py), and, on the same small pools, the negotiator's
snapshots after the first carrying only the slot ads that changed."""

from __future__ import annotations

from mockpool import Pool
from mockpool.pool.spec import parse_spec
from mockpool.startd.machine import WORKLIFE

SPEC = """
[pool]
clock = "virtual"
seed = 0

[config]
NEGOTIATOR_INTERVAL = 60
CLAIM_WORKLIFE = {worklife}

[[startds]]
count = {machines}
config = '''
NUM_CPUS = 2
SLOT_TYPE_0_PARTITIONABLE = False
'''

[[submit]]
at = 0
owner = "alice"
description = '''
executable = /bin/sleep
arguments = {seconds}
request_memory = 100
queue {jobs}
'''
"""


def _run(worklife: int) -> tuple[int, float, set[str]]:
    matches, done, events = _events(worklife)
    claims = {e["claim"] for e in events if e["kind"] == "activate"}
    return matches, done, claims


def _spec(worklife: int, machines: int = 1, jobs: int = 10, seconds: int = 20) -> str:
    return SPEC.format(worklife=worklife, machines=machines, jobs=jobs, seconds=seconds)


def _events(worklife: int) -> tuple[int, float, list[dict]]:
    with Pool(parse_spec(_spec(worklife), "<reuse>")) as pool:
        assert pool.wait(lambda: len(pool.jobs("JobStatus == 4", history=True)) == 10, 400)
        matches = sum(len(c.matches) for c in pool.negotiator_log.cycles)
        done = max(int(j.get_value("CompletionDate")) for j in pool.jobs(history=True))
        done -= int(pool.start_date)  # the pool time of the date
        return matches, done, pool.events


def test_short_jobs_keep_running_on_the_same_claims_between_cycles() -> None:
    matches, done, claims = _run(-1)
    # two slots, ten 20 s jobs: two matches in the first cycle (at 5), then each claim
    # runs five jobs back to back: the last ends at 5 + 5 x 20 = 105
    assert matches == 2 and len(claims) == 2
    assert done == 105


def test_with_claim_worklife_zero_every_job_waits_for_a_cycle() -> None:
    matches, done, claims = _run(0)
    # one job per claim: two jobs a cycle, five cycles (5, 65, ..., 245): last ends 265
    assert matches == 10 and len(claims) == 10
    assert done == 265


def test_a_claim_past_its_worklife_closes_with_its_job() -> None:
    """CLAIM_WORKLIFE 30, claims made at 5: the job of 5-25 leaves the claim 20 s old, so
    it is reused; the job of 25-45 leaves it 40 s old, past 30: the startd ends the claim
    with the job and the schedd neither reuses nor releases it. Two claims a cycle, two
    jobs each, cycles at 5 and 65 (8 jobs, closed at 45 and 105); the cycle at 125 finds
    the last two jobs, which end at 145 with nothing left to run: those two claims the
    schedd releases."""
    matches, done, events = _events(30)
    assert (matches, done) == (6, 145)
    kinds = [e["kind"] for e in events]
    assert kinds.count("claim_reuse") == 4 and "activate_failed" not in kinds
    releases = [e for e in events if e["kind"] == "release"]
    closed = [round(e["t"]) for e in releases if e.get("reason") == WORKLIFE]
    assert closed == [45, 45, 105, 105]
    assert sorted(round(e["t"]) for e in releases if "reason" not in e) == [145, 145]


def test_later_snapshots_carry_the_changed_slots_and_the_cycles_see_them() -> None:
    """Eight slots, two 100 s jobs. The snapshot at 5 carries all eight slots and the
    cycle matches two; by 65 those two are Claimed/Busy (the only change); their jobs
    end near 105 and the claims close (CLAIM_WORKLIFE 0), so 125's snapshot carries the
    same two again; at 185 and 245 nothing changed (the startds' next full update is due
    at 300): 8 + 2 + 2 + 0 + 0 slot ads in five snapshots, against 40 whole."""
    with Pool(parse_spec(_spec(0, machines=4, jobs=2, seconds=100), "<deltas>")) as pool:
        assert pool.wait(lambda: pool.now >= 250, 1000)
        per_cycle = [len(c.matches) for c in pool.negotiator_log.cycles]
        collector = pool.status()[0]["services"]["CollectorService"]
        done = len(pool.jobs("JobStatus == 4", history=True))
    assert per_cycle == [2, 0, 0, 0, 0] and done == 2
    assert (collector["snapshots"], collector["snapshot_deltas"]) == (5, 4)
    assert collector["snapshot_slot_ads"] == 12
