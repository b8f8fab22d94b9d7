"""The negotiator in an actor of its own (``[placement] negotiator = "own"``): it reads
columnar snapshots from the collector over gRPC, and the p-slot example allocates as
with the negotiator beside the collector."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mockpool import Pool
from mockpool.pool.spec import load_spec

pytestmark = [pytest.mark.live, pytest.mark.slow]

SPEC = Path(__file__).resolve().parents[2] / "examples" / "pslot.toml"


@pytest.fixture(scope="module")
def pool(ray_session: None) -> Iterator[Pool]:
    spec = load_spec(SPEC)
    spec.time_scale = 20
    spec.placement["negotiator"] = "own"
    with Pool(spec) as p:
        yield p


def test_the_negotiator_runs_apart_and_allocates_as_beside_the_collector(pool: Pool) -> None:
    assert pool.wait(lambda: len(pool.negotiator_log.cycles) >= 1, timeout=30)
    first = pool.negotiator_log.cycles[0]
    assert len(first.matches) == 10  # the seed's numbers, as examples/pslot.toml gives them
    assert all(slot == "slot1@exec0001" for _, slot in first.matches)

    def done() -> bool:
        return len(pool.jobs("JobStatus == 4", history=True)) == 15

    assert pool.wait(done, timeout=120)
    by_role = {st["role"]: st for st in pool.status()}
    central, negotiator = by_role["central"], by_role["negotiator"]
    assert central["pid"] != negotiator["pid"]
    assert list(central["services"]) == ["CollectorService"]
    assert list(negotiator["services"]) == ["NegotiatorService"]
    # a later cycle read the slot columns its first read, sent packed by the collector
    last = negotiator["services"]["NegotiatorService"]["last"]
    assert last["snapshot_columns"] > 5
    assert central["rpcs_received"]["Snapshot"] >= 2


def test_userprio_finds_the_negotiator_where_its_ad_says(pool: Pool) -> None:
    ads = pool.userprio()
    assert "alice@mockpool" in {str(a.get_value("Name")) for a in ads}
    pool.userprio("setfactor", "alice@mockpool", 5.0)
    (alice,) = [a for a in pool.userprio() if a.get_value("Name") == "alice@mockpool"]
    assert alice.get_value("PriorityFactor") == 5.0


def test_a_crashed_negotiator_comes_back_alone_and_negotiates_again(pool: Pool) -> None:
    cycles = len(pool.negotiator_log.cycles)
    pool.restart("negotiator")
    roles = [st["role"] for st in pool.status()]
    assert roles.count("central") == 1 and roles.count("negotiator") == 1
    pool.submit("executable = /bin/sleep\narguments = 30\nrequest_cpus = 1\nqueue 2", owner="alice")
    assert pool.wait(lambda: len(pool.negotiator_log.cycles) > cycles, timeout=60)

    def done() -> bool:
        return len(pool.jobs("JobStatus == 4", history=True)) == 17

    assert pool.wait(done, timeout=120)
