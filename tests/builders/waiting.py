"""Waiting on a condition (real time) for what a service's loop does after the clock
moved: never a fixed sleep before an assertion."""

from __future__ import annotations

import asyncio
from collections.abc import Callable


async def until(cond: Callable[[], object], timeout: float = 10.0) -> None:
    """Return once ``cond()`` holds; AssertionError after ``timeout`` real seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not cond():
        if loop.time() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.005)
