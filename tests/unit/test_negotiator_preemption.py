"""Preemption in the pure cycle: Claimed slots as candidates, HTCondor's rules and order.

Priorities are set by hand: a submitter's EUP is RUP x 1000 (DEFAULT_PRIO_FACTOR), and a
cycle's first accountant update only starts the clock, so the RUPs below are the ones used.
"""

from __future__ import annotations

import pytest

from mockpool.classad import ClassAd, parse_expr
from mockpool.config import parse_config
from mockpool.negotiator import (
    Accountant,
    CycleAds,
    NegotiatorInputError,
    ResourceRequest,
    negotiate,
)
from mockpool.negotiator.accountant import SubmitterRecord
from mockpool.negotiator.preemption import check_negotiator_config

STARTD = "10.0.0.1:9618"
SCHEDD = "10.0.0.2:9618"
TWENTY_PERCENT = "PREEMPTION_REQUIREMENTS = RemoteUserPrio > SubmitterUserPrio * 1.2"
NO_NEGOTIATOR_RANKS = "NEGOTIATOR_PRE_JOB_RANK = 0\nNEGOTIATOR_POST_JOB_RANK = 0\n"


def slot(
    n: int,
    *,
    user: str | None = None,
    current_rank: float = 0.0,
    rank: str = "0.0",
    **extra: object,
) -> ClassAd:
    """slot<n>@exec0001, one cpu; Claimed by ``user`` when given."""
    ad = ClassAd()
    name = f"slot{n}@exec0001"
    for k, v in {
        "MyType": "Machine",
        "Name": name,
        "Machine": "exec0001",
        "SlotID": n,
        "Cpus": 1,
        "Memory": 1024,
        "Disk": 1_000_000,
        "PartitionableSlot": False,
        "Arch": "X86_64",
        "OpSys": "LINUX",
        "MyAddress": f"<{STARTD}>",
        "StartdIpAddr": f"<{STARTD}>",
        "State": "Claimed" if user else "Unclaimed",
        "Activity": "Busy" if user else "Idle",
    }.items():
        ad[k] = v
    ad["Start"] = parse_expr("True")
    ad["Requirements"] = parse_expr("START")
    ad["Rank"] = parse_expr(rank)
    ad["SlotWeight"] = parse_expr("Cpus")
    if user:
        for k in ("RemoteUser", "RemoteOwner", "AccountingGroup"):
            ad[k] = user
        ad["CurrentRank"] = current_rank
    for k, v in extra.items():
        ad[k] = v
    return ad


def snapshot(*slots: ClassAd) -> CycleAds:
    privs = []
    for s in slots:
        p = ClassAd()
        p["MyType"] = "MachinePrivate"
        p["Name"] = s.eval("Name")
        p["Capability"] = f"<{STARTD}>#100#{s.eval('SlotID')}#secret"
        privs.append(p)
    return CycleAds(list(slots), privs)


def request(submitter: str, count: int = 1, ac: int = 1) -> ResourceRequest:
    ad = ClassAd()
    for k, v in {
        "ClusterId": ac,
        "ProcId": 0,
        "Owner": submitter.split("@")[0],
        "RequestCpus": 1,
        "RequestMemory": 512,
        "RequestDisk": 1000,
        "AutoClusterId": ac,
        "Submitter": submitter,
        "ResourceRequestCount": count,
    }.items():
        ad[k] = v
    ad["Requirements"] = parse_expr("TARGET.Memory >= RequestMemory")
    return ResourceRequest.from_ad(ad, "schedd1", SCHEDD)


def accountant(**rups: float) -> Accountant:
    return Accountant(
        records={f"{who}@mockpool": SubmitterRecord(priority=rup) for who, rup in rups.items()}
    )


def run(
    snap: CycleAds, reqs: list[ResourceRequest], config: str = "", acct: Accountant | None = None
):
    return negotiate(snap, reqs, acct or Accountant(), parse_config(config, "test"), 100.0)


def test_preemption_off_never_takes_a_claimed_slot():
    snap = snapshot(slot(1, user="bob@mockpool"))
    res = run(
        snap,
        [request("alice@mockpool")],
        "NEGOTIATOR_CONSIDER_PREEMPTION = False\nPREEMPTION_REQUIREMENTS = True",
    )
    assert res.matches == []
    assert res.stats.claimed_slots_skipped == 1 and res.stats.trimmed_slots == 0
    assert [r.reason for r in res.rejections] == ["no match found"]


def test_priority_preemption_needs_twenty_percent_better_priority():
    # alice EUP 500: 500 * 1.2 = 600. bob at 650 may be preempted, carol at 550 may not.
    snap = snapshot(slot(1, user="bob@mockpool"))
    res = run(snap, [request("alice@mockpool")], TWENTY_PERCENT, accountant(alice=0.5, bob=0.65))
    assert [m.slot_name for m in res.matches] == ["slot1@exec0001"]
    assert (
        res.matches[0].claim_id == "<10.0.0.1:9618>#100#1#secret"
    )  # the slot's own (preempting) id
    assert res.rejections == []
    snap = snapshot(slot(1, user="carol@mockpool"))
    res = run(snap, [request("alice@mockpool")], TWENTY_PERCENT, accountant(alice=0.5, carol=0.55))
    assert res.matches == []
    assert [(r.job_id, r.reason) for r in res.rejections] == [
        ("1.0", "PREEMPTION_REQUIREMENTS == False")
    ]
    assert (
        "      Rejected 1.0 alice@mockpool <10.0.0.2:9618>: PREEMPTION_REQUIREMENTS == False"
        in [x.text for x in res.log]
    )


def test_preemption_log_lines_and_accounting():
    snap = snapshot(slot(1, user="bob@mockpool"))
    res = run(snap, [request("alice@mockpool")], TWENTY_PERCENT, accountant(alice=0.5, bob=0.65))
    text = [x.text for x in res.log]
    i = text.index(
        "      Preempting bob@mockpool (user prio=650.00, startd rank=0.00) on slot1@exec0001 "
        "for alice@mockpool (user prio=500.00, startd rank=0.00)"
    )
    assert text[i + 1] == (
        "      Matched 1.0 alice@mockpool <10.0.0.2:9618> preempting bob@mockpool "
        "(AccountingGroup=bob@mockpool) <10.0.0.1:9618> slot1@exec0001"
    )
    # AddMatch charges the new submitter the slot weight; bob keeps his until the recount
    assert res.accountant.resources_used("alice@mockpool") == 1.0
    assert res.accountant.resources_used("bob@mockpool") == 1.0
    # the offer carries the ephemeral attributes HTCondor inserts
    assert res.matches[0].slot_ad.eval("RemoteUserPrio") == 650.0
    assert res.matches[0].slot_ad.eval("RemoteUserResourcesInUse") == 1


def test_same_user_is_never_priority_preempted():
    snap = snapshot(slot(1, user="bob@mockpool"))
    res = run(
        snap, [request("bob@mockpool")], "PREEMPTION_REQUIREMENTS = True", accountant(bob=0.5)
    )
    assert res.matches == []
    assert [r.reason for r in res.rejections] == ["no match found"]


def test_priority_preemption_needs_startd_rank_at_least_current():
    # the slot ranks alice 0 and its job 5: Rank >= CurrentRank fails
    snap = snapshot(slot(1, user="bob@mockpool", current_rank=5.0))
    res = run(snap, [request("alice@mockpool")], "PREEMPTION_REQUIREMENTS = True")
    assert res.matches == []
    assert [r.reason for r in res.rejections] == ["no match found"]


def test_rank_preemption_follows_startd_rank():
    # RANK prefers carol (1) over what runs (CurrentRank 0): she preempts even with
    # PREEMPTION_REQUIREMENTS False and a worse priority; alice (rank 0) does not.
    rank = 'ifThenElse(TARGET.Owner == "carol", 1, 0)'
    snap = snapshot(slot(1, user="bob@mockpool", rank=rank))
    acct = accountant(carol=5.0, bob=0.5, alice=0.5)
    res = run(snap, [request("carol@mockpool")], "", acct)
    assert [m.slot_name for m in res.matches] == ["slot1@exec0001"]
    assert "startd rank=1.00" in next(x.text for x in res.log if "Preempting" in x.text)
    res = run(snap, [request("alice@mockpool")], "", acct)
    assert res.matches == []
    # bob's own next job is rank-preempting only when the slot prefers it
    res = run(snap, [request("bob@mockpool")], "PREEMPTION_REQUIREMENTS = True", acct)
    assert res.matches == []


def test_order_no_preemption_then_rank_then_priority():
    # negotiator ranks off: the preemption state decides among equal ranks
    rank = 'ifThenElse(TARGET.Owner == "carol", 1, 0)'
    snap = snapshot(slot(1, user="bob@mockpool"), slot(2, user="dave@mockpool", rank=rank), slot(3))
    cfg = NO_NEGOTIATOR_RANKS + "PREEMPTION_REQUIREMENTS = True"
    res = run(snap, [request("carol@mockpool", count=3)], cfg)
    assert [m.slot_name for m in res.matches] == [
        "slot3@exec0001",
        "slot2@exec0001",
        "slot1@exec0001",
    ]


def test_preemption_rank_picks_the_worst_priority_victim():
    # default PREEMPTION_RANK = RemoteUserPrio * 1e6 - TotalJobRuntime: dave (EUP 800) goes
    # before bob (EUP 650); with equal priorities the shorter runtime goes first.
    snap = snapshot(slot(1, user="bob@mockpool"), slot(2, user="dave@mockpool"))
    acct = accountant(alice=0.5, bob=0.65, dave=0.8)
    res = run(snap, [request("alice@mockpool")], NO_NEGOTIATOR_RANKS + TWENTY_PERCENT, acct)
    assert [m.slot_name for m in res.matches] == ["slot2@exec0001"]
    snap = snapshot(
        slot(1, user="bob@mockpool", TotalJobRuntime=100),
        slot(2, user="dave@mockpool", TotalJobRuntime=900),
    )
    acct = accountant(alice=0.5, bob=0.7, dave=0.7)
    res = run(snap, [request("alice@mockpool")], NO_NEGOTIATOR_RANKS + TWENTY_PERCENT, acct)
    assert [m.slot_name for m in res.matches] == ["slot1@exec0001"]
    res = run(
        snap,
        [request("alice@mockpool")],
        NO_NEGOTIATOR_RANKS + TWENTY_PERCENT + "\nPREEMPTION_RANK = TotalJobRuntime",
        acct,
    )
    assert [m.slot_name for m in res.matches] == ["slot2@exec0001"]


def test_default_pre_job_rank_prefers_unclaimed_slots():
    # (1000000 * (RemoteOwner =?= UNDEFINED)) in NEGOTIATOR_PRE_JOB_RANK: the free slot
    # wins even though it is listed last
    snap = snapshot(slot(1, user="bob@mockpool"), slot(2))
    res = run(snap, [request("alice@mockpool")], "PREEMPTION_REQUIREMENTS = True")
    assert [m.slot_name for m in res.matches] == ["slot2@exec0001"]


def test_retiring_slots_trimmed_unless_early_preemption():
    snap = snapshot(slot(1, user="bob@mockpool", RetirementTimeRemaining=300))
    res = run(snap, [request("alice@mockpool")], "PREEMPTION_REQUIREMENTS = True")
    assert res.matches == [] and res.stats.trimmed_slots == 0
    res = run(
        snap,
        [request("alice@mockpool")],
        "PREEMPTION_REQUIREMENTS = True\nNEGOTIATOR_CONSIDER_EARLY_PREEMPTION = True",
    )
    assert [m.slot_name for m in res.matches] == ["slot1@exec0001"]


def test_submitter_attributes_are_visible_to_requirements():
    # SubmitterUserPrio is in the request when its Requirements are evaluated
    req = request("alice@mockpool")
    req.ad["Requirements"] = parse_expr("SubmitterUserPrio < 600")
    snap = snapshot(slot(1))
    assert len(run(snap, [req], "", accountant(alice=0.5)).matches) == 1
    assert run(snap, [req], "", accountant(alice=0.7)).matches == []


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("PREEMPTION_REQUIREMENTS = RemoteUserPrio >", "not a ClassAd expression"),
        (
            'PREEMPTION_REQUIREMENTS = "yes"',
            "must be a boolean expression, but it evaluates to 'yes'",
        ),
        ('PREEMPTION_RANK = "high"', "must be a number expression"),
        ('PREEMPTION_RANK = RemoteUserPrio + "x"', "evaluates to ERROR"),
    ],
)
def test_bad_preemption_policy_names_file_line_and_knob(text, problem):
    cfg = parse_config("NEGOTIATOR_INTERVAL = 60\n" + text, "pool.conf")
    knob = text.split(" =")[0]
    with pytest.raises(NegotiatorInputError, match=rf"pool.conf:2: {knob} = .*{problem}"):
        negotiate(snapshot(slot(1)), [], Accountant(), cfg, 0.0)
    with pytest.raises(ValueError, match=rf"pool.conf:2: {knob}"):
        check_negotiator_config(cfg)
