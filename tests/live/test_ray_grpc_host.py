"""The design's pattern, end to end: a Ray async actor hosts a grpc.aio server."""

from __future__ import annotations

import asyncio
import os
import threading
import time

import grpc
import grpc.aio
import pytest

from mockpool import auth, rpc

ray = pytest.importorskip("ray")

pytestmark = pytest.mark.live

SERVICE = "mockpool.test.Host"


@ray.remote
class GrpcHost:
    """A stand-in daemon: its server lives on the actor's own event loop."""

    def __init__(self, secret: str) -> None:
        # Nothing gRPC here: __init__ does not run on the actor's event loop.
        self._secret = secret
        self._server: grpc.aio.Server | None = None
        self._address = ""
        self._calls = 0

    async def _hello(self, request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        self._calls += 1
        where = f"pid={os.getpid()} thread={threading.current_thread().name}"
        return request + b" from " + where.encode()

    async def start(self) -> str:
        handler = grpc.method_handlers_generic_handler(
            SERVICE, {"Hello": grpc.unary_unary_rpc_method_handler(self._hello)}
        )
        self._server, self._address = await rpc.start_server(
            [lambda server: server.add_generic_rpc_handlers((handler,))],
            interceptors=[auth.TokenAuthInterceptor(self._secret)],
        )
        return self._address

    async def call_self(self) -> bytes:
        # A channel made and used on this actor's loop: daemon-to-daemon traffic shape.
        async with rpc.make_channel(self._address, auth.make_token(self._secret)) as ch:
            hello = ch.unary_unary(f"/{SERVICE}/Hello")
            return await rpc.call(hello, b"self", timeout=2)

    async def stop(self, grace: float) -> int:
        assert self._server is not None
        await rpc.stop_server(self._server, grace)
        self._server = None
        return self._calls

    def pid(self) -> int:
        return os.getpid()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.usefixtures("ray_session")
async def test_actor_hosts_grpc_server() -> None:
    secret = auth.make_secret()
    host = GrpcHost.remote(secret)
    address = await host.start.remote()
    pid = await host.pid.remote()
    assert address.startswith("127.0.0.1:") and pid != os.getpid()

    # From the test process, over gRPC, with a token.
    async with rpc.make_channel(address, auth.make_token(secret, auth.Role.READ)) as ch:
        hello = ch.unary_unary(f"/{SERVICE}/Hello")
        reply = await rpc.call(hello, b"hi", timeout=5)
        assert reply.startswith(b"hi from pid=" + str(pid).encode())
    # Without one: refused by the interceptor inside the actor.
    async with grpc.aio.insecure_channel(address) as ch:
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await ch.unary_unary(f"/{SERVICE}/Hello")(b"hi", timeout=5)
        assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED

    assert (await host.call_self.remote()).startswith(b"self from")
    assert await host.stop.remote(0.5) == 2  # one call from here, one from itself

    # The server is gone: the port refuses, and the retry helper says so.
    async with rpc.make_channel(address, auth.make_token(secret)) as ch:
        with pytest.raises(rpc.RpcUnavailableError):
            await rpc.call(ch.unary_unary(f"/{SERVICE}/Hello"), b"hi", timeout=1, retries=1)

    ray.kill(host)
    deadline = time.monotonic() + 10
    while _alive(pid) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert not _alive(pid), "actor process still running after ray.kill"
