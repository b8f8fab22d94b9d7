"""Tuning to the cycle, from seed 000, in virtual time (claim reuse off: CLAIM_WORKLIFE 0).

Jobs of 90 s matched every 50 s: a slot is matched, runs 90 s and waits for the cycle at
100 s: loading factor 90/100 = 0.9, where a 60 s cycle would give 90/120 = 0.75. As the
durations spread (normal, sigma from 0 to 60 s), more jobs overrun a cycle boundary by a
little or end early in one, and the benefit of the tuned interval disappears.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mockpool.pool.api import run_pool
from mockpool.pool.spec import parse_spec

SPEC = """
[pool]
clock = "virtual"
duration = 30000
until_done = true
seed = 0

[config]
NEGOTIATOR_INTERVAL = {c}
CLAIM_WORKLIFE = 0

[[startds]]
count = 1
config = '''
NUM_CPUS = 8
SLOT_TYPE_0_PARTITIONABLE = False
'''

[[workload]]
name = "tuned"
owner = "alice"
jobs = 200
duration = {duration}
request_memory = 100
"""


def _lf(c: int, sigma: float, out: Path) -> float:
    duration = "90" if sigma == 0 else f'{{ dist = "normal", mean = 90, sigma = {sigma} }}'
    summary = run_pool(parse_spec(SPEC.format(c=c, duration=duration), "<tuning>"), out)
    return summary["measures"]["pool_loading_factor"]


def test_jobs_of_90_s_on_a_50_s_cycle_reach_0_9(tmp_path: Path) -> None:
    lf = {c: _lf(c, 0, tmp_path / f"c{c}") for c in (40, 50, 60)}
    # 90 s jobs: matched every 2 cycles of 50 (0.9), of 60 (90/120) or 3 of 40 (90/120)
    assert lf == pytest.approx({40: 0.75, 50: 0.9, 60: 0.75}, abs=0.01)


def test_the_benefit_disappears_as_durations_spread(tmp_path: Path) -> None:
    # sigma = 40 s: the tuned 50 s cycle is no better than an untuned one any more
    lf = {c: _lf(c, 40, tmp_path / f"c{c}") for c in (40, 50, 60)}
    assert lf[50] < 0.85
    assert lf[50] <= max(lf[40], lf[60]) + 0.01
