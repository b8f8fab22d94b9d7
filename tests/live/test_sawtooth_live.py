"""The saw-tooth on a live pool of Ray actors at a modest scale: within ±0.05 of the
formula at a handful of D/C (the exact sweep is tests/virtual/test_sawtooth.py)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from mockpool.pool.api import run_pool
from mockpool.pool.measures import sawtooth
from mockpool.pool.spec import parse_spec

pytestmark = [pytest.mark.live, pytest.mark.slow]

C = 40
PER_SLOT = 3

SPEC = """
[pool]
time_scale = 40
duration = {duration}
seed = 0

[config]
NEGOTIATOR_INTERVAL = {c}
NEGOTIATOR_CYCLE_DELAY = 0
CLAIM_WORKLIFE = 0
UPDATE_INTERVAL = 300

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
arguments = {d}
request_memory = 100
queue {jobs}
'''
"""


@pytest.mark.parametrize("x", [0.5, 1.5, 2.5])
def test_live_loading_factor_follows_the_saw_tooth(
    ray_session: None, tmp_path: Path, x: float
) -> None:
    periods = PER_SLOT * math.ceil(x)
    text = SPEC.format(duration=(periods + 2) * C + 20, c=C, d=round(x * C), jobs=2 * PER_SLOT)
    summary = run_pool(parse_spec(text, f"<live saw-tooth {x}>"), tmp_path / "out")
    assert summary["jobs"]["Completed"] == 2 * PER_SLOT
    assert summary["measures"]["pool_loading_factor"] == pytest.approx(sawtooth(x), abs=0.05)
