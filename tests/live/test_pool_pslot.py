"""End to end on real Ray actors and gRPC: the 10-cpu partitionable slot and 15 jobs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import grpc
import grpc.aio
import pytest

from mockpool import Pool
from mockpool.pool.client import PoolError
from mockpool.pool.spec import load_spec
from mockpool.v1 import collector_pb2, collector_pb2_grpc

pytestmark = [pytest.mark.live, pytest.mark.slow]

SPEC = Path(__file__).resolve().parents[2] / "examples" / "pslot.toml"


@pytest.fixture(scope="module")
def pool(ray_session: None) -> Iterator[Pool]:
    spec = load_spec(SPEC)
    spec.time_scale = 20  # 60 pool s jobs take 3 real s: time to look at the busy slots
    with Pool(spec) as p:
        yield p


def _cpus(ad) -> int:  # type: ignore[no-untyped-def]
    return int(ad.get_value("Cpus", -1))


def test_first_cycle_matches_ten_and_carves_dynamic_slots(pool: Pool) -> None:
    assert pool.wait(lambda: len(pool.negotiator_log.cycles) >= 1, timeout=30)
    first = pool.negotiator_log.cycles[0]
    assert len(first.matches) == 10
    assert all(slot == "slot1@exec0001" for _, slot in first.matches)
    assert "Successfully matched with slot1@exec0001" in "\n".join(pool.negotiator_log.lines)

    def carved() -> bool:
        return len(pool.slots("DynamicSlot =?= true")) == 10

    assert pool.wait(carved, timeout=30)
    slots = {str(a.get_value("Name")): a for a in pool.slots()}
    want = {"slot1@exec0001"} | {f"slot1_{i}@exec0001" for i in range(1, 11)}
    assert set(slots) == want
    for i in range(1, 11):
        d = slots[f"slot1_{i}@exec0001"]
        assert _cpus(d) == 1 and d.get_value("SlotType") == "Dynamic"
        assert d.get_value("State") == "Claimed"
        assert d.get_value("RemoteOwner") == "alice@mockpool"
    p = slots["slot1@exec0001"]
    assert _cpus(p) == 0 and p.get_value("PartitionableSlot") is True
    assert p.get_value("TotalSlotCpus") == 10


def test_all_fifteen_jobs_complete(pool: Pool) -> None:
    def done() -> bool:
        return len(pool.jobs("JobStatus == 4", history=True)) == 15

    assert pool.wait(done, timeout=60)
    jobs = pool.jobs(history=True)
    for j in jobs:
        assert j.get_value("RemoteWallClockTime") == pytest.approx(60, abs=1)
        assert j.get_value("CompletionDate") >= j.get_value("JobStartDate") + 59
    assert pool.jobs() == []  # the queue is empty
    # the dynamic slots went back to the partitionable slot
    assert pool.wait(lambda: len(pool.slots()) == 1 and _cpus(pool.slots()[0]) == 10, timeout=30)
    kinds = {e["kind"] for e in pool.events}
    assert {"submit", "match", "claim", "activate", "job_exit", "release"} <= kinds


def test_bad_input_is_refused_and_changes_nothing(pool: Pool) -> None:
    before = [(j.get_value("ClusterId"), j.get_value("ProcId")) for j in pool.all_jobs()]
    with pytest.raises(PoolError) as info:
        pool.submit(
            "executable = /bin/sleep\nrequest_memory = 12Q\nqueue\n",
            owner="alice",
            source="bad.sub",
        )
    assert "bad.sub:2" in str(info.value) and "12Q" in str(info.value)
    results = pool.act("remove", ["999.0"])
    assert len(results) == 1 and not results[0].ok and "999.0" in results[0].error
    with pytest.raises(PoolError, match="constraint"):
        pool.jobs("JobStatus ==")
    after = [(j.get_value("ClusterId"), j.get_value("ProcId")) for j in pool.all_jobs()]
    assert after == before
    # the pool still works: a good submit after the bad ones runs
    cluster, n = pool.submit("executable = /bin/sleep\narguments = 10\nqueue 1\n", owner="bob")
    assert n == 1
    assert pool.wait(
        lambda: len(pool.jobs(f"ClusterId == {cluster} && JobStatus == 4", history=True)) == 1,
        timeout=60,
    )


async def test_rpc_without_token_is_refused(pool: Pool) -> None:
    async with grpc.aio.insecure_channel(pool.collector_address) as ch:
        stub = collector_pb2_grpc.CollectorStub(ch)
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await stub.Query(collector_pb2.QueryRequest(ad_type="Machine"), timeout=10)
    assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED


def test_negotiator_ad_has_cycle_stats(pool: Pool) -> None:
    ads = pool.ads("Negotiator")
    assert len(ads) == 1
    neg = ads[0]
    assert neg.get_value("LastNegotiationCycleMatches0") is not None
    assert isinstance(neg.get_value("LastNegotiationCycleDuration0"), (int, float))
