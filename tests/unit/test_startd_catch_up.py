"""A startd given time after a long gap (a pause): claims whose lease ran out meanwhile
end at their deadline first (``lease_expired``, their jobs killed), and only the jobs that
ended no later than their claim's deadline exit. Numbers worked by hand: lease 300."""

from __future__ import annotations

from builders.cores import startd_job

from mockpool.auth import Principal, Role
from mockpool.classad import ClassAd
from mockpool.config import parse_config
from mockpool.startd.core import StartdCore
from mockpool.startd.machine import Machine

ADDR = "127.0.0.1:9618"
SCHEDD = "<127.0.0.1:7000>"
STATIC = "NUM_CPUS = 2\nSLOT_TYPE_0_PARTITIONABLE = False\n"
PSLOT = "NUM_CPUS = 4\nMEMORY = 8192\n"
SCHEDD0 = Principal(Role.DAEMON, "schedd/schedd0")
LEASE = 300


def machine(text: str = STATIC) -> Machine:
    return Machine("exec0001", parse_config(text, "test.conf"), ADDR, 1000, 0.0)


def capability(m: Machine, slot: str) -> str:
    return next(a for a in m.private_ads() if a.eval("Name") == slot).eval("Capability")


def state(m: Machine, slot: str, now: float) -> ClassAd:
    return next(a for a in m.public_ads(now) if a.eval("Name") == slot)


def run(m: Machine, slot: str, proc: int, duration: int, start: float) -> str:
    """Claim ``slot`` and start job 1.``proc`` for ``duration`` at ``start``; its claim."""
    job = startd_job(proc, duration, lease=LEASE)
    cid = m.request_claim(
        capability(m, slot), slot, job, "schedd0", SCHEDD, "alice@mockpool", start
    ).claim_id
    m.activate(cid, job, start)
    return cid


def test_a_job_planned_past_its_lease_deadline_is_killed_then_and_never_exits() -> None:
    """Started at 0 for 450 s; last keepalive at 100, so the lease runs out at 400. The
    core is next given time at 1000: the claim ends at 400 (lease_expired, job 1.0
    killed) and no exit is reported for the end planned at 450."""
    m = machine()
    cid = run(m, "slot1@exec0001", 0, 450, 0.0)
    assert m.keepalive([cid], 100.0) == []
    assert m.next_wakeup() == 400.0  # the deadline comes before the job's end
    tick = m.tick(1000.0)
    assert tick.exits == []
    (x,) = tick.expired
    assert (x.claim_id, x.deadline, x.killed_job) == (cid, 400.0, "1.0")
    # the slot was freed as of the deadline, not when the core caught up
    ad = state(m, "slot1@exec0001", 1000.0)
    assert (ad.eval("State"), ad.eval("EnteredCurrentState")) == ("Unclaimed", 400)
    assert m.next_wakeup() is None and m.tick(2000.0).exits == []


def test_a_job_that_ended_before_its_deadline_exits_and_its_idle_claim_expires() -> None:
    """Two slots, both last heard at 100 (deadline 400): slot1's job ends at 350, before
    the deadline, and exits normally; slot2's job, planned for 450, is killed at 400.
    Both claims end at 400."""
    m = machine()
    short = run(m, "slot1@exec0001", 0, 350, 0.0)
    long = run(m, "slot2@exec0001", 1, 450, 0.0)
    assert m.keepalive([short, long], 100.0) == []
    tick = m.tick(1000.0)
    assert [(e.claim_id, e.job_id, e.end, e.claim_closing) for e in tick.exits] == [
        (short, "1.0", 350.0, False)
    ]
    assert sorted((x.claim_id, x.deadline, x.killed_job) for x in tick.expired) == sorted(
        [(short, 400.0, None), (long, 400.0, "1.1")]
    )


def test_a_job_ending_exactly_at_its_deadline_exits() -> None:
    """Job end 400 = last heard 100 + lease 300: it ends before the lease runs out."""
    m = machine()
    cid = run(m, "slot1@exec0001", 0, 400, 0.0)
    m.keepalive([cid], 100.0)
    tick = m.tick(1000.0)
    assert [(e.job_id, e.end) for e in tick.exits] == [("1.0", 400.0)]
    assert [(x.deadline, x.killed_job) for x in tick.expired] == [(400.0, None)]


def test_each_claim_is_judged_by_its_own_deadline_in_time_order() -> None:
    """A partitionable slot: claim A heard at 100 (deadline 400), claim B heard at 250
    (deadline 550). A's job (planned 0..450) is killed at 400; B's (planned 0..500) ends
    at 500, inside its lease, and exits; B's idle claim expires at 550. The cpus are all
    back in the parent by then."""
    m = machine(PSLOT)
    a = run(m, "slot1@exec0001", 0, 450, 0.0)
    b = run(m, "slot1@exec0001", 1, 500, 0.0)
    m.keepalive([a, b], 100.0)
    m.keepalive([b], 250.0)
    tick = m.tick(1000.0)
    assert [(e.claim_id, e.end) for e in tick.exits] == [(b, 500.0)]
    assert [(x.claim_id, x.deadline, x.killed_job) for x in tick.expired] == [
        (a, 400.0, "1.0"),
        (b, 550.0, None),
    ]
    parent = state(m, "slot1@exec0001", 1000.0)
    assert (parent.eval("Cpus"), parent.eval("NumDynamicSlots")) == (4, 0)


def test_the_hosts_events_are_dated_when_they_happened_not_when_found() -> None:
    """The host behind the shell, woken at 1000 after a gap: the lease_expired event is
    dated at its deadline (400) and an exit at the job's end (350), so a log sorted by
    time reads the claim ended before anything the schedd did after giving up on it."""
    h = StartdCore([("exec1", parse_config(STATIC, "test.conf"))])
    h.build(ADDR, 0.0, lambda _name: None)
    m = h.machine_for_slot("slot1@exec1")
    cids = []
    for proc, (slot, duration) in enumerate([("slot1@exec1", 350), ("slot2@exec1", 450)]):
        job = startd_job(proc, duration, lease=LEASE)
        cid = h.request_claim(
            capability(m, slot), slot, job, "schedd0", SCHEDD, "alice@mockpool", SCHEDD0, 0.0
        ).claim_id
        h.activate(cid, job, SCHEDD0, 0.0)
        cids.append(cid)
    assert h.keep_alive(cids, SCHEDD0, 100.0) == []
    h.drain_events()
    exits = h.finish_jobs(1000.0)
    assert [(e.job_id, e.end) for e in exits] == [("1.0", 350.0)]
    dated = sorted((f["t"], k, f.get("job", "")) for _, k, f in h.drain_events())
    assert dated == [
        (350.0, "job_exit", "1.0"),
        (400.0, "lease_expired", ""),
        (400.0, "lease_expired", "1.1"),
    ]
    assert h.stats["jobs_killed"] == 1 and h.claims_held == 0
