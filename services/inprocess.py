"""A live actor's calls to its own daemons, in-process: the same servicers, no socket.

One actor hosts several daemons (the central manager's collector and negotiator). A call
from one to another is served by a table of the very handlers grpc.aio is given, behind
the same interceptors (``WireGuard``, the token check, the host's faults and counts): the
request crosses as bytes, runs in a task of its own (so the caller's identity, a context
variable, stays on the server's side), and the decoded reply or the same ``AioRpcError``
a gRPC client would get comes back. A reply may be handed over as the objects it holds
(``rpc.Handover``) to a caller that asks: a 100,000-slot snapshot is not encoded only to
be decoded again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import grpc
import grpc.aio

from .auth import AUTH_METADATA_KEY
from .rpc import GRPC, Handover, ServicerAdder, Transport, WireGuard, clip_detail

__all__ = ["SameProcessFirst"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _CallDetails:
    method: str
    invocation_metadata: tuple[tuple[str, str], ...]
    timeout: float | None = None


class _Aborted(grpc.aio.AbortError):
    """How ``context.abort`` leaves the handler (grpc.aio raises AbortError too)."""


class _Context:
    """The parts of ``grpc.aio.ServicerContext`` the servicers use."""

    in_process = True  # a caller of this process may be handed objects (rpc.Handover)

    def __init__(self, peer: str, metadata: tuple[tuple[str, str], ...]) -> None:
        self._peer = peer
        self._metadata = metadata
        self.code: grpc.StatusCode = grpc.StatusCode.OK
        self.details = ""

    async def abort(self, code: grpc.StatusCode, details: str = "", *_: Any) -> None:
        self.code, self.details = code, details
        raise _Aborted()

    def set_code(self, code: grpc.StatusCode) -> None:
        self.code = code

    def set_details(self, details: str) -> None:
        self.details = details

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return self._metadata

    def peer(self) -> str:
        return self._peer

    def time_remaining(self) -> float | None:
        return None


def _error(code: grpc.StatusCode, details: str) -> grpc.aio.AioRpcError:
    return grpc.aio.AioRpcError(
        code, grpc.aio.Metadata(), grpc.aio.Metadata(), clip_detail(details), None
    )


class _Server:
    """One daemon host's handlers behind its interceptors."""

    def __init__(self, address: str, interceptors: Sequence[grpc.aio.ServerInterceptor]) -> None:
        self.address = address
        self._handlers: dict[str, grpc.RpcMethodHandler] = {}
        # The interceptors in front of the handler lookup, chained once (not per call).
        cont: Callable[[_CallDetails], Awaitable[Any]] = self._lookup
        for icp in reversed([WireGuard(), *interceptors]):
            cont = _chain(icp, cont)
        self._intercepted = cont
        self.stopped = False

    # -- what generated ``add_*Servicer_to_server`` calls -----------------------------------
    def add_generic_rpc_handlers(self, handlers: Iterable[Any]) -> None:
        for h in handlers:
            for method, handler in getattr(h, "_method_handlers", {}).items():
                self._handlers.setdefault(method, handler)

    def add_registered_method_handlers(self, service: str, handlers: dict[str, Any]) -> None:
        for name, handler in handlers.items():
            self._handlers[f"/{service}/{name}"] = handler

    # -- one call ------------------------------------------------------------------------
    async def _lookup(self, details: _CallDetails) -> grpc.RpcMethodHandler | None:
        return self._handlers.get(details.method)

    async def handle(self, details: _CallDetails, raw: bytes, peer: str) -> bytes:
        handler = await self._intercepted(details)
        if handler is None or handler.request_streaming or handler.response_streaming:
            raise _error(grpc.StatusCode.UNIMPLEMENTED, f"Method not found: {details.method}")
        request = handler.request_deserializer(raw) if handler.request_deserializer else raw
        context = _Context(peer, details.invocation_metadata)
        try:
            reply = await handler.unary_unary(request, context)
        except grpc.aio.AbortError:
            raise _error(context.code, context.details) from None
        if context.code != grpc.StatusCode.OK:
            raise _error(context.code, context.details)
        if isinstance(reply, Handover):
            return reply
        return handler.response_serializer(reply) if handler.response_serializer else reply


def _chain(
    icp: grpc.aio.ServerInterceptor, cont: Callable[[_CallDetails], Awaitable[Any]]
) -> Callable[[_CallDetails], Awaitable[Any]]:
    async def step(details: _CallDetails) -> Any:
        return await icp.intercept_service(cont, details)  # type: ignore[arg-type]

    return step


class _UnaryUnary:
    """A stub method bound to one peer: ``await stub.Method(request, timeout=...)``."""

    def __init__(
        self,
        channel: _Channel,
        method: str,
        serialize: Callable[[Any], bytes] | None,
        deserialize: Callable[[bytes], Any] | None,
    ) -> None:
        self._channel = channel
        self._method = method.encode()  # rpc.call reads it to name the method in errors
        self._path = method
        self._serialize = serialize
        self._deserialize = deserialize

    async def __call__(
        self,
        request: Any,
        *,
        timeout: float | None = None,
        metadata: Sequence[tuple[str, str]] | None = None,
        **_: Any,
    ) -> Any:
        ch = self._channel
        raw = self._serialize(request) if self._serialize else request
        md = (*(metadata or ()), (AUTH_METADATA_KEY, f"Bearer {ch.token}"))
        server = ch.servers.get(ch.address)
        if server is None or server.stopped:
            raise _error(grpc.StatusCode.UNAVAILABLE, f"no daemon listens at {ch.address}")
        details = _CallDetails(self._path, md, timeout)
        # A task of its own: the server's context variables (the caller's principal)
        # must not leak into the caller, as they cannot across a real socket.
        handled = asyncio.ensure_future(server.handle(details, raw, ch.peer))
        # The caller's deadline, as gRPC's: a hung daemon is given up on. (Not wait_for:
        # on Python 3.11 it swallows the caller's cancellation when both land at once.)
        try:
            done, _ = await asyncio.wait({handled}, timeout=timeout)
        except asyncio.CancelledError:
            handled.cancel()
            raise
        if not done:
            handled.cancel()
            raise _error(grpc.StatusCode.DEADLINE_EXCEEDED, "Deadline Exceeded")
        reply = handled.result()
        if isinstance(reply, Handover) or not self._deserialize:
            return reply  # objects, for a caller that asked
        return self._deserialize(reply)


class _Channel:
    """Calls to the server at ``address`` among ``servers`` (this process's)."""

    def __init__(self, servers: dict[str, _Server], address: str, token: str) -> None:
        self.servers = servers
        self.address = address
        self.token = token
        self.peer = "inprocess"

    def unary_unary(
        self,
        method: str,
        request_serializer: Callable[[Any], bytes] | None = None,
        response_deserializer: Callable[[bytes], Any] | None = None,
        **_: Any,
    ) -> _UnaryUnary:
        return _UnaryUnary(self, method, request_serializer, response_deserializer)

    def unary_stream(self, method: str, *_: Any, **__: Any) -> Any:
        raise NotImplementedError(f"{method}: streaming calls have no in-process transport")

    async def close(self) -> None:
        return None


class SameProcessFirst:
    """A live daemon host's transport: gRPC, except that a call to a daemon served by
    this very process (the central manager's negotiator asking its collector) goes to
    the same handlers, behind the same interceptors, in-process. A 100,000-slot
    snapshot's tens of megabytes went through the gRPC core twice, copied in callbacks
    that held the actor's loop for most of a second; here the reply is handed over (its
    bytes, or what a caller that asks may take as objects: ``rpc.Handover``). Other peers,
    and anything a peer calls here, are gRPC as before."""

    def __init__(self, outer: Transport = GRPC) -> None:
        self._outer = outer
        self._local: dict[str, _Server] = {}  # this process's servers, by address

    async def start_server(
        self,
        servicer_adders: Iterable[ServicerAdder],
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        interceptors: Sequence[grpc.aio.ServerInterceptor],
    ) -> tuple[tuple[Any, _Server], str]:
        adders = list(servicer_adders)
        server, address = await self._outer.start_server(
            adders, host, port, interceptors=interceptors
        )
        local = _Server(address, interceptors)
        for add in adders:
            add(local)  # type: ignore[arg-type]
        self._local[address] = local
        return (server, local), address

    async def stop_server(self, server: Any, grace: float | None = 1.0) -> None:
        outer, local = server
        local.stopped = True
        self._local.pop(local.address, None)
        await self._outer.stop_server(outer, grace)

    def channel(self, address: str, token: str) -> Any:
        if address in self._local:
            return _Channel(self._local, address, token)
        return self._outer.channel(address, token)
