"""mockpool.clock: hand-worked numbers with injected time, plus one real-time check."""

from __future__ import annotations

import asyncio
import time

import pytest

from mockpool.clock import Clock, LagStats, ManualClock, ScaledClock


class FakeTime:
    """A monotonic clock that moves only when the clock under test sleeps on it."""

    def __init__(self, late: float = 0.0, early_once: float = 0.0) -> None:
        self.mono = 500.0
        self.late = late  # real seconds each non-zero sleep overshoots by
        self.early_once = early_once  # the first sleep undershoots by this much
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.mono

    async def sleep(self, delay: float) -> None:
        self.sleeps.append(delay)
        if delay > 0:
            self.mono += delay + self.late - self.early_once
            self.early_once = 0.0


def scaled(scale: float, epoch: float, wall: float, fake: FakeTime) -> ScaledClock:
    return ScaledClock(
        scale, epoch, wall_time=lambda: wall, monotonic=fake.monotonic, real_sleep=fake.sleep
    )


def test_now_and_conversions() -> None:
    fake = FakeTime()
    clock = scaled(60, epoch=1000.0, wall=1010.0, fake=fake)
    # 10 real seconds after the epoch at 60 pool s per real s.
    assert clock.now() == pytest.approx(600.0)
    assert clock.pool_to_wall(600.0) == pytest.approx(1010.0)
    assert clock.wall_to_pool(1000.5) == pytest.approx(30.0)
    assert clock.pool_to_wall(clock.wall_to_pool(1234.5)) == pytest.approx(1234.5)
    fake.mono += 2.0  # two real seconds later: 12 * 60
    assert clock.now() == pytest.approx(720.0)


def test_epoch_in_the_future_gives_negative_time() -> None:
    clock = scaled(2, epoch=1005.0, wall=1000.0, fake=FakeTime())
    assert clock.now() == pytest.approx(-10.0)


def test_wall_clock_is_read_once() -> None:
    # A wall-clock step after construction must not move pool time.
    wall = [1000.0]
    fake = FakeTime()
    clock = ScaledClock(10, 1000.0, wall_time=lambda: wall[0], monotonic=fake.monotonic)
    wall[0] = 5000.0
    assert clock.now() == pytest.approx(0.0)


@pytest.mark.parametrize("bad", [0, -1, float("inf"), float("nan")])
def test_bad_time_scale(bad: float) -> None:
    with pytest.raises(ValueError, match="time_scale"):
        ScaledClock(bad, 0.0)


async def test_lag_is_recorded_in_pool_seconds() -> None:
    fake = FakeTime(late=0.05)  # every wake is 50 ms real late = 0.5 pool s at scale 10
    clock = scaled(10, epoch=100.0, wall=100.0, fake=fake)
    assert clock.lag_stats() == LagStats(count=0, max=0.0, mean=0.0, last=0.0)

    await clock.sleep_until(20.0)  # sleeps 2.0 real s, wakes at 2.05 -> pool 20.5
    assert fake.sleeps == [pytest.approx(2.0)]
    assert clock.now() == pytest.approx(20.5)
    await clock.sleep_until(30.0)  # 9.5 pool s = 0.95 real s, wakes at pool 30.5
    await clock.sleep_until(25.0)  # already past: lag 5.5, yields once with sleep(0)
    assert fake.sleeps[-1] == 0

    stats = clock.lag_stats()
    assert stats.count == 3
    assert stats.max == pytest.approx(5.5)
    assert stats.last == pytest.approx(5.5)
    assert stats.mean == pytest.approx((0.5 + 0.5 + 5.5) / 3)

    clock.reset_lag_stats()
    assert clock.lag_stats().count == 0


async def test_early_wake_sleeps_again() -> None:
    fake = FakeTime(early_once=1.0)
    clock = scaled(1, epoch=0.0, wall=0.0, fake=fake)
    start = clock.now()
    await clock.sleep(8.0)
    assert fake.sleeps == [pytest.approx(8.0), pytest.approx(1.0)]
    assert clock.now() == pytest.approx(start + 8.0)
    assert clock.lag_stats().max == pytest.approx(0.0)


async def test_real_time_sleep() -> None:
    clock = ScaledClock.starting_now(1000)  # 50 pool s = 50 ms real
    assert isinstance(clock, Clock)
    t0 = time.monotonic()
    target = clock.now() + 50.0
    await clock.sleep(50.0)
    assert clock.now() >= target
    assert time.monotonic() - t0 >= 0.049
    stats = clock.lag_stats()
    assert stats.count == 1
    assert 0.0 <= stats.last < 100.0  # under 0.1 s real late, generous for CI


def test_two_clocks_share_the_epoch() -> None:
    epoch = time.time() - 5.0
    a = ScaledClock(60, epoch)
    time.sleep(0.01)
    b = ScaledClock(60, epoch)
    assert abs(a.now() - b.now()) < 60 * 0.005


async def test_manual_clock_wakes_in_order() -> None:
    clock = ManualClock()
    assert isinstance(clock, Clock)
    woke: list[tuple[str, float]] = []

    async def sleeper(name: str, t: float) -> None:
        await clock.sleep_until(t)
        woke.append((name, clock.now()))

    tasks = [
        asyncio.create_task(sleeper(name, t))
        for name, t in [("late", 30.0), ("a", 10.0), ("mid", 20.0), ("b", 10.0)]
    ]
    await asyncio.sleep(0)  # let them register
    assert clock.pending == 4
    assert clock.next_wakeup() == 10.0

    await clock.advance(25.0)
    assert woke == [("a", 10.0), ("b", 10.0), ("mid", 20.0)]
    assert clock.now() == 25.0
    assert clock.pending == 1

    await clock.advance(5.0)
    assert woke[-1] == ("late", 30.0)
    await asyncio.gather(*tasks)
    assert clock.lag_stats() == LagStats(count=4, max=0.0, mean=0.0, last=0.0)


async def test_manual_clock_periodic_loop_ticks_within_one_advance() -> None:
    clock = ManualClock(start=100.0)
    ticks: list[float] = []

    async def loop() -> None:
        while True:
            await clock.sleep(10.0)
            ticks.append(clock.now())

    task = asyncio.create_task(loop())
    await asyncio.sleep(0)
    await clock.advance(35.0)
    assert ticks == [110.0, 120.0, 130.0]
    assert clock.now() == 135.0
    task.cancel()


async def test_manual_clock_skips_cancelled_and_past() -> None:
    clock = ManualClock()
    task = asyncio.create_task(clock.sleep(5.0))
    await asyncio.sleep(0)
    task.cancel()
    await asyncio.sleep(0)
    assert clock.pending == 0
    await clock.advance(10.0)
    assert clock.now() == 10.0

    await clock.sleep_until(3.0)  # in the past: returns without moving time
    assert clock.now() == 10.0
    assert clock.lag_stats().last == 7.0

    with pytest.raises(ValueError):
        await clock.advance(-1.0)
    with pytest.raises(ValueError):
        await clock.advance_to(9.0)
