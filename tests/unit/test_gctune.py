"""The daemon actors' garbage-collector keeper (gctune.Keeper)."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from mockpool import gctune


class _Node:
    """An object in a reference cycle: only the cyclic collector frees it."""

    def __init__(self) -> None:
        self.me = self


@pytest.fixture
def thawed() -> Iterator[None]:
    """Leave the process as found: nothing of the test's frozen, the collector on."""
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()  # no automatic collection may come between what a test does and checks
    try:
        yield
    finally:
        gc.unfreeze()
        if enabled:
            gc.enable()


def test_a_tick_freezes_what_lives_and_collects_young_garbage_first(thawed: None) -> None:
    kept = [_Node() for _ in range(50)]
    garbage = _Node()
    gone = weakref.ref(garbage)
    del garbage
    frozen_before = gc.get_freeze_count()
    gctune.Keeper().tick()
    assert gone() is None  # collected, not frozen
    assert gc.get_freeze_count() >= frozen_before + len(kept)


def test_what_becomes_garbage_once_frozen_waits_for_the_full_collection(thawed: None) -> None:
    now = [0.0]
    keeper = gctune.Keeper(monotonic=lambda: now[0])
    node = _Node()
    gone = weakref.ref(node)
    keeper.tick()  # node is live: frozen
    del node
    now[0] = gctune.FULL_EVERY - 1
    keeper.tick()
    assert gone() is not None and keeper.full_collections == 0  # frozen garbage stays
    now[0] = gctune.FULL_EVERY
    keeper.tick()
    assert gone() is None and keeper.full_collections == 1
    now[0] = 2 * gctune.FULL_EVERY - 1
    keeper.tick()
    assert keeper.full_collections == 1  # the next is FULL_EVERY after this one
