"""The saw-tooth, from seed 000, in virtual time: fixed-duration jobs on static slots, no
claim reuse (CLAIM_WORKLIFE = 0), a fixed NEGOTIATOR_INTERVAL C. A slot is matched at a
cycle, runs its job for D, and waits for the first cycle after the job ends, so its
loading factor is D / (C·(⌊D/C⌋ + ⌈D/C - ⌊D/C⌋⌉)). Measured over whole match periods it
must agree within ±0.01 at every D/C from 0.2 to 6 in steps of 0.1.

At a whole D/C the job ends at the very instant a cycle starts, and that cycle has
already fetched its ads: the slot waits one more period, the formula's value from the
right (where the ⌈⌉ term reads 1); as in HTCondor, whose negotiator cannot see a startd
update that has not reached the collector when the cycle starts.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from mockpool.pool.api import run_pool
from mockpool.pool.measures import sawtooth
from mockpool.pool.spec import parse_spec

C = 100
SLOTS = 2
JOBS_PER_SLOT = 4

SPEC = """
[pool]
clock = "virtual"
duration = {duration}
seed = 0

[config]
NEGOTIATOR_INTERVAL = {c}
CLAIM_WORKLIFE = 0

[[startds]]
count = 1
config = '''
NUM_CPUS = {slots}
SLOT_TYPE_0_PARTITIONABLE = False
'''

[[submit]]
at = 0
owner = "alice"
description = '''
executable = /bin/sleep
arguments = {d}
request_memory = 100
queue {jobs}
'''
"""


def _measured(x: float, out: Path) -> float:
    d = round(x * C)
    periods = JOBS_PER_SLOT * math.ceil(x + 1e-9)  # every job, then the cycle after
    text = SPEC.format(
        duration=(periods + 2) * C + 10, c=C, slots=SLOTS, d=d, jobs=SLOTS * JOBS_PER_SLOT
    )
    summary = run_pool(parse_spec(text, f"<saw-tooth D/C={x:.1f}>"), out)
    assert summary["jobs"]["Completed"] == SLOTS * JOBS_PER_SLOT
    return summary["measures"]["pool_loading_factor"]


def test_the_measured_loading_factor_follows_the_saw_tooth(tmp_path: Path) -> None:
    misses = []
    for k in range(2, 61):
        x = k / 10
        want = sawtooth(x + 1e-9) if k % 10 == 0 else sawtooth(x)
        got = _measured(x, tmp_path / f"x{k}")
        if abs(got - want) > 0.01:
            misses.append((x, got, want))
    assert not misses


def test_a_whole_multiple_waits_one_more_period(tmp_path: Path) -> None:
    # D = C: the formula's 1.0 holds only if the slot were matched at the instant its
    # job ends; it is matched a cycle later, so it is busy half the time.
    assert _measured(1.0, tmp_path / "one") == pytest.approx(0.5, abs=0.01)
