"""The garbage collector's pace: paused around a negotiation cycle, as it was after."""

from __future__ import annotations

import gc
import threading

import pytest

from mockpool import gctune


@pytest.fixture
def collector_on():  # type: ignore[no-untyped-def]
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_paused_blocks_nest_and_the_collector_resumes_after_the_last(collector_on) -> None:  # type: ignore[no-untyped-def]
    with gctune.paused():
        assert not gc.isenabled()
        with gctune.paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer block still runs
    assert gc.isenabled()


def test_a_collector_that_was_off_stays_off() -> None:
    was = gc.isenabled()
    gc.disable()
    try:
        with gctune.paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        if was:
            gc.enable()


def test_blocks_that_overlap_across_threads_resume_once_both_end(collector_on) -> None:  # type: ignore[no-untyped-def]
    inside, leave = threading.Event(), threading.Event()

    def other() -> None:
        with gctune.paused():
            inside.set()
            leave.wait()

    t = threading.Thread(target=other)
    with gctune.paused():
        t.start()
        inside.wait()
    assert not gc.isenabled()  # the other thread's block is still open
    leave.set()
    t.join()
    assert gc.isenabled()


def test_an_error_in_the_block_still_resumes_the_collector(collector_on) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError), gctune.paused():
        raise ValueError("boom")
    assert gc.isenabled()
