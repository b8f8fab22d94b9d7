"""The master's Daemons call (``mockpool daemons``): each actor, alive or not, its pid,
and the daemons down alone in a running actor."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from mockpool.pool.launcher import _Actor
from mockpool.pool.layout import ActorPlan
from mockpool.pool.master import MasterService
from mockpool.v1 import master_pb2 as mpb


class _Handle:
    """An actor handle whose ``status`` answers with a pid, as DaemonHost.status does."""

    def __init__(self, pid: int) -> None:
        async def status() -> dict[str, Any]:
            return {"pid": pid}

        self.status = SimpleNamespace(remote=status)


class _Pool:
    def __init__(self, actors: list[_Actor]) -> None:
        self._actors = actors

    def now(self) -> float:
        return 42.0

    def actors(self) -> list[_Actor]:
        return self._actors


async def test_a_daemon_down_alone_is_listed_under_its_running_actor() -> None:
    central = _Actor(
        ActorPlan("central", "central", ("collector", "negotiator"), frozenset()), {}, _Handle(7)
    )
    schedds = _Actor(
        ActorPlan("schedd0", "schedd", ("schedd1", "schedd2"), frozenset()), {}, _Handle(9)
    )
    schedds.down["schedd1"] = 30.0  # crashed alone at 30
    startd = _Actor(
        ActorPlan("startd0", "startd", ("exec1",), frozenset()), {}, _Handle(11), alive=False
    )
    reply = await MasterService(_Pool([central, schedds, startd])).Daemons(  # type: ignore[arg-type]
        mpb.DaemonsRequest(), None
    )
    assert reply.now == 42.0
    got = [(a.actor, a.role, list(a.daemons), a.alive, a.pid, list(a.down)) for a in reply.actors]
    assert got == [
        ("central", "central", ["collector", "negotiator"], True, 7, []),
        ("schedd0", "schedd", ["schedd1", "schedd2"], True, 9, ["schedd1"]),
        ("startd0", "startd", ["exec1"], False, 0, []),  # a dead actor is not asked
    ]
