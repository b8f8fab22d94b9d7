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

Where each tool's layouts are: condor_q in q_layouts.py, condor_status in status_normal.py
and status_layout.py, condor_history in history_layout.py, -better-analyze in
analyze_layout.py; this module holds the rules they share (values read from ads, columns,
cells, natural order, the long form) and -dry-run's and the sweep's tables.
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
from ..tooltime import TOOL_RNG, wall_now

__all__ = [
    "LayoutError",
    "fmt_date",
    "fmt_duration",
    "format_dry_run",
    "format_long",
    "format_q_long",
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
