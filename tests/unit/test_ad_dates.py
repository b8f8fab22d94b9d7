"""Dates in every daemon's ads are Unix times, as HTCondor's: the pool's date of pool time
0 (``ad_epoch``) plus pool seconds; time() and CurrentTime in the ads' expressions count
from the same date. One test per ad builder (schedd, startd, collector, negotiator), the
numbers worked out by hand from the pool times passed in."""

from __future__ import annotations

from pathlib import Path

import pytest
from builders.cores import job_ad, job_request, start_job, static_pool, v

from mockpool.classad import ClassAd, parse_expr
from mockpool.collector.collector import Collector
from mockpool.config import parse_config
from mockpool.negotiator.cycle import negotiate
from mockpool.negotiator.negotiator import Negotiator
from mockpool.schedd.queue import JobQueue
from mockpool.schedd.records import JobExit
from mockpool.schedd.schedd import Schedd
from mockpool.startd.grants import ClaimRefusedError
from mockpool.startd.machine import Machine

E = 1_767_225_600  # 2026-01-01 00:00:00 UTC: the pool's date of pool time 0
SLEEP = "executable = /bin/sleep\narguments = 60\n"


def test_schedd_job_and_daemon_ads_carry_dates_and_its_policy_sees_them(tmp_path: Path) -> None:
    s = Schedd("schedd1", JobQueue(tmp_path / "q.sqlite"), parse_config("", "<t>"), 5.0, ad_epoch=E)
    s.submit(SLEEP + "periodic_hold = time() - QDate > 100\nqueue 2\n", "a.sub", "alice", 10.0)
    ad = job_ad(s, "1.1")
    assert v(ad, "QDate") == E + 10 and v(ad, "EnteredCurrentStatus") == E + 10
    assert v(ad, "GlobalJobId") == f"schedd1#1.1#{E + 10}"  # HTCondor's: a Unix QDate
    claim = start_job(s, "1.0", 1, 30.0)
    ad = job_ad(s, "1.0")
    for attr in ("JobStartDate", "JobCurrentStartDate", "LastMatchTime", "EnteredCurrentStatus"):
        assert v(ad, attr) == E + 30, attr
    s.on_job_exits([JobExit(claim, 1, 0, 30.0, 90.0, slot_name="slot1@exec1")], 90.0)
    (done,) = s.history()
    assert v(done, "CompletionDate") == E + 90 and v(done, "RemoteWallClockTime") == 60.0
    # time() - QDate: 100 at pool time 110 (not > 100), 101 at 111 -> held
    assert s.policy_round([(1, 1)], 110.0) is None
    assert s.policy_round([(1, 1)], 111.0) is not None
    assert v(job_ad(s, "1.1"), "EnteredCurrentStatus") == E + 111
    # constraints see the date too
    assert len(s.query(f"QDate == {E + 10} && time() == {E + 200}", now=200.0)) == 1
    sad = s.schedd_ad(200.0)
    assert (v(sad, "DaemonStartTime"), v(sad, "MyCurrentTime")) == (E + 5, E + 200)
    assert v(sad, "JobQueueBirthdate") == E  # the queue file was made at pool time 0
    (sub,) = s.submitter_ads(200.0)
    assert v(sub, "MyCurrentTime") == E + 200


def test_startd_slot_ads_carry_dates_and_start_sees_them() -> None:
    cfg = parse_config("START = time() >= DaemonStartTime + 100\n", "test.conf")
    # its startd began at pool time 20: the birthday (a date) is the host's to give
    m = Machine("exec1", cfg, "127.0.0.1:9618", E + 20, 20.0, ad_epoch=E)
    (ad,) = m.public_ads(50.0)
    assert v(ad, "DaemonStartTime") == E + 20 and v(ad, "MyCurrentTime") == E + 50
    assert v(ad, "EnteredCurrentState") == E + 20 and v(ad, "EnteredCurrentActivity") == E + 20
    (priv,) = m.private_ads()
    cid = priv.eval("Capability")
    job = ClassAd(ClusterId=1, ProcId=0, Owner="alice", User="alice@mockpool", RequestCpus=1)
    job["RequestMemory"], job["RequestDisk"], job["MockDuration"] = 128, 1024, 60
    job["Requirements"] = parse_expr("true")
    with pytest.raises(ClaimRefusedError, match="START is not true"):  # 99 s after it began
        m.request_claim(cid, "slot1@exec1", job, "schedd1", "<127.0.0.1:7000>", "alice", 119.0)
    grant = m.request_claim(cid, "slot1@exec1", job, "schedd1", "<127.0.0.1:7000>", "alice", 120.0)
    m.activate(grant.claim_id, job, 125.0)
    ad = next(a for a in m.public_ads(130.0) if a.eval("Name") == grant.slot_name)
    assert v(ad, "EnteredCurrentState") == E + 120 and v(ad, "EnteredCurrentActivity") == E + 125
    assert v(ad, "ClaimStartTime") == E + 120 and v(ad, "JobStart") == E + 125
    assert v(ad, "MyCurrentTime") == E + 130


def test_collector_stamps_dates_and_expires_by_pool_seconds() -> None:
    c = Collector(parse_config("CLASSAD_LIFETIME = 900\n", "<t>"), ad_epoch=E)
    c.start(5.0, "cm", "127.0.0.1:9618")
    (own,) = c.store.query("Collector", now=5.0)
    assert v(own, "DaemonStartTime") == E + 5 and v(own, "LastHeardFrom") == E + 5
    ad = ClassAd(MyType="Scheduler", Name="schedd1")
    c.store.update("Scheduler", ad, 7.0)
    (got,) = c.store.query("Scheduler", f"LastHeardFrom == {E + 7} && time() == {E + 10}", now=10.0)
    assert v(got, "LastHeardFrom") == E + 7
    # the collector's own ad, heard at 5, goes at 907; the schedd's, heard at 7, stays
    assert c.store.expire(907.0) == [("Collector", "cm")]
    assert c.store.expire(908.0) == [("Scheduler", "schedd1")]  # 901 s unheard > 900


def test_negotiator_ads_carry_dates_and_its_cycle_evaluates_at_the_date(tmp_path: Path) -> None:
    cfg = parse_config("", "test.conf").for_subsystem("NEGOTIATOR")
    n = Negotiator("negotiator", cfg, tmp_path, log_base_wall=E)
    n.started(3.0)
    pool = static_pool(2)
    for slot in pool.slots:  # open 100 pool seconds after pool time 0
        slot["Start"] = parse_expr(f"time() >= {E + 100} && CurrentTime >= {E + 100}")
    alice = "alice@mockpool"
    early = negotiate(pool, [job_request(alice, 2)], n.accountant, n.cycle_config, 99.0)
    assert early.matches == []
    n.computing()
    result = negotiate(
        pool,
        [job_request(alice, 2)],
        n.accountant,
        n.cycle_config,
        100.0,
        finish=False,
        ad_epoch=n.ad_epoch,
    )
    assert len(result.matches) == 2
    n.computed(result)
    n.finish_cycle(result, 100.0, 102.0, 0.0, failed=set())
    ad = n.negotiator_ad("127.0.0.1:9000", 110.0)
    assert (v(ad, "DaemonStartTime"), v(ad, "MyCurrentTime")) == (E + 3, E + 110)
    assert v(ad, "LastNegotiationCycleTime0") == E + 100
    assert v(ad, "LastNegotiationCycleEnd0") == E + 102
    assert v(ad, "LastNegotiationCycleDuration0") == 2.0  # a length, not a date
    acct = {a.eval("Name"): a for a in n.accounting_ads()}
    assert v(acct[alice], "LastUpdate") == E + 100
    assert v(acct[alice], "BeginUsageTime") == E + 100  # matched at 100: usage begins
