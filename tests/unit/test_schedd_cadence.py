"""The schedd's ads-and-reschedule timer (HTCondor's Scheduler::timeout, its Timeslice
and its submitter-pressure rule): hand-worked times."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from mockpool.config import parse_config
from mockpool.schedd.cadence import AdCadence, AdCadenceError
from mockpool.schedd.queue import JobQueue
from mockpool.schedd.schedd import Schedd

SLEEP = "executable = /bin/sleep\nrequest_memory = 128\n"


def run(c: AdCadence, now: float, idle: int | None = None) -> bool:
    """One run at ``now`` (sending Submitter ads with ``idle`` idle jobs, or none):
    whether RESCHEDULE follows."""
    c.start(now)
    if idle is not None:
        c.submitters_sent(idle)
    return c.finish()


def test_the_ads_go_at_start_then_every_interval() -> None:
    c = AdCadence(300, 5, now=10)
    assert c.due() == 10  # initial interval 0
    assert run(c, 10) is False
    assert c.due() == 310
    assert run(c, 310) is False
    assert c.due() == 610


def test_a_change_sends_the_ads_the_minimum_interval_after_the_first_change() -> None:
    c = AdCadence(300, 5, now=0)
    run(c, 0)
    c.changed(100)
    assert c.due() == 105
    c.changed(103)  # a later change does not put them off
    assert c.due() == 105
    assert run(c, 105) is False  # no reschedule asked
    assert c.due() == 405


def test_a_reschedule_runs_at_once_after_a_quiet_time_and_asks_for_a_cycle_once() -> None:
    c = AdCadence(300, 5, now=0)
    run(c, 0)
    c.expedite(200)  # 200 s since the last run: at once
    assert c.due() == 200 and c.reschedule_pending
    assert run(c, 200) is True
    assert not c.reschedule_pending
    assert c.due() == 500
    c.changed(250)
    assert run(c, 255) is False  # asked once, sent once


def test_a_reschedule_soon_after_a_run_waits_for_the_minimum_interval() -> None:
    c = AdCadence(300, 5, now=0)
    run(c, 200)
    c.expedite(202)
    assert c.due() == 205  # last start 200 + SCHEDD_MIN_INTERVAL 5
    c.expedite(203)
    assert c.due() == 205
    assert run(c, 205) is True
    assert c.due() == 505


def test_a_reschedule_comes_before_a_pending_change() -> None:
    c = AdCadence(300, 5, now=0)
    run(c, 205)
    c.changed(300)
    assert c.due() == 305
    c.expedite(301)  # max(301, 205 + 5)
    assert c.due() == 301


def test_before_the_first_run_a_reschedule_waits_for_nothing() -> None:
    c = AdCadence(300, 5, now=50)
    c.expedite(20)
    assert c.due() == 20
    assert run(c, 20) is True


def test_without_schedd_send_reschedule_the_ads_still_go_and_no_cycle_is_asked() -> None:
    c = AdCadence(300, 5, now=0, send_reschedule=False)
    run(c, 0)
    c.expedite(100)
    assert c.due() == 100
    assert run(c, 100, idle=3) is False


def test_ads_that_start_the_pressure_ask_for_a_cycle_and_ads_that_end_it_call_it_off() -> None:
    c = AdCadence(300, 5, now=0)
    assert run(c, 0, idle=0) is False
    assert run(c, 300, idle=4) is True  # none idle before, 4 now
    assert c.pressure == 4
    assert run(c, 600, idle=2) is False  # still pressure: no change, nothing asked
    assert c.pressure == 4  # kept from the transition, as LastSubmitterPressure
    c.expedite(700)
    assert run(c, 705, idle=0) is False  # the pressure ended: the reschedule is called off
    assert c.pressure == 0
    c.expedite(800)
    assert run(c, 800) is True  # no Submitter ads sent: the pressure rule does not apply


def test_a_submit_asks_for_a_reschedule_and_without_submit_send_reschedule_only_from_rest() -> None:
    c = AdCadence(300, 5, now=0)
    run(c, 0)
    c.submitted(10, idle=0)  # condor_submit's reschedule, even for held jobs
    assert c.reschedule_pending and c.due() == 10
    quiet = AdCadence(300, 5, now=0, submit_reschedules=False)
    run(quiet, 0, idle=0)
    quiet.submitted(10, idle=0)  # held jobs only: nothing to negotiate for
    assert not quiet.reschedule_pending and quiet.due() == 300
    quiet.submitted(20, idle=2)  # idle jobs and no pressure before: endSubmitTransaction
    assert quiet.reschedule_pending and quiet.due() == 20
    assert run(quiet, 20, idle=2) is True
    quiet.submitted(100, idle=2)  # already under pressure: the next run will do
    assert not quiet.reschedule_pending and quiet.due() == 320


def test_the_knobs_and_their_defaults() -> None:
    c = AdCadence.from_config(parse_config("", "<test>"), 0.0)
    assert (c.interval, c.min_interval, c.send_reschedule, c.submit_reschedules) == (
        300,
        5,
        True,
        True,
    )
    cfg = (
        "SCHEDD_INTERVAL = 60\nSCHEDD_MIN_INTERVAL = 10\nSCHEDD_SEND_RESCHEDULE = False\n"
        "SUBMIT_SEND_RESCHEDULE = False\n"
    )
    c = AdCadence.from_config(parse_config(cfg, "<test>"), 0.0)
    assert (c.interval, c.min_interval, c.send_reschedule, c.submit_reschedules) == (
        60,
        10,
        False,
        False,
    )


@pytest.mark.parametrize("bad", [-1, math.inf, math.nan])
def test_an_interval_that_is_not_a_number_of_seconds_is_refused(bad: float) -> None:
    with pytest.raises(AdCadenceError, match="SCHEDD_MIN_INTERVAL must be a number >= 0") as e:
        AdCadence(300, bad, 0)
    assert e.value.knob == "SCHEDD_MIN_INTERVAL"


def test_a_submit_and_a_release_ask_for_a_reschedule_and_a_hold_does_not(tmp_path: Path) -> None:
    s = Schedd("schedd1", JobQueue(tmp_path / "q.sqlite"), parse_config("", "<test>"), 0.0)
    run(s.ad_cadence, 0.0)
    s.submit(SLEEP + "queue 2\n", "a.sub", "alice", 30.0)
    assert s.ad_cadence.due() == 30.0
    s.ad_cadence.start(30.0)
    s.submitter_updates(30.0)  # the Submitter ads: 2 idle jobs, the pressure starts
    assert s.ad_cadence.pressure == 2
    assert s.ad_cadence.finish() is True
    s.act("hold", ["1.0"], "", "", "alice", 40.0)
    assert not s.ad_cadence.reschedule_pending
    s.act("release", ["1.0"], "", "", "alice", 41.0)
    assert s.ad_cadence.reschedule_pending and s.ad_cadence.due() == 41.0
    s.act("release", ["1.1"], "", "", "alice", 42.0)  # not held: refused, nothing asked
    assert run(s.ad_cadence, 42.0) is True
    s.act("release", ["1.1"], "", "", "alice", 50.0)
    assert not s.ad_cadence.reschedule_pending


def test_a_reschedule_asked_while_a_run_sends_its_ads_is_the_next_runs() -> None:
    # the shell awaits the collector between start and finish: a submit then is not in
    # the ads under way, so its reschedule must follow the next ads, not these
    c = AdCadence(300, 5, now=0)
    c.start(0)
    c.submitted(0, idle=2)
    assert c.finish() is False
    assert c.due() == 5
    assert run(c, 5, idle=2) is True
