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
"""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import grpc
import grpc.aio

from .auth import bearer_interceptors

__all__ = [
    "SERVER_OPTIONS",
    "RpcUnavailableError",
    "ServicerAdder",
    "call",
    "make_channel",
    "request_id",
    "start_server",
    "stop_server",
]

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
    (pass ``[TokenAuthInterceptor(secret)]``; ``()`` only in tests of the transport).
    Raises ``RuntimeError`` if the address cannot be bound (e.g. already in use).
    """
    server = grpc.aio.server(interceptors=list(interceptors), options=[*SERVER_OPTIONS, *options])
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
            await asyncio.sleep(delay * random.uniform(0.5, 1.0))
