"""condor_status' default layouts, as pure text: the slots (with their totals), -gpus,
-schedd, -any, -submitters and -negotiator (prettyPrint.cpp's ``*Normal_PrintFormat``).
The other layouts are in status_layout.py; the rules they share (columns, cropping to
the terminal) in layouts.py.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..classad import UNDEFINED, ClassAd, evaluate, parse_expr, unparse
from ..classad.tree import Literal
from ..tooltime import TOOL_RNG, wall_now
from .layouts import (
    _auto,
    _check_ads,
    _check_width,
    _Col,
    _condor_time,
    _crop,
    _int,
    _num,
    _status_sorted,
    _str,
    _table,
    _value,
    fmt_date,
)


def format_status(
    slots: Iterable[ClassAd],
    *,
    now: float,
    width: int | None = None,
    wide: bool = False,
    keep_order: bool = False,
) -> str:
    """condor_status' default slot table and its Arch/OpSys summary.

    `now` is the date now (Unix time), for ActvtyTime. `width` is the terminal width; None means output
    to a pipe (HTCondor then neither crops nor cuts lines).
    """
    slots = _status_sorted(_check_ads(slots, "slot ad"), keep_order)
    _check_width(width)
    if not slots:
        return ""
    short_time = (width is None or width - 1 < 100) and not wide  # -wide: ActivityTime
    cols = [
        _Col("Name", 34, left=True, alt="?", alt_wide=True),
        _Col("OpSys", 10, left=True, alt="?", alt_wide=True),
        _Col("Arch", 8, left=True, alt="?", alt_wide=True),
        _Col("State", 5, left=True, alt="?", alt_wide=True),
        _Col("Activity", 8, left=True, alt="?", alt_wide=True),
        _Col("LoadAv", 6, truncate=True, alt="?", alt_wide=True),
        _Col("Mem", 6, alt="?", alt_wide=True),
        _Col("  ActvtyTime", 12, truncate=True, prefix=False, alt="-")
        if short_time
        else _Col("ActivityTime", 12, left=True, truncate=True, alt="-"),
    ]
    rows: list[list[str | None]] = []
    for ad in slots:
        load = _num(ad, "CondorLoadAvg")
        if load is None:
            load = _num(ad, "LoadAvg") or 0.0
        mem = _int(ad, "Memory")
        entered = _num(ad, "EnteredCurrentActivity")
        rows.append(
            [
                _str(ad, "Name"),
                _str(ad, "OpSys"),
                _str(ad, "Arch"),
                _str(ad, "State"),
                _str(ad, "Activity") or "??",
                f"{load:.3f}",
                None if mem is None else f"{mem:6d}",
                None if entered is None else _condor_time(max(0.0, now - entered)),
            ]
        )
    for k in (0, 3):
        _auto(cols[k], (r[k] for r in rows))
    if width is not None and not wide:
        _crop(cols, 0, None, 65, width)
    table = _table(cols, rows, None if wide else width)
    return table + "\n" + _slot_totals(slots, None if wide else 14)


_STATE_LETTERS = {
    "Owner": "O",
    "Unclaimed": "U",
    "Matched": "M",
    "Claimed": "C",
    "Preempting": "P",
    "Shutdown": "S",
    "Delete": "X",
    "Backfill": "F",
    "Drained": "D",
}
_ACTIVITY_LETTERS = {
    "Idle": "i",
    "Busy": "b",
    "Retiring": "r",
    "Vacating": "v",
    "Suspended": "s",
    "Benchmarking": "e",
    "Killing": "k",
}
_GPU_NAME = parse_expr(
    'GPUs_DeviceName ?: join(",", evalInEachContext(DeviceName, AvailableGPUs)) ?: CUDADeviceName'
)


def _is_gpu_slot(ad: ClassAd) -> bool:
    """condor_status' ``(PartitionableSlot && AssignedGPUs isnt undefined) ?: Gpus``, where
    HTCondor's static and dynamic slots have no PartitionableSlot (mockpool's say false)."""
    if ad.get_value("PartitionableSlot") is True:
        return ad.lookup("AssignedGPUs") is not None
    gpus = ad.get_value("GPUs")
    return type(gpus) in (int, float) and gpus != 0


def _readable_mb(mb: float) -> str:
    """READABLE_MB: HTCondor's metric_units of the value in bytes ("39.6 GB")."""
    value, power = mb * 1024.0 * 1024.0, 0
    while value > 1024.0 and power < 4:
        value, power = value / 1024.0, power + 1
    return f"{value:.1f} {('B ', 'KB', 'MB', 'GB', 'TB')[power]}"


def format_status_gpus(
    slots: Iterable[ClassAd], *, width: int | None = None, keep_order: bool = False
) -> str:
    """condor_status -gpus: the slots with GPUs (a p-slot with AssignedGPUs, or GPUs > 0),
    Name, ST (state and activity letters), User, GPUs, GPU-Memory and GPU-Name, then the
    standard Arch/OpSys summary."""
    slots = _status_sorted(_check_ads(slots, "slot ad"), keep_order)
    slots = [ad for ad in slots if _is_gpu_slot(ad)]
    _check_width(width)
    if not slots:
        return ""
    cols = [  # WIDTH AUTO columns start as wide as their heading
        _Col("Name", 4, left=True),
        _Col("ST", 2, left=True),
        _Col("User", 4, left=True, alt="_"),
        _Col("GPUs", 4),
        _Col("GPU-Memory", 10, alt="_"),
        _Col("GPU-Name", 8, left=True, alt="*"),
    ]
    rows: list[list[str | None]] = []
    for ad in slots:
        state = _STATE_LETTERS.get(_str(ad, "State") or "", " ")
        memory = _num(ad, "GPUs_GlobalMemoryMb")
        name = evaluate(_GPU_NAME, ad, now=wall_now(), rng=TOOL_RNG)
        gpus = _int(ad, "GPUs")
        rows.append(
            [
                _str(ad, "Name"),
                state + _ACTIVITY_LETTERS.get(_str(ad, "Activity") or "", " "),
                _str(ad, "RemoteUser"),
                None if gpus is None else f"{gpus:4d}",
                None if memory is None else _readable_mb(memory),
                name if isinstance(name, str) and name else None,
            ]
        )
    for k in (0, 2, 4, 5):
        _auto(cols[k], (r[k] for r in rows))
    return _table(cols, rows, width) + "\n" + _slot_totals(slots)


# StartdNormalTotal's columns: a slot's State -> its column (0 is Total, 8 BkIdle)
NORMAL_STATE_COLS = {
    "Owner": 1,
    "Claimed": 2,
    "Unclaimed": 3,
    "Matched": 4,
    "Preempting": 5,
    "Drained": 6,
    "Backfill": 7,
}


def _slot_totals(slots: list[ClassAd], key_width: int | None = 14) -> str:
    """StartdNormalTotal by Arch/OpSys, then the Total row; the key column is 14 wide, or
    (None, -wide) as wide as the longest key and at least 5."""
    per_key: dict[str, list[int]] = {}
    top = [0] * 9  # Total Owner Claimed Unclaimed Matched Preempting Drain Backfill BkIdle
    col = NORMAL_STATE_COLS
    malformed = 0
    for ad in slots:
        arch, opsys = _str(ad, "Arch"), _str(ad, "OpSys")
        if arch is None or opsys is None:
            malformed += 1
            continue
        row = per_key.setdefault(f"{arch}/{opsys}", [0] * 9)
        k = col.get(_str(ad, "State") or "")
        if k is None:
            malformed += 1
            continue
        for r in (row, top):
            r[0] += 1
            r[k] += 1
    head = (
        "Total",
        "Owner",
        "Claimed",
        "Unclaimed",
        "Matched",
        "Preempting",
        "Drain",
        "Backfill",
        "BkIdle",
    )
    widths = (6, 5, 7, 9, 7, 10, 6, 8, 6)
    kw = key_width if key_width is not None else max([5, *(len(k) for k in per_key)])

    def line(key: str, cells: Sequence[object]) -> str:
        return key.rjust(kw)[:kw] + " ".join(
            c.rjust(w)[:w] if isinstance(c, str) else f"{c:{w}d}" for c, w in zip(cells, widths)
        )

    out = line("", head) + "\n\n"
    for key in sorted(per_key):
        out += line(key, per_key[key]) + "\n"
    if per_key:
        out += "\n"
    out += line("Total", top) + "\n"
    if malformed:
        out += f"\n{'':{kw}}(Omitted {malformed} malformed ads in computed attribute totals)\n\n"
    return out


def _daemon_cols(name_min: int, machine_min: int | None) -> list[_Col]:
    cols = [_Col("Name", name_min, left=True)]
    if machine_min is not None:
        cols.append(_Col("Machine", machine_min, left=True))
    return cols


def _jobs_cols(
    rows_in: list[ClassAd], attrs: tuple[str, str, str]
) -> tuple[list[_Col], list[list[str | None]]]:
    cols = [
        *_daemon_cols(15, 12),
        _Col("RunningJobs", 11, left=True),
        _Col("  IdleJobs", 10, left=True),
        _Col("  HeldJobs", 10, left=True),
    ]
    rows: list[list[str | None]] = []
    for ad in rows_in:
        vals = [_int(ad, a) for a in attrs]
        rows.append(
            [
                _str(ad, "Name"),
                _str(ad, "Machine"),
                *(None if v is None else f"{v:{w}d}" for v, w in zip(vals, (11, 10, 10))),
            ]
        )
    for k in (0, 1):
        _auto(cols[k], (r[k] for r in rows))
    return cols, rows


def format_status_schedd(
    ads: Iterable[ClassAd], *, width: int | None = None, keep_order: bool = False
) -> str:
    """condor_status -schedd: Name Machine RunningJobs IdleJobs HeldJobs, then totals."""
    ads = _status_sorted(_check_ads(ads, "schedd ad"), keep_order)
    _check_width(width)
    if not ads:
        return ""
    attrs = ("TotalRunningJobs", "TotalIdleJobs", "TotalHeldJobs")
    cols, rows = _jobs_cols(ads, attrs)
    if width is not None:
        _crop(cols, 0, 1, 35, width)
    sums, malformed = [0, 0, 0], 0
    for ad in ads:
        vals = [_int(ad, a) for a in attrs]
        sums = [s + (v or 0) for s, v in zip(sums, vals)]
        malformed += any(v is None for v in vals)
    out = _table(cols, rows, width) + "\n"
    out += " " * 14 + f"{'TotalRunningJobs':>18} {'TotalIdleJobs':>18} {'TotalHeldJobs':>18}\n\n"
    out += " " * 14 + "\n"  # every schedd shares the key " ", whose row prints nothing
    out += "Total".rjust(14) + f"{sums[0]:18d} {sums[1]:18d} {sums[2]:18d}\n"
    if malformed:
        out += f"\n{'':14}(Omitted {malformed} malformed ads in computed attribute totals)\n\n"
    return out


def format_status_any(
    ads: Iterable[ClassAd], *, width: int | None = None, keep_order: bool = False
) -> str:
    """condor_status -any: every ad's MyType, TargetType and Name (prettyPrint.cpp's
    adtype_PrintFormat: ``MyType ?: "None"`` and TargetType likewise, 18 wide and cut;
    Name 41 wide, never cut, "?" when missing; no summary), in condor_status' order."""
    ads = _status_sorted(_check_ads(ads, "ad"), keep_order)
    _check_width(width)
    if not ads:
        return ""
    cols = [
        _Col("MyType", 18, left=True, truncate=True),
        _Col("TargetType", 18, left=True, truncate=True),
        _Col("Name", 41, left=True, alt="?"),
    ]

    def adtype(ad: ClassAd, name: str) -> str:
        v = _value(ad, name)
        if v is UNDEFINED:
            return "None"
        return v if isinstance(v, str) else unparse(Literal(v))

    rows: list[list[str | None]] = [
        [adtype(ad, "MyType"), adtype(ad, "TargetType"), _str(ad, "Name")] for ad in ads
    ]
    return _table(cols, rows, width)


def format_status_submitters(
    ads: Iterable[ClassAd], *, width: int | None = None, keep_order: bool = False
) -> str:
    """condor_status -submitters: one row per submitter ad, then totals per submitter name."""
    ads = _status_sorted(_check_ads(ads, "submitter ad"), keep_order)
    _check_width(width)
    if not ads:
        return ""
    attrs = ("RunningJobs", "IdleJobs", "HeldJobs")
    cols, rows = _jobs_cols(ads, attrs)
    if width is not None:
        _crop(cols, 0, 1, 35, width)
    per_name: dict[str, list[int]] = {}
    top, malformed = [0, 0, 0], 0
    for ad in ads:
        name = _str(ad, "Name")
        if name is None:
            malformed += 1
            continue
        vals = [_int(ad, a) for a in attrs]
        row = per_name.setdefault(name, [0, 0, 0])
        for k, v in enumerate(vals):
            row[k] += v or 0
            top[k] += v or 0
        malformed += any(v is None for v in vals)
    kl = max([5, *(len(n) for n in per_name)])
    out = _table(cols, rows, width) + "\n"
    out += " " * kl + f"{'RunningJobs':>11} {'IdleJobs':>10} {'HeldJobs':>10}\n\n"
    for name in sorted(per_name):
        r = per_name[name]
        out += name.rjust(kl) + f"{r[0]:11d} {r[1]:10d} {r[2]:10d}\n"
    if per_name:
        out += "\n"
    out += "Total".rjust(kl) + f"{top[0]:11d} {top[1]:10d} {top[2]:10d}\n"
    if malformed:
        out += f"\n{'':{kl}}(Omitted {malformed} malformed ads in computed attribute totals)\n\n"
    return out


def format_status_negotiator(
    ads: Iterable[ClassAd], *, width: int | None = None, keep_order: bool = False
) -> str:
    """condor_status -negotiator: the last negotiation cycle of each negotiator."""
    ads = _status_sorted(_check_ads(ads, "negotiator ad"), keep_order)
    _check_width(width)
    if not ads:
        return ""
    spec = (
        ("LastNegotiationCycleDuration0", "(Sec)", 5),
        ("LastNegotiationCycleCandidateSlots0", "  Slots", 7),
        ("LastNegotiationCycleActiveSubmitterCount0", "Submitrs", 8),
        ("LastNegotiationCycleNumSchedulers0", "Schedds", 7),
        ("LastNegotiationCycleNumIdleJobs0", "   Jobs", 7),
        ("LastNegotiationCycleMatches0", "Matches", 7),
        ("LastNegotiationCycleRejections0", "Rejections", 10),
    )
    cols = [
        *_daemon_cols(12, None),
        _Col("LastCycleEnd", 12),
        *(_Col(head, w, left=True) for _, head, w in spec),
    ]
    rows: list[list[str | None]] = []
    for ad in ads:
        end = _num(ad, "LastNegotiationCycleEnd0")
        if end is None:
            t0, d0 = (
                _num(ad, "LastNegotiationCycleTime0"),
                _num(ad, "LastNegotiationCycleDuration0"),
            )
            end = None if t0 is None else t0 + (d0 or 0)
        vals = [_int(ad, a) for a, _, _ in spec]
        rows.append(
            [
                _str(ad, "Name"),
                None if end is None else fmt_date(end),
                *(None if v is None else f"{v:{w}d}" for v, (_, _, w) in zip(vals, spec)),
            ]
        )
    _auto(cols[0], (r[0] for r in rows))
    if width is not None:
        _crop(cols, 0, None, 12 + 5 + 7 + 8 + 7 + 7 + 7 + 10, width)
    return _table(cols, rows, width)


# -- condor_history -----------------------------------------------------------------------
