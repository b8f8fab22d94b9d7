"""``skew`` (with ``skew``): the target's clock reads ``skew`` seconds ahead (negative:
behind) while it lasts. A random plan does not draw it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .base import FaultError, FaultKind

if TYPE_CHECKING:
    from ..faults import Fault, FaultTarget


class Skew(FaultKind):
    name = "skew"
    params = ("skew",)
    single = True
    drawable = False

    def check(self, f: Fault) -> None:
        if f.skew == 0:
            raise FaultError(f"{f.where}: a skew fault needs skew != 0 seconds")

    def extras(self, f: Fault) -> dict[str, Any]:
        return {"skew": f.skew}

    async def act(self, pool: FaultTarget, f: Fault, target: str, actor: Any, start: bool) -> None:
        if actor.alive:
            await actor.handle.set_skew.remote(f.skew if start else 0.0)


SKEW = Skew()
