"""A live host's calls to its own daemons (in-process) are answered as over gRPC: tokens,
roles, bad bytes, no daemon; and a snapshot handed over is the one sent as bytes."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
import pytest

from mockpool import rpc
from mockpool.auth import Role, make_secret, make_token
from mockpool.classad import ClassAd, parse_expr
from mockpool.clock import ManualClock
from mockpool.config import parse_config
from mockpool.daemon import DaemonContext, EventLog
from mockpool.inprocess import SameProcessFirst
from mockpool.negotiator.service import NegotiatorService
from mockpool.pool.host import DaemonHost
from mockpool.v1 import collector_pb2 as cpb
from mockpool.v1 import collector_pb2_grpc as cgrpc
from mockpool.wire import ad_to_bytes, ad_to_pb


def _central(tmp_path: Path, secret: str, transport: Any) -> DaemonHost:
    return DaemonHost(
        "central",
        secret=secret,
        config=parse_config("", "<test>"),
        state_dir=str(tmp_path / "central"),
        transport=transport,
    )


async def _run(coro_fn, tmp_path: Path):  # type: ignore[no-untyped-def]
    """``coro_fn(transport, address, secret)`` against a live central host's collector,
    called through that host's own transport: in-process."""
    transport = SameProcessFirst()
    secret = make_secret()
    host = _central(tmp_path, secret, transport)
    address = await host.serve()
    await host.run(60.0, time.time(), [0])  # the collector only
    try:
        return await coro_fn(transport, address, secret)
    finally:
        await host.stop()


def _code(exc: pytest.ExceptionInfo[grpc.aio.AioRpcError]) -> grpc.StatusCode:
    return exc.value.code()


async def test_a_valid_call_is_answered(tmp_path: Path) -> None:
    async def body(net, address, secret):  # type: ignore[no-untyped-def]
        stub = cgrpc.CollectorStub(net.channel(address, make_token(secret, Role.READ, "u")))
        reply = await stub.Query(cpb.QueryRequest(ad_type="Collector"))
        return [a.name for ad in reply.ads for a in ad.attributes]

    names = await _run(body, tmp_path)
    assert "MyType" in names


async def test_refusals_carry_grpc_codes(tmp_path: Path) -> None:
    async def body(net, address, secret):  # type: ignore[no-untyped-def]
        codes = {}
        bad = cgrpc.CollectorStub(net.channel(address, "not-a-token"))
        with pytest.raises(grpc.aio.AioRpcError) as e:
            await bad.Query(cpb.QueryRequest(ad_type="Machine"))
        codes["token"] = _code(e)
        reader = cgrpc.CollectorStub(net.channel(address, make_token(secret, Role.READ, "u")))
        with pytest.raises(grpc.aio.AioRpcError) as e:
            await reader.Advertise(cpb.AdvertiseRequest())
        codes["role"] = _code(e)
        raw = net.channel(address, make_token(secret, Role.READ, "u")).unary_unary(
            "/mockpool.v1.Collector/Query",
            request_serializer=None,
            response_deserializer=cpb.QueryReply.FromString,
        )
        with pytest.raises(grpc.aio.AioRpcError) as e:
            await raw(b"\xff\xff\xff")
        codes["bytes"] = _code(e)
        with pytest.raises(grpc.aio.AioRpcError) as e:
            await reader.Query(cpb.QueryRequest(ad_type="Machine", constraint="1 +"))
        codes["constraint"] = _code(e)
        elsewhere = cgrpc.CollectorStub(net.channel("127.0.0.1:1", make_token(secret, Role.READ)))
        with pytest.raises(grpc.aio.AioRpcError) as e:
            await elsewhere.Query(cpb.QueryRequest(ad_type="Machine"))
        codes["address"] = _code(e)
        return codes

    codes = await _run(body, tmp_path)
    assert codes == {
        "token": grpc.StatusCode.UNAUTHENTICATED,
        "role": grpc.StatusCode.PERMISSION_DENIED,
        "bytes": grpc.StatusCode.INVALID_ARGUMENT,
        "constraint": grpc.StatusCode.INVALID_ARGUMENT,
        "address": grpc.StatusCode.UNAVAILABLE,
    }


async def test_the_callers_identity_does_not_leak_into_the_caller(tmp_path: Path) -> None:
    from mockpool.auth import current_role

    async def body(net, address, secret):  # type: ignore[no-untyped-def]
        stub = cgrpc.CollectorStub(net.channel(address, make_token(secret, Role.ADMIN, "a")))
        await stub.Query(cpb.QueryRequest(ad_type="Collector"))
        await asyncio.sleep(0)
        return current_role()

    assert await _run(body, tmp_path) is None


async def test_a_live_host_calls_its_own_daemons_in_process_and_others_over_grpc(
    tmp_path: Path,
) -> None:
    transport = SameProcessFirst()
    secret = make_secret()
    host = _central(tmp_path, secret, transport)
    address = await host.serve()
    await host.run(60.0, time.time(), [0])  # the collector only
    token = make_token(secret, Role.READ, "u")
    local = transport.channel(address, token)
    try:
        assert not isinstance(local, grpc.aio.Channel)  # this process's own server
        reply = await cgrpc.CollectorStub(local).Query(cpb.QueryRequest(ad_type="Collector"))
        assert len(reply.ads) == 1
        # behind the same interceptors: a bad token is refused as over gRPC
        with pytest.raises(grpc.aio.AioRpcError) as e:
            await cgrpc.CollectorStub(transport.channel(address, "not-a-token")).Query(
                cpb.QueryRequest(ad_type="Collector")
            )
        assert _code(e) == grpc.StatusCode.UNAUTHENTICATED
        # the same server over gRPC, for everyone else
        async with rpc.make_channel(address, token) as ch:
            assert (
                len(
                    (await cgrpc.CollectorStub(ch).Query(cpb.QueryRequest(ad_type="Collector"))).ads
                )
                == 1
            )
        other = transport.channel("127.0.0.1:1", token)
        assert isinstance(other, grpc.aio.Channel)
        await other.close()
        assert (await host.status())["rpcs_received"]["Query"] == 3  # every call counted
    finally:
        await host.stop()
    with pytest.raises(grpc.aio.AioRpcError) as e:
        await cgrpc.CollectorStub(local).Query(cpb.QueryRequest(ad_type="Collector"))
    assert _code(e) == grpc.StatusCode.UNAVAILABLE


async def test_a_snapshot_handed_over_in_process_is_the_one_sent_as_bytes(tmp_path: Path) -> None:
    async def body(net, address, secret):  # type: ignore[no-untyped-def]
        admin = cgrpc.CollectorStub(net.channel(address, make_token(secret, Role.ADMIN, "a")))
        request = cpb.AdvertiseRequest()
        for n in (1, 2):
            slot = ClassAd(MyType="Machine", Name=f"slot{n}@x", Cpus=n, State="Unclaimed")
            slot["Start"] = parse_expr("TARGET.ImageSize < 100 * MY.Cpus")
            request.updates.add(ad_type="Machine", ad=ad_to_pb(slot))
        private = ClassAd(MyType="MachinePrivate", Name="slot1@x", Capability="<a:1>#1#1#s1")
        request.updates.add(ad_type="MachinePrivate", ad=ad_to_pb(private))
        assert (await admin.Advertise(request)).accepted == 3
        token = make_token(secret, Role.NEGOTIATOR, "negotiator")
        snapshot = net.channel(address, token).unary_unary(
            "/mockpool.v1.Collector/Snapshot",
            request_serializer=cpb.SnapshotRequest.SerializeToString,
        )
        objects = await snapshot(cpb.SnapshotRequest(), metadata=(rpc.HANDOVER,))
        wire = await snapshot(cpb.SnapshotRequest())
        return objects, wire

    objects, wire = await _run(body, tmp_path)
    assert isinstance(objects, rpc.Handover) and isinstance(wire, bytes)
    got = []
    for name, reply in (("handed", objects), ("sent", wire)):
        ctx = DaemonContext(
            clock=ManualClock(),
            config=parse_config("", "<test>"),
            secret="s",
            collector_address="",
            events=EventLog(ManualClock()),
            state_dir=tmp_path / name,
        )
        service = NegotiatorService(ctx)
        slots, private, columns = service._decode_snapshot(reply)
        assert columns == ({}, [])  # none asked for
        # the ads as sent on with a match: the bytes read from the collector
        assert all(service._slot_decoder.bytes_of(ad) == ad_to_bytes(ad) for ad in slots)
        got.append(([ad_to_bytes(a) for a in slots], [ad_to_bytes(a) for a in private]))
        if reply is objects:  # the collector's own ads, neither decoded nor copied
            assert all(a is r.ad for a, r in zip(slots, objects.value.slots, strict=True))
    assert got[0] == got[1] and len(got[0][0]) == 2 and len(got[0][1]) == 1
