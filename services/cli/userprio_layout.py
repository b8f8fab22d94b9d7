"""condor_userprio's table, as pure text, from the negotiator's Accounting ads.

Follows ``src/condor_tools/user_prio.cpp`` (``PrintInfo``, ``CollectInfo``, ``LineRecLT``,
the ``aCols`` table and ``FormatFloat``/``CopyAndPadToWidth``): the default columns
(DetailMost) are Config Quota, Use Surplus, Effective Priority, Priority Factor, Wghted In
Use, Total Usage (wghted-hrs), Time Since Last Usage, Weighted Requested, Submitter Floor
and Submitter Ceiling; the quota columns show only when accounting groups exist, and then
the table is hierarchical: each group's row, then its users indented under it with the
group prefix cut. Users not active in the last day are left out unless ``all_users``
(``-allusers``). Dates are local time, as HTCondor prints them.

Known differences: groups are ordered by their GroupSortKey (HTCondor's display order when
the negotiator sends it), ties by name; ``Ceiling``/``Floor`` are blank (mockpool has no
submitter ceilings or floors).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable
from dataclasses import dataclass

from ..classad import ClassAd

__all__ = ["format_userprio"]

ROOT = "<none>"
DAY = 86400

# (key, width, heading line 1, heading line 2) in aCols order
_COLS = (
    ("cfgquota", 9, "Config", "Quota"),
    ("surplus", 7, "Use", "Surplus"),
    ("prio", 12, "Effective", "Priority"),
    ("factor", 9, "Priority", "Factor"),
    ("inuse", 6, "Wghted", "In Use"),
    ("usage", 12, "Total Usage", "(wghted-hrs)"),
    ("since", 10, "Time Since", "Last Usage"),
    ("requested", 10, "Weighted", "Requested"),
    ("floor", 9, "Submitter", "Floor"),
    ("ceiling", 9, "Submitter", "Ceiling"),
)
_QUOTA_COLS = {"cfgquota", "surplus", "requested"}
_SURPLUS = {"no": "no", "regroup": "Regroup", "byquota": "ByQuota"}


def _pad(text: str, cch: int, fill: str = " ", how: str = "right") -> str:
    """CopyAndPadToWidth: ``cch`` counts the NUL, so the field is cch - 1 wide."""
    width = cch - 1
    if how == "left":
        text = fill * max(0, width - len(text)) + text
    elif how == "center":
        left = (cch - (len(text) + 1)) // 2
        text = fill * max(0, left) + text
    return (text + fill * width)[:width]


def _float(width: int, decimals: int, value: float) -> str:
    s = f"{value:{width}.{decimals}f}"
    if len(s) > width:
        s = f"{value:.{width - 6}g}"
    return _pad(s, width + 1, how="left")


def _delta(width: int, seconds: float) -> str:
    if seconds <= 0:
        return _pad("<now>", width + 1, how="left")
    s = int(seconds)
    return _pad(f"{s // DAY:3d}+{s % DAY // 3600:02d}:{s % 3600 // 60:02d}", width + 1, how="left")


def _date(unix: float) -> str:
    tm = time.localtime(unix)
    return f"{tm.tm_mon:2d}/{tm.tm_mday:<2d} {tm.tm_hour:02d}:{tm.tm_min:02d}"


@dataclass
class _Rec:
    name: str
    is_group: bool
    group: str
    prio: float
    factor: float
    inuse: float
    usage: float
    last: float
    cfg_quota: float | None
    surplus: str | None
    requested: float | None
    sort_key: float


def _num(ad: ClassAd, name: str, default: float | None = 0.0) -> float | None:
    v = ad.eval(name)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return default
    return float(v)


def _rec(ad: ClassAd) -> _Rec:
    name = ad.eval("Name")
    group = ad.eval("AccountingGroup")
    is_group = ad.eval("IsAccountingGroup") is True
    last = _num(ad, "LastUsageTime") or 0.0
    acc = _num(ad, "WeightedAccumulatedUsage", None)
    if acc is None:
        acc = _num(ad, "AccumulatedUsage") or 0.0
    surplus = ad.eval("SurplusPolicy")
    return _Rec(
        name=name if isinstance(name, str) else "",
        is_group=is_group,
        group=group if isinstance(group, str) else ROOT,
        prio=_num(ad, "Priority") or 0.0,
        factor=_num(ad, "PriorityFactor") or 0.0,
        inuse=_num(ad, "WeightedResourcesUsed") or 0.0,
        usage=acc,
        last=last if last > 0 else -1.0,
        cfg_quota=_num(ad, "ConfigQuota", None),
        surplus=surplus.lower() if isinstance(surplus, str) else None,
        requested=_num(ad, "Requested", None),
        sort_key=_num(ad, "GroupSortKey", math.inf) or 0.0,
    )


def format_userprio(
    ads: Iterable[ClassAd],
    *,
    now_wall: float,
    last_update_wall: float,
    all_users: bool = False,
) -> str:
    """The default ``condor_userprio`` table. Dates in the ads are Unix times (0: never);
    ``now_wall``, the date now, decides who was active in the last day."""
    recs = [_rec(ad) for ad in ads]
    if not recs:
        return ""
    tm_last = int(last_update_wall)
    min_last = -1.0 if all_users else now_wall - DAY
    hier = any(r.is_group and r.name != ROOT for r in recs if r.last >= min_last)
    cols = [c for c in _COLS if hier or c[0] not in _QUOTA_COLS]

    groups = sorted((r for r in recs if r.is_group), key=lambda r: (r.name == ROOT, r.name))
    gid = {g.name.lower(): (0 if g.name == ROOT else k + 1) for k, g in enumerate(groups)}
    order = {g.name.lower(): (g.sort_key, gid[g.name.lower()]) for g in groups}

    def key(r: _Rec) -> tuple:
        if not hier:
            return (r.prio,)
        g = (r.name if r.is_group else r.group).lower()
        return (*order.get(g, (math.inf, 0)), not r.is_group, r.prio)

    recs.sort(key=key)
    max_name = 10
    for r in recs:
        if r.last >= min_last:
            n = len(r.name)
            if hier and not r.is_group:
                n += 2
                if gid.get(r.group.lower(), 0):
                    n -= len(r.group)
            max_name = max(max_name, n)
    max_name = min(max_name, 99)
    max_name = max(max_name, len(f"Number of users: {len(recs)}"))
    if hier:
        max_name += 2

    def line(first: str, cells: list[str], fill: str = " ") -> str:
        return _pad(first, max_name + 1, fill) + "".join(" " + c for c in cells)

    out = [
        f"Last Priority Update: {_date(tm_last)}",
        line("Group" if hier else "", [_pad(h1, w + 1, how="center") for _, w, h1, _ in cols]),
        line(
            "  User Name" if hier else "User Name",
            [_pad(h2, w + 1, how="center") for _, w, _, h2 in cols],
        ),
        line("", ["-" * w for _, w, _, _ in cols], "-"),
    ]
    users = 0
    tot_inuse = tot_usage = 0.0
    for r in recs:
        if r.last < min_last:
            continue
        if r.is_group:
            if not hier:
                continue
        else:
            users += 1
        if not hier or r.is_group:
            name = r.name
        else:
            name = "  " + (r.name[len(r.group) + 1 :] if gid.get(r.group.lower(), 0) else r.name)
        cells = []
        for k, w, _, _ in cols:
            if k == "cfgquota":
                cells.append(
                    _float(w, 2, r.cfg_quota)
                    if r.is_group and r.cfg_quota is not None
                    else _pad("n/d" if r.is_group else "", w + 1, how="left")
                )
            elif k == "surplus":
                if not r.is_group:
                    cells.append(" " * w)
                else:
                    text = (
                        _SURPLUS.get(r.surplus or "", "n/a")
                        if gid.get(r.name.lower(), 0)
                        else "yes"
                    )
                    cells.append(_pad(text, w + 1))
            elif k == "prio":
                cells.append(_float(w, 2, r.prio))
            elif k == "factor":
                cells.append(_float(w, 2, r.factor) if r.factor > 0 else " " * w)
            elif k == "inuse":
                cells.append(_float(w, 0, r.inuse))
            elif k == "usage":
                cells.append(_float(w, 2, r.usage / 3600.0))
            elif k == "since":
                cells.append(_delta(w, tm_last - r.last))
            elif k == "requested":
                cells.append(
                    _float(w, 0, r.requested)
                    if r.is_group and r.requested is not None
                    else _pad("n/d" if r.is_group else "", w + 1, how="left")
                )
            else:  # floor, ceiling: not kept by mockpool
                cells.append(" " * w)
        out.append(line(name, cells))
        if not r.is_group:
            tot_inuse += r.inuse
            tot_usage += r.usage
    out.append(line("", ["-" * w for _, w, _, _ in cols], "-"))
    foot = []
    for k, w, _, _ in cols:
        if k == "inuse":
            foot.append(_float(w, 0, tot_inuse))
        elif k == "usage":
            foot.append(_float(w, 2, tot_usage / 3600.0))
        elif k == "since":
            foot.append(
                _pad("", w + 1, how="left") if min_last <= 0 else _delta(w, tm_last - min_last)
            )
        else:
            foot.append(" " * w)
    out.append(line(f"Number of users: {users}", foot))
    return "\n".join(out) + "\n"
