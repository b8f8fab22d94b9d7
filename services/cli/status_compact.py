"""condor_status -compact (prettyPrint.cpp startdCompact_PrintFormat; status.cpp
process_ads_callback, fold_slot_result, reduce_slot_results): a row per machine and slot
type. The slots of one machine and slot type fold into one row: Slots counts them,
FreCpu and FreeGb add up the idle ones, MaxSlotGb is the largest, while Cpus, Gpus and
TotalGb are the first slot's (HTCondor does not add those up); a second slot type of the
machine gets a row of its own named by its slot ("   slot2"). A partitionable slot's
ST is its own state against its children's consensus. Totals by platform, a p-slot
counted by its children's states and, while it has cpus, its own."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..classad import ClassAd, evaluate, parse_expr, unparse
from ..classad.tree import Literal
from ..tooltime import TOOL_RNG, wall_now
from .layouts import _auto, _check_ads, _check_width, _Col, _str, _table, _value
from .status_cells import (
    _ACTIVITIES,
    _NONE,
    _STATES,
    SortKeys,
    _act_index,
    _activity_code,
    _consensus,
    _d,
    _digest,
    _eval,
    _f,
    _key_text,
    _number,
    _platform,
    _state_index,
)
from .status_totals import format_totals

__all__ = ["CLAIMED_COMPACT_CONSTRAINT", "COMPACT_CONSTRAINT", "VARIANTS", "format_status_compact"]

# -- -compact -------------------------------------------------------------------------------


@dataclass
class _CompactRow:
    ad: ClassAd
    key: tuple
    primary: str  # Machine:SlotTypeId, what rows of one machine and slot type share
    label: str  # the slot's name before the "@"
    cells: dict[str, str | None]
    partitionable: bool = False
    busy: bool = False
    exhausted: bool = False
    # folded numbers (None: not a value, the cell prints its fill-in)
    slots: int | None = None
    free_cpus: int | None = None
    free_mem: float | None = None
    max_mem: float | None = None
    starts: float | None = None
    cooked: bool = False
    folded: bool = False


# column: (heading, least width, fill-in when no value); left-aligned unless said
_COLUMNS = {
    "machine": ("Machine", 7, ""),
    "platform": ("Platform", 8, ""),
    "slots": ("Slot", 4, ""),
    "tag": ("s", 1, ""),
    "cpus": ("Cpus", 4, ""),
    "gpus": ("Gpus", 4, ""),
    "totalgb": (" TotalGb", 8, ""),
    "frecpu": ("FreCpu", 6, ""),
    "freegb": (" FreeGb ", 8, ""),
    "mips": (" Mips  ", 7, "-"),
    "kflops": (" KFlops  ", 9, "-"),
    "cpuload": ("CpuLoad", 7, ""),
    "st": ("ST", 2, ""),
    "jobs": ("Jobs/Min", 8, "_"),
    "maxslot": ("MaxSlotGb", 9, "*"),
    "users": ("Users", 5, ""),
}
_BASE = ("machine", "platform", "slots", "tag")
_SIZE = ("cpus", "gpus", "totalgb")


@dataclass(frozen=True)
class _Variant:
    """One of HTCondor's compact print formats and what it folds and totals."""

    columns: tuple[str, ...]
    constraint: str
    totals: str  # the totals kind
    platform_key: bool  # totals keyed by the Platform column (else makeKey's key)
    machine_width: int = 7  # ppSetStartdCompactCols asks 12


COMPACT_CONSTRAINT = "PartitionableSlot =?= true || DynamicSlot =!= true"
CLAIMED_COMPACT_CONSTRAINT = (
    '(State == "Claimed" && DynamicSlot =!= true) || '
    "(NumDynamicSlots isnt undefined && NumDynamicSlots > 0)"
)
VARIANTS = {
    # startdCompact_PrintFormat
    "normal": _Variant(
        (*_BASE, *_SIZE, "frecpu", "freegb", "cpuload", "st", "jobs", "maxslot"),
        COMPACT_CONSTRAINT,
        "normal",
        True,
        12,
    ),
    # serverCompact_PrintFormat
    "server": _Variant(
        (*_BASE, *_SIZE, "mips", "kflops", "cpuload", "st", "jobs"),
        COMPACT_CONSTRAINT,
        "server",
        True,
    ),
    # stateCompact_PrintFormat: totals keyed by Activity (PP_SLOTS_STATE's own key)
    "state": _Variant(
        (*_BASE, *_SIZE, "cpuload", "st", "jobs"), COMPACT_CONSTRAINT, "state", False
    ),
    # claimedCompact_PrintFormat
    "claimed": _Variant((*_BASE, "users"), CLAIMED_COMPACT_CONSTRAINT, "run", True),
}
_PRIMARY = parse_expr('join(":", Machine, SlotTypeId)')


def _slot_tag(ad: ClassAd) -> str:
    """SLOT_COUNT_TAG: S for a static slot, blank for a partitionable one."""
    t = _value(ad, "SlotType")
    if not isinstance(t, str) or not t:
        return ""
    return {"Static": "S", "Partitionable": " "}.get(t, t[:1])


def _unique(v: object) -> str | None:
    """PRINTAS UNIQUE: a list's distinct items (a non-string as its ClassAd text),
    sorted, joined by ", "."""
    if isinstance(v, str):
        v = [x.strip() for x in v.split(",") if x.strip()]
    if not isinstance(v, list):
        return None
    return ", ".join(sorted({x if isinstance(x, str) else unparse(Literal(x)) for x in v}))


def _compact_row(ad: ClassAd, k: int, keys: SortKeys) -> _CompactRow:
    machine = _value(ad, "Machine")
    primary = _key_text(evaluate(_PRIMARY, ad, now=wall_now(), rng=TOOL_RNG))
    type_id = _value(ad, "SlotTypeID")
    if isinstance(type_id, int) and not isinstance(type_id, bool) and type_id < 0:
        primary = f"{machine}:{-type_id}"  # HTCondor flips a negative SlotTypeId first
    name = _str(ad, "Name") or ""
    row = _CompactRow(
        ad=ad,
        key=keys.key(ad, k, first=primary),
        primary=primary,
        label=name.split("@", 1)[0],
        cells={},
    )
    row.partitionable = _value(ad, "PartitionableSlot") is True
    if row.partitionable:
        cpus = _number(_value(ad, "Cpus"))
        row.exhausted = cpus is not None and cpus < 0.1
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
    row.cells = {
        "machine": machine if isinstance(machine, str) else None,
        "platform": _platform(ad),
        "tag": _slot_tag(ad),
        "cpus": _d(_value(ad, "TotalSlotCpus"), 4),
        "gpus": _d(_value(ad, "TotalSlotGpus"), 4),
        "totalgb": _f(_eval(ad, "TotalSlotMemory/1024.0"), 8, 2),
        "mips": _d(_value(ad, "Mips"), 7),
        "kflops": _d(_value(ad, "KFlops"), 9),
        "cpuload": _f(_eval(ad, "TotalLoadAvg*1.0/TotalCpus"), 7, 2),
        "st": code,
        "users": _unique(_value(ad, "ChildRemoteUser")),
    }
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
    a, b = head.cells["st"], other.cells["st"]
    if a is not None:
        b = b or "\0\0"
        head.cells["st"] = ("*" if a[0] != b[0] else a[0]) + ("*" if a[1] != b[1] else a[1])
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
                row.cells["machine"] = "   " + row.label  # a second slot type
        head = row
    if head is not None:
        _cook(head)
    return [r for r in rows if not r.folded]


def _folded_cells(r: _CompactRow) -> dict[str, str | None]:
    cells = dict(r.cells)
    cells["slots"] = None if r.slots is None else f"{r.slots:4d}"
    cells["frecpu"] = None if r.free_cpus is None else f"{r.free_cpus:6d}"
    cells["freegb"] = None if r.free_mem is None else f"{r.free_mem:8.2f}"
    cells["jobs"] = None if r.starts is None else f"{r.starts:8.2f}"
    cells["maxslot"] = None if r.max_mem is None else f"{r.max_mem:9.2f}"
    return cells


def format_status_compact(
    slots: Iterable[ClassAd],
    *,
    width: int | None = None,
    wide: bool = False,
    keys: SortKeys | None = None,
    variant: str = "normal",
) -> str:
    """condor_status -compact: a row per machine (and slot type), then the totals.
    ``variant``: normal, server (-server), state (-state) or claimed (-claimed, -run),
    each HTCondor's compact print format, its constraint and its totals."""
    v = VARIANTS[variant]
    where = parse_expr(v.constraint)
    now = wall_now()
    ads = [
        ad
        for ad in _check_ads(slots, "slot ad")
        if evaluate(where, ad, now=now, rng=TOOL_RNG) is True
    ]
    _check_width(width)
    if not ads:
        return ""
    rows = _compact_rows(ads, keys or SortKeys())
    cols = []
    for name in v.columns:
        head, least, alt = _COLUMNS[name]
        col = _Col(head, least, left=name != "st", alt=alt)
        col.prefix = name != "tag"
        cols.append(col)
    cols[0].width = v.machine_width
    table = [[_folded_cells(r)[name] for name in v.columns] for r in rows]
    # Machine grows to the machines' names (not the indented slot names), the rest to all
    _auto(cols[0], (_str(r.ad, "Machine") for r in rows))
    for k in range(1, len(cols)):
        _auto(cols[k], (t[k] for t in table))
    out = _table(cols, table, None if wide else width)
    keyed = [((_platform(ad) or "") if v.platform_key else "", ad) for ad in ads]
    key_width = None if wide else max([14, *(len(k) for k, _ in keyed)])
    return out + "\n" + format_totals(keyed, v.totals, key_width, rollup=True)
