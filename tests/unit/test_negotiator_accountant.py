"""The accountant: RUP decay with the half-life, usage, EUP, persistence."""

from __future__ import annotations

import numpy as np
import pytest

from mockpool.classad import ClassAd
from mockpool.config import parse_config
from mockpool.negotiator import Accountant, AccountantError
from mockpool.negotiator.slotusage import slot_usage


def test_new_submitter_starts_at_half_with_default_factor():
    a = Accountant.from_config(parse_config(""))
    assert a.rup("alice@mockpool") == 0.5
    assert a.eup("alice@mockpool") == 500.0  # 0.5 x DEFAULT_PRIO_FACTOR 1000


def test_half_life_decay_hand_worked():
    a = Accountant(halflife=100.0)
    a.update_priorities(0.0)  # first update starts the clock
    a.check_matches({"bob@mockpool": 10.0}, 0.0)
    assert a.update_priorities(100.0) == 0.5  # beta after one half-life
    assert a.rup("bob@mockpool") == pytest.approx(0.5 * 0.5 + 0.5 * 10)  # 5.25
    a.update_priorities(300.0)  # two more half-lives: beta 0.25
    assert a.rup("bob@mockpool") == pytest.approx(5.25 * 0.25 + 10 * 0.75)  # 8.8125
    a.check_matches({}, 300.0)  # bob's jobs end
    a.update_priorities(400.0)
    assert a.rup("bob@mockpool") == pytest.approx(8.8125 * 0.5)
    assert a.records["bob@mockpool"].accumulated_usage == pytest.approx(10 * 300)


def test_rup_never_below_half():
    a = Accountant(halflife=1.0)
    a.update_priorities(0.0)
    a.check_matches({"x@mockpool": 0.0}, 0.0)
    a.update_priorities(1000.0)
    assert a.rup("x@mockpool") == 0.5


def test_eup_orders_with_factor_and_usage():
    a = Accountant(halflife=100.0)
    a.set_factor("vip@mockpool", 1.0)
    a.update_priorities(0.0)
    a.check_matches({"heavy@mockpool": 100.0}, 0.0)
    a.update_priorities(100.0)
    order = sorted(["heavy@mockpool", "light@mockpool", "vip@mockpool"], key=a.eup)
    assert order == ["vip@mockpool", "light@mockpool", "heavy@mockpool"]


def test_add_match_charges_until_recount_and_copy_is_independent():
    a = Accountant()
    a.add_match("alice@mockpool", 2.0, 5.0)
    b = a.copy()
    b.add_match("alice@mockpool", 1.0, 6.0)
    assert a.resources_used("alice@mockpool") == 2.0
    assert b.resources_used("alice@mockpool") == 3.0


def test_round_trip_and_bad_values():
    a = Accountant(halflife=50.0)
    a.set_factor("a@x", 10.0)
    a.update_priorities(1.0)
    b = Accountant.from_dict(a.to_dict())
    assert b.to_dict() == a.to_dict()
    with pytest.raises(AccountantError, match=">= 1"):
        a.set_factor("a@x", 0.5)
    with pytest.raises(AccountantError, match="PRIORITY_HALFLIFE"):
        Accountant(halflife=0)
    with pytest.raises(AccountantError, match="usage of a@x"):
        a.check_matches({"a@x": -1.0}, 2.0)
    with pytest.raises(AccountantError, match="bad accountant state"):
        Accountant.from_dict({"records": {}})


def test_rup_10_with_no_usage_halves_each_half_life():
    a = Accountant(halflife=3600.0)
    a.set_priority("alice@mockpool", 10.0)
    a.update_priorities(0.0)
    a.check_matches({}, 0.0)
    a.update_priorities(3600.0)
    assert a.rup("alice@mockpool") == pytest.approx(5.0)
    a.update_priorities(7200.0)
    assert a.rup("alice@mockpool") == pytest.approx(2.5)


def test_holding_10_slots_converges_to_rup_10():
    a = Accountant(halflife=100.0)
    a.update_priorities(0.0)
    for t in range(1, 41):
        a.check_matches({"bob@mockpool": 10.0}, t * 100.0 - 100.0)
        a.update_priorities(t * 100.0)
    # 0.5 + (10 - 0.5) x (1 - 2^-40): within 1e-9 of 10
    assert a.rup("bob@mockpool") == pytest.approx(10.0, abs=1e-9)
    assert a.records["bob@mockpool"].accumulated_usage == pytest.approx(10 * 4000)


def test_group_records_are_charged_and_age_with_their_subtree():
    from mockpool.negotiator.groups import GroupConfig

    groups = GroupConfig.from_config(parse_config("GROUP_NAMES = g, g.h\nGROUP_QUOTA_g = 5\n"))
    a = Accountant(halflife=100.0, groups=groups)
    a.update_priorities(0.0)
    a.check_matches({"g.h.u@mockpool": 4.0, "g.v@mockpool": 2.0, "w@mockpool": 1.0}, 0.0)
    assert (
        a.resources_used("g.h") == 4.0
        and a.resources_used("g") == 2.0
        and a.resources_used("<none>") == 1.0
    )
    a.update_priorities(100.0)
    # g ages toward its whole subtree's 6, not its own 2 (HierWeightedResourcesUsed)
    assert a.rup("g") == pytest.approx(0.5 * 0.5 + 0.5 * 6)
    assert a.rup("g.h") == pytest.approx(0.5 * 0.5 + 0.5 * 4)


def test_factors_are_fixed_when_first_read_and_userprio_setters():
    a = Accountant(default_factor=1000.0, nice_factor=1e10)
    assert a.factor("nice-user.bob@mockpool") == 1e10  # nice_user jobs' submitter name
    assert a.eup("carol@mockpool") == 500.0
    a.default_factor = 10.0
    assert a.factor("carol@mockpool") == 1000.0  # stays as first read, as HTCondor writes it
    a.set_priority("carol@mockpool", 8.0)
    assert a.eup("carol@mockpool") == 8000.0
    with pytest.raises(AccountantError, match=r">= 0\.5"):
        a.set_priority("carol@mockpool", 0.1)
    a.add_match("carol@mockpool", 1.0, 5.0)
    a.update_priorities(0.0)
    a.update_priorities(10.0)
    assert a.records["carol@mockpool"].accumulated_usage == 10.0
    a.reset_usage("carol@mockpool", 20.0)
    assert a.records["carol@mockpool"].accumulated_usage == 0.0
    assert a.records["carol@mockpool"].begin_usage_time == 20.0
    assert a.delete("carol@mockpool") and not a.delete("carol@mockpool")
    b = Accountant.from_dict(a.to_dict())
    assert b.to_dict() == a.to_dict()


def test_resources_used_counts_every_slot_a_submitter_holds() -> None:
    """ResourcesUsed is the number of slots held (matchmaker.cpp counts each Claimed slot),
    WeightedResourcesUsed their SlotWeight: alice holds three slots of weight 2, 1 and 1."""
    ads = [
        ClassAd(State="Claimed", RemoteUser="alice@x", RemoteOwner="alice@x"),
        ClassAd(State="Claimed", RemoteUser="alice@x", RemoteOwner="alice@x"),
        ClassAd(State="Claimed", RemoteUser="bob@x", RemoteOwner="bob@x"),
        ClassAd(State="Claimed", RemoteUser="alice@x", RemoteOwner="alice@x"),
        ClassAd(State="Unclaimed"),
    ]
    usage, counts = slot_usage(
        ads, np.array([2.0, 1.0, 4.0, 1.0, 8.0]), np.array([1, 1, 1, 1, 0], dtype=bool)
    )
    assert usage == {"alice@x": 4.0, "bob@x": 4.0}
    assert counts == {"alice@x": 3, "bob@x": 1}
    acct = Accountant()
    acct.check_matches(usage, 10.0, counts)
    assert acct.records["alice@x"].resources_count == 3


def test_reset_all_usage_resets_every_record():
    """condor_userprio -resetall (Accountant::ResetAllUsage): every record's accumulated
    usage to 0 and its usage start to now; priorities stay."""
    a = Accountant(halflife=100.0)
    a.update_priorities(0.0)
    a.check_matches({"alice@mockpool": 2.0, "bob@mockpool": 1.0}, 0.0)
    a.update_priorities(10.0)
    prio = a.rup("alice@mockpool")
    assert a.records["alice@mockpool"].accumulated_usage == 20.0
    a.reset_all_usage(30.0)
    for name in ("alice@mockpool", "bob@mockpool"):
        assert a.records[name].accumulated_usage == 0.0
        assert a.records[name].begin_usage_time == 30.0
    assert a.rup("alice@mockpool") == prio
