"""The pool spec's negotiator policy: group-quota knobs checked at load, and the
[accountant] table of starting priorities."""

from __future__ import annotations

import pytest

from mockpool.pool.spec import parse_spec
from mockpool.pool.specmodel import SpecError

HEAD = '[pool]\ntime_scale = 60\n\n[config]\nGROUP_NAMES = "group_physics, group_chemistry"\n'


@pytest.mark.parametrize(
    ("knob", "problem"),
    [
        ("GROUP_QUOTA_group_physics = -3", "GROUP_QUOTA_group_physics: must be a number in [0"),
        (
            'GROUP_QUOTA_group_physics = "many"',
            "GROUP_QUOTA_group_physics: must be a number, got 'many'",
        ),
        (
            "GROUP_QUOTA_group_bio = 3",
            "GROUP_QUOTA_group_bio: group group_bio is not in GROUP_NAMES",
        ),
        ('GROUP_SORT_EXPR = "GroupQuota +"', "GROUP_SORT_EXPR: cannot parse"),
        ('GROUP_SORT_EXPR = "\\"x\\""', "GROUP_SORT_EXPR: must evaluate to a number"),
    ],
)
def test_bad_group_knob_stops_the_pool_with_file_and_line(knob: str, problem: str):
    with pytest.raises(SpecError) as err:
        parse_spec(HEAD + knob + "\n", "pool.toml")
    assert str(err.value).startswith("pool.toml:6: ")
    assert problem in str(err.value)


def test_accountant_table_gives_starting_priorities():
    spec = parse_spec(
        HEAD + '\n[accountant."alice@mockpool"]\nfactor = 500\npriority = 10\n'
        "\n[accountant.group_physics]\nfactor = 2\n",
        "pool.toml",
    )
    assert spec.priorities == {
        "alice@mockpool": {"factor": 500.0, "priority": 10.0},
        "group_physics": {"factor": 2.0},
    }


@pytest.mark.parametrize(
    ("body", "line", "problem"),
    [
        ("factor = 0.5", 8, 'pool.toml:8: [accountant."a@x"] factor: must be >= 1, got 0.5'),
        ("priority = 0.1", 8, "priority: must be >= 0.5"),
        ('factor = "big"', 8, "factor: must be a number, got 'big'"),
        ("prio = 3", 8, "prio: unknown key (expected one of factor, priority)"),
    ],
)
def test_bad_accountant_entries_name_file_line_and_key(body: str, line: int, problem: str):
    with pytest.raises(SpecError) as err:
        parse_spec(HEAD + '\n[accountant."a@x"]\n' + body + "\n", "pool.toml")
    assert str(err.value).startswith(f"pool.toml:{line}: ")
    assert problem in str(err.value)
