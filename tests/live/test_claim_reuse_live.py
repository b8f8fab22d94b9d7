"""Claim reuse and CLAIM_WORKLIFE on a live pool of Ray actors (see the virtual twin in
tests/virtual/test_claim_reuse.py for the exact timeline)."""

from __future__ import annotations

import pytest

from mockpool import Pool
from mockpool.pool.spec import parse_spec
from mockpool.startd.machine import WORKLIFE

pytestmark = [pytest.mark.live, pytest.mark.slow]

SPEC = """
[pool]
time_scale = 60
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


def _run(worklife: int) -> tuple[int, set[str], list[dict]]:
    with Pool(parse_spec(SPEC.format(worklife=worklife), "<reuse>")) as pool:
        assert pool.wait(lambda: len(pool.jobs("JobStatus == 4", history=True)) == 10, 60)
        matches = sum(len(c.matches) for c in pool.negotiator_log.cycles)
        events = pool.events
    claims = {e["claim"] for e in events if e["kind"] == "activate"}
    return matches, claims, events


def test_reuse_and_worklife(ray_session: None) -> None:
    matches, claims, _ = _run(-1)
    assert matches == 2 and len(claims) == 2  # every later job reused a claim
    matches, claims, events = _run(0)
    assert matches == 10 and len(claims) == 10  # one job per claim: a cycle each
    # each claim closed with its job, on the startd's side; the schedd never tried it again
    releases = [e for e in events if e["kind"] == "release"]
    assert len(releases) == 10 and {e.get("reason") for e in releases} == {WORKLIFE}
    assert not [e for e in events if e["kind"] in ("activate_failed", "claim_reuse")]
