"""``crash``: the target dies (``kill -9``); with a duration it is restarted that long
after (a schedd from its queue database, a startd with new claim ids, the central manager
on its old port, keeping the accountant); without one it stays down."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .base import FaultKind

if TYPE_CHECKING:
    from ..faults import Fault, FaultTarget


class Crash(FaultKind):
    name = "crash"
    exclusive = True
    stays_without_duration = True
    on_daemon = True

    async def act(self, pool: FaultTarget, f: Fault, target: str, actor: Any, start: bool) -> None:
        if start:
            await pool.crash(target, cause=f"fault: crash at {f.at:g}")
        else:
            await pool.restart(target, cause=f"fault: crash of {f.duration:g} s ended")


CRASH = Crash()
