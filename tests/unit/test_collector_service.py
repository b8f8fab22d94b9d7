"""The collector's gRPC shell over an in-process grpc.aio server, in ManualClock time."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import grpc.aio
import pytest
from builders.waiting import until

from mockpool import auth, rpc
from mockpool import packedcolumns as pc
from mockpool.auth import Role
from mockpool.classad import ClassAd, parse_expr, unparse
from mockpool.clock import ManualClock
from mockpool.collector.service import CollectorService
from mockpool.config import parse_config
from mockpool.daemon import DaemonContext, EventLog
from mockpool.v1 import classad_pb2, collector_pb2, collector_pb2_grpc
from mockpool.wire import PARTS, AdDecoder, ad_to_pb, ads_from_pb


@dataclass
class Running:
    svc: CollectorService
    clock: ManualClock
    ctx: DaemonContext
    address: str
    secret: str
    server: grpc.aio.Server
    channels: dict[Role, grpc.aio.Channel] = field(default_factory=dict)

    def stub(self, role: Role) -> collector_pb2_grpc.CollectorStub:
        if role not in self.channels:
            token = auth.make_token(self.secret, role, "alice" if role is Role.SUBMIT else "")
            self.channels[role] = rpc.make_channel(self.address, token)
        return collector_pb2_grpc.CollectorStub(self.channels[role])

    async def close(self) -> None:
        await self.svc.stop()
        for ch in self.channels.values():
            await ch.close()
        await rpc.stop_server(self.server, grace=0)

    async def query(
        self,
        ad_type: str,
        constraint: str = "",
        projection: tuple[str, ...] = (),
        role: Role = Role.READ,
    ) -> list[ClassAd]:
        req = collector_pb2.QueryRequest(
            ad_type=ad_type, constraint=constraint, projection=list(projection)
        )
        reply = await rpc.call(self.stub(role).Query, req, timeout=5)
        return ads_from_pb(reply.ads)

    def events(self, kind: str) -> list[dict[str, object]]:
        return [e for e in self.ctx.events.drain() if e["kind"] == kind]


async def drained(coll: Running, kind: str, n: int) -> list[dict[str, object]]:
    """The events of ``kind`` once there are ``n`` (the service's loop acts on the
    clock's move in its own time)."""
    got: list[dict[str, object]] = []
    await until(lambda: got.extend(coll.events(kind)) or len(got) >= n)
    return got


async def start(tmp_path: Path, config: str = "") -> Running:
    clock = ManualClock(0.0)
    secret = auth.make_secret()
    ctx = DaemonContext(
        clock=clock,
        config=parse_config(config, "test"),
        secret=secret,
        collector_address="",
        events=EventLog(clock),
        state_dir=tmp_path,
        host="127.0.0.1",
    )
    svc = CollectorService(ctx)
    server, address = await rpc.start_server(
        [svc.add_to_server],
        interceptors=[auth.TokenAuthInterceptor(secret, method_roles=svc.METHOD_ROLES)],
    )
    ctx.address = address
    await svc.start()
    return Running(svc, clock, ctx, address, secret, server)


@pytest.fixture
async def coll(tmp_path: Path) -> AsyncIterator[Running]:
    running = await start(tmp_path)
    yield running
    await running.close()


def update(ad_type: str, invalidate: bool = False, **attrs: object) -> collector_pb2.AdUpdate:
    ad = ClassAd()
    ad.update(attrs)
    return collector_pb2.AdUpdate(ad_type=ad_type, ad=ad_to_pb(ad), invalidate=invalidate)


def pool_updates() -> list[collector_pb2.AdUpdate]:
    start_expr = parse_expr("TARGET.RequestCpus <= MY.Cpus")
    return [
        update("Machine", Name="slot1@exec1", Cpus=4, State="Unclaimed", Start=start_expr),
        update("Machine", Name="slot2@exec1", Cpus=1, State="Claimed", Start=start_expr),
        update("Machine", Name="slot1@exec2", State="Owner", ClassAdLifetime=60),
        update("MachinePrivate", Name="slot1@exec1", Capability="<h:1>#0#1#secret1"),
        update("MachinePrivate", Name="slot2@exec1", Capability="<h:1>#0#2#secret2"),
        update("Scheduler", Name="schedd@sub1", MyAddress="<127.0.0.1:9>"),
        update("Submitter", Name="alice@mockpool", RunningJobs=3, IdleJobs=5),
    ]


async def advertise(
    coll: Running, updates: list[collector_pb2.AdUpdate], role: Role = Role.DAEMON
) -> collector_pb2.AdvertiseReply:
    req = collector_pb2.AdvertiseRequest(updates=updates)
    return await rpc.call(coll.stub(role).Advertise, req, timeout=5)


def names(ads: list[ClassAd]) -> list[str]:
    return sorted(str(a.get_value("Name")) for a in ads)


async def expect_error(coro: object, code: grpc.StatusCode) -> str:
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await coro  # type: ignore[misc]
    assert info.value.code() == code, info.value.details()
    return info.value.details() or ""


# ----------------------------------------------------------------------------- tests


async def test_advertise_batch_and_query_with_constraint(coll: Running) -> None:
    reply = await advertise(coll, pool_updates())
    assert reply.accepted == 7 and list(reply.errors) == []
    assert names(await coll.query("Machine", "Cpus >= 2")) == ["slot1@exec1"]
    assert names(await coll.query("machine", 'State == "owner" || Cpus == 1')) == [
        "slot1@exec2",
        "slot2@exec1",
    ]
    slot = (await coll.query("Machine", "Cpus >= 2"))[0]
    assert slot.eval("LastHeardFrom") == 0 and slot.eval("MyType") == "Machine"
    assert unparse_start(slot) == "TARGET.RequestCpus <= MY.Cpus"
    assert names(await coll.query("Scheduler")) == ["schedd@sub1"]
    # Projection: the listed attributes plus MyType.
    (proj,) = await coll.query("Machine", "Cpus >= 2", ("cpus", "State"))
    assert sorted(proj) == ["Cpus", "MyType", "State"]
    assert coll.svc.status()["ads"] == {
        "Machine": 3,
        "MachinePrivate": 2,
        "Scheduler": 1,
        "Submitter": 1,
        "Collector": 1,
    }


def unparse_start(ad: ClassAd) -> str:
    from mockpool.classad import unparse

    return unparse(ad["Start"])


async def test_bad_updates_are_reported_one_by_one(coll: Running) -> None:
    bad_expr = collector_pb2.AdUpdate(ad_type="Machine")
    bad_expr.ad.attributes.add(name="Name").literal.str = "slot9@exec9"
    bad_expr.ad.attributes.add(name="Start", expression="Cpus >= ")
    updates = [
        update("Machine", Name="slot1@exec1", Cpus=4),
        update("Machine", Cpus=2),  # no Name
        bad_expr,  # does not decode
        update("Machine", Name="slot2@exec1", MyType="Scheduler"),
        update("", Name="x"),
        update("Machine", Name="slot3@exec1", Cpus=1),
    ]
    reply = await advertise(coll, updates)
    assert reply.accepted == 2
    errors = list(reply.errors)
    assert len(errors) == 4
    assert errors[0].startswith("update 1 (Machine): ") and "has no Name" in errors[0]
    assert errors[1].startswith("update 2 (Machine 'slot9@exec9'): attribute Start")
    assert errors[2].startswith("update 3 (Machine 'slot2@exec1'): ")
    assert "MyType 'Scheduler'" in errors[2]
    assert errors[3].startswith("update 4 ('x'): ") and "no ad type" in errors[3]
    assert names(await coll.query("Machine")) == ["slot1@exec1", "slot3@exec1"]
    assert coll.svc.status()["updates_refused"] == 4


async def test_snapshot_refused_for_read_and_allowed_for_negotiator(coll: Running) -> None:
    await advertise(coll, pool_updates())
    await coll.clock.advance(30.5)
    req = collector_pb2.SnapshotRequest()
    details = await expect_error(
        rpc.call(coll.stub(Role.READ).Snapshot, req, timeout=5), grpc.StatusCode.PERMISSION_DENIED
    )
    assert "may not call /mockpool.v1.Collector/Snapshot" in details
    for role in (Role.DAEMON, Role.SUBMIT):
        await expect_error(
            rpc.call(coll.stub(role).Snapshot, req, timeout=5), grpc.StatusCode.PERMISSION_DENIED
        )
    reply = await rpc.call(coll.stub(Role.NEGOTIATOR).Snapshot, req, timeout=5)
    assert reply.now == 30.5
    assert names(ads_from_pb(reply.slots)) == ["slot1@exec1", "slot1@exec2", "slot2@exec1"]
    caps = sorted(a.eval("Capability") for a in ads_from_pb(reply.private_ads))
    assert caps == ["<h:1>#0#1#secret1", "<h:1>#0#2#secret2"]
    # With a constraint and a projection (Name always kept: it joins the private ads).
    req = collector_pb2.SnapshotRequest(constraint='State == "Claimed"', projection=["Cpus"])
    reply = await rpc.call(coll.stub(Role.ADMIN).Snapshot, req, timeout=5)
    (slot,) = ads_from_pb(reply.slots)
    assert sorted(slot) == ["Cpus", "MyType", "Name"] and slot.eval("Cpus") == 1
    assert [a.eval("Name") for a in ads_from_pb(reply.private_ads)] == ["slot2@exec1"]


async def test_a_snapshot_sends_the_columns_asked_for_over_every_slot(coll: Running) -> None:
    await advertise(coll, pool_updates())
    req = collector_pb2.SnapshotRequest(columns=["Cpus", "Start", "State", "Cpus"])
    reply = await rpc.call(coll.stub(Role.NEGOTIATOR).Snapshot, req, timeout=5)
    order = list(reply.slot_order)
    assert order == ["slot1@exec1", "slot2@exec1", "slot1@exec2"]
    cols = {c.name: pc.column_from_pb(c, order) for c in reply.columns}
    assert list(cols) == ["Cpus", "Start", "State"]  # each once
    assert cols["Cpus"].kinds.tolist() == [pc.INT, pc.INT, pc.MISSING]
    assert cols["Cpus"].ints.tolist() == [4, 1]
    assert cols["Start"].kinds.tolist() == [pc.EXPR, pc.EXPR, pc.MISSING]
    assert [unparse(e) for e in cols["Start"].exprs] == ["TARGET.RequestCpus <= MY.Cpus"]
    assert list(cols["State"].strings) == ["Unclaimed", "Claimed", "Owner"]
    assert cols["State"].string_rows.tolist() == [0, 1, 2]
    # a delta carries the ads changed, and the columns of every slot
    await advertise(coll, [update("Machine", Name="slot2@exec1", Cpus=8, State="Claimed")])
    req = collector_pb2.SnapshotRequest(
        since_epoch=reply.epoch, since_seq=reply.seq, columns=["Cpus"]
    )
    delta = await rpc.call(coll.stub(Role.NEGOTIATOR).Snapshot, req, timeout=5)
    assert delta.delta and names(ads_from_pb(delta.slots)) == ["slot2@exec1"]
    (cpus,) = [pc.column_from_pb(c, order) for c in delta.columns]
    assert cpus.ints.tolist() == [4, 8]


async def test_a_snapshot_asking_for_too_many_columns_is_invalid(coll: Running) -> None:
    await advertise(coll, pool_updates())
    req = collector_pb2.SnapshotRequest(columns=[f"A{k}" for k in range(2000)])
    details = await expect_error(
        rpc.call(coll.stub(Role.NEGOTIATOR).Snapshot, req, timeout=5),
        grpc.StatusCode.INVALID_ARGUMENT,
    )
    assert "at most 1024 slot columns, not 2000" in details
    assert coll.svc.store.columns.kept() == []


async def test_private_ads_only_for_negotiator_and_admin(coll: Running) -> None:
    await advertise(coll, pool_updates())
    for role in (Role.READ, Role.SUBMIT, Role.DAEMON):
        details = await expect_error(
            coll.query("MachinePrivate", role=role), grpc.StatusCode.PERMISSION_DENIED
        )
        assert "claim ids" in details
    await expect_error(coll.query("machineprivate"), grpc.StatusCode.PERMISSION_DENIED)
    assert len(await coll.query("MachinePrivate", role=Role.NEGOTIATOR)) == 2
    assert len(await coll.query("MachinePrivate", "Capability =!= undefined", role=Role.ADMIN)) == 2
    # Slot queries never carry claim ids.
    assert all("Capability" not in a for a in await coll.query("Machine"))


async def test_call_without_token_is_unauthenticated(coll: Running) -> None:
    async with grpc.aio.insecure_channel(coll.address) as ch:
        stub = collector_pb2_grpc.CollectorStub(ch)
        await expect_error(
            stub.Query(collector_pb2.QueryRequest(ad_type="Machine"), timeout=5),
            grpc.StatusCode.UNAUTHENTICATED,
        )
        await expect_error(
            stub.Advertise(collector_pb2.AdvertiseRequest(updates=pool_updates()), timeout=5),
            grpc.StatusCode.UNAUTHENTICATED,
        )
    assert coll.svc.status()["ads"] == {"Collector": 1}


async def test_advertise_needs_a_daemon_role(coll: Running) -> None:
    for role in (Role.READ, Role.SUBMIT):
        await expect_error(advertise(coll, pool_updates(), role), grpc.StatusCode.PERMISSION_DENIED)
    for role in (Role.NEGOTIATOR, Role.ADMIN):
        assert (await advertise(coll, pool_updates()[:1], role)).accepted == 1


async def test_a_query_over_thousands_of_ads_is_answered_off_the_loop_alike(
    coll: Running,
) -> None:
    """6,000 slots (past the size whose constraint is evaluated in a worker thread): the
    constraint and projection give what they give on three, and a malformed one is still
    INVALID_ARGUMENT naming it; the ads stored are untouched."""
    updates = [
        update("Machine", Name=f"slot{k}@big", Cpus=k % 7, State="Unclaimed") for k in range(6000)
    ]
    for start in range(0, len(updates), 1000):
        await advertise(coll, updates[start : start + 1000])
    offloaded: list[str] = []
    inline = coll.ctx.offload

    async def spy(fn, /, *args, **kwargs):  # type: ignore[no-untyped-def]
        offloaded.append(fn.__name__)
        return await inline(fn, *args, **kwargs)

    coll.ctx.offload = spy  # type: ignore[method-assign]
    got = await coll.query("Machine", "Cpus == 3", ("Cpus",))
    assert offloaded == ["_query_reply"]
    await coll.query("Scheduler")  # a handful of ads: answered on the loop
    assert offloaded == ["_query_reply"]
    assert len(got) == 857 and {a.eval("Cpus") for a in got} == {3}  # k % 7 == 3 below 6000
    assert sorted(got[0]) == ["Cpus", "MyType"]
    details = await expect_error(
        coll.query("Machine", "Cpus >= && 1"), grpc.StatusCode.INVALID_ARGUMENT
    )
    assert "bad constraint 'Cpus >= && 1'" in details
    assert len(await coll.query("Machine")) == 6000


async def test_malformed_constraint_is_invalid_argument(coll: Running) -> None:
    await advertise(coll, pool_updates())
    details = await expect_error(
        coll.query("Machine", "Cpus >= && 1"), grpc.StatusCode.INVALID_ARGUMENT
    )
    assert "bad constraint 'Cpus >= && 1'" in details
    details = await expect_error(
        rpc.call(
            coll.stub(Role.NEGOTIATOR).Snapshot,
            collector_pb2.SnapshotRequest(constraint="(("),
            timeout=5,
        ),
        grpc.StatusCode.INVALID_ARGUMENT,
    )
    assert "bad constraint '(('" in details
    details = await expect_error(coll.query(""), grpc.StatusCode.INVALID_ARGUMENT)
    assert "ad_type" in details


async def test_invalidate_removes_slot_and_private_ad(coll: Running) -> None:
    await advertise(coll, pool_updates())
    coll.ctx.events.drain()
    reply = await advertise(coll, [update("Machine", invalidate=True, Name="SLOT1@EXEC1")])
    assert reply.accepted == 1
    assert names(await coll.query("Machine")) == ["slot1@exec2", "slot2@exec1"]
    assert len(await coll.query("MachinePrivate", role=Role.NEGOTIATOR)) == 1
    events = coll.events("ad_invalidated")
    assert [(e["ad_type"], e["name"]) for e in events] == [
        ("Machine", "slot1@exec1"),
        ("MachinePrivate", "slot1@exec1"),
    ]
    # Invalidating what is not there is fine; an invalidation without Name is not.
    reply = await advertise(
        coll, [update("Machine", invalidate=True, Name="nope"), update("Machine", invalidate=True)]
    )
    assert reply.accepted == 1 and "has no Name" in reply.errors[0]


async def test_housekeeper_expires_ads_every_classad_lifetime(coll: Running) -> None:
    await advertise(coll, pool_updates())  # at t=0; slot1@exec2 has ClassAdLifetime 60
    coll.ctx.events.drain()
    await coll.clock.advance(899)
    assert coll.events("ad_expired") == []  # the first housekeeping round is at 900
    await coll.clock.advance(1)  # t=900: 900 > 60 expires; 900 > 900 does not
    expired = await drained(coll, "ad_expired", 1)
    assert [(e["ad_type"], e["name"], e["t"]) for e in expired] == [
        ("Machine", "slot1@exec2", 900.0)
    ]
    assert expired[0]["daemon"] == coll.svc.name
    # Refresh one slot at t=1000: it survives the round at 1800, the rest go.
    await coll.clock.advance(100)
    await advertise(coll, [update("Machine", Name="slot2@exec1", Cpus=1, State="Claimed")])
    await coll.clock.advance(800)
    gone = sorted((e["ad_type"], e["name"]) for e in await drained(coll, "ad_expired", 5))
    assert gone == [
        ("Machine", "slot1@exec1"),
        ("MachinePrivate", "slot1@exec1"),
        ("MachinePrivate", "slot2@exec1"),
        ("Scheduler", "schedd@sub1"),
        ("Submitter", "alice@mockpool"),
    ]
    assert coll.svc.status()["ads"] == {"Machine": 1, "Collector": 1}  # own ad refreshed
    assert coll.svc.status()["expired"] == 6


async def test_collector_holds_its_own_ad(coll: Running) -> None:
    (own,) = await coll.query("Collector")
    assert own.eval("Name") == "127.0.0.1"  # no COLLECTOR_NAME: the host, as HTCondor
    assert own.eval("MyAddress") == f"<{coll.address}>"
    assert own.eval("HostsTotal") == 0
    await advertise(coll, pool_updates())
    await coll.clock.advance(900)  # refreshed every COLLECTOR_UPDATE_INTERVAL (900)
    (own,) = await coll.query(
        "Collector",
        projection=(
            "HostsTotal",
            "HostsClaimed",
            "HostsUnclaimed",
            "HostsOwner",
            "RunningJobs",
            "IdleJobs",
        ),
    )
    # At 900 the slot with ClassAdLifetime 60 may or may not be counted (same instant as
    # the housekeeper); the other two are: one Claimed, one Unclaimed.
    assert own.eval("HostsClaimed") == 1 and own.eval("HostsUnclaimed") == 1
    assert own.eval("HostsTotal") - own.eval("HostsOwner") == 2
    assert (own.eval("RunningJobs"), own.eval("IdleJobs")) == (3, 5)


async def test_collector_name_from_config(tmp_path: Path) -> None:
    running = await start(tmp_path, "COLLECTOR_NAME = My Pool\nCLASSAD_LIFETIME = 120\n")
    try:
        assert running.svc.name == "My Pool@127.0.0.1"
        assert running.svc.core.housekeeping_interval == 120.0
        (own,) = await running.query("Collector")
        assert own.eval("Name") == "My Pool@127.0.0.1"
    finally:
        await running.close()


async def test_query_reply_bytes_parse_as_the_contract(coll: Running) -> None:
    await advertise(coll, pool_updates())
    coll.stub(Role.READ)  # the READ channel, without the stub's deserializer
    raw = coll.channels[Role.READ].unary_unary(
        "/mockpool.v1.Collector/Query",
        request_serializer=collector_pb2.QueryRequest.SerializeToString,
    )
    blob = await raw(collector_pb2.QueryRequest(ad_type="Scheduler"), timeout=5)
    reply = collector_pb2.QueryReply.FromString(blob)
    assert len(reply.ads) == 1
    assert isinstance(reply.ads[0], classad_pb2.ClassAd)


async def test_the_repeating_part_of_a_slot_ad_is_decoded_once(coll: Running) -> None:
    # A startd's update: the slot's stable attributes, marked, then its clocks.
    head = update("Machine", Name="slot1@exec1", Cpus=4, State="Unclaimed")
    head.stable_prefix = head.ad.ByteSize()
    before = (PARTS.hits, PARTS.misses)
    for now in (100, 200):
        upd = collector_pb2.AdUpdate.FromString(
            head.SerializeToString() + update("Machine", MyCurrentTime=now).SerializeToString()
        )
        assert (await advertise(coll, [upd])).accepted == 1
        [ad] = await coll.query("Machine")
        assert (ad.get_value("State"), ad.get_value("MyCurrentTime")) == ("Unclaimed", now)
    assert (PARTS.hits - before[0], PARTS.misses - before[1]) == (1, 1)
    # the hint goes on to the negotiator with the slot's bytes (not with a projection)
    snap = collector_pb2.SnapshotRequest()
    reply = await rpc.call(coll.stub(Role.NEGOTIATOR).Snapshot, snap, timeout=5)
    assert list(reply.slot_stable_prefix) == [head.stable_prefix]
    assert reply.slots[0].SerializeToString()[: head.stable_prefix] == head.ad.SerializeToString()
    [ad] = AdDecoder().decode(reply.slots, reply.slot_stable_prefix)
    assert (ad.get_value("Cpus"), ad.get_value("MyCurrentTime")) == (4, 200)
    assert PARTS.hits - before[0] == 2  # the collector's part, read by the negotiator
    snap.projection.append("Cpus")
    reply = await rpc.call(coll.stub(Role.NEGOTIATOR).Snapshot, snap, timeout=5)
    assert list(reply.slot_stable_prefix) == [0]
    # a hint past the ad's end is ignored: the ad is decoded as it is
    upd.stable_prefix = 10_000
    assert (await advertise(coll, [upd])).accepted == 1
    assert [a.get_value("Cpus") for a in await coll.query("Machine")] == [4]
