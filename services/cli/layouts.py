"""HTCondor's command output layouts (condor_q, condor_status, condor_history) as pure text.

Every function takes ads (``mockpool.classad.ClassAd``) and returns the exact text the real
tool prints, newlines included; nothing here does I/O or reads the clock. Dates in ads
are Unix times, as HTCondor's (a pool's date of pool time 0 plus pool seconds); they print
in local time (``time.localtime``, as HTCondor does).

The layouts follow HTCondor's source (25.x, where condor_status' Arch column is 8 wide and
Mem 6; older manual pages show 6 and 4): the print-format tables in
``src/condor_q.V6/queue.cpp`` (``jobDefault_PrintFormat``, ``jobProgress_PrintFormat``,
``reduce_results``, the ``standard_summary`` masks), ``src/condor_status.V6/prettyPrint.cpp``
(``startdPFV_Normal``, ``scheddNormal_PrintFormat``, ``submitterNormal_PrintFormat``,
``negotiatorNormal_PrintFormat``), ``src/condor_status.V6/totals.cpp`` (the summary tables),
``src/condor_tools/history.cpp`` and ``src/condor_utils/history_utils.h`` (condor_history),
``src/condor_utils/format_time.cpp`` and ``ad_printmask.cpp`` (column alignment, truncation,
``OR ??`` fill-ins). Details reproduced on purpose, quirks included:

- condor_q always starts with two blank lines; the totals lines end with a space before the
  newline (the summary mask puts its column separator before the ``\\n``); the output ends
  with a blank line.
- condor_q batch mode: OWNER is as wide as the longest owner, but at least 8 when every
  owner is shorter than the heading "OWNER" (``fnFixupWidthsForProgressFormat``);
  BATCH_NAME at least 10; counters print ``_`` for zero; HOLD only when a row has held jobs
  (or there are no jobs at all); DONE counts procs that left the queue, so completed jobs
  still in the queue count only in TOTAL; JOB_IDS is ``C.P``, ``C.P-Q`` or
  ``C.P ... D.Q``. Without ``-wide`` lines are cut at 79 columns (condor_q assumes 80 when
  not on a terminal) and long owner/batch names are shrunk as condor_q does.
- condor_q -nobatch: SIZE is 4 wide and *truncated* (``12345.6`` prints ``1234``) unless a
  cluster id >= 9999, a proc id >= 999 or an owner longer than 14 widens the columns.
- condor_q -long prints the ads sorted by job id, attributes sorted case-insensitively,
  private attributes (ClaimId, Capability, ...) left out, no header or totals.
- condor_status sorts by Machine, then Name, with HTCondor's natural compare (slot1_2
  before slot1_10); -long sorts attributes case-insensitively too. When not on a terminal
  (``width=None``) the Name column is at least 34 wide and nothing is cut; on a terminal
  (``width=N``) Name is cropped to fit and lines are cut at N-1.
- condor_status -schedd's totals table has a line of 14 spaces where the per-key row would
  be (``ScheddNormalTotal`` prints nothing for it), exactly as HTCondor does.
- condor_history on an 80-column (or non-terminal) output uses the legacy fixed layout of
  ``short_header``/``short_print``: full Cmd path, CMD cut at 15 characters, ``" ??? "`` for
  an unset CompletionDate. Any other width uses the newer print-format layout.

Known differences from real HTCondor output (the mock's ads are simpler than a schedd's):

- -nobatch RUN_TIME: HTCondor needs RemoteUserCpu and ShadowBday; here RUN_TIME is
  RemoteWallClockTime plus, for a running job, now - JobCurrentStartDate.
- SIZE prints 0.0 when neither MemoryUsage nor ImageSize is in the ad (HTCondor: blank).
- LoadAv uses CondorLoadAvg, else LoadAvg, else prints 0.000 (HTCondor: ``[????]``).
- Batch DONE/TOTAL use TotalSubmitProcs when the ad has it (HTCondor injects it from the
  cluster ad); otherwise the total is guessed as the highest proc id + 1 (HTCondor's own
  ``-batch`` guess mode, without its off-by-one) instead of printing ``_``.
- condor_history: JobPrio, ImageSize and CompletionDate may be absent (HTCondor prints
  `` --- ???? --- `` for such a record); CompletionDate 0 means unset. Records are printed
  in the order given (condor_history prints the most recently finished first).
- No DAGMan, grid, factory, suspension-by-time or cooldown decorations.
- Negotiator LastCycleEnd uses LastNegotiationCycleEnd0, else LastNegotiationCycleTime0 +
  LastNegotiationCycleDuration0.
"""

from __future__ import annotations

import math
import re
import struct
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..classad import ERROR, UNDEFINED, ClassAd, evaluate, format_ad, parse_expr, unparse
from ..classad.textio import format_old_lines
from ..classad.tree import Literal
from ..jobstates import COMPLETED, HELD, IDLE, REMOVED, RUNNING, SUSPENDED, TRANSFERRING_OUTPUT
from ..tooltime import TOOL_RNG, wall_now
from .analysis import JobAnalysis

__all__ = [
    "JobTotals",
    "LayoutError",
    "fmt_date",
    "fmt_duration",
    "format_better_analyze",
    "format_dry_run",
    "format_history",
    "format_long",
    "format_q",
    "format_q_long",
    "format_status",
    "format_status_gpus",
    "format_status_negotiator",
    "format_status_schedd",
    "format_status_submitters",
    "natural_cmp",
    "natural_key",
]


class LayoutError(ValueError):
    """An ad cannot be laid out (for example a job ad without ClusterId)."""


# -- values out of ads ------------------------------------------------------------------


def _value(ad: ClassAd, name: str) -> object:
    """The attribute's value (UNDEFINED when absent); literals without an evaluator call."""
    expr = ad.lookup(name)
    if expr is None:
        return UNDEFINED
    if type(expr) is Literal:
        return expr.value
    return evaluate(expr, ad, now=wall_now(), rng=TOOL_RNG)


def _number(v: object) -> float | int | None:
    """A finite int or real (a bool is not a number here); anything else is no value."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def _num(ad: ClassAd, name: str) -> float | int | None:
    return _number(_value(ad, name))


def _int(ad: ClassAd, name: str) -> int | None:
    v = _num(ad, name)
    return None if v is None else int(v)


def _str(ad: ClassAd, name: str) -> str | None:
    v = _value(ad, name)
    return v if isinstance(v, str) else None


def _bool(ad: ClassAd, name: str) -> bool:
    v = _value(ad, name)
    return v is True or (isinstance(v, (int, float)) and not isinstance(v, bool) and v != 0)


def _check_ads(ads: Iterable[ClassAd], what: str) -> list[ClassAd]:
    out = list(ads)
    for k, ad in enumerate(out):
        if not isinstance(ad, ClassAd):
            raise LayoutError(f"{what} #{k} is a {type(ad).__name__}, not a ClassAd")
    return out


def _job_id(ad: ClassAd, k: int) -> tuple[int, int]:
    c, p = _int(ad, "ClusterId"), _int(ad, "ProcId")
    if c is None or p is None:
        raise LayoutError(f"job ad #{k} has no integer ClusterId and ProcId")
    return c, p


# -- time -------------------------------------------------------------------------------


def _condor_time(seconds: float) -> str:
    """format_time(): "%3d+%02d:%02d:%02d" (days padded to 3)."""
    s = max(0, int(seconds))
    d, s = divmod(s, 86400)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    return f"{d:3d}+{h:02d}:{m:02d}:{s:02d}"


def fmt_duration(seconds: float) -> str:
    """Seconds as HTCondor's d+hh:mm:ss, e.g. 90061 -> "1+01:01:01" (negative clamps to 0)."""
    return _condor_time(seconds).lstrip()


def fmt_date(unix: float) -> str:
    """A unix time as HTCondor's "M/D hh:mm" in local time: "11/22 10:00", " 1/5  09:03"."""
    if unix < 0:
        return "    ???    "
    tm = time.localtime(int(unix))
    return f"{tm.tm_mon:2d}/{tm.tm_mday:<2d} {tm.tm_hour:02d}:{tm.tm_min:02d}"


# -- a tiny AttrListPrintMask ---------------------------------------------------------------


@dataclass
class _Col:
    heading: str
    width: int = 0  # 0: as wide as the text
    left: bool = False
    truncate: bool = False
    prefix: bool = True  # the " " column separator before this column (never the first)
    alt: str = ""  # text when the value is missing: "" blank, "?"/"_"/"-" one char
    alt_wide: bool = False  # "OR ??": fill the column as "[???]"
    hidden: bool = False


def _alt(col: _Col) -> str:
    ch = col.alt
    if not ch:
        return ""
    if col.alt_wide:
        w = col.width
        if w < 3:
            return ch
        return ("[" + ch * (w - 2) + "]") if ch == "?" else ch * w
    return ch


def _cell(col: _Col, text: str | None) -> str:
    val = _alt(col) if text is None else text
    w = col.width
    if not w:
        return val
    if len(val) > w:
        return val[:w] if col.truncate else val
    return val.ljust(w) if col.left else val.rjust(w)


def _join(cols: Sequence[_Col], texts: Sequence[str]) -> str:
    out = ""
    for k, (col, text) in enumerate(zip(cols, texts)):
        if col.hidden:
            continue
        if k > 0 and col.prefix:
            out += " "
        out += text
    return out


def _row(cols: Sequence[_Col], values: Sequence[str | None], max_width: int | None) -> str:
    line = _join(cols, [_cell(c, v) for c, v in zip(cols, values)])
    return (line[:max_width] if max_width else line) + "\n"


def _headings(cols: Sequence[_Col], max_width: int | None) -> str:
    line = _join(cols, [c.heading.ljust(c.width) if c.width else c.heading for c in cols])
    return (line[:max_width] if max_width else line) + "\n"


def _auto(col: _Col, values: Iterable[str | None]) -> None:
    """WIDTH AUTO: widen the column to its longest (present) value."""
    col.width = max([col.width, *(len(v) for v in values if v is not None)])


# -- natural sort (src/classad/natural_cmp.cpp) -------------------------------------------


def _isdig(c: str) -> bool:
    return "0" <= c <= "9"


def natural_cmp(a: str, b: str) -> int:
    """HTCondor's natural_cmp (strverscmp-like): slot1_2 < slot1_10, exec01 < exec1."""

    def ch(s: str, i: int) -> str:
        return s[i] if i < len(s) else "\0"

    i = 0
    while ch(a, i) == ch(b, i) and ch(a, i) != "\0":
        i += 1
    c1, c2 = ch(a, i), ch(b, i)
    if c1 == c2:
        return 0
    nb = i
    while nb > 0 and _isdig(a[nb - 1]):
        nb -= 1
    if nb == i and (not _isdig(c1) or not _isdig(c2)):
        return ord(c1) - ord(c2)
    z1 = nb
    while ch(a, z1) == "0":
        z1 += 1
    z2 = nb
    while ch(b, z2) == "0":
        z2 += 1
    if z1 > nb and not _isdig(ch(a, z1)):
        z1 -= 1  # a final zero is a number, not a leading zero
    if z2 > nb and not _isdig(ch(b, z2)):
        z2 -= 1
    if z1 - nb != z2 - nb:
        return (z2 - nb) - (z1 - nb)  # more leading zeros first, as strverscmp
    if z1 > nb:
        return ord(c1) - ord(c2)
    e1 = z1
    while _isdig(ch(a, e1)):
        e1 += 1
    e2 = z2
    while _isdig(ch(b, e2)):
        e2 += 1
    if e1 - nb != e2 - nb:
        return (e1 - nb) - (e2 - nb)  # shorter number first
    return ord(c1) - ord(c2)


_DIGITS = re.compile(r"([0-9]+)")


def natural_key(s: str) -> tuple:
    """A sort key that orders strings exactly as natural_cmp does (fast for big pools).

    The key alternates non-digit text and digit runs. A text part ends in "0" when a digit
    run follows, since a digit sorts against any other character as "0" does. Two digit
    runs at the same place compare as natural_cmp does: more leading zeros first; without
    leading zeros, shorter (smaller) numbers first; with equally many, character by
    character including the character after the run.
    """
    parts = _DIGITS.split(s)
    key: list[object] = []
    for i in range(0, len(parts) - 1, 2):
        key.append(parts[i] + "0")
        run = parts[i + 1]
        zeros = len(run) - len(run.lstrip("0"))
        if zeros == len(run):
            zeros -= 1  # the last zero of an all-zero run is the number itself
        if zeros:
            key.append((-zeros, run + (parts[i + 2][:1] or "\0")))
        else:
            key.append((0, len(run), run))
    key.append(parts[-1])
    return tuple(key)


def _key_field(ad: ClassAd, name: str) -> str:
    v = _value(ad, name)
    if v is UNDEFINED:
        return "undefined"
    if v is ERROR:
        return "error"
    if isinstance(v, bool):
        return str(int(v))
    if isinstance(v, float):  # HTCondor renders a real by its IEEE bits
        return str(struct.unpack("<q", struct.pack("<d", v))[0])
    return str(v)


def _status_sorted(ads: list[ClassAd], keep_order: bool = False) -> list[ClassAd]:
    """condor_status' default order: Machine, then Name, natural compare, then arrival
    (``keep_order``: the ads come sorted already, by ``-sort``)."""
    if keep_order:
        return ads
    keys = [
        natural_key(f"{_key_field(ad, 'Machine')}\n{_key_field(ad, 'Name')}\n{k:08X}")
        for k, ad in enumerate(ads)
    ]
    return [ads[i] for i in sorted(range(len(ads)), key=keys.__getitem__)]


# -- -long ------------------------------------------------------------------------------

_PRIVATE = {"capability", "childclaimids", "claimid", "claimidlist", "claimids", "transferkey"}


def _long_ad(ad: ClassAd) -> str:
    """One ad as `condor_* -long` prints it: sorted, private attributes left out."""
    return format_old_lines(
        (
            pair
            for pair in ad.pairs()
            if not ((low := pair[0].lower()) in _PRIVATE or low.startswith("_condor_priv"))
        ),
        sort=True,
    )


def format_long(ads: Iterable[ClassAd]) -> str:
    """condor_status -long: ads in Machine/Name order, each followed by a blank line."""
    return "".join(_long_ad(ad) + "\n" for ad in _status_sorted(_check_ads(ads, "ad")))


def format_dry_run(procs: Sequence[dict[str, str]], *, full: bool = False) -> str:
    """condor_submit -dry-run's output file: for each job a blank line and ``Attr=value``
    lines, the first job's attributes in full (its cluster's, then ``ProcId``), each later
    job only its ``ProcId`` and what differs from the first (as the simulated queue is
    sent them). ``full`` (-dry-run:full) writes each job's whole ad in long form instead."""
    ads = [ClassAd({k: parse_expr(v) for k, v in proc.items()}) for proc in procs]
    if full:
        return "\n" + "\n".join(format_ad(ad, "old", sort=True) for ad in ads)
    texts = [{k: unparse(ad[k]) for k in ad} for ad in ads]
    varying = {k for t in texts[1:] for k in t if t.get(k) != texts[0].get(k)}
    varying.discard("ProcId")
    out = []
    for n, t in enumerate(texts):
        out.append("")
        if n == 0:
            out += [f"{k}={v}" for k, v in t.items() if k not in varying and k != "ProcId"]
        out.append(f"ProcId={t['ProcId']}")
        out += [f"{k}={v}" for k, v in t.items() if k in varying]
    return "\n".join(out) + "\n"


def format_q_long(jobs: Iterable[ClassAd]) -> str:
    """condor_q -long: jobs by id, each followed by a blank line; no header, no totals."""
    jobs = _check_ads(jobs, "job ad")
    ids = [_job_id(j, k) for k, j in enumerate(jobs)]
    order = sorted(range(len(jobs)), key=lambda k: ids[k])
    texts = (_long_ad(jobs[k]) for k in order)
    return "".join(text + "\n" for text in texts if text)


# -- condor_q ---------------------------------------------------------------------------

_STATUS_LETTER = {1: "I", 2: "R", 3: "X", 4: "C", 5: "H", 6: ">", 7: "S", 8: "F", 9: "B", 10: "P"}


@dataclass(frozen=True)
class JobTotals:
    """The counts of a condor_q totals line."""

    jobs: int = 0
    completed: int = 0
    removed: int = 0
    idle: int = 0
    running: int = 0
    held: int = 0
    suspended: int = 0

    @classmethod
    def of(cls, jobs: Iterable[ClassAd]) -> JobTotals:
        """Count as the schedd does (transferring output counts as running)."""
        n = {s: 0 for s in range(1, 8)}
        for job in jobs:
            st = _int(job, "JobStatus") or 0
            if st == TRANSFERRING_OUTPUT:
                st = RUNNING
            if st in n:
                n[st] += 1
        return cls(
            jobs=sum(n[s] for s in (IDLE, RUNNING, HELD, REMOVED, COMPLETED, SUSPENDED)),
            completed=n[COMPLETED],
            removed=n[REMOVED],
            idle=n[IDLE],
            running=n[RUNNING],
            held=n[HELD],
            suspended=n[SUSPENDED],
        )

    def text(self, who: str) -> str:
        return (
            f"Total for {who}: {self.jobs} jobs; {self.completed} completed, "
            f"{self.removed} removed, {self.idle} idle, {self.running} running, "
            f"{self.held} held, {self.suspended} suspended"
        )


def _status_chars(job: ClassAd) -> str:
    st = _int(job, "JobStatus")
    a, b = _STATUS_LETTER.get(st or 0, " "), " "
    queued = _bool(job, "TransferQueued")
    if _bool(job, "TransferringInput"):
        a, b = "<", ("q" if queued else " ")
    if _bool(job, "TransferringOutput") or st == TRANSFERRING_OUTPUT:
        a, b = ("q" if queued else " "), ">"
    return a + b


def _description(job: ClassAd) -> str | None:
    """JOB_DESCRIPTION: basename of Cmd and the arguments."""
    cmd = _str(job, "Cmd")
    if cmd is None:
        return None
    desc = _str(job, "JobDescription")
    if desc:
        return f"({desc})"
    out = cmd.rsplit("/", 1)[-1]
    args = _str(job, "Arguments") or _str(job, "Args")
    return f"{out} {args}" if args else out


def _memory_mb(job: ClassAd) -> float:
    mu = _int(job, "MemoryUsage")
    if mu is not None:
        return float(mu)
    im = _int(job, "ImageSize")
    return im / 1024.0 if im is not None else 0.0


def _run_time(job: ClassAd, now: float) -> float:
    """Wall time of previous runs plus the current run's (condor_q's job_time)."""
    total = _num(job, "RemoteWallClockTime") or 0.0
    start = _num(job, "JobCurrentStartDate")
    if _int(job, "JobStatus") in (RUNNING, TRANSFERRING_OUTPUT, SUSPENDED) and start is not None:
        total += now - start
    return total


def _schedd_header(name: str, address: str, now_wall: float) -> str:
    if "?" in address:  # summarize_sinful_for_display: drop the sinful's parameters
        address = address[: address.index("?")] + "?..."
    stamp = time.strftime(" @ %m/%d/%y %H:%M:%S", time.localtime(int(now_wall)))
    return f"\n\n-- Schedd: {name} : {address}{stamp}\n"


def _q_footer(query: JobTotals, me: tuple[str, JobTotals] | None, total_all: JobTotals) -> str:
    parts = [query.text("query")]
    if me is not None:
        parts.append(me[1].text(me[0]))
    parts.append(total_all.text("all users"))
    return "\n" + " \n".join(parts) + "\n\n"


def _cdiv(a: int, b: int) -> int:
    """C integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _number_width(n: int) -> int:
    wid, val = 1, 10
    while val < 999999999:
        if n < val:
            return wid
        wid, val = wid + 1, val * 10
    return wid


def _q_nobatch(
    jobs: list[ClassAd], ids: list[tuple[int, int]], now: float, width: int | None
) -> str:
    order = sorted(range(len(jobs)), key=lambda k: ids[k])
    cols = [
        _Col(" ID", 5),
        _Col(" ", 3, prefix=False),
        _Col("OWNER", 14, left=True, truncate=True, alt="?", alt_wide=True),
        _Col("  SUBMITTED", 11, truncate=True),
        _Col("    RUN_TIME", 12, truncate=True),
        _Col("ST", 2, left=True),
        _Col("PRI", 3, left=True),
        _Col("SIZE", 4, truncate=True),
        _Col("CMD"),
    ]
    rows: list[list[str | None]] = []
    owners, prios, mems = [], [], []
    for k in order:
        job = jobs[k]
        owner = _str(job, "Owner")
        prio = _int(job, "JobPrio")
        qdate = _num(job, "QDate")
        mem = _memory_mb(job)
        owners.append(owner)
        prios.append(None if prio is None else str(prio))
        mems.append(mem)
        rows.append(
            [
                None,
                None,
                owner,
                None if qdate is None else fmt_date(qdate),
                _condor_time(_run_time(job, now)),
                _status_chars(job),
                prios[-1],
                f"{mem:.1f}",
                _description(job),
            ]
        )
    _auto(cols[6], prios)
    # fixup_std_column_widths: only when an id or owner outgrows the default columns
    max_cluster = max((c for c, _ in ids), default=0)
    max_proc = max((p for _, p in ids), default=0)
    longest = max((len(o) for o in owners if o is not None), default=0)
    cw, pw = 4, 3
    if max_cluster >= 9999 or max_proc >= 999 or longest > 14:
        n = len(str(max_cluster))
        if 4 < n <= 9:
            cw = n
            cols[0].width = n + 1
        n = len(str(max_proc))
        if 3 < n <= 9:
            pw = n
            cols[1].width = n
        if width is not None and longest > 14:
            cols[2].width = max(14, min(longest, 14 + (width - 80)))
        cols[7].width = max(4, len(f"{max(mems, default=0.0):.1f}"))
    for row, k in zip(rows, order):
        c, p = ids[k]
        row[0] = f"{c:{cw}d}."
        row[1] = f"{p:<{pw}d}"
    max_width = width - 1 if width else None
    return _headings(cols, max_width) + "".join(_row(cols, r, max_width) for r in rows)


def _q_hold(jobs: list[ClassAd], ids: list[tuple[int, int]], width: int | None) -> str:
    """condor_q -hold (queue.cpp's jobHold_PrintFormat): when and why each job is held."""
    order = sorted(range(len(jobs)), key=lambda k: ids[k])
    cols = [
        _Col(" ID", 5),
        _Col(" ", 3, prefix=False),
        _Col("OWNER", 14, left=True, alt="?", alt_wide=True),
        _Col("HELD_SINCE", 11, alt="?", alt_wide=True),
        _Col("CODE", 4, alt="?"),
        _Col("/SUB", 4, left=True, truncate=True, prefix=False),
        _Col("HOLD_REASON"),
    ]
    rows: list[list[str | None]] = []
    for k in order:
        job = jobs[k]
        c, p = ids[k]
        since = _num(job, "EnteredCurrentStatus")
        code = _int(job, "HoldReasonCode")
        sub = _int(job, "HoldReasonSubCode")
        rows.append(
            [
                f"{c:4d}.",
                f"{p:<3d}",
                _str(job, "Owner"),
                None if since is None else fmt_date(since),
                None if code is None else f"{code:4d}",
                " " if sub is None else f"/{sub:<3d}",
                _str(job, "HoldReason") or "",
            ]
        )
    max_width = width - 1 if width else None
    return _headings(cols, max_width) + "".join(_row(cols, r, max_width) for r in rows)


@dataclass
class _Batch:
    first: int  # index (into the id-sorted jobs) of the first job
    clusters: list[int]


def _q_batch(jobs: list[ClassAd], ids: list[tuple[int, int]], width: int | None) -> str:
    order = sorted(range(len(jobs)), key=lambda k: ids[k])
    jobs = [jobs[k] for k in order]
    ids = [ids[k] for k in order]
    cols = [
        _Col("OWNER", 5, left=True, alt="?", alt_wide=True),
        _Col("BATCH_NAME", 12, left=True, truncate=True),
        _Col("   SUBMITTED", 12, truncate=True),
        _Col("  DONE", 6, alt="_"),
        _Col("  RUN ", 6, alt="_"),
        _Col("  IDLE", 6, alt="_"),
        _Col("  HOLD", 6, alt="_"),
        _Col(" TOTAL", 6, alt="_"),
        _Col("JOB_IDS"),
    ]
    if not jobs:
        return _headings(cols, width - 1 if width else None)
    _auto(cols[0], (_str(j, "Owner") for j in jobs))  # rendered widths of every job's owner

    # procs by cluster (in id order), clusters into batches by (batch name, owner)
    procs: dict[int, list[int]] = {}
    for k, (c, _) in enumerate(ids):
        procs.setdefault(c, []).append(k)
    batches: list[_Batch] = []
    by_name: dict[tuple[str, str | None], _Batch] = {}
    for c, ks in procs.items():
        name = _str(jobs[ks[0]], "JobBatchName")
        if name is None:
            batches.append(_Batch(ks[0], [c]))
            continue
        key = (name, _str(jobs[ks[0]], "Owner"))
        if key in by_name:
            by_name[key].clusters.append(c)
        else:
            by_name[key] = _Batch(ks[0], [c])
            batches.append(by_name[key])

    rows: list[list[str | None]] = []
    counts_w = [0] * 5
    owner_w = name_w = ids_w = 0
    any_held = False
    for b in batches:
        n = {s: 0 for s in range(0, 11)}
        done = total = 0
        for c in b.clusters:
            ks = procs[c]
            for k in ks:
                st = _int(jobs[k], "JobStatus") or 0
                n[st if 0 <= st <= 10 else 0] += 1
            t = _int(jobs[ks[0]], "TotalSubmitProcs")
            if t is None:
                t = max(ids[k][1] for k in ks) + 1
            total += t
            done += t - len(ks)
        counts = [done, n[RUNNING] + n[TRANSFERRING_OUTPUT], n[IDLE] + n[SUSPENDED], n[HELD], total]
        any_held = any_held or counts[3] > 0
        counts_w = [max(w, _number_width(v)) for w, v in zip(counts_w, counts)]
        first = jobs[b.first]
        owner = _str(first, "Owner")
        name = _str(first, "JobBatchName")
        if name is None:
            name = f"ID: {ids[b.first][0]}"
        lo, hi = ids[procs[b.clusters[0]][0]], ids[procs[b.clusters[-1]][-1]]
        if lo == hi:
            job_ids = f"{lo[0]}.{lo[1]}"
        elif lo[0] == hi[0]:
            job_ids = f"{lo[0]}.{lo[1]}-{hi[1]}"
        else:
            job_ids = f"{lo[0]}.{lo[1]} ... {hi[0]}.{hi[1]}"
        owner_w = max(owner_w, len(owner or ""))
        name_w = max(name_w, len(name))
        ids_w = max(ids_w, len(job_ids))
        qdate = _num(first, "QDate")
        rows.append(
            [
                owner,
                name,
                None if qdate is None else fmt_date(qdate),
                *(str(v) if v > 0 else None for v in counts),
                job_ids,
            ]
        )

    if width is not None and name_w + owner_w + ids_w > width - 50:
        # reduce_results: share what is left of the line between owner, batch name and ids
        var_wid = width - 50
        bw = nw = iw = _cdiv(var_wid - (8 + 10 + 9), 3)
        if iw < ids_w:
            needed = (name_w + owner_w) - (bw + nw + 10 + 8)
            if needed > 7 and bw < 10:
                ids_w = _cdiv(ids_w, 2)
        if iw + 9 > ids_w:
            rw = iw + 9 - ids_w
            nw += _cdiv(rw, 2)
            bw += rw - _cdiv(rw, 2)
        if bw + 10 > name_w:
            rw = bw + 10 - name_w
            nw = min(8 + nw + rw, owner_w) - 8
        if nw + 8 > owner_w:
            rw = nw + 8 - owner_w
            bw = min(10 + bw + rw, name_w) - 10
        name_w = min(name_w, bw + 10)
        owner_w = min(owner_w, nw + 8)
    if owner_w < cols[0].width:
        cols[0].width, cols[0].truncate = max(8, owner_w), True
    else:
        cols[0].width = owner_w
    cols[1].width = max(10, name_w)
    for col, w in zip(cols[3:8], counts_w):
        if w > 6:
            col.width = min(w, 9)
    cols[6].hidden = not any_held
    max_width = width - 1 if width else None
    return _headings(cols, max_width) + "".join(_row(cols, r, max_width) for r in rows)


def format_q(
    jobs: Iterable[ClassAd],
    *,
    schedd_name: str,
    schedd_address: str,
    now_wall: float,
    batch: bool = True,
    hold: bool = False,
    total_all: JobTotals | None = None,
    me: tuple[str, JobTotals] | None = None,
    width: int | None = 80,
) -> str:
    """condor_q's default output for one schedd.

    `jobs` are the ads the query returned; the "Total for query" line counts them.
    `total_all` is the schedd's count of all jobs (default: the same as the query); `me`
    adds HTCondor's "Total for <user>" line of a query for one's own jobs. `batch=False` is
    -nobatch; `hold` is -hold's layout (the caller selects the held jobs). `width` is the
    terminal width (condor_q assumes 80 when not on a terminal); None is -wide. `now_wall` (the date now) stamps the header and gives running
    jobs' RUN_TIME.
    """
    jobs = _check_ads(jobs, "job ad")
    ids = [_job_id(j, k) for k, j in enumerate(jobs)]
    if width is not None and width < 1:
        raise LayoutError(f"width must be positive or None, got {width}")
    query = JobTotals.of(jobs)
    if hold:
        body = _q_hold(jobs, ids, width)
    elif batch:
        body = _q_batch(jobs, ids, width)
    else:
        body = _q_nobatch(jobs, ids, now_wall, width)
    return (
        _schedd_header(schedd_name, schedd_address, now_wall)
        + body
        + _q_footer(query, me, total_all if total_all is not None else query)
    )


# -- condor_status ----------------------------------------------------------------------

_STATES = ("Owner", "Unclaimed", "Claimed", "Matched", "Preempting", "Drained", "Backfill")


def _crop(cols: list[_Col], name: int, machine: int | None, fixed: int, width: int) -> None:
    """prettyPrintHeadings: crop Name (and Machine) so a row fits a terminal line."""
    remain = (
        (width - 1) - fixed - cols[name].width - (cols[machine].width if machine is not None else 0)
    )
    if remain >= 0:
        return
    crop = -remain
    if machine is not None:
        mw = max(7, cols[machine].width - crop // 2)
        crop -= cols[machine].width - mw
        cols[machine].width, cols[machine].truncate = mw, True
    cols[name].width, cols[name].truncate = max(12, cols[name].width - crop), True


def _table(cols: list[_Col], rows: list[list[str | None]], width: int | None) -> str:
    max_width = width - 1 if width else None
    return _headings(cols, max_width) + "\n" + "".join(_row(cols, r, max_width) for r in rows)


def _check_width(width: int | None) -> None:
    if width is not None and width < 1:
        raise LayoutError(f"width must be positive or None, got {width}")


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


def _history_date(t: float | None) -> str:
    return " ??? " if not t else fmt_date(t)


def _history_legacy(jobs: list[ClassAd], ids: list[tuple[int, int]]) -> str:
    """short_header()/short_print() of history_utils.h: the 80-column layout."""
    out = f" {'ID':<7} {'OWNER':<14} {'SUBMITTED':>11} {'RUN_TIME':>12} {'ST':<2} {'COMPLETED':>11} {'CMD':<15}\n"
    for job, (c, p) in zip(jobs, ids):
        owner, cmd, qdate = _str(job, "Owner"), _str(job, "Cmd"), _num(job, "QDate")
        status = _int(job, "JobStatus")
        if owner is None or cmd is None or qdate is None or status is None:
            out += " --- ???? --- \n"
            continue
        utime = _num(job, "RemoteWallClockTime")
        if utime is None:
            utime = _num(job, "RemoteUserCpu") or 0
        args = _str(job, "Args")
        if args is not None and 14 - len(cmd) > 0:
            cmd = cmd + " " + args[: 14 - len(cmd)]
        letter = _STATUS_LETTER.get(status, " ")
        out += (
            f"{c:4d}.{p:<3d} {owner[:14]:<14} {fmt_date(qdate):<11} "
            f"{_condor_time(utime):<12} {letter:<2} "
            f"{_history_date(_num(job, 'CompletionDate')):<11} {cmd[:15]:<15}\n"
        )
    return out


def format_history(jobs: Iterable[ClassAd], *, width: int | None = 80) -> str:
    """condor_history's default listing of finished jobs, in the order given.

    At `width` 80 (and when not on a terminal) HTCondor prints its legacy fixed layout;
    other widths, or None for -wide, print the newer print-format layout.
    """
    jobs = _check_ads(jobs, "job ad")
    ids = [_job_id(j, k) for k, j in enumerate(jobs)]
    _check_width(width)
    if width == 80:
        return _history_legacy(jobs, ids)
    cols = [
        _Col(" ID         ", 12, left=True),
        _Col("OWNER", 14, left=True, truncate=True, alt="?", alt_wide=True),
        _Col("  SUBMITTED", 11, truncate=True, alt="?", alt_wide=True),
        _Col("  RUN_TIME  ", 12, truncate=True),
        _Col("ST", 2, left=True),
        _Col("  COMPLETED", 11, truncate=True),
        _Col("CMD"),
    ]
    rows: list[list[str | None]] = []
    for job, (c, p) in zip(jobs, ids):
        qdate = _num(job, "QDate")
        utime = _num(job, "RemoteWallClockTime")
        if utime is None:
            utime = _num(job, "RemoteUserCpu") or 0
        done = _num(job, "CompletionDate")
        rows.append(
            [
                f"{c}.{p}",
                _str(job, "Owner"),
                None if qdate is None else fmt_date(qdate),
                _condor_time(utime),
                _status_chars(job),
                None if done is None else fmt_date(done),
                _description(job),
            ]
        )
    _auto(cols[0], (r[0] for r in rows))
    return _headings(cols, width) + "".join(_row(cols, r, width) for r in rows)


# -- condor_q -better-analyze -------------------------------------------------------------


def _pretty_requirements(text: str, indent: int, width: int) -> str:
    """PrettyPrintExprTree: break the line after a `&&`/`||` once it passes `width`,
    indenting the new line by the parenthesis depth at that operator."""
    buf = list(text)
    out_start = 0  # index in buf where the current output line starts
    last_and = 0  # index after the last `&& ` (a place to break), 0: none on this line
    indent_at_and = indent
    pos = indent
    prev = ""
    was_and = False
    i = 0
    while i < len(buf):
        c = buf[i]
        is_and = c in "&|" and prev == c
        if not is_and:
            if c == "(":
                indent += 2
            elif c == ")":
                indent -= 2
        if pos >= width and last_and > out_start:
            buf[last_and] = "\n"
            start = last_and + 1
            buf[start:start] = [" "] * indent_at_and
            i += indent_at_and
            out_start = start
            last_and = start
            pos = i - start
            indent_at_and = indent
        if was_and:
            last_and = i
            indent_at_and = indent
        prev = c
        i += 1
        pos += 1
        was_and = is_and
    return "".join(buf)


def _ctime(unix: float) -> str:
    tm = time.localtime(int(unix))
    return time.strftime("%a %b ", tm) + f"{tm.tm_mday:2d}" + time.strftime(" %H:%M:%S %Y", tm)


def _analysis_status(job: ClassAd) -> str:
    status = _int(job, "JobStatus")
    if status in (RUNNING, TRANSFERRING_OUTPUT, SUSPENDED):
        return "Job is running."
    if status == HELD:
        reason = _str(job, "HoldReason")
        return "Job is held." + (f"\n\nHold reason: {reason}" if reason else "")
    if status == REMOVED:
        return "Job is removed."
    if status == COMPLETED:
        return "Job is completed."
    return ""


def format_better_analyze(
    job: ClassAd,
    analysis: JobAnalysis,
    *,
    schedd_name: str,
    schedd_address: str,
    now_wall: float,
    width: int | None = 80,
) -> str:
    """condor_q -better-analyze JOBID for one job (jobmatch.cpp printJobRunAnalysis).

    ``analysis`` comes from :func:`mockpool.cli.analysis.analyze_job`; the job's dates
    (LastMatchTime, LastRejMatchTime) print in ctime's format.
    """
    cols = width or 80
    cluster, proc = analysis.cluster, analysis.proc
    rid = f"{cluster}.{proc:03d}"
    out = [_schedd_header(schedd_name, schedd_address, now_wall)]
    req = job.lookup("Requirements")
    if req is not None:
        out.append(f"The Requirements expression for job {rid} is\n\n    ")
        out.append(_pretty_requirements(unparse(req), 4, cols) + "\n\n")
        if analysis.job_attributes:
            out.append(f"Job {rid} defines the following attributes:\n\n")
            out.extend(f"    {line}\n" for _, line in analysis.job_attributes)
            out.append("\n")
        out.append(f"The Requirements expression for job {rid} reduces to these conditions:\n\n")
        out.append("        Slots\nStep   Matched  Condition\n----- --------- ---------\n")
        for step in analysis.steps:
            label = f"[{step.index}]      "[:5]
            value = (
                ("always" if step.constant else "never")
                if step.matched is None
                else str(step.matched)
            )
            out.append(f"{label} {value:>9}  {step.label}\n")
    out.append("\n")
    if analysis.total_slots:
        out.append(
            f"\n{cluster:03d}.{proc:03d}:  Run analysis summary ignoring user priority.  "
            f"Of {analysis.total_slots} slots on {analysis.machines} machines,\n"
        )
        out.append(
            f"  {analysis.rejected_by_job:5d} slots are rejected by your job's requirements\n"
        )
        out.append(
            f"  {analysis.rejected_by_slots:5d} slots reject your job because of their own requirements\n"
        )
        if analysis.running_yours:
            out.append(
                f"  {analysis.running_yours:5d} slots match and are already running your jobs\n"
            )
        if analysis.running_yours or analysis.serving_others:
            out.append(f"  {analysis.serving_others:5d} slots match but are serving other users\n")
        out.append(f"  {analysis.willing:5d} slots match and are willing to run your job\n")
        if not analysis.job_matches_slot or not analysis.both_match:
            out.append("\nWARNING:  Be advised:\n")
            if not analysis.job_matches_slot:
                out.append("   No machines matched the job's constraints\n")
            else:
                out.append(
                    "   Job did not match any machines' constraints\n"
                    "   To see why, pick a machine that you think should match and add\n"
                    "     -reverse -machine <name>\n"
                    "   to your query.\n"
                )
    out.append("\n")
    status = _analysis_status(job)
    if status:
        out.append(f"\n{cluster:03d}.{proc:03d}:  {status}\n\n")
    last_match, last_rej = _num(job, "LastMatchTime"), _num(job, "LastRejMatchTime")
    if last_match is not None:
        out.append(f"Last successful match: {_ctime(last_match)}\n")
    elif last_rej is not None:
        out.append("No successful match recorded.\n")
    if last_rej is not None and (last_match is None or last_rej > last_match):
        out.append(f"Last failed match: {_ctime(last_rej)}\n")
        reason = _str(job, "LastRejMatchReason")
        if reason is not None:
            out.append(f"Reason for last match failure: {reason}\n")
    return "".join(out)


def sweep_table(rows: list[dict[str, Any]], knobs: list[str], measures: list[str]) -> str:
    """A sweep's table: one line per knob combination, each measure as mean ± 95% CI."""
    cols = [_Col(k, left=True) for k in knobs] + [_Col("SEEDS")]
    cols += [_Col(m.upper()) for m in measures]

    def cell(row: dict[str, Any], m: str) -> str:
        mean, ci = row.get(m), row.get(f"{m}_ci95")
        if mean is None:
            return "-"
        return f"{mean:.4g}" if ci is None else f"{mean:.4g}±{ci:.2g}"

    lines: list[list[str | None]] = [
        [str(r[k]) for k in knobs] + [str(r["seeds"])] + [cell(r, m) for m in measures]
        for r in rows
    ]
    for i, col in enumerate(cols):
        _auto(col, [col.heading] + [line[i] for line in lines])
    return _table(cols, lines, None)
