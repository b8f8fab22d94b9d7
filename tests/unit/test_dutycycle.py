"""RecentDaemonCoreDutyCycle: 1 - select wait / loop time over the recent window."""

from __future__ import annotations

import asyncio

import pytest

from mockpool.config import ConfigDict
from mockpool.dutycycle import DutyCycle, install, window_of


class _Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def test_duty_cycle_is_the_share_of_the_window_not_spent_waiting() -> None:
    clock = _Clock(100.0)
    meter = DutyCycle(20.0, monotonic=clock)  # buckets of 1 s
    meter.waited(100.0, 100.5)
    meter.waited(101.2, 101.7)
    clock.t = 102.0
    # 2 s since the meter began, 1 s of it waiting
    assert meter.recent() == pytest.approx(0.5)


def test_a_wait_across_buckets_is_shared_and_old_buckets_leave_the_window() -> None:
    clock = _Clock(100.0)
    meter = DutyCycle(20.0, monotonic=clock)
    meter.waited(100.0, 110.0)  # ten buckets of 1 s
    meter.waited(124.5, 124.75)
    clock.t = 125.0
    # the window is the buckets from 106 on (125 - 20 = 105, whole buckets after it):
    # 19 s, of which 106..110 (4 s) and 0.25 s waited
    assert meter.recent() == pytest.approx(1 - 4.25 / 19)
    clock.t = 140.0
    # from 121 on: 19 s, 0.25 s waited
    assert meter.recent() == pytest.approx(1 - 0.25 / 19)


def test_a_wait_starting_on_a_rounded_bucket_edge_is_counted_and_ends() -> None:
    # window 12 s, steps of 0.6: 18.599999999999998 / 0.6 floors to 30, whose end
    # (31 * 0.6) rounds to the start itself; the meter once spun there for ever
    clock = _Clock(18.0)
    meter = DutyCycle(12.0, monotonic=clock)
    meter.waited(18.599999999999998, 19.5)
    clock.t = 19.5
    assert meter.recent() == pytest.approx(1 - 0.9 / 1.5)


def test_a_wait_longer_than_the_window_fills_the_window() -> None:
    clock = _Clock(0.0)
    meter = DutyCycle(20.0, monotonic=clock)
    meter.waited(0.0, 1e6)  # a loop idle for days: only the window's buckets are kept
    clock.t = 1e6
    assert meter.recent() == pytest.approx(0.0)
    assert len(meter._waits) <= 21


def test_no_time_no_duty_and_never_below_zero() -> None:
    clock = _Clock(5.0)
    meter = DutyCycle(20.0, monotonic=clock)
    assert meter.recent() == 0.0
    meter.waited(5.0, 7.0)
    clock.t = 6.0  # a wait told past "now" (jitter): published as 0, as HTCondor does
    assert meter.recent() == 0.0


def test_window_is_the_knob_in_pool_seconds_over_the_time_scale() -> None:
    assert window_of(ConfigDict(), 60.0) == pytest.approx(20.0)
    assert window_of(ConfigDict({"STATISTICS_WINDOW_SECONDS": "600"}), 60.0) == 10.0
    both = ConfigDict({"STATISTICS_WINDOW_SECONDS": "600", "DCSTATISTICS_WINDOW_SECONDS": "120"})
    assert window_of(both, 1.0) == 120.0
    with pytest.raises(ValueError, match="STATISTICS_WINDOW_SECONDS"):
        window_of(ConfigDict({"STATISTICS_WINDOW_SECONDS": "soon"}), 1.0)
    with pytest.raises(ValueError, match="> 0"):
        DutyCycle(0.0)


async def test_install_times_the_running_loops_select_and_undo_restores_it() -> None:
    loop = asyncio.get_running_loop()
    selector = loop._selector  # type: ignore[attr-defined]
    meter = DutyCycle(60.0)
    undo = install(loop, meter)
    assert undo is not None
    try:
        await asyncio.sleep(0.01)  # the loop waits in select() for this
        assert meter._waits, "no select() wait was recorded"
        assert 0.0 <= meter.recent() <= 1.0
    finally:
        undo()
    assert loop._selector is selector  # type: ignore[attr-defined]
