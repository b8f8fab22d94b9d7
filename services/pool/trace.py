"""Trace replay: jobs from a recorded job history, resubmitted on their recorded schedule.

A ``[[trace]]`` table in the pool spec names a history file::

    [[trace]]
    file = "history.json"     # relative to the spec's folder
    format = "json"           # "json" (condor_history -json), "long" (condor_history
                              # -long) or "swf"; by default from the extension
                              # (.json, .swf; anything else is read as -long)
    name = "trace1"           # tags the jobs (MockTrace); default trace<N>
    schedd = 0                # index or name, as in [[submit]]
    compress = 1.0            # submit times are divided by this (2: twice the arrival rate)
    shift = 0.0               # pool seconds added to every submit time
    limit = 0                 # replay only the first N jobs by submit time (0: all)
    removals = true           # replay removed jobs as removals (false: leave them out)
    on_error = "refuse"       # a bad line or value: "refuse" the spec, or "skip" the job

What is read from a job ad of ``condor_history`` (-json or -long): ``QDate`` (submit
time), ``RemoteWallClockTime`` (run time; else ``CompletionDate - JobCurrentStartDate``,
else ``CompletionDate - JobStartDate``), ``RequestCpus``, ``RequestMemory`` (MB),
``RequestDisk`` (KB), ``Owner``, the accounting group (``AcctGroup``, else
``AccountingGroup`` less its ``.user`` part), ``JobStatus`` (4 completed, 3 removed) and,
for a removed job, ``EnteredCurrentStatus`` (when it was removed). Requests may be
expressions, as HTCondor writes its defaults (``RequestDisk = DiskUsage``); they are
evaluated in the job's own ad. A missing request takes the ``[[workload]]`` default (1
cpu, 128 MB, 1024 KB).

What is read from a line of the Standard Workload Format of the Parallel Workloads Archive
(18 fields, ``;`` comments): submit time (2), wait time (3), run time (4), allocated
processors (5; else requested, 8), requested memory (10; else used memory, 7; KB per
processor), status (11: 5 cancelled, replayed as a removal; any other value ran for its
run time), user id (12, owner ``user<id>``) and group id (13, accounting group
``group_<id>``). ``-1`` means unknown.

Replay, in pool seconds: a job is submitted at ``shift + (submit - first submit) /
compress``, with its duration as recorded (``MockDuration``). A removed job is removed
(condor_rm) as long after its submit as it was in the trace, and asks to run for that long
plus one second, so that its removal, not its end, is what ends it. Durations and the time
a job spends before its removal are not compressed: ``compress`` changes the arrival rate
only.

Bad input names its file and line (and the job): a line that is not JSON, not ``Name =
expression`` or not 18 numbers, and an impossible value (a negative duration, removal
before submit, a request that is not a non-negative number). ``on_error = "refuse"``
stops at the first; ``"skip"`` leaves that job out and counts it.

Everything here is pure: reading takes the text, replay takes the records, so the live
launcher and a virtual run submit the same jobs.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..classad import ClassAd, ClassAdSyntaxError, ads_from_json, parse_ad
from ..classad.values import UNDEFINED

__all__ = [
    "FORMATS",
    "ON_ERROR",
    "TraceError",
    "TraceCluster",
    "TraceJob",
    "TraceRead",
    "TraceRecord",
    "format_for",
    "parse_history_json",
    "parse_history_long",
    "parse_swf",
    "read_trace",
    "record_from_ad",
    "remove_constraint",
    "replay",
    "submit_clusters",
]

FORMATS = ("json", "long", "swf")
ON_ERROR = ("refuse", "skip")
COMPLETED, REMOVED = 4, 3  # JobStatus of the jobs a history holds
DEFAULT_CPUS, DEFAULT_MEMORY, DEFAULT_DISK = 1, 128, 1024  # as [[workload]]'s defaults
SWF_FIELDS = 18
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*")


class TraceError(ValueError):
    """A trace line or value that cannot be replayed: ``file:line: problem``."""

    def __init__(self, source: str, line: int, problem: str) -> None:
        super().__init__(f"{source}:{line}: {problem}")
        self.source, self.line, self.problem = source, line, problem


@dataclass(frozen=True)
class TraceRecord:
    """One job as the trace recorded it, on the trace's own clock (seconds)."""

    job_id: str
    line: int  # where the job starts in its file
    submit: float
    duration: float  # run seconds (0 for a removed job that never ran)
    cpus: int
    memory: int  # MB
    disk: int  # KB
    owner: str
    accounting_group: str
    removed: float | None = None  # when it was removed (None: it completed)


@dataclass
class TraceRead:
    """A trace file read: its jobs, and what ``on_error = "skip"`` left out (messages)."""

    records: list[TraceRecord] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


class _Reader:
    """Collects records; a problem is raised (refuse) or noted and its job left out (skip)."""

    def __init__(self, source: str, on_error: str) -> None:
        if on_error not in ON_ERROR:
            raise ValueError(f"on_error must be one of {', '.join(ON_ERROR)}, got {on_error!r}")
        self.source = source
        self.skip = on_error == "skip"
        self.out = TraceRead()

    def problem(self, line: int, text: str) -> None:
        err = TraceError(self.source, line, text)
        if not self.skip:
            raise err
        self.out.skipped.append(f"{err} (skipped)")


class _Bad(Exception):
    """A value in one job that makes it impossible to replay (the reader says where)."""


# ------------------------------------------------------------------ job ads


def _number(ad: ClassAd, name: str, now: float) -> float | None:
    """An attribute's numeric value (None if absent or UNDEFINED); anything else is bad."""
    if ad.lookup(name) is None:
        return None
    v = ad.eval(name, now=now)
    if v is UNDEFINED:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise _Bad(f"{name} is not a number (got {v!r})")
    return float(v)


def _text(ad: ClassAd, name: str) -> str | None:
    v = ad.eval(name, now=0.0)
    if v is UNDEFINED:
        return None
    if not isinstance(v, str):
        raise _Bad(f"{name} is not a string (got {v!r})")
    return v


def _request(ad: ClassAd, name: str, default: int, now: float) -> int:
    v = _number(ad, name, now)
    if v is None:
        return default
    if v < 0:
        raise _Bad(f"{name} is negative ({v:g})")
    return max(1, math.ceil(v))  # at least one unit, as a slot can only hand out whole ones


def _group(ad: ClassAd, owner: str) -> str:
    group = _text(ad, "AcctGroup")
    if group:
        return group
    full = _text(ad, "AccountingGroup") or ""
    # AccountingGroup is "<group>.<user>", the user being AcctGroupUser (default: Owner)
    for user in (_text(ad, "AcctGroupUser"), owner):
        if user and full.endswith("." + user):
            return full[: -len(user) - 1]
    return full


def record_from_ad(ad: ClassAd, line: int) -> TraceRecord:
    """The replayable facts of one history job ad (at ``line`` of its file); :class:`_Bad`
    if it has none."""
    cluster, proc = ad.get_value("ClusterId"), ad.get_value("ProcId")
    ok = isinstance(cluster, int) and isinstance(proc, int)
    job_id = f"{cluster}.{proc}" if ok else f"line{line}"
    status = _number(ad, "JobStatus", 0.0)
    if status not in (COMPLETED, REMOVED):
        raise _Bad(
            f"JobStatus is {status if status is None else int(status)}: a history holds "
            f"completed ({COMPLETED}) and removed ({REMOVED}) jobs"
        )
    qdate = _number(ad, "QDate", 0.0)
    if qdate is None:
        raise _Bad("no QDate (submit time)")
    now = _number(ad, "CompletionDate", 0.0) or _number(ad, "EnteredCurrentStatus", 0.0) or qdate
    owner = _text(ad, "Owner")
    if not owner or not _NAME.fullmatch(owner):
        raise _Bad(f"Owner must be a user name (letters, digits, _ . -), got {owner!r}")
    group = _group(ad, owner)
    if group and not _NAME.fullmatch(group):
        raise _Bad(f"accounting group must be a name (letters, digits, _ . -), got {group!r}")
    duration = _number(ad, "RemoteWallClockTime", now)
    if duration is None:
        end = _number(ad, "CompletionDate", now)
        start = _number(ad, "JobCurrentStartDate", now) or _number(ad, "JobStartDate", now)
        if end and start:  # 0 means "never", as HTCondor writes it
            duration = end - start
    removed = None
    if status == REMOVED:
        removed = _number(ad, "EnteredCurrentStatus", now)
        if removed is None:
            raise _Bad("a removed job (JobStatus 3) needs EnteredCurrentStatus (its removal)")
        if removed < qdate:
            raise _Bad(f"removed (EnteredCurrentStatus {removed:g}) before its QDate {qdate:g}")
        duration = duration or 0.0
    elif duration is None:
        raise _Bad("no run time: neither RemoteWallClockTime nor CompletionDate and JobStartDate")
    if duration < 0:
        raise _Bad(f"negative duration ({duration:g} s)")
    return TraceRecord(
        job_id,
        line,
        qdate,
        duration,
        _request(ad, "RequestCpus", DEFAULT_CPUS, now),
        _request(ad, "RequestMemory", DEFAULT_MEMORY, now),
        _request(ad, "RequestDisk", DEFAULT_DISK, now),
        owner,
        group,
        removed,
    )


def _add_ad(reader: _Reader, ad: ClassAd, line: int) -> None:
    try:
        reader.out.records.append(record_from_ad(ad, line))
    except _Bad as e:
        cluster, proc = ad.get_value("ClusterId"), ad.get_value("ProcId")
        who = f"job {cluster}.{proc}: " if cluster is not None else ""
        reader.problem(line, f"{who}{e}")


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def parse_history_json(text: str, source: str, on_error: str = "refuse") -> TraceRead:
    """``condor_history -json``: a JSON array of job ads (one object is taken as one ad).
    A malformed ad is skipped up to the next line that opens an ad (``{`` first)."""
    reader = _Reader(source, on_error)
    decoder = json.JSONDecoder()
    pos = len(text) - len(text.lstrip())
    line, counted = 1, 0
    if text.startswith("[", pos):
        pos += 1
    elif not text.startswith("{", pos):
        reader.problem(_line_of(text, pos), "not a condor_history -json file: expected [ or {")
        return reader.out
    while True:
        while pos < len(text) and (text[pos].isspace() or text[pos] == ","):
            pos += 1
        if pos >= len(text) or text[pos] == "]":
            break
        line += text.count("\n", counted, pos)  # counted so far: linear, not per ad
        counted = pos
        try:
            obj, end = decoder.raw_decode(text, pos)
            if not isinstance(obj, dict):
                raise _Bad(f"expected a job ad (a JSON object), got {type(obj).__name__}")
            ad = ads_from_json(json.dumps(obj))[0]
        except json.JSONDecodeError as e:
            reader.problem(e.lineno, f"malformed JSON: {e.msg} (column {e.colno})")
            nxt = text.find("\n{", e.pos if e.pos > pos else pos + 1)
            if nxt < 0:
                break
            pos = nxt + 1
            continue
        except (_Bad, ClassAdSyntaxError) as e:
            reader.problem(line, f"bad job ad: {e}")
            pos = end
            continue
        _add_ad(reader, ad, line)
        pos = end
    return reader.out


def parse_history_long(text: str, source: str, on_error: str = "refuse") -> TraceRead:
    """``condor_history -long``: ads of ``Name = expression`` lines, blank lines between."""
    reader = _Reader(source, on_error)
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        if not lines[i].strip():
            i += 1
            continue
        start = i
        while i < len(lines) and lines[i].strip():
            i += 1
        block = "\n".join(lines[start:i])
        try:
            ad = parse_ad(block)
        except ClassAdSyntaxError as e:
            what = str(e).split(": ", 1)[-1]  # the parser's line is the ad's, not the file's
            reader.problem(start + (e.line or 1), f"bad -long line: {what} (column {e.column})")
            continue
        _add_ad(reader, ad, start + 1)
    return reader.out


def parse_swf(text: str, source: str, on_error: str = "refuse") -> TraceRead:
    """The Standard Workload Format: one job a line, 18 numbers, ``;`` comment lines."""
    reader = _Reader(source, on_error)
    for n, raw in enumerate(text.split("\n"), 1):
        line = raw.strip()
        if not line or line.startswith(";"):
            continue
        fields = line.split()
        if len(fields) != SWF_FIELDS:
            reader.problem(n, f"an SWF line has {SWF_FIELDS} fields, this one has {len(fields)}")
            continue
        try:
            values = [float(f) for f in fields]
            if not all(math.isfinite(v) for v in values):
                raise ValueError
        except ValueError:
            bad = next(f for f in fields if not _is_number(f))
            reader.problem(n, f"SWF field {fields.index(bad) + 1} is not a number: {bad!r}")
            continue
        try:
            reader.out.records.append(_swf_record(values, n))
        except _Bad as e:
            reader.problem(n, f"job {fields[0]}: {e}")
    return reader.out


def _is_number(f: str) -> bool:
    try:
        return math.isfinite(float(f))
    except ValueError:
        return False


def _swf_record(v: list[float], line: int) -> TraceRecord:
    job, submit, wait, run, alloc = v[0], v[1], v[2], v[3], v[4]
    used_mem, req_procs, req_mem, status, uid, gid = v[6], v[7], v[9], v[10], v[11], v[12]
    if submit < 0:
        raise _Bad(f"submit time is {submit:g}")
    for name, x in (("wait time", wait), ("run time", run)):
        if x < 0 and x != -1:
            raise _Bad(f"negative {name} ({x:g} s)")
    cpus = alloc if alloc > 0 else req_procs if req_procs > 0 else DEFAULT_CPUS
    per_proc_kb = req_mem if req_mem > 0 else used_mem if used_mem > 0 else -1
    memory = math.ceil(per_proc_kb * cpus / 1024) if per_proc_kb > 0 else DEFAULT_MEMORY
    removed = None
    if status == 5:  # cancelled: it left when its wait (and run, if it started) ended
        removed = submit + max(wait, 0) + max(run, 0)
        run = max(run, 0.0)
    elif run == -1:
        raise _Bad("no run time (field 4 is -1)")
    return TraceRecord(
        f"{int(job)}",
        line,
        submit,
        run,
        max(1, math.ceil(cpus)),
        max(1, memory),
        DEFAULT_DISK,
        f"user{int(uid)}" if uid >= 0 else "user",
        f"group_{int(gid)}" if gid >= 0 else "",
        removed,
    )


_PARSERS = {"json": parse_history_json, "long": parse_history_long, "swf": parse_swf}


def format_for(path: str | Path) -> str:
    """The format a file's name says: .json, .swf, else condor_history -long text."""
    suffix = Path(path).suffix.lower()
    return {".json": "json", ".swf": "swf"}.get(suffix, "long")


def read_trace(
    path: str | Path, fmt: str | None = None, *, on_error: str = "refuse", source: str = ""
) -> TraceRead:
    """Read a trace file; ``source`` names it in messages (default: the path)."""
    fmt = fmt or format_for(path)
    if fmt not in _PARSERS:
        raise ValueError(f"unknown trace format {fmt!r} (expected one of {', '.join(FORMATS)})")
    source = source or str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise TraceError(source, 1, f"cannot read: {getattr(e, 'strerror', None) or e}") from None
    return _PARSERS[fmt](text, source, on_error)


# ------------------------------------------------------------------ replay


@dataclass(frozen=True)
class TraceJob:
    """One job to replay, in pool seconds."""

    job_id: str  # its id in the trace (MockTraceJob)
    at: float  # submit time
    duration: float  # MockDuration
    cpus: int
    memory: int  # MB
    disk: int  # KB
    owner: str
    accounting_group: str
    remove_at: float | None  # when to remove it (None: it runs to its end)
    line: int = 0  # where it is in the trace file


def replay(
    records: list[TraceRecord],
    *,
    compress: float = 1.0,
    shift: float = 0.0,
    limit: int = 0,
    removals: bool = True,
) -> list[TraceJob]:
    """The trace's jobs on the pool's clock, by submit time (see the module's text)."""
    if not compress > 0:
        raise ValueError(f"compress must be > 0, got {compress!r}")
    if shift < 0:
        raise ValueError(f"shift must be >= 0, got {shift!r}")
    recs = sorted(records, key=lambda r: r.submit)  # stable: file order at equal times
    if not removals:
        recs = [r for r in recs if r.removed is None]
    if limit:
        recs = recs[:limit]
    if not recs:
        return []
    t0 = recs[0].submit
    out = []
    seen: dict[str, int] = {}
    for r in recs:
        # ids name jobs for their removal: a repeated one (two schedds' histories) gets ~n
        n = seen[r.job_id] = seen.get(r.job_id, 0) + 1
        job_id = r.job_id if n == 1 else f"{r.job_id}~{n}"
        at = round(shift + (r.submit - t0) / compress, 3)
        duration, remove_at = round(r.duration, 3), None
        if r.removed is not None:
            stay = round(r.removed - r.submit, 3)
            remove_at = round(at + stay, 3)
            duration = stay + 1.0  # still queued or running when its removal comes
        out.append(
            TraceJob(
                job_id,
                at,
                duration,
                r.cpus,
                r.memory,
                r.disk,
                r.owner,
                r.accounting_group,
                remove_at,
                r.line,
            )
        )
    return out


@dataclass(frozen=True)
class TraceCluster:
    """Jobs submitted together: equal time, owner, group and shape; one submit."""

    at: float
    owner: str
    description: str
    job_ids: tuple[str, ...]
    line: int  # its first job's line in the trace file


def _num(x: float) -> str:
    return f"{x:.3f}".rstrip("0").rstrip(".")


def submit_clusters(
    jobs: list[TraceJob], trace: str, *, max_per_cluster: int
) -> list[TraceCluster]:
    """Submit descriptions for ``jobs``: one cluster per group of equal jobs arriving
    together, each job tagged ``MockTrace = trace`` and ``MockTraceJob = <its id>``."""
    groups: dict[tuple[Any, ...], list[TraceJob]] = {}
    for j in jobs:
        key = (j.at, j.owner, j.accounting_group, j.duration, j.cpus, j.memory, j.disk)
        groups.setdefault(key, []).append(j)
    out = []
    for (at, owner, group, duration, cpus, memory, disk), members in groups.items():
        for first in range(0, len(members), max_per_cluster):
            part = members[first : first + max_per_cluster]
            chunk = tuple(j.job_id for j in part)
            lines = [
                "executable = /bin/sleep",
                f"arguments = {_num(duration)}",
                f"request_cpus = {cpus}",
                f"request_memory = {memory}",
                f"request_disk = {disk}",
                f'+MockTrace = "{trace}"',
                '+MockTraceJob = "$(MockTraceJob)"',
            ]
            if group:
                lines.append(f"accounting_group = {group}")
            lines += ["queue MockTraceJob from (", *chunk, ")"]
            out.append(TraceCluster(at, owner, "\n".join(lines) + "\n", chunk, part[0].line))
    out.sort(key=lambda c: c.at)
    return out


def remove_constraint(trace: str, job_id: str) -> str:
    """The constraint that selects one replayed job (for condor_rm -constraint)."""
    return f'MockTrace == "{trace}" && MockTraceJob == "{job_id}"'
