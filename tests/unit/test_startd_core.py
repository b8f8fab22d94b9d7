"""The startd's core for many machines (host.StartdCore), with no shell: routing, the
claim index, who may use a claim, the job-exit schedule and the events it owes."""

from __future__ import annotations

import pytest
from builders.cores import startd_job

from mockpool.auth import Principal, Role
from mockpool.classad import ClassAd
from mockpool.config import ConfigError, parse_config
from mockpool.startd.core import StartdCore
from mockpool.startd.grants import ClaimRefusedError, StartdError

ADDR = "127.0.0.1:9618"
SCHEDD = "<127.0.0.1:7000>"
STATIC = "NUM_CPUS = 2\nSLOT_TYPE_0_PARTITIONABLE = False\n"
SCHEDD0 = Principal(Role.DAEMON, "schedd/schedd0")
OTHER = Principal(Role.DAEMON, "schedd/schedd1")


def host(*names: str) -> StartdCore:
    cfg = parse_config(STATIC, "test.conf")
    h = StartdCore([(n, cfg) for n in names])
    h.build(ADDR, 0.0, lambda _name: None)
    return h


def capability(h: StartdCore, slot: str) -> str:
    m = h.machine_for_slot(slot)
    return next(a for a in m.private_ads() if a.eval("Name") == slot).eval("Capability")


def claim(h: StartdCore, slot: str, j: ClassAd, now: float) -> str:
    grant = h.request_claim(
        capability(h, slot), slot, j, "schedd0", SCHEDD, "alice@mockpool", SCHEDD0, now
    )
    return grant.claim_id


def test_a_machine_name_twice_is_refused_before_anything_is_built() -> None:
    cfg = parse_config(STATIC, "test.conf")
    with pytest.raises(ConfigError, match=r"exec1.*twice"):
        StartdCore([("exec1", cfg), ("exec1", cfg)])


def test_slots_route_by_machine_and_unknown_slots_are_refused() -> None:
    h = host("exec1", "exec2")
    assert h.machine_for_slot("slot2@exec2").name == "exec2"
    with pytest.raises(StartdError, match="no slot 'slot1@exec9'"):
        h.machine_for_slot("slot1@exec9")


def test_a_claim_is_used_only_by_the_schedd_that_holds_it() -> None:
    h = host("exec1")
    cid = claim(h, "slot1@exec1", startd_job(0, 100), 0.0)
    assert h.claims_held == 1
    with pytest.raises(ClaimRefusedError, match="held by schedd 'schedd0'"):
        h.activate(cid, startd_job(0, 100), OTHER, 1.0)
    assert h.stats["activations_refused"] == 1
    # a keepalive from another schedd renews nothing and is told the claim is unknown
    assert h.keep_alive([cid, "<nowhere>#1#1#x"], OTHER, 2.0) == [cid, "<nowhere>#1#1#x"]
    assert h.keep_alive([cid], SCHEDD0, 2.0) == []
    with pytest.raises(ClaimRefusedError, match="may not request claims"):
        h.request_claim(
            capability(h, "slot2@exec1"),
            "slot2@exec1",
            startd_job(1, 1),
            "schedd0",
            SCHEDD,
            "a",
            OTHER,
            3,
        )
    assert h.stats["claims_refused"] == 1


def test_job_ends_are_scheduled_and_reported_in_end_order_with_their_events() -> None:
    """Two jobs on two machines, of 300 and 100 pool seconds from 10: nothing is due at
    109; at 400 both end, the shorter first; the host next wakes at the lease deadline."""
    h = host("exec1", "exec2")
    a = claim(h, "slot1@exec1", startd_job(0, 300), 0.0)
    b = claim(h, "slot1@exec2", startd_job(1, 100), 0.0)
    assert h.next_wakeup() == 600.0  # the claims' lease (JobLeaseDuration 600)
    h.activate(a, startd_job(0, 300), SCHEDD0, 10.0)
    h.activate(b, startd_job(1, 100), SCHEDD0, 10.0)
    assert h.next_wakeup() == 110.0
    h.drain_events()
    assert h.finish_jobs(109.0) == []
    exits = h.finish_jobs(400.0)
    assert [(e.job_id, e.end) for e in exits] == [("1.1", 110.0), ("1.0", 310.0)]
    events = h.drain_events()
    assert [(d, k, f["job"]) for d, k, f in events] == [
        ("exec2", "job_exit", "1.1"),
        ("exec1", "job_exit", "1.0"),
    ]
    assert h.stats["job_exits"] == 2
    assert h.changed == {"exec1", "exec2"}
    assert h.next_wakeup() is not None and h.next_wakeup() > 400.0


def test_job_ends_come_a_few_machines_at_a_time_earliest_due_first() -> None:
    """The shell ends the jobs of at most ``limit`` machines a turn: both jobs are due by
    400, exec2's (110) first; exec1's (310) stays due for the next call."""
    h = host("exec1", "exec2")
    a = claim(h, "slot1@exec1", startd_job(0, 300), 0.0)
    b = claim(h, "slot1@exec2", startd_job(1, 100), 0.0)
    h.activate(a, startd_job(0, 300), SCHEDD0, 10.0)
    h.activate(b, startd_job(1, 100), SCHEDD0, 10.0)
    assert [(e.job_id, e.end) for e in h.finish_jobs(400.0, limit=1)] == [("1.1", 110.0)]
    assert h.next_wakeup() == 310.0
    assert [(e.job_id, e.end) for e in h.finish_jobs(400.0, limit=1)] == [("1.0", 310.0)]
    assert h.finish_jobs(400.0, limit=1) == [] and h.stats["job_exits"] == 2


def test_a_lease_not_renewed_expires_and_the_claim_leaves_the_index() -> None:
    h = host("exec1")
    cid = claim(h, "slot1@exec1", startd_job(0, 10_000, lease=60), 0.0)
    h.activate(cid, startd_job(0, 10_000, lease=60), SCHEDD0, 0.0)
    h.keep_alive([cid], SCHEDD0, 50.0)  # renewed to 110
    h.finish_jobs(100.0)
    assert h.claims_held == 1
    h.finish_jobs(111.0)
    assert h.claims_held == 0 and h.stats["leases_expired"] == 1
    kinds = [k for _, k, _ in h.drain_events()]
    assert kinds[-1] == "lease_expired"
    with pytest.raises(StartdError, match="not held at this startd"):
        h.release(cid, SCHEDD0, 112.0)


def test_a_preemption_is_a_claim_naming_the_one_it_takes_over_then_that_ones_end() -> None:
    # PREEMPTION by bob of alice's claim on slot1: with a job, the job is evicted and its
    # claim released (closing: its schedd will not release it); without one, the claim's
    # release comes at once, before bob's claim
    h = host("exec1")
    bob = Principal(Role.DAEMON, "schedd/schedd1")
    running = claim(h, "slot1@exec1", startd_job(0, 300), 0.0)
    h.activate(running, startd_job(0, 300), SCHEDD0, 0.0)
    idle = claim(h, "slot2@exec1", startd_job(1, 300), 0.0)
    h.drain_events()
    for slot, j in (("slot1@exec1", 2), ("slot2@exec1", 3)):
        h.request_claim(
            capability(h, slot),
            slot,
            startd_job(j, 50),
            "schedd1",
            SCHEDD,
            "bob@mockpool",
            bob,
            10.0,
        )
    exits = h.finish_jobs(10.0)
    assert [(e.job_id, e.claim_closing) for e in exits] == [("1.0", True)]
    events = [
        (k, f["slot"], f["claim"], f.get("preempts"), f.get("reason"))
        for _, k, f in h.drain_events()
    ]
    why = "preempted by bob@mockpool (user priority)"
    assert [(k, slot, r) for k, slot, _, _, r in events] == [
        ("claim", "slot1@exec1", None),
        ("release", "slot2@exec1", why),
        ("claim", "slot2@exec1", None),
        ("job_evicted", "slot1@exec1", why),
        ("release", "slot1@exec1", why),
    ]
    claims = {slot: p for k, slot, _, p, _ in events if k == "claim"}
    ended = {slot: c for k, slot, c, _, _ in events if k == "release"}
    assert claims == ended  # each preempting claim names the claim whose end follows
    # alice's claims are no longer held here
    assert h.keep_alive([running, idle], SCHEDD0, 11.0) == [running, idle]
