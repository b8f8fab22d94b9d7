"""condor_status' totals tables (totals.cpp TrackTotals::displayTotals and its
ClassTotals: StartdNormalTotal, StartdStateTotal, StartdServerTotal, StartdRunTotal,
StartDaemonTotal; ClassTotal::makeKey). -state's Total column stays 0: HTCondor's
StartdStateTotal never counts it."""

from __future__ import annotations

from collections.abc import Iterable

from ..classad import ClassAd
from .layouts import LayoutError, _int, _num, _str, _value
from .status_cells import _number, _platform
from .status_normal import NORMAL_STATE_COLS

__all__ = ["format_totals"]

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
        cols = NORMAL_STATE_COLS if self.kind == "normal" else _STATE_COLS
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
