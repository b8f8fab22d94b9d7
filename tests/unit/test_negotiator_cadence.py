"""Cycle cadence: hand-worked timelines of HTCondor's negotiation timer."""

from __future__ import annotations

import pytest

from mockpool.config import parse_config
from mockpool.negotiator import Cadence, CadenceError


def test_defaults_from_config_and_first_cycle_at_start():
    c = Cadence.from_config(parse_config(""), start=0.0)
    assert (c.interval, c.min_interval, c.cycle_delay) == (60, 5, 20)
    assert c.due(0.0) and c.try_start(0.0)


def test_short_cycles_run_every_interval():
    c = Cadence()
    assert c.try_start(0.0)
    assert c.finished(0.0, 2.0) == 60.0  # 2 + max(20, 60 - 2)
    assert not c.due(59.9) and c.due(60.0)
    assert c.try_start(60.0)
    assert c.finished(60.0, 61.5) == 120.0


def test_long_cycle_waits_cycle_delay():
    c = Cadence()
    c.try_start(0.0)
    assert c.finished(0.0, 50.0) == 70.0  # 50 + max(20, 10)
    c.try_start(70.0)
    assert c.finished(70.0, 200.0) == 220.0  # a cycle longer than the interval: 20 after


def test_reschedule_is_due_now_but_respects_cycle_delay():
    c = Cadence()
    c.try_start(60.0)
    c.finished(60.0, 110.0)  # next due 130
    assert c.reschedule(115.0) == 115.0
    assert c.due(115.0)
    assert c.when_due() == 130.0  # what a Reschedule reply reports
    assert not c.try_start(115.0)  # 5 s after the end < CYCLE_DELAY 20: re-armed
    assert c.next_due == 130.0
    assert c.reschedule(120.0) == 130.0  # already pending: changes nothing
    assert c.try_start(130.0)
    assert not c.reschedule_pending


def test_reschedule_respects_min_interval():
    c = Cadence(cycle_delay=0.0)
    c.try_start(0.0)
    c.finished(0.0, 1.0)
    c.reschedule(2.0)
    assert c.when_due() == 5.0
    assert not c.try_start(2.0)
    assert c.next_due == 5.0  # last start + MIN_INTERVAL
    assert c.try_start(5.0)


def test_reschedule_after_quiet_time_runs_at_once():
    c = Cadence()
    c.try_start(0.0)
    c.finished(0.0, 1.0)  # next due 60
    assert c.reschedule(30.0) == 30.0
    assert c.try_start(30.0)
    assert c.finished(30.0, 31.0) == 90.0


def test_reschedule_during_a_cycle_is_overridden_by_its_end():
    # HTCondor resets the timer at the end of a cycle; the pending flag stays set, so a
    # further reschedule before the next cycle changes nothing either
    c = Cadence()
    c.try_start(0.0)
    c.reschedule(1.0)
    assert c.finished(0.0, 2.0) == 60.0
    assert c.reschedule(10.0) == 60.0
    assert c.try_start(60.0) and not c.reschedule_pending
    assert c.reschedule(70.0) == 70.0


def test_bad_values_are_refused():
    with pytest.raises(CadenceError, match="NEGOTIATOR_INTERVAL"):
        Cadence(interval=-1)
    c = Cadence()
    with pytest.raises(CadenceError, match="before it starts"):
        c.finished(10.0, 5.0)


@pytest.mark.parametrize(("end", "delay"), [(5.05, 0.3), (125.05, 0.1), (1234.56, 0.3)])
def test_the_timer_fires_at_exactly_end_plus_delay_and_the_cycle_starts(
    end: float, delay: float
) -> None:
    # (end + delay) - end < delay in floating point for these: the minimum must be
    # judged against the very time the timer was armed for, or a clock that stops at
    # that instant (virtual time) re-arms it there forever.
    assert (end + delay) - end < delay
    c = Cadence(cycle_delay=delay, min_interval=0.0)
    assert c.try_start(end - 0.01)
    c.finished(end - 0.01, end)
    assert not c.try_start(end)
    assert c.next_due == end + delay
    assert c.try_start(c.next_due)
