"""gRPC plumbing every daemon shares: start/stop a grpc.aio server, token channels, calls.

Rules this module enforces (see the design's "gRPC inside Ray"):

- Servers bind with ``grpc.so_reuseport = 0``: with gRPC's default (on) a second server
  can bind the same port and the kernel silently splits connections between them.
- Every call has a deadline, and only UNAVAILABLE is retried: it almost always means the
  request never reached a handler. "Almost": a server dying mid-call can also answer
  UNAVAILABLE, so a retried request must be idempotent — put a ``request_id()`` in the
  message, made once per logical request and reused by every retry.
- grpc.aio objects belong to the event loop (and thread) that made them: create servers
  and channels inside the coroutine that uses them, e.g. in a Ray async actor's method,
  never in ``__init__`` of a sync object or at import.
- Every server answers bad input the same way, whatever the method (``WireGuard``): a
  request that does not decode (garbage bytes, invalid UTF-8 in a string) is
  INVALID_ARGUMENT, and every error's details are clipped to ``MAX_DETAIL_CHARS``, so a
  message quoting a huge input never overflows gRPC's metadata limit.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import random
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from typing import Any, Protocol

import grpc
import grpc.aio

from .auth import bearer_interceptors

__all__ = [
    "HANDOVER",
    "MAX_DETAIL_CHARS",
    "Handover",
    "SERVER_OPTIONS",
    "GRPC",
    "RpcUnavailableError",
    "ServicerAdder",
    "Transport",
    "WireGuard",
    "call",
    "handover_wanted",
    "clip_detail",
    "make_channel",
    "request_id",
    "start_server",
    "stop_server",
]

log = logging.getLogger(__name__)

# Adds servicers or generic handlers to a server, e.g.
# ``lambda server: classad_pb2_grpc.add_FooServicer_to_server(servicer, server)``.
ServicerAdder = Callable[[grpc.aio.Server], None]

# A 10,000-slot snapshot or ad batch is ~8 MB: lift gRPC's 4 MiB default on both ends.
MAX_MESSAGE_BYTES = 256 * 2**20
_SIZE_OPTIONS: tuple[tuple[str, Any], ...] = (
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
)
SERVER_OPTIONS: tuple[tuple[str, Any], ...] = (("grpc.so_reuseport", 0), *_SIZE_OPTIONS)


# gRPC carries a status's details in a header, and a client drops a response whose headers
# pass 16 KiB (RESOURCE_EXHAUSTED). A few hundred characters name any problem.
MAX_DETAIL_CHARS = 400


def clip_detail(text: str, limit: int = MAX_DETAIL_CHARS) -> str:
    """``text`` cut to at most ``limit`` characters by leaving out its middle: messages
    quote the bad input first and say what is wrong with it last, so both ends count."""
    if len(text) <= limit:
        return text
    marker = f" ...[{len(text)} characters, clipped]... "
    room = max(0, limit - len(marker))
    head = room - room // 3
    return text[:head] + marker + text[len(text) - (room - head) :]


class _Undecodable:
    """What the guarded deserializer returns for bytes that are not a valid request."""

    def __init__(self, error: Exception) -> None:
        self.error = error


class _ClippingContext:
    """A servicer context whose ``abort`` and ``set_details`` clip the details."""

    def __init__(self, context: grpc.aio.ServicerContext) -> None:
        self._context = context

    async def abort(self, code: grpc.StatusCode, details: str = "", *args: Any) -> None:
        await self._context.abort(code, clip_detail(details), *args)

    def set_details(self, details: str) -> None:
        self._context.set_details(clip_detail(details))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._context, name)


def _guard_deserializer(
    deserialize: Callable[[bytes], Any] | None,
) -> Callable[[bytes], Any] | None:
    if deserialize is None:  # a raw-bytes method: nothing to decode
        return None

    def guarded(raw: bytes) -> Any:
        try:
            return deserialize(raw)
        except Exception as exc:  # DecodeError, bad UTF-8, a message nested too deep, ...
            return _Undecodable(exc)

    return guarded


async def _open(method: str, request: Any, context: grpc.aio.ServicerContext) -> _ClippingContext:
    """The clipping context for a call; aborts with INVALID_ARGUMENT if it did not decode."""
    ctx = _ClippingContext(context)
    if isinstance(request, _Undecodable):
        log.debug("refused %s: undecodable request: %s", method, request.error)
        await ctx.abort(
            grpc.StatusCode.INVALID_ARGUMENT,
            f"{method}: the request is not a valid message: {request.error}",
        )
    return ctx


async def _unexpected(method: str, exc: Exception, ctx: _ClippingContext) -> None:
    # grpc.aio would answer UNKNOWN with the whole message, however long; same code, clipped.
    log.exception("%s failed", method)
    await ctx.abort(grpc.StatusCode.UNKNOWN, f"{method} failed: {type(exc).__name__}: {exc}")


def _guard_unary_unary(method: str, behavior: Callable[..., Any]) -> Callable[..., Any]:
    async def guarded(request: Any, context: grpc.aio.ServicerContext) -> Any:
        ctx = await _open(method, request, context)
        try:
            reply = behavior(request, ctx)
            return await reply if inspect.isawaitable(reply) else reply
        except (grpc.aio.AbortError, asyncio.CancelledError):
            raise
        except Exception as exc:
            await _unexpected(method, exc, ctx)

    return guarded


def _guard_unary_stream(method: str, behavior: Callable[..., Any]) -> Callable[..., Any]:
    async def guarded(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
        ctx = await _open(method, request, context)
        try:
            replies = behavior(request, ctx)
            if inspect.isawaitable(replies):  # a coroutine that writes with context.write
                await replies
            elif hasattr(replies, "__aiter__"):
                async for reply in replies:
                    yield reply
            else:
                for reply in replies:
                    yield reply
        except (grpc.aio.AbortError, asyncio.CancelledError):
            raise
        except Exception as exc:
            await _unexpected(method, exc, ctx)

    return guarded


# Call metadata by which a caller asks for a reply as objects when its callee is in its own
# process (``handover_wanted``); a callee across a socket answers bytes all the same.
HANDOVER = ("mockpool-handover", "objects")


class Handover:
    """A reply handed to a caller in the handler's own process as the objects it holds,
    not serialised: a collector's snapshot of 100,000 ads that its negotiator would
    decode again. The objects are immutable once stored, as a decoded ad is."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


def handover_wanted(context: Any) -> bool:
    """Whether the call came from this process (``inprocess``, or a CEDAR listener of
    this actor) asking for objects (:data:`HANDOVER`)."""
    if not getattr(context, "in_process", False):
        return False
    return any(tuple(kv) == HANDOVER for kv in context.invocation_metadata() or ())


class WireGuard(grpc.aio.ServerInterceptor):
    """The outermost interceptor of every server (``start_server`` adds it).

    It wraps whatever handler the inner interceptors and servicers choose (the token
    check's refusals included), so one place decides how bad input is answered: bytes
    that do not decode as the method's request are INVALID_ARGUMENT naming the method
    and the decoder's complaint, an unexpected exception is UNKNOWN and logged, and
    every status's details are clipped to ``MAX_DETAIL_CHARS``. Methods with streamed
    requests pass through unguarded: no daemon has one.
    """

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Any],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler | None:
        handler = await continuation(handler_call_details)
        if handler is None or handler.request_streaming:
            return handler
        method = handler_call_details.method
        deserializer = _guard_deserializer(handler.request_deserializer)
        if handler.response_streaming:
            return handler._replace(
                request_deserializer=deserializer,
                unary_stream=_guard_unary_stream(method, handler.unary_stream),
            )
        return handler._replace(
            request_deserializer=deserializer,
            unary_unary=_guard_unary_unary(method, handler.unary_unary),
        )


def _join_host_port(host: str, port: int) -> str:
    # IPv6 literals need brackets in a gRPC target.
    if ":" in host and not host.startswith("["):
        return f"[{host}]:{port}"
    return f"{host}:{port}"


async def start_server(
    servicer_adders: Iterable[ServicerAdder],
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    interceptors: Sequence[grpc.aio.ServerInterceptor],
    options: Sequence[tuple[str, Any]] = (),
) -> tuple[grpc.aio.Server, str]:
    """Build, bind and start a grpc.aio server; return it and its ``host:port``.

    ``port=0`` lets the kernel pick a free port; the returned address has the real one.
    ``interceptors`` is required so that leaving out authentication is a visible choice
    (pass ``[TokenAuthInterceptor(secret)]``; ``()`` only in tests of the transport);
    ``WireGuard`` always goes outside them.
    Raises ``RuntimeError`` if the address cannot be bound (e.g. already in use).
    """
    server = grpc.aio.server(
        interceptors=[WireGuard(), *interceptors], options=[*SERVER_OPTIONS, *options]
    )
    for add in servicer_adders:
        add(server)
    target = _join_host_port(host, port)
    try:
        bound = server.add_insecure_port(target)
    except RuntimeError as exc:  # grpcio >= 1.5x raises; older returned 0
        raise RuntimeError(f"cannot bind gRPC server to {target}: {exc}") from exc
    if bound == 0:
        raise RuntimeError(f"cannot bind gRPC server to {target}")
    await server.start()
    return server, _join_host_port(host, bound)


async def stop_server(server: grpc.aio.Server, grace: float | None = 1.0) -> None:
    """Stop accepting calls, give running calls ``grace`` seconds, then cancel them."""
    await server.stop(grace)


def make_channel(
    address: str, token: str, *, options: Sequence[tuple[str, Any]] = ()
) -> grpc.aio.Channel:
    """An insecure (loopback) channel to ``address`` that sends ``token`` on every call.

    Create it on the event loop that will use it; close it with ``await channel.close()``
    or ``async with``.
    """
    return grpc.aio.insecure_channel(
        address, options=[*_SIZE_OPTIONS, *options], interceptors=bearer_interceptors(token)
    )


class Transport(Protocol):
    """How a daemon host serves and reaches its peers: gRPC over sockets (``GRPC``), its
    own daemons in-process first (``inprocess.SameProcessFirst``)."""

    async def start_server(
        self,
        servicer_adders: Iterable[ServicerAdder],
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        interceptors: Sequence[grpc.aio.ServerInterceptor],
    ) -> tuple[Any, str]: ...

    async def stop_server(self, server: Any, grace: float | None = 1.0) -> None: ...

    def channel(self, address: str, token: str) -> Any: ...


class _GrpcTransport:
    """Real gRPC: ``start_server``, ``stop_server`` and ``make_channel`` of this module."""

    async def start_server(
        self,
        servicer_adders: Iterable[ServicerAdder],
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        interceptors: Sequence[grpc.aio.ServerInterceptor],
    ) -> tuple[Any, str]:
        return await start_server(servicer_adders, host, port, interceptors=interceptors)

    async def stop_server(self, server: Any, grace: float | None = 1.0) -> None:
        await stop_server(server, grace)

    def channel(self, address: str, token: str) -> grpc.aio.Channel:
        return make_channel(address, token)


GRPC: Transport = _GrpcTransport()


_jitter = random.Random()  # spreads retries out


def request_id() -> str:
    """A fresh id (128 random bits, hex) that makes a retried request idempotent."""
    return uuid.uuid4().hex


class RpcUnavailableError(grpc.aio.AioRpcError):
    """A call still UNAVAILABLE after every retry.

    An ``AioRpcError`` with code UNAVAILABLE, so code that handles gRPC errors keeps
    working; the details say which method, how many attempts and the last error.
    """

    def __init__(self, method: str, attempts: int, elapsed: float, last: grpc.aio.AioRpcError):
        self.method = method
        self.attempts = attempts
        super().__init__(
            grpc.StatusCode.UNAVAILABLE,
            last.initial_metadata(),
            last.trailing_metadata(),
            f"{method} still UNAVAILABLE after {attempts} attempts over {elapsed:.2f}s; "
            f"last error: {last.details()}",
            last.debug_error_string(),
        )


def _method_name(stub_method: Any) -> str:
    # grpc.aio multicallables keep their path in `_method` (bytes); fall back to repr.
    name = getattr(stub_method, "_method", None)
    if isinstance(name, bytes):
        return name.decode(errors="replace")
    return str(name) if name else repr(stub_method)


async def call(
    stub_method: Callable[..., Any],
    request: Any,
    *,
    timeout: float,
    retries: int = 3,
    backoff: float = 0.05,
    max_backoff: float = 1.0,
    metadata: Sequence[tuple[str, str]] | None = None,
) -> Any:
    """Make a unary-unary call with a deadline, retrying only on UNAVAILABLE.

    ``timeout`` (real seconds) is the deadline of each attempt; there are at most
    ``retries + 1`` attempts, separated by exponential backoff with jitter (real time,
    not pool time: it paces the transport, not the simulation). Any other status is
    raised at once: the server may have acted on the request. When retries run out,
    raises ``RpcUnavailableError``.
    """
    if timeout <= 0:
        raise ValueError(f"timeout must be > 0, got {timeout}")
    if retries < 0:
        raise ValueError(f"retries must be >= 0, got {retries}")
    start = time.monotonic()
    attempt = 0
    while True:
        attempt += 1
        try:
            return await stub_method(request, timeout=timeout, metadata=metadata)
        except grpc.aio.AioRpcError as exc:
            if exc.code() != grpc.StatusCode.UNAVAILABLE:
                raise
            if attempt > retries:
                raise RpcUnavailableError(
                    _method_name(stub_method), attempt, time.monotonic() - start, exc
                ) from exc
            # Full-ish jitter: many clients of a restarted daemon must not retry in step.
            delay = min(max_backoff, backoff * 2 ** (attempt - 1))
            await asyncio.sleep(delay * _jitter.uniform(0.5, 1.0))
