"""The virtual-time event loop: time jumps to the next timer, never passes its horizon."""

from __future__ import annotations

import asyncio
import threading

import pytest

from mockpool.pool.host import _PendingClock
from mockpool.pool.hostfaults import HostFaults
from mockpool.virtualtime import VirtualClock, VirtualEventLoop


@pytest.fixture
def vloop():
    loop = VirtualEventLoop()
    yield loop
    loop.close()


def test_timers_fire_in_time_order_and_time_jumps(vloop: VirtualEventLoop) -> None:
    clock = VirtualClock(vloop)
    seen: list[tuple[float, str]] = []

    async def every(name: str, dt: float, n: int) -> None:
        for _ in range(n):
            await clock.sleep(dt)
            seen.append((clock.now(), name))

    async def main() -> None:
        await asyncio.gather(every("a", 7, 3), every("b", 3, 5), clock.sleep_until(86_400))

    vloop.run_until_complete(main())
    # b at 3,6,9,12,15 and a at 7,14,21, interleaved by time; a day passed at once
    assert seen == [
        (3, "b"),
        (6, "b"),
        (7, "a"),
        (9, "b"),
        (12, "b"),
        (14, "a"),
        (15, "b"),
        (21, "a"),
    ]
    assert clock.now() == 86_400


def test_sleep_until_lands_exactly_on_its_time(vloop: VirtualEventLoop) -> None:
    clock = VirtualClock(vloop)

    async def main() -> list[float]:
        out = []
        for t in (0.1, 0.30000000000000004, 1e7 + 0.1, 1e9 / 3):
            await clock.sleep_until(t)
            out.append(clock.now() - t)
        return out

    assert vloop.run_until_complete(main()) == [0.0, 0.0, 0.0, 0.0]


def test_two_timers_a_hair_apart_each_wake_at_or_after_its_own_time(
    vloop: VirtualEventLoop,
) -> None:
    # 495 + 0.05 computed two ways: time jumps to the earlier, and asyncio runs the later
    # in the same pass (within its clock resolution). The later sleeper must still find
    # now() >= its time, or a daemon loop re-sleeps, wakes at once, and spins for ever.
    clock = VirtualClock(vloop)
    early, late = 495.04999999999995, 495.05
    assert early < late
    woke: dict[str, float] = {}

    async def sleeper(name: str, t: float) -> None:
        await clock.sleep_until(t)
        woke[name] = clock.now()

    async def main() -> None:
        await asyncio.gather(sleeper("early", early), sleeper("late", late))

    vloop.run_until_complete(main())
    assert woke["early"] >= early
    assert woke["late"] >= late


def test_a_loop_that_sleeps_until_its_time_moves_on(vloop: VirtualEventLoop) -> None:
    # The startd's job-exit loop's shape: sleep until due, check now() against it.
    clock = VirtualClock(vloop)
    rounds = 0

    async def other() -> None:
        await clock.sleep_until(495.04999999999995)

    async def due_loop() -> None:
        nonlocal rounds
        due = 495.05
        while clock.now() < due:
            rounds += 1
            assert rounds < 10, f"time stuck at {clock.now()!r} before {due!r}"
            await clock.sleep_until(due)

    async def main() -> None:
        await asyncio.gather(other(), due_loop())

    vloop.run_until_complete(main())
    assert rounds == 1


def test_time_never_passes_the_horizon(vloop: VirtualEventLoop) -> None:
    clock = VirtualClock(vloop)
    fired: list[float] = []
    vloop.call_at(50.0, lambda: fired.append(vloop.time()))
    vloop.call_at(150.0, lambda: fired.append(vloop.time()))
    vloop.hold(100.0)
    thread = threading.Thread(target=vloop.run_forever)
    thread.start()
    try:
        # time runs to the horizon and waits there (for real) for another thread
        reached = asyncio.run_coroutine_threadsafe(clock.sleep_until(100.0), vloop)
        reached.result(10)
        assert asyncio.run_coroutine_threadsafe(_now(clock), vloop).result(10) == 100.0
        assert fired == [50.0]

        async def advance() -> float:
            vloop.hold(200.0)
            await clock.sleep_until(200.0)
            return clock.now()

        assert asyncio.run_coroutine_threadsafe(advance(), vloop).result(10) == 200.0
        assert fired == [50.0, 150.0]
    finally:
        vloop.call_soon_threadsafe(vloop.stop)
        thread.join(10)


async def _now(clock: VirtualClock) -> float:
    await asyncio.sleep(0)
    return clock.now()


def test_no_timer_and_no_horizon_leaves_time_where_it_is(vloop: VirtualEventLoop) -> None:
    # Nothing is due, ever: time must not run to infinity; the loop waits for a caller.
    thread = threading.Thread(target=vloop.run_forever)
    thread.start()
    try:
        fut = asyncio.run_coroutine_threadsafe(_now(VirtualClock(vloop)), vloop)
        assert fut.result(10) == 0.0
    finally:
        vloop.call_soon_threadsafe(vloop.stop)
        thread.join(10)


def test_another_threads_call_runs_while_time_jumps_freely(vloop: VirtualEventLoop) -> None:
    # A pool running free jumps from timer to timer (here for ever, one pool second
    # apart); a call from another thread is still served, round trip after round trip.
    clock = VirtualClock(vloop)

    async def tick() -> None:
        while True:
            await clock.sleep(1.0)

    vloop.call_soon_threadsafe(lambda: vloop.create_task(tick()))
    thread = threading.Thread(target=vloop.run_forever)
    thread.start()
    try:
        seen = [asyncio.run_coroutine_threadsafe(_now(clock), vloop).result(10) for _ in range(50)]
        assert seen == sorted(seen)  # time ran on between the calls, and each was served
    finally:
        vloop.call_soon_threadsafe(vloop.stop)
        thread.join(10)
    assert not thread.is_alive()


def test_hold_never_moves_time_back(vloop: VirtualEventLoop) -> None:
    vloop.run_until_complete(VirtualClock(vloop).sleep_until(30))
    vloop.hold(10)
    assert vloop.horizon == 30
    vloop.release()
    assert vloop.horizon == float("inf")


def test_same_program_same_interleaving() -> None:
    def run() -> list[str]:
        loop = VirtualEventLoop()
        clock = VirtualClock(loop)
        trace: list[str] = []

        async def worker(i: int) -> None:
            for k in range(4):
                await clock.sleep((i * 7 + k * 3) % 5)
                trace.append(f"{clock.now():g}:{i}")

        async def main() -> None:
            await asyncio.gather(*(worker(i) for i in range(6)))

        loop.run_until_complete(main())
        loop.close()
        return trace

    assert run() == run()


def test_settled_waits_for_everything_due_up_to_the_horizon(vloop: VirtualEventLoop) -> None:
    """A caller in another thread that waits for ``settled`` finds the held loop still:
    every callback ready and every timer due up to the horizon has run, whatever the
    threads' timing; a timer past the horizon waits."""
    clock = VirtualClock(vloop)
    trace: list[tuple[float, str]] = []

    async def busy(rounds: int) -> None:  # work at one instant, a loop round at a time
        for _ in range(rounds):
            await asyncio.sleep(0)
        trace.append((clock.now(), "busy done"))

    vloop.hold(10.0)
    vloop.call_at(10.0, lambda: vloop.create_task(busy(5_000)))
    vloop.call_at(10.5, lambda: trace.append((clock.now(), "past the horizon")))
    # asked before the loop runs: the call is there first, and must still see it all
    first = asyncio.run_coroutine_threadsafe(vloop.settled(), vloop)
    thread = threading.Thread(target=vloop.run_forever)
    thread.start()
    try:
        first.result(10)
        assert trace == [(10.0, "busy done")]
        assert clock.now() == 10.0

        async def step() -> None:
            vloop.hold(11.0)
            await vloop.settled()

        asyncio.run_coroutine_threadsafe(step(), vloop).result(10)
        assert trace == [(10.0, "busy done"), (10.5, "past the horizon")]
        assert clock.now() == 11.0
    finally:
        vloop.call_soon_threadsafe(vloop.stop)
        thread.join(10)


@pytest.mark.parametrize(("t", "skew"), [(20.04, -62.0), (4051.73, -99.3), (495.05, 0.0)])
def test_a_skewed_host_clock_wakes_at_or_after_its_own_time(
    vloop: VirtualEventLoop, t: float, skew: float
) -> None:
    # (t - skew) + skew falls an ulp short of t for these: the host's clock sleeps the
    # loop's clock until a time that reads as t or later through the skew.
    assert skew == 0.0 or (t - skew) + skew < t
    faults = HostFaults()
    faults.skew = skew
    clock = _PendingClock(faults)
    clock.inner = VirtualClock(vloop)

    async def main() -> float:
        await clock.sleep_until(t)
        return clock.now()

    assert vloop.run_until_complete(main()) >= t
