"""A fault plan on a kernel pool: the plan's own steps (``pool/faults.py``: the same
checks, the same order, the same events), acting on the kernel instead of on actors.

``apply_fault`` is written for a pool whose actors answer over the network (``await
handle.pause.remote(on)``); here every such call is done at once, so a step runs to its
end within the instant it is due (:func:`run_now`).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from ..pool.peerrules import PeerRule

if TYPE_CHECKING:
    from .pool import KernelPool, _Daemons

__all__ = ["ActorHandle", "KernelClient", "run_now"]


def run_now(coro: Coroutine[Any, Any, Any]) -> Any:
    """Run a coroutine that never waits (every await it makes is answered at once)."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    coro.close()
    raise RuntimeError("a fault step waited: in the kernel every step acts at once")


class _Call:
    """``handle.method.remote(...)``, done at once."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self._fn = fn

    async def remote(self, *args: Any) -> Any:
        return self._fn(*args)


class ActorHandle:
    """What a fault step asks of an actor: pause it, skew its clock, set a rule on the
    calls it receives."""

    def __init__(self, pool: KernelPool, d: _Daemons) -> None:
        self._pool, self._d = pool, d

    @property
    def pause(self) -> _Call:
        return _Call(lambda on: self._pool.kernel.pause(self._d.actor, bool(on)))

    @property
    def set_skew(self) -> _Call:
        return _Call(lambda skew: self._pool.kernel.set_skew(self._d.actor, float(skew)))

    @property
    def set_rule(self) -> _Call:
        def set_rule(name: str, rule: PeerRule | None) -> None:
            self._d.actor.faults.set_rule(name, rule)

        return _Call(set_rule)


class KernelClient:
    """The collector queries a fault plan makes (a constraint's targets), answered by
    the collector core directly; nothing when it is down, as a failed query would."""

    def __init__(self, pool: KernelPool) -> None:
        self._pool = pool

    async def query(self, ad_type: str, constraint: str = "", projection: Any = None) -> list[Any]:
        if not self._pool.actors["central"].alive:
            raise RuntimeError("the collector is down")
        return self._pool.ads(ad_type, constraint)
