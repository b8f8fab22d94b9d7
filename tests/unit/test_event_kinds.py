"""The event kinds table (services/eventkinds.py): what fits a kind and what does not."""

from __future__ import annotations

import pytest

from mockpool.eventkinds import EVENT_KINDS, event_problem


def test_an_event_with_exactly_its_fields_fits() -> None:
    e = {"t": 60.0, "daemon": "schedd1", "kind": "hold", "job": "1.0", "submitter": "a@x"}
    assert event_problem({**e, "code": 1, "reason": "by alice"}) is None


def test_optional_fields_may_come_or_not() -> None:
    base = {"t": 1, "daemon": "exec0001", "kind": "release", "slot": "slot1@e", "claim": "c"}
    assert event_problem(base) is None
    assert event_problem({**base, "job": "1.0", "killed": True}) is None
    assert event_problem({**base, "reason": "preempted"}) is None


@pytest.mark.parametrize(
    ("event", "problem"),
    [
        ({"t": 0, "daemon": "m", "kind": "coffee"}, "unknown event kind 'coffee'"),
        (
            {"t": 0, "daemon": "schedd1", "kind": "remove", "job": "1.0", "submitter": "a"},
            "remove: missing ['reason']",
        ),
        (
            {"t": 0, "daemon": "negotiator", "kind": "reject", "job": "1.0", "autocluster": 1}
            | {"submitter": "a", "schedd": "s", "reason": "r", "slot": "x"},
            "reject: unknown ['slot']",
        ),
    ],
)
def test_a_misfit_is_named(event: dict, problem: str) -> None:
    assert event_problem(event) == problem


def test_job_evicted_fits_either_daemons_side() -> None:
    schedd = {"t": 5, "daemon": "schedd1", "kind": "job_evicted", "job": "2.0", "slot": "s"}
    assert event_problem({**schedd, "reason": "preempted"}) is None
    startd = {**schedd, "daemon": "exec0001", "claim": "c", "start": 0, "end": 5}
    assert event_problem({**startd, "reason": "preempted"}) is None
    # the schedd's fields plus one of the startd's fit neither side
    problem = event_problem({**schedd, "reason": "x", "claim": "c"})
    assert problem is not None and "fit none of its daemons' (schedd, startd)" in problem


def test_each_kind_names_its_daemons_and_meaning() -> None:
    daemons = {"negotiator", "collector", "schedd", "startd", "master"}
    for kind in EVENT_KINDS.values():
        assert kind.meaning and set(kind.daemons) <= daemons, kind.name
