"""The negotiator's snapshots after the first carry only the slot ads that changed, and
the cycles see every change (virtual time: exact cycle times)."""

from __future__ import annotations

from mockpool import Pool
from mockpool.pool.spec import parse_spec

SPEC = """
[pool]
clock = "virtual"
seed = 0

[config]
NEGOTIATOR_INTERVAL = 60
CLAIM_WORKLIFE = 0

[[startds]]
count = 4
config = '''
NUM_CPUS = 2
SLOT_TYPE_0_PARTITIONABLE = False
'''

[[submit]]
at = 0
owner = "alice"
description = '''
executable = /bin/sleep
arguments = 100
request_memory = 100
queue 2
'''
"""


def test_later_snapshots_carry_the_changed_slots_and_the_cycles_see_them() -> None:
    """Eight slots, two 100 s jobs. The snapshot at 5 carries all eight slots and the
    cycle matches two; by 65 those two are Claimed/Busy (the only change); their jobs
    end near 105 and the claims close (CLAIM_WORKLIFE 0), so 125's snapshot carries the
    same two again; at 185 and 245 nothing changed (the startds' next full update is due
    at 300): 8 + 2 + 2 + 0 + 0 slot ads in five snapshots, against 40 whole."""
    with Pool(parse_spec(SPEC, "<deltas>")) as pool:
        assert pool.wait(lambda: pool.now >= 250, 1000)
        per_cycle = [len(c.matches) for c in pool.negotiator_log.cycles]
        collector = pool.status()[0]["services"]["CollectorService"]
        done = len(pool.jobs("JobStatus == 4", history=True))
    assert per_cycle == [2, 0, 0, 0, 0] and done == 2
    assert (collector["snapshots"], collector["snapshot_deltas"]) == (5, 4)
    assert collector["snapshot_slot_ads"] == 12
