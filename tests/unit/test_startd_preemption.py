"""The startd's side of preemption: the preempting claim id, RANK, eviction, retirement."""

from __future__ import annotations

import pytest

from mockpool.classad import ClassAd, parse_expr
from mockpool.config import parse_config
from mockpool.startd.grants import ClaimRefusedError, UnknownClaimError
from mockpool.startd.machine import Machine

ADDR = "127.0.0.1:9618"
OLD, NEW = "<127.0.0.1:7000>", "<127.0.0.1:7001>"
SLOT = "slot1@exec0001"
STATIC = "SLOT_TYPE_1 = cpus=1\nNUM_SLOTS_TYPE_1 = 1\nSLOT_TYPE_1_PARTITIONABLE = False\n"


def job(cluster: int, owner: str, duration: int = 1000, **attrs: object) -> ClassAd:
    ad = ClassAd(
        ClusterId=cluster,
        ProcId=0,
        Owner=owner,
        User=f"{owner}@mockpool",
        RequestCpus=1,
        RequestMemory=128,
        RequestDisk=1024,
        MockDuration=duration,
    )
    ad["Requirements"] = parse_expr("true")
    for k, v in attrs.items():
        ad[k] = v
    return ad


def capability(m: Machine, slot: str = SLOT) -> str:
    return next(a for a in m.private_ads() if a.eval("Name") == slot).eval("Capability")


def public(m: Machine, now: float, slot: str = SLOT) -> ClassAd:
    return next(a for a in m.public_ads(now) if a.eval("Name") == slot)


def running(config: str = "") -> tuple[Machine, str]:
    """A one-slot machine where bob's job 1.0 started at 0 (runs until 1000)."""
    m = Machine("exec0001", parse_config(STATIC + config, "test.conf"), ADDR, 1000, 0.0)
    g = m.request_claim(capability(m), SLOT, job(1, "bob"), "s_old", OLD, "bob@mockpool", 0.0)
    m.activate(g.claim_id, job(1, "bob"), 0.0)
    return m, g.claim_id


def preempt(m: Machine, now: float, owner: str = "alice", cluster: int = 2):
    return m.request_claim(
        capability(m), SLOT, job(cluster, owner), "s_new", NEW, f"{owner}@mockpool", now
    )


def test_claimed_slot_offers_a_preempting_id_not_its_claim():
    m, held = running()
    cap = capability(m)
    assert cap and cap != held
    assert m.holds(held) and not m.holds(cap)


def test_immediate_eviction_reports_the_job_and_hands_over_the_slot():
    m, held = running()
    cap = capability(m)
    g = preempt(m, 300.0)
    assert g.claim_id == cap and g.ready == 300.0 and g.preempts == held
    (ev,) = m.take_evicted()
    # the evicted job's claim ended with it: its schedd neither reuses nor releases it
    assert ev.claim_closing and ev.closed_by == "preempted by alice@mockpool (user priority)"
    assert m.take_taken_over() == []  # reported with its job, not again
    assert (ev.job_id, ev.claim_id, ev.start, ev.end, ev.schedd_address) == (
        "1.0",
        held,
        0.0,
        300.0,
        OLD,
    )
    assert ev.reason == "preempted by alice@mockpool (user priority)"
    assert not m.holds(held) and m.holds(cap)
    ad = public(m, 300.0)
    assert (ad.eval("State"), ad.eval("Activity"), ad.eval("RemoteOwner")) == (
        "Claimed",
        "Idle",
        "alice@mockpool",
    )
    assert capability(m) not in (cap, held)  # a fresh preempting id for the next one
    # the new claim runs its job; the old job's scheduled end is forgotten
    m.activate(cap, job(2, "alice", duration=50), 300.0)
    assert [r.job_id for r in m.advance(1000.0)] == ["2.0"]


def test_rank_preemption_is_named_and_a_lower_rank_is_refused():
    m, _ = running(
        'RANK = ifThenElse(TARGET.Owner == "carol", 10, ifThenElse(TARGET.Owner == "dan", -1, 0))\n'
    )
    with pytest.raises(
        ClaimRefusedError, match=r"RANK of job 3\.0 is -1, below the current claim's 0"
    ):
        preempt(m, 10.0, "dan", 3)
    assert m.take_evicted() == []  # nothing changed
    preempt(m, 10.0, "carol", 4)
    (ev,) = m.take_evicted()
    assert ev.reason == "preempted by carol@mockpool (startd RANK)"
    assert public(m, 10.0).eval("CurrentRank") == 10.0


def test_retirement_delays_the_eviction():
    # MAXJOBRETIREMENTTIME = 600: bob's job (started at 0) may run until 600
    m, held = running("MAXJOBRETIREMENTTIME = 600\n")
    assert public(m, 100.0).eval("RetirementTimeRemaining") == 500
    assert public(m, 100.0).eval("TotalJobRunTime") == 100  # PREEMPTION_RANK's default reads it
    g = preempt(m, 100.0)
    assert g.ready == 600.0 and m.take_evicted() == []
    ad = public(m, 100.0)
    assert (ad.eval("State"), ad.eval("Activity")) == ("Claimed", "Retiring")
    assert ad.eval("PreemptingAccountingGroup") == "alice@mockpool"
    assert capability(m) == ""  # nothing more to offer while a preemption waits
    with pytest.raises(ClaimRefusedError, match="still retiring its job until 600"):
        m.activate(g.claim_id, job(2, "alice"), 200.0)
    assert m.next_event_time() == 600.0
    assert m.advance(599.0) == []
    (ev,) = m.advance(600.0)
    assert (ev.job_id, ev.end, ev.reason) == (
        "1.0",
        600.0,
        "preempted by alice@mockpool (user priority)",
    )
    assert not m.holds(held)
    m.activate(g.claim_id, job(2, "alice"), 600.0)
    assert public(m, 600.0).eval("Activity") == "Busy"


def test_job_retirement_lowers_the_startds_and_job_that_ends_first_exits_normally():
    m = Machine(
        "exec0001", parse_config(STATIC + "MAXJOBRETIREMENTTIME = 600\n", "t"), ADDR, 1000, 0.0
    )
    g = m.request_claim(capability(m), SLOT, job(1, "bob"), "s_old", OLD, "bob@mockpool", 0.0)
    m.activate(g.claim_id, job(1, "bob", MaxJobRetirementTime=200), 0.0)
    assert preempt(m, 50.0).ready == 200.0
    m2 = Machine(
        "exec0001", parse_config(STATIC + "MAXJOBRETIREMENTTIME = 600\n", "t"), ADDR, 1000, 0.0
    )
    g = m2.request_claim(capability(m2), SLOT, job(1, "bob"), "s_old", OLD, "bob@mockpool", 0.0)
    m2.activate(g.claim_id, job(1, "bob", duration=300), 0.0)
    new = preempt(m2, 50.0)
    assert new.ready == 300.0
    (ex,) = m2.advance(300.0)
    assert (ex.job_id, ex.reason) == ("1.0", "")  # completed, not evicted
    # but its claim ended with it: alice's preempting claim has the slot
    assert ex.claim_closing and ex.closed_by == "preempted by alice@mockpool (retired)"
    assert not m2.holds(g.claim_id) and m2.take_taken_over() == []
    assert m2.holds(new.claim_id) and public(m2, 300.0).eval("RemoteOwner") == "alice@mockpool"


def test_releases_during_retirement():
    m, held = running("MAXJOBRETIREMENTTIME = 600\n")
    g = preempt(m, 100.0)
    rel = m.release(g.claim_id, 150.0)  # the new schedd gives up: bob's job stops retiring
    assert rel.killed_job is None and m.holds(held)
    assert public(m, 150.0).eval("Activity") == "Busy" and capability(m)
    assert m.advance(600.0) == [] and [r.job_id for r in m.advance(1000.0)] == ["1.0"]
    m, held = running("MAXJOBRETIREMENTTIME = 600\n")
    g = preempt(m, 100.0)
    rel = m.release(held, 150.0)  # the old schedd lets go: alice gets the slot now
    assert rel.killed_job == "1.0" and m.take_evicted() == []
    assert m.take_taken_over() == []  # its release is the end of the old claim
    assert m.holds(g.claim_id) and not m.holds(held)
    m.activate(g.claim_id, job(2, "alice"), 150.0)


def test_each_claim_of_a_retiring_slot_names_its_own_holder():
    # The startd's service checks a caller against the holder of the claim it names: the
    # preempting claim is the new schedd's, the retiring one the old schedd's.
    m, held = running("MAXJOBRETIREMENTTIME = 600\n")
    g = preempt(m, 100.0)
    assert m.claim(held).schedd_name == "s_old"
    assert m.claim(g.claim_id).schedd_name == "s_new"
    m.release(held, 150.0)
    assert m.claim(g.claim_id).schedd_name == "s_new"


def test_an_idle_claim_preempted_is_reported_ended_on_its_own():
    # bob's claim runs no job: alice's preempting claim takes the slot at once, and the
    # end of bob's claim is reported alone (no job to evict)
    m = Machine("exec0001", parse_config(STATIC, "test.conf"), ADDR, 1000, 0.0)
    held = m.request_claim(
        capability(m), SLOT, job(1, "bob"), "s_old", OLD, "bob@mockpool", 0.0
    ).claim_id
    g = preempt(m, 40.0)
    assert g.preempts == held and g.ready == 40.0 and m.take_evicted() == []
    assert m.take_taken_over() == [(SLOT, held, "preempted by alice@mockpool (user priority)")]
    assert m.take_taken_over() == []
    assert not m.holds(held) and m.holds(g.claim_id)


def test_spent_preempting_id_is_refused():
    m, _ = running()
    cap = capability(m)
    preempt(m, 10.0)
    with pytest.raises(ClaimRefusedError, match="already claimed"):
        m.request_claim(cap, SLOT, job(5, "eve"), "s3", "<127.0.0.1:7003>", "eve@mockpool", 20.0)
    with pytest.raises(UnknownClaimError):
        m.request_claim(
            cap + "x", SLOT, job(5, "eve"), "s3", "<127.0.0.1:7003>", "eve@mockpool", 20.0
        )


def test_dynamic_slot_is_preempted_in_place():
    m = Machine("exec0001", parse_config("NUM_CPUS = 2\n", "t"), ADDR, 1000, 0.0)
    pslot_id = capability(m, SLOT)  # no consumption policy: the p-slot offers its Capability
    g = m.request_claim(pslot_id, SLOT, job(1, "bob"), "s_old", OLD, "bob@mockpool", 0.0)
    m.activate(g.claim_id, job(1, "bob"), 0.0)
    d = g.slot_name
    g2 = m.request_claim(capability(m, d), d, job(2, "alice"), "s_new", NEW, "alice@mockpool", 5.0)
    assert g2.slot_name == d and [e.job_id for e in m.take_evicted()] == ["1.0"]
    assert public(m, 5.0, d).eval("RemoteOwner") == "alice@mockpool"


def test_boolean_rank_counts_as_one():
    # RANK = TARGET.Owner == "carol" is true (1) for carol: above CurrentRank 0
    m, _ = running('RANK = TARGET.Owner == "carol"\n')
    assert public(m, 0.0).eval("CurrentRank") == 0.0
    preempt(m, 10.0, "carol", 4)
    (ev,) = m.take_evicted()
    assert ev.reason == "preempted by carol@mockpool (startd RANK)"
    assert public(m, 10.0).eval("CurrentRank") == 1.0


def test_lease_of_a_retiring_claim_expires_and_the_preempting_claim_takes_over():
    # no JobLeaseDuration: leases are MAX_CLAIM_ALIVES_MISSED 1 x ALIVE_INTERVAL 100
    m, held = running(
        "MAXJOBRETIREMENTTIME = 600\nMAX_CLAIM_ALIVES_MISSED = 1\nALIVE_INTERVAL = 100\n"
    )
    new = preempt(m, 50.0).claim_id  # bob's job may retire until 600
    assert m.keepalive([new], 90.0) == []  # only the new claim's schedd is still heard
    assert m.next_wakeup() == 100  # the old claim: last heard at its activation, 0
    (x,) = m.tick(100.0).expired
    assert (x.claim_id, x.killed_job, x.schedd_name) == (held, "1.0", "s_old")
    ad = public(m, 100.0)
    assert (ad.eval("State"), ad.eval("Activity"), ad.eval("RemoteOwner")) == (
        "Claimed",
        "Idle",
        "alice@mockpool",
    )
    assert m.next_wakeup() == 190  # the new claim: heard at 90
    (y,) = m.tick(190.0).expired
    assert (y.claim_id, y.killed_job) == (new, None)
    assert public(m, 190.0).eval("State") == "Unclaimed"
