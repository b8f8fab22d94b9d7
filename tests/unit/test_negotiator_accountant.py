"""The accountant: RUP decay with the half-life, usage, EUP, persistence."""

from __future__ import annotations

import pytest

from mockpool.config import parse_config
from mockpool.negotiator import Accountant, AccountantError


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
