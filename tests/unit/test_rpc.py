"""mockpool.rpc against real grpc.aio servers on 127.0.0.1, port 0 (bytes in, bytes out)."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import grpc
import grpc.aio
import pytest

from mockpool import auth, rpc
from mockpool.auth import Role
from mockpool.cedar import idtokens
from mockpool.v1 import schedd_pb2

SERVICE = "mockpool.test.Echo"


@dataclass
class Echo:
    """Generic handlers standing in for a daemon; counts calls per method."""

    calls: Counter[str] = field(default_factory=Counter)
    flaky_failures: int = 2  # Flaky answers UNAVAILABLE this many times, then succeeds

    async def echo(self, request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        self.calls["Echo"] += 1
        return request

    async def who_am_i(self, request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        role = auth.current_role()
        return role.value.encode() if role else b"?"

    async def slow(self, request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        self.calls["Slow"] += 1
        await asyncio.sleep(1.0)
        return request

    async def flaky(self, request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        self.calls["Flaky"] += 1
        if self.calls["Flaky"] <= self.flaky_failures:
            await context.abort(grpc.StatusCode.UNAVAILABLE, "warming up")
        return request

    async def refuse(self, request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        self.calls["Refuse"] += 1
        await context.abort(grpc.StatusCode.ABORTED, "conflict")
        return b""

    def stream(self, request: bytes, context: grpc.ServicerContext) -> Iterator[bytes]:
        yield request

    async def query(
        self, request: schedd_pb2.JobQueryRequest, context: grpc.aio.ServicerContext
    ) -> schedd_pb2.JobQueryReply:
        """A protobuf method that, like the daemons, quotes a bad input in its refusal."""
        self.calls["Query"] += 1
        if request.constraint.startswith("bad"):
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"bad: {request.constraint}")
        return schedd_pb2.JobQueryReply()

    async def crash(self, request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        raise ValueError("broken: " + request.decode(errors="replace"))

    async def stream_refuse(self, request: bytes, context: grpc.aio.ServicerContext):  # type: ignore[no-untyped-def]
        yield b"first"
        await context.abort(grpc.StatusCode.FAILED_PRECONDITION, request.decode())

    def adder(self) -> rpc.ServicerAdder:
        u = grpc.unary_unary_rpc_method_handler
        handler = grpc.method_handlers_generic_handler(
            SERVICE,
            {
                "Echo": u(self.echo),
                "WhoAmI": u(self.who_am_i),
                "Slow": u(self.slow),
                "Flaky": u(self.flaky),
                "Refuse": u(self.refuse),
                "Stream": grpc.unary_stream_rpc_method_handler(self.stream),
                "StreamRefuse": grpc.unary_stream_rpc_method_handler(self.stream_refuse),
                "Crash": u(self.crash),
                "Query": u(
                    self.query,
                    request_deserializer=schedd_pb2.JobQueryRequest.FromString,
                    response_serializer=schedd_pb2.JobQueryReply.SerializeToString,
                ),
            },
        )
        return lambda server: server.add_generic_rpc_handlers((handler,))


def method(channel: grpc.aio.Channel, name: str) -> grpc.aio.UnaryUnaryMultiCallable:
    return channel.unary_unary(f"/{SERVICE}/{name}")


@dataclass
class Running:
    address: str
    secret: str
    echo: Echo
    server: grpc.aio.Server

    def channel(self, role: Role = Role.DAEMON) -> grpc.aio.Channel:
        return rpc.make_channel(
            self.address, auth.make_token(self.secret, role, "alice" if role is Role.SUBMIT else "")
        )


@pytest.fixture
async def running() -> AsyncIterator[Running]:
    secret = auth.make_secret()
    echo = Echo()
    server, address = await rpc.start_server(
        [echo.adder()], interceptors=[auth.TokenAuthInterceptor(secret)]
    )
    yield Running(address, secret, echo, server)
    await rpc.stop_server(server, grace=0)


async def test_bound_ports_are_real_and_distinct(running: Running) -> None:
    host, port = running.address.rsplit(":", 1)
    assert host == "127.0.0.1" and int(port) > 0
    other, other_address = await rpc.start_server([Echo().adder()], interceptors=[])
    try:
        assert other_address != running.address
        async with grpc.aio.insecure_channel(other_address) as ch:
            assert await method(ch, "Echo")(b"x", timeout=1) == b"x"
        # so_reuseport=0: binding a port that is in use fails instead of sharing it.
        with pytest.raises(RuntimeError, match="cannot bind"):
            await rpc.start_server([Echo().adder()], port=int(port), interceptors=[])
    finally:
        await rpc.stop_server(other, grace=0)


async def test_call_without_token_is_unauthenticated(running: Running) -> None:
    async with grpc.aio.insecure_channel(running.address) as ch:
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await rpc.call(method(ch, "Echo"), b"x", timeout=1)
        assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
        assert "missing pool token" in (info.value.details() or "")
        # Streaming methods are refused the same way.
        with pytest.raises(grpc.aio.AioRpcError) as info:
            async for _ in ch.unary_stream(f"/{SERVICE}/Stream")(b"x", timeout=1):
                pass
        assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert running.echo.calls["Echo"] == 0  # never reached the handler


async def test_token_from_another_pool_is_unauthenticated(running: Running) -> None:
    token = auth.make_token(auth.make_secret(), Role.ADMIN)
    async with rpc.make_channel(running.address, token) as ch:
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await rpc.call(method(ch, "Echo"), b"x", timeout=1)
    assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert "not signed" in (info.value.details() or "")


async def test_call_with_token_succeeds_and_server_sees_role(running: Running) -> None:
    async with running.channel(Role.SUBMIT) as ch:
        assert await rpc.call(method(ch, "Echo"), b"hello", timeout=1) == b"hello"
        assert await rpc.call(method(ch, "WhoAmI"), b"", timeout=1) == b"submit"
        # An explicit per-call token wins over the channel's.
        admin = auth.bearer_metadata(auth.make_token(running.secret, Role.ADMIN))
        who = await rpc.call(method(ch, "WhoAmI"), b"", timeout=1, metadata=admin)
        assert who == b"admin"
        # Streaming goes through the client interceptor too.
        got = [r async for r in ch.unary_stream(f"/{SERVICE}/Stream")(b"s", timeout=1)]
        assert got == [b"s"]


async def test_deadline_is_enforced_and_not_retried(running: Running) -> None:
    async with running.channel() as ch:
        t0 = time.monotonic()
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await rpc.call(method(ch, "Slow"), b"x", timeout=0.1, retries=3)
        elapsed = time.monotonic() - t0
    assert info.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    assert elapsed < 0.5
    assert running.echo.calls["Slow"] == 1  # may have been processed: never retried


async def test_unavailable_is_retried_until_it_succeeds(running: Running) -> None:
    async with running.channel() as ch:
        got = await rpc.call(method(ch, "Flaky"), b"ok", timeout=1, retries=3, backoff=0.01)
    assert got == b"ok"
    assert running.echo.calls["Flaky"] == 3


async def test_other_errors_are_not_retried(running: Running) -> None:
    async with running.channel() as ch:
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await rpc.call(method(ch, "Refuse"), b"x", timeout=1, retries=3)
    assert info.value.code() == grpc.StatusCode.ABORTED
    assert running.echo.calls["Refuse"] == 1


async def test_stopped_server_is_retried_then_fails_clearly() -> None:
    secret = auth.make_secret()
    server, address = await rpc.start_server(
        [Echo().adder()], interceptors=[auth.TokenAuthInterceptor(secret)]
    )
    await rpc.stop_server(server, grace=0)
    async with rpc.make_channel(address, auth.make_token(secret)) as ch:
        t0 = time.monotonic()
        with pytest.raises(rpc.RpcUnavailableError) as info:
            await rpc.call(method(ch, "Echo"), b"x", timeout=1, retries=2, backoff=0.01)
        elapsed = time.monotonic() - t0
    err = info.value
    assert err.code() == grpc.StatusCode.UNAVAILABLE
    assert isinstance(err, grpc.aio.AioRpcError)  # generic gRPC handling still applies
    assert err.attempts == 3
    assert err.method == f"/{SERVICE}/Echo"
    assert f"/{SERVICE}/Echo still UNAVAILABLE after 3 attempts" in (err.details() or "")
    assert elapsed < 1.5


@pytest.mark.parametrize(
    ("kwargs", "message"), [({"timeout": 0}, "timeout"), ({"timeout": 1, "retries": -1}, "retries")]
)
async def test_call_checks_its_arguments(kwargs: dict[str, float], message: str) -> None:
    async def never(*args: object, **kw: object) -> None:
        raise AssertionError("must not be called")

    with pytest.raises(ValueError, match=message):
        await rpc.call(never, b"", **kwargs)  # type: ignore[arg-type]


def test_request_ids_are_unique_hex() -> None:
    ids = {rpc.request_id() for _ in range(1000)}
    assert len(ids) == 1000
    assert all(len(i) == 32 and int(i, 16) >= 0 for i in ids)


def test_ipv6_addresses_are_bracketed() -> None:
    join: Callable[[str, int], str] = rpc._join_host_port
    assert join("::1", 50) == "[::1]:50"
    assert join("127.0.0.1", 50) == "127.0.0.1:50"


# ---------------------------------------------------------------- bad input on the wire
# Raw bytes through a generic channel (no serializer): what a hostile client can send.

HUGE = "x" * 100_000  # far past gRPC's 16 KiB limit on a response's headers


async def _code_and_details(call: Any) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await call
    return info.value.code(), info.value.details() or ""


@pytest.mark.parametrize(
    ("raw", "complaint"),
    [
        (b"\xff\xff\xff\xff", "Wire format was corrupt"),
        # field 2 (constraint), length 2, bytes that are not UTF-8
        (b"\x12\x02\xff\xfe", "bad UTF-8"),
        # field 2 says 5 bytes follow; 2 do
        (b"\x12\x05ab", "not a valid message"),
    ],
)
async def test_undecodable_request_is_invalid_argument(
    running: Running, raw: bytes, complaint: str
) -> None:
    async with running.channel(Role.READ) as ch:
        code, details = await _code_and_details(method(ch, "Query")(raw, timeout=5))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert f"/{SERVICE}/Query: the request is not a valid message" in details
    assert complaint in details
    assert running.echo.calls["Query"] == 0  # the handler never saw it


async def test_valid_request_still_reaches_the_handler(running: Running) -> None:
    request = schedd_pb2.JobQueryRequest(constraint="true").SerializeToString()
    async with running.channel(Role.READ) as ch:
        reply = await method(ch, "Query")(request, timeout=5)
    assert schedd_pb2.JobQueryReply.FromString(reply) == schedd_pb2.JobQueryReply()
    assert running.echo.calls["Query"] == 1


async def test_token_is_checked_before_the_request_is_decoded(running: Running) -> None:
    async with grpc.aio.insecure_channel(running.address) as ch:
        code, _ = await _code_and_details(method(ch, "Query")(b"\xff\xff", timeout=5))
    assert code == grpc.StatusCode.UNAUTHENTICATED


async def test_refusal_quoting_a_huge_input_is_clipped(running: Running) -> None:
    request = schedd_pb2.JobQueryRequest(constraint="bad" + HUGE).SerializeToString()
    async with running.channel(Role.READ) as ch:
        code, details = await _code_and_details(method(ch, "Query")(request, timeout=5))
    # Unclipped, the client sees RESOURCE_EXHAUSTED (metadata size exceeds hard limit).
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert details.startswith("bad: badxxx") and details.endswith("xxx")
    assert f"...[{len('bad: bad') + len(HUGE)} characters, clipped]..." in details
    assert len(details) == rpc.MAX_DETAIL_CHARS


async def test_unexpected_exception_is_unknown_and_clipped(running: Running) -> None:
    async with running.channel() as ch:
        code, details = await _code_and_details(method(ch, "Crash")(HUGE.encode(), timeout=5))
    assert code == grpc.StatusCode.UNKNOWN
    assert details.startswith(f"/{SERVICE}/Crash failed: ValueError: broken: xxx")
    assert len(details) == rpc.MAX_DETAIL_CHARS


async def test_streamed_reply_refusal_is_clipped(running: Running) -> None:
    got: list[bytes] = []
    async with running.channel() as ch:
        with pytest.raises(grpc.aio.AioRpcError) as info:
            async for reply in ch.unary_stream(f"/{SERVICE}/StreamRefuse")(
                HUGE.encode(), timeout=5
            ):
                got.append(reply)
    assert got == [b"first"]
    assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert len(info.value.details() or "") == rpc.MAX_DETAIL_CHARS


async def test_long_token_complaint_is_clipped(running: Running) -> None:
    # A signed token whose scopes name no role is quoted in the refusal.
    scope = "condor:/" + "r" * 2_000  # under the server's 8 KiB limit on request headers
    token = idtokens.mint(
        auth.pool_key(running.secret)[0],
        subject="alice",
        issuer="x",
        now=0,
        extra_claims={"scope": scope},
    )
    metadata = ((auth.AUTH_METADATA_KEY, f"Bearer {token}"),)
    async with grpc.aio.insecure_channel(running.address) as ch:
        code, details = await _code_and_details(
            method(ch, "Echo")(b"x", timeout=5, metadata=metadata)
        )
    assert code == grpc.StatusCode.UNAUTHENTICATED
    assert "grants none" in details and len(details) == rpc.MAX_DETAIL_CHARS


async def test_bad_tokens_under_load_are_all_unauthenticated(running: Running) -> None:
    """Hundreds of concurrent calls with a tampered token, on many connections, with
    large requests, while good calls keep the server's loop busy: every bad one is
    UNAUTHENTICATED (never CANCELLED), and none reaches a handler."""
    good = auth.make_token(running.secret, Role.READ)
    tampered = good[:-4] + ("0000" if not good.endswith("0000") else "1111")
    request = schedd_pb2.JobQueryRequest(constraint="y" * 2_000_000).SerializeToString()
    bad_channels = [rpc.make_channel(running.address, tampered) for _ in range(16)]
    good_channel = rpc.make_channel(running.address, good)
    try:
        bad_calls = [
            method(c, "Query")(request, timeout=60) for c in bad_channels for _ in range(16)
        ]
        busy = [method(good_channel, "Slow")(b"", timeout=60) for _ in range(4)]
        results = await asyncio.gather(*bad_calls, *busy, return_exceptions=True)
    finally:
        for c in [*bad_channels, good_channel]:
            await c.close()
    codes = Counter(
        r.code() if isinstance(r, grpc.aio.AioRpcError) else type(r).__name__
        for r in results[: len(bad_calls)]
    )
    assert codes == Counter({grpc.StatusCode.UNAUTHENTICATED: len(bad_calls)})
    assert results[len(bad_calls) :] == [b""] * 4
    assert running.echo.calls["Query"] == 0


@pytest.mark.parametrize(
    ("text", "limit", "expected"),
    [
        ("short", 400, "short"),
        ("x" * 400, 400, "x" * 400),
        # the marker is 32 characters; of the other 8, two thirds come from the head
        ("0123456789" * 5, 40, "012345 ...[50 characters, clipped]... 89"),
    ],
)
def test_clip_detail(text: str, limit: int, expected: str) -> None:
    assert rpc.clip_detail(text, limit) == expected
    assert len(rpc.clip_detail(text, limit)) <= limit
