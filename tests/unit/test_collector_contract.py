"""The collector's core through the daemon contract (``deliver``, ``tick``): the replies
each request gets, the refusals as ``Undeliverable`` with the code a live call ends with,
the counters, with numbers worked out by hand."""

from __future__ import annotations

from mockpool.auth import Principal, Role
from mockpool.classad import ClassAd
from mockpool.collector.collector import Collector, CollectorUpdate
from mockpool.config import parse_config
from mockpool.contract import Peer, Undeliverable
from mockpool.messages import (
    AdvertiseAck,
    CollectorAdvertise,
    CollectorQuery,
    CollectorSnapshotRequest,
    QueryReply,
    SnapshotReply,
)

STARTD = Peer("10.0.0.7:4001", Principal(Role.DAEMON, "startd/exec1"))
NEGOTIATOR = Peer("10.0.0.2:4002", Principal(Role.NEGOTIATOR, "negotiator"))


def started(text: str = "", epoch: int = 0) -> Collector:
    c = Collector(parse_config(text, "pool.conf"), ad_epoch=epoch)  # type: ignore[arg-type]
    c.start(0.0, "cm", "10.0.0.1:9618")
    return c


def slot(i: int, name: str, ad_type: str = "Machine", **attrs: object) -> CollectorUpdate:
    ad = ClassAd(Name=name, State="Unclaimed")
    ad.update(attrs)
    return CollectorUpdate(i, ad_type, ad)


def only_reply(ready, to: Peer):  # type: ignore[no-untyped-def]
    assert [s.address for s in ready.sends] == [to.address]
    return ready.sends[0].msg


def test_advertise_is_acked_to_its_sender_with_the_refusals_and_counted() -> None:
    c = started()
    bad = CollectorUpdate(1, "Machine", None, name="slot9@z", error="not a ClassAd message")
    msg = CollectorAdvertise("r1", [slot(0, "slot1@a"), bad])
    ack = only_reply(c.deliver(msg, STARTD, 5.0), STARTD)
    assert ack == AdvertiseAck("r1", 1, ["update 1 (Machine 'slot9@z'): not a ClassAd message"])
    gone = CollectorUpdate(0, "Machine", ClassAd(Name="slot1@a"), invalidate=True)
    ready = c.deliver(CollectorAdvertise("r2", [gone]), STARTD, 6.0)
    assert only_reply(ready, STARTD) == AdvertiseAck("r2", 1, [])
    # the events carry the collector's name (the daemon the event log files them under)
    assert ready.events == [("cm", "ad_invalidated", {"ad_type": "Machine", "name": "slot1@a"})]
    assert c.stats["advertise_calls"] == 2 and c.stats["updates_refused"] == 1


def test_private_ads_are_refused_to_a_daemon_and_read_by_the_negotiator() -> None:
    c = started()
    private = slot(1, "slot1@a", "MachinePrivate", Capability="<claim>")
    c.deliver(CollectorAdvertise("r", [slot(0, "slot1@a"), private]), STARTD, 1.0)
    ask = CollectorQuery("q1", "MachinePrivate")
    refused = only_reply(c.deliver(ask, STARTD, 2.0), STARTD)
    assert isinstance(refused, Undeliverable) and refused.msg is ask
    assert refused.code == "PERMISSION_DENIED" and "claim ids" in refused.detail
    reply = only_reply(c.deliver(ask, NEGOTIATOR, 2.0), NEGOTIATOR)
    assert isinstance(reply, QueryReply) and reply.corr == "q1"
    assert [a.eval("Capability") for a in reply.ads] == ["<claim>"]
    assert c.stats["queries"] == 2


def test_a_constraints_time_is_pool_time_plus_the_ad_epoch_and_projection_applies() -> None:
    # epoch 1,000,000 and pool time 50: time() is 1,000,050 in the constraint
    c = started(epoch=1_000_000)
    c.deliver(
        CollectorAdvertise("r", [slot(0, "a", Due=1_000_050), slot(1, "b", Due=7)]), STARTD, 1
    )
    q = CollectorQuery("q", "Machine", "Due == time()", ("Name",))
    reply = only_reply(c.deliver(q, STARTD, 50.0), STARTD)
    assert [sorted(a.keys()) for a in reply.ads] == [["MyType", "Name"]]
    assert reply.ads[0].eval("Name") == "a"


def test_a_query_without_a_type_or_with_a_bad_constraint_is_invalid() -> None:
    c = started()
    for ask in (CollectorQuery("q", "  "), CollectorQuery("q", "Machine", "Cpus >")):
        refused = only_reply(c.deliver(ask, STARTD, 1.0), STARTD)
        assert isinstance(refused, Undeliverable) and refused.code == "INVALID_ARGUMENT"
    assert (
        "needs an ad_type"
        in only_reply(c.deliver(CollectorQuery("q", ""), STARTD, 1), STARTD).detail
    )


def test_snapshots_count_their_deltas_and_slot_ads() -> None:
    c = started()
    ads = [slot(0, "s1@a"), slot(1, "s2@a")]
    c.deliver(CollectorAdvertise("r", ads), STARTD, 1.0)
    whole = only_reply(c.deliver(CollectorSnapshotRequest("n1"), NEGOTIATOR, 2.0), NEGOTIATOR)
    assert isinstance(whole, SnapshotReply) and whole.corr == "n1"
    snap = whole.snapshot
    assert not snap.delta and snap.slot_order == ["s1@a", "s2@a"]
    c.deliver(CollectorAdvertise("r", [slot(0, "s2@a", Cpus=4)]), STARTD, 3.0)
    since = (snap.epoch, snap.seq)
    later = only_reply(
        c.deliver(CollectorSnapshotRequest("n2", since), NEGOTIATOR, 4.0), NEGOTIATOR
    )
    assert later.snapshot.delta and later.snapshot.slot_rows == [1]  # only s2 changed
    # 2 snapshots, 1 a delta, 2 + 1 slot ads carried
    s = c.stats
    assert (s["snapshots"], s["snapshot_deltas"], s["snapshot_slot_ads"]) == (2, 1, 3)


def test_a_bad_snapshot_constraint_is_invalid() -> None:
    c = started()
    ask = CollectorSnapshotRequest("n", constraint="Cpus >")
    refused = only_reply(c.deliver(ask, NEGOTIATOR, 1.0), NEGOTIATOR)
    assert isinstance(refused, Undeliverable) and refused.code == "INVALID_ARGUMENT"


def test_tick_refreshes_the_own_ad_and_returns_the_expiries_as_events() -> None:
    # lifetime 900: an ad heard at 100 is dropped by the housekeeper at 1800 (1700 > 900)
    c = started()
    c.deliver(CollectorAdvertise("r", [slot(0, "slot1@a")]), STARTD, 100.0)
    assert c.next_wakeup() == 900.0
    first = c.tick(900.0)
    assert not first.sends and first.events == []
    assert c.store.get("Collector", "cm").ad.eval("UpdateSequenceNumber") == 2
    assert c.next_wakeup() == 1800.0
    later = c.tick(1800.0)
    assert later.events == [("cm", "ad_expired", {"ad_type": "Machine", "name": "slot1@a"})]
    assert not later.sends


def test_the_duty_cycle_is_read_when_the_own_ad_is_made() -> None:
    readings = iter([0.25, 0.5])
    c = Collector(parse_config("", "pool.conf"), duty_cycle=lambda: next(readings))  # type: ignore[arg-type]
    c.start(0.0, "cm", "")
    assert c.store.get("Collector", "cm").ad.eval("RecentDaemonCoreDutyCycle") == 0.25
    c.tick(900.0)
    assert c.store.get("Collector", "cm").ad.eval("RecentDaemonCoreDutyCycle") == 0.5
