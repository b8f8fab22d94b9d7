"""condor_userprio's table, as pure text, from the negotiator's Accounting ads.

Follows ``src/condor_tools/user_prio.cpp``: the detail flags (``-all``, ``-usage``,
``-priority``, ``-quotas``, else DetailMost), ``CollectInfo`` (which columns each record
has data for; groups' priority is left blank, GroupPrioIsMeaningless), the group id
fix-up and display order, ``ProcessInfo`` (hierarchical only when some visible user is in
a group; quota columns dropped when nobody is; users hidden when only group columns
show), ``LineRecLT``, the ``aCols`` table and ``PrintInfo`` with ``FormatFloat``,
``FormatDateTime``, ``FormatDeltaTime`` and ``CopyAndPadToWidth``. Users not active in the
last day are left out unless ``all_users`` (``-allusers``). Dates are local time.

A record that never ran (LastUsageTime 0) is taken as -1, as HTCondor does, so its "Time
Since Last Usage" under -allusers is the time since 1970 cut to the column's 10
characters (``20785+08:3``): HTCondor's own text for such a record, kept.

``rollup`` (``-grouprollup``) stands in for the negotiator's GET_PRIORITY_ROLLUP: a group's
usage, resources and dates are its users' and subgroups' summed (dates: earliest begin,
latest use) and its priority 0, as Accountant::ReportState(rollup) reports them.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass

from ..classad import ClassAd

__all__ = ["Detail", "format_userprio"]

ROOT = "<none>"
DAY = 86400
FLT_MAX = 3.4028234663852886e38

# DetailFlag bits (user_prio.cpp)
NAME, PRIORITY, FACTOR, GROUP = 0x1, 0x2, 0x4, 0x8
RES_USED, WT_RES_USED, USE_TIME1, USE_TIME2 = 0x10, 0x20, 0x40, 0x80
EFF_QUOTA, CFG_QUOTA, SURPLUS, TREE_QUOTA = 0x100, 0x200, 0x400, 0x800
REAL_PRIO, SORT_KEY, USE_DELTA_T, ORDER = 0x1000, 0x2000, 0x4000, 0x8000
REQUESTED, CEILING, FLOOR = 0x10000, 0x20000, 0x40000
PRIOS = PRIORITY | FACTOR | REAL_PRIO
USAGE = RES_USED | WT_RES_USED
QUOTAS = EFF_QUOTA | CFG_QUOTA | TREE_QUOTA | SURPLUS | REQUESTED
MOST = CFG_QUOTA | SURPLUS | PRIORITY | FACTOR | USAGE | USE_DELTA_T | REQUESTED
MOST |= CEILING | FLOOR
ALL = MOST | QUOTAS | PRIOS | USE_TIME1 | USE_TIME2

# aCols: (flag, width, heading line 1, heading line 2)
_COLS = (
    (GROUP, 5, "Group", "Id"),
    (ORDER, 9, "Group", "Order"),
    (SORT_KEY, 9, "Group", "Sort Key"),
    (EFF_QUOTA, 9, "Effective", "Quota"),
    (CFG_QUOTA, 9, "Config", "Quota"),
    (SURPLUS, 7, "Use", "Surplus"),
    (TREE_QUOTA, 9, "Subtree", "Quota"),
    (PRIORITY, 12, "Effective", "Priority"),
    (REAL_PRIO, 8, "Real", "Priority"),
    (FACTOR, 9, "Priority", "Factor"),
    (RES_USED, 6, "Wghted", "In Use"),
    (WT_RES_USED, 12, "Total Usage", "(wghted-hrs)"),
    (USE_TIME1, 16, "Usage", "Start Time"),
    (USE_TIME2, 16, "Last", "Usage Time"),
    (USE_DELTA_T, 10, "Time Since", "Last Usage"),
    (REQUESTED, 10, "Weighted", "Requested"),
    (FLOOR, 9, "Submitter", "Floor"),
    (CEILING, 9, "Submitter", "Ceiling"),
)
_SURPLUS_NAMES = {"": "", "no": "no", "regroup": "Regroup", "byquota": "ByQuota"}


@dataclass(frozen=True)
class Detail:
    """The display flags: -all, -usage, -priority, -quotas (none: DetailMost)."""

    all: bool = False
    usage: bool = False
    priority: bool = False
    quotas: bool = False

    def flags(self) -> int:
        f = 0
        if self.quotas:
            f |= QUOTAS
        if self.all:
            f |= ALL
        if self.usage:
            f |= USAGE | USE_TIME1 | USE_TIME2
        if self.priority:
            f |= PRIOS
        return f or MOST


def _pad(text: str | None, cch: int, fill: str = " ", how: str = "right") -> str:
    """CopyAndPadToWidth: ``cch`` counts the NUL, so the field is cch - 1 wide."""
    text = text or ""
    width = cch - 1
    if how == "left":
        text = fill * max(0, cch - (len(text) + 1)) + text
    elif how == "center":
        text = fill * max(0, (cch - (len(text) + 1)) // 2) + text
    return (text + fill * width)[:width]


def _float(width: int, decimals: int, value: float) -> str:
    s = f"{value:{width}.{decimals}f}"
    if len(s) > width:
        s = f"{value:.{width - 6}g}"
    return _pad(s, width + 1, how="left")


def _delta(width: int, seconds: float) -> str:
    """FormatDeltaTime with "<now>" for no time, format_time_nosecs otherwise."""
    if seconds <= 0:
        return _pad("<now>", width + 1, how="left")
    s = int(seconds)
    text = f"{s // DAY:3d}+{s % DAY // 3600:02d}:{s % 3600 // 60:02d}"
    return _pad(text, width + 1, how="left")


def _date(unix: float) -> str:
    """format_date: "M/D hh:mm" (the Last Priority Update line)."""
    if unix < 0:
        return "    ???    "
    tm = time.localtime(unix)
    return f"{tm.tm_mon:2d}/{tm.tm_mday:<2d} {tm.tm_hour:02d}:{tm.tm_min:02d}"


def _date_time(width: int, unix: float) -> str:
    """FormatDateTime with "" for no date: format_date_year "M/DD/YYYY hh:mm"."""
    if unix <= 0:
        return _pad("", width + 1, how="left")
    tm = time.localtime(unix)
    text = f"{tm.tm_mon:2d}/{tm.tm_mday:02d}/{tm.tm_year:<4d} {tm.tm_hour:02d}:{tm.tm_min:02d}"
    return _pad(text, width + 1, how="left")


@dataclass
class _Rec:
    index: int
    name: str
    is_group: bool
    group: str
    has: int = 0
    prio: float = 0.0
    factor: float = 0.0
    res: float = 0.0
    wt_res: float = 0.0
    usage: float = -1.0
    begin: float = 0.0
    last: float = 0.0
    eff_quota: float = 0.0
    cfg_quota: float = 0.0
    tree_quota: float = 0.0
    surplus: str = ""
    sort_key: float = 0.0
    requested: float = 0.0
    ceiling: float = -1.0
    floor: float = -1.0
    group_id: int = 0
    order: float = 0.0


def _get(ad: ClassAd, name: str) -> float | None:
    v = ad.eval(name)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v)


def _collect(ad: ClassAd, k: int, n: int, rollup: bool) -> tuple[_Rec, str]:
    """One CollectInfo record and its surplus policy."""
    name, group = ad.eval("Name"), ad.eval("AccountingGroup")
    r = _Rec(
        index=k,
        name=name if isinstance(name, str) else "",
        is_group=ad.eval("IsAccountingGroup") is True,
        group=group if isinstance(group, str) else ROOT,
    )
    prio = _get(ad, "Priority")
    if prio is None or not r.name:
        return r, ""
    r.prio, r.has = prio, PRIORITY | NAME
    for attr, flag, slot in (
        ("PriorityFactor", FACTOR, "factor"),
        ("WeightedAccumulatedUsage", USAGE, "usage"),
        ("Ceiling", CEILING, "ceiling"),
        ("Floor", FLOOR, "floor"),
        ("Requested", REQUESTED, "requested"),
        ("BeginUsageTime", USE_TIME1, "begin"),
        ("LastUsageTime", USE_TIME2 | USE_DELTA_T, "last"),
        ("ResourcesUsed", USAGE, "res"),
        ("EffectiveQuota", EFF_QUOTA, "eff_quota"),
        ("ConfigQuota", CFG_QUOTA, "cfg_quota"),
    ):
        v = _get(ad, attr)
        if v is not None:
            setattr(r, slot, v)
            r.has |= flag
    if r.has & FACTOR and r.factor > 0:
        r.has |= REAL_PRIO
    wt = _get(ad, "WeightedResourcesUsed")
    if wt is None:
        r.wt_res = r.res
    else:
        r.wt_res, r.has = wt, r.has | WT_RES_USED
    policy = ""
    if r.is_group:
        r.group_id = 0 if r.name in (ROOT, ".") else -(k + 1)
        regroup = ad.eval("GroupAutoRegroup")
        if isinstance(regroup, bool):
            r.has |= SURPLUS
            r.surplus = "regroup" if regroup else "no"
            policy = "regroup" if regroup else ""
        text = ad.eval("SurplusPolicy")
        if isinstance(text, str):
            r.has |= SURPLUS
            r.surplus = text.lower() if text.lower() in _SURPLUS_NAMES else "n/a"
            if r.surplus in ("regroup", "byquota"):
                policy = r.surplus
        key = _get(ad, "GroupSortKey")
        if key is not None:
            r.sort_key, r.has = key, r.has | SORT_KEY
        tree = _get(ad, "SubtreeQuota")
        if tree is not None:
            r.tree_quota, r.has = tree, r.has | TREE_QUOTA
        if rollup and not r.has & EFF_QUOTA:
            r.has &= ~PRIOS
        r.has &= ~PRIORITY  # a group's priority means nothing (GroupPrioIsMeaningless)
    else:
        r.group_id = 0 if r.group in (ROOT, ".") else -n * 2
    if r.group_id != 0:
        r.has |= GROUP
    if r.last == 0:
        r.last = -1
    return r, policy


def _rollup(ads: list[ClassAd]) -> list[ClassAd]:
    """GET_PRIORITY_ROLLUP: each group sums its users and subgroups, deepest first."""
    out = [ad.copy() for ad in ads]
    groups = {a.eval("Name"): a for a in out if a.eval("IsAccountingGroup") is True}
    for g in groups.values():
        g["Priority"] = 0.0
        for attr in ("ResourcesUsed", "WeightedResourcesUsed"):
            g[attr] = 0 if attr == "ResourcesUsed" else 0.0
        g["AccumulatedUsage"] = g["WeightedAccumulatedUsage"] = 0.0
    users = [a for a in out if a.eval("IsAccountingGroup") is not True]

    def add(parent: ClassAd, child: ClassAd) -> None:
        for attr in (
            "ResourcesUsed",
            "WeightedResourcesUsed",
            "AccumulatedUsage",
            "WeightedAccumulatedUsage",
        ):
            parent[attr] = (_get(parent, attr) or 0) + (_get(child, attr) or 0)
        parent["ResourcesUsed"] = int(_get(parent, "ResourcesUsed") or 0)
        for attr, pick in (("BeginUsageTime", min), ("LastUsageTime", max)):
            a, b = _get(parent, attr), _get(child, attr)
            if b is not None:
                parent[attr] = int(b if a is None else pick(a, b))

    for u in users:
        g = groups.get(u.eval("AccountingGroup"))
        if g is not None:
            add(g, u)
    for name in sorted(groups, key=lambda n: -str(n).count(".")):
        parent = groups.get(groups[name].eval("AccountingGroup"))
        if parent is not None and parent is not groups[name]:
            add(parent, groups[name])
    return out


def format_userprio(
    ads: Iterable[ClassAd],
    *,
    now_wall: float,
    last_update_wall: float,
    all_users: bool = False,
    detail: Detail | None = None,
    rollup: bool = False,
) -> str:
    """The ``condor_userprio`` table. Dates in the ads are Unix times (0: never);
    ``now_wall``, the date now, decides who was active in the last day."""
    ads = list(ads)
    if rollup:
        ads = _rollup(ads)
    n = len(ads)
    if not n:
        return ""
    detail = detail or Detail()
    flags = detail.flags()
    dash_quota = detail.quotas
    hier = True
    hide_groups = False
    if not flags & ~PRIOS:  # only priorities: no groups
        hier, hide_groups = False, True
    min_last = -1.0 if all_users else now_wall - DAY

    recs: list[_Rec] = []
    avail, users_have_quotas, global_surplus = 0, False, ""
    for k, ad in enumerate(ads):
        r, policy = _collect(ad, k, n, rollup)
        if policy in ("regroup", "byquota"):
            global_surplus = policy
        if not r.is_group and r.has & (EFF_QUOTA | CFG_QUOTA):
            users_have_quotas = True
        avail |= r.has
        recs.append(r)
    if not avail & USAGE:
        flags &= ~USAGE
    if not avail & FACTOR:
        flags &= ~FACTOR
    if not avail & USE_TIME1:
        flags &= ~USE_TIME1
    if not avail & USE_TIME2:
        flags &= ~(USE_TIME2 | USE_DELTA_T)
    if not dash_quota and not avail & QUOTAS:
        flags &= ~QUOTAS

    if any(not r.is_group and r.group_id < 0 for r in recs):  # the group id fix-up
        groups = sorted((r for r in recs if r.is_group), key=lambda r: (r.group_id == 0, r.name))
        none_rec: _Rec | None = None
        for gid, g in enumerate(groups, start=1):
            if g.group_id < 0:
                g.group_id = gid
            else:
                none_rec = g
            if flags & PRIORITY:
                if avail & SORT_KEY:
                    g.order = g.sort_key
                else:
                    g.order = g.prio if g.group_id else FLT_MAX
            elif flags & USAGE:
                g.order = g.usage / 3600.0
            else:
                g.order = float(g.group_id) if g.group_id else FLT_MAX
            g.has |= ORDER
        avail |= ORDER
        by_name = {g.name: g for g in groups}
        for r in recs:
            if r.is_group:
                continue
            if r.group_id >= 0:
                if none_rec is not None:
                    r.order = none_rec.order
                    r.has |= none_rec.has & ORDER
                continue
            g = by_name.get(r.group)
            if g is not None:
                r.group_id, r.order = g.group_id, g.order
                r.has |= g.has & ORDER

    hide_none = True
    visible = [r for r in recs if r.last >= min_last]
    all_in_none = not any(r.group_id > 0 for r in visible)
    if not all_in_none:
        hide_none = False
    if not avail & GROUP or (hide_none and all_in_none):
        hier = False
    if (hide_groups or all_in_none) and not dash_quota and not users_have_quotas:
        flags &= ~QUOTAS
    hide_users = bool(flags & QUOTAS) and not flags & ~QUOTAS and not users_have_quotas

    def column1(r: _Rec) -> tuple:
        if flags & PRIORITY:
            return (r.prio,)
        if flags & USAGE:
            return (r.usage,)
        return (r.name,)

    none_last = global_surplus == "regroup"

    def key(r: _Rec) -> tuple:
        if not hier:
            return column1(r)
        gid = r.group_id
        last = none_last and gid == 0
        if flags & (PRIORITY | USAGE):
            return (last, r.order, gid, not r.is_group, *column1(r))
        return (last, gid, not r.is_group, *column1(r))

    recs.sort(key=key)
    shown = (hier, hide_groups, hide_users, hide_none)
    return _print(recs, flags, int(last_update_wall), min_last, shown, global_surplus)


def _print(
    recs: list[_Rec],
    flags: int,
    tm_last: int,
    min_last: float,
    shown: tuple[bool, bool, bool, bool],
    global_surplus: str,
) -> str:
    """PrintInfo; ``shown``: hierarchical, hide groups, hide users, hide <none>."""
    hier, hide_groups, hide_users, hide_none = shown
    cols = [c for c in _COLS if c[0] & flags]
    max_name = 10
    for r in recs:
        if r.last >= min_last:
            length = len(r.name)
            if hier and not r.is_group:
                length += 2
                if r.group_id != 0:
                    length -= len(r.group)
            max_name = max(max_name, length)
    max_name = min(max_name, 99)
    max_name = max(max_name, len(f"Number of users: {len(recs)}"))
    if hier:
        max_name += 2

    def line(first: str, cells: list[str], fill: str = " ") -> str:
        return _pad(first, max_name + 1, fill) + "".join(" " + c for c in cells)

    title2 = "  User Name" if hier else "User Name"
    if hide_users:
        title2 = "Name" if hier else "Group Name"
    rule = line("", ["-" * w for _, w, _, _ in cols], "-")
    out = [
        f"Last Priority Update: {_date(tm_last)}",
        line("Group" if hier else "", [_pad(h, w + 1, how="center") for _, w, h, _ in cols]),
        line(title2, [_pad(h, w + 1, how="center") for _, w, _, h in cols]),
        rule,
    ]
    users = 0
    tot_res = tot_usage = 0.0
    for r in recs:
        if r.last < min_last:
            continue
        if not r.is_group:
            users += 1
            if hide_users:
                continue
        else:
            if hide_groups or (not hier and hide_none and not r.group_id):
                continue
            hide_none = False  # once a group shows, <none> shows too
        if not hier or r.is_group:
            name = r.name
        else:
            name = "  " + (r.name[len(r.group) + 1 :] if r.group_id > 0 else r.name)
        out.append(line(name, [_cell(r, flag, w, tm_last) for flag, w, _, _ in cols]))
        if not r.is_group:
            tot_res += r.wt_res
            tot_usage += r.usage
    out.append(rule)
    foot = []
    for flag, w, _, _ in cols:
        if flag == RES_USED:
            foot.append(_float(w, 0, tot_res))
        elif flag == WT_RES_USED:
            foot.append(_float(w, 2, tot_usage / 3600.0))
        elif flag == USE_TIME1:
            foot.append(_date_time(w, 0))
        elif flag == USE_TIME2:
            foot.append(_date_time(w, min_last))
        elif flag == USE_DELTA_T:
            foot.append(
                _pad("", w + 1, how="left") if min_last <= 0 else _delta(w, tm_last - min_last)
            )
        elif flag == SURPLUS:
            foot.append(_pad(_SURPLUS_NAMES[global_surplus], w + 1))
        else:
            foot.append(_pad("", w + 1))
    out.append(line(f"Number of users: {users}", foot))
    return "\n".join(out) + "\n"


def _cell(r: _Rec, flag: int, w: int, tm_last: int) -> str:
    if not r.has & flag:
        if r.is_group and flag & (QUOTAS | SORT_KEY):
            return _pad("n/d", w + 1, how="left")
        return _pad("", w + 1)
    if flag == GROUP:
        return _float(w, 0, float(r.group_id))
    if flag == ORDER:
        return _float(w, 2, r.order)
    if flag == SURPLUS:
        text = _SURPLUS_NAMES.get(r.surplus, "n/a") if r.group_id else "yes"
        return _pad(text, w + 1)
    if flag == EFF_QUOTA:
        return _float(w, 2, r.eff_quota)
    if flag == CFG_QUOTA:
        return _float(w, 2, r.cfg_quota)
    if flag == TREE_QUOTA:
        return _float(w, 2, r.tree_quota)
    if flag == SORT_KEY:
        return (
            _float(w, 2, r.sort_key)
            if r.sort_key < 3.40282001e38
            else _pad("<last>", w + 1, how="left")
        )
    if flag == PRIORITY:
        return _float(w, 2, r.prio)
    if flag == REAL_PRIO:
        return _float(w, 2, r.prio / r.factor if r.factor > 0 else 0.0)
    if flag == FACTOR:
        return _float(w, 2, r.factor) if r.factor > 0 else _pad("", w + 1)
    if flag == RES_USED:
        return _float(w, 0, r.wt_res)
    if flag == REQUESTED:
        return _float(w, 0, r.requested)
    if flag == WT_RES_USED:
        return _float(w, 2, r.usage / 3600.0)
    if flag == USE_TIME1:
        return _date_time(w, r.begin)
    if flag == USE_TIME2:
        return _date_time(w, r.last)
    if flag == USE_DELTA_T:
        return _delta(w, tm_last - r.last)
    if flag == CEILING:
        return _float(w, 2, r.ceiling) if r.ceiling > -1.0 else _pad("", w + 1)
    if flag == FLOOR:
        return _float(w, 2, r.floor) if r.floor > 0.0 else _pad("", w + 1)
    return _pad("", w + 1)
