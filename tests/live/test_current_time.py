"""End to end: CurrentTime and time() are the pool's date in every daemon, as its ads' dates.

Dates count from the pool's start date (pool time 0), and pool seconds (not the wall
clock's) after it. The machine's START opens 300 pool seconds after its startd began
(its DaemonStartTime, a date): a job queued at the start waits until then, and the
startd grants the claim only once its own clock says so. `status` and `q` constraints
see the same date.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mockpool import Pool

pytestmark = [pytest.mark.live, pytest.mark.slow]

OPENS = 300
SPEC = f"""
[pool]
time_scale = 60
duration = 3600
seed = 1

[config]
NEGOTIATOR_INTERVAL = 20
UPDATE_INTERVAL = 20

[[startds]]
name = "exec{{:04d}}"
count = 1
config = '''
NUM_CPUS = 2
MEMORY = 2048
START = CurrentTime >= DaemonStartTime + {OPENS} && time() >= DaemonStartTime + {OPENS}
'''

[[schedds]]
count = 1
"""
JOB = "executable = /bin/sleep\narguments = 60\nrequest_memory = 128\nqueue 1\n"


@pytest.fixture(scope="module")
def pool(ray_session: None) -> Iterator[Pool]:
    with Pool(SPEC) as p:
        yield p


def test_start_opens_at_pool_time_and_constraints_see_pool_time(pool: Pool) -> None:
    cluster, _ = pool.submit(JOB, owner="alice")
    assert pool.wait(lambda: len(pool.slots()) == 2, timeout=120)
    # the collector and the schedd evaluate constraints at the pool's date: its start
    # date plus pool seconds (ahead of the wall clock at a time scale of 60)
    start = int(pool.start_date)
    now = f"CurrentTime >= {start} && CurrentTime < {start} + 100000"
    assert len(pool.slots(f"{now} && time() == CurrentTime && MyCurrentTime <= time()")) == 2
    assert len(pool.jobs(f"{now} && QDate <= time()")) == 1
    assert pool.wait(lambda: pool.jobs(f"ClusterId == {cluster} && JobStatus == 2"), timeout=180)
    (job,) = pool.jobs(f"ClusterId == {cluster}")
    started = job.get_value("JobCurrentStartDate")
    assert isinstance(started, int) and started >= start + OPENS, (started, start)
