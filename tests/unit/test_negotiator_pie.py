"""The pie within one group: shares by 1/EUP, limits, spins, the no-crumbs rule.

Numbers worked by hand from matchmaker.cpp's negotiateWithGroup: with EUPs 5, 10 and 20
the shares are 4/7, 2/7 and 1/7 (max EUP 20; 20/5 + 20/10 + 20/20 = 7).
"""

from __future__ import annotations

import pytest
from builders.cores import job_request, matched_counts, static_pool

from mockpool.classad import parse_expr
from mockpool.negotiator import Accountant, CycleAds, ResourceRequest
from mockpool.negotiator.pie import (
    DONE,
    RESUME,
    SpinStats,
    SubmitterLimits,
    negotiate_with_group,
    permits,
    starvation,
)

A, B, C = "a@mockpool", "b@mockpool", "c@mockpool"


def eup_5_10_20() -> Accountant:
    acct = Accountant()  # RUP 0.5: factors 10, 20, 40 give EUP 5, 10, 20
    for name, factor in ((A, 10.0), (B, 20.0), (C, 40.0)):
        acct.set_factor(name, factor)
    return acct


def three(a: int, b: int, c: int) -> list:
    return [job_request(A, a, ac=1), job_request(B, b, ac=2), job_request(C, c, ac=3)]


def test_eup_5_10_20_on_70_slots_get_40_20_10_in_one_cycle():
    counts, res = matched_counts(static_pool(70), three(100, 100, 100), eup_5_10_20())
    assert counts == {A: 40, B: 20, C: 10}
    # Everybody stopped at the limit; no slot left, so one spin.
    assert res.stats.pie_spins == 1 and res.stats.pies == 1
    assert res.stats.submitters_share_limit == {A, B, C}


def test_one_submitter_asking_for_5_the_second_spin_goes_by_the_new_shares():
    # c (EUP 20) wants 5: spin 1 gives 40, 20, 5 and leaves 5 slots. Spin 2 among a and b
    # (shares 2/3, 1/3 of 70): a's limit 46.67 - 40 = 6.67 comes first and takes all 5.
    counts, res = matched_counts(static_pool(70), three(100, 100, 5), eup_5_10_20())
    assert counts == {A: 45, B: 20, C: 5}
    assert res.stats.pie_spins == 2
    # a (EUP 5) wants 5: spin 1 gives 5, 20, 10 and leaves 35. Spin 2: b's limit
    # 2/3 x 70 - 20 = 26.67 -> 26 matches (a 27th would pass it); c's 23.33 - 10 = 13.33
    # meets the 9 slots left.
    counts, _ = matched_counts(static_pool(70), three(5, 100, 100), eup_5_10_20())
    assert counts == {A: 5, B: 46, C: 19}


def test_limits_take_usage_into_account():
    # b already holds 10 claimed slots: pool 30 (claimed slots count), equal EUPs
    # (both RUP 0.5: usage not yet aged in), limits 15 - 0 and 15 - 10.
    snap = static_pool(20, claimed_by={B: 10})
    counts, _ = matched_counts(
        snap, [job_request(A, 100, ac=1), job_request(B, 100, ac=2)], Accountant()
    )
    assert counts == {A: 15, B: 5}


def test_no_crumbs_one_match_may_pass_a_limit_below_one():
    # Shares 10/11 and 1/11 of 2 slots: b's limit 0.18 still gets its one match.
    acct = Accountant()
    acct.set_factor(A, 100.0)
    counts, _ = matched_counts(
        static_pool(2), [job_request(A, 5, ac=1), job_request(B, 5, ac=2)], acct
    )
    assert counts == {A: 1, B: 1}


def test_permits_rule():
    assert permits(1, 0, 0.2)  # first match of the spin with a limit > 0
    assert not permits(1, 0, 0.0)  # no limit at all
    assert permits(1, 2, 3.0)
    assert not permits(1, 2.5, 3.0)


def test_starvation_ratio():
    assert starvation(10, 30) == 0.25
    assert starvation(0, 0) > 1e38  # FLT_MAX: nothing allowed sorts last


def test_equal_eup_ordered_by_starvation():
    # Same EUP (factors equal, both RUP 0.5); b uses 3 of 10 (limit 5 - 3 = 2, starvation
    # 3/5), a uses 0 (starvation 0): a goes first.
    acct = Accountant()
    acct.check_matches({B: 3.0}, 0.0)
    order: list[str] = []

    def negotiate(name: str, lim: SubmitterLimits) -> tuple[str, float]:
        order.append(name)
        return DONE, 0.0

    negotiate_with_group(
        [B, A],
        name=lambda n: n,
        idle=lambda n: 1,
        acct=acct,
        negotiate=negotiate,
        slots_left=lambda: True,
        untrimmed_weight=10,
        min_slot_weight=1,
        log=lambda s: None,
    )
    assert order == [A, B]


def test_spins_repeat_while_the_pie_shrinks_and_respect_the_group_quota():
    acct = Accountant()
    stats = SpinStats()
    seen: list[tuple[str, int, float]] = []

    def negotiate(name: str, lim: SubmitterLimits) -> tuple[str, float]:
        seen.append((name, lim.spin, round(lim.limit_unclaimed, 3)))
        take = 1.0 if lim.limit_unclaimed >= 1 else 0.0
        acct.add_match(name, take, 0.0)
        acct.add_match(
            "group_x", take, 0.0
        )  # the group's own record, as a grouped match charges it
        return (RESUME if take else DONE), take

    log: list[str] = []
    negotiate_with_group(
        [A],
        name=lambda n: n,
        idle=lambda n: 9,
        acct=acct,
        negotiate=negotiate,
        slots_left=lambda: True,
        untrimmed_weight=100,
        min_slot_weight=1,
        group="group_x",
        group_quota=3,
        log=log.append,
        stats=stats,
    )
    # Each spin: the group's quota left (3 - usage) caps the unclaimed limit.
    assert seen == [(A, 1, 3.0), (A, 2, 2.0), (A, 3, 1.0)]
    assert "Group group_x is using its quota 3 - halting negotiation" in log
    assert stats.pie_spins == 4 and stats.pies == 1


@pytest.mark.parametrize("preempt", [True, False])
def test_over_the_limit_first_spin(preempt: bool):
    # Equal EUPs, 2 slots, a wants 3: limit 1 each. With preemption considered, spin 1
    # lets a continue past its limit for startd-rank preemption only (its next job finds
    # no unclaimed slot); without, a stops at the limit. Spin 2 gives a the second slot.
    text = "" if preempt else "NEGOTIATOR_CONSIDER_PREEMPTION = False"
    counts, res = matched_counts(
        static_pool(2),
        [job_request(A, 3, ac=1), job_request(B, 1, ac=2, requirements="False")],
        Accountant(),
        text,
    )
    assert counts == {A: 2}
    lines = [ln.text for ln in res.log]
    assert ("      Rejected 1.0 a@mockpool <10.0.0.2:9618>: no match found" in lines) is preempt
    assert "    Reached submitter resource limit: 1.000000 ... stopping" in lines


def test_time_limits_stop_a_turn_and_skip_the_submitter_later():
    import itertools

    from mockpool.config import parse_config
    from mockpool.negotiator import negotiate

    ticks = itertools.count()  # a clock that moves one pool second each time it is read
    res = negotiate(
        static_pool(100),
        [job_request(A, 100, ac=1)],
        Accountant(),
        parse_config("NEGOTIATOR_MAX_TIME_PER_SUBMITTER = 30"),
        0.0,
        timer=lambda: float(next(ticks)),
    )
    lines = [ln.text for ln in res.log]
    deadline = [
        x
        for x in lines
        if x.startswith("    Reached deadline for a@mockpool (<10.0.0.2:9618>) after ")
    ]
    assert len(deadline) == 1 and "MAX_TIME_PER_SUBMITTER = 30 sec" in deadline[0]
    assert 0 < len(res.matches) < 100
    # The next spin finds a's 30 seconds spent: skipped, and counted out of time.
    assert "  Negotiation with a@mockpool skipped because of time limits:" in lines
    assert res.stats.submitters_out_of_time == {A}


def _two_claimed_by_c_that_prefer_new_jobs(unclaimed: int) -> CycleAds:
    """``unclaimed`` free slots, then two Claimed by c whose startds rank any new job
    above c's (Rank 10 > CurrentRank 0)."""
    snap = static_pool(unclaimed, claimed_by={C: 2})
    for ad in snap.slots[unclaimed:]:
        ad["Rank"] = 10.0
        ad["CurrentRank"] = 0.0
    return snap


def _ranked_requests(count: int, rank: str) -> list[ResourceRequest]:
    """a's and b's requests of ``count`` jobs each, ranking slots by ``rank``."""
    reqs = [job_request(A, count, ac=1), job_request(B, count, ac=2)]
    for r in reqs:
        r.ad["Rank"] = parse_expr(rank)
    return reqs


@pytest.mark.parametrize("preempt", [True, False])
def test_startd_rank_preemption_is_not_held_to_the_submitter_limit(preempt: bool):
    # a and b at equal EUP on 4 slots: limits 2 each. Two slots are Claimed by c, and
    # their startds rank any new job above c's (Rank 10 > CurrentRank 0). a's jobs rank
    # the unclaimed slots first: a takes them (its limit), then, over the limit on the
    # first spin, the rank preemptions that HTCondor allows whatever the limit.
    snap = _two_claimed_by_c_that_prefer_new_jobs(2)
    reqs = _ranked_requests(5, '10 * (TARGET.State == "Unclaimed")')
    text = "NEGOTIATOR_PRE_JOB_RANK = 0" + (
        "" if preempt else "\nNEGOTIATOR_CONSIDER_PREEMPTION = False"
    )
    counts, res = matched_counts(snap, reqs, Accountant(), text)
    if preempt:
        assert counts == {A: 4}
        assert sorted(m.slot_name for m in res.matches) == [f"slot1@exec{i:05d}" for i in range(4)]
    else:
        assert counts == {A: 2}  # Claimed slots are trimmed; b finds nothing left


def test_over_its_limit_a_submitter_passes_over_every_unclaimed_slot_to_rank_preemptions():
    # a and b at equal EUP on 8 slots: limits 4 each. Six unclaimed slots, each ranked
    # apart by a's jobs (Speed 0..5), and two Claimed by c whose startds rank a new job
    # above c's. a takes Speed 5, 4, 3, 2 (its limit), then, over the limit on the first
    # spin, passes over Speed 1 and 0 to the two rank preemptions; b takes what is left.
    snap = _two_claimed_by_c_that_prefer_new_jobs(6)
    for i, ad in enumerate(snap.slots[:6]):
        ad["Speed"] = i
    reqs = _ranked_requests(8, 'ifThenElse(TARGET.State == "Unclaimed", 10 + TARGET.Speed, 0)')
    counts, res = matched_counts(snap, reqs, Accountant(), "NEGOTIATOR_PRE_JOB_RANK = 0")
    assert counts == {A: 6, B: 2}
    by = {m.slot_name: m.submitter for m in res.matches}
    assert [by[f"slot1@exec{i:05d}"] for i in range(8)] == [B, B, A, A, A, A, A, A]


@pytest.mark.parametrize("claimed", [0, 1])
def test_a_request_past_the_limit_is_not_matched_against_slots_rank_preemption_cannot_take(
    claimed: int, monkeypatch: pytest.MonkeyPatch
):
    # As test_over_the_limit_first_spin, with a's jobs in two autoclusters: a takes one
    # slot on spin 1 and is at its limit when its second request comes. That request may
    # only go where a startd prefers it (rank preemption), which needs a Claimed slot:
    # with none in the pool its candidates are not looked for (HTCondor's matchmaking
    # passes over every unclaimed slot), and it is rejected as before.
    from mockpool.negotiator.search import CandidateSearch

    asked: list[tuple[str, int]] = []
    found = CandidateSearch.candidates

    def spy(self, req, slots):  # type: ignore[no-untyped-def]
        asked.append((req.submitter, req.autocluster_id))
        return found(self, req, slots)

    monkeypatch.setattr(CandidateSearch, "candidates", spy)
    counts, res = matched_counts(
        static_pool(2, claimed_by={C: claimed}),
        [
            job_request(A, 1, ac=1),
            job_request(A, 2, ac=3),
            job_request(B, 1, ac=2, requirements="False"),
        ],
        Accountant(),
    )
    assert counts == {A: 2}
    rejected = [ln.text for ln in res.log if ln.text.startswith("      Rejected 3.0 a@")]
    # with c's slot a candidate, its PREEMPTION_REQUIREMENTS (a's priority no better) say no
    why = "PREEMPTION_REQUIREMENTS == False" if claimed else "no match found"
    assert rejected[0] == f"      Rejected 3.0 a@mockpool <10.0.0.2:9618>: {why}"
    # spin 1: a's first request, (a's second, looking for a startd that prefers it,)
    # b's; spin 2: a's second request
    assert asked == [(A, 1)] + [(A, 3)] * claimed + [(B, 2), (A, 3)]


@pytest.mark.parametrize("last_cpus", [2, 1])
def test_slots_the_limit_turns_down_are_passed_over_a_key_at_a_time_unless_one_costs_less(
    last_cpus: int, monkeypatch: pytest.MonkeyPatch
):
    # 101 static slots of 2 cpus (SlotWeight = Cpus: 202), the last one of 1 cpu or not,
    # all of one rank; a, b and c at equal priority (b's and c's jobs match nothing):
    # spin 1 gives each 202 / 3 = 67.33 (201 / 3 = 67 with the 1-cpu slot). a takes 33
    # slots (66); its next job would cost 2 (68 > the limit). With every slot left at 2
    # the rest of the key fails alike and is passed over in one step (not 67 checks);
    # with the 1-cpu slot among them, the walk goes on and a takes it (67 <= 67).
    from mockpool.negotiator.slottable import CycleSlots

    pool = static_pool(101, cpus=2)
    pool.slots[-1]["Cpus"] = last_cpus
    costed: list[int] = []
    cost_of = CycleSlots.match_cost

    def spy(self, row, cons_of):  # type: ignore[no-untyped-def]
        costed.append(row)
        return cost_of(self, row, cons_of)

    monkeypatch.setattr(CycleSlots, "match_cost", spy)
    counts, res = matched_counts(
        pool,
        [
            job_request(A, 50, ac=1),
            job_request(B, 1, ac=2, requirements="False"),
            job_request(C, 1, ac=3, requirements="False"),
        ],
        Accountant(),
    )
    assert counts == {A: 50}
    spin1 = [
        ln.text
        for ln in res.log[
            : [x.text for x in res.log].index("Phase 4.2:  Negotiating with schedds ...")
        ]
    ]
    matched = [x for x in spin1 if x.startswith("      Successfully matched with ")]
    if last_cpus == 2:
        assert len(matched) == 33
        assert "      Rejected 1.0 a@mockpool <10.0.0.2:9618>: submitter limit exceeded" in spin1
        # each of the 50 matches checked once, and the 34th job's one failed look (then
        # the key is passed over: walked, it would be 67 more)
        assert len(costed) == 50 + 1
    else:
        assert len(matched) == 34
        assert matched[-1] == "      Successfully matched with slot1@exec00100"
        assert len(costed) > 67  # every slot of the key looked at, up to the cheap one
