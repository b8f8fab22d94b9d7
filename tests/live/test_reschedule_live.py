"""End to end: a submit gets its cycle at once, as in HTCondor, not at the next interval.

The schedd sends its Submitter ad and then asks the negotiator for a cycle (condor_submit's
reschedule), so the cycle sees the new submitter. NEGOTIATOR_INTERVAL is 600 pool
seconds here: a job that waited for the interval would start about 600 s after it was
queued; it starts within seconds.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mockpool import Pool

pytestmark = [pytest.mark.live, pytest.mark.slow]

SPEC = """
[pool]
time_scale = 30
duration = 3600
seed = 1

[config]
NEGOTIATOR_INTERVAL = 600

[[startds]]
name = "exec{:04d}"
count = 1
config = '''
NUM_CPUS = 2
MEMORY = 2048
'''

[[schedds]]
count = 1
"""
JOB = "executable = /bin/sleep\narguments = 600\nrequest_memory = 128\nqueue 2\n"


@pytest.fixture(scope="module")
def pool(ray_session: None) -> Iterator[Pool]:
    with Pool(SPEC) as p:
        yield p


def test_jobs_submitted_after_the_first_cycle_start_without_waiting_for_the_next(
    pool: Pool,
) -> None:
    def cycles() -> int:
        return sum("Finished Negotiation Cycle" in line for line in pool.negotiator_log_lines)

    assert pool.wait(lambda: cycles() >= 1, timeout=60)  # the next is 600 s away
    cluster, n = pool.submit(JOB, owner="alice")
    assert n == 2
    running = f"ClusterId == {cluster} && JobStatus == 2"
    assert pool.wait(lambda: len(pool.jobs(running)) == 2, timeout=60)
    for job in pool.jobs(f"ClusterId == {cluster}"):
        waited = job.get_value("JobCurrentStartDate") - job.get_value("QDate")
        assert 0 <= waited < 60, waited  # SCHEDD_MIN_INTERVAL (5) and the network, not 600
