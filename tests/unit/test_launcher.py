"""The live pool's launcher: a pool's stop never hangs on one actor."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mockpool.clock import ManualClock
from mockpool.daemon import EventLog
from mockpool.pool import launcher
from mockpool.pool.launcher import LivePool
from mockpool.pool.spec import parse_spec


class _Call:
    def __init__(self, result: Any) -> None:
        self._result = result

    def remote(self) -> Any:
        return self._result


class _Handle:
    def __init__(self, stop_result: Any) -> None:
        self.stop = _Call(stop_result)


async def test_an_actor_that_does_not_stop_in_time_is_given_up_on(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    monkeypatch.setattr(launcher, "HOST_STOP_TIMEOUT", 0.05)
    pool = LivePool(parse_spec("[pool]\ntime_scale = 60\n", "<test>"), state_dir=tmp_path)
    hung: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
    with pytest.raises(TimeoutError):
        await pool._stop_host(_Handle(hung))
    assert hung.cancelled()
    done: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
    done.set_result({"role": "startd"})
    assert await pool._stop_host(_Handle(done)) == {"role": "startd"}


async def test_an_actors_events_are_drained_a_batch_at_a_time_and_all_of_them() -> None:
    events = EventLog(ManualClock(0.0))
    n = 2 * launcher.DRAIN_BATCH + 7
    for k in range(n):
        events.emit("startd", "activate", job=f"{k}.0")
    calls: list[int] = []

    class Drain:
        async def remote(self, limit: int) -> list[dict[str, Any]]:
            calls.append(limit)
            return events.drain(limit)

    got = await launcher._drained(Drain())
    assert [e["job"] for e in got] == [f"{k}.0" for k in range(n)]  # oldest first, none lost
    assert calls == [launcher.DRAIN_BATCH] * 3  # three calls, each reply bounded
    assert events.drain() == []
