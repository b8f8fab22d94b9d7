"""RemoteWallClockTime across a schedd crash, end to end in virtual time: the job is
credited up to its last wall-clock checkpoint, not up to the restart (wallclock.py)."""

from __future__ import annotations

import pytest

from mockpool import Pool
from mockpool.pool.spec import parse_spec

SPEC = """
[pool]
clock = "virtual"
seed = 1

[config]
NEGOTIATOR_INTERVAL = 20
WALL_CLOCK_CKPT_INTERVAL = 300

[[startds]]
count = 1
config = "NUM_CPUS = 1"

[[schedds]]
count = 1

[[submit]]
at = 0
owner = "alice"
description = '''
executable = /bin/sleep
arguments = 5000
job_lease_duration = 120
queue
'''

[[faults]]
kind = "crash"
target = "schedd1"
at = 750
duration = 1250
"""


def test_a_job_whose_claim_expired_while_its_schedd_was_down_is_credited_its_checkpoint() -> None:
    """The job starts at s (a few seconds in); the schedd's rounds, from its start at 0,
    are at 300 (run 300 - s: not longer than 300) and 600 (checkpoint 600 - s). Killed at
    750, the lease (120) runs out and the startd ends the claim; back at 2000, the schedd
    credits 600 - s, not 2000 - s, and the job runs again."""
    with Pool(parse_spec(SPEC, "<t>")) as pool:
        pool.sleep_until(2100)
        events = pool.events
        (ad,) = pool.jobs()
    started = [e["t"] for e in events if e["kind"] == "job_started"]
    assert len(started) == 2 and started[0] < 20 and started[1] >= 2000
    assert [e["kind"] for e in events if e["kind"] == "lease_expired"] == ["lease_expired"]
    assert ad.eval("RemoteWallClockTime") == pytest.approx(600 - started[0], abs=1e-3)
    assert "WallClockCheckpoint" not in ad  # credited, and the new run is not 300 s old
