"""The schedd's ads-and-reschedule timer (HTCondor's Scheduler::timeout and its Timeslice):
hand-worked times."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from mockpool.config import parse_config
from mockpool.schedd.cadence import AdCadence
from mockpool.schedd.queue import JobQueue
from mockpool.schedd.schedd import Schedd

SLEEP = "executable = /bin/sleep\nrequest_memory = 128\n"


def test_the_ads_go_at_start_then_every_interval() -> None:
    c = AdCadence(300, 5, now=10)
    assert c.due() == 10  # initial interval 0
    assert c.start(10) is False
    assert c.due() == 310
    assert c.start(310) is False
    assert c.due() == 610


def test_a_change_sends_the_ads_the_minimum_interval_after_the_first_change() -> None:
    c = AdCadence(300, 5, now=0)
    c.start(0)
    c.changed(100)
    assert c.due() == 105
    c.changed(103)  # a later change does not put them off
    assert c.due() == 105
    assert c.start(105) is False  # no reschedule asked
    assert c.due() == 405


def test_a_reschedule_runs_at_once_after_a_quiet_time_and_asks_for_a_cycle_once() -> None:
    c = AdCadence(300, 5, now=0)
    c.start(0)
    c.expedite(200)  # 200 s since the last run: at once
    assert c.due() == 200 and c.reschedule_pending
    assert c.start(200) is True
    assert not c.reschedule_pending
    assert c.due() == 500
    c.changed(250)
    assert c.start(255) is False  # asked once, sent once


def test_a_reschedule_soon_after_a_run_waits_for_the_minimum_interval() -> None:
    c = AdCadence(300, 5, now=0)
    c.start(200)
    c.expedite(202)
    assert c.due() == 205  # last start 200 + SCHEDD_MIN_INTERVAL 5
    c.expedite(203)
    assert c.due() == 205
    assert c.start(205) is True
    assert c.due() == 505


def test_a_reschedule_comes_before_a_pending_change() -> None:
    c = AdCadence(300, 5, now=0)
    c.start(205)
    c.changed(300)
    assert c.due() == 305
    c.expedite(301)  # max(301, 205 + 5)
    assert c.due() == 301


def test_before_the_first_run_a_reschedule_waits_for_nothing() -> None:
    c = AdCadence(300, 5, now=50)
    c.expedite(20)
    assert c.due() == 20
    assert c.start(20) is True


def test_without_schedd_send_reschedule_the_ads_still_go_and_no_cycle_is_asked() -> None:
    c = AdCadence(300, 5, now=0, send_reschedule=False)
    c.start(0)
    c.expedite(100)
    assert c.due() == 100
    assert c.start(100) is False


def test_the_knobs_and_their_defaults() -> None:
    c = AdCadence.from_config(parse_config("", "<test>"), 0.0)
    assert (c.interval, c.min_interval, c.send_reschedule) == (300, 5, True)
    cfg = "SCHEDD_INTERVAL = 60\nSCHEDD_MIN_INTERVAL = 10\nSCHEDD_SEND_RESCHEDULE = False\n"
    c = AdCadence.from_config(parse_config(cfg, "<test>"), 0.0)
    assert (c.interval, c.min_interval, c.send_reschedule) == (60, 10, False)


@pytest.mark.parametrize("bad", [-1, math.inf, math.nan])
def test_an_interval_that_is_not_a_number_of_seconds_is_refused(bad: float) -> None:
    with pytest.raises(ValueError, match="SCHEDD_MIN_INTERVAL must be a number >= 0"):
        AdCadence(300, bad, 0)


def test_a_submit_and_a_release_ask_for_a_reschedule_and_a_hold_does_not(tmp_path: Path) -> None:
    s = Schedd("schedd1", JobQueue(tmp_path / "q.sqlite"), parse_config("", "<test>"), 0.0)
    assert s.ad_cadence.start(0.0) is False
    s.submit(SLEEP + "queue 2\n", "a.sub", "alice", 30.0)
    assert s.ad_cadence.due() == 30.0
    assert s.ad_cadence.start(30.0) is True
    s.act("hold", ["1.0"], "", "", "alice", 40.0)
    assert not s.ad_cadence.reschedule_pending
    s.act("release", ["1.0"], "", "", "alice", 41.0)
    assert s.ad_cadence.reschedule_pending and s.ad_cadence.due() == 41.0
    s.act("release", ["1.1"], "", "", "alice", 42.0)  # not held: refused, nothing asked
    assert s.ad_cadence.start(42.0) is True
    s.act("release", ["1.1"], "", "", "alice", 50.0)
    assert not s.ad_cadence.reschedule_pending
