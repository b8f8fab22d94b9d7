"""What a kind of fault is: its parameters and checks, what it says of itself in the
events, and how it acts on a target. A kind acts through the target's handle (pause,
skew, a rule on the calls it receives) or the pool's crash and restart: a live host and
the simulation kernel each realise those (``pool/hostfaults.py``, ``kernel/faults.py``),
so one ``act`` serves both.

A new kind is a module here holding one :class:`FaultKind`, listed in ``__init__.py``,
plus its field in ``master.proto`` (``mockpool fault`` reads the keys it takes).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..faults import Fault, FaultTarget

__all__ = ["FaultError", "FaultKind"]


class FaultError(ValueError):
    """A fault plan that cannot run; the message names the fault and the problem."""


class FaultKind:
    """One kind of fault. The class attributes say how plans treat it; ``check``,
    ``extras`` and ``act`` are what it adds."""

    name = ""
    params: tuple[str, ...] = ()  # the keys of its own it takes: fraction, delay, skew
    needs_peer = False  # it acts between the target and a peer
    exclusive = False  # nothing else may act on its target meanwhile
    single = False  # two of it may not act on one target at once
    instant = False  # it acts once and takes no duration (a restart)
    stays_without_duration = False  # no duration: it lasts to the end (a crash stays down)
    on_daemon = False  # it acts on the daemon named (its actor's others run on)
    drawable = True  # a random plan may draw it
    cuts_calls = False  # calls to its target may fail meanwhile (the checker reads it)

    def check(self, f: Fault) -> None:
        """Refuse (FaultError naming ``f.where``) what the kind's own keys cannot be."""

    def extras(self, f: Fault) -> dict[str, Any]:
        """Its own keys as its events carry them."""
        return {}

    async def act(self, pool: FaultTarget, f: Fault, target: str, actor: Any, start: bool) -> None:
        """Start (or end) the fault on ``target`` (``actor``: its actor)."""
        raise NotImplementedError
