"""``restart``: crash and come back at once (it takes no duration)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .base import FaultKind

if TYPE_CHECKING:
    from ..faults import Fault, FaultTarget


class Restart(FaultKind):
    name = "restart"
    exclusive = True
    instant = True
    on_daemon = True

    async def act(self, pool: FaultTarget, f: Fault, target: str, actor: Any, start: bool) -> None:
        await pool.restart(target, cause=f"fault: restart at {f.at:g}")


RESTART = Restart()
