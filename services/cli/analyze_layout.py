"""condor_q -better-analyze, as pure text: the job's Requirements indented as HTCondor
pretty-prints them, its status, and the analysis of which slots match (analysis.py).
"""

from __future__ import annotations

import time

from ..classad import ClassAd, unparse
from ..jobstates import COMPLETED, HELD, REMOVED, RUNNING, SUSPENDED, TRANSFERRING_OUTPUT
from .analysis import JobAnalysis
from .layouts import _int, _num, _str
from .q_layouts import _schedd_header


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
