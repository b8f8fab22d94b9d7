"""``pause``: the target is alive but answers nothing and its timers stop (a catatonic
daemon, as a SIGSTOPped process), until the pause ends."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .base import FaultKind

if TYPE_CHECKING:
    from ..faults import Fault, FaultTarget


class Pause(FaultKind):
    name = "pause"
    exclusive = True
    cuts_calls = True

    async def act(self, pool: FaultTarget, f: Fault, target: str, actor: Any, start: bool) -> None:
        if actor.alive:
            await actor.handle.pause.remote(start)


PAUSE = Pause()
