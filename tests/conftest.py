"""For every test: under pytest-xdist, the worker of the tests that need no Ray of the
session (``tests/live/conftest.py`` groups them "no-ray") yields the CPU to the other,
whose live pools must keep up with their time scale. Ray starts its workers (the pool's
actors) at niceness 15, so the unit tests, at 0, took the CPU from the actors of a live
pool beside them: the no-ray worker runs at the lowest priority, 19."""

from __future__ import annotations

import os

import pytest

# how much lower the "no-ray" worker's CPU priority is (os.nice caps it at 19)
NO_RAY_NICENESS = 19
_niced = False


def pytest_runtest_setup(item: pytest.Item) -> None:
    global _niced
    if _niced or os.environ.get("PYTEST_XDIST_WORKER") is None:
        return
    if any(m.args[:1] == ("no-ray",) for m in item.iter_markers("xdist_group")):
        os.nice(NO_RAY_NICENESS)
        _niced = True
