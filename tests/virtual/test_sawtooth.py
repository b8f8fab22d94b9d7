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
CLAIM_WORKLIFE = {worklife}

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


def _measured(x: float, out: Path, *, worklife: int = 0, per_slot: int = JOBS_PER_SLOT) -> float:
    d = round(x * C)
    periods = per_slot * math.ceil(x + 1e-9)  # every job, then the cycle after
    text = SPEC.format(
        duration=(periods + 2) * C + 10,
        c=C,
        worklife=worklife,
        slots=SLOTS,
        d=d,
        jobs=SLOTS * per_slot,
    )
    summary = run_pool(parse_spec(text, f"<saw-tooth D/C={x:.1f}>"), out)
    assert summary["jobs"]["Completed"] == SLOTS * per_slot
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


def test_with_claim_reuse_short_jobs_keep_the_pool_near_full(tmp_path: Path) -> None:
    # CLAIM_WORKLIFE = -1: each slot runs its n jobs back to back on one claim from the
    # first cycle; the window ends at the first cycle after the last job, so the pool is
    # busy n·D of C·(⌊n·D/C⌋ + 1): n·x / (⌊n·x⌋ + 1), near 1 at every D/C (the
    # saw-tooth's 0.2 at D/C = 0.2 becomes 0.89 with 40 jobs a slot).
    n = 40
    for x in (0.2, 0.5, 1.0, 1.5, 2.5, 4.0):
        got = _measured(x, tmp_path / f"reuse{x}", worklife=-1, per_slot=n)
        want = n * x / (math.floor(n * x + 1e-9) + 1)
        assert got == pytest.approx(want, abs=0.01), x
        assert got > 0.88 and got >= sawtooth(x + 1e-9)
