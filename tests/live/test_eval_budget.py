"""End to end: a catastrophic regular expression neither hangs a daemon nor slows others.

``(a+)+$`` against thirty a's and a '!' backtracks 2^30 ways. As a ``q`` or ``status``
constraint it is refused at once (RESOURCE_EXHAUSTED, naming the constraint) and the pool
keeps answering; as a job's Requirements the negotiator rejects that job for the cycle, by
name, and matches the others in the same cycle.
"""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import pytest

from mockpool import Pool, rpc
from mockpool.pool.client import PoolError
from mockpool.v1 import collector_pb2, schedd_pb2

pytestmark = [pytest.mark.live, pytest.mark.slow]

SPEC = """
[pool]
time_scale = 20
duration = 3600
seed = 1

[config]
NEGOTIATOR_INTERVAL = 20
UPDATE_INTERVAL = 20

[[startds]]
name = "exec{:04d}"
count = 1
config = '''
NUM_CPUS = 4
MEMORY = 4096
SLOT_TYPE_0_PARTITIONABLE = False
'''

[[schedds]]
count = 1
"""
AS = "a" * 30
POISON = f'regexp("(a+)+$", "{AS}!")'
# a distinct subject for every slot, so nothing is shared between evaluations
POISON_REQUIREMENTS = f'regexp("(a+)+$", strcat("{AS}", TARGET.Name, "!"))'
JOB = "executable = /bin/sleep\narguments = 600\nrequest_memory = 128\n"


@pytest.fixture(scope="module")
def pool(ray_session: None) -> Iterator[Pool]:
    with Pool(SPEC) as p:
        yield p


def answers_within_a_second(pool: Pool) -> tuple[int, int]:
    """(jobs, slots) from the schedd and the collector, each call under a 1 s deadline."""
    client = pool.client

    async def both() -> tuple[int, int]:
        name, stub = await client._schedd("")
        q = await rpc.call(
            stub.QueryJobs, schedd_pb2.JobQueryRequest(schedd_name=name), timeout=1.0
        )
        s = await rpc.call(
            client._collector.Query, collector_pb2.QueryRequest(ad_type="Machine"), timeout=1.0
        )
        return len(q.jobs), len(s.ads)

    return pool._run(both())


def test_catastrophic_constraints_are_refused_and_the_pool_keeps_answering(pool: Pool) -> None:
    pool.submit(JOB + "queue 2\n", owner="bob")
    assert pool.wait(lambda: len(pool.slots()) == 4, timeout=60)
    queries = {
        "q": lambda: pool.jobs(POISON),
        "status": lambda: pool.slots(POISON),
        "status, a subject per slot": lambda: pool.slots(
            f'regexp("(a+)+$", strcat("{AS}", Name, "!"))'
        ),
        "hold": lambda: pool.act("hold", constraint=POISON),
    }
    for what, query in queries.items():
        with pytest.raises(PoolError) as exc:
            query()
        assert exc.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED, what
        assert "regexp" in str(exc.value) and "too costly" in str(exc.value)
        jobs, _ = answers_within_a_second(pool)
        assert jobs >= 2
    # nothing was held, and ordinary regular expressions still work
    assert not pool.jobs("JobStatus == 5")
    assert len(pool.slots('regexp("^slot[0-9]+@exec0001$", Name)')) == 4


def test_poison_job_is_rejected_by_name_and_others_match_in_the_same_cycle(pool: Pool) -> None:
    poison_cluster, _ = pool.submit(
        JOB + f"requirements = {POISON_REQUIREMENTS}\nqueue 1\n", owner="mallory"
    )
    good_cluster, _ = pool.submit(JOB + "queue 1\n", owner="carol")
    poison_job, good_job = f"{poison_cluster}.0", f"{good_cluster}.0"

    def cycle_with_both():  # type: ignore[no-untyped-def]
        for c in pool.negotiator_log.cycles:
            if any(r.job == poison_job for r in c.rejections) and any(
                m.job == good_job for m in c.matches
            ):
                return c
        return None

    assert pool.wait(lambda: cycle_with_both() is not None, timeout=120)
    cycle = cycle_with_both()
    (rejection,) = [r for r in cycle.rejections if r.job == poison_job]
    assert rejection.submitter.startswith("mallory@")
    assert "too costly" in rejection.reason and "regular expression" in rejection.reason
    assert pool.wait(
        lambda: pool.jobs(f"ClusterId == {good_cluster} && JobStatus == 2"), timeout=60
    )
    assert pool.jobs(f"ClusterId == {poison_cluster}")[0].get_value("JobStatus") == 1
    jobs, slots = answers_within_a_second(pool)
    assert jobs >= 4 and slots >= 4
