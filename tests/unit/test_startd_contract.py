"""The startd's core (host.StartdCore) through the daemon contract: the replies each
request gets, the ad cadence (UPDATE_INTERVAL, UPDATE_DELAY, RETRY_INTERVAL) and the
job-exit reports (one on its way per schedd, retries, relocation), with numbers worked
out by hand. No shell, no clock: ``now`` is passed in."""

from __future__ import annotations

from builders.cores import startd_job

from mockpool.auth import Principal, Role
from mockpool.classad import ClassAd
from mockpool.config import parse_config
from mockpool.contract import Peer, Ready, Undeliverable
from mockpool.messages import (
    AdvertiseAck,
    CollectorAdvertise,
    CollectorQuery,
    JobsExitedAck,
    QueryReply,
    ScheddClaimResults,
    ScheddJobsExited,
    ScheddKeepAliveAnswer,
    ScheddReleaseResults,
    StartdActivateClaims,
    StartdKeepAlive,
    StartdMatchInfo,
    StartdReleaseClaims,
    StartdRequestClaims,
)
from mockpool.schedd.records import ActivationRequest, ClaimRequest
from mockpool.startd.core import StartdCore

ADDR = "127.0.0.1:9618"
COLLECTOR = "10.0.0.1:9618"
SCHEDD = "<10.0.0.5:7000>"  # as a claim gives it; reports go to its host:port
STATIC = "NUM_CPUS = 2\nSLOT_TYPE_0_PARTITIONABLE = False\n"
SCHEDD0 = Peer("10.0.0.5:7000", Principal(Role.DAEMON, "schedd/schedd0"))
NEGOTIATOR = Peer("10.0.0.2:9000", Principal(Role.DAEMON, "negotiator"))
FROM_COLLECTOR = Peer(COLLECTOR, Principal(Role.DAEMON))


def started(*names: str, conf: str = "UPDATE_INTERVAL = 300\n", at: float = 0.0) -> StartdCore:
    cfg = parse_config(STATIC, "m.conf")
    h = StartdCore([(n, cfg) for n in names], config=parse_config(conf, "pool.conf"))
    h.start(ADDR, at, lambda _name: None, COLLECTOR)
    return h


def sent(ready: Ready, kind: type) -> list:
    return [s for s in ready.sends if isinstance(s.msg, kind)]


def round_at(h: StartdCore, now: float) -> CollectorAdvertise:
    assert h.next_wakeup() == now
    [s] = sent(h.tick(now), CollectorAdvertise)
    assert s.address == COLLECTOR
    return s.msg


def names(msg: CollectorAdvertise) -> list[str]:
    return [u.ad.eval("Name") for u in msg.updates if u.ad_type == "Machine"]


def capability(h: StartdCore, slot: str) -> str:
    m = h.machine_for_slot(slot)
    return next(a for a in m.private_ads() if a.eval("Name") == slot).eval("Capability")


def claim(h: StartdCore, slot: str, job: ClassAd, now: float) -> str:
    req = ClaimRequest(capability(h, slot), slot, job, "alice@mockpool", "")
    ready = h.deliver(StartdRequestClaims("c", "schedd0", SCHEDD, [req]), SCHEDD0, now)
    [s] = ready.sends
    outcome = s.msg.outcomes[0]
    assert outcome.ok, outcome.error
    return outcome.claim_id


def run_job(h: StartdCore, slot: str, proc: int, start: float, duration: int) -> str:
    job = startd_job(proc, duration)
    cid = claim(h, slot, job, start)
    act = StartdActivateClaims("a", "schedd0", [ActivationRequest(cid, job, "")])
    [s] = h.deliver(act, SCHEDD0, start).sends
    assert s.msg.outcomes[0].ok
    return cid


# ----------------------------------------------------------------------------- requests


def test_claim_requests_are_answered_item_by_item_to_their_sender() -> None:
    h = started("exec1")
    good = ClaimRequest(capability(h, "slot1@exec1"), "slot1@exec1", startd_job(0, 60), "a", "")
    bad = ClaimRequest("x", "slot1@exec9", startd_job(1, 60), "a", "")
    ready = h.deliver(StartdRequestClaims("r7", "schedd0", SCHEDD, [bad, good]), SCHEDD0, 5.0)
    [s] = ready.sends
    assert s.address == SCHEDD0.address and isinstance(s.msg, ScheddClaimResults)
    assert (s.msg.corr, s.msg.schedd_name) == ("r7", "schedd0")
    refused, granted = s.msg.outcomes
    assert not refused.ok and "no slot 'slot1@exec9'" in refused.error
    assert granted.ok and granted.slot_name == "slot1@exec1" and granted.slot_ad is not None
    assert [k for _, k, _ in ready.events] == ["claim"]
    assert h.stats["claims"] == 1 and h.stats["claims_refused"] == 1


def test_a_keepalive_answers_the_ids_renewed_and_those_unknown() -> None:
    h = started("exec1")
    cid = claim(h, "slot1@exec1", startd_job(0, 60), 0.0)
    ready = h.deliver(StartdKeepAlive("k", "schedd0", [cid, "<gone>#1#1#x"]), SCHEDD0, 10.0)
    assert [s.msg for s in ready.sends] == [
        ScheddKeepAliveAnswer("k", "schedd0", [cid], ["<gone>#1#1#x"])
    ]


def test_match_info_is_the_negotiators_alone_and_one_way() -> None:
    h = started("exec1")
    cid = capability(h, "slot1@exec1")
    refused = h.deliver(StartdMatchInfo("m", [cid]), SCHEDD0, 1.0)
    [s] = refused.sends
    assert isinstance(s.msg, Undeliverable) and s.msg.code == "PERMISSION_DENIED"
    ready = h.deliver(StartdMatchInfo("m", [cid]), NEGOTIATOR, 1.0)
    assert ready.sends == [] and [k for _, k, _ in ready.events] == ["slot_matched"]


# ----------------------------------------------------------------------------- ad cadence


def test_every_ad_at_start_then_a_change_goes_update_delay_after_the_ack() -> None:
    # start at 0: both slots of exec1 go at once (2 slots x public + private = 4 updates)
    h = started("exec1")
    first = round_at(h, 0.0)
    assert len(first.updates) == 4 and h.stats["advertise_rounds"] == 1
    # a claim at 0.5 while the round is on its way: nothing due until its ack...
    claim(h, "slot1@exec1", startd_job(0, 60), 0.5)
    assert h.next_wakeup() == 600.5  # only the claim's lease deadline
    h.deliver(AdvertiseAck(first.corr, 4), FROM_COLLECTOR, 0.6)
    assert h.stats["ads_sent"] == 4
    # ... then 0.6 + UPDATE_DELAY (1.0) = 1.6, and only the slot that changed
    changes = round_at(h, 1.6)
    assert names(changes) == ["slot1@exec1"]
    h.deliver(AdvertiseAck(changes.corr, 2), FROM_COLLECTOR, 1.7)
    # nothing changed since: the next round is the full one, UPDATE_INTERVAL after start
    assert h.next_wakeup() == 300.0
    assert names(round_at(h, 300.0)) == ["slot1@exec1", "slot2@exec1"]


def test_a_change_just_before_the_full_round_waits_update_delay_and_goes_full() -> None:
    # a change at 299.5: the round is at 300.5 (not 300), and carries every slot
    h = started("exec1")
    h.deliver(AdvertiseAck(round_at(h, 0.0).corr, 4), FROM_COLLECTOR, 0.1)
    claim(h, "slot2@exec1", startd_job(0, 60), 299.5)
    assert h.next_wakeup() == 300.5
    full = round_at(h, 300.5)
    assert names(full) == ["slot1@exec1", "slot2@exec1"]
    h.deliver(AdvertiseAck(full.corr, 4), FROM_COLLECTOR, 300.6)
    assert h.next_wakeup() == 600.5  # the lease; the next full round at 300.5 + 300 = 600.5
    assert h.ads.next_full == 600.5


def test_a_failed_round_goes_again_whole_retry_interval_after_it_was_made() -> None:
    h = started("exec1")
    h.deliver(AdvertiseAck(round_at(h, 0.0).corr, 4), FROM_COLLECTOR, 0.1)
    claim(h, "slot1@exec1", startd_job(0, 60), 5.0)
    lost = round_at(h, 6.0)  # 5 + UPDATE_DELAY
    assert names(lost) == ["slot1@exec1"]
    # refused at 8 (its deadline may come much later): again at 6 + 10 = 16, every slot
    h.deliver(Undeliverable(lost, "UNAVAILABLE", "no collector"), FROM_COLLECTOR, 8.0)
    assert h.stats["advertise_failures"] == 1
    assert h.next_wakeup() == 16.0
    again = round_at(h, 16.0)
    assert names(again) == ["slot1@exec1", "slot2@exec1"]
    assert h.ads.next_full == 316.0
    # a stale answer (the lost round's) changes nothing
    h.deliver(AdvertiseAck(lost.corr, 2), FROM_COLLECTOR, 16.5)
    assert h.stats["ads_sent"] == 4


def test_with_no_collector_nothing_is_sent_and_the_round_waits_retry_interval() -> None:
    cfg = parse_config(STATIC, "m.conf")
    h = StartdCore([("exec1", cfg)])
    h.start(ADDR, 0.0, lambda _name: None, "")
    assert h.tick(0.0).sends == []
    assert h.next_wakeup() == 10.0 and h.stats["advertise_rounds"] == 0


# ----------------------------------------------------------------------------- job exits


def test_one_report_on_its_way_per_schedd_the_next_sent_on_its_ack() -> None:
    # jobs of 60 and 70 s from 0: the first report at 60; the second exit, at 70, waits
    # for the first's ack (at 75), which sends it at once
    h = started("exec1")
    h.deliver(AdvertiseAck(round_at(h, 0.0).corr, 4), FROM_COLLECTOR, 0.1)
    run_job(h, "slot1@exec1", 0, 0.0, 60)
    run_job(h, "slot2@exec1", 1, 0.0, 70)
    ready = h.tick(60.0)
    [s] = sent(ready, ScheddJobsExited)
    assert s.address == "10.0.0.5:7000" and s.msg.schedd_name == "schedd0"
    assert [e.job_id for e in s.msg.exits] == ["1.0"]
    assert sent(h.tick(70.0), ScheddJobsExited) == []
    assert h.reports.waiting() == 1
    ack = h.deliver(JobsExitedAck(s.msg.corr, 1), SCHEDD0, 75.0)
    [nxt] = sent(ack, ScheddJobsExited)
    assert [e.job_id for e in nxt.msg.exits] == ["1.1"] and nxt.msg.corr != s.msg.corr
    assert h.stats["exits_reported"] == 1


def test_an_undelivered_report_asks_the_collector_then_goes_again_retry_interval_on() -> None:
    h = started("exec1")
    run_job(h, "slot1@exec1", 0, 0.0, 60)
    [s] = sent(h.tick(60.0), ScheddJobsExited)
    failed = h.deliver(Undeliverable(s.msg, "UNAVAILABLE", "gone"), SCHEDD0, 62.0)
    assert h.stats["exit_report_failures"] == 1
    [q] = sent(failed, CollectorQuery)
    assert q.address == COLLECTOR and q.msg.ad_type == "Scheduler"
    assert q.msg.constraint == 'Name == "schedd0"' and q.msg.projection == ("MyAddress",)
    # no Scheduler ad: the same report (same corr) at 63 + 10 = 73
    h.deliver(QueryReply(q.msg.corr, []), FROM_COLLECTOR, 63.0)
    assert h.reports.next_retry() == 73.0
    [again] = sent(h.tick(73.0), ScheddJobsExited)
    assert again.msg.corr == s.msg.corr and again.msg.exits == s.msg.exits


def test_a_schedd_found_elsewhere_gets_the_report_and_the_later_exits_there() -> None:
    h = started("exec1")
    run_job(h, "slot1@exec1", 0, 0.0, 60)
    run_job(h, "slot2@exec1", 1, 0.0, 90)
    [s] = sent(h.tick(60.0), ScheddJobsExited)
    [q] = sent(h.deliver(Undeliverable(s.msg, "UNAVAILABLE"), SCHEDD0, 61.0), CollectorQuery)
    ad = ClassAd(MyType="Scheduler", MyAddress="<10.0.0.9:7100>")
    moved = h.deliver(QueryReply(q.msg.corr, [ad]), FROM_COLLECTOR, 62.0)
    [there] = sent(moved, ScheddJobsExited)
    assert there.address == "10.0.0.9:7100" and there.msg.exits == s.msg.exits
    h.deliver(JobsExitedAck(there.msg.corr, 1), Peer(there.address, SCHEDD0.principal), 63.0)
    [later] = sent(h.tick(90.0), ScheddJobsExited)  # the old address is not tried again
    assert later.address == "10.0.0.9:7100" and later.msg.corr != there.msg.corr
    assert [e.job_id for e in later.msg.exits] == ["1.1"]


def test_a_crashed_machine_takes_its_unsent_exits_with_it() -> None:
    h = started("exec1", "exec2")
    run_job(h, "slot1@exec1", 0, 0.0, 60)
    run_job(h, "slot1@exec2", 1, 0.0, 60)
    run_job(h, "slot2@exec2", 2, 0.0, 70)
    [s] = sent(h.tick(60.0), ScheddJobsExited)  # both exits of 60 in one report
    assert sorted(e.job_id for e in s.msg.exits) == ["1.0", "1.1"]
    h.tick(70.0)  # exec2's second exit waits for that report's ack
    h.crash("exec2")
    assert h.reports.waiting() == 0
    assert sent(h.deliver(JobsExitedAck(s.msg.corr, 2), SCHEDD0, 71.0), ScheddJobsExited) == []


def test_a_release_answers_the_ids_asked_and_frees_the_slot() -> None:
    h = started("exec1")
    cid = claim(h, "slot1@exec1", startd_job(0, 60), 0.0)
    ready = h.deliver(StartdReleaseClaims("r", "schedd0", [cid, "<gone>#1#1#x"]), SCHEDD0, 5.0)
    assert [s.msg for s in ready.sends] == [
        ScheddReleaseResults("r", "schedd0", [cid, "<gone>#1#1#x"])
    ]
    assert [k for _, k, _ in ready.events] == ["release"] and h.claims_held == 0


def test_a_slot_removed_while_a_round_is_built_is_invalidated_with_its_machines_ads() -> None:
    # two 2-cpu machines, each one partitionable slot; a round builds one machine a tick
    cfg = parse_config("NUM_CPUS = 2\nMEMORY = 2048\n", "m.conf")
    h = StartdCore([(n, cfg) for n in ("exec1", "exec2")], config=parse_config("", "p.conf"))
    h.ads.per_tick = 1
    h.start(ADDR, 0.0, lambda _name: None, COLLECTOR)
    assert sent(h.tick(0.0), CollectorAdvertise) == []  # exec1's ads built, exec2's next
    first = round_at(h, 0.0)
    h.deliver(AdvertiseAck(first.corr, len(first.updates)), FROM_COLLECTOR, 0.1)
    # a 1-cpu job on exec2's p-slot: a dynamic slot, advertised UPDATE_DELAY (1 s) later
    cid = claim(h, "slot1@exec2", startd_job(0, 600), 1.0)
    carved = round_at(h, 2.0)
    assert names(carved) == ["slot1@exec2", "slot1_1@exec2"]
    h.deliver(AdvertiseAck(carved.corr, len(carved.updates)), FROM_COLLECTOR, 2.1)
    # the full round at UPDATE_INTERVAL (300): exec1 built, then the dynamic slot released
    assert sent(h.tick(300.0), CollectorAdvertise) == []
    h.deliver(StartdReleaseClaims("r", "schedd0", [cid]), SCHEDD0, 300.0)
    full = round_at(h, 300.0)
    gone = [u.ad.eval("Name") for u in full.updates if u.invalidate]
    # its invalidation goes with exec2's ads, whose p-slot has the cpu back: the collector
    # never holds the p-slot's 2 cpus beside the dynamic slot's 1
    assert gone == ["slot1_1@exec2", "slot1_1@exec2"]  # its public and private ads
    pslot = next(u.ad for u in full.updates if u.ad.eval("Name") == "slot1@exec2")
    assert pslot.eval("Cpus") == 2
