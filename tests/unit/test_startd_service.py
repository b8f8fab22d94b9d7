"""The startd service over an in-process gRPC server, a fake collector and a fake schedd."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import grpc.aio
import pytest
from builders.waiting import until

from mockpool import auth, rpc, turns
from mockpool.auth import Role
from mockpool.classad import ClassAd, parse_expr
from mockpool.clock import ManualClock
from mockpool.config import parse_config
from mockpool.daemon import DaemonContext, EventLog
from mockpool.startd.adverts import RecordAds
from mockpool.startd.service import RETRY_INTERVAL, UPDATE_DELAY, StartdService, _requests
from mockpool.startd.slots import current_ad, private_ad, public_ad
from mockpool.v1 import (
    collector_pb2,
    collector_pb2_grpc,
    schedd_pb2,
    schedd_pb2_grpc,
    startd_pb2_grpc,
)
from mockpool.v1 import startd_pb2 as pb
from mockpool.wire import ad_from_bytes, ad_from_pb, ad_to_pb


class FakeCollector(collector_pb2_grpc.CollectorServicer):
    def __init__(self) -> None:
        self.calls: list[list[collector_pb2.AdUpdate]] = []
        self.ads: dict[tuple[str, str], ClassAd] = {}
        self.fail_next = 0

    async def Advertise(self, request, context):  # type: ignore[no-untyped-def]
        self.calls.append(list(request.updates))
        if self.fail_next:
            self.fail_next -= 1
            await context.abort(grpc.StatusCode.INTERNAL, "collector is busy")
        for u in request.updates:
            ad = ad_from_pb(u.ad)
            key = (u.ad_type, ad.eval("Name"))
            if u.invalidate:
                self.ads.pop(key, None)
            else:
                self.ads[key] = ad
        return collector_pb2.AdvertiseReply(accepted=len(request.updates))


class FakeSchedd(schedd_pb2_grpc.ScheddServicer):
    def __init__(self) -> None:
        self.requests: list[schedd_pb2.JobsExitedRequest] = []
        self.fail_next = 0

    async def JobsExited(self, request, context):  # type: ignore[no-untyped-def]
        self.requests.append(request)
        if self.fail_next:
            self.fail_next -= 1
            await context.abort(grpc.StatusCode.INTERNAL, "schedd is busy")
        return schedd_pb2.JobsExitedReply(accepted=len(request.exits))


@dataclass
class Pool:
    clock: ManualClock
    svc: StartdService
    collector: FakeCollector
    schedd: FakeSchedd
    peer_address: str
    address: str
    secret: str
    stub: startd_pb2_grpc.StartdStub
    channels: list[grpc.aio.Channel] = field(default_factory=list)

    def ad(self, name: str, ad_type: str = "Machine") -> ClassAd | None:
        return self.collector.ads.get((ad_type, name))

    def channel(self, role: Role | None, identity: str | None = None) -> grpc.aio.Channel:
        if role is None:
            ch = grpc.aio.insecure_channel(self.address)
        else:
            name = IDENTITY.get(role, "") if identity is None else identity
            ch = rpc.make_channel(self.address, auth.make_token(self.secret, role, name))
        self.channels.append(ch)
        return ch


async def send_update(p: Pool) -> None:
    """Let the update a change asked for go: once it is due, UPDATE_DELAY on."""
    due = p.clock.now() + UPDATE_DELAY
    await until(lambda: due in p.clock.wakeups())
    await p.clock.advance_to(due)


MACHINE_CONFIG = "NUM_CPUS = 4\nMEMORY = 8192\nCONSUMPTION_POLICY = True\n"
# Who each role's token names: DAEMON calls come from schedd0, the claims' holder.
IDENTITY = {Role.SUBMIT: "alice", Role.DAEMON: "schedd/schedd0"}


@pytest.fixture
async def pool(tmp_path: Path) -> AsyncIterator[Pool]:
    secret = auth.make_secret()
    clock = ManualClock(0.0)
    collector, schedd = FakeCollector(), FakeSchedd()

    def add_peers(server: grpc.aio.Server) -> None:
        collector_pb2_grpc.add_CollectorServicer_to_server(collector, server)
        schedd_pb2_grpc.add_ScheddServicer_to_server(schedd, server)

    interceptor = auth.TokenAuthInterceptor(secret)
    peer_server, peer_addr = await rpc.start_server([add_peers], interceptors=[interceptor])
    cfg = parse_config("UPDATE_INTERVAL = 300\n", "pool.conf")
    mcfg = parse_config(MACHINE_CONFIG, "machine.conf", cfg)
    ctx = DaemonContext(
        clock=clock,
        config=cfg,
        secret=secret,
        collector_address=peer_addr,
        events=EventLog(clock),
        state_dir=tmp_path,
    )
    svc = StartdService(ctx, [("exec0001", mcfg), ("exec0002", mcfg)])
    server, addr = await rpc.start_server(
        [svc.add_to_server],
        interceptors=[auth.TokenAuthInterceptor(secret, method_roles=svc.METHOD_ROLES)],
    )
    ctx.address = addr
    await svc.start()
    ch = rpc.make_channel(addr, auth.make_token(secret, Role.DAEMON, IDENTITY[Role.DAEMON]))
    p = Pool(
        clock, svc, collector, schedd, peer_addr, addr, secret, startd_pb2_grpc.StartdStub(ch), [ch]
    )
    try:
        yield p
    finally:
        await svc.stop()
        await ctx.close_channels()
        for c in p.channels:
            await c.close()
        await rpc.stop_server(server, 0)
        await rpc.stop_server(peer_server, 0)


def job_pb(cluster: int, proc: int = 0, duration: float = 60, memory: int = 1000) -> ClassAd:
    ad = ClassAd(
        ClusterId=cluster,
        ProcId=proc,
        Owner="alice",
        User="alice@mockpool",
        RequestCpus=1,
        RequestMemory=memory,
        RequestDisk=1024,
        MockDuration=duration,
    )
    ad["Requirements"] = parse_expr("TARGET.Memory >= RequestMemory")
    return ad_to_pb(ad)


def claim_request(p: Pool, claim_id: str, slot: str, cluster: int) -> pb.ClaimRequest:
    return pb.ClaimRequest(
        claim_id=claim_id,
        slot_name=slot,
        job=job_pb(cluster),
        schedd_name="schedd0",
        schedd_address=f"<{p.peer_address}>",  # a sinful string works as well as host:port
        owner="alice@mockpool",
    )


def offered(p: Pool, slot: str = "slot1@exec0001") -> list[str]:
    ad = p.ad(slot, "MachinePrivate")
    assert ad is not None
    return ad.eval("ClaimIdList").split()


async def test_claim_activate_exit_reported_and_ads_updated(pool: Pool) -> None:
    p = pool
    # both machines advertised in one Advertise call at start
    await until(lambda: p.ad("slot1@exec0002") is not None)
    assert len(p.collector.calls) == 1
    assert {k for k in p.collector.ads} == {
        (t, f"slot1@{m}") for t in ("Machine", "MachinePrivate") for m in ("exec0001", "exec0002")
    }
    cid = offered(p)[0]
    reply = await p.stub.RequestClaims(
        pb.RequestClaimsRequest(
            request_id="r1", claims=[claim_request(p, cid, "slot1@exec0001", 12)]
        )
    )
    (res,) = reply.results
    assert res.ok, res.error
    assert res.slot_name == "slot1_1@exec0001"
    assert ad_from_pb(res.slot).eval("Memory") == 1024
    held = res.claim_id
    assert held != cid
    # the change is advertised UPDATE_DELAY later (HTCondor's startd: one second), not at
    # the next UPDATE_INTERVAL
    assert p.ad("slot1_1@exec0001") is None
    await send_update(p)
    await until(lambda: p.ad("slot1_1@exec0001") is not None)
    assert p.ad("slot1@exec0001").eval("Cpus") == 3
    assert cid not in offered(p)

    act = await p.stub.ActivateClaims(
        pb.ActivateClaimsRequest(
            request_id="a1", activations=[pb.Activation(claim_id=held, job=job_pb(12))]
        )
    )
    assert act.results[0].ok, act.results[0].error
    assert act.results[0].start_time == 1
    await send_update(p)
    await until(lambda: p.ad("slot1_1@exec0001").eval("Activity") == "Busy")
    assert p.ad("slot1_1@exec0001").eval("JobId") == "12.0"

    await p.clock.advance(58)
    await asyncio.sleep(0.05)
    assert p.schedd.requests == []
    await p.clock.advance(1)
    await until(lambda: p.schedd.requests)
    (exit_,) = p.schedd.requests[0].exits
    assert (exit_.cluster_id, exit_.proc_id, exit_.start_time, exit_.end_time) == (12, 0, 1, 61)
    assert (exit_.claim_id, exit_.slot_name, exit_.schedd_name) == (
        held,
        "slot1_1@exec0001",
        "schedd0",
    )
    assert exit_.exit_code == 0
    assert p.ad("slot1_1@exec0001").eval("Activity") == "Busy"
    await send_update(p)
    await until(lambda: p.ad("slot1_1@exec0001").eval("Activity") == "Idle")
    assert p.ad("slot1_1@exec0001").eval("TotalTimeClaimedBusy") == 60

    rel = await p.stub.ReleaseClaims(pb.ReleaseClaimsRequest(request_id="x1", claim_ids=[held]))
    assert rel.results[0].ok and rel.results[0].slot_name == "slot1_1@exec0001"
    await send_update(p)
    await until(lambda: p.ad("slot1_1@exec0001") is None)
    assert p.ad("slot1_1@exec0001", "MachinePrivate") is None
    assert p.ad("slot1@exec0001").eval("Cpus") == 4

    events = p.svc.ctx.events.drain()
    kinds = [(e["kind"], e.get("slot")) for e in events]
    assert kinds == [
        ("claim", "slot1_1@exec0001"),
        ("activate", "slot1_1@exec0001"),
        ("job_exit", "slot1_1@exec0001"),
        ("release", "slot1_1@exec0001"),
    ]
    # the activation says when the job started and how many cpus it keeps busy (measures)
    activate = events[1]
    assert (activate["start"], activate["end"], activate["cpus"]) == (1, 61, 1)
    status = p.svc.status()
    assert status["machines"] == 2 and status["claims_held"] == 0 and status["job_exits"] == 1


async def test_batches_answer_item_by_item(pool: Pool) -> None:
    p = pool
    await until(lambda: p.ad("slot1@exec0002") is not None)
    good = offered(p, "slot1@exec0002")[0]
    reply = await p.stub.RequestClaims(
        pb.RequestClaimsRequest(
            request_id="r2",
            claims=[
                claim_request(p, "<1.2.3.4:5>#1#1#deadbeef", "slot1@exec0001", 1),
                claim_request(p, good, "slot1@exec0099", 2),
                claim_request(p, good, "slot1@exec0002", 3),
            ],
        )
    )
    ok = [(r.ok, r.error) for r in reply.results]
    assert ok[0][0] is False and "was not issued by exec0001" in ok[0][1]
    assert "#deadbeef" not in ok[0][1]  # claim ids are never echoed in full in messages
    assert ok[1][0] is False and "no slot 'slot1@exec0099'" in ok[1][1]
    assert ok[2] == (True, "")
    # a retried request (same id) gets the same answer and claims nothing more
    again = await p.stub.RequestClaims(
        pb.RequestClaimsRequest(
            request_id="r2", claims=[claim_request(p, good, "slot1@exec0002", 3)]
        )
    )
    assert again == reply
    assert p.svc.status()["claims_held"] == 1

    held = reply.results[2].claim_id
    act = await p.stub.ActivateClaims(
        pb.ActivateClaimsRequest(
            activations=[
                pb.Activation(claim_id="nope", job=job_pb(3)),
                pb.Activation(claim_id=held, job=job_pb(3)),
            ]
        )
    )
    assert [r.ok for r in act.results] == [False, True]
    assert "not held at this startd" in act.results[0].error
    ka = await p.stub.KeepAlive(
        pb.KeepAliveRequest(schedd_name="schedd0", claim_ids=[held, "gone"])
    )
    assert list(ka.unknown_claim_ids) == ["gone"]
    rel = await p.stub.ReleaseClaims(pb.ReleaseClaimsRequest(claim_ids=["gone", held]))
    assert [r.ok for r in rel.results] == [False, True]
    # the killed job never exits
    await p.clock.advance(100)
    await asyncio.sleep(0.05)
    assert p.schedd.requests == []


async def test_a_batch_taking_turns_answers_a_concurrent_retry_with_its_reply(
    pool: Pool,
) -> None:
    p = pool
    await until(lambda: p.ad("slot1@exec0002") is not None)
    good = offered(p, "slot1@exec0002")[0]
    # more claims than a turn holds: the handler yields to the loop in between
    bad = [
        claim_request(p, f"<1.2.3.4:5>#1#{k}#deadbeef", "slot1@exec0001", k)
        for k in range(2 * turns.ADS_PER_TURN)
    ]
    request = pb.RequestClaimsRequest(
        request_id="big", claims=[*bad, claim_request(p, good, "slot1@exec0002", 999)]
    )
    first, retry = await asyncio.gather(
        p.stub.RequestClaims(request), p.stub.RequestClaims(request)
    )
    assert retry == first
    assert [r.ok for r in first.results] == [False] * len(bad) + [True]
    assert [r.claim_id for r in first.results[:3]] == [c.claim_id for c in bad[:3]]
    assert p.svc.status()["claims_held"] == 1


async def test_exits_are_retried_with_the_same_request_id(pool: Pool) -> None:
    p = pool
    await until(lambda: p.ad("slot1@exec0001") is not None)
    p.schedd.fail_next = 1
    ids = offered(p)[:2]
    reply = await p.stub.RequestClaims(
        pb.RequestClaimsRequest(
            claims=[
                claim_request(p, ids[0], "slot1@exec0001", 1),
                claim_request(p, ids[1], "slot1@exec0001", 2),
            ]
        )
    )
    held = [r.claim_id for r in reply.results]
    await p.stub.ActivateClaims(
        pb.ActivateClaimsRequest(
            activations=[
                pb.Activation(claim_id=c, job=job_pb(i + 1, duration=30))
                for i, c in enumerate(held)
            ]
        )
    )
    await p.clock.advance(30)
    await until(lambda: len(p.schedd.requests) == 1)
    # the failure is counted when the refused call returns, a moment after it arrived
    await until(lambda: p.svc.status()["exit_report_failures"] == 1)
    # the core asks the collector where the schedd is first, then waits: its retry is
    # due RETRY_INTERVAL after that answer; the slots' update comes before it (the one
    # loop sleeps until the earlier of the two)
    retry = p.clock.now() + RETRY_INTERVAL
    await until(lambda: p.svc.core.reports.next_retry() == retry)
    await until(lambda: p.clock.wakeups()[:1] == [p.svc.core.next_wakeup()])
    await p.clock.advance_to(retry)
    await until(lambda: len(p.schedd.requests) == 2)
    first, second = p.schedd.requests
    assert first.request_id == second.request_id
    assert sorted(e.cluster_id for e in second.exits) == [1, 2]  # one batch per schedd
    await until(lambda: p.svc.status()["exits_reported"] == 2)


async def test_earlier_activation_rearms_the_exit_timer(pool: Pool) -> None:
    p = pool
    await until(lambda: p.ad("slot1@exec0001") is not None)
    ids = offered(p)
    long_ = (
        (
            await p.stub.RequestClaims(
                pb.RequestClaimsRequest(claims=[claim_request(p, ids[0], "slot1@exec0001", 1)])
            )
        )
        .results[0]
        .claim_id
    )
    await p.stub.ActivateClaims(
        pb.ActivateClaimsRequest(
            activations=[pb.Activation(claim_id=long_, job=job_pb(1, duration=500))]
        )
    )
    await asyncio.sleep(0.02)  # the exit loop now sleeps until 500
    short = (
        (
            await p.stub.RequestClaims(
                pb.RequestClaimsRequest(claims=[claim_request(p, ids[1], "slot1@exec0001", 2)])
            )
        )
        .results[0]
        .claim_id
    )
    await p.stub.ActivateClaims(
        pb.ActivateClaimsRequest(
            activations=[pb.Activation(claim_id=short, job=job_pb(2, duration=20))]
        )
    )
    await asyncio.sleep(0.02)
    await p.clock.advance(20)
    await until(lambda: p.schedd.requests)
    assert [e.cluster_id for e in p.schedd.requests[0].exits] == [2]


async def test_periodic_advertise_every_update_interval(pool: Pool) -> None:
    p = pool
    await until(lambda: len(p.collector.calls) == 1)
    await p.clock.advance(299)
    await asyncio.sleep(0.05)
    assert len(p.collector.calls) == 1
    await p.clock.advance(1)
    await until(lambda: len(p.collector.calls) == 2)
    assert p.ad("slot1@exec0001").eval("TotalTimeUnclaimedIdle") == 300


async def test_only_the_schedd_holding_a_claim_may_use_it(pool: Pool) -> None:
    p = pool
    await until(lambda: p.ad("slot1@exec0001") is not None)
    other = startd_pb2_grpc.StartdStub(p.channel(Role.DAEMON, "schedd/schedd9"))
    startd = startd_pb2_grpc.StartdStub(p.channel(Role.DAEMON, "startd/startd1_0"))
    cid = offered(p)[0]
    # a schedd may not claim in another schedd's name (the request says schedd0)
    for stub in (other, startd):
        reply = await stub.RequestClaims(
            pb.RequestClaimsRequest(claims=[claim_request(p, cid, "slot1@exec0001", 12)])
        )
        assert not reply.results[0].ok
        assert "may not request claims for schedd 'schedd0'" in reply.results[0].error
    reply = await p.stub.RequestClaims(
        pb.RequestClaimsRequest(claims=[claim_request(p, cid, "slot1@exec0001", 12)])
    )
    held = reply.results[0].claim_id
    assert reply.results[0].ok, reply.results[0].error
    # a claim id in the wrong hands is no use: not activated, not released, no lease kept
    for stub in (other, startd):
        act = await stub.ActivateClaims(
            pb.ActivateClaimsRequest(activations=[pb.Activation(claim_id=held, job=job_pb(12))])
        )
        assert not act.results[0].ok
        assert "is held by schedd 'schedd0'" in act.results[0].error
        rel = await stub.ReleaseClaims(pb.ReleaseClaimsRequest(claim_ids=[held]))
        assert not rel.results[0].ok and "is held by schedd 'schedd0'" in rel.results[0].error
        ka = await stub.KeepAlive(pb.KeepAliveRequest(schedd_name="schedd0", claim_ids=[held]))
        assert list(ka.unknown_claim_ids) == [held]
    assert p.svc.status()["claims_held"] == 1
    # a retried request id sent by another caller is not answered from the holder's reply
    await p.stub.KeepAlive(pb.KeepAliveRequest(schedd_name="schedd0", claim_ids=[held]))
    rel = await p.stub.ReleaseClaims(pb.ReleaseClaimsRequest(request_id="r9", claim_ids=[held]))
    assert rel.results[0].ok, rel.results[0].error
    again = await other.ReleaseClaims(pb.ReleaseClaimsRequest(request_id="r9", claim_ids=[held]))
    assert not again.results[0].ok
    assert p.svc.status()["claims_held"] == 0


@pytest.mark.parametrize("role", [None, Role.READ, Role.SUBMIT])
async def test_callers_without_a_daemon_or_admin_token_are_refused(
    pool: Pool, role: Role | None
) -> None:
    stub = startd_pb2_grpc.StartdStub(pool.channel(role))
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.KeepAlive(pb.KeepAliveRequest(claim_ids=["x"]))
    want = grpc.StatusCode.UNAUTHENTICATED if role is None else grpc.StatusCode.PERMISSION_DENIED
    assert err.value.code() == want


async def test_admin_token_is_accepted(pool: Pool) -> None:
    stub = startd_pb2_grpc.StartdStub(pool.channel(Role.ADMIN))
    reply = await stub.KeepAlive(pb.KeepAliveRequest(claim_ids=["x"]))
    assert list(reply.unknown_claim_ids) == ["x"]


def test_duplicate_machine_names_and_bad_config_fail_at_construction(tmp_path: Path) -> None:
    clock = ManualClock()
    ctx = DaemonContext(clock, parse_config(""), auth.make_secret(), "", EventLog(clock), tmp_path)
    from mockpool.config import ConfigError

    with pytest.raises(ConfigError, match="used twice"):
        StartdService(ctx, [("a", parse_config("")), ("a", parse_config(""))])
    with pytest.raises(ConfigError, match="NUM_CPUS"):
        StartdService(ctx, [("a", parse_config("NUM_CPUS = 0\n"))])
    bad = parse_config("CONSUMPTION_POLICY = True\nCONSUMPTION_DISK = false\n", "m.conf")
    with pytest.raises(
        ConfigError, match=r"m\.conf:2: CONSUMPTION_DISK = 'false': evaluates to False"
    ):
        StartdService(ctx, [("a", bad)])


async def test_wire_ads_equal_the_core_ads_including_cached_rounds(pool: Pool) -> None:
    p = pool
    await until(lambda: p.ad("slot1@exec0001") is not None)
    m = p.svc.machines["exec0001"]
    ids = offered(p)
    claimed = await p.stub.RequestClaims(
        pb.RequestClaimsRequest(claims=[claim_request(p, ids[0], "slot1@exec0001", 5)])
    )
    assert claimed.results[0].ok
    heads: list[dict[str, bytes]] = []
    for now in (10.0, 25.0):  # the second round reuses the cached wire form
        updates, _ = p.svc.build_updates([m], now)
        decoded = [collector_pb2.AdUpdate.FromString(u) for u in updates]
        # each slot ad marks its part before the clocks, the same bytes in both rounds
        heads.append(
            {
                str(ad_from_pb(u.ad).eval("Name")): u.ad.SerializeToString()[: u.stable_prefix]
                for u in decoded
                if u.ad_type == "Machine"
            }
        )
        assert all(0 < u.stable_prefix < u.ad.ByteSize() for u in decoded if u.ad_type == "Machine")
        seq = m.next_sequence() - 1
        want_pub = {s.name: public_ad(s, m.info, now, seq) for s in m.ordered_slots()}
        want_priv = {s.name: private_ad(s, m.info) for s in m.ordered_slots()}
        got = {(u.ad_type, ad_from_pb(u.ad).eval("Name")): ad_from_pb(u.ad) for u in decoded}
        assert {n: got["Machine", n] for n in want_pub} == want_pub
        assert {n: got["MachinePrivate", n] for n in want_priv} == want_priv
        assert got["Machine", "slot1_1@exec0001"].eval("TotalTimeClaimedIdle") == int(now)
    assert heads[0] == heads[1]


def test_a_pslot_without_children_advertises_empty_child_lists(tmp_path: Path) -> None:
    """HTCondor's startd rolls its dynamic slots' attributes up into the p-slot's ad as
    lists, an empty one while it has none (Resource::rollupAttrs writes "{}"): on the
    wire too an empty list, not an unset value read back as UNDEFINED."""
    clock = ManualClock()
    ctx = DaemonContext(clock, parse_config(""), auth.make_secret(), "", EventLog(clock), tmp_path)
    cfg = parse_config("NUM_CPUS = 4\nSLOT_TYPE_1_PARTITIONABLE = True\n", "m.conf")
    ctx.address = "127.0.0.1:9618"  # the machines' claim ids name it
    svc = StartdService(ctx, [("exec1", cfg)])
    svc._build_machines()
    updates, _ = svc.build_updates([svc.machines["exec1"]], 0.0)
    [pslot] = [
        ad_from_pb(u.ad)
        for u in map(collector_pb2.AdUpdate.FromString, updates)
        if u.ad_type == "Machine"
    ]
    assert pslot.eval("PartitionableSlot") is True
    assert pslot.eval("ChildCpus") == [] and pslot.eval("ChildMemory") == []


def _records(
    svc: StartdService, builder: RecordAds, machines: list, now: float, *, only_changed: bool
) -> list:
    """What ``svc.build_updates`` serialises, as the collector's own records."""
    gone = svc.core.ads.invalidated(machines, svc.core.machines)
    return builder.build(machines, now, gone, only_changed=only_changed)


def test_records_handed_over_in_process_are_the_ads_the_wire_carries(tmp_path: Path) -> None:
    """A startd core in the kernel hands its collector the collector's records
    (``RecordAds``): the same ads, attribute for attribute, as the bytes the live shell
    sends decode to, each the collector's own (storing one changes nothing the startd
    holds)."""
    from mockpool.collector.collector import Collector

    clock = ManualClock()
    ctx = DaemonContext(clock, parse_config(""), auth.make_secret(), "", EventLog(clock), tmp_path)
    ctx.address = "127.0.0.1:9618"
    cfg = parse_config("NUM_CPUS = 4\nSLOT_TYPE_1_PARTITIONABLE = True\n", "m.conf")
    svc = StartdService(ctx, [("exec1", cfg)])
    svc._build_machines()
    m = svc.machines["exec1"]
    m.next_sequence = lambda: 7  # both rounds build the same sequence number
    updates, _ = svc.build_updates([m], 30.0)
    sent = {
        (u.ad_type, ad_from_pb(u.ad).eval("Name")): ad_from_pb(u.ad)
        for u in map(collector_pb2.AdUpdate.FromString, updates)
    }
    builder = RecordAds(ctx.ad_epoch)
    records = _records(svc, builder, [m], 30.0, only_changed=False)
    assert {(r.ad_type, r.ad.eval("Name")): r.ad for r in records} == sent
    collector = Collector(parse_config(""))
    assert collector.advertise(records, 31.0) == (len(records), [])
    [slot] = m.ordered_slots()
    assert current_ad(slot, m.info, 30.0, 7).lookup("LastHeardFrom") is None
    stored = collector.store.get("Machine", slot.name)
    assert stored is not None and stored.known_wire(None) is None  # encoded when asked
    assert ad_from_bytes(stored.wire()) == stored.ad
    # unchanged since: nothing to hand over but the changed slots
    assert _records(svc, builder, [m], 40.0, only_changed=True) == []


def test_records_handed_over_share_the_bindings_of_equal_clocks(tmp_path: Path) -> None:
    """The slot ads of one update share one binding of each clock value they have in
    common (MyCurrentTime, UpdateSequenceNumber): the collector and the negotiator see
    one object, not one per slot."""
    clock = ManualClock()
    ctx = DaemonContext(clock, parse_config(""), auth.make_secret(), "", EventLog(clock), tmp_path)
    ctx.address = "127.0.0.1:9618"
    svc = StartdService(
        ctx,
        [("exec1", parse_config("NUM_CPUS = 3\nSLOT_TYPE_0_PARTITIONABLE = False\n", "m.conf"))],
    )
    svc._build_machines()
    m = svc.machines["exec1"]
    m.next_sequence = lambda: 7
    records = _records(svc, RecordAds(ctx.ad_epoch), [m], 30.0, only_changed=False)
    ads = [r.ad for r in records if r.ad_type == "Machine"]
    assert len(ads) == 3

    def binding(ad: ClassAd, name: str) -> tuple:
        return next(p for p in ad.pairs() if p[0] == name)

    for name, value in (("MyCurrentTime", 30), ("UpdateSequenceNumber", 7)):
        first = binding(ads[0], name)
        assert first[1].value == value
        assert all(binding(ad, name) is first for ad in ads[1:]), name


def test_advertise_requests_split_by_size() -> None:
    updates = [
        collector_pb2.AdUpdate(
            ad_type="Machine", ad=ad_to_pb(ClassAd(Name=f"slot{i}@x", Pad="x" * 100))
        )
        for i in range(10)
    ]
    raw = [u.SerializeToString() for u in updates]
    per = len(raw[0]) + 1 + 2  # tag byte, 2-byte length, the update
    assert all(len(r) == len(raw[0]) for r in raw) and 128 <= len(raw[0]) < 16384
    parts = list(_requests(raw, 3 * per + 1))
    assert [n for n, _ in parts] == [3, 3, 3, 1]
    got = [u for _, b in parts for u in collector_pb2.AdvertiseRequest.FromString(b).updates]
    assert got == updates
    assert next(_requests(raw, 10**6))[0] == 10


async def test_failed_advertise_is_retried(pool: Pool) -> None:
    p = pool
    await until(lambda: len(p.collector.calls) == 1)
    p.collector.fail_next = 1
    cid = offered(p)[0]
    await p.stub.RequestClaims(
        pb.RequestClaimsRequest(claims=[claim_request(p, cid, "slot1@exec0001", 1)])
    )
    await send_update(p)
    await until(lambda: p.svc.stats["advertise_failures"] == 1)
    assert p.ad("slot1_1@exec0001") is None
    await p.clock.advance(RETRY_INTERVAL)
    await until(lambda: p.ad("slot1_1@exec0001") is not None)
