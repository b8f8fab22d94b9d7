"""condor_q's layouts, as pure text: the default batch view and -nobatch, -hold, -run
and -idle (queue.cpp jobRuntime_PrintFormat and jobIdle_PrintFormat), -totals, and the
totals line; the column rules they share are in layouts.py."""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass

from ..classad import ClassAd
from ..jobstates import COMPLETED, HELD, IDLE, REMOVED, RUNNING, SUSPENDED, TRANSFERRING_OUTPUT
from .layouts import (
    LayoutError,
    _auto,
    _bool,
    _check_ads,
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
