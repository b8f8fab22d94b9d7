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
from mockpool.cli.userprio_layout import Detail, format_userprio

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
    """A group's priority is blank (user_prio.cpp GroupPrioIsMeaningless) and the footer
    names the pool's surplus policy (SurplusName(GlobalSurplusPolicy): a byquota group)."""
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
    "group_chemistry          10.00 ByQuota                1000.00      0         0.00      <now>          5                    \n"
    "  bob@mockpool                                 5.00   1000.00      5         0.50      <now>                               \n"
    "group_physics            20.00 no                     1000.00      0         0.00      <now>        100                    \n"
    "  alice@mockpool                              10.00   1000.00     10         1.00      <now>                               \n"
    "<none>                    0.00 yes                    1000.00      0         0.00      <now>          0                    \n"
    "  carol@mockpool                             600.00   1000.00      1         0.02    0+00:10                               \n"
    "-------------------- --------- ------- ------------ --------- ------ ------------ ---------- ---------- --------- ---------\n"
    "Number of users: 3             ByQuota                            16         1.52    1+00:00                               \n"
)


def test_priority_shows_the_priority_columns_flat():
    """-priority: Effective Priority, Real Priority (priority / factor: 12.5/10 = 1.25,
    500/1000 = 0.50) and Priority Factor, by effective priority (ties in ad order)."""
    assert show(USERS, all_users=True, detail=Detail(priority=True)) == (
        "Last Priority Update: 11/14 23:13\n"
        "                    Effective     Real   Priority \n"
        "User Name            Priority   Priority  Factor  \n"
        "------------------ ------------ -------- ---------\n"
        "alice@mockpool            12.50     1.25     10.00\n"
        "bob@mockpool             500.00     0.50   1000.00\n"
        "carol@mockpool           500.00     0.50   1000.00\n"
        "------------------ ------------ -------- ---------\n"
        "Number of users: 3                                \n"
    )


def test_usage_shows_usage_and_dates_sorted_by_usage():
    """-usage: In Use, Total Usage and the two 16-wide dates (format_date_year; 0 is
    blank), by accumulated usage; with -allusers the footer's date is blank."""
    assert show(USERS, all_users=True, detail=Detail(usage=True)) == (
        "Last Priority Update: 11/14 23:13\n"
        "                   Wghted Total Usage       Usage             Last      \n"
        "User Name          In Use (wghted-hrs)    Start Time       Usage Time   \n"
        "------------------ ------ ------------ ---------------- ----------------\n"
        "carol@mockpool          0         0.00                                  \n"
        "bob@mockpool            3         2.00                  11/14/2023 22:43\n"
        "alice@mockpool         40        40.00                  11/14/2023 23:13\n"
        "------------------ ------ ------------ ---------------- ----------------\n"
        "Number of users: 3     43        42.00                                  \n"
    )


def test_allusers_never_used_counts_from_1970_as_htcondor():
    """LastUsageTime 0 is -1 to user_prio.cpp, so the time since is 1700003601 s =
    19675 days 23:13, cut to the column's 10 characters: HTCondor's own text."""
    line = next(x for x in show(USERS, all_users=True).splitlines() if x.startswith("carol"))
    assert line.split()[5] == "19675+23:1"


GROUPED = [
    group("<none>", 0, 0, 3.4e38),
    group("group_physics", 20, 100, 0.5),
    user("group_physics.alice@mockpool", 10.0, 1000.0, 10.0, 3600.0, 3600, "group_physics"),
    user("group_physics.dave@mockpool", 20.0, 1000.0, 2.0, 7200.0, 1800, "group_physics"),
    user("carol@mockpool", 600.0, 1000.0, 1.0, 60.0, 3000),
]


def test_grouprollup_sums_users_into_their_groups():
    """-grouprollup: group_physics = alice + dave (In Use 10 + 2, usage 1 + 2 hours);
    <none> = carol + group_physics (13, 3.02 hours); groups' dates are their latest."""
    out = show(GROUPED, rollup=True).splitlines()
    assert out[4].split() == [
        "group_physics",
        "20.00",
        "no",
        "1000.00",
        "12",
        "3.00",
        "<now>",
        "100",
    ]
    assert out[7].split() == ["<none>", "0.00", "yes", "1000.00", "13", "3.02", "<now>", "0"]
    assert show(GROUPED).splitlines()[4].split()[4:6] == ["0", "0.00"]  # without: own usage


def test_quotas_alone_shows_groups_only():
    """-quotas: the five group columns, groups only (no user has a quota), by group id
    (<none> first, as it is id 0)."""
    assert show(GROUPED, detail=Detail(quotas=True)) == (
        "Last Priority Update: 11/14 23:13\n"
        "Group                Effective  Config     Use    Subtree   Weighted \n"
        "Name                   Quota     Quota   Surplus   Quota   Requested \n"
        "-------------------- --------- --------- ------- --------- ----------\n"
        "<none>                    0.00      0.00 yes          0.00          0\n"
        "group_physics            20.00     20.00 no          20.00        100\n"
        "-------------------- --------- --------- ------- --------- ----------\n"
        "Number of users: 3                                                   \n"
    )


def test_all_shows_every_column_the_ads_have():
    """-all: quota columns too when groups exist, and the usage dates."""
    head = show(GROUPED, detail=Detail(all=True)).splitlines()[1]
    assert head.split() == [
        "Group",
        "Effective",
        "Config",
        "Use",
        "Subtree",
        "Effective",
        "Real",
        "Priority",
        "Wghted",
        "Total",
        "Usage",
        "Usage",
        "Last",
        "Time",
        "Since",
        "Weighted",
        "Submitter",
        "Submitter",
    ]
