"""condor_status' other layouts, as pure text: -compact, -claimed (-run), -state, -server,
-master, -startd, -collector, the -total tables and the -sort order.

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

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ..classad import ERROR, UNDEFINED, ClassAd, evaluate, parse_expr
from ..classad.errors import ClassAdSyntaxError
from .layouts import (
    LayoutError,
    _auto,
    _check_ads,
    _check_width,
    _Col,
    _condor_time,
    _crop,
    _int,
    _num,
    _readable_mb,
    _str,
    _table,
    _value,
    natural_key,
)

__all__ = [
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

# -- -sort ---------------------------------------------------------------------------------


class SortKeys:
    """condor_status' sort keys: ``-sort EXPR`` expressions, else Machine then Name."""

    def __init__(self, exprs: Sequence[str] = ()) -> None:
        self.texts = tuple(exprs) or ("Machine", "Name")
        try:
            self.exprs = [parse_expr(t) for t in self.texts]
        except ClassAdSyntaxError as e:
            raise LayoutError(f"-sort: {e}") from None

    def key(self, ad: ClassAd, ordinal: int, first: str | None = None) -> tuple:
        """HTCondor's RenderKey: each key's value as text, then the arrival ordinal."""
        parts = [] if first is None else [first]
        parts += [_key_text(evaluate(e, ad)) for e in self.exprs]
        return natural_key("\n".join([*parts, f"{ordinal:08X}"]))


def _key_text(v: object) -> str:
    if v is UNDEFINED:
        return "undefined"
    if v is ERROR:
        return "error"
    if isinstance(v, bool):
        return str(int(v))
    if isinstance(v, float):  # a real sorts by its IEEE bits, as HTCondor renders it
        import struct

        return str(struct.unpack("<q", struct.pack("<d", v))[0])
    return str(v)


def status_sorted(ads: Iterable[ClassAd], keys: SortKeys | None = None) -> list[ClassAd]:
    """The ads in condor_status' order (natural compare of the keys, then arrival)."""
    out = _check_ads(ads, "ad")
    keys = keys or SortKeys()
    order = sorted(range(len(out)), key=lambda k: keys.key(out[k], k))
    return [out[k] for k in order]


# -- printf-like cells ----------------------------------------------------------------------


def _eval(ad: ClassAd, text: str) -> object:
    return evaluate(parse_expr(text), ad)


def _number(v: object) -> float | int | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def _d(v: object, width: int) -> str | None:
    """PRINTF %Nd: a number (a real cut toward zero); anything else is no value."""
    n = _number(v)
    return None if n is None else f"{int(n):{width}d}"


def _f(v: object, width: int, decimals: int) -> str | None:
    n = _number(v)
    return None if n is None else f"{float(n):{width}.{decimals}f}"


def _load(ad: ClassAd) -> str | None:
    """LoadAv: CondorLoadAvg as %.3f (PRINTAS LOAD_AVG)."""
    n = _num(ad, "CondorLoadAvg")
    return None if n is None else f"{float(n):.3f}"


def _elapsed(ad: ClassAd, attr: str) -> str | None:
    """PRINTAS ELAPSED_TIME: LastHeardFrom less the attribute, as d+hh:mm:ss."""
    t, now = _int(ad, attr), _int(ad, "LastHeardFrom")
    if t is None or now is None:
        return None
    return _condor_time(now - t) if now - t >= 0 else _condor_time(0)


_STATE_CODES = "~OUMCPSXFD#"  # no_state .. drained, then the threshold ("no consensus")
_STATES = (
    "",
    "Owner",
    "Unclaimed",
    "Matched",
    "Claimed",
    "Preempting",
    "Shutdown",
    "Delete",
    "Backfill",
    "Drained",
)
_ACT_CODES = "0ibrvsekc"
_ACTIVITIES = (
    "",
    "Idle",
    "Busy",
    "Retiring",
    "Vacating",
    "Suspended",
    "Benchmarking",
    "Killing",
    "Cleaning",
)
_NONE, _MIXED = 0, -1


def _state_index(text: object) -> int:
    return _STATES.index(text) if isinstance(text, str) and text in _STATES[1:] else _NONE


def _act_index(text: object) -> int:
    return _ACTIVITIES.index(text) if isinstance(text, str) and text in _ACTIVITIES[1:] else _NONE


def _digest(state: int, act: int) -> str:
    """digest_state_and_activity: two letters, a space for none, # for no consensus."""
    s = " " if state == _NONE else ("#" if state == _MIXED else _STATE_CODES[state])
    a = " " if act == _NONE else ("#" if act == _MIXED else _ACT_CODES[act])
    return s + a


def _activity_code(ad: ClassAd) -> str | None:
    """PRINTAS ACTIVITY_CODE of Activity (no value when Activity is not one)."""
    act = _act_index(_value(ad, "Activity"))
    if act == _NONE:
        return None
    return _digest(_state_index(_value(ad, "State")), act)


def _platform(ad: ClassAd) -> str | None:
    """PRINTAS PLATFORM: Arch (x64, x86) / OpSysAndVer (OpSysShortName on Windows)."""
    opsys = _str(ad, "OpSys")
    name = _str(ad, "OpSysShortName") if opsys == "WINDOWS" else _str(ad, "OpSysAndVer")
    if name is None:
        return None
    arch = _str(ad, "Arch") or ""
    arch = {"X86_64": "x64", "X86": "x86"}.get(arch, arch)
    return f"{arch}/{name}"


def _consensus(ad: ClassAd, attr: str, index: object, preempt: int) -> int:
    """A p-slot's children's one state (activity): _NONE without children, _MIXED when they
    differ, unless one is preempting (vacating), which wins."""
    children = _value(ad, attr)
    out = _NONE
    if not isinstance(children, list):
        return out
    for child in children:
        if not isinstance(child, str):
            continue
        k = index(child)  # type: ignore[operator]
        if k in (_NONE, out):
            continue
        if out == _NONE:
            out = k
        elif k == preempt:
            return k
        else:
            out = _MIXED
    return out


# -- -compact -------------------------------------------------------------------------------


@dataclass
class _CompactRow:
    ad: ClassAd
    key: tuple
    primary: str  # Machine:SlotTypeId, what rows of one machine and slot type share
    machine: str
    label: str  # the slot's name before the "@"
    cells: list[str | None]
    partitionable: bool = False
    busy: bool = False
    exhausted: bool = False
    backfill: bool = False
    # folded numbers (None: not a value, the cell prints its fill-in)
    slots: int | None = None
    free_cpus: int | None = None
    free_mem: float | None = None
    max_mem: float | None = None
    starts: float | None = None
    cooked: bool = False
    folded: bool = False
    extra: list[str] = field(default_factory=list)


_COMPACT_HEAD = (
    ("Machine", 12),  # WIDTH AUTO, at least 12 (ppSetStartdCompactCols)
    ("Platform", 8),
    ("Slot", 4),
    ("s", 1),
    ("Cpus", 4),
    ("Gpus", 4),
    (" TotalGb", 8),
    ("FreCpu", 6),
    (" FreeGb ", 8),
    ("CpuLoad", 7),
    ("ST", 2),
    ("Jobs/Min", 8),
    ("MaxSlotGb", 9),
)
COMPACT_CONSTRAINT = "PartitionableSlot =?= true || DynamicSlot =!= true"
_COMPACT = parse_expr(COMPACT_CONSTRAINT)
_PRIMARY = parse_expr('join(":", Machine, SlotTypeId)')


def _slot_tag(ad: ClassAd) -> str:
    """SLOT_COUNT_TAG: S for a static slot, blank for a partitionable one."""
    t = _value(ad, "SlotType")
    if not isinstance(t, str) or not t:
        return ""
    return {"Static": "S", "Partitionable": " "}.get(t, t[:1])


def _compact_row(ad: ClassAd, k: int, keys: SortKeys) -> _CompactRow:
    machine = _value(ad, "Machine")
    primary = _key_text(evaluate(_PRIMARY, ad))
    type_id = _value(ad, "SlotTypeID")
    if isinstance(type_id, int) and not isinstance(type_id, bool) and type_id < 0:
        primary = f"{machine}:{-type_id}"  # HTCondor flips a negative SlotTypeId first
    name = _str(ad, "Name") or ""
    row = _CompactRow(
        ad=ad,
        key=keys.key(ad, k, first=primary),
        primary=primary,
        machine=machine if isinstance(machine, str) else "",
        label=name.split("@", 1)[0],
        cells=[],
    )
    row.partitionable = _value(ad, "PartitionableSlot") is True
    if row.partitionable:
        cpus = _number(_value(ad, "Cpus"))
        row.exhausted = cpus is not None and cpus < 0.1
    row.backfill = _value(ad, "SlotBackfill") is True
    state = _value(ad, "State")
    row.busy = not row.partitionable and state in ("Matched", "Claimed", "Preempting")
    free_cpus = _number(_value(ad, "Cpus"))
    free_mem = _number(_eval(ad, "Memory/1024.0"))
    max_mem = _number(_eval(ad, "Max(ChildMemory)/1024.0"))
    dslots = _number(_value(ad, "NumDynamicSlots"))
    row.slots = None if dslots is None else int(dslots)
    row.free_cpus = None if free_cpus is None else int(free_cpus)
    row.free_mem = None if free_mem is None else float(free_mem)
    row.max_mem = None if max_mem is None else float(max_mem)
    starts = _number(_eval(ad, "RecentJobStarts/20.0"))
    row.starts = None if starts is None else float(starts)
    code = _activity_code(ad)
    if row.partitionable and code is not None:
        code = _rollup_code(ad, code, row.exhausted)
    row.cells = [
        row.machine if isinstance(machine, str) else None,
        _platform(ad),
        None,  # Slots, Cpus ... filled by _compact_cells after folding
        _slot_tag(ad),
        _d(_value(ad, "TotalSlotCpus"), 4),
        _d(_value(ad, "TotalSlotGpus"), 4),
        _f(_eval(ad, "TotalSlotMemory/1024.0"), 8, 2),
        None,
        None,
        _f(_eval(ad, "TotalLoadAvg*1.0/TotalCpus"), 7, 2),
        code,
        None,
        None,
    ]
    return row


def _rollup_code(ad: ClassAd, code: str, exhausted: bool) -> str:
    """A p-slot's ST: its own letters against its children's consensus (status.cpp)."""
    cs = _consensus(ad, "ChildState", _state_index, _STATES.index("Preempting"))
    ca = _consensus(ad, "ChildActivity", _act_index, _ACTIVITIES.index("Vacating"))
    both = _digest(cs, ca)
    bsc, bac = both[0], both[1]
    asc, aac = code[0], code[1]
    if asc == "U" and aac == "i" and exhausted:
        asc, aac = bsc, bac
    elif asc == "D" and bsc == "C":
        asc = bsc
    if bsc == "P":
        asc = bsc
    if bac == "v":
        aac = bac
    if cs != _NONE and asc != bsc:
        asc = "*"
    if ca != _NONE and aac != bac:
        aac = "*"
    return asc + aac


def _cook(row: _CompactRow) -> None:
    """fold_slot_result's set-up of a static head row: MaxSlotGb is its memory, a busy
    slot has nothing free, and it counts one slot."""
    if row.partitionable or row.cooked:
        return
    row.max_mem = row.free_mem
    if row.busy:
        row.free_cpus, row.free_mem = 0, 0.0
    row.slots = 1
    row.cooked = True


def _fold(head: _CompactRow, other: _CompactRow) -> None:
    """fold_slot_result: add ``other`` (same machine and slot type) into ``head``."""
    _cook(head)
    bmem = other.max_mem if other.partitionable else other.free_mem
    if head.max_mem is not None:
        head.max_mem = max(head.max_mem, bmem or 0.0)
    if other.partitionable or not other.busy:
        if head.free_mem is not None:
            head.free_mem = (bmem or 0.0) + head.free_mem
        if head.free_cpus is not None:
            head.free_cpus += other.free_cpus or 0
    slots = head.slots if head.slots is not None else 1
    more = other.slots if other.partitionable and other.slots is not None else 1
    head.slots = slots + more
    if head.starts is not None:
        head.starts += other.starts or 0.0
    a, b = head.cells[10], other.cells[10]
    if a is not None:
        b = b or "\0\0"
        head.cells[10] = ("*" if a[0] != b[0] else a[0]) + ("*" if a[1] != b[1] else a[1])
    other.folded = True


def _compact_rows(slots: list[ClassAd], keys: SortKeys) -> list[_CompactRow]:
    rows = [_compact_row(ad, k, keys) for k, ad in enumerate(slots)]
    rows.sort(key=lambda r: r.key)
    head: _CompactRow | None = None
    for row in rows:
        if head is not None and row.primary == head.primary:
            _fold(head, row)
            continue
        if head is not None:
            _cook(head)
            same_machine = row.primary.rsplit(":", 1)[0] == head.primary.rsplit(":", 1)[0]
            if same_machine and row.label:
                row.cells[0] = "   " + row.label  # a second slot type of the machine
        head = row
    if head is not None:
        _cook(head)
    return [r for r in rows if not r.folded]


def format_status_compact(
    slots: Iterable[ClassAd],
    *,
    width: int | None = None,
    wide: bool = False,
    keys: SortKeys | None = None,
) -> str:
    """condor_status -compact: a row per machine (and slot type), then the totals keyed
    by platform, partitionable slots counted by their children's states."""
    ads = [ad for ad in _check_ads(slots, "slot ad") if evaluate(_COMPACT, ad) is True]
    _check_width(width)
    if not ads:
        return ""
    keys = keys or SortKeys()
    rows = _compact_rows(ads, keys)
    cols = [_Col(h, w, left=True) for h, w in _COMPACT_HEAD]
    cols[3].prefix = False
    cols[10].left = False
    cols[11].alt = "_"
    cols[12].alt = "*"
    table: list[list[str | None]] = []
    for r in rows:
        cells = list(r.cells)
        cells[2] = None if r.slots is None else f"{r.slots:4d}"
        cells[7] = None if r.free_cpus is None else f"{r.free_cpus:6d}"
        cells[8] = None if r.free_mem is None else f"{r.free_mem:8.2f}"
        cells[11] = None if r.starts is None else f"{r.starts:8.2f}"
        cells[12] = None if r.max_mem is None else f"{r.max_mem:9.2f}"
        table.append(cells)
    # Machine grows to the machines' names (not the indented slot names), the rest to all
    _auto(cols[0], (_str(r.ad, "Machine") for r in rows))
    for k in range(1, len(cols)):
        _auto(cols[k], (t[k] for t in table))
    out = _table(cols, table, None if wide else width)
    keyed = [(_platform(ad) or "", ad) for ad in ads]
    key_width = None if wide else max([14, *(len(k) for k, _ in keyed)])
    return out + "\n" + format_totals(keyed, "normal", key_width, rollup=True)


# -- totals (totals.cpp) ----------------------------------------------------------------------

_TOTAL_HEADS = {
    "normal": (
        ("Total", 6),
        ("Owner", 5),
        ("Claimed", 7),
        ("Unclaimed", 9),
        ("Matched", 7),
        ("Preempting", 10),
        ("Drain", 6),
        ("Backfill", 8),
        ("BkIdle", 6),
    ),
    "state": (
        ("Total", 6),
        ("Owner", 5),
        ("Unclaimed", 9),
        ("Claimed", 7),
        ("Preempting", 10),
        ("Matched", 7),
        ("Drain", 6),
        ("Backfill", 8),
        ("BkIdle", 6),
    ),
}
_NORMAL_COLS = {
    "Owner": 1,
    "Claimed": 2,
    "Unclaimed": 3,
    "Matched": 4,
    "Preempting": 5,
    "Drained": 6,
    "Backfill": 7,
}
_STATE_COLS = {
    "Owner": 1,
    "Unclaimed": 2,
    "Claimed": 3,
    "Preempting": 4,
    "Matched": 5,
    "Drained": 6,
    "Backfill": 7,
}


class _Counts:
    """One ClassTotal: the numbers of a key (or of the Total row)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.n = [0] * 9
        self.num = [0.0] * 6  # server: avail memory disk mips kflops; run: mips kflops load

    def state(self, state: object, backfill: bool) -> bool:
        cols = _NORMAL_COLS if self.kind == "normal" else _STATE_COLS
        if backfill:
            if state == "Unclaimed":
                self.n[8] += 1
                return True
            if state == "Claimed":
                state = "Backfill"
        k = cols.get(state) if isinstance(state, str) else None
        if k is None:
            return False
        self.n[k] += 1
        if self.kind == "normal":  # StartdStateTotal never counts its Total column
            self.n[0] += 1
        return True

    def update(self, ad: ClassAd, rollup: bool, ignore_dynamic: bool) -> bool:
        backfill = rollup and _value(ad, "SlotBackfill") is True
        if self.kind in ("normal", "state"):
            pslot = _value(ad, "PartitionableSlot") is True
            if ignore_dynamic and not pslot and _value(ad, "DynamicSlot") is True:
                return True
            if rollup and pslot:
                children = _value(ad, "ChildState")
                if isinstance(children, list):
                    for child in children:
                        if isinstance(child, str):
                            self.state(child, backfill)
                return True
            state = _value(ad, "State")
            if not isinstance(state, str):
                return False
            return self.state(state, backfill)
        if self.kind == "server":
            state = _value(ad, "State")
            if not isinstance(state, str):
                return False
            vals = [_int(ad, a) for a in ("Memory", "Disk", "Mips", "KFlops")]
            if state in ("Claimed", "Unclaimed"):
                self.num[0] += 1
            self.n[0] += 1
            for k, v in enumerate(vals):
                self.num[k + 1] += v or 0
            return all(v is not None for v in vals)
        if self.kind == "run":
            vals = [_int(ad, "Mips"), _int(ad, "KFlops"), _num(ad, "LoadAvg")]
            self.n[0] += 1
            for k, v in enumerate(vals):
                self.num[k] += v or 0
            return all(v is not None for v in vals)
        # startd: StartDaemonTotal
        slots = _int(ad, "TotalSlots")
        if slots is None:
            slots = _int(ad, "NumDynamicSlots")
        vals = [slots, _int(ad, "TotalCpus"), _int(ad, "TotalGPUs"), _int(ad, "TotalMemory")]
        inuse = [
            _int(ad, a) or 0
            for a in (
                "TotalInUseCpus",
                "TotalBackfillInUseCpus",
                "TotalInUseGPUs",
                "TotalBackfillInUseGPUs",
            )
        ]
        mem = vals[3] or 0
        self.n[0] += 1
        self.n[1] += vals[0] or 0
        self.n[2] += vals[1] or 0
        self.n[3] += inuse[0]
        self.n[4] += inuse[1]
        self.n[5] += vals[2] or 0
        self.n[6] += inuse[2]
        self.n[7] += inuse[3]
        if mem:
            self.num[0] += (_int(ad, "TotalInUseMemory") or 0) / mem
            self.num[1] += (_int(ad, "TotalBackfillInUseMemory") or 0) / mem
        return all(v is not None for v in vals) and mem != 0

    def header(self) -> str:
        if self.kind in _TOTAL_HEADS:
            return " ".join(h.rjust(w)[:w] for h, w in _TOTAL_HEADS[self.kind])
        if self.kind == "server":
            return (
                f"{'Slots':>9} {'Avail':>5} {'Memory':>7} {'Disk':>11} {'MIPS':>11} {'KFLOPS':>11}"
            )
        if self.kind == "run":
            return f"{'Machines':>9}  {'MIPS':>11}  {'KFLOPS':>11}  {'AvgLoadAvg':>11}"
        heads = ("Machines", "Slots", "Cpus", "BusyCpus", "BkCpus", "GPUs", "BusyGPUs")
        heads += ("BkGPUs", "Memory%", "BkMem%")
        return " ".join(f"{h:>8.8}" for h in heads)

    def info(self) -> str:
        n, x = self.n, self.num
        if self.kind in _TOTAL_HEADS:
            return " ".join(f"{v:{w}d}" for v, (_, w) in zip(n, _TOTAL_HEADS[self.kind]))
        if self.kind == "server":
            return (
                f"{n[0]:9d} {int(x[0]):5d} {int(x[1]):11d} {int(x[2]):11d} "
                f"{int(x[3]):11d} {int(x[4]):11d}"
            )
        if self.kind == "run":
            avg = x[2] / n[0] if n[0] else 0.0
            return f"{n[0]:9d}  {int(x[0]):11d}  {int(x[1]):11d}   {avg:.3f}"
        machines = n[0] or 1
        return " ".join(f"{v:8d}" for v in n[:8]) + (
            f" {100 * x[0] / machines:7.2f}% {100 * x[1] / machines:7.2f}%"
        )


def _total_key(ad: ClassAd, kind: str) -> str | None:
    """ClassTotal::makeKey: Arch/OpSys for slots, Activity for -state, the platform for
    startd daemons."""
    if kind == "state":
        return _str(ad, "Activity")
    if kind == "startd":
        return _platform(ad)
    arch, opsys = _str(ad, "Arch"), _str(ad, "OpSys")
    return None if arch is None or opsys is None else f"{arch}/{opsys}"


def format_totals(
    ads: Iterable[tuple[str | None, ClassAd]] | Iterable[ClassAd],
    kind: str,
    key_width: int | None = 14,
    *,
    rollup: bool = False,
) -> str:
    """TrackTotals::displayTotals for ``kind`` (normal, state, server, run, startd): a row
    per key, then Total. ``ads`` are ads (keyed as HTCondor's makeKey) or (key, ad) pairs
    (-compact's platform keys, with ``rollup``: a partitionable slot counts its children's
    states, and itself while it has cpus left). ``key_width`` None sizes the key column to
    the longest key (-wide), at least 5."""
    if kind not in ("normal", "state", "server", "run", "startd"):
        raise LayoutError(f"no totals for {kind!r}")
    per: dict[str, _Counts] = {}
    top = _Counts(kind)
    malformed = 0
    for item in ads:
        key, ad = item if isinstance(item, tuple) else ("", item)
        key = key or _total_key(ad, kind)  # an empty key: makeKey's
        if not key:
            malformed += 1
            continue
        counts = per.setdefault(key, _Counts(kind))
        passes = [(rollup, rollup)]
        if rollup and _value(ad, "PartitionableSlot") is True:
            cpus = _number(_value(ad, "Cpus"))
            if not (cpus is not None and cpus < 0.1) and _value(ad, "SlotBackfill") is not True:
                passes.append((False, True))  # the p-slot's own free part
        for roll, ignore_dynamic in passes:
            ok = counts.update(ad, roll, ignore_dynamic)
            top.update(ad, roll, ignore_dynamic)
            malformed += not ok
    kw = key_width if key_width is not None else max([5, *(len(k) for k in per)])
    out = " " * kw + top.header() + "\n\n"  # displayHeader's newline, then one more
    for key in sorted(per):
        out += key.rjust(kw)[:kw] + per[key].info() + "\n"
    if per:
        out += "\n"
    out += "Total".rjust(kw) + top.info() + "\n"
    if malformed:
        out += f"\n{'':{kw}}(Omitted {malformed} malformed ads in computed attribute totals)\n\n"
    return out


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
