"""The worklife scenario from HTCondor practice, scaled 1:10 and run in virtual time.

groupA (quota 25 of a 100-slot pool, surplus allowed) fills the pool with 200 jobs of
3000 s; at 600 groupB (better priority, quota 100) submits 100 jobs. With claim reuse and
CLAIM_WORKLIFE = -1, groupA's claims keep running groupA's jobs: groupB waits until
groupA's queue runs dry (two rounds, about 6000 s). With CLAIM_WORKLIFE = 1800, each
claim takes no new job once it is 1800 s old: the first round's claims end at about
3000, and groupB reaches its share (the pool less groupA's quota: 75) within 1800 s
plus one job length of its submit.
"""

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
GROUP_NAMES = "groupA, groupB"
GROUP_QUOTA_groupA = 25
GROUP_QUOTA_groupB = 100
GROUP_ACCEPT_SURPLUS = true

[accountant."groupA.alice@mockpool"]
factor = 1000

[accountant."groupB.bob@mockpool"]
factor = 1

[[startds]]
count = 25
config = '''
NUM_CPUS = 4
SLOT_TYPE_0_PARTITIONABLE = False
'''

[[submit]]
at = 0
owner = "alice"
description = '''
executable = /bin/sleep
arguments = 3000
accounting_group = groupA
request_memory = 100
queue 200
'''

[[submit]]
at = 600
owner = "bob"
description = '''
executable = /bin/sleep
arguments = 3000
accounting_group = groupB
request_memory = 100
queue 100
'''
"""


def _groupb_running_at(worklife: int, times: list[float]) -> list[int]:
    with Pool(parse_spec(SPEC.format(worklife=worklife), "<worklife>")) as pool:
        out = []
        for t in times:
            pool.sleep_until(t)
            out.append(len(pool.jobs('Owner == "bob" && JobStatus == 2')))
        return out


def test_without_a_worklife_group_b_waits_for_group_a_to_run_dry() -> None:
    # groupA's second round starts on its own claims at ~3005 and ends at ~6005
    assert _groupb_running_at(-1, [3200, 5900, 6200]) == [0, 0, 100]


def test_with_a_worklife_of_1800_group_b_gets_its_share_after_one_job() -> None:
    # claims made at ~5 are 3000 s old when their first job ends: no second job; the
    # next cycle gives groupA its quota (25) and groupB the rest (its share: 75), long
    # before its submit + 1800 s + one job
    running = _groupb_running_at(1800, [2900, 3200, 600 + 1800 + 3000])
    assert running == [0, 75, 75]
