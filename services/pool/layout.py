"""Which actor hosts which daemons: one place for the launcher (to start them) and the
fault plans (to name them).

Actors: ``central`` (collector and negotiator; the collector alone when ``[placement]
negotiator = "own"`` puts the negotiator in an actor ``negotiator`` of its own),
``startd<G>_<C>`` (machines of startd group
G, chunk C) and one per chunk of schedds, named after its schedd when it hosts one
(``schedd1``), else ``actor<G>_<C>``. A daemon's name is a machine's name, a schedd's name,
``collector`` or ``negotiator``; faults on a daemon act on its actor (daemons that share
an actor share its process, as HTCondor daemons on one host share that host).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..principals import daemon_identity

if TYPE_CHECKING:
    from .specmodel import PoolSpec


@dataclass(frozen=True)
class ActorPlan:
    name: str
    role: str  # central, negotiator, startd or schedd
    daemons: tuple[str, ...]  # machine names, schedd names, or collector and negotiator
    identities: frozenset[str]  # the identities its daemons' tokens name
    group: int = 0
    chunk: int = 0


def _chunks(items: list[str], size: int) -> list[list[str]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def actor_plans(spec: PoolSpec) -> list[ActorPlan]:
    """Every actor of the pool, central first (and the negotiator's, when it has its
    own), then startds, then schedds."""
    if own_negotiator(spec):
        plans = [
            ActorPlan("central", "central", ("collector",), frozenset({"negotiator"})),
            ActorPlan("negotiator", "negotiator", ("negotiator",), frozenset({"negotiator"})),
        ]
    else:
        plans = [
            ActorPlan("central", "central", ("collector", "negotiator"), frozenset({"negotiator"}))
        ]
    for gi, group in enumerate(spec.startds):
        for ci, names in enumerate(_chunks(list(group.names), group.machines_per_actor)):
            name = f"startd{gi}_{ci}"
            ident = daemon_identity("startd", name)
            plans.append(ActorPlan(name, "startd", tuple(names), frozenset({ident}), gi, ci))
    for si, sgroup in enumerate(spec.schedds):
        for ci, names in enumerate(_chunks(list(sgroup.names), sgroup.per_actor)):
            name = names[0] if len(names) == 1 else f"actor{si}_{ci}"
            own = {daemon_identity("schedd", n) for n in names}
            ident = daemon_identity("schedd", name)
            plans.append(ActorPlan(name, "schedd", tuple(names), frozenset({ident, *own}), si, ci))
    return plans


def own_negotiator(spec: PoolSpec) -> bool:
    """Whether the negotiator runs in an actor of its own, apart from the collector."""
    return spec.placement.get("negotiator") == "own"


def find_actor(plans: list[ActorPlan], target: str) -> ActorPlan | None:
    """The actor named ``target`` or hosting daemon ``target`` (case-insensitive)."""
    t = target.lower()
    for p in plans:
        if p.name.lower() == t or t in (d.lower() for d in p.daemons):
            return p
    return None
