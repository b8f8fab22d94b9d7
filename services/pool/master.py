"""The pool's master service (HTCondor's condor_master): served by the process that holds
an ``up`` pool, so that ``mockpool fault`` can crash, restart, pause or cut its daemons
and ``mockpool daemons`` can list them. Faults need an ADMIN token, the list a READ one."""

from __future__ import annotations

from typing import Any

import grpc.aio

from .. import rpc
from ..auth import Role, TokenAuthInterceptor
from ..daemon import abort_invalid, within
from ..v1 import master_pb2 as mpb
from ..v1 import master_pb2_grpc as mgrpc
from .faultkinds import FAULT_PARAMS, FaultError
from .launcher import LivePool

SERVICE_NAME = "mockpool.v1.Master"


def _method(name: str) -> str:
    return f"/{SERVICE_NAME}/{name}"


METHOD_ROLES = {
    _method("Fault"): frozenset({Role.ADMIN}),
    _method("Daemons"): frozenset({Role.READ, Role.SUBMIT, Role.ADMIN}),
}


def fault_table(request: mpb.FaultRequest) -> dict[str, Any]:
    """A FaultRequest as a ``[[faults]]`` table (only the fields that were given)."""
    table: dict[str, Any] = {"kind": request.kind}
    for key in ("target", "constraint", "peer"):
        if getattr(request, key):
            table[key] = getattr(request, key)
    for key in ("duration", *FAULT_PARAMS):
        if request.HasField(key):
            table[key] = getattr(request, key)
    return table


class MasterService(mgrpc.MasterServicer):
    def __init__(self, pool: LivePool) -> None:
        self._pool = pool

    async def Fault(
        self, request: mpb.FaultRequest, context: grpc.aio.ServicerContext
    ) -> mpb.FaultReply:
        table = fault_table(request)
        try:
            await self._pool.inject(table, "mockpool fault")
        except (FaultError, KeyError) as e:
            await abort_invalid(context, str(e).strip("'\""))
        target = request.target or f"daemons matching {request.constraint}"
        return mpb.FaultReply(
            message=f"{request.kind} of {target} injected at {self._pool.now():.0f}"
        )

    async def Daemons(
        self, request: mpb.DaemonsRequest, context: grpc.aio.ServicerContext
    ) -> mpb.DaemonsReply:
        reply = mpb.DaemonsReply(now=self._pool.now())
        for a in self._pool.actors():
            pid = 0
            if a.alive:
                try:
                    pid = int((await within(a.handle.status.remote(), 10))["pid"])
                except Exception:  # dying as we ask: its death is noticed by the pool
                    pid = 0
            reply.actors.add(
                actor=a.plan.name,
                role=a.plan.role,
                daemons=list(a.plan.daemons),
                alive=a.alive,
                address=a.address,
                pid=pid,
                down=[d for d in a.plan.daemons if d.lower() in a.down],
            )
        return reply


async def serve_master(pool: LivePool, host: str) -> tuple[Any, str]:
    """Start the master's server beside the pool (on its loop); (server, address)."""
    return await rpc.start_server(
        [lambda s: mgrpc.add_MasterServicer_to_server(MasterService(pool), s)],
        host,
        0,
        interceptors=[TokenAuthInterceptor(pool.secret, method_roles=METHOD_ROLES)],
    )
