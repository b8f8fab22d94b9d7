"""The one sleep-until-or-woken loop the shells share (``daemon.Alarm``)."""

from __future__ import annotations

import asyncio

from mockpool.clock import ManualClock
from mockpool.daemon import Alarm


async def settle() -> None:
    """Let the loop's task run until it sleeps again."""
    for _ in range(10):
        await asyncio.sleep(0)


async def test_an_alarm_runs_at_the_wake_up_and_sooner_when_rung() -> None:
    clock = ManualClock(0.0)
    alarm = Alarm(clock)
    wake: list[float | None] = [10.0]
    fired: list[float] = []

    async def loop() -> None:
        while True:
            fired.append(await alarm.due(lambda: wake[0]))
            wake[0] = None  # nothing more until told

    task = asyncio.create_task(loop())
    await settle()
    try:
        await clock.advance_to(9.0)
        assert fired == [] and alarm.armed == 10.0
        await clock.advance_to(10.0)
        await settle()
        assert fired == [10.0] and alarm.armed is None  # sleeps on nothing now
        wake[0] = 30.0
        alarm.ring_if_earlier(40.0)  # later than nothing armed: rings
        await settle()
        await clock.advance_to(11.0)
        assert alarm.armed == 30.0
        alarm.ring_if_earlier(35.0)  # not before 30: the loop sleeps on
        wake[0] = 12.0  # (changed without a ring: not seen yet)
        await settle()
        await clock.advance_to(12.0)
        await settle()
        assert fired == [10.0]
        alarm.ring()  # a delivery moved it: looked at again, due now
        await settle()
        assert fired == [10.0, 12.0]
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
