"""The live pool's launcher: a pool's stop never hangs on one actor."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

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
