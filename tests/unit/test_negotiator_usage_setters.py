"""condor_userprio's usage setters (htcondor2.Negotiator's setUsage, setBeginUsage,
setLastUsage): SET_ACCUMUSAGE sets the accumulated weighted usage (resource-seconds),
SET_BEGINTIME and SET_LASTTIME the dates usage began and was last seen (Unix times; the
accountant keeps pool seconds, the Accounting ads show dates again)."""

from __future__ import annotations

from pathlib import Path

import pytest
from builders.cores import v

from mockpool.config import parse_config
from mockpool.negotiator.accountant import AccountantError
from mockpool.negotiator.negotiator import Negotiator

E = 1_767_225_600  # the pool's date of pool time 0
ALICE = "alice@mockpool"


def _negotiator(tmp_path: Path) -> Negotiator:
    cfg = parse_config("", "test.conf").for_subsystem("NEGOTIATOR")
    return Negotiator("negotiator", cfg, tmp_path, log_base_wall=E)


def test_usage_setters_set_what_the_accounting_ads_show(tmp_path: Path) -> None:
    n = _negotiator(tmp_path)
    n.userprio("setaccum", ALICE, 7200.0, 10.0)
    n.userprio("setbegin", ALICE, E + 300, 10.0)
    ads = n.userprio("setlast", ALICE, E + 500, 10.0)
    (alice,) = [a for a in ads if v(a, "Name") == ALICE]
    assert v(alice, "AccumulatedUsage") == 7200.0
    assert v(alice, "WeightedAccumulatedUsage") == 7200.0
    assert v(alice, "BeginUsageTime") == E + 300  # kept as pool second 300
    assert v(alice, "LastUsageTime") == E + 500
    assert n.accountant.records[ALICE].begin_usage_time == 300.0
    # the file the negotiator keeps has them: a restarted negotiator reads them back
    again = _negotiator(tmp_path)
    assert again.accountant.records[ALICE].accumulated_usage == 7200.0
    assert again.accountant.records[ALICE].last_usage_time == 500.0


def test_a_negative_usage_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    n = _negotiator(tmp_path)
    with pytest.raises(AccountantError, match="accumulated usage of alice@mockpool must be >= 0"):
        n.userprio("setaccum", ALICE, -1.0, 10.0)
    assert ALICE not in n.accountant.records
