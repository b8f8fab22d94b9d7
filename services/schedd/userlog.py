"""HTCondor's user job event log (``log = job.log``): each event's text, pure.

The schedd's core decides the events of a job's life (:class:`LogEvent`, in pool time);
this module writes them as HTCondor's ``WriteUserLog`` does in its classic text form
(``condor_event.cpp``'s ``formatHeader`` and each event's ``formatBody``, then the
``...`` line), so that ``htcondor2.JobEventLog`` and DAGMan-like tools read them::

    000 (012.000.000) 2026-11-28 08:00:00 Job submitted from host: <127.0.0.1:9618>
    ...

Dates are wall dates: pool time ``t`` is the pool's start date (a Unix time) plus ``t``
(:func:`wall_time`, the one place that turns pool time into a date), printed in the local
time zone as HTCondor does, in the form DEFAULT_USERLOG_FORMAT_OPTIONS asks for
(ISO_DATE by default; LEGACY, UTC, SUB_SECOND; :func:`format_options`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..classad.tree import quote_string

__all__ = [
    "ABORTED",
    "EVICTED",
    "EXECUTE",
    "HELD",
    "RECONNECT_FAILED",
    "RELEASED",
    "SUBMIT",
    "TERMINATED",
    "DateFormat",
    "LogEvent",
    "UsageRow",
    "format_date",
    "format_event",
    "format_events",
    "format_options",
    "wall_time",
]

# event numbers (condor_event.h, ULogEventNumber)
SUBMIT, EXECUTE, EVICTED, TERMINATED, ABORTED = 0, 1, 4, 5, 9
HELD, RELEASED, RECONNECT_FAILED = 12, 13, 24

SYNC_LINE = "...\n"  # WriteUserLog's SynchDelimiter after every event
_NO_USAGE = "Usr 0 00:00:00, Sys 0 00:00:00"  # mock jobs use no cpu time


@dataclass(frozen=True)
class DateFormat:
    """How event dates are printed (HTCondor's formatOpt flags)."""

    iso: bool = True  # ISO_DATE: 2026-11-28 08:00:00; else LEGACY 11/28 08:00:00
    utc: bool = False  # UTC: gmtime and a trailing Z; else local time
    sub_second: bool = False  # SUB_SECOND: .mmm


def format_options(text: str | None) -> DateFormat:
    """DEFAULT_USERLOG_FORMAT_OPTIONS (``ULogEvent::parse_opts``): names separated by
    commas or spaces, ``!`` before one turns it off; ``LEGACY`` turns off ISO_DATE, UTC and
    SUB_SECOND (``!LEGACY`` turns ISO_DATE on). XML and JSON are not written here (the
    classic text is); unknown names are ignored, as there."""
    iso, utc, sub = True, False, False
    for word in (text or "").replace(",", " ").split():
        on = not word.startswith("!")
        name = word.lstrip("!").upper()
        if name == "ISO_DATE":
            iso = on
        elif name == "UTC":
            utc = on
        elif name == "SUB_SECOND":
            sub = on
        elif name == "LEGACY":
            if on:
                iso = utc = sub = False
            else:
                iso = True
    return DateFormat(iso, utc, sub)


def wall_time(base: float, t: float) -> float:
    """The date (Unix time) of pool time ``t`` in a pool whose time 0 is Unix time
    ``base``: the one conversion from pool time to the log's dates."""
    return base + t


def format_date(wall: float, fmt: DateFormat = DateFormat()) -> str:
    """An event's date as ``formatHeader`` prints it."""
    whole = math.floor(wall)
    tm = time.gmtime(whole) if fmt.utc else time.localtime(whole)
    if fmt.iso:
        text = time.strftime("%Y-%m-%d %H:%M:%S", tm)
    else:
        text = time.strftime("%m/%d %H:%M:%S", tm)
    if fmt.sub_second:
        text += f".{int((wall - whole) * 1000):03d}"
    return text + ("Z" if fmt.utc else "")


@dataclass(frozen=True)
class UsageRow:
    """One row of the "Partitionable Resources" table: a resource's usage, request and
    allocation (None: not known, printed blank)."""

    name: str  # Cpus, Disk, Memory, or a custom resource
    usage: float | int | None = None
    request: float | int | None = None
    allocated: float | int | None = None


@dataclass(frozen=True)
class LogEvent:
    """One event of job ``cluster.proc`` at pool time ``t``, for the log at ``path``.

    ``fields`` by ``code``: SUBMIT host, batch_name (JobBatchName, if any); EXECUTE host,
    slot; EVICTED reason, code, subcode (a vacate), or requeued with return_value (the job
    exited and runs again); TERMINATED return_value (or signal); ABORTED, RELEASED
    reason; HELD reason, code, subcode; RECONNECT_FAILED reason, startd. EVICTED and
    TERMINATED carry ``usage`` rows.
    """

    path: str
    code: int
    cluster: int
    proc: int
    t: float
    fields: Mapping[str, Any] = field(default_factory=dict)
    usage: tuple[UsageRow, ...] = ()


def _header(ev: LogEvent, base: float, fmt: DateFormat) -> str:
    date = format_date(wall_time(base, ev.t), fmt)
    return f"{ev.code:03d} ({ev.cluster:03d}.{ev.proc:03d}.000) {date} "


def _number(value: float | int | None) -> tuple[str, bool]:
    """A usage table value as ``formatUsageAd`` prints it, and whether it has a
    fractional part (%.2f for those, else a whole number)."""
    if value is None:
        return "", False
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value), False
        if value != int(value):
            return f"{value:.2f}", True
        return str(int(value)), False
    return str(int(value)), False


_LABELS = {
    "memory": "Memory (MB)",
    "disk": "Disk (KB)",
    "gpus": "Gpus (Average)",
    "gpusmemory": "GpusMemory (MB)",
    "timeexecute": "TimeExecute (s)",
    "timeslotbusy": "TimeSlotBusy (s)",
}


def _usage_table(rows: Sequence[UsageRow]) -> str:
    """The usage table (``formatUsageAd``): rows by resource name, case ignored; a bare
    whole number in a column with fractions is padded to line up with their points."""
    if not rows:
        return ""
    ordered = sorted(rows, key=lambda r: r.name.lower())
    cells = [[_number(r.usage), _number(r.request), _number(r.allocated)] for r in ordered]
    fractional = [any(row[i][1] for row in cells) for i in range(3)]
    texts = [
        [t + "   " if fractional[i] and t.isdigit() else t for i, (t, _) in enumerate(row)]
        for row in cells
    ]
    width_res = len("Memory (MB)") + 1  # sizeof("Memory (MB)"): the NUL counts
    width_use = max([8] + [len(t[0]) for t in texts])
    width_req = max([8] + [len(t[1]) for t in texts])
    alloc = max([0] + [len(t[2]) for t in texts])
    width_res = max([width_res] + [len(r.name) for r in ordered])
    width_alloc = max(alloc, 9)
    out = (
        f"\tPartitionable Resources : {'Usage':>{width_use}} {'Request':>{width_req}} "
        f"{'Allocated' if alloc else '':>{width_alloc}} \n"
    )
    for row, (use, req, got) in zip(ordered, texts):
        label = _LABELS.get(row.name.lower(), row.name)
        out += (
            f"\t   {label:<{width_res + 8}} : {use:>{width_use}} {req:>{width_req}} "
            f"{got:>{width_alloc}} \n"
        )
    return out


def _run_usage(totals: bool, who: str = "Job") -> str:
    """The cpu usage lines and bytes moved (all zero: a mock job uses and moves nothing)."""
    lines = [f"\t{_NO_USAGE}  -  Run Remote Usage", f"\t{_NO_USAGE}  -  Run Local Usage"]
    if totals:
        lines += [f"\t{_NO_USAGE}  -  Total Remote Usage", f"\t{_NO_USAGE}  -  Total Local Usage"]
    moved = [f"0  -  Run Bytes Sent By {who}", f"0  -  Run Bytes Received By {who}"]
    if totals:
        moved += [f"0  -  Total Bytes Sent By {who}", f"0  -  Total Bytes Received By {who}"]
    return "".join(f"\t{x}\n" for x in lines) + "".join(f"\t{x}\n" for x in moved)


def _termination(f: Mapping[str, Any]) -> str:
    signal = f.get("signal")
    if signal is not None:
        return f"(0) Abnormal termination (signal {int(signal)})\n\t(0) No core file\n"
    return f"(1) Normal termination (return value {int(f.get('return_value', 0))})\n"


def _text(f: Mapping[str, Any], key: str) -> str:
    """A field as one line: a newline inside a reason would end the event's text."""
    return " ".join(str(f.get(key, "")).splitlines())


def _body(ev: LogEvent) -> str:
    f = ev.fields
    code = ev.code
    if code == SUBMIT:
        out = f"Job submitted from host: {_text(f, 'host')}\n"
        batch = f.get("batch_name")
        if isinstance(batch, str):  # the schedd's structured notes: DAGNodeName, JobBatchName
            out += f"    [ JobBatchName = {_text({'b': quote_string(batch)}, 'b')} ]\n"
        return out
    if code == EXECUTE:
        slot = _text(f, "slot")
        return f"Job executing on host: {_text(f, 'host')}\n" + (
            f"\tSlotName: {slot}\n" if slot else ""
        )
    if code == EVICTED:
        reason = _text(f, "reason")
        vacate = int(f.get("code", 0))
        head = (
            f"Job was evicted. Code {vacate} Subcode {int(f.get('subcode', 0))}\n"
            if vacate
            else "Job was evicted.\n"
        )
        if f.get("requeued"):  # the job exited and its policy runs it again
            out = head + "\t(0) Job terminated and was requeued\n" + _run_usage(False)
            out += "\t" + _termination(f)
            if reason:
                out += f"\t{reason}\n"
        else:
            out = head + "\t(0) CPU times\n" + _run_usage(False)
            if reason:
                out += f"\tReason: {reason}\n"
        return out + _usage_table(ev.usage)
    if code == TERMINATED:
        return (
            "Job terminated.\n\t"
            + _termination(ev.fields)
            + _run_usage(True)
            + _usage_table(ev.usage)
        )
    if code == ABORTED:
        reason = _text(f, "reason")
        return "Job was aborted.\n" + (f"\t{reason}\n" if reason else "")
    if code == HELD:
        reason = _text(f, "reason") or "Reason unspecified"
        return (
            f"Job was held.\n\t{reason}\n"
            f"\tCode {int(f.get('code', 0))} Subcode {int(f.get('subcode', 0))}\n"
        )
    if code == RELEASED:
        reason = _text(f, "reason")
        return "Job was released.\n" + (f"\t{reason}\n" if reason else "")
    if code == RECONNECT_FAILED:
        return (
            "Job reconnection failed\n"
            f"    {_text(f, 'reason')}\n"
            f"    Can not reconnect to {_text(f, 'startd')}, rescheduling job\n"
        )
    raise ValueError(f"user log event {code:03d} is not written by this schedd")


def format_event(ev: LogEvent, base: float, fmt: DateFormat = DateFormat()) -> str:
    """One event's text, its ``...`` line included; ``base``: the date of pool time 0."""
    return _header(ev, base, fmt) + _body(ev) + SYNC_LINE


def format_events(
    events: Iterable[LogEvent], base: float, fmt: DateFormat = DateFormat()
) -> dict[str, str]:
    """The text to append to each log file, events in order."""
    out: dict[str, list[str]] = {}
    for ev in events:
        out.setdefault(ev.path, []).append(format_event(ev, base, fmt))
    return {path: "".join(texts) for path, texts in out.items()}
