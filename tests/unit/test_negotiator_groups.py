"""Hierarchical group quotas (GroupEntry.cpp): quotas, surplus, caps, order, limits.

Every number is worked by hand from hgq_assign_quotas / hgq_fairshare /
hgq_allocate_surplus / strict_enforce_quota; one-slot machines, SlotWeight = Cpus = 1.
"""

from __future__ import annotations

import math

import pytest
from builders.cores import job_request, matched_counts, static_pool
from hypothesis import given, settings
from hypothesis import strategies as st

from mockpool.config import parse_config
from mockpool.negotiator import Accountant
from mockpool.negotiator.groups import ROOT, GroupConfig, GroupConfigError, GroupTree, group_of

PHYS, CHEM = "group_physics.alice@mockpool", "group_chemistry.bob@mockpool"


def tree(
    text: str,
    total: float,
    demand: dict[str, float] | None = None,
    usage: dict[str, float] | None = None,
) -> GroupTree:
    t = GroupTree(GroupConfig.from_config(parse_config(text, "g.conf")))
    t.prepare(total, lambda g: (usage or {}).get(g, 0.0), demand or {})
    return t


def quotas(t: GroupTree) -> dict[str, float]:
    return {g.name: round(g.quota, 6) for g in t.groups}


STATIC = """GROUP_NAMES = group_physics, group_chemistry
GROUP_QUOTA_group_physics = 20
GROUP_QUOTA_group_chemistry = 10
"""
DYNAMIC = """GROUP_NAMES = group_physics, group_chemistry, group_physics.hep
GROUP_QUOTA_DYNAMIC_group_physics = 0.6666666666666666
GROUP_QUOTA_DYNAMIC_group_chemistry = 0.3333333333333333
GROUP_QUOTA_DYNAMIC_group_physics.hep = 0.75
"""


def test_static_quotas_on_30():
    assert quotas(tree(STATIC, 30)) == {ROOT: 0.0, "group_chemistry": 10.0, "group_physics": 20.0}


def test_static_quotas_scaled_without_oversubscription():
    t = tree(STATIC + "NEGOTIATOR_ALLOW_QUOTA_OVERSUBSCRIPTION = False\n", 15)
    assert quotas(t) == {ROOT: 0.0, "group_chemistry": 5.0, "group_physics": 10.0}


def test_static_quotas_with_oversubscription_keep_their_size():
    # The default: sqa = sq = 30 > 15; each child keeps its configured quota.
    assert quotas(tree(STATIC, 15)) == {ROOT: 0.0, "group_chemistry": 10.0, "group_physics": 20.0}


@pytest.mark.parametrize("total", [30, 60, 15, 9])
def test_dynamic_quotas_follow_the_pool(total: float):
    t = tree(DYNAMIC, total)
    assert t.group("group_physics").subtree_quota == pytest.approx(total * 2 / 3)
    assert t.group("group_chemistry").quota == pytest.approx(total / 3)
    # hep: 0.75 of physics's 2/3; physics (oversubscription on) keeps its whole quota.
    assert t.group("group_physics.hep").quota == pytest.approx(total * 2 / 3 * 0.75)
    assert t.group("group_physics").quota == pytest.approx(total * 2 / 3)
    assert t.root.quota == pytest.approx(0.0, abs=1e-9)


def test_hep_quota_15_of_30_and_physics_keeps_the_rest_without_oversubscription():
    t = tree(DYNAMIC, 30)
    assert t.group("group_physics.hep").quota == pytest.approx(15.0)
    t = tree(DYNAMIC + "NEGOTIATOR_ALLOW_QUOTA_OVERSUBSCRIPTION = false\n", 30)
    assert t.group("group_physics.hep").quota == pytest.approx(15.0)
    assert t.group("group_physics").quota == pytest.approx(5.0)


def test_dynamic_fractions_over_one_are_scaled():
    t = tree("GROUP_NAMES = a, b\nGROUP_QUOTA_DYNAMIC_a = 0.9\nGROUP_QUOTA_DYNAMIC_b = 0.6\n", 30)
    assert t.group("a").quota == pytest.approx(18.0) and t.group("b").quota == pytest.approx(12.0)


def test_names_are_case_insensitive_and_jobs_map_to_the_deepest_defined_group():
    names = {"group_physics": "group_physics", "group_physics.hep": "group_physics.hep"}
    assert group_of("Group_Physics.HEP.alice@mockpool", names) == "group_physics.hep"
    assert group_of("group_physics.hep.theory.alice@mockpool", names) == "group_physics.hep"
    assert group_of("group_physics.alice@mockpool", names) == "group_physics"
    assert group_of("group_bio.alice@mockpool", names) == ROOT
    assert group_of("alice@mockpool", names) == ROOT
    assert group_of("GROUP_PHYSICS", names) == "group_physics"


def test_an_accountant_charges_the_group_of_its_current_tree():
    acct = Accountant()
    assert acct.group_of("group_physics.alice@mockpool") == ROOT
    acct.set_groups(GroupConfig.from_config(parse_config("GROUP_NAMES = group_physics\n")))
    assert acct.group_of("group_physics.alice@mockpool") == "group_physics"
    acct.add_match("group_physics.alice@mockpool", 2.0, 0.0)
    assert acct.resources_used("group_physics") == 2.0
    acct.set_groups(GroupConfig())
    assert acct.group_of("group_physics.alice@mockpool") == ROOT


def test_a_charger_charges_as_add_match_does():
    # A request's matches are charged through one charger: the submitter, its group and
    # every ancestor's subtree usage, as add_match charges them (1.5 + 0.5 here).
    config = parse_config("GROUP_NAMES = group_a, group_a.b\n")
    one, many = Accountant(), Accountant()
    for acct in (one, many):
        acct.set_groups(GroupConfig.from_config(config))
    user = "group_a.b.alice@mockpool"
    one.add_match(user, 1.5, 10.0)
    one.add_match(user, 0.5, 20.0)
    charge = many.charger(user)
    charge(1.5, 10.0)
    charge(0.5, 20.0)
    for acct in (one, many):
        assert acct.resources_used(user) == 2.0 and acct.records[user].resources_count == 2
        assert acct.resources_used("group_a.b") == 2.0
        assert acct.records[user].begin_usage_time == 10.0
        assert acct.records[user].last_usage_time == 20.0
    assert {k: v.hier_used for k, v in one.records.items()} == {
        k: v.hier_used for k, v in many.records.items()
    }
    assert many.records["group_a"].hier_used == 2.0


# ------------------------------------------------------------ whole cycles


def both(n_phys: int = 100, n_chem: int = 100) -> list:
    return [job_request(PHYS, n_phys, ac=1), job_request(CHEM, n_chem, ac=2)]


def test_cycle_static_20_10_on_30():
    counts, res = matched_counts(static_pool(30), both(), Accountant(), STATIC)
    assert counts == {PHYS: 20, CHEM: 10}
    lines = [ln.text for ln in res.log]
    assert "Group group_physics - BEGIN NEGOTIATION with a quota limit of 20" in lines
    assert "Group group_chemistry - BEGIN NEGOTIATION with a quota limit of 10" in lines
    assert "group quotas: allocation round 1" in lines
    assert "Round 1 totals: allocated= 30  usage= 30" in lines


def test_cycle_oversubscription_off_15_slots_10_and_5():
    counts, _ = matched_counts(
        static_pool(15),
        both(),
        Accountant(),
        STATIC + "NEGOTIATOR_ALLOW_QUOTA_OVERSUBSCRIPTION = False\n",
    )
    assert counts == {PHYS: 10, CHEM: 5}


def test_cycle_oversubscription_on_15_slots_first_group_in_order_fills_its_quota():
    # Quotas stay 20 and 10; both start at usage 0 (sort key 0) and go in name order:
    # chemistry takes its 10, physics gets the 5 left.
    counts, _ = matched_counts(static_pool(15), both(), Accountant(), STATIC)
    assert counts == {PHYS: 5, CHEM: 10}


def test_group_sort_expr_decides_who_goes_first():
    text = (
        STATIC + 'GROUP_SORT_EXPR = ifThenElse(AccountingGroup =?= "<none>", 3.4e38, -GroupQuota)\n'
    )
    counts, _ = matched_counts(static_pool(15), both(), Accountant(), text)
    assert counts == {PHYS: 15}


def test_starvation_order_least_used_fraction_first():
    # physics holds 10 of its 20 (key 0.5), chemistry 0 of 10 (key 0): chemistry first.
    snap = static_pool(20, claimed_by={PHYS: 10})
    _, res = matched_counts(snap, both(), Accountant(), STATIC)
    begins = [ln.text.split(" - ")[0] for ln in res.log if "BEGIN NEGOTIATION" in ln.text]
    assert begins[:2] == ["Group group_chemistry", "Group group_physics"]
    snap = static_pool(25, claimed_by={CHEM: 5})
    _, res = matched_counts(snap, both(), Accountant(), STATIC)
    begins = [ln.text.split(" - ")[0] for ln in res.log if "BEGIN NEGOTIATION" in ln.text]
    assert begins[:2] == ["Group group_physics", "Group group_chemistry"]


def test_fractional_quota_negotiates_with_the_truncated_limit():
    # 0.495 x 30 = 14.85: logged as such, but the negotiator's callback takes an int.
    text = "GROUP_NAMES = group_a\nGROUP_QUOTA_DYNAMIC_group_a = 0.495\n"
    counts, res = matched_counts(
        static_pool(30), [job_request("group_a.u@mockpool", 100)], Accountant(), text
    )
    assert counts == {"group_a.u@mockpool": 14}
    assert "Group group_a - BEGIN NEGOTIATION with a quota limit of 14.85" in [
        ln.text for ln in res.log
    ]


def test_surplus_only_to_groups_that_accept_it():
    # Pool 40, quotas 10 + 10, root keeps 20 with no demand: all 20 go to physics (the
    # only group accepting surplus); chemistry stays at its 10.
    text = STATIC.replace("= 20", "= 10") + "GROUP_ACCEPT_SURPLUS_group_physics = True\n"
    counts, _ = matched_counts(static_pool(40), both(), Accountant(), text)
    assert counts == {PHYS: 30, CHEM: 10}
    # Everybody accepting: 20 shared in proportion to quota (10 : 10).
    counts, _ = matched_counts(
        static_pool(40),
        both(),
        Accountant(),
        STATIC.replace("= 20", "= 10") + "GROUP_ACCEPT_SURPLUS = True\n",
    )
    assert counts == {PHYS: 20, CHEM: 20}


NESTED = """GROUP_NAMES = group_physics, group_physics.hep, group_chemistry
GROUP_QUOTA_group_physics = 10
GROUP_QUOTA_DYNAMIC_group_physics.hep = 0.5
GROUP_QUOTA_group_chemistry = 10
GROUP_ACCEPT_SURPLUS_group_physics.hep = True
"""
HEP = "group_physics.hep.carol@mockpool"


def test_parent_without_surplus_caps_its_subtree():
    # hep: quota 5, plus physics's unused 10 as surplus -> allocated 15; physics does not
    # accept surplus, so strict enforcement caps the subtree at physics's 10.
    counts, res = matched_counts(static_pool(40), [job_request(HEP, 100)], Accountant(), NESTED)
    assert counts == {HEP: 10}
    assert (
        "Group group_physics with accept_surplus=false has total usage = 0 and config quota of 10 -- "
        "constraining allocation in subgroup group_physics.hep to 10"
    ) in [ln.text for ln in res.log]
    # physics accepting surplus: the root's 20 and chemistry's 10 flow down to hep.
    counts, _ = matched_counts(
        static_pool(40),
        [job_request(HEP, 100)],
        Accountant(),
        NESTED + "GROUP_ACCEPT_SURPLUS_group_physics = True\n",
    )
    assert counts == {HEP: 40}


def test_jobs_of_undefined_subgroups_use_the_deepest_defined_group():
    text = "GROUP_NAMES = group_a\nGROUP_QUOTA_group_a = 3\n"
    counts, _ = matched_counts(
        static_pool(10), [job_request("group_a.sub.u@mockpool", 9)], Accountant(), text
    )
    assert counts == {"group_a.sub.u@mockpool": 3}


def test_autoregroup_lets_a_group_negotiate_in_the_root_after_its_quota():
    text = "GROUP_NAMES = group_a\nGROUP_QUOTA_group_a = 3\nGROUP_AUTOREGROUP_group_a = True\n"
    counts, _ = matched_counts(
        static_pool(10), [job_request("group_a.u@mockpool", 9)], Accountant(), text
    )
    assert counts == {"group_a.u@mockpool": 9}


def test_group_prio_factor_applies_to_the_groups_submitters():
    text = "GROUP_NAMES = group_a\nGROUP_QUOTA_group_a = 3\nGROUP_PRIO_FACTOR_group_a = 7\n"
    acct = Accountant.from_config(parse_config(text))
    assert acct.factor("group_a.u@mockpool") == 7.0
    assert acct.factor("group_a") == 7.0  # the group's own record too
    assert acct.factor("u@mockpool") == 1000.0
    assert acct.factor("nice-user.u@mockpool") == 1e10


# -------------------------------------------------------------- bad config


@pytest.mark.parametrize(
    ("text", "knob", "problem"),
    [
        ("GROUP_NAMES = a\nGROUP_QUOTA_a = -1\n", "GROUP_QUOTA_a", "must be a number in"),
        ("GROUP_NAMES = a\nGROUP_QUOTA_a = lots\n", "GROUP_QUOTA_a", "must be a number"),
        ("GROUP_NAMES = a\nGROUP_QUOTA_DYNAMIC_a = 1.5\n", "GROUP_QUOTA_DYNAMIC_a", "[0, 1]"),
        ("GROUP_NAMES = a\nGROUP_QUOTA_b = 3\n", "GROUP_QUOTA_b", "group b is not in GROUP_NAMES"),
        ("GROUP_NAMES = a.b\n", "GROUP_NAMES", "no parent a"),
        ("GROUP_NAMES = a\nGROUP_SORT_EXPR = GroupQuota +\n", "GROUP_SORT_EXPR", "cannot parse"),
        (
            'GROUP_NAMES = a\nGROUP_SORT_EXPR = "by name"\n',
            "GROUP_SORT_EXPR",
            "must evaluate to a number",
        ),
    ],
)
def test_bad_group_config_names_the_knob(text: str, knob: str, problem: str):
    with pytest.raises(GroupConfigError) as err:
        GroupConfig.from_config(parse_config(text))
    assert err.value.knob == knob and problem in str(err.value)


# ------------------------------------------------------ properties of the rounds


@st.composite
def configs(draw):
    n = draw(st.integers(1, 5))
    names: list[str] = []
    lines = []
    for i in range(n):
        parent = draw(st.sampled_from([None, *names])) if names else None
        name = f"{parent}.g{i}" if parent else f"g{i}"
        names.append(name)
        if draw(st.booleans()):
            lines.append(f"GROUP_QUOTA_{name} = {draw(st.integers(0, 20))}")
        else:
            lines.append(
                f"GROUP_QUOTA_DYNAMIC_{name} = {draw(st.sampled_from([0, 0.1, 0.25, 0.5, 1]))}"
            )
        lines.append(f"GROUP_ACCEPT_SURPLUS_{name} = {draw(st.booleans())}")
    lines.append(f"NEGOTIATOR_ALLOW_QUOTA_OVERSUBSCRIPTION = {draw(st.booleans())}")
    demand = {f"{nm}.u@mockpool": float(draw(st.integers(0, 30))) for nm in names}
    return (
        "GROUP_NAMES = " + ", ".join(names) + "\n" + "\n".join(lines) + "\n",
        demand,
        draw(st.integers(0, 60)),
    )


def quota_sum(g) -> float:
    return g.quota + sum(quota_sum(c) for c in g.children)


@settings(max_examples=60, deadline=None)
@given(configs())
def test_allocation_never_exceeds_demand_or_quota_plus_surplus(case):
    text, demand, total = case
    t = GroupTree(GroupConfig.from_config(parse_config(text)))
    t.prepare(float(total), lambda g: 0.0, demand)
    t._fairshare(t.root)
    for g in t.groups:
        asked = sum(d for s, d in demand.items() if t.assigned(s) is g)
        assert -1e-9 <= g.allocated <= asked + 1e-9
        if not g.accept_surplus and g is not t.root:
            # Surplus reaches it only from its own subtree (a parent shares its
            # children's unused quota on equal footing with them).
            assert g.allocated <= quota_sum(g) + 1e-9
    if not t.cfg.allow_oversubscription:
        assert sum(g.allocated for g in t.groups) <= total + 1e-6
        assert sum(g.quota for g in t.groups) <= total + 1e-6
    # In a cycle, a group that does not accept surplus never gets more than its quota.
    limits: dict[str, int] = {}
    t.negotiate_all(
        weighted=True,
        usage=lambda g: 0.0,
        negotiate=lambda g, n: limits.__setitem__(g.name, n),
        log=lambda s: None,
        now=0.0,
    )
    for name, n in limits.items():
        g = t.group(name)
        assert n == math.trunc(n) and n >= 0
        p = g
        while p is not None:
            if not p.accept_surplus:
                cap = p.config_quota if p.static_quota else p.subtree_quota
                assert n <= max(cap, 0) + 1e-9
            p = p.parent


def test_group_demand_comes_from_the_submitter_ads_and_rounds_hand_on_the_rest():
    from mockpool.classad import ClassAd
    from mockpool.negotiator import CycleAds

    text = (
        STATIC.replace("= 20", "= 10")
        + "GROUP_ACCEPT_SURPLUS = True\nGROUP_QUOTA_MAX_ALLOCATION_ROUNDS = 1\n"
    )
    reqs = both(3, 50)
    # Requests alone: physics asks 3, so 7 of its 10 go to chemistry as surplus.
    counts, _ = matched_counts(static_pool(20), reqs, Accountant(), text)
    assert counts == {PHYS: 3, CHEM: 17}
    # A Submitter ad saying physics wants 10 (WeightedIdleJobs) holds its 10 for it; in
    # one round the 7 it cannot use are not handed on.
    snap = static_pool(20)
    ads = [
        ClassAd(MyType="Submitter", Name=PHYS, WeightedIdleJobs=10.0, WeightedRunningJobs=0.0),
        ClassAd(MyType="Submitter", Name=CHEM, WeightedIdleJobs=50.0, WeightedRunningJobs=0.0),
    ]
    counts, _ = matched_counts(
        CycleAds(snap.slots, snap.private_ads, ads), reqs, Accountant(), text
    )
    assert counts == {PHYS: 3, CHEM: 10}
    # With the default 3 rounds, round 2 gives chemistry the 7 physics left.
    counts, _ = matched_counts(
        CycleAds(snap.slots, snap.private_ads, ads),
        reqs,
        Accountant(),
        text.replace("ROUNDS = 1", "ROUNDS = 3"),
    )
    assert counts == {PHYS: 3, CHEM: 17}


def test_whole_number_limits_weighted_and_unweighted():
    # Four groups at 0.25 of 10 slots: quotas 2.5. With slot weights the limit handed to
    # the pie is int(2.5) = 2, and the halves are never matched (round 2 finds every group
    # at its allocation). Without slot weights HTCondor floors the allocations and deals
    # the remainders (4 x 0.5 = 2 slots) round robin: a and b get one more.
    groups = "abcd"
    text = f"GROUP_NAMES = {', '.join(groups)}\n" + "".join(
        f"GROUP_QUOTA_DYNAMIC_{g} = 0.25\nGROUP_ACCEPT_SURPLUS_{g} = True\n" for g in groups
    )
    reqs = [job_request(f"{g}.u@mockpool", 100, ac=i) for i, g in enumerate(groups)]
    counts, res = matched_counts(static_pool(10), reqs, Accountant(), text)
    assert counts == {f"{g}.u@mockpool": 2 for g in groups}
    assert "Group a - BEGIN NEGOTIATION with a quota limit of 2.5" in [ln.text for ln in res.log]
    counts, res = matched_counts(
        static_pool(10), reqs, Accountant(), text + "NEGOTIATOR_USE_SLOT_WEIGHTS = False\n"
    )
    assert counts == {"a.u@mockpool": 3, "b.u@mockpool": 3, "c.u@mockpool": 2, "d.u@mockpool": 2}
    assert "Group a - BEGIN NEGOTIATION with a quota limit of 3" in [ln.text for ln in res.log]
