"""The schedd core through the daemon contract (``ScheddDriver``: next_wakeup, tick,
deliver): its timers, its messages, and what a failed request turns into.

Every time below is worked out by hand from the knobs the test sets.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from builders.cores import ALICE, cid
from builders.cores import make_schedd as make

from mockpool.auth import Principal, Role
from mockpool.classad import ClassAd
from mockpool.contract import Peer, Ready, Undeliverable
from mockpool.messages import (
    AdvertiseAck,
    CollectorAdvertise,
    CollectorQuery,
    JobsExitedAck,
    MatchesAck,
    NegotiatorReschedule,
    NegotiatorResourceRequests,
    QueryReply,
    RescheduleAck,
    ScheddActivationResults,
    ScheddClaimResults,
    ScheddJobsExited,
    ScheddKeepAliveAnswer,
    ScheddMatches,
    ScheddResourceRequestsRequest,
    StartdActivateClaims,
    StartdKeepAlive,
    StartdReleaseClaims,
    StartdRequestClaims,
)
from mockpool.schedd.driver import ScheddDriver
from mockpool.schedd.records import ActivationOutcome, ClaimOutcome, MatchNotice
from mockpool.startd.grants import JobExitRecord

SLEEP = "executable = /bin/sleep\narguments = 60\n"
COLLECTOR, NEGOTIATOR, STARTD, ME = "coll:1", "neg:1", "exec1:1", "sched:1"
# ALIVE_INTERVAL 60 (JobLeaseDuration 2400 / 3 is longer): each claim every 60 s
KNOBS = "ALIVE_INTERVAL = 60\nSCHEDD_INTERVAL = 300\nSCHEDD_MIN_INTERVAL = 5\n"
NEGOTIATOR_PEER = Peer(NEGOTIATOR, Principal(Role.NEGOTIATOR, "negotiator"))
STARTD_PEER = Peer(STARTD, Principal(Role.DAEMON, "startd/exec1"))


@pytest.fixture
def driver(tmp_path: Path) -> ScheddDriver:
    core = make(tmp_path / "schedd1.sqlite", 0.0, KNOBS)
    return ScheddDriver(core, 0.0, address=ME, collector_address=COLLECTOR)


def only(ready: Ready, kind: type) -> list:
    return [(s.address, s.msg) for s in ready.sends if isinstance(s.msg, kind)]


def kinds(ready: Ready) -> list[str]:
    return [kind for _, kind, _ in ready.events]


def advertise_and_ack(d: ScheddDriver, now: float) -> Ready:
    """Tick at ``now`` (an ad round is due) and acknowledge its Advertise at once."""
    ((address, adv),) = only(d.tick(now), CollectorAdvertise)
    assert address == COLLECTOR
    return d.deliver(AdvertiseAck(adv.corr, len(adv.updates)), Peer(COLLECTOR, d_peer()), now)


def d_peer() -> Principal:
    return Principal(Role.DAEMON, "")


def run_job(d: ScheddDriver, now: float) -> str:
    """Match job 1.0 at ``now``, grant its claim at now + 1, start it at now + 2."""
    claim = cid(1)
    notice = MatchNotice(ALICE, 1, "slot1@exec1", claim, STARTD)
    ready = d.deliver(ScheddMatches("m1", "schedd1", 1, [notice]), NEGOTIATOR_PEER, now)
    ((_, req),) = only(ready, StartdRequestClaims)
    outcome = ClaimOutcome(claim, True, claim_id=claim, slot_name="slot1@exec1")
    ready = d.deliver(ScheddClaimResults(req.corr, "schedd1", [outcome]), STARTD_PEER, now + 1)
    ((_, act),) = only(ready, StartdActivateClaims)
    started = ActivationOutcome(claim, True, start_time=now + 2)
    d.deliver(ScheddActivationResults(act.corr, "schedd1", [started]), STARTD_PEER, now + 2)
    assert d.core.status()["running"] == 1
    return claim


# --------------------------------------------------------------------------- timers


def test_a_new_schedd_wants_its_ad_round_and_a_keepalive_look_at_once(
    driver: ScheddDriver,
) -> None:
    assert driver.next_wakeup() == 0.0
    ready = driver.tick(0.0)
    ((address, adv),) = only(ready, CollectorAdvertise)
    assert address == COLLECTOR and [u.ad_type for u in adv.updates] == ["Scheduler"]
    # in flight: no second round, no keepalive (no claims); the policy's round at 60
    # (PERIODIC_EXPR_INTERVAL) and the wall clock's at 3600 are left
    assert driver.next_wakeup() == 60.0
    assert only(driver.tick(1.0), CollectorAdvertise) == []


def test_the_ad_round_then_a_reschedule_through_the_negotiators_ad(driver: ScheddDriver) -> None:
    advertise_and_ack(driver, 0.0)  # nothing queued: no reschedule
    assert driver.core.ad_cadence.due() == 300.0  # SCHEDD_INTERVAL after the start
    driver.core.submit(SLEEP + "queue\n", "job.sub", "alice", 12.0)
    driver.submitted(12.0)
    # a submit asks for a reschedule: the ads go at max(12, 0 + 5) = 12
    assert driver.next_wakeup() == 12.0
    ((_, adv),) = only(driver.tick(12.0), CollectorAdvertise)
    assert [u.ad_type for u in adv.updates] == ["Scheduler", "Submitter"]
    ready = driver.deliver(AdvertiseAck(adv.corr, 2), Peer(COLLECTOR, d_peer()), 12.0)
    # the negotiator's address is not known yet: its ad first
    ((address, query),) = only(ready, CollectorQuery)
    assert (address, query.ad_type, query.projection) == (COLLECTOR, "Negotiator", ("MyAddress",))
    found = QueryReply(query.corr, [ClassAd(MyAddress="<10.0.0.5:9000?alias=cm>")])
    ready = driver.deliver(found, Peer(COLLECTOR, d_peer()), 12.0)
    ((address, ask),) = only(ready, NegotiatorReschedule)
    assert (address, ask.schedd_name) == ("10.0.0.5:9000", "schedd1")
    driver.deliver(RescheduleAck(ask.corr, 12.0), Peer(address, d_peer()), 12.0)
    assert driver.stats["reschedules"] == 1 and driver.stats["advertise"] == 2


def test_a_reschedule_that_fails_forgets_the_negotiators_address(driver: ScheddDriver) -> None:
    advertise_and_ack(driver, 0.0)
    driver._negotiator = "10.0.0.5:9000"  # found by an earlier round
    driver.core.submit(SLEEP + "queue\n", "job.sub", "alice", 20.0)
    driver.submitted(20.0)
    ready = advertise_and_ack(driver, 20.0)
    ((address, ask),) = only(ready, NegotiatorReschedule)  # the cached address: no lookup
    assert address == "10.0.0.5:9000"
    driver.deliver(Undeliverable(ask, "UNAVAILABLE"), Peer(address, d_peer()), 20.0)
    driver.core.submit(SLEEP + "queue\n", "job.sub", "alice", 30.0)
    driver.submitted(30.0)  # due at max(30, 20 + 5) = 30
    assert driver.next_wakeup() == 30.0
    assert [q.ad_type for _, q in only(advertise_and_ack(driver, 30.0), CollectorQuery)] == [
        "Negotiator"
    ]


def test_ads_that_did_not_arrive_still_end_the_round_with_its_reschedule(
    driver: ScheddDriver,
) -> None:
    # HTCondor's Scheduler::timeout sends RESCHEDULE after sendAds whatever happened to them
    advertise_and_ack(driver, 0.0)
    driver._negotiator = "10.0.0.5:9000"
    driver.core.submit(SLEEP + "queue\n", "job.sub", "alice", 7.0)
    driver.submitted(7.0)
    ((_, adv),) = only(driver.tick(7.0), CollectorAdvertise)
    ready = driver.deliver(Undeliverable(adv, "DEADLINE_EXCEEDED"), Peer(COLLECTOR, d_peer()), 17.0)
    assert len(only(ready, NegotiatorReschedule)) == 1
    assert driver.stats["rpc_failures"] == 1 and driver.stats["advertise"] == 1  # (at 0)
    # the round is over (the change at 7 went with it): the next SCHEDD_INTERVAL after 7
    assert driver.core.ad_cadence.due() == 307.0
    assert only(driver.tick(18.0), CollectorAdvertise) == []


def test_keepalive_looks_come_when_a_claims_keepalive_is_due(
    driver: ScheddDriver,
) -> None:
    advertise_and_ack(driver, 0.0)
    driver.core.submit(SLEEP + "queue\n", "job.sub", "alice", 0.0)
    driver.tick(0.0)  # the first keepalive look: no claims, none after it
    assert driver.keepalive_look is None
    claim = run_job(driver, 100.0)  # changes at 100, 101 and 102
    # the claim was granted at 101 and its job started at 102: its first keepalive is
    # due 60 s after the grant, and nothing before needs a look (HTCondor's schedd sends
    # its alives on a timer, not after every change of its claims)
    assert driver.keepalive_look == 161.0
    ((address, alive),) = only(driver.tick(161.0), StartdKeepAlive)
    assert (address, alive.claim_ids) == (STARTD, [claim])
    assert driver.keepalive_look == 221.0
    driver.deliver(ScheddKeepAliveAnswer(alive.corr, "schedd1", [claim], []), STARTD_PEER, 161.0)
    assert driver.stats["keepalives"] == 1 and driver.keepalive_look == 221.0


# --------------------------------------------------------------------------- messages


def test_matches_are_acknowledged_before_the_claims_are_requested(
    driver: ScheddDriver,
) -> None:
    driver.core.submit(SLEEP + "queue 2\n", "job.sub", "alice", 0.0)
    notices = [MatchNotice(ALICE, 1, f"slot{n}@exec1", cid(n), STARTD) for n in (1, 2)] + [
        MatchNotice(ALICE, 1, "slot3@exec1", cid(3), STARTD)
    ]  # one more than idle jobs
    ready = driver.deliver(ScheddMatches("m7", "schedd1", 7, notices), NEGOTIATOR_PEER, 5.0)
    first, second = ready.sends
    assert (first.address, first.msg) == (NEGOTIATOR, MatchesAck("m7", 3))
    assert second.address == STARTD and isinstance(second.msg, StartdRequestClaims)
    assert [c.claim_id for c in second.msg.claims] == [cid(1), cid(2)]
    assert second.msg.schedd_address == ME
    # the job ads are copies: the schedd goes on changing its own
    assert second.msg.claims[0].job_ad is not driver.core.jobs[(1, 0)].ad
    assert driver.stats["matches_dropped"] == 1
    assert kinds(ready).count("job_matched") == 2


def test_a_negotiator_asks_for_resource_requests(driver: ScheddDriver) -> None:
    driver.core.submit(SLEEP + "queue 3\n", "job.sub", "alice", 0.0)
    ready = driver.deliver(ScheddResourceRequestsRequest("rr:4", "schedd1"), NEGOTIATOR_PEER, 1.0)
    ((address, reply),) = only(ready, NegotiatorResourceRequests)
    assert address == NEGOTIATOR and reply.corr == "rr:4"
    assert [ad.get_value("ResourceRequestCount") for ad in reply.ads] == [3]


def test_a_claim_request_that_cannot_be_delivered_frees_its_job(
    driver: ScheddDriver,
) -> None:
    driver.core.submit(SLEEP + "queue\n", "job.sub", "alice", 0.0)
    notice = MatchNotice(ALICE, 1, "slot1@exec1", cid(1), STARTD)
    ready = driver.deliver(ScheddMatches("m", "schedd1", 1, [notice]), NEGOTIATOR_PEER, 5.0)
    ((_, req),) = only(ready, StartdRequestClaims)
    assert driver.core.status()["reserved"] == 1
    ready = driver.deliver(Undeliverable(req, "UNAVAILABLE"), STARTD_PEER, 5.2)
    ((_, _, fields),) = [e for e in ready.events if e[1] == "claim_refused"]
    assert fields["error"] == "RequestClaims failed: UNAVAILABLE"
    assert driver.core.status()["reserved"] == 0 and driver.core.status()["idle"] == 1
    assert driver.stats["rpc_failures"] == 1


def test_a_claim_the_startd_did_not_answer_is_refused_as_unanswered(
    driver: ScheddDriver,
) -> None:
    driver.core.submit(SLEEP + "queue 2\n", "job.sub", "alice", 0.0)
    notices = [MatchNotice(ALICE, 1, f"slot{n}@exec1", cid(n), STARTD) for n in (1, 2)]
    ready = driver.deliver(ScheddMatches("m", "schedd1", 1, notices), NEGOTIATOR_PEER, 5.0)
    ((_, req),) = only(ready, StartdRequestClaims)
    granted = ClaimOutcome(cid(1), True, claim_id=cid(1), slot_name="slot1@exec1")
    ready = driver.deliver(ScheddClaimResults(req.corr, "schedd1", [granted]), STARTD_PEER, 6.0)
    refused = [f["error"] for _, k, f in ready.events if k == "claim_refused"]
    assert refused == ["no answer from the startd"]
    ((_, act),) = only(ready, StartdActivateClaims)
    assert [a.claim_id for a in act.activations] == [cid(1)]


def test_an_activation_without_an_answer_releases_its_claim(driver: ScheddDriver) -> None:
    driver.core.submit(SLEEP + "queue\n", "job.sub", "alice", 0.0)
    notice = MatchNotice(ALICE, 1, "slot1@exec1", cid(1), STARTD)
    ready = driver.deliver(ScheddMatches("m", "schedd1", 1, [notice]), NEGOTIATOR_PEER, 5.0)
    ((_, req),) = only(ready, StartdRequestClaims)
    granted = ClaimOutcome(cid(1), True, claim_id=cid(1), slot_name="slot1@exec1")
    ready = driver.deliver(ScheddClaimResults(req.corr, "schedd1", [granted]), STARTD_PEER, 6.0)
    ((_, act),) = only(ready, StartdActivateClaims)
    ready = driver.deliver(Undeliverable(act, "DEADLINE_EXCEEDED"), STARTD_PEER, 16.0)
    ((_, _, fields),) = [e for e in ready.events if e[1] == "activate_unanswered"]
    # the job may be running there: held back until the lease (2400 s) is over
    assert fields["error"] == "ActivateClaims failed: DEADLINE_EXCEEDED"
    assert fields["until"] == 2416.0
    ((address, rel),) = only(ready, StartdReleaseClaims)
    assert (address, rel.claim_ids) == (STARTD, [cid(1)])


def test_a_startd_that_does_not_answer_a_keepalive_is_found_again(
    driver: ScheddDriver,
) -> None:
    driver.core.submit(SLEEP + "queue\n", "job.sub", "alice", 0.0)
    claim = run_job(driver, 100.0)
    driver.tick(110.0)
    ((_, alive),) = only(driver.tick(161.0), StartdKeepAlive)
    ready = driver.deliver(Undeliverable(alive, "UNAVAILABLE"), STARTD_PEER, 161.5)
    ((address, query),) = only(ready, CollectorQuery)
    assert (address, query.ad_type, query.constraint) == (
        COLLECTOR,
        "Machine",
        'Machine == "exec1"',
    )
    moved = QueryReply(query.corr, [ClassAd(MyAddress="<exec1:2>")])
    ready = driver.deliver(moved, Peer(COLLECTOR, d_peer()), 161.6)
    ((address, again),) = only(ready, StartdKeepAlive)
    assert (address, again.claim_ids) == ("exec1:2", [claim])
    assert driver.core.claims[claim].startd_address == "exec1:2"
    # a second failure is not looked up again (once per keepalive)
    ready = driver.deliver(Undeliverable(again, "UNAVAILABLE"), Peer("exec1:2", d_peer()), 162.0)
    assert ready.sends == [] and driver.stats["rpc_failures"] == 2


def test_job_exits_come_from_a_startd_only(driver: ScheddDriver) -> None:
    driver.core.submit(SLEEP + "queue\n", "job.sub", "alice", 0.0)
    claim = run_job(driver, 100.0)
    exit_ = JobExitRecord(claim, 1, 0, 102.0, 162.0, 0, "slot1@exec1", "schedd1", ME)
    msg = ScheddJobsExited("x1", "schedd1", [exit_])
    tool = Peer("", Principal(Role.SUBMIT, "alice"))
    ((refusal,),) = [[s.msg for s in driver.deliver(msg, tool, 162.0).sends]]
    assert isinstance(refusal, Undeliverable) and refusal.code == "PERMISSION_DENIED"
    assert driver.core.status()["running"] == 1
    ready = driver.deliver(msg, STARTD_PEER, 162.0)
    assert ready.sends[0].msg == JobsExitedAck("x1", 1)
    assert "job_completed" in kinds(ready)
    assert driver.stats["job_exits"] == 1


# --------------------------------------------------------------------------- clients

ALICE_TOKEN = Principal(Role.SUBMIT, "alice")


def test_a_submit_token_submits_as_its_own_user_only(driver: ScheddDriver) -> None:
    with pytest.raises(PermissionError, match="'alice' may not submit jobs as 'bob'"):
        driver.submit(0.0, ALICE_TOKEN, SLEEP + "queue\n", "job.sub", "bob")
    (cluster, n), ready = driver.submit(0.0, ALICE_TOKEN, SLEEP + "queue\n", "job.sub", "")
    assert (cluster, n) == (1, 1) and kinds(ready) == ["submit"]
    assert driver.core.jobs[(1, 0)].ad.get_value("Owner") == "alice"
    admin = Principal(Role.ADMIN, "root")
    driver.submit(1.0, admin, SLEEP + "queue\n", "job.sub", "bob")
    assert driver.core.jobs[(2, 0)].ad.get_value("Owner") == "bob"
    with pytest.raises(PermissionError, match="role 'read' may not submit"):
        driver.submit(2.0, Principal(Role.READ, "x"), SLEEP + "queue\n", "job.sub", "")
    assert driver.stats["submits"] == 2


def test_a_job_event_log_only_for_the_user_the_schedd_runs_as(tmp_path: Path) -> None:
    core = make(tmp_path / "schedd1.sqlite", 0.0, KNOBS)
    d = ScheddDriver(core, 0.0, pool_user="condor")
    logged = SLEEP + f"log = {tmp_path / 'job.log'}\nqueue\n"
    with pytest.raises(ValueError, match=r"runs as 'condor' .* not for 'alice'"):
        d.submit(0.0, ALICE_TOKEN, logged, "job.sub", "")
    d.submit(0.0, Principal(Role.SUBMIT, "condor"), logged, "job.sub", "")
    d.submit(0.0, Principal(Role.ADMIN, "root"), logged, "job.sub", "alice")
    assert len(core.jobs) == 2


def test_a_submit_token_acts_on_its_own_users_jobs_only(driver: ScheddDriver) -> None:
    admin = Principal(Role.ADMIN, "root")
    driver.submit(0.0, admin, SLEEP + "queue\n", "job.sub", "alice")  # 1.0
    driver.submit(0.0, admin, SLEEP + "queue\n", "job.sub", "bob")  # 2.0
    results, _ = driver.act(1.0, ALICE_TOKEN, "hold", ["1.0", "2.0"], "", "", "")
    assert [(r.job_id, r.ok) for r in results] == [("1.0", True), ("2.0", False)]
    assert driver.core.status()["held"] == 1
    results, _ = driver.act(2.0, admin, "hold", ["2.0"], "", "", "root")
    assert [r.ok for r in results] == [True]


def test_the_job_event_logs_to_append_are_handed_to_the_caller(tmp_path: Path) -> None:
    core = make(tmp_path / "schedd1.sqlite", 0.0, KNOBS)
    d = ScheddDriver(core, 0.0, pool_user="condor")
    path = str(tmp_path / "job.log")
    d.submit(0.0, Principal(Role.ADMIN, "root"), SLEEP + f"log = {path}\nqueue 2\n", "j.sub", "")
    texts, jobs = d.take_user_logs()
    assert list(texts) == [path] and jobs == {path: "1.0"}
    # HTCondor's SubmitEvent (000) for each job, the core writes no file itself
    assert texts[path].count("000 (001.00") == 2 and not (tmp_path / "job.log").exists()
    assert d.take_user_logs() == ({}, {})


def test_a_big_message_delivered_in_parts_sends_one_request_per_startd(
    driver: ScheddDriver,
) -> None:
    driver.core.submit(SLEEP + "queue 3\n", "job.sub", "alice", 0.0)
    sends = []
    for n in (1, 2, 3):  # (the live shell delivers a cycle's matches in turns)
        notice = MatchNotice(ALICE, 1, f"slot{n}@exec1", cid(n), STARTD)
        part = driver.deliver(ScheddMatches("m", "schedd1", 1, [notice]), NEGOTIATOR_PEER, 5.0)
        sends += [s for s in part.sends if not isinstance(s.msg, MatchesAck)]
    ((address, req),) = [(s.address, s.msg) for s in driver.merge_sends(sends)]
    assert address == STARTD and [c.claim_id for c in req.claims] == [cid(1), cid(2), cid(3)]
    # the merged request is the one the core waits for: its answer is taken
    outcomes = [
        ClaimOutcome(cid(n), True, claim_id=cid(n), slot_name=f"slot{n}@exec1") for n in (1, 2, 3)
    ]
    ready = driver.deliver(ScheddClaimResults(req.corr, "schedd1", outcomes), STARTD_PEER, 6.0)
    ((_, act),) = only(ready, StartdActivateClaims)
    assert len(act.activations) == 3


def test_the_periodic_policy_runs_in_tick_every_interval(tmp_path: Path) -> None:
    config = KNOBS + "PERIODIC_EXPR_INTERVAL = 60\nSYSTEM_PERIODIC_HOLD = JobStatus == 1\n"
    d = ScheddDriver(make(tmp_path / "schedd1.sqlite", 0.0, config), 0.0)
    d.core.submit(SLEEP + "queue\n", "job.sub", "alice", 0.0)
    d.tick(0.0)
    assert d.next_wakeup() == 60.0  # no collector: no ads; the policy's first round
    assert d.core.status()["held"] == 0
    ready = d.tick(60.0)
    assert d.core.status()["held"] == 1 and kinds(ready) == ["hold"]
    # the hold changed the queue: its ads' round SCHEDD_MIN_INTERVAL (5 s) later, then
    # the policy's next round (no claims: no keepalive look)
    wakes = []
    while (t := d.next_wakeup()) is not None and t <= 120.0:
        wakes.append(t)
        d.tick(t)
    assert wakes == [65.0, 120.0]
