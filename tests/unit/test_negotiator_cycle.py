"""The pure negotiation cycle: hand-worked pools, HTCondor's seed checks and rules."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from builders.cycle import SCHEDD, STARTD, pool, private, pslot, request, slot
from hypothesis import given, settings
from hypothesis import strategies as st

from mockpool.classad import ClassAd, parse_expr
from mockpool.config import parse_config
from mockpool.negotiator import (
    Accountant,
    CycleAds,
    NegotiatorInputError,
    ResourceRequest,
    negotiate,
)
from mockpool.negotiator.consumption import sufficient, sufficient_one
from mockpool.negotiator.cycleinput import requests_from_ads


def cfg(text: str = ""):
    return parse_config(text, "test")


def run(
    snapshot: CycleAds,
    requests: list[ResourceRequest],
    config_text: str = "",
    now: float = 100.0,
    accountant: Accountant | None = None,
):
    return negotiate(snapshot, requests, accountant or Accountant(), cfg(config_text), now)


# ----------------------------------------------------------------- static slots


def test_static_pool_three_slots_five_jobs():
    snap = pool(*(slot(f"slot{i}@exec0001") for i in (1, 2, 3)))
    res = run(snap, [request(1, 5)])
    assert len(res.matches) == 3
    assert {m.slot_name for m in res.matches} == {
        "slot1@exec0001",
        "slot2@exec0001",
        "slot3@exec0001",
    }
    # the 4th job found nothing: one rejection, the autocluster's 5th job never offered
    assert res.stats.rejections == 1
    assert res.stats.num_jobs_considered == 4
    assert res.stats.matches == 3
    m = res.matches[0]
    assert (m.submitter, m.schedd, m.autocluster_id, m.job_id) == (
        "alice@mockpool",
        "schedd1",
        1,
        "1.0",
    )
    assert m.startd_address == STARTD
    assert m.claim_id.startswith(f"<{STARTD}>#") and m.cost == 1.0
    # each static slot's own claim id, each used once
    assert len({m.claim_id for m in res.matches}) == 3


def test_claim_id_never_logged():
    snap = pool(slot("slot1@exec0001"))
    res = run(snap, [request(1, 1)])
    assert res.matches
    assert not any("secret" in line.text for line in res.log)


def test_rejected_autocluster_skipped_for_rest_of_turn():
    snap = pool(slot("slot1@exec0001", memory=1024))
    big = request(7, 2, memory=4096)
    also_big = request(7, 1, memory=4096, cluster=8)  # same autocluster, listed again
    res = run(snap, [big, also_big])
    assert res.matches == []
    assert res.stats.rejections == 1
    assert res.stats.num_jobs_considered == 1


def test_job_rank_memory_picks_biggest_slot_first():
    snap = pool(
        slot("slot1@exec0001", memory=1024),
        slot("slot2@exec0001", memory=8192),
        slot("slot3@exec0001", memory=4096),
    )
    # PRE_JOB_RANK comes first; with it unset, the job's Rank decides
    res = run(snap, [request(1, 2, rank="Memory")], "NEGOTIATOR_PRE_JOB_RANK =")
    assert [m.slot_name for m in res.matches] == ["slot2@exec0001", "slot3@exec0001"]
    # with HTCondor's default (... - Memory) the smallest slot wins over the job's Rank
    res = run(snap, [request(1, 2, rank="Memory")])
    assert [m.slot_name for m in res.matches] == ["slot1@exec0001", "slot3@exec0001"]


def test_pre_job_rank_default_prefers_fewer_cpus_then_less_memory():
    # default PRE_JOB_RANK: ... - 100000 * Cpus - Memory: fewest cpus, then least memory
    snap = pool(
        slot("slot1@exec0001", cpus=4, memory=1024),
        slot("slot2@exec0001", cpus=1, memory=4096),
        slot("slot3@exec0001", cpus=1, memory=2048),
    )
    res = run(snap, [request(1, 3)])
    assert [m.slot_name for m in res.matches] == [
        "slot3@exec0001",
        "slot2@exec0001",
        "slot1@exec0001",
    ]


def test_pre_job_rank_beats_job_rank_and_startd_rank_counts():
    # My.Rank (the startd's Rank of the job) dominates: x 10,000,000
    snap = pool(slot("slot1@exec0001", memory=8192), slot("slot2@exec0001", memory=1024, rank="1"))
    res = run(snap, [request(1, 1, rank="Memory")])
    assert [m.slot_name for m in res.matches] == ["slot2@exec0001"]


def test_pre_job_rank_config_and_post_job_rank_tiebreak():
    snap = pool(slot("slot1@exec0001"), slot("slot2@exec0001"), slot("slot3@exec0001"))
    # no pre-job rank, equal job Rank: default POST_JOB_RANK (- SlotID) prefers slot1
    res = run(snap, [request(1, 1)], "NEGOTIATOR_PRE_JOB_RANK =")
    assert [m.slot_name for m in res.matches] == ["slot1@exec0001"]
    res = run(snap, [request(1, 1)], "NEGOTIATOR_PRE_JOB_RANK = SlotID")
    assert [m.slot_name for m in res.matches] == ["slot3@exec0001"]


def test_start_false_never_matched():
    snap = pool(
        slot("slot1@exec0001", start="False"), slot("slot2@exec0001", start='TARGET.Owner == "bob"')
    )
    res = run(snap, [request(1, 2)])
    assert res.matches == []
    res = run(snap, [request(1, 2, submitter="bob@mockpool")])
    assert [m.slot_name for m in res.matches] == ["slot2@exec0001"]


def test_job_requirements_against_slot_attributes():
    snap = pool(
        slot("slot1@exec0001", memory=1024),
        slot("slot2@exec0001", memory=2048),
        slot("slot1@exec0002", memory=4096, HasGPU=True),
    )
    res = run(snap, [request(1, 5, requirements="TARGET.Memory >= 2000")])
    assert sorted(m.slot_name for m in res.matches) == ["slot1@exec0002", "slot2@exec0001"]
    res = run(snap, [request(1, 5, requirements="HasGPU =?= true")])
    assert [m.slot_name for m in res.matches] == ["slot1@exec0002"]


def test_claimed_and_owner_slots_skipped_and_counted():
    claimed = slot(
        "slot1@exec0001", state="Claimed", RemoteOwner="bob@mockpool", RemoteUser="bob@mockpool"
    )
    owner = slot("slot2@exec0001", state="Owner")
    free = slot("slot3@exec0001")
    res = run(pool(claimed, owner, free), [request(1, 3)], "NEGOTIATOR_CONSIDER_PREEMPTION = False")
    assert [m.slot_name for m in res.matches] == ["slot3@exec0001"]
    assert res.stats.claimed_slots_skipped == 1
    assert res.stats.total_slots == 3
    assert res.stats.trimmed_slots == res.stats.candidate_slots == 1
    assert [r.reason for r in res.rejections] == ["no match found"]
    # preemption considered (the default): bob's slot is a candidate, PREEMPTION_REQUIREMENTS
    # (default False) keeps alice off it, and that is the reason she is given
    res = run(pool(claimed, owner, free), [request(1, 3)])
    assert [m.slot_name for m in res.matches] == ["slot3@exec0001"]
    assert res.stats.claimed_slots_skipped == 0
    assert res.stats.trimmed_slots == 2
    assert [r.reason for r in res.rejections] == ["PREEMPTION_REQUIREMENTS == False"]


def test_slot_without_claim_id_is_not_offered():
    s1, s2 = slot("slot1@exec0001"), slot("slot2@exec0001")
    snap = CycleAds([s1, s2], [private("slot2@exec0001")])
    res = run(snap, [request(1, 2)])
    assert [m.slot_name for m in res.matches] == ["slot2@exec0001"]
    assert res.stats.slots_without_claim_id == 1


def test_claim_ids_are_joined_to_slots_by_name_whatever_the_private_ads_order():
    """Private ads in reverse order, one for a slot not in the snapshot, one with an
    empty Capability, one slot with none, and a p-slot with its ClaimIdList: slot3 and
    slot1 match with their own claim ids, the p-slot's two jobs with its first two;
    slot2 (empty Capability) and slot4 (no private ad) have no claim id."""
    s1, s2, s3, s4 = (slot(f"slot{k}@exec0001") for k in (1, 2, 3, 4))
    p_ad, p_ids = pslot("slot1@exec0002", cpus=2, memory=2048, claims=3)
    empty = private("slot2@exec0001")
    empty["Capability"] = ""
    privates = [
        private("slot1@exec0002", p_ids),
        private("slot9@exec0009"),
        private("slot3@exec0001"),
        empty,
        private("slot1@exec0001"),
    ]
    res = run(CycleAds([s1, s2, s3, s4, p_ad], privates), [request(1, 5)])
    got = {(m.slot_name, m.claim_id) for m in res.matches}
    assert got == {
        ("slot1@exec0001", privates[4].eval("Capability")),
        ("slot3@exec0001", privates[2].eval("Capability")),
        ("slot1@exec0002", p_ids[0]),
        ("slot1@exec0002", p_ids[1]),
    }
    assert res.stats.slots_without_claim_id == 2


# ----------------------------------------------------------- partitionable slots


def test_seed_pslot_ten_cpus_twenty_claims_fifteen_jobs():
    ad, ids = pslot(cpus=10, memory=20480, claims=20)
    res = run(pool(ad, claims={"slot1@exec0001": ids}), [request(1, 15, cpus=1, memory=1024)])
    assert len(res.matches) == 10
    assert [m.claim_id for m in res.matches] == ids[:10]  # each claim id at most once
    assert all(m.slot_name == "slot1@exec0001" for m in res.matches)
    assert all(m.cost == 1.0 for m in res.matches)  # W(S) - W(S') with SlotWeight = Cpus
    assert res.stats.rejections == 1
    # the slot ad offered with each match is the slot as it was before that match
    assert [m.slot_ad.eval("Cpus") for m in res.matches] == list(range(10, 0, -1))


def test_seed_consumption_memory_quantize_512():
    # ~1.9 GB p-slot, ConsumptionMemory = quantize(target.RequestMemory,{512}): 3 matches
    ad, ids = pslot(
        cpus=10, memory=1900, claims=20, ConsumptionMemory="quantize(target.RequestMemory,{512})"
    )
    res = run(pool(ad, claims={"slot1@exec0001": ids}), [request(1, 15, cpus=1, memory=100)])
    assert len(res.matches) == 3
    # cost: SlotWeight = Cpus went 10 -> 7
    assert sum(m.cost for m in res.matches) == 3.0


def test_pslot_num_claims_caps_matches():
    ad, ids = pslot(cpus=10, memory=20480, claims=4)
    res = run(pool(ad, claims={"slot1@exec0001": ids}), [request(1, 15)])
    assert len(res.matches) == 4


def test_pslot_default_consumption_rounds_memory_to_128():
    # CONSUMPTION_MEMORY default quantize(RequestMemory,{128}): 1000 -> 1024; 3000 MB holds 2
    ad, ids = pslot(cpus=10, memory=3000, claims=10)
    res = run(pool(ad, claims={"slot1@exec0001": ids}), [request(1, 5, memory=1000)])
    assert len(res.matches) == 2


def test_pslot_requirements_see_resources_left_across_requests():
    ad, ids = pslot(cpus=4, memory=8192, claims=10)
    snap = pool(ad, claims={"slot1@exec0001": ids})
    # first autocluster takes 3 cpus; the second needs 2 and must see only 1 left
    res = run(snap, [request(1, 1, cpus=3), request(2, 1, cpus=2, cluster=20)])
    assert [m.autocluster_id for m in res.matches] == [1]
    assert res.stats.rejections == 1


def test_pslot_memory_left_is_what_later_requirements_see():
    ad, ids = pslot(cpus=4, memory=8192, claims=10)
    snap = pool(ad, claims={"slot1@exec0001": ids})
    reqs = [
        request(1, 1, memory=4096),
        request(2, 1, memory=512, cluster=20, requirements="TARGET.Memory >= 5000"),
    ]
    res = run(snap, reqs)
    assert [m.autocluster_id for m in res.matches] == [1]  # 4096 left < 5000
    reqs[1] = request(2, 1, memory=512, cluster=20, requirements="TARGET.Memory >= 4000")
    res = run(snap, reqs)
    assert [m.autocluster_id for m in res.matches] == [1, 2]


def test_pre_job_rank_sees_pslot_memory_left():
    a, ids_a = pslot("slot1@exec0001", cpus=4, memory=8192, claims=10)
    b, ids_b = pslot("slot1@exec0002", cpus=4, memory=6000, claims=10)
    snap = pool(a, b, claims={"slot1@exec0001": ids_a, "slot1@exec0002": ids_b})
    reqs = [request(1, 1, memory=4096), request(2, 1, memory=512, cluster=20)]
    res = run(snap, reqs, "NEGOTIATOR_PRE_JOB_RANK = Memory")
    # most memory first: exec0001 (8192), then exec0002 (6000 > the 4096 exec0001 has left)
    assert [m.slot_name for m in res.matches] == ["slot1@exec0001", "slot1@exec0002"]


def test_pslot_reoffered_within_a_request_by_its_new_rank():
    a, ids_a = pslot("slot1@exec0001", cpus=4, memory=8192, claims=10)
    b, ids_b = pslot("slot1@exec0002", cpus=4, memory=6000, claims=10)
    snap = pool(a, b, claims={"slot1@exec0001": ids_a, "slot1@exec0002": ids_b})
    res = run(snap, [request(1, 3, memory=2048)], "NEGOTIATOR_PRE_JOB_RANK = Memory")
    # 8192 -> (6144 left) -> 6144 beats 6000 -> (4096 left) -> now exec0002's 6000 wins
    assert [m.slot_name for m in res.matches] == [
        "slot1@exec0001",
        "slot1@exec0001",
        "slot1@exec0002",
    ]


@pytest.mark.parametrize(
    ("score", "expected"),
    [
        # reaches Cpus through the slot's own attribute: re-ranked after each match.
        # 5 cpus -> 4 left (4 > 3) -> 3 left (ties exec0002's 3: the re-offered p-slot,
        # first in snapshot order, goes first) -> 2 left: exec0002's 3 wins
        (parse_expr("Cpus"), ["slot1@exec0001"] * 3 + ["slot1@exec0002"]),
        # reaches no resource: one value a p-slot for the cycle (remembered)
        (parse_expr("10 - SlotID"), ["slot1@exec0001"] * 4),
    ],
)
def test_post_job_rank_of_a_reoffered_pslot_follows_what_it_reaches(score, expected):
    a, ids_a = pslot("slot1@exec0001", cpus=5, memory=8192, claims=10, MyScore=score)
    b, ids_b = pslot("slot1@exec0002", cpus=3, memory=8192, claims=10, MyScore=score)
    snap = pool(a, b, claims={"slot1@exec0001": ids_a, "slot1@exec0002": ids_b})
    config = "NEGOTIATOR_PRE_JOB_RANK = 0\nNEGOTIATOR_POST_JOB_RANK = MyScore"
    res = run(snap, [request(1, 4, memory=512)], config)
    assert [m.slot_name for m in res.matches] == expected


def test_pslot_and_static_mixed_pre_job_rank_packs_pslot():
    ad, ids = pslot(cpus=4, memory=8192, claims=10)
    st = slot("slot1@exec0002", cpus=1, memory=1024)
    res = run(pool(ad, st, claims={"slot1@exec0001": ids}), [request(1, 6, memory=512)])
    # static 1-cpu slot first (-100000*1 beats -100000*4), then the p-slot 4 times
    assert [m.slot_name for m in res.matches] == ["slot1@exec0002"] + ["slot1@exec0001"] * 4


def test_zero_consumption_is_not_a_match():
    # quantize(0,{1}) is 1, so the defaults never consume nothing; a policy can
    ad, ids = pslot(
        cpus=4,
        memory=8192,
        claims=10,
        ConsumptionCpus="0",
        ConsumptionMemory="0",
        ConsumptionDisk="0",
    )
    res = run(pool(ad, claims={"slot1@exec0001": ids}), [request(1, 1)])
    assert res.matches == []
    assert res.stats.rejections == 1


def test_negative_or_undefined_consumption_is_not_a_match():
    ad, ids = pslot(cpus=4, memory=8192, claims=10, ConsumptionCpus="-1")
    res = run(pool(ad, claims={"slot1@exec0001": ids}), [request(1, 1)])
    assert res.matches == []
    ad, ids = pslot(cpus=4, memory=8192, claims=10, ConsumptionMemory="TARGET.NoSuchAttr")
    res = run(pool(ad, claims={"slot1@exec0001": ids}), [request(1, 1)])
    assert res.matches == []


def test_consumption_overrides_job_requests_while_matching():
    # RequestMemory 100 consumes 512; a job asking Memory >= 3 * RequestMemory sees 1536,
    # more than the 1000 MB p-slot has (HTCondor's cp_override_requested) -> no match
    ad, ids = pslot(
        cpus=4, memory=1000, claims=10, ConsumptionMemory="quantize(target.RequestMemory,{512})"
    )
    snap = pool(ad, claims={"slot1@exec0001": ids})
    res = run(snap, [request(1, 1, memory=100, requirements="TARGET.Memory >= 3 * RequestMemory")])
    assert res.matches == []
    res = run(snap, [request(1, 1, memory=100, requirements="TARGET.Memory >= 1 * RequestMemory")])
    assert len(res.matches) == 1


def test_seed_quantize_512_on_1903_mb_three_dynamic_slots_of_512():
    # 1903 MB: 1903 -> 1391 -> 879 -> 367 left, under 512: 3 matches, each consuming 512 MB
    ad, ids = pslot(
        cpus=10, memory=1903, claims=20, ConsumptionMemory="quantize(target.RequestMemory,{512})"
    )
    res = run(pool(ad, claims={"slot1@exec0001": ids}), [request(1, 15, cpus=1, memory=100)])
    assert [m.slot_ad.eval("Memory") for m in res.matches] == [1903, 1391, 879]
    assert [m.cost for m in res.matches] == [1.0, 1.0, 1.0]
    assert res.stats.rejections == 1


def test_policy_pslot_match_costs_what_it_takes_not_the_whole_slot():
    # the group-quota seed ("quota 1, 2 jobs: 1 match, charged 1 cpu and not the slot's 10")
    # rests on this cost: W(S) - W(S') = 10 - 9 = 1 with SlotWeight = Cpus
    ad, ids = pslot(cpus=10, memory=20480, claims=20)
    res = run(pool(ad, claims={"slot1@exec0001": ids}), [request(1, 1)])
    (m,) = res.matches
    assert m.cost == 1.0 and res.accountant.resources_used("alice@mockpool") == 1.0
    # a 2-cpu job on SlotWeight = Cpus * 2: 20 - 16 = 4
    ad, ids = pslot(cpus=10, memory=20480, claims=20, SlotWeight=parse_expr("Cpus * 2"))
    (m,) = run(pool(ad, claims={"slot1@exec0001": ids}), [request(1, 1, cpus=2)]).matches
    assert m.cost == 4.0
    # unweighted (NEGOTIATOR_USE_SLOT_WEIGHTS = False): every match costs 1
    (m,) = run(
        pool(ad, claims={"slot1@exec0001": ids}),
        [request(1, 1, cpus=2)],
        "NEGOTIATOR_USE_SLOT_WEIGHTS = False",
    ).matches
    assert m.cost == 1.0


def test_seed_group_quota_one_on_a_policy_pslot():
    # GROUP_QUOTA_a = 1, no surplus, a 10-cpu p-slot with a policy, 2 one-cpu jobs: the
    # first match costs W(S) - W(S') = 10 - 9 = 1, which fills the quota, so the second is
    # refused; the group is charged 1 cpu, not the slot's 10.
    ad, ids = pslot(cpus=10, memory=20480, claims=20)
    who = "a.alice@mockpool"
    res = run(
        pool(ad, claims={"slot1@exec0001": ids}),
        [request(1, 2, submitter=who)],
        "GROUP_NAMES = a\nGROUP_QUOTA_a = 1\nGROUP_ACCEPT_SURPLUS = False",
    )
    (m,) = res.matches
    assert m.submitter == who and m.cost == 1.0
    assert res.accountant.resources_used(who) == 1.0
    # with surplus accepted, the rest of the pool flows to the group: both jobs match
    res = run(
        pool(ad, claims={"slot1@exec0001": ids}),
        [request(1, 2, submitter=who)],
        "GROUP_NAMES = a\nGROUP_QUOTA_a = 1\nGROUP_ACCEPT_SURPLUS = True",
    )
    assert len(res.matches) == 2


def test_pslot_without_policy_is_matched_whole_once_a_cycle():
    # HTCondor splits only slots that advertise a policy: this one is offered like a
    # static slot, with its Capability, and costs its whole SlotWeight (10)
    ad, _ = pslot(cpus=10, memory=20480, claims=20, policy=False)
    snap = pool(ad)  # no ClaimIdList: a p-slot without a policy offers its Capability only
    res = run(snap, [request(1, 15), request(2, 3, cluster=20)])
    (m,) = res.matches
    assert m.claim_id == snap.private_ads[0].eval("Capability")
    assert m.cost == 10.0 and m.slot_ad.eval("Cpus") == 10
    assert res.accountant.resources_used("alice@mockpool") == 10.0
    assert res.stats.rejections == 2  # the next job of each autocluster finds nothing


def test_consumption_policy_needs_machine_resources_and_every_consumption():
    base = {"slot1@exec0001": [f"<{STARTD}>#100#{k}#s{k}" for k in range(20)]}
    for drop in ("MachineResources", "ConsumptionDisk"):
        ad, _ = pslot(cpus=10, memory=20480)
        del ad[drop]
        res = run(pool(ad, claims=base), [request(1, 15)])
        assert len(res.matches) == 1 and res.matches[0].cost == 10.0, drop
    # a resource without its Consumption<Res> (Swap excepted) means no policy either
    ad, _ = pslot(cpus=10, memory=20480, MachineResources="Cpus Memory Disk Swap Gpus")
    assert len(run(pool(ad, claims=base), [request(1, 15)]).matches) == 1
    mres = "Cpus Memory Disk Swap Gpus"
    ad, _ = pslot(cpus=10, memory=20480, MachineResources=mres, Gpus=2, ConsumptionGpus=0)
    res = run(pool(ad, claims=base), [request(1, 15)])
    assert len(res.matches) == 10
    assert [m.slot_ad.eval("Gpus") for m in res.matches] == [2] * 10  # 0 Gpus consumed


def test_negative_or_non_numeric_slot_weight_weighs_one():
    a = slot("slot1@exec0001", cpus=4, SlotWeight=-3)
    b = slot("slot2@exec0001", cpus=4, SlotWeight="heavy")
    res = run(pool(a, b), [request(1, 2)])
    assert [m.cost for m in res.matches] == [1.0, 1.0]


# ------------------------------------------------------------- concurrency limits


def limited(ac: int, count: int, limits: object, **kw) -> ResourceRequest:
    r = request(ac, count, **kw)
    ad = r.ad.copy()
    ad["ConcurrencyLimits"] = (
        parse_expr(limits)
        if isinstance(limits, str) and not limits.startswith("=")
        else limits[1:]
        if isinstance(limits, str)
        else limits
    )
    return ResourceRequest.from_ad(ad, r.schedd, r.schedd_address)


def test_limit_of_three_lets_three_of_ten_jobs_match():
    snap = pool(*(slot(f"slot{i}@exec0001") for i in range(1, 11)))
    res = run(snap, [limited(1, 10, "=DB")], "DB_LIMIT = 3")
    assert len(res.matches) == 3
    assert res.stats.rejections == 1  # the 4th job; the autocluster is done for this cycle
    rejected = [ln.text for ln in res.log if "Rejected" in ln.text]
    assert rejected == [
        f"      Rejected 1.0 alice@mockpool <{SCHEDD}>: concurrency limit db reached"
    ]
    # the schedd is told HTCondor's message (the job's LastRejMatchReason), names included
    assert [(r.job_id, r.reason) for r in res.rejections] == [
        ("1.0", "concurrency limit db reached")
    ]


def test_limits_in_use_are_counted_from_claimed_slot_ads():
    busy = [
        slot(f"slot{i}@exec0002", state="Claimed", ConcurrencyLimits="Db,other") for i in (1, 2)
    ]
    free = [slot(f"slot{i}@exec0001") for i in range(1, 6)]
    res = run(pool(*busy, *free), [limited(1, 5, "=db")], "DB_LIMIT = 3")
    assert len(res.matches) == 1  # 2 in use + 1 = 3


def test_limit_counts_and_scoped_defaults():
    free = [slot(f"slot{i}@exec0001") for i in range(1, 8)]
    # db:2 takes 2 of 5: 2 matches (4), a third would make 6
    assert len(run(pool(*free), [limited(1, 7, "=db:2")], "DB_LIMIT = 5").matches) == 2
    # license.matlab: no LICENSE.MATLAB_LIMIT, so CONCURRENCY_LIMIT_DEFAULT_LICENSE (2) applies
    cfg_text = "CONCURRENCY_LIMIT_DEFAULT = 4\nCONCURRENCY_LIMIT_DEFAULT_LICENSE = 2\n"
    assert len(run(pool(*free), [limited(1, 7, "=license.matlab")], cfg_text).matches) == 2
    assert len(run(pool(*free), [limited(1, 7, "=other")], cfg_text).matches) == 4
    # two limits: the tighter one decides; the reason names the limit that was over
    res = run(pool(*free), [limited(1, 7, "=a,b")], "A_LIMIT = 5\nB_LIMIT = 1")
    assert len(res.matches) == 1
    assert any(ln.text.endswith("concurrency limit b reached") for ln in res.log)


def test_concurrency_limits_expression_is_evaluated_per_slot():
    s1, s2 = slot("slot1@exec0001"), slot("slot2@exec0001")
    req = limited(1, 3, 'strcat("lic", TARGET.SlotID)')
    res = run(pool(s1, s2), [req], "LIC1_LIMIT = 0\nLIC2_LIMIT = 5")
    assert [m.slot_name for m in res.matches] == ["slot2@exec0001"]
    assert any(ln.text.endswith("concurrency limit lic1 reached") for ln in res.log)
    assert [r.reason for r in res.rejections] == ["concurrency limit lic1 reached"]


def test_bad_limit_or_slot_weight_knob_names_file_and_line():
    # (a bare word such as "lots" is an UNDEFINED attribute to HTCondor: the default limit)
    with pytest.raises(
        NegotiatorInputError, match='test:2: DB_LIMIT = "9 lots": expected a number'
    ):
        run(pool(slot("slot1@exec0001")), [], "\nDB_LIMIT = 9 lots")
    with pytest.raises(NegotiatorInputError, match="test:1: CONCURRENCY_LIMIT_DEFAULT"):
        run(pool(slot("slot1@exec0001")), [], "CONCURRENCY_LIMIT_DEFAULT = 4 many")
    with pytest.raises(
        NegotiatorInputError, match="test:1: SLOT_WEIGHT = \"heavy\": evaluates to 'heavy'"
    ):
        run(pool(slot("slot1@exec0001")), [], 'SLOT_WEIGHT = "heavy"')
    with pytest.raises(NegotiatorInputError, match="test:1: SLOT_WEIGHT = Cpus \\*: syntax error"):
        run(pool(slot("slot1@exec0001")), [], "SLOT_WEIGHT = Cpus *")


# ------------------------------------------------------------- submitters, accountant


def test_submitters_negotiate_in_eup_order():
    snap = pool(slot("slot1@exec0001"), slot("slot2@exec0001"))
    acct = Accountant()
    acct.set_factor("alice@mockpool", 100.0)  # alice EUP 50 < bob 500 (0.5 x 1000)
    reqs = [request(1, 2, submitter="bob@mockpool"), request(2, 2, submitter="alice@mockpool")]
    res = negotiate(snap, reqs, acct, cfg(), 0.0)
    # Shares 10/11 and 1/11 of 2 slots: limits 1.82 and 0.18. Alice takes 1 (a second
    # would pass her limit); bob has used nothing this spin, so his one match may round
    # his 0.18 up (HTCondor's no-crumbs rule).
    assert [m.submitter for m in res.matches] == ["alice@mockpool", "bob@mockpool"]
    names = [ln.text for ln in res.log if ln.text.startswith("  Negotiating with")]
    assert names == [
        f"  Negotiating with alice@mockpool at <{SCHEDD}>",
        f"  Negotiating with bob@mockpool at <{SCHEDD}>",
    ]
    assert f"      Rejected 2.0 alice@mockpool <{SCHEDD}>: submitter limit exceeded" in [
        ln.text for ln in res.log
    ]


def test_usage_from_claimed_slots_orders_submitters():
    # bob holds 4 cpus; after one half-life his RUP is 0.5*0.5 + 0.5*4 = 2.25 > alice 0.5
    claimed = slot(
        "slot9@exec0009",
        cpus=4,
        state="Claimed",
        RemoteOwner="bob@mockpool",
        RemoteUser="bob@mockpool",
    )
    free = slot("slot1@exec0001")
    snap = pool(claimed, free)
    reqs = [request(1, 1, submitter="bob@mockpool"), request(2, 1, submitter="alice@mockpool")]
    first = negotiate(snap, reqs, Accountant(), cfg(), 0.0)
    assert first.accountant.rup("bob@mockpool") == 0.5  # first update only starts the clock
    assert first.accountant.resources_used("bob@mockpool") == 4 + first_cost(first, "bob@mockpool")
    acct = Accountant(halflife=100.0)
    acct.check_matches({"bob@mockpool": 4.0}, 0.0)
    acct.update_priorities(0.0)
    res = negotiate(snap, reqs, acct, cfg(), 100.0)
    assert res.accountant.rup("bob@mockpool") == pytest.approx(2.25)
    assert [m.submitter for m in res.matches] == ["alice@mockpool"]
    assert acct.rup("bob@mockpool") == 0.5  # the input accountant is untouched


def first_cost(res, who):
    return sum(m.cost for m in res.matches if m.submitter == who)


def test_accounting_group_names_usage():
    claimed = slot(
        "slot9@exec0009",
        cpus=2,
        state="Claimed",
        RemoteOwner="alice@mockpool",
        RemoteUser="alice@mockpool",
        AccountingGroup="group_physics.alice@mockpool",
    )
    res = run(pool(claimed), [])
    assert res.accountant.resources_used("group_physics.alice@mockpool") == 2.0
    assert res.accountant.resources_used("alice@mockpool") == 0.0


def test_unweighted_slots_cost_one():
    snap = pool(slot("slot1@exec0001", cpus=8))
    res = run(snap, [request(1, 1)], "NEGOTIATOR_USE_SLOT_WEIGHTS = False")
    assert res.matches[0].cost == 1.0
    res = run(snap, [request(1, 1)])
    assert res.matches[0].cost == 8.0


def test_two_schedds_one_submitter_each_get_a_turn():
    snap = pool(slot("slot1@exec0001"), slot("slot2@exec0001"))
    reqs = [
        request(1, 1, schedd="s1", address="10.0.0.2:1"),
        request(1, 1, schedd="s2", address="10.0.0.3:1"),
    ]
    res = run(snap, reqs)
    assert sorted(m.schedd for m in res.matches) == ["s1", "s2"]
    assert set(res.matches_by_schedd()) == {"s1", "s2"}
    # HTCondor counts a submitter's idle jobs once, at its first active schedd.
    assert res.stats.num_idle_jobs == 1 and len(res.stats.active_schedds) == 2


# ------------------------------------------------------------------ bad input


def test_bad_request_names_problem():
    ad = ClassAd()
    ad["AutoClusterId"] = 3
    ad["Submitter"] = "alice@mockpool"
    with pytest.raises(NegotiatorInputError, match=r"autocluster 3.*ResourceRequestCount"):
        ResourceRequest.from_ad(ad, "schedd1", SCHEDD)
    ad["ResourceRequestCount"] = -1
    with pytest.raises(NegotiatorInputError, match=">= 0"):
        ResourceRequest.from_ad(ad, "schedd1", SCHEDD)
    ok, errors = requests_from_ads([ad, request(1, 1).ad], "schedd1", SCHEDD)
    assert len(ok) == 1 and len(errors) == 1 and "ResourceRequestCount" in errors[0]


def test_bad_knob_names_it():
    with pytest.raises(NegotiatorInputError, match="NEGOTIATOR_PRE_JOB_RANK"):
        run(pool(slot("slot1@exec0001")), [request(1, 1)], "NEGOTIATOR_PRE_JOB_RANK = (1 +")


# ------------------------------------------------------------------ speed


def test_ten_thousand_slots_hundreds_of_requests_is_fast():
    slots, claims = [], {}
    for m in range(2500):
        for s in range(1, 4):
            slots.append(slot(f"slot{s}@exec{m:04d}", cpus=1, memory=4096))
        ad, ids = pslot(f"slot4@exec{m:04d}", cpus=8, memory=32768, claims=8)
        slots.append(ad)
        claims[f"slot4@exec{m:04d}"] = ids
    snap = pool(*slots, claims=claims)
    reqs = [
        request(k, 30, memory=512 + (k % 7) * 256, submitter=f"u{k % 10}@mockpool", cluster=k)
        for k in range(1, 301)
    ]
    t0 = time.perf_counter()
    res = run(snap, reqs)
    elapsed = time.perf_counter() - t0
    assert len(res.matches) == 9000
    assert len({(m.slot_name, m.claim_id) for m in res.matches}) == 9000
    assert elapsed < 30, elapsed


# ----------------------------------------------------------------- evaluation budget


def test_poison_requirements_rejected_by_name_others_still_match():
    # Requirements that would run PCRE2 to its match limit once per slot (a distinct
    # subject each): over the request's budget, so the job is rejected for this cycle.
    snap = pool(*(slot(f"slot{i}@exec0001") for i in (1, 2, 3)))
    poison = request(
        1,
        2,
        submitter="mallory@mockpool",
        requirements=('regexp("(a+)+$", strcat("' + "a" * 30 + '", TARGET.Name, "!"))'),
    )
    good = request(2, 2, submitter="bob@mockpool")
    res = run(snap, [poison, good])
    assert [m.autocluster_id for m in res.matches] == [2, 2]
    # (bob may also meet the pie's submitter limit; only mallory's job is too costly)
    assert [r.submitter for r in res.rejections if "too costly" in r.reason] == ["mallory@mockpool"]
    line = next(x.text for x in res.log if "Rejected 1.0" in x.text)
    assert "mallory@mockpool" in line and "too costly" in line and "regular expression" in line


def test_current_time_is_the_cycle_time_in_start_requirements_and_ranks():
    # slot1 opens at pool time 500, slot2 at 200; the job prefers the slot whose start
    # time is furthest behind CurrentTime. Driven at now=300, then at now=600.
    snap = pool(
        slot("slot1@exec0001", start="CurrentTime >= 500", OpensAt=500),
        slot("slot2@exec0001", start="time() >= 200", OpensAt=200),
    )
    want = "(CurrentTime - TARGET.OpensAt) >= 0"
    res = run(
        snap,
        [request(1, 2, requirements=want, rank="CurrentTime - TARGET.OpensAt")],
        "NEGOTIATOR_PRE_JOB_RANK =",
        now=300.0,
    )
    assert [m.slot_name for m in res.matches] == ["slot2@exec0001"]
    res = run(
        snap,
        [request(1, 2, requirements=want, rank="CurrentTime - TARGET.OpensAt")],
        "NEGOTIATOR_PRE_JOB_RANK =",
        now=600.0,
    )
    assert [m.slot_name for m in res.matches] == [
        "slot2@exec0001",
        "slot1@exec0001",
    ]  # Rank 400 before 100
    # the pre-job rank sees the cycle's time too: 500 - 600 = -100 beats 200 - 600 = -400
    res = run(snap, [request(1, 2)], "NEGOTIATOR_PRE_JOB_RANK = OpensAt - CurrentTime", now=600.0)
    assert [m.slot_name for m in res.matches] == ["slot1@exec0001", "slot2@exec0001"]


# ------------------------------------------------- custom resources (GPUs) in the policy


def gpu_pslot(name: str = "slot1@gpu0001", *, cpus: int = 8, gpus: int = 2, claims: int = 20):
    """A p-slot whose consumption policy also carves GPUs (CONSUMPTION_GPUS)."""
    return pslot(
        name,
        cpus=cpus,
        memory=16384,
        claims=claims,
        GPUs=gpus,
        MachineResources="Cpus Memory Disk Swap GPUs",
        ConsumptionGPUs=parse_expr("target.RequestGPUs"),
    )


def gpu_request(ac: int, count: int, gpus: int | None) -> ResourceRequest:
    requirements = "(TARGET.Memory >= RequestMemory) && (TARGET.Cpus >= RequestCpus)"
    if gpus is not None:
        requirements += " && (TARGET.GPUs >= RequestGPUs)"
    req = request(ac, count, cpus=1, memory=1024, requirements=requirements)
    if gpus is not None:
        req.ad["RequestGPUs"] = gpus
    return req


def test_pslot_gpus_consumed_per_match():
    # 8 cpus, 2 GPUs; five 1-cpu 1-GPU jobs: the GPUs run out after 2 (cpus left: 6)
    ad, ids = gpu_pslot()
    res = run(pool(ad, claims={"slot1@gpu0001": ids}), [gpu_request(1, 5, gpus=1)])
    assert len(res.matches) == 2
    assert [m.slot_ad.eval("GPUs") for m in res.matches] == [2, 1]
    assert [m.slot_ad.eval("Cpus") for m in res.matches] == [8, 7]


def test_pslot_gpus_left_alone_by_jobs_without_gpu_requests():
    # a missing RequestGPUs reads as 0 in ConsumptionGPUs: eight 1-cpu jobs use all 8 cpus
    # and the slot offered with the last still has both GPUs
    ad, ids = gpu_pslot()
    res = run(pool(ad, claims={"slot1@gpu0001": ids}), [gpu_request(1, 10, gpus=None)])
    assert len(res.matches) == 8
    assert [m.slot_ad.eval("GPUs") for m in res.matches] == [2] * 8


def test_gpu_job_only_on_the_pslot_that_has_gpus():
    # a CPU-only p-slot (no GPUs in MachineResources) keeps its policy; a 1-GPU job's
    # TARGET.GPUs >= 1 is UNDEFINED there, so three such jobs get the 2 GPUs of gpu0001
    cpu_ad, cpu_ids = pslot("slot1@cpu0001", cpus=8, memory=16384)
    gpu_ad, gpu_ids = gpu_pslot()
    snap = pool(cpu_ad, gpu_ad, claims={"slot1@cpu0001": cpu_ids, "slot1@gpu0001": gpu_ids})
    res = run(snap, [gpu_request(1, 3, gpus=1)])
    assert [m.slot_name for m in res.matches] == ["slot1@gpu0001"] * 2


def test_gpu_and_cpu_jobs_share_a_gpu_pslot():
    # 4 cpus, 2 GPUs: two 1-GPU jobs take 2 cpus and both GPUs; the CPU-only jobs get the
    # other 2 cpus; a third GPU job finds no GPU left
    ad, ids = gpu_pslot(cpus=4, gpus=2)
    reqs = [gpu_request(1, 3, gpus=1), gpu_request(2, 5, gpus=None)]
    res = run(pool(ad, claims={"slot1@gpu0001": ids}), reqs)
    assert sorted(m.autocluster_id for m in res.matches) == [1, 1, 2, 2]


def test_listed_resource_without_its_count_has_none_to_give():
    # MachineResources lists GPUs but the slot has no GPUs attribute: none left, so a
    # 1-GPU job whose Requirements do not ask for GPUs (ConsumptionGPUs 1 > 0 left) gets
    # nothing, while CPU-only jobs still fit
    ad, ids = gpu_pslot(cpus=2)
    del ad["GPUs"]
    snap = pool(ad, claims={"slot1@gpu0001": ids})
    blind = gpu_request(1, 1, gpus=None)
    blind.ad["RequestGPUs"] = 1
    assert run(snap, [blind]).matches == []
    assert len(run(snap, [gpu_request(2, 5, gpus=None)]).matches) == 2


def test_resource_names_are_case_insensitive():
    # one slot lists "GPUs", the other "gpus": one resource, each slot's own count
    # deducted once per match (2 GPUs + 1 GPU = 3 one-GPU jobs)
    a, a_ids = gpu_pslot("slot1@gpu0001", gpus=2)
    b, b_ids = gpu_pslot("slot1@gpu0002", gpus=1)
    b["MachineResources"] = "cpus memory disk swap gpus"
    snap = pool(a, b, claims={"slot1@gpu0001": a_ids, "slot1@gpu0002": b_ids})
    res = run(snap, [gpu_request(1, 5, gpus=1)])
    assert sorted(m.slot_name for m in res.matches) == ["slot1@gpu0001"] * 2 + ["slot1@gpu0002"]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.one_of(st.sampled_from([math.nan, -1.0, 0.0, 0.5, 4.0]), st.floats(-8, 8)),
            st.sampled_from([0.0, 1.0, 4.0, 16.0]),
        ),
        min_size=1,
        max_size=4,
    )
)
def test_one_p_slots_leftover_test_is_the_vector_ones_row(pairs: list[tuple[float, float]]):
    """The re-offer test's scalar cp_sufficient_assets answers as the vector one does: no
    NaN, nothing negative, nothing over what is left, and something consumed."""
    cons, avail = (list(x) for x in zip(*pairs, strict=True))
    want = bool(sufficient(np.array([cons]), np.array([avail]))[0])
    assert sufficient_one(cons, avail) is want


def test_cycles_that_carry_their_columns_match_as_cycles_that_do_not():
    """A negotiator's cycles carry their slot and private-ad columns (and what they read
    from them: names, claim ids) to the next; the next snapshot holds the same ad objects
    but those that changed. Round after round of changed states, claim ids and
    accounting groups, the carried cycle makes exactly the matches, and charges exactly
    the slots, of a cycle that reads every ad afresh."""
    import random

    from mockpool.negotiator.cycleinput import CycleCarry

    rng = random.Random(5)
    p_ad, p_ids = pslot("slot1@exec0009", cpus=4, memory=4096, claims=3)
    slots = [slot(f"slot{k}@exec{k // 4:04d}", memory=1024 * (1 + k % 3)) for k in range(1, 13)]
    slots.append(p_ad)
    privates = [private(s.eval("Name")) for s in slots[:-1]] + [private(p_ad.eval("Name"), p_ids)]
    carry = CycleCarry()
    served = charged = 0
    for rnd in range(12):
        slots, privates = slots.copy(), privates.copy()
        for _ in range(rng.choice([1, 2, 3])):
            k = rng.randrange(len(slots) - 1)
            slots[k] = slots[k].copy()
            slots[k]["State"] = rng.choice(["Unclaimed", "Claimed", "Owner"])
            if slots[k].eval("State") == "Claimed":  # charged to whom it runs for
                slots[k]["AccountingGroup"] = rng.choice(["alice@mockpool", "carol@mockpool"])
            if rng.random() < 0.5:
                privates[k] = privates[k].copy()
                privates[k]["Capability"] = f"<{STARTD}>#{rnd}#{k}#fresh"
            if rng.random() < 0.2:  # a private ad without its claim id
                privates[k] = private(slots[k].eval("Name"))
                del privates[k]["Capability"]
        requests = [request(1, 4, memory=2048), request(2, 6, submitter="bob@mockpool")]
        snap = CycleAds(slots, privates)
        want = negotiate(snap, requests, Accountant(), cfg(), 100.0 + rnd)
        got = negotiate(snap, requests, Accountant(), cfg(), 100.0 + rnd, columns=carry)
        assert [m[:7] for m in got.matches] == [m[:7] for m in want.matches], rnd
        assert got.stats.charged == want.stats.charged, rnd
        served += len(got.matches)
        charged += sum(got.stats.charged.values())
    assert served > 40
    assert charged > 12
    assert carry.slots.reused > 0
    # Name and Capability of 13 private ads: read in full once each, then where replaced
    assert 2 * 13 < carry.private.rows_read < 2 * 13 * 4
