"""Shared builders for virtual-time tests."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from mockpool import Pool
from mockpool.pool.check import Report, check


def _check_pool(pool: Pool) -> Report:
    events = list(enumerate(pool.events, 1))
    queue, history = [], []
    for name in pool.spec.schedd_names:
        queue += pool.jobs(schedd=name)
        history += pool.jobs(schedd=name, history=True)
    return check(events, queue, history, pool.slots())


@pytest.fixture
def check_pool() -> Callable[[Pool], Report]:
    """The invariant checker over a running pool's events and its final ads."""
    return _check_pool
