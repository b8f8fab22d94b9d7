"""The faults on the calls between the target and a peer (``peer``), a rule on each side
for the calls from the other (``peerrules.py``):

- ``partition``: every call fails as a broken connection does;
- ``drop`` (``fraction``): that fraction of the calls fail;
- ``delay`` (``delay``, optional ``fraction``): calls wait ``delay`` pool seconds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..peerrules import PeerRule
from .base import FaultError, FaultKind

if TYPE_CHECKING:
    from ..faults import Fault, FaultTarget


class NetworkCut(FaultKind):
    needs_peer = True
    cuts_calls = True

    def __init__(self, name: str, params: tuple[str, ...]) -> None:
        self.name = name
        self.params = params

    def check(self, f: Fault) -> None:
        if "delay" in self.params and not f.delay > 0:
            raise FaultError(f"{f.where}: a {self.name} fault needs delay > 0 pool seconds")

    def extras(self, f: Fault) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if "fraction" in self.params and f.fraction < 1:
            out["fraction"] = f.fraction
        if "delay" in self.params:
            out["delay"] = f.delay
        return out

    async def act(self, pool: FaultTarget, f: Fault, target: str, actor: Any, start: bool) -> None:
        rule_name = f"{f.kind}:{f.target}:{f.peer}:{f.at:g}"
        peer = pool.actor(f.peer)
        for here, there in ((actor, peer), (peer, actor)):
            rule = PeerRule(f.kind, there.plan.identities, f.fraction, f.delay) if start else None
            if here.alive:
                await here.handle.set_rule.remote(rule_name, rule)


PARTITION = NetworkCut("partition", ())
DROP = NetworkCut("drop", ("fraction",))
DELAY = NetworkCut("delay", ("fraction", "delay"))
