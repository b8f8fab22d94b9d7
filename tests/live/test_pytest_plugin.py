"""The registered pytest plugin: `mockpool_factory` starts a pool from inline config."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

pytestmark = [pytest.mark.live, pytest.mark.slow]


def test_factory_pool_runs_jobs(mockpool_factory: Callable[..., Any]) -> None:
    pool = mockpool_factory(config={"NEGOTIATOR_INTERVAL": 20}, time_scale=100)
    assert pool.spec.config.get_int("NEGOTIATOR_INTERVAL") == 20
    cluster, n = pool.submit("executable = /bin/sleep\narguments = 60\nqueue 4", owner="me")
    assert n == 4

    def done() -> bool:
        return len(pool.jobs(f"ClusterId == {cluster} && JobStatus == 4", history=True)) == 4

    assert pool.wait(done, timeout=60)
    cycles = pool.negotiator_log.cycles
    # a p-slot without a consumption policy is matched whole; the schedd starts the other
    # jobs on the claim's leftovers (CLAIM_PARTITIONABLE_LEFTOVERS), without more cycles
    leftovers = sum(e["kind"] == "leftover_match" for e in pool.events)
    assert sum(len(c.matches) for c in cycles) + leftovers == 4 and leftovers >= 1
    # the default pool: one 4-cpu machine with one partitionable slot (the dynamic slots
    # leave the collector at the startd's next update after the jobs end)
    assert pool.wait(
        lambda: {str(a.get_value("Name")) for a in pool.slots()} == {"slot1@exec0001"}, 60
    )
