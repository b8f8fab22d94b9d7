"""condor_userprio's table (user_prio.cpp PrintInfo), pinned. Widths: name column
max(10, longest name, len("Number of users: N")) (+2 when hierarchical), then Config Quota
9, Use Surplus 7, Effective Priority 12, Priority Factor 9, Wghted In Use 6, Total Usage 12,
Time Since Last Usage 10, Weighted Requested 10, Submitter Floor 9 and Ceiling 9, one
space apart, headings centred; quota columns only with accounting groups."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from mockpool.classad import ClassAd
from mockpool.cli.userprio_layout import format_userprio

BASE = 1_700_000_000  # pool time 0 = 11/14/23 22:13:20 UTC


@pytest.fixture(autouse=True)
def utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def user(
    name: str,
    prio: float,
    factor: float,
    inuse: float,
    acc: float,
    last: int,
    group: str = "<none>",
) -> ClassAd:
    return ClassAd(
        MyType="Accounting",
        Name=name,
        Priority=prio,
        PriorityFactor=factor,
        WeightedResourcesUsed=inuse,
        WeightedAccumulatedUsage=acc,
        LastUsageTime=BASE + last if last else 0,  # a date; 0: never
        BeginUsageTime=0,
        IsAccountingGroup=False,
        AccountingGroup=group,
        LastUpdate=BASE + 3600,
    )


def group(name: str, quota: float, requested: float, key: float, surplus: str = "no") -> ClassAd:
    return ClassAd(
        MyType="Accounting",
        Name=name,
        Priority=500.0,
        PriorityFactor=1000.0,
        WeightedResourcesUsed=0.0,
        WeightedAccumulatedUsage=0.0,
        LastUsageTime=BASE + 3600,
        IsAccountingGroup=True,
        AccountingGroup="<none>",
        ConfigQuota=quota,
        EffectiveQuota=quota,
        SubtreeQuota=quota,
        Requested=requested,
        GroupSortKey=key,
        SurplusPolicy=surplus,
        LastUpdate=BASE + 3600,
    )


def show(ads: list[ClassAd], **kw: bool) -> str:
    return format_userprio(ads, now_wall=BASE + 3600, last_update_wall=BASE + 3600, **kw)


USERS = [
    user("alice@mockpool", 12.5, 10.0, 40.0, 40 * 3600.0, 3600),
    user("bob@mockpool", 500.0, 1000.0, 3.0, 7200.0, 1800),
    user("carol@mockpool", 500.0, 1000.0, 0.0, 0.0, 0),
]


def test_users_without_groups_sorted_by_effective_priority():
    assert show(USERS) == GOLDEN_USERS


def test_allusers_shows_users_idle_for_more_than_a_day():
    out = show(USERS, all_users=True)
    assert "carol@mockpool" in out and "Number of users: 3" in out
    assert "carol@mockpool" not in show(USERS)


def test_groups_make_the_table_hierarchical():
    ads = [
        group("<none>", 0, 0, 3.4e38),
        group("group_physics", 20, 100, 0.5),
        group("group_chemistry", 10, 5, 0.0, "byquota"),
        user("group_physics.alice@mockpool", 10.0, 1000.0, 10.0, 3600.0, 3600, "group_physics"),
        user("group_chemistry.bob@mockpool", 5.0, 1000.0, 5.0, 1800.0, 3600, "group_chemistry"),
        user("carol@mockpool", 600.0, 1000.0, 1.0, 60.0, 3000),
    ]
    assert show(ads) == GOLDEN_GROUPS


GOLDEN_USERS = (
    "Last Priority Update: 11/14 23:13\n"
    "                    Effective   Priority  Wghted Total Usage  Time Since Submitter Submitter\n"
    "User Name            Priority    Factor   In Use (wghted-hrs) Last Usage   Floor    Ceiling \n"
    "------------------ ------------ --------- ------ ------------ ---------- --------- ---------\n"
    "alice@mockpool            12.50     10.00     40        40.00      <now>                    \n"
    "bob@mockpool             500.00   1000.00      3         2.00    0+00:30                    \n"
    "------------------ ------------ --------- ------ ------------ ---------- --------- ---------\n"
    "Number of users: 2                            43        42.00    1+00:00                    \n"
)
GOLDEN_GROUPS = (
    "Last Priority Update: 11/14 23:13\n"
    "Group                 Config     Use    Effective   Priority  Wghted Total Usage  Time Since  Weighted  Submitter Submitter\n"
    "  User Name            Quota   Surplus   Priority    Factor   In Use (wghted-hrs) Last Usage Requested    Floor    Ceiling \n"
    "-------------------- --------- ------- ------------ --------- ------ ------------ ---------- ---------- --------- ---------\n"
    "group_chemistry          10.00 ByQuota       500.00   1000.00      0         0.00      <now>          5                    \n"
    "  bob@mockpool                                 5.00   1000.00      5         0.50      <now>                               \n"
    "group_physics            20.00 no            500.00   1000.00      0         0.00      <now>        100                    \n"
    "  alice@mockpool                              10.00   1000.00     10         1.00      <now>                               \n"
    "<none>                    0.00 yes           500.00   1000.00      0         0.00      <now>          0                    \n"
    "  carol@mockpool                             600.00   1000.00      1         0.02    0+00:10                               \n"
    "-------------------- --------- ------- ------------ --------- ------ ------------ ---------- ---------- --------- ---------\n"
    "Number of users: 3                                                16         1.52    1+00:00                               \n"
)
