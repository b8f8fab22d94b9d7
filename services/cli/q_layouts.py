"""condor_q's -run and -idle layouts (queue.cpp jobRuntime_PrintFormat and
jobIdle_PrintFormat), and -totals: the rest of condor_q lives in layouts.py."""

from __future__ import annotations

from collections.abc import Iterable

from ..classad import ClassAd
from .layouts import (
    JobTotals,
    _auto,
    _check_ads,
    _Col,
    _condor_time,
    _headings,
    _int,
    _job_id,
    _num,
    _q_footer,
    _row,
    _run_time,
    _schedd_header,
    _str,
    fmt_date,
)

# CondorUniverseNameUcFirst, by JobUniverse number
_UNIVERSES = {
    1: "Standard",
    2: "Pipe",
    3: "Linda",
    4: "PVM",
    5: "Vanilla",
    6: "PVMD",
    7: "Scheduler",
    8: "MPI",
    9: "Grid",
    10: "Java",
    11: "Parallel",
    12: "Local",
    13: "VM",
}


def _ids(jobs: list[ClassAd]) -> tuple[list[int], list[tuple[int, int]]]:
    ids = [_job_id(j, k) for k, j in enumerate(jobs)]
    return sorted(range(len(jobs)), key=lambda k: ids[k]), ids


def _q_run(jobs: list[ClassAd], now: float, width: int | None) -> str:
    """-run: ID OWNER SUBMITTED RUN_TIME HOST(S). RUN_TIME is CPU_TIME, which HTCondor
    prints only when the job has RemoteUserCpu (condor_submit sets it to 0.0; a job here
    without one counts as 0.0) and which shows the run time, not the CPU time, by default."""
    order, ids = _ids(jobs)
    cols = [
        _Col(" ID", 5),
        _Col(" ", 3, prefix=False),
        _Col("OWNER", 14, left=True, alt="?", alt_wide=True),
        _Col("  SUBMITTED", 11, alt="?", alt_wide=True),
        _Col("    RUN_TIME", 12, alt="?", alt_wide=True),
        _Col("HOST(S)", 0, alt="?", alt_wide=True),
    ]
    rows: list[list[str | None]] = []
    for k in order:
        job = jobs[k]
        c, p = ids[k]
        qdate = _num(job, "QDate")
        rows.append(
            [
                f"{c:4d}.",
                f"{p:<3d}",
                _str(job, "Owner"),
                None if qdate is None else fmt_date(qdate),
                _condor_time(_run_time(job, now)),
                _str(job, "RemoteHost"),
            ]
        )
    max_width = width - 1 if width else None
    return _headings(cols, max_width) + "".join(_row(cols, r, max_width) for r in rows)


def _q_idle(jobs: list[ClassAd], width: int | None) -> str:
    """-idle: ID OWNER UNIVERSE CPUS MEMORY STARTS LAST_HOST; a column without a WIDTH is
    as wide as its heading and grows to its widest value (left-aligned)."""
    order, ids = _ids(jobs)
    cols = [
        _Col(" ID", 5),
        _Col(" ", 3, prefix=False),
        _Col("OWNER", 14, left=True, alt="?", alt_wide=True),
        _Col("UNIVERSE ", 9, left=True),
        _Col("CPUS", 4, left=True),
        _Col("MEMORY", 6, left=True),
        _Col("STARTS", 6, left=True),
        _Col("LAST_HOST", 0),
    ]
    rows: list[list[str | None]] = []
    for k in order:
        job = jobs[k]
        c, p = ids[k]
        uni, cpus, mem = (
            _int(job, "JobUniverse"),
            _int(job, "RequestCpus"),
            _int(job, "RequestMemory"),
        )
        rows.append(
            [
                f"{c:4d}.",
                f"{p:<3d}",
                _str(job, "Owner"),
                None if uni is None else _UNIVERSES.get(uni, "Unknown"),
                None if cpus is None else f"{cpus:4d}",
                None if mem is None else f"{mem:6d}",
                f"{_int(job, 'NumShadowStarts') or 0:6d}",
                _str(job, "LastRemoteHost"),
            ]
        )
    for i in (3, 4, 5, 6):
        _auto(cols[i], [r[i] for r in rows])
    max_width = width - 1 if width else None
    return _headings(cols, max_width) + "".join(_row(cols, r, max_width) for r in rows)


def format_q_mode(
    jobs: Iterable[ClassAd],
    mode: str,
    *,
    schedd_name: str,
    schedd_address: str,
    now_wall: float,
    total_all: JobTotals,
    width: int | None = 80,
) -> str:
    """condor_q -run / -idle (their table, no totals: SUMMARY NONE) or -totals (the
    header and the totals lines only) for one schedd."""
    jobs = _check_ads(jobs, "job ad")
    header = _schedd_header(schedd_name, schedd_address, now_wall)
    if mode == "run":
        return header + _q_run(jobs, now_wall, width)
    if mode == "idle":
        return header + _q_idle(jobs, width)
    if mode == "totals":
        return header + _q_footer(JobTotals.of(jobs), None, total_all)
    raise ValueError(f"unknown condor_q mode {mode!r}")
