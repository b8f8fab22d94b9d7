"""A used-up partitionable slot is not matched again and again (virtual time, end to end).

exec0001's p-slot gives its 4 cpus to one long job and advertises Cpus = 0 from then on;
exec0002 and exec0003 have 4 idle cpus each; a startd and the central manager restart
before a one-cpu job arrives. NEGOTIATOR_PRE_JOB_RANK ranks the used-up p-slot first and
condor_submit writes no cpu clause for a one-cpu job: without WithinResourceLimits the
negotiator matched exec0001 every cycle and the startd refused it every time, while the
job waited for the long one to end."""

from __future__ import annotations

from mockpool import Pool
from mockpool.pool.spec import parse_spec

SPEC = """
[pool]
clock = "virtual"
seed = 3

[config]
NEGOTIATOR_INTERVAL = 20
UPDATE_INTERVAL = 60
SCHEDD_INTERVAL = 60

[[startds]]
count = 3
machines_per_actor = 1
config = '''
NUM_CPUS = 4
MEMORY = 8192
SLOT_TYPE_1 = 100%
SLOT_TYPE_1_PARTITIONABLE = True
'''

[[schedds]]
count = 1

[[submit]]
at = 0
owner = "alice"
description = '''
executable = /bin/sleep
arguments = 2000
request_cpus = 4
request_memory = 1024
queue 1
'''

[[submit]]
at = 150
owner = "alice"
description = '''
executable = /bin/sleep
arguments = 100
request_cpus = 1
request_memory = 512
queue 1
'''

[[faults]]
kind = "restart"
target = "exec0002"
at = 50

[[faults]]
kind = "restart"
target = "central"
at = 70
"""


def test_one_cpu_job_runs_on_a_machine_with_free_cpus_at_once() -> None:
    with Pool(parse_spec(SPEC, "<t>")) as pool:
        pool.sleep_until(400)
        events = pool.events
    assert [e for e in events if e["kind"] == "claim_refused"] == []
    (act,) = [e for e in events if e["kind"] == "activate" and e["job"] == "2.0"]
    # submitted at 150; the next cycle (every 20 s) matches it on a machine with free cpus
    assert act["slot"] in ("slot1_1@exec0002", "slot1_1@exec0003")
    assert 150 < act["t"] <= 150 + 20 + 1
    exits = [e for e in events if e["kind"] == "job_exit" and e.get("job") == "2.0"]
    assert exits and exits[0]["t"] == act["t"] + 100
