"""End to end: examples/htcondor-config.toml, a pool configured with HTCondor config text
(use ROLE/FEATURE/POLICY, a START that extends HTCondor's default, dotted group names)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mockpool import Pool
from mockpool.pool.spec import load_spec

pytestmark = [pytest.mark.live, pytest.mark.slow]

SPEC = Path(__file__).resolve().parents[2] / "examples" / "htcondor-config.toml"


@pytest.fixture(scope="module")
def pool(ray_session: None) -> Iterator[Pool]:
    with Pool(load_spec(SPEC)) as p:
        yield p


def test_jobs_run_where_the_pasted_config_lets_them(pool: Pool) -> None:
    def done() -> bool:
        return len(pool.jobs("JobStatus == 4", history=True)) == 12

    assert pool.wait(done, timeout=120)
    hosts: dict[str, set[str]] = {}
    for job in pool.jobs(history=True):
        host = str(job.get_value("LastRemoteHost") or job.get_value("RemoteHost"))
        hosts.setdefault(str(job.get_value("Owner")), set()).add(host.split("@")[-1])
    # bob's 16 GB one-cpu jobs fail the cpu nodes' START (4 GB per core): big001 only
    assert hosts["bob"] == {"big001"}
    assert hosts["alice"] <= {"cpu001", "cpu002", "big001"}


def test_partitionable_slots_from_the_feature_template(pool: Pool) -> None:
    parents = {str(a.get_value("Name")): a for a in pool.slots("PartitionableSlot =?= true")}
    assert set(parents) == {"slot1@cpu001", "slot1@cpu002", "slot1@big001"}
    assert parents["slot1@big001"].get_value("TotalSlotCpus") == 16
    assert parents["slot1@cpu001"].get_value("TotalSlotCpus") == 8
