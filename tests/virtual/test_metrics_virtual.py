"""A small virtual pool's metrics, as its daemons' own status makes them: the golden
file of names, types and labels (values blanked), and the figures that must agree with
the pool's own queue and history."""

from __future__ import annotations

import os
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from mockpool import Pool
from mockpool.pool.metrics import exposition, shape
from mockpool.pool.spec import parse_spec

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "golden" / "metrics" / "virtual_pool.prom"

SPEC = """
[pool]
clock = "virtual"
seed = 0
metrics_htcondor = true

[config]
NEGOTIATOR_INTERVAL = 60
GROUP_NAMES = "group_a"
GROUP_QUOTA_DYNAMIC_group_a = 0.5

[[startds]]
count = 2
config = '''
NUM_CPUS = 2
SLOT_TYPE_0_PARTITIONABLE = False
'''

[[submit]]
at = 0
owner = "alice"
description = '''
executable = /bin/sleep
arguments = 50
request_memory = 100
queue 6
'''

[[submit]]
at = 0
owner = "bob"
description = '''
executable = /bin/sleep
arguments = 50
request_memory = 100
accounting_group = group_a
queue 6
'''
"""


def test_a_virtual_pool_s_metrics() -> None:
    with Pool(parse_spec(SPEC, "<metrics>")) as pool:
        pool.sleep_until(150)
        text = exposition(pool.metrics(), htcondor=True).decode()
        completed = len(pool.jobs("JobStatus == 4", history=True))
    got = shape(text)
    if os.environ.get("MOCKPOOL_UPDATE_GOLDEN"):
        GOLDEN.write_text(got)
    assert got == GOLDEN.read_text()

    values: dict[str, float] = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            values[s.name] = values.get(s.name, 0.0) + s.value
    assert values["mockpool_time_pool_seconds"] == 150
    assert values["mockpool_time_scale"] == 0  # virtual: no real-time rate
    assert 0 < completed < 12
    # Completed jobs from the schedd's counter, the startds' exits and the history agree
    left = {
        s.labels["state"]: s.value
        for fam in text_string_to_metric_families(text)
        for s in fam.samples
        if s.name == "mockpool_jobs_left_queue_total"
    }
    assert left == {"Completed": completed, "Removed": 0}
    assert values["mockpool_job_exits_total"] == completed
    # one histogram observation per cycle
    cycles = values["mockpool_negotiation_cycles_total"]
    assert cycles >= 3
    assert values["mockpool_negotiation_cycle_duration_pool_seconds_count"] == cycles
    assert values["mockpool_jobs"] == 12 - completed
    assert values["htcondor_pool_cpus_total"] == 4
