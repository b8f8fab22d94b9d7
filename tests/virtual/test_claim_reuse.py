"""Claim reuse and CLAIM_WORKLIFE, end to end in virtual time (the live twin is in
tests/live/test_claim_reuse_live.py)."""

from __future__ import annotations

from mockpool import Pool
from mockpool.pool.spec import parse_spec

SPEC = """
[pool]
clock = "virtual"
seed = 0

[config]
NEGOTIATOR_INTERVAL = 60
CLAIM_WORKLIFE = {worklife}

[[startds]]
count = 1
config = '''
NUM_CPUS = 2
SLOT_TYPE_0_PARTITIONABLE = False
'''

[[submit]]
at = 0
owner = "alice"
description = '''
executable = /bin/sleep
arguments = 20
request_memory = 100
queue 10
'''
"""


def _run(worklife: int) -> tuple[int, float, set[str]]:
    with Pool(parse_spec(SPEC.format(worklife=worklife), "<reuse>")) as pool:
        assert pool.wait(lambda: len(pool.jobs("JobStatus == 4", history=True)) == 10, 100)
        matches = sum(len(c.matches) for c in pool.negotiator_log.cycles)
        done = max(int(j.get_value("CompletionDate")) for j in pool.jobs(history=True))
        events = pool.events
    claims = {e["claim"] for e in events if e["kind"] == "activate"}
    return matches, done, claims


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
