"""condor_history's layouts, as pure text: the default one and the legacy 80-column
``short_print`` (history.cpp). See layouts.py for the known differences.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..classad import ClassAd
from .layouts import (
    _auto,
    _check_ads,
    _check_width,
    _Col,
    _condor_time,
    _headings,
    _int,
    _job_id,
    _num,
    _row,
    _str,
    fmt_date,
)
from .q_layouts import _STATUS_LETTER, _description, _status_chars


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
