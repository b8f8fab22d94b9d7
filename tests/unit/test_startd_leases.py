"""Claim leases in the startd core: deadlines, expiry, and what an expired claim frees."""

from __future__ import annotations

from builders.cores import startd_job

from mockpool.classad import ClassAd
from mockpool.config import parse_config
from mockpool.startd.machine import LEASE_EXPIRED, Machine

ADDR = "127.0.0.1:9618"
SCHEDD = "<127.0.0.1:7000>"
PSLOT = "NUM_CPUS = 4\nMEMORY = 8192\n"
STATIC = "NUM_CPUS = 2\nSLOT_TYPE_0_PARTITIONABLE = False\n"


def machine(text: str) -> Machine:
    return Machine("exec0001", parse_config(text, "test.conf"), ADDR, 1000, 0.0)


def capability(m: Machine, slot: str) -> str:
    return next(a for a in m.private_ads() if a.eval("Name") == slot).eval("Capability")


def state(m: Machine, slot: str, now: float) -> ClassAd:
    return next(a for a in m.public_ads(now) if a.eval("Name") == slot)


def claim(m: Machine, slot: str, j: ClassAd, now: float) -> str:
    cid = capability(m, slot)
    return m.request_claim(cid, slot, j, "schedd0", SCHEDD, "alice@mockpool", now).claim_id


def test_the_log_line_is_htcondors() -> None:
    assert LEASE_EXPIRED == "claim lease expired (condor_schedd gone?)"


def test_dynamic_slot_lease_expires_a_lease_after_the_last_keepalive() -> None:
    m = machine(PSLOT)
    cid = claim(m, "slot1@exec0001", startd_job(lease=600), now=0)
    m.activate(cid, startd_job(lease=600), now=100)  # job would end at 3700
    assert m.keepalive([cid], now=300) == []
    # heard from at 300, lease 600: deadline 900, before the job's end at 3700
    assert m.next_lease_deadline() == 900 and m.next_wakeup() == 900
    assert m.tick(899).expired == []
    tick = m.tick(905)
    assert tick.exits == []  # the schedd is presumed gone: no exit record
    (x,) = tick.expired
    assert (x.slot_name, x.killed_job, x.deadline, x.schedd_name) == (
        "slot1_1@exec0001",
        "1.0",
        900,
        "schedd0",
    )
    # the dynamic slot is gone and its cpu is back in the parent
    assert m.take_removed() == ["slot1_1@exec0001"]
    parent = state(m, "slot1@exec0001", 905)
    assert (parent.eval("Cpus"), parent.eval("Memory"), parent.eval("NumDynamicSlots")) == (
        4,
        8192,
        0,
    )
    assert x.slot_ad.eval("Cpus") == 4
    # nothing more is due, and the schedd's next keepalive finds the claim unknown
    assert m.next_wakeup() is None and m.tick(5000).expired == []
    assert m.keepalive([cid], now=910) == [cid]


def test_default_lease_is_max_claim_alives_missed_times_alive_interval() -> None:
    m = machine(STATIC + "MAX_CLAIM_ALIVES_MISSED = 2\nALIVE_INTERVAL = 60\n")
    cid = claim(m, "slot1@exec0001", startd_job(lease=None), now=10)
    assert m.claim(cid).lease_duration == 120  # 2 x 60
    assert m.next_wakeup() == 130
    assert m.tick(129).expired == []
    (x,) = m.tick(200).expired  # the shell woke late: the slot is freed as of the deadline
    assert x.killed_job is None and x.deadline == 130
    ad = state(m, "slot1@exec0001", 200)
    assert (ad.eval("State"), ad.eval("EnteredCurrentState")) == ("Unclaimed", 130)
    assert capability(m, "slot1@exec0001") != cid  # a fresh id is offered


def test_job_that_ends_before_the_lease_exits_normally_then_the_idle_claim_expires() -> None:
    m = machine(STATIC)
    cid = claim(m, "slot2@exec0001", startd_job(duration=100, lease=600), now=0)
    m.activate(cid, startd_job(duration=100, lease=600), now=0)
    assert m.next_wakeup() == 100
    tick = m.tick(700)
    assert [(e.job_id, e.end) for e in tick.exits] == [("1.0", 100)]
    (x,) = tick.expired
    assert (x.killed_job, x.deadline) == (None, 600)  # last heard at activation, 0


def test_keepalives_keep_a_claim_for_ever_and_only_its_own_ids_count() -> None:
    m = machine(STATIC)
    a = claim(m, "slot1@exec0001", startd_job(lease=300), now=0)
    b = claim(m, "slot2@exec0001", startd_job(proc=1, lease=900), now=0)
    for t in range(100, 1000, 100):
        m.keepalive([a], now=t)
    assert m.tick(950).expired[0].claim_id == b  # b: 0 + 900
    assert m.next_lease_deadline() == 900 + 300  # a: last heard at 900
    assert m.tick(1199).expired == []
    assert [x.claim_id for x in m.tick(1200).expired] == [a]


def test_keepalive_interval_of_an_expired_lease() -> None:
    m = machine(STATIC + "ALIVE_INTERVAL = 120\n")
    claim(m, "slot1@exec0001", startd_job(lease=300), now=0)
    claim(m, "slot2@exec0001", startd_job(proc=1, lease=20), now=0)
    short, long_ = m.tick(300).expired
    assert short.keepalive_interval == 10  # 20 / 3 is under the 10 s floor
    assert long_.keepalive_interval == 100  # min(120, 300 / 3)


# ------------------------------------------------------------------ MATCH_TIMEOUT


def _static_machine(timeout: int = 120) -> Machine:
    cfg = parse_config(
        f"NUM_CPUS = 2\nNUM_SLOTS_TYPE_1 = 2\nSLOT_TYPE_1 = cpus=1\nMATCH_TIMEOUT = {timeout}",
        "<test>",
    )
    return Machine("exec1", cfg, "127.0.0.1:9", 100, 0.0)


def test_a_slot_the_negotiator_reports_matched_waits_match_timeout_then_is_unclaimed() -> None:
    """NEGOTIATOR_INFORM_STARTD: slot1's id reported at 10 -> Matched; never claimed, it is
    Unclaimed again at 10 + 120 = 130 with the same id (claim.cpp match_timed_out)."""
    m = _static_machine()
    slot1 = m.slot("slot1@exec1")
    cid = slot1.claim_id
    assert m.match_info([cid, "<bogus>#1#1#x"], 10.0) == ["<bogus>#1#1#x"]
    assert slot1.state == "Matched" and m.next_wakeup() == 130.0
    assert m.tick(129.9).unmatched == []
    assert m.tick(130.0).unmatched == ["slot1@exec1"]
    assert (slot1.state, slot1.claim_id, slot1.entered_state) == ("Unclaimed", cid, 130.0)
    assert m.next_wakeup() is None


def test_a_matched_slot_claimed_in_time_stays_claimed() -> None:
    m = _static_machine(timeout=60)
    slot = m.slot("slot2@exec1")
    cid = slot.claim_id
    m.match_info([cid], 0.0)
    m.request_claim(cid, slot.name, startd_job(), "schedd1", "127.0.0.1:1", "alice@x", 30.0)
    assert slot.state == "Claimed"
    assert m.tick(61.0).unmatched == []
    # a claimed (or preempting) id is not Matched again
    assert m.match_info([cid], 62.0) == [cid]
