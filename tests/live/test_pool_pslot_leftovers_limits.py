"""End to end: a p-slot without a consumption policy (matched whole, carved by the schedd
from the claim's leftovers) and concurrency limits counted pool-wide."""

from __future__ import annotations

import pytest

from mockpool import Pool
from mockpool.pool.spec import parse_spec

pytestmark = [pytest.mark.live, pytest.mark.slow]

PSLOT_NO_POLICY = """
[pool]
time_scale = {scale}
duration = 3600

[config]
NEGOTIATOR_INTERVAL = {interval}
UPDATE_INTERVAL = 60
{extra}

[[startds]]
count = 1
config = '''
NUM_CPUS = 10
MEMORY = 10240
SLOT_TYPE_1 = 100%
SLOT_TYPE_1_PARTITIONABLE = True
NUM_SLOTS_TYPE_1 = 1
'''

[[submit]]
owner = "alice"
description = '''
executable = /bin/sleep
arguments = 100000
request_cpus = 2
request_memory = 1024
queue 5
'''
"""


def _running(pool: Pool) -> int:
    return len(pool.jobs("JobStatus == 2"))


def _matches(pool: Pool) -> list[int]:
    """Matches per logged cycle."""
    return [len(c.matches) for c in pool.negotiator_log.cycles]


def test_schedd_fills_a_pslot_from_leftovers_without_another_cycle(ray_session: None) -> None:
    # one cycle every 600 pool s (30 real s): the five jobs must all start from the one
    # match of the whole p-slot, the schedd claiming the leftovers 2 cpus at a time
    spec = parse_spec(PSLOT_NO_POLICY.format(scale=20, interval=600, extra=""), "leftovers.toml")
    with Pool(spec) as pool:
        assert pool.wait(lambda: _running(pool) == 5, timeout=25)
        assert sum(_matches(pool)) == 1  # the negotiator matched the p-slot once
        (m,) = [m for c in pool.negotiator_log.cycles for m in c.matches]
        assert m[1] == "slot1@exec0001"
        kinds = [e["kind"] for e in pool.events]
        assert kinds.count("leftover_match") == 4
        # (the startd's update follows the claims by a second of pool time)
        assert pool.wait(lambda: len(pool.slots("DynamicSlot =?= true")) == 5, timeout=25)
        dyn = pool.slots("DynamicSlot =?= true")
        assert sorted(int(a.get_value("Cpus")) for a in dyn) == [2] * 5
        (p,) = pool.slots("PartitionableSlot =?= true")
        assert p.get_value("Cpus") == 0 and p.lookup("ConsumptionCpus") is None


def test_without_leftovers_the_pslot_waits_for_a_cycle_per_job(ray_session: None) -> None:
    extra = "CLAIM_PARTITIONABLE_LEFTOVERS = false"
    spec = parse_spec(PSLOT_NO_POLICY.format(scale=30, interval=60, extra=extra), "noleft.toml")
    with Pool(spec) as pool:
        # three cycles with a match each: one job more per cycle, never two
        assert pool.wait(lambda: sum(_matches(pool)) >= 3, timeout=60)
        assert all(n <= 1 for n in _matches(pool))
        assert pool.wait(lambda: _running(pool) >= 3, timeout=20)
        assert _running(pool) <= sum(_matches(pool))
        assert "leftover_match" not in {e["kind"] for e in pool.events}


QUANTIZED = """
[pool]
time_scale = 20
duration = 3600

[config]
NEGOTIATOR_INTERVAL = 600

[[startds]]
count = 1
config = '''
NUM_CPUS = 10
MEMORY = 1903
SLOT_TYPE_1 = 100%
SLOT_TYPE_1_PARTITIONABLE = True
NUM_SLOTS_TYPE_1 = 1
CONSUMPTION_POLICY = True
NUM_CLAIMS = 20
CONSUMPTION_MEMORY = quantize(target.RequestMemory, {512})
'''

[[submit]]
owner = "alice"
description = '''
executable = /bin/sleep
arguments = 100000
request_memory = 100
queue 15
'''
"""


def test_consumption_policy_quantized_memory_three_slots_of_512(ray_session: None) -> None:
    with Pool(parse_spec(QUANTIZED, "quantized.toml")) as pool:
        assert pool.wait(lambda: _running(pool) == 3, timeout=30)
        assert max(_matches(pool)) == 3 and sum(_matches(pool)) == 3  # one cycle, 3 matches
        assert pool.wait(lambda: len(pool.slots("DynamicSlot =?= true")) == 3, timeout=30)
        dyn = pool.slots("DynamicSlot =?= true")
        assert sorted(int(a.get_value("Memory")) for a in dyn) == [512, 512, 512]
        (p,) = pool.slots("PartitionableSlot =?= true")
        assert p.get_value("Memory") == 1903 - 3 * 512 and p.get_value("NumClaims") == 20


LIMITS = """
[pool]
time_scale = 30
duration = 3600

[config]
NEGOTIATOR_INTERVAL = 60
UPDATE_INTERVAL = 60
DB_LIMIT = 3

[[startds]]
count = 1
config = '''
NUM_CPUS = 10
SLOT_TYPE_1 = 1/10
NUM_SLOTS_TYPE_1 = 10
'''

[[submit]]
owner = "alice"
description = '''
executable = /bin/sleep
arguments = 100000
concurrency_limits = DB
queue 10
'''
"""


def test_limit_of_three_runs_three_of_ten(ray_session: None) -> None:
    with Pool(parse_spec(LIMITS, "limits.toml")) as pool:
        assert pool.wait(lambda: _running(pool) == 3, timeout=30)

        def rejected_twice() -> bool:
            cycles = [c for c in pool.negotiator_log.cycles if c.rejections]
            return len(cycles) >= 2

        # a later cycle counts the three from the claimed slots' ads and matches none
        assert pool.wait(rejected_twice, timeout=30)
        reasons = {r.reason for c in pool.negotiator_log.cycles for r in c.rejections}
        assert reasons == {"concurrency limit db reached"}
        assert sum(_matches(pool)) == 3 and _running(pool) == 3
        busy = pool.slots('State == "Claimed"')
        assert [a.get_value("ConcurrencyLimits") for a in busy] == ["db"] * 3
        idle = pool.jobs("JobStatus == 1")
        assert len(idle) == 7
        # the negotiator names the limit to the schedd, which marks the job it was told of
        assert {j.get_value("LastRejMatchReason") for j in idle} >= {"concurrency limit db reached"}
