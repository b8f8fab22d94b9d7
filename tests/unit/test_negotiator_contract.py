"""The negotiator through the core contract (driver.NegotiatorDriver): no network, no
clock, only messages in and ``Ready`` out, with times and counts worked out by hand.

Defaults: NEGOTIATOR_INTERVAL 60, NEGOTIATOR_CYCLE_DELAY 20, NEGOTIATOR_MIN_INTERVAL 5,
NEGOTIATOR_UPDATE_INTERVAL 300. The pool: three one-cpu slots (conftest.static_pool);
alice's autocluster of five jobs at schedd1: three match, the other two are rejected
once (one Rejection for the autocluster).
"""

from __future__ import annotations

from typing import Any

import pytest
from builders.cores import ALICE, FS_SCHEDD, FS_STARTD, job_request, static_pool

from mockpool.auth import Principal, Role
from mockpool.classad import ClassAd
from mockpool.config import parse_config
from mockpool.contract import Peer, Ready, Undeliverable
from mockpool.durable import SimulatedDisk
from mockpool.messages import (
    AdvertiseAck,
    CollectorAdvertise,
    CollectorQuery,
    CollectorSnapshotRequest,
    MatchesAck,
    NegotiatorReschedule,
    NegotiatorResourceRequests,
    NegotiatorUserPrio,
    QueryReply,
    RescheduleAck,
    ScheddMatches,
    ScheddResourceRequestsRequest,
    SnapshotReply,
    StartdMatchInfo,
    UserPrioReply,
)
from mockpool.negotiator.driver import NegotiatorDriver
from mockpool.negotiator.held_ads import SnapshotPart, WireSnapshot
from mockpool.negotiator.negotiator import Negotiator

COLLECTOR = "10.0.0.9:9618"
BASE = 1_767_225_600.0
DAEMON = Peer("peer", Principal(Role.DAEMON))


def driver(
    config: str = "", *, disk: SimulatedDisk | None = None, start: float = 0.0, **kwargs: Any
) -> NegotiatorDriver:
    cfg = parse_config(config, "test.conf").for_subsystem("NEGOTIATOR")
    files = (disk or SimulatedDisk()).files("negotiator")
    core = Negotiator("negotiator", cfg, files, log_base_wall=BASE)
    d = NegotiatorDriver(core, collector_address=COLLECTOR, address="<10.0.0.8:9618>", **kwargs)
    d.start(start)
    return d


def submitter(name: str, schedd: str, address: str, idle: int) -> ClassAd:
    return ClassAd(
        MyType="Submitter", Name=name, ScheddName=schedd, ScheddIpAddr=f"<{address}>", IdleJobs=idle
    )


def snapshot(delta: bool = False, order: list[str] | None = None) -> WireSnapshot:
    ads = static_pool(3)
    names = [a.eval("Name") for a in ads.slots]
    if delta:  # a delta naming a slot never held
        return WireSnapshot("e", 2, True, SnapshotPart([], order or []), SnapshotPart([], []))
    return WireSnapshot(
        "e", 1, False, SnapshotPart(ads.slots, names), SnapshotPart(ads.private_ads, names)
    )


def of(ready: Ready, kind: type) -> list[Any]:
    return [s.msg for s in ready.sends if isinstance(s.msg, kind)]


def ads_in(d: NegotiatorDriver, ready: Ready, now: float, subs: list[ClassAd]) -> Ready:
    """Answer phase 1a's three asks (the whole snapshot, no Scheduler ads, ``subs``)."""
    (snap,) = of(ready, CollectorSnapshotRequest)
    queries = {q.ad_type: q for q in of(ready, CollectorQuery)}
    out = d.deliver(SnapshotReply(snap.corr, snapshot()), DAEMON, now)
    out.extend(d.deliver(QueryReply(queries["Scheduler"].corr, []), DAEMON, now))
    return out.extend(d.deliver(QueryReply(queries["Submitter"].corr, subs), DAEMON, now))


def to_matches(d: NegotiatorDriver, now: float = 0.0) -> Ready:
    """A cycle at ``now`` up to its matches: alice's five jobs at schedd1."""
    asked = ads_in(d, d.tick(now), now, [submitter(ALICE, "schedd1", FS_SCHEDD, 5)])
    (rr,) = of(asked, ScheddResourceRequestsRequest)
    ads = [job_request(ALICE, 5).ad]
    return d.deliver(NegotiatorResourceRequests(rr.corr, "schedd1", ads), DAEMON, now)


def test_a_cycle_asks_matches_finishes_and_advertises_then_waits_its_interval() -> None:
    d = driver()
    assert d.next_wakeup() == 0.0  # the first cycle at start
    ready = d.tick(0.0)
    assert [(s.address, type(s.msg).__name__) for s in ready.sends] == [
        (COLLECTOR, "CollectorSnapshotRequest"),
        (COLLECTOR, "CollectorQuery"),
        (COLLECTOR, "CollectorQuery"),
    ]
    assert {s.msg.corr for s in ready.sends} == {
        "s:1@0.0:since",
        "q:1@0.0:Scheduler",
        "q:1@0.0:Submitter",
    }
    assert d.next_wakeup() == 300.0  # only the ad timer while the cycle waits
    asked = ads_in(d, ready, 1.0, [submitter(ALICE, "schedd1", FS_SCHEDD, 5)])
    (rr,) = asked.sends
    assert rr.address == FS_SCHEDD and rr.msg == ScheddResourceRequestsRequest(
        "rr:1@0.0:schedd1", "schedd1"
    )
    out = d.deliver(
        NegotiatorResourceRequests(rr.msg.corr, "schedd1", [job_request(ALICE, 5).ad]), DAEMON, 2.0
    )
    (m,) = out.sends
    assert m.address == FS_SCHEDD and m.msg.corr == "m:1@0.0:schedd1" and m.msg.cycle == 1
    assert len(m.msg.matches) == 3 and len(m.msg.rejections) == 1
    assert {n.startd_address for n in m.msg.matches} == {FS_STARTD}
    (r,) = m.msg.rejections
    assert (r.cluster, r.proc) == (1, 0)
    done = d.deliver(MatchesAck(m.msg.corr, 3), DAEMON, 3.0)
    kinds = [kind for _, kind, _ in done.events]
    assert kinds == ["match"] * 3 + ["reject", "cycle"]
    (ad,) = of(done, CollectorAdvertise)
    assert [u.ad_type for u in ad.updates] == ["Negotiator", "Accounting", "Accounting"]
    assert ad.updates[0].ad.eval("LastNegotiationCycleMatches0") == 3
    assert d.core.cycles == 1 and d.next_wakeup() == 300.0  # not timed until advertised
    assert not d.deliver(AdvertiseAck(ad.corr, 3), DAEMON, 4.0)
    # ended at 4: next at 4 + max(20, 60 - (4 - 0)) = 60
    assert d.next_wakeup() == 60.0 and d.core.cadence.last_end == 4.0
    assert not d.tick(59.0) and of(d.tick(60.0), CollectorQuery)[0].corr == "q:2@0.0:Scheduler"


def test_a_failed_ask_of_the_collector_aborts_and_a_late_answer_is_ignored() -> None:
    d = driver()
    ready = d.tick(0.0)
    (snap,) = of(ready, CollectorSnapshotRequest)
    sched = of(ready, CollectorQuery)[0]
    assert not d.deliver(Undeliverable(sched, "UNAVAILABLE", "no collector"), DAEMON, 0.5)
    lines = [x.split(" ", 2)[2] for x in d.core.drain_log()]
    assert lines == [
        "---------- Started Negotiation Cycle ----------",
        "Phase 1:  Obtaining ads from collector ...",
        "Couldn't fetch ads: UNAVAILABLE: no collector",
        "Aborting negotiation cycle",
    ]
    assert d.core.peer_failures == 1 and d.core.cycles == 0
    assert d.next_wakeup() == 60.0  # the timer stays on its period: start + INTERVAL
    assert not d.deliver(SnapshotReply(snap.corr, snapshot()), DAEMON, 0.6)  # round 1 is over
    assert d.core.slot_ads.since() is None  # nothing of it merged
    assert {s.msg.corr for s in d.tick(60.0).sends} == {
        "s:2@0.0:since",
        "q:2@0.0:Scheduler",
        "q:2@0.0:Submitter",
    }


def test_a_stale_delta_is_asked_for_whole_once_then_the_cycle_aborts() -> None:
    d = driver()
    ready = d.tick(0.0)
    (snap,) = of(ready, CollectorSnapshotRequest)
    queries = of(ready, CollectorQuery)
    d.deliver(SnapshotReply(snap.corr, snapshot(delta=True, order=["slot9@nowhere"])), DAEMON, 0)
    d.deliver(QueryReply(queries[0].corr, []), DAEMON, 0)
    again = d.deliver(QueryReply(queries[1].corr, []), DAEMON, 0)
    (whole,) = again.sends
    assert whole.msg.since is None and whole.msg.corr == "s:1@0.0:whole"
    bad = snapshot(delta=True, order=["slot9@nowhere"])
    assert not d.deliver(SnapshotReply(whole.msg.corr, bad), DAEMON, 1.0)
    (why,) = [x for x in d.core.drain_log() if "Couldn't fetch ads" in x]
    assert why.endswith(
        "Couldn't fetch ads: WireError: snapshot reply does not fit: "
        "the slot ad 'slot9@nowhere' is named but not held"
    )
    assert d.cycle is None and d.core.peer_failures == 1


def test_a_schedd_that_fails_is_left_out_and_its_submitters_counted_failed() -> None:
    d = driver()
    subs = [
        submitter(ALICE, "schedd1", FS_SCHEDD, 5),
        submitter("bob@mockpool", "schedd2", "10.0.0.3:9618", 4),
    ]
    asked = ads_in(d, d.tick(0.0), 0.0, subs)
    rr = {s.msg.schedd_name: s.msg for s in asked.sends}
    assert [s.address for s in asked.sends] == [FS_SCHEDD, "10.0.0.3:9618"]
    # schedd2 fails first; nothing moves until schedd1 answered too
    assert not d.deliver(Undeliverable(rr["schedd2"], "DEADLINE_EXCEEDED", "slow"), DAEMON, 5.0)
    out = d.deliver(
        NegotiatorResourceRequests(rr["schedd1"].corr, "schedd1", [job_request(ALICE, 5).ad]),
        DAEMON,
        7.0,
    )
    (m,) = of(out, ScheddMatches)
    d.deliver(
        AdvertiseAck(
            of(d.deliver(MatchesAck(m.corr, 3), DAEMON, 7.0), CollectorAdvertise)[0].corr, 3
        ),
        DAEMON,
        7.0,
    )
    (note,) = [x for x in d.core.drain_log() if "Failed to connect" in x]
    # dated when the last schedd answered (7 s after the base date: 00:00:07)
    assert note == "01/01/26 00:00:07     Failed to connect to schedd2 <10.0.0.3:9618>"
    stats = d.core.history.latest
    assert stats is not None and stats.submitters_failed == {"bob@mockpool"}
    assert d.core.peer_failures == 1


def test_matches_a_schedd_did_not_take_are_failed_and_the_rest_are_events() -> None:
    d = driver()
    (m,) = of(to_matches(d), ScheddMatches)
    # the live codec sent them in parts: the first (with the rejection) was taken
    lost = ScheddMatches(m.corr, m.schedd_name, m.cycle, m.matches[1:], [])
    done = d.deliver(Undeliverable(lost, "UNAVAILABLE", "schedd overloaded"), DAEMON, 0.0)
    kinds = [kind for _, kind, _ in done.events]
    assert kinds == ["match", "reject", "cycle"]
    assert [f["slot"] for _, k, f in done.events if k == "match"] == [m.matches[0].slot_name]
    assert any(
        f"Failed to send 2 matches to schedd1 <{FS_SCHEDD}>" in x for x in d.core.drain_log()
    )
    assert d.core.peer_failures == 1
    stats = d.core.history.latest
    assert stats is not None and stats.submitters_failed == {ALICE}


def test_a_charged_cycle_sends_its_matches_after_its_charge() -> None:
    # 0.5 s a slot and 1 s a match: 3 slots, 3 matches = 4.5 pool s
    d = driver(cycle_charge=lambda slots, matches, cpu: 0.5 * slots + 1.0 * matches)
    assert of(d.tick(0.0), CollectorQuery)
    ready = to_matches_after(d, 1.0)
    assert not of(ready, ScheddMatches) and d.next_wakeup() == 5.5
    assert not d.tick(5.4)
    (m,) = of(d.tick(5.5), ScheddMatches)
    assert len(m.matches) == 3


def to_matches_after(d: NegotiatorDriver, now: float) -> Ready:
    """Phase 1 of the cycle already started, answered at ``now``."""
    assert d.cycle is not None
    r = d.cycle.tag
    subs = [submitter(ALICE, "schedd1", FS_SCHEDD, 5)]
    d.deliver(SnapshotReply(f"s:{r}:since", snapshot()), DAEMON, now)
    d.deliver(QueryReply(f"q:{r}:Scheduler", []), DAEMON, now)
    d.deliver(QueryReply(f"q:{r}:Submitter", subs), DAEMON, now)
    ads = [job_request(ALICE, 5).ad]
    return d.deliver(NegotiatorResourceRequests(f"rr:{r}:schedd1", "schedd1", ads), DAEMON, now)


def test_an_offloaded_computation_is_handed_out_and_its_result_taken_back() -> None:
    d = driver(offload=True)
    ready = to_matches(d)
    assert not ready and d.next_wakeup() == 300.0
    job = d.pending_compute()
    assert job is not None and d.pending_compute() is None
    # a priority factor set while it computes survives the cycle's accountant
    admin = Peer("tool", Principal(Role.ADMIN))
    d.deliver(NegotiatorUserPrio("u1", "setfactor", ALICE, 5.0), admin, 0.1)
    (m,) = of(d.computed(job(), 0.2), ScheddMatches)
    assert len(m.matches) == 3 and d.core.accountant.factor(ALICE) == 5.0


def test_a_computation_that_fails_ends_the_cycle_on_its_period() -> None:
    d = driver(offload=True)
    to_matches(d)
    assert d.pending_compute() is not None
    assert not d.computed(RuntimeError("boom"), 0.5)
    assert d.cycle is None and d.core.cycles == 0 and d.next_wakeup() == 60.0


def test_inform_startd_tells_each_startd_its_claims_before_the_matches() -> None:
    d = driver("NEGOTIATOR_INFORM_STARTD = True")
    ready = to_matches(d)
    assert [type(s.msg) for s in ready.sends] == [StartdMatchInfo, ScheddMatches]
    info = ready.sends[0]
    assert info.address == FS_STARTD and len(info.msg.claim_ids) == 3
    # its failure changes nothing but a warning
    assert not d.deliver(Undeliverable(info.msg, "UNAVAILABLE"), DAEMON, 0.0)
    assert d.core.peer_failures == 0


def test_a_negotiator_subsystem_setting_of_inform_startd_is_read() -> None:
    d = driver("NEGOTIATOR.NEGOTIATOR_INFORM_STARTD = True")
    assert d.inform_startd


def test_reschedule_makes_the_next_cycle_due_once_within_the_minimums() -> None:
    d = driver()
    (m,) = of(to_matches(d), ScheddMatches)
    (ad,) = of(d.deliver(MatchesAck(m.corr, 3), DAEMON, 0.0), CollectorAdvertise)
    d.deliver(AdvertiseAck(ad.corr, 3), DAEMON, 0.0)  # ended at 0: next at 60
    ack = d.deliver(NegotiatorReschedule("r1", "schedd1"), Peer("s", Principal(Role.DAEMON)), 1.0)
    # due now, but CYCLE_DELAY (20) after the last end at 0
    assert [(s.address, s.msg) for s in ack.sends] == [("s", RescheduleAck("r1", 20.0))]
    assert d.next_wakeup() == 1.0
    assert not d.tick(1.0) and d.next_wakeup() == 20.0  # the timer fired: re-armed at 20
    assert of(d.tick(20.0), CollectorQuery)


@pytest.mark.parametrize(
    ("role", "action", "name", "value", "code", "says"),
    [
        (Role.SUBMIT, "setfactor", ALICE, 5.0, "PERMISSION_DENIED", "needs the ADMIN role"),
        (Role.ADMIN, "setprio", "alice", 3.0, "INVALID_ARGUMENT", "user@domain"),
        (Role.ADMIN, "setfactor", ALICE, 0.5, "INVALID_ARGUMENT", ">= 1"),
    ],
)
def test_userprio_refusals(
    role: Role, action: str, name: str, value: float, code: str, says: str
) -> None:
    d = driver()
    msg = NegotiatorUserPrio("u", action, name, value)
    (sent,) = d.deliver(msg, Peer("tool", Principal(role)), 1.0).sends
    assert isinstance(sent.msg, Undeliverable) and sent.msg.msg == msg
    assert sent.msg.code == code and says in sent.msg.detail
    assert d.core.accountant.records == {}


def test_userprio_reads_for_anyone_and_changes_for_admin() -> None:
    d = driver()
    admin = Peer("tool", Principal(Role.ADMIN))
    (sent,) = d.deliver(NegotiatorUserPrio("u1", "setfactor", ALICE, 5.0), admin, 2.0).sends
    assert isinstance(sent.msg, UserPrioReply) and sent.msg.now == 2.0
    (read,) = d.deliver(NegotiatorUserPrio("u2"), Peer("t", Principal(Role.READ)), 3.0).sends
    names = {a.eval("Name"): a for a in read.msg.ads}
    assert names[ALICE].eval("PriorityFactor") == 5.0


def test_the_periodic_ad_waits_for_its_answer_then_goes_an_interval_on() -> None:
    d = driver("NEGOTIATOR_INTERVAL = 1000")
    d.core.cadence.next_due = 10_000.0
    assert d.next_wakeup() == 300.0
    (ad,) = of(d.tick(300.0), CollectorAdvertise)
    assert ad.corr == "ad:p1@0.0" and ad.updates[0].ad.eval("MyType") == "Negotiator"
    assert d.next_wakeup() == 10_000.0 and not d.tick(400.0)  # not again until answered
    d.deliver(Undeliverable(ad, "UNAVAILABLE", "down"), DAEMON, 310.0)
    assert d.core.peer_failures == 1 and d.next_wakeup() == 600.0  # max(300 + 300, 310)
    (ad2,) = of(d.tick(600.0), CollectorAdvertise)
    d.deliver(AdvertiseAck(ad2.corr, 1), DAEMON, 950.0)  # answered late: 950 > 900
    assert d.next_wakeup() == 950.0


def pump(d: NegotiatorDriver, collector: Any, ready: Ready, now: float) -> Ready:
    """Carry the negotiator's messages to the collector core and its answers back (what
    the kernel does); the rest is returned for the test to answer."""
    out = Ready()
    me = Peer("10.0.0.8:9618", Principal(Role.NEGOTIATOR, "negotiator"))
    for s in ready.sends:
        if s.address != COLLECTOR:
            out.sends.append(s)
            continue
        for back in collector.deliver(s.msg, me, now).sends:
            out.extend(pump(d, collector, d.deliver(back.msg, DAEMON, now), now))
    return out


def test_a_collector_core_s_snapshots_feed_the_cycles_whole_then_as_deltas() -> None:
    from mockpool.collector.collector import Collector, CollectorUpdate

    collector = Collector(parse_config("", "test.conf"), ad_epoch=int(BASE))
    pool = static_pool(3)
    updates = [CollectorUpdate(i, "Machine", ad) for i, ad in enumerate(pool.slots)]
    updates += [
        CollectorUpdate(3 + i, "MachinePrivate", ad) for i, ad in enumerate(pool.private_ads)
    ]
    updates.append(CollectorUpdate(6, "Submitter", submitter(ALICE, "schedd1", FS_SCHEDD, 5)))
    collector.deliver(CollectorAdvertise("a", updates), DAEMON, 0.0)
    d = driver()
    slots_seen = []
    for start in (0.0, 60.0):
        asked = pump(d, collector, d.tick(start), start)
        (rr,) = of(asked, ScheddResourceRequestsRequest)
        ads = [job_request(ALICE, 5).ad]
        out = d.deliver(NegotiatorResourceRequests(rr.corr, "schedd1", ads), DAEMON, start)
        (m,) = of(out, ScheddMatches)
        slots_seen.append(sorted(n.slot_name for n in m.matches))
        pump(d, collector, d.deliver(MatchesAck(m.corr, 3), DAEMON, start), start)
    # the second cycle asked since the first's (epoch, seq) and got a delta of nothing
    assert d.core.slot_ads.since() is not None and collector.stats["snapshot_deltas"] == 1
    assert slots_seen[0] == slots_seen[1] and len(slots_seen[0]) == 3
    assert d.core.cycles == 2 and d.next_wakeup() == 120.0
    (neg,) = collector.query("Negotiator", "", Principal(Role.READ), 60.0)
    assert neg.ad.eval("LastNegotiationCycleMatches0") == 3


def test_a_restarted_negotiator_ignores_its_predecessor_s_late_answers() -> None:
    disk = SimulatedDisk()
    old = driver(disk=disk)
    (snap,) = of(old.tick(0.0), CollectorSnapshotRequest)
    admin = Peer("tool", Principal(Role.ADMIN))
    old.deliver(NegotiatorUserPrio("u", "setfactor", ALICE, 7.0), admin, 1.0)
    new = driver(disk=disk, start=5.0)  # crashed at 2, back at 5 from its durable state
    assert new.core.accountant.factor(ALICE) == 7.0
    (mine,) = of(new.tick(5.0), CollectorSnapshotRequest)
    assert mine.corr == "s:1@5.0:since" != snap.corr
    # the first life's snapshot arrives late: not the answer to this life's round 1
    assert not new.deliver(SnapshotReply(snap.corr, snapshot()), DAEMON, 5.1)
    assert new.cycle is not None and new.cycle.snapshot is None
