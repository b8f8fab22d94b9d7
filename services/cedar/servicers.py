"""A CEDAR command calls the pool's own servicer methods, as the gRPC server would.

:func:`call_servicer` checks the method's roles (the service's ``METHOD_ROLES``, the
table the gRPC interceptor reads) against the CEDAR peer's pool identity, then calls
the method with that identity as the caller (``auth.acting_as``) and a stand-in for
gRPC's context whose ``abort`` raises :class:`~.server.CommandError` with the code and
text: every finer rule (alice cannot remove bob's jobs, a change of priority needs an
admin) is the servicer's own, the same on both wires.
"""

from __future__ import annotations

from typing import Any, NoReturn

import grpc

from .. import rpc
from ..auth import Principal, acting_as
from .server import CommandError

__all__ = ["CedarContext", "call_servicer", "method_roles"]


class CedarContext:
    """What a servicer method may use of ``grpc.aio.ServicerContext`` off gRPC;
    ``handover``: ask for the reply's objects themselves (``rpc.Handover``), as a caller
    of the servicer's own process may, instead of a message to decode again."""

    def __init__(self, peer: str = "", *, handover: bool = False) -> None:
        self._peer = peer
        self.in_process = handover

    async def abort(self, code: grpc.StatusCode, details: str = "") -> NoReturn:
        raise CommandError(code, details)

    def peer(self) -> str:
        return self._peer

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return (rpc.HANDOVER,) if self.in_process else ()

    def set_code(self, code: grpc.StatusCode) -> None:
        pass

    def set_details(self, details: str) -> None:
        pass


def method_roles(service: Any, method: str) -> frozenset[Any]:
    """The roles ``service``'s ``METHOD_ROLES`` admits to ``method`` (its short name)."""
    for full, roles in service.METHOD_ROLES.items():
        if full.rsplit("/", 1)[-1] == method:
            return frozenset(roles)
    raise KeyError(f"{type(service).__name__} has no method {method!r} in its METHOD_ROLES")


async def call_servicer(
    principal: Principal | None,
    service: Any,
    method: str,
    request: Any,
    *,
    peer: str = "",
    handover: bool = False,
) -> Any:
    """``service.<method>(request, context)`` for ``principal``; CommandError
    (PERMISSION_DENIED) when its role may not call it, or what the method aborts with."""
    roles = method_roles(service, method)
    if principal is None or principal.role not in roles:
        who = "an unauthenticated peer" if principal is None else f"role {principal.role.value}"
        raise CommandError(grpc.StatusCode.PERMISSION_DENIED, f"{method} is not open to {who}")
    with acting_as(principal):
        return await getattr(service, method)(request, CedarContext(peer, handover=handover))
