"""The negotiator service over in-process gRPC with a fake collector and fake schedds."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import grpc.aio
import pytest
from builders.cycle import private, request, slot
from builders.waiting import until

from mockpool import auth, rpc
from mockpool.auth import Role
from mockpool.classad import ClassAd
from mockpool.clock import ManualClock
from mockpool.collector.columns import SlotColumns
from mockpool.config import parse_config
from mockpool.daemon import DaemonContext, EventLog
from mockpool.negotiator import parse_negotiator_log
from mockpool.negotiator import service as negotiator_service
from mockpool.negotiator.service import NegotiatorService
from mockpool.packedcolumns import INT, STRING, column_to_pb
from mockpool.v1 import (
    collector_pb2,
    collector_pb2_grpc,
    negotiator_pb2,
    negotiator_pb2_grpc,
    schedd_pb2,
    schedd_pb2_grpc,
)
from mockpool.wire import ad_from_pb, ads_to_pb

BASE = 1_700_000_000.0
DEAD = "127.0.0.1:1"  # nothing listens there: UNAVAILABLE


class FakeCollector(collector_pb2_grpc.CollectorServicer):
    def __init__(self) -> None:
        self.slots: list[ClassAd] = []
        self.private: list[ClassAd] = []
        self.ads: dict[tuple[str, str], ClassAd] = {}
        self.snapshot_requests: list[tuple[str, int]] = []
        self.columns_asked: list[list[str]] = []
        self.stale = ""
        self.bad_column: collector_pb2.SlotColumn | None = None  # sent for its name
        self.bad_slot = ""  # an attribute of this text in one more slot ad

    async def Snapshot(self, request, context):  # type: ignore[no-untyped-def]
        """Whole snapshots of epoch "e", seq 1; a delta naming a slot no one holds when
        ``stale`` is "asked" (a delta was asked for) or "always"."""
        self.snapshot_requests.append((request.since_epoch, request.since_seq))
        reply = collector_pb2.SnapshotReply(epoch="e", seq=1)
        if self.stale == "always" or (self.stale == "asked" and request.since_epoch):
            reply.delta = True
            reply.slot_order.append("slot9@nowhere")
            return reply
        ads_to_pb(self.slots, reply.slots)
        ads_to_pb(self.private, reply.private_ads)
        reply.slot_order.extend(a.eval("Name") for a in self.slots)
        if self.bad_slot:
            bad = reply.slots.add()
            bad.attributes.add(name="Name").literal.str = "slot9@exec0001"
            bad.attributes.add(name="Start", expression=self.bad_slot)
            reply.slot_order.append("slot9@exec0001")
        reply.private_order.extend(a.eval("Name") for a in self.private)
        self.columns_asked.append(list(request.columns))
        if request.columns:  # columns as a collector keeps them
            kept = SlotColumns()
            keys = [a.eval("Name").lower() for a in self.slots]
            for key, ad in zip(keys, self.slots, strict=True):
                kept.put(key, ad)
            for col in kept.pack(request.columns, kept.rows(keys)):
                bad = self.bad_column
                sent = bad if bad is not None and bad.name == col.name else column_to_pb(col)
                reply.columns.append(sent)
        return reply

    async def Query(self, request, context):  # type: ignore[no-untyped-def]
        reply = collector_pb2.QueryReply()
        ads_to_pb([ad for (t, _), ad in self.ads.items() if t == request.ad_type], reply.ads)
        return reply

    async def Advertise(self, request, context):  # type: ignore[no-untyped-def]
        for u in request.updates:
            ad = ad_from_pb(u.ad)
            self.ads[(u.ad_type, ad.eval("Name"))] = ad
        return collector_pb2.AdvertiseReply(accepted=len(request.updates))


class FakeSchedd(schedd_pb2_grpc.ScheddServicer):
    def __init__(self) -> None:
        self.requests: dict[str, list[ClassAd]] = {}
        self.matches: list[schedd_pb2.MatchesRequest] = []
        self.refuse_bare = False  # refuse the messages that carry matches only

    async def GetResourceRequests(self, request, context):  # type: ignore[no-untyped-def]
        reply = schedd_pb2.ResourceRequestsReply()
        ads_to_pb(self.requests.get(request.schedd_name, []), reply.requests)
        return reply

    async def Matches(self, request, context):  # type: ignore[no-untyped-def]
        if self.refuse_bare and not request.rejections:
            await context.abort(grpc.StatusCode.UNAVAILABLE, "schedd overloaded")
        self.matches.append(request)
        return schedd_pb2.MatchesReply(received=len(request.matches))


def submitter_ad(name: str, schedd: str, address: str, idle: int) -> ClassAd:
    return ClassAd(
        MyType="Submitter",
        Name=name,
        ScheddName=schedd,
        ScheddIpAddr=f"<{address}>",
        MyAddress=f"<{address}>",
        IdleJobs=idle,
    )


@dataclass
class Pool:
    clock: ManualClock
    svc: NegotiatorService
    collector: FakeCollector
    schedd: FakeSchedd
    peer: str
    address: str
    secret: str
    events: EventLog
    channels: list[grpc.aio.Channel] = field(default_factory=list)

    def stub(self, role: Role) -> negotiator_pb2_grpc.NegotiatorStub:
        ch = rpc.make_channel(
            self.address, auth.make_token(self.secret, role, "alice" if role is Role.SUBMIT else "")
        )
        self.channels.append(ch)
        return negotiator_pb2_grpc.NegotiatorStub(ch)


def alice_queues_five(p: Pool) -> None:
    """alice's submitter ad at the fake schedd, and her autocluster of five jobs."""
    p.collector.ads[("Submitter", "alice@mockpool")] = submitter_ad(
        "alice@mockpool", "schedd1", p.peer, 5
    )
    p.schedd.requests["schedd1"] = [request(1, 5).ad]


async def log_until(p: Pool, text: str) -> list[str]:
    """The NegotiatorLog lines written until one holds ``text``."""
    lines: list[str] = []

    def said() -> bool:
        lines.extend(p.svc.drain_log())
        return any(text in x for x in lines)

    await until(said, timeout=20)
    return lines


@pytest.fixture
async def pool(tmp_path: Path) -> AsyncIterator[Pool]:
    secret = auth.make_secret()
    clock = ManualClock(0.0)
    collector, schedd = FakeCollector(), FakeSchedd()

    def add_peers(server: grpc.aio.Server) -> None:
        collector_pb2_grpc.add_CollectorServicer_to_server(collector, server)
        schedd_pb2_grpc.add_ScheddServicer_to_server(schedd, server)

    peer_server, peer = await rpc.start_server(
        [add_peers], interceptors=[auth.TokenAuthInterceptor(secret)]
    )
    collector.slots = [slot(f"slot{i}@exec0001") for i in (1, 2, 3)]
    collector.private = [private(s.eval("Name")) for s in collector.slots]
    events = EventLog(clock)
    ctx = DaemonContext(
        clock=clock,
        config=parse_config("", "pool.conf"),
        secret=secret,
        collector_address=peer,
        events=events,
        state_dir=tmp_path,
    )
    svc = NegotiatorService(ctx, log_base_wall=BASE)
    server, addr = await rpc.start_server(
        [svc.add_to_server],
        interceptors=[auth.TokenAuthInterceptor(secret, method_roles=svc.METHOD_ROLES)],
    )
    ctx.address = addr
    p = Pool(clock, svc, collector, schedd, peer, addr, secret, events)
    try:
        yield p
    finally:
        await svc.stop()
        await ctx.close_channels()
        for c in p.channels:
            await c.close()
        await rpc.stop_server(server, 0)
        await rpc.stop_server(peer_server, 0)


async def test_cycle_at_start_matches_and_advertises(pool: Pool):
    p = pool
    alice_queues_five(p)
    await p.svc.start()
    await until(lambda: p.svc.cycles == 1)
    # one Matches message for the schedd, with the three slots and their claim ids
    (msg,) = p.schedd.matches
    assert msg.schedd_name == "schedd1" and msg.cycle == 1
    assert sorted(m.slot_name for m in msg.matches) == [
        "slot1@exec0001",
        "slot2@exec0001",
        "slot3@exec0001",
    ]
    assert all(m.claim_id.endswith(m.slot_name) for m in msg.matches)  # fake ids end in the name
    assert msg.matches[0].startd_address == "10.0.0.1:9618"
    assert ad_from_pb(msg.matches[0].slot).eval("Name") == msg.matches[0].slot_name
    # the Negotiator ad carries the cycle's stats
    await until(lambda: ("Negotiator", "negotiator") in p.collector.ads)
    ad = p.collector.ads[("Negotiator", "negotiator")]
    assert ad.eval("MyAddress") == f"<{p.address}>"
    assert ad.eval("LastNegotiationCycleMatches0") == 3
    assert ad.eval("LastNegotiationCycleRejections0") == 1
    assert ad.eval("LastNegotiationCycleNumSchedulers0") == 1
    # NegotiatorLog and events
    lines = p.svc.drain_log()
    (cycle,) = parse_negotiator_log("\n".join(lines))
    assert cycle.start == BASE and len(cycle.matches) == 3
    assert p.svc.drain_log() == []
    events = p.events.drain()
    kinds = [e["kind"] for e in events]
    assert kinds.count("match") == 3 and kinds.count("cycle") == 1
    (cycle_event,) = [e for e in events if e["kind"] == "cycle"]
    assert cycle_event["matches"] == 3 and "quotas" not in cycle_event  # no groups, no quotas
    st = p.svc.status()
    assert st["cycles"] == 1 and st["matches"] == 3 and st["next_cycle"] == 60.0


@pytest.mark.parametrize("refuse", [False, True])
async def test_matches_go_in_messages_of_a_size_and_a_failure_fails_theirs(
    pool: Pool, monkeypatch: pytest.MonkeyPatch, refuse: bool
) -> None:
    p = pool
    monkeypatch.setattr(negotiator_service, "MATCHES_MESSAGE_BYTES", 1)  # a match a message
    p.schedd.refuse_bare = refuse  # only the first message, with the rejection, is taken
    alice_queues_five(p)
    await p.svc.start()
    await until(lambda: p.svc.cycles == 1)
    taken = 1 if refuse else 3
    got = p.schedd.matches
    assert [len(m.matches) for m in got] == [1] * taken
    assert sum(len(m.rejections) for m in got) == 1
    assert len({m.request_id for m in got}) == len(got)  # each message is its own request
    kinds = [e["kind"] for e in p.events.drain()]
    assert kinds.count("match") == taken and kinds.count("reject") == 1
    log = "\n".join(p.svc.drain_log())
    (cycle,) = parse_negotiator_log(log)
    assert len(cycle.matches) == 3  # the cycle made them all
    if refuse:
        assert "Failed to send 2 matches to schedd1" in log
        assert p.svc.core.peer_failures == 1


async def test_reschedule_roles_and_cadence(pool: Pool):
    p = pool
    await p.svc.start()
    # the loop is asleep until the next cycle (t = 0 + max(20, 60 - 0)) once it finished
    await until(lambda: p.clock.next_wakeup() == 60.0)
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await p.stub(Role.READ).Reschedule(negotiator_pb2.RescheduleRequest(schedd_name="schedd1"))
    assert info.value.code() == grpc.StatusCode.PERMISSION_DENIED
    await p.clock.advance(1.0)
    reply = await p.stub(Role.SUBMIT).Reschedule(
        negotiator_pb2.RescheduleRequest(schedd_name="schedd1")
    )
    assert reply.next_cycle == 20.0  # due now, but CYCLE_DELAY after the last end (t=0)
    await p.clock.advance(18.0)
    await asyncio.sleep(0.05)
    assert p.svc.cycles == 1
    await p.clock.advance(1.0)  # t = 20
    await until(lambda: p.clock.next_wakeup() == 80.0)
    assert p.svc.cycles == 2 and p.svc.status()["next_cycle"] == 80.0
    await p.clock.advance(60.0)
    await until(lambda: p.svc.cycles == 3)


async def test_the_cycle_event_carries_the_groups_quotas(pool: Pool, tmp_path: Path):
    # the targets a run's usage is measured against (services/pool/measures.py)
    p = pool
    config = parse_config(
        "GROUP_NAMES = group_a, group_b\nGROUP_QUOTA_group_a = 2\n"
        "GROUP_QUOTA_DYNAMIC_group_b = 0.25",
        "pool.conf",
    )
    ctx = DaemonContext(
        clock=p.clock,
        config=config,
        secret=p.secret,
        collector_address=p.peer,
        events=p.events,
        state_dir=tmp_path / "groups",
    )
    svc = NegotiatorService(ctx, name="grouped")
    p.collector.ads[("Submitter", "group_a.alice@mockpool")] = submitter_ad(
        "group_a.alice@mockpool", "schedd1", p.peer, 1
    )
    p.schedd.requests["schedd1"] = [request(1, 1, submitter="group_a.alice@mockpool").ad]
    try:
        await svc.start()
        await until(lambda: svc.cycles == 1)
    finally:
        await svc.stop()
        await ctx.close_channels()
    (cycle,) = [e for e in p.events.drain() if e["kind"] == "cycle"]
    # 3 slots: group_a its static 2; group_b a quarter of what static quotas leave (1)
    assert cycle["quotas"] == {"group_a": 2.0, "group_b": 0.25}


async def test_failing_schedd_is_skipped_for_the_cycle(pool: Pool):
    p = pool
    p.collector.ads[("Submitter", "alice@mockpool")] = submitter_ad(
        "alice@mockpool", "schedd1", p.peer, 1
    )
    p.collector.ads[("Submitter", "bob@mockpool")] = submitter_ad(
        "bob@mockpool", "schedd2", DEAD, 4
    )
    p.schedd.requests["schedd1"] = [request(1, 1).ad]
    await p.svc.start()
    await until(lambda: p.svc.cycles == 1, timeout=20)
    # equal PRE_JOB_RANK; POST_JOB_RANK (... - SlotID) picks slot1
    assert [m.slot_name for msg in p.schedd.matches for m in msg.matches] == ["slot1@exec0001"]
    text = "\n".join(p.svc.drain_log())
    assert f"    Failed to connect to schedd2 <{DEAD}>" in text
    stats = p.svc.history.latest
    assert stats is not None and stats.submitters_failed == {"bob@mockpool"}
    assert p.svc.status()["peer_failures"] >= 1


async def test_collector_down_aborts_the_cycle_and_keeps_running(pool: Pool):
    p = pool
    p.svc.ctx.collector_address = DEAD
    await p.svc.start()
    # each look drains what was written since the last one
    await until(
        lambda: any("Aborting negotiation cycle" in x for x in p.svc.drain_log()), timeout=20
    )
    assert p.svc.cycles == 0
    # HTCondor returns before re-arming: the timer stays on its period, start + INTERVAL
    assert p.svc.status()["next_cycle"] == 60.0


async def test_a_cycle_asks_for_the_columns_the_last_read_and_matches_alike(pool: Pool):
    p = pool
    alice_queues_five(p)
    await p.svc.start()
    await until(lambda: p.svc.cycles == 1 and p.clock.next_wakeup() == 60.0)
    await p.clock.advance(60)
    await until(lambda: p.svc.cycles == 2)
    first, second = p.collector.columns_asked
    assert first == [] and {"cpus", "memory", "start"} <= set(second)
    by_cycle = [sorted((m.slot_name, m.claim_id) for m in msg.matches) for msg in p.schedd.matches]
    assert len(by_cycle) == 2 and by_cycle[0] == by_cycle[1] and len(by_cycle[1]) == 3
    assert p.svc.status()["last"]["snapshot_columns"] == len(second)


@pytest.mark.parametrize(
    ("column", "says"),
    [
        # Cpus said to be an integer on every slot, but one slot's value is a string
        (
            collector_pb2.SlotColumn(
                name="cpus", kinds=bytes([INT, INT, INT]), ints=bytes(16), strings=["one"]
            ),
            "snapshot column 'cpus', slot 'slot3@exec0001': a INT row without its integer",
        ),
        (
            collector_pb2.SlotColumn(
                name="cpus", kinds=bytes([INT, STRING, INT]), ints=bytes(16), string_rows=bytes(4)
            ),
            "snapshot column 'cpus', slot 'slot2@exec0001': string 0 of a table of 0",
        ),
    ],
)
async def test_a_snapshot_column_of_the_wrong_type_is_named_and_read_from_the_ads(
    pool: Pool, column: collector_pb2.SlotColumn, says: str
):
    p = pool
    alice_queues_five(p)
    p.collector.bad_column = column
    await p.svc.start()
    await until(lambda: p.svc.cycles == 1 and p.clock.next_wakeup() == 60.0)
    await p.clock.advance(60)
    await until(lambda: p.svc.cycles == 2)
    lines = p.svc.drain_log()
    (why,) = [x for x in lines if says in x]
    assert "Ignoring snapshot column" in why
    # the cycle read Cpus from the ads, and every other column as sent: the same matches
    by_cycle = [sorted(m.slot_name for m in msg.matches) for msg in p.schedd.matches]
    assert len(by_cycle) == 2 and by_cycle[0] == by_cycle[1] and len(by_cycle[1]) == 3
    asked = p.collector.columns_asked[1]
    assert "cpus" in asked
    assert p.svc.status()["last"]["snapshot_columns"] == len(asked) - 1


async def test_a_malformed_slot_ad_in_a_snapshot_aborts_the_cycle_naming_it(pool: Pool):
    p = pool
    alice_queues_five(p)
    p.collector.bad_slot = "TARGET.RequestCpus <="
    await p.svc.start()
    lines = await log_until(p, "Aborting negotiation cycle")
    assert "attribute Start" in "".join(lines) and p.svc.cycles == 0
    assert p.schedd.matches == []


async def test_a_snapshot_delta_that_does_not_fit_is_asked_for_again_whole(pool: Pool):
    p = pool
    alice_queues_five(p)
    p.collector.stale = "asked"
    await p.svc.start()
    await until(lambda: p.svc.cycles == 1 and p.clock.next_wakeup() == 60.0)
    await p.clock.advance(60)
    await until(lambda: p.svc.cycles == 2)
    # the first held the slots; the second asked since it, got a delta naming a slot it
    # does not hold, and asked again for every ad
    assert p.collector.snapshot_requests == [("", 0), ("e", 1), ("", 0)]
    assert p.svc.status()["last"]["total_slots"] == 3


async def test_a_collector_that_sends_deltas_unasked_aborts_the_cycle(pool: Pool):
    p = pool
    p.collector.stale = "always"
    await p.svc.start()
    lines = await log_until(p, "slot9@nowhere")
    (why,) = [x for x in lines if "slot9@nowhere" in x]
    assert "Aborting negotiation cycle" in "".join(lines) and "does not fit" in why
    assert p.svc.cycles == 0 and p.collector.snapshot_requests == [("", 0), ("", 0)]


async def test_userprio_reads_for_anyone_changes_for_admin_and_persists(pool: Pool, tmp_path: Path):
    p = pool
    p.collector.ads[("Submitter", "alice@mockpool")] = submitter_ad(
        "alice@mockpool", "schedd1", p.peer, 2
    )
    p.schedd.requests["schedd1"] = [request(1, 2).ad]
    await p.svc.start()
    await until(lambda: p.svc.cycles == 1)
    # the cycle sent Accounting ads for the submitter and the root group
    await until(lambda: ("Accounting", "alice@mockpool") in p.collector.ads)
    ad = p.collector.ads[("Accounting", "alice@mockpool")]
    assert ad.eval("MyType") == "Accounting" and ad.eval("IsAccountingGroup") is False
    assert ad.eval("WeightedResourcesUsed") == 2.0 and ad.eval("PriorityFactor") == 1000.0
    assert ad.eval("AccountingGroup") == "<none>"
    assert p.collector.ads[("Accounting", "<none>")].eval("IsAccountingGroup") is True
    reply = await p.stub(Role.READ).UserPrio(negotiator_pb2.UserPrioRequest())
    names = {ad_from_pb(a).eval("Name") for a in reply.ads}
    assert names == {"alice@mockpool", "<none>"}
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await p.stub(Role.SUBMIT).UserPrio(
            negotiator_pb2.UserPrioRequest(action="setfactor", name="alice@mockpool", value=5)
        )
    assert info.value.code() == grpc.StatusCode.PERMISSION_DENIED
    admin = p.stub(Role.ADMIN)
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await admin.UserPrio(
            negotiator_pb2.UserPrioRequest(action="setfactor", name="alice@mockpool", value=0.5)
        )
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT and ">= 1" in (
        info.value.details() or ""
    )
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await admin.UserPrio(
            negotiator_pb2.UserPrioRequest(action="setprio", name="alice", value=3)
        )
    assert "user@domain" in (info.value.details() or "")
    await admin.UserPrio(
        negotiator_pb2.UserPrioRequest(action="setfactor", name="alice@mockpool", value=5)
    )
    await admin.UserPrio(
        negotiator_pb2.UserPrioRequest(action="setprio", name="bob@mockpool", value=7)
    )
    assert p.svc.accountant.factor("alice@mockpool") == 5.0
    # A negotiator restarted on the same state folder keeps the accountant.
    again = NegotiatorService(p.svc.ctx, name="again")
    assert again.accountant.factor("alice@mockpool") == 5.0
    assert again.accountant.rup("bob@mockpool") == 7.0
    assert again.accountant.resources_used("alice@mockpool") == 2.0
    await admin.UserPrio(negotiator_pb2.UserPrioRequest(action="delete", name="bob@mockpool"))
    assert "bob@mockpool" not in NegotiatorService(p.svc.ctx, name="third").accountant.records


async def test_spec_priorities_seed_a_negotiator_without_state(tmp_path: Path):
    clock = ManualClock(0.0)
    ctx = DaemonContext(
        clock=clock,
        config=parse_config("", "pool.conf"),
        secret=auth.make_secret(),
        collector_address=DEAD,
        events=EventLog(clock),
        state_dir=tmp_path,
    )
    svc = NegotiatorService(ctx, priorities={"alice@mockpool": {"factor": 500.0, "priority": 10.0}})
    assert svc.accountant.eup("alice@mockpool") == 5000.0
    (tmp_path / "accountant.json").write_text("{not json")
    svc = NegotiatorService(ctx, priorities={})  # a damaged file is set aside, not fatal
    assert svc.accountant.records == {} and (tmp_path / "accountant.json.bad").exists()
