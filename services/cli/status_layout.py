"""condor_status' other layouts, as pure text: -claimed (-run), -state, -server, -master,
-startd, -collector; with -compact (status_compact.py), the totals tables
(status_totals.py) and the cells and -sort order (status_cells.py) re-exported here.

Follows HTCondor's ``src/condor_status.V6/prettyPrint.cpp`` (``startdCompact_PrintFormat``,
``ppSetRunCols``, ``startdState_PrintFormat``, ``server_PrintFormat``,
``masterNormal_PrintFormat``, ``startDaemonNormal_PrintFormat``,
``collectorNormal_PrintFormat``), ``status.cpp`` (``process_ads_callback``'s roll-up of a
partitionable slot's children, ``fold_slot_result``, ``reduce_slot_results``,
``doNormalOutput``) and ``totals.cpp`` (``StartdNormalTotal``, ``StartdStateTotal``,
``StartdServerTotal``, ``StartdRunTotal``, ``StartDaemonTotal``, ``makeKey``), with
``ad_printmask.cpp``'s column rules: a column without WIDTH is as wide as its heading,
left-aligned, and grows to its longest value; ``OR ??`` fills the column as ``[????]``.

Quirks kept on purpose:

- -compact folds the slots of one machine and slot type into one row: Slots counts them,
  FreCpu and FreeGb add up the idle ones, MaxSlotGb is the largest, while Cpus, Gpus and
  TotalGb are the first slot's (HTCondor does not add those up). A second slot type of the
  same machine gets a row of its own, named by its slot (``"   slot2"``).
- -state's totals print 0 in their Total column: HTCondor's ``StartdStateTotal`` never
  counts it.
- -run's and -server's totals count an ad without Mips, KFlops (or LoadAvg, Disk) as
  malformed and say so, as HTCondor does for such ads.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..classad import ClassAd
from .layouts import (
    LayoutError,
    _auto,
    _check_width,
    _Col,
    _condor_time,
    _crop,
    _int,
    _num,
    _str,
    _table,
    _value,
)
from .status_cells import SortKeys, _d, _elapsed, _load, _number, _platform, status_sorted
from .status_compact import COMPACT_CONSTRAINT, format_status_compact
from .status_normal import _readable_mb
from .status_totals import format_totals

__all__ = [
    "COMPACT_CONSTRAINT",
    "LayoutError",
    "SortKeys",
    "format_status_claimed",
    "format_status_collector",
    "format_status_compact",
    "format_status_master",
    "format_status_server",
    "format_status_startd",
    "format_status_state",
    "format_totals",
    "status_sorted",
]


# -- -claimed, -state, -server ----------------------------------------------------------------


def _name_col() -> _Col:
    return _Col("Name", 34, left=True, alt="?", alt_wide=True)


def _slot_table(
    slots: list[ClassAd],
    cols: list[_Col],
    rows: list[list[str | None]],
    fixed: int,
    width: int | None,
    wide: bool,
) -> str:
    _auto(cols[0], (r[0] for r in rows))
    if width is not None and not wide:
        _crop(cols, 0, None, fixed, width)
    return _table(cols, rows, None if wide else width)


def format_status_claimed(
    slots: Iterable[ClassAd],
    *,
    width: int | None = None,
    wide: bool = False,
    keys: SortKeys | None = None,
) -> str:
    """condor_status -claimed (and -run): Name OpSys Arch LoadAv RemoteUser ClientMachine,
    then StartdRunTotal (Machines, MIPS, KFLOPS, AvgLoadAvg) by Arch/OpSys."""
    ads = status_sorted(slots, keys)
    _check_width(width)
    if not ads:
        return ""
    q = {"alt": "?", "alt_wide": True}
    cols = [
        _name_col(),
        _Col("OpSys", 10, left=True, **q),  # type: ignore[arg-type]
        _Col("Arch", 8, left=True, **q),  # type: ignore[arg-type]
        _Col("LoadAv", 6, truncate=True, **q),  # type: ignore[arg-type]
        _Col("RemoteUser", 20, left=True, **q),  # type: ignore[arg-type]
        _Col("ClientMachine", 16, left=True, **q),  # type: ignore[arg-type]
    ]
    rows = [
        [
            _str(ad, "Name"),
            _str(ad, "OpSys"),
            _str(ad, "Arch"),
            _load(ad),
            _str(ad, "RemoteUser"),
            _str(ad, "ClientMachine"),
        ]
        for ad in ads
    ]
    out = _slot_table(ads, cols, rows, 63, width, wide)
    return out + "\n" + format_totals(ads, "run", None if wide else 14)


def format_status_state(
    slots: Iterable[ClassAd],
    *,
    width: int | None = None,
    wide: bool = False,
    keys: SortKeys | None = None,
) -> str:
    """condor_status -state: Name Cpu Mem LoadAv KbdIdle State StateTime Activ ActvtyTime,
    then StartdStateTotal by Activity."""
    ads = status_sorted(slots, keys)
    _check_width(width)
    if not ads:
        return ""
    q = {"alt": "?", "alt_wide": True}
    cols = [
        _name_col(),
        _Col("Cpu", 3, left=True, **q),  # type: ignore[arg-type]
        _Col(" Mem", 5, **q),  # type: ignore[arg-type]
        _Col("LoadAv", 6, truncate=True, **q),  # type: ignore[arg-type]
        _Col("  KbdIdle", 12, truncate=True, **q),  # type: ignore[arg-type]
        _Col("State", 7, left=True, **q),  # type: ignore[arg-type]
        _Col("  StateTime", 12, truncate=True, **q),  # type: ignore[arg-type]
        _Col("Activ", 5, left=True, **q),  # type: ignore[arg-type]
        _Col("  ActvtyTime", 12, truncate=True, alt="-"),
    ]
    rows: list[list[str | None]] = []
    for ad in ads:
        cpus, mem, idle = _value(ad, "Cpus"), _int(ad, "Memory"), _int(ad, "KeyboardIdle")
        rows.append(
            [
                _str(ad, "Name"),
                None if _number(cpus) is None else str(cpus),
                None if mem is None else str(mem),
                _load(ad),
                None if idle is None else _condor_time(idle),
                _str(ad, "State"),
                _elapsed(ad, "EnteredCurrentState"),
                _str(ad, "Activity"),
                _elapsed(ad, "EnteredCurrentActivity"),
            ]
        )
    for k in (1, 7):
        _auto(cols[k], (r[k] for r in rows))
    out = _slot_table(ads, cols, rows, 34 + 3 * 12, width, wide)
    return out + "\n" + format_totals(ads, "state", None if wide else 14)


def format_status_server(
    slots: Iterable[ClassAd],
    *,
    width: int | None = None,
    wide: bool = False,
    keys: SortKeys | None = None,
) -> str:
    """condor_status -server: Name OpSys Arch LoadAv Memory Disk Mips KFlops, then
    StartdServerTotal (Slots, Avail, Memory, Disk, MIPS, KFLOPS) by Arch/OpSys."""
    ads = status_sorted(slots, keys)
    _check_width(width)
    if not ads:
        return ""
    q = {"alt": "?", "alt_wide": True}
    cols = [
        _name_col(),
        _Col("OpSys", 10, left=True, **q),  # type: ignore[arg-type]
        _Col("Arch", 8, left=True, **q),  # type: ignore[arg-type]
        _Col("LoadAv", 6, truncate=True, **q),  # type: ignore[arg-type]
        _Col("Memory", 8, **q),  # type: ignore[arg-type]
        _Col("Disk", 9, **q),  # type: ignore[arg-type]
        _Col("Mips", 7, **q),  # type: ignore[arg-type]
        _Col("KFlops", 9, **q),  # type: ignore[arg-type]
    ]
    rows = [
        [
            _str(ad, "Name"),
            _str(ad, "OpSys"),
            _str(ad, "Arch"),
            _load(ad),
            *(_d(_value(ad, a), w) for a, w in (("Memory", 8), ("Disk", 9), ("Mips", 7))),
            _d(_value(ad, "KFlops"), 9),
        ]
        for ad in ads
    ]
    out = _slot_table(ads, cols, rows, 65, width, wide)
    return out + "\n" + format_totals(ads, "server", None if wide else 14)


# -- daemons: -master, -startd, -collector ----------------------------------------------------


def _version(ad: ClassAd) -> str | None:
    """PRINTAS CONDOR_VERSION (format_version): the X.Y.Z of ``$CondorVersion: X.Y.Z
    date BuildID: N $`` and ``.N``, the build id up to a "-" (the -master and -startd
    columns are wide enough to show it)."""
    text = _str(ad, "CondorVersion")
    if not text:
        return None
    words = text.split()[1:]
    version = words[0] if words else ""
    rest = words[1:]
    if rest and len(rest[0]) > 7 and rest[0][4] == "-" and rest[0][7] == "-":
        rest = rest[1:]  # YYYY-MM-DD
    else:
        rest = rest[3:]  # Mon DD YYYY
    if rest and rest[0].startswith("B"):
        rest = rest[1:]  # BuildID:
    if rest and not rest[0].startswith("$"):
        version += "." + rest[0].split("-", 1)[0]
    return version


def _uptime(ad: ClassAd) -> str | None:
    return _elapsed(ad, "DaemonStartTime")


def _readable(ad: ClassAd, attr: str) -> str | None:
    mb = _num(ad, attr)
    return None if mb is None else _readable_mb(mb)


def format_status_master(
    ads: Iterable[ClassAd], *, width: int | None = None, keys: SortKeys | None = None
) -> str:
    """condor_status -master: Name Version Cpus Memory Uptime, no summary."""
    out = status_sorted(ads, keys)
    _check_width(width)
    if not out:
        return ""
    cols = [
        _Col("Name", 4, left=True),
        _Col("Version", 14, left=True),
        _Col("Cpus", 4, alt="?", alt_wide=True),
        _Col("  Memory", 10, alt="?", alt_wide=True),
        _Col("   Uptime", 13),
    ]
    rows = [
        [
            _str(ad, "Name"),
            _version(ad),
            _d(_value(ad, "DetectedCpus"), 4),
            _readable(ad, "DetectedMemory"),
            _uptime(ad),
        ]
        for ad in out
    ]
    _auto(cols[0], (r[0] for r in rows))
    return _table(cols, rows, width)


def format_status_startd(
    ads: Iterable[ClassAd],
    *,
    width: int | None = None,
    wide: bool = False,
    keys: SortKeys | None = None,
) -> str:
    """condor_status -startd: a row per startd daemon ad (Name Platform Version Cpus
    Memory GPUs Uptime), then StartDaemonTotal by platform."""
    out = status_sorted(ads, keys)
    _check_width(width)
    if not out:
        return ""
    cols = [
        _Col("Name", 4, left=True),
        _Col("Platform", 8, left=True),
        _Col("Version", 7, left=True),
        _Col("Cpus", 4, alt="?", alt_wide=True),
        _Col("  Memory", 10, alt="?", alt_wide=True),
        _Col("GPUs", 5),
        _Col("   Uptime", 13),
    ]
    rows: list[list[str | None]] = []
    for ad in out:
        gpus = _value(ad, "DetectedGPUs")
        count: int | None = None
        if isinstance(gpus, str):
            count = len([g for g in gpus.replace(",", " ").split() if g])
        elif isinstance(gpus, list):
            count = len(gpus)
        rows.append(
            [
                _str(ad, "Name"),
                _platform(ad),
                _version(ad),
                _d(_value(ad, "DetectedCpus"), 4),
                _readable(ad, "DetectedMemory"),
                None if count is None else str(count),
                _uptime(ad),
            ]
        )
    for k in (0, 1, 2):
        _auto(cols[k], (r[k] for r in rows))
    table = _table(cols, rows, None if wide else width)
    return table + "\n" + format_totals(out, "startd", None if wide else 14)


def format_status_collector(
    ads: Iterable[ClassAd],
    *,
    width: int | None = None,
    wide: bool = False,
    keys: SortKeys | None = None,
) -> str:
    """condor_status -collector: Name Machine RunningJobs IdleJobs HostsTotal, no
    summary. Machine is 18 wide (wider on a terminal over 80 columns; with -wide at
    least 34 and as wide as the longest)."""
    out = status_sorted(ads, keys)
    _check_width(width)
    if not out:
        return ""
    machine = 34 if wide else 18
    if width is not None and width - 1 > 79 and not wide:
        room = min(width - 1 - (28 + 18 + 11 + 8 + 10 + 4), 50)
        machine += min(30, room - min(20, room * 2 // 3))
    cols = [
        _Col("Name", 4, left=True),
        _Col("Machine", machine, left=True),
        _Col("RunningJobs", 11, left=True),
        _Col("  IdleJobs", 10, left=True),
        _Col("HostsTotal", 10, left=True),
    ]
    rows = [
        [
            _str(ad, "Name"),
            _str(ad, "Machine"),
            _d(_value(ad, "RunningJobs"), 11),
            _d(_value(ad, "IdleJobs"), 10),
            _d(_value(ad, "HostsTotal"), 10),
        ]
        for ad in out
    ]
    _auto(cols[0], (r[0] for r in rows))
    if wide:  # else Machine keeps its width and a longer name runs over (not cut)
        _auto(cols[1], (r[1] for r in rows))
    return _table(cols, rows, None if wide else width)
