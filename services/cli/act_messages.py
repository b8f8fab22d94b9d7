"""What condor_rm, condor_hold and condor_release print: one line per argument (a cluster,
a job or the constraint), as HTCondor's tool.cpp does, not one line per job."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

# tool.cpp's actionWord(mode, past tense)
PAST = {"remove": "marked for removal", "hold": "held", "release": "released"}


class Result(Protocol):
    job_id: str
    ok: bool
    error: str


def _cluster_of(job_id: str) -> int | None:
    head = job_id.split(".", 1)[0]
    return int(head) if head.isdigit() else None


def act_lines(
    action: str, ids: Sequence[str], constraint: str, all_jobs: bool, results: Sequence[Result]
) -> tuple[list[str], list[str]]:
    """(stdout lines, stderr lines) for the schedd's per-job ``results``.

    A cluster argument prints "All jobs in cluster 4 have been marked for removal" when
    every job of it acted, a job argument "Job 4.1 marked for removal", a constraint
    "All jobs matching constraint (...) have been ..." (-all: "All jobs have been ...").
    Refusals (not found, permission denied, already held) go to stderr as the schedd
    words them."""
    word = PAST[action]
    out: list[str] = []
    err: list[str] = [r.error for r in results if not r.ok and r.error]
    used: set[int] = set()
    for arg in ids:
        text = arg.strip()
        if "." in text:
            c, p = (int(x) for x in text.split(".", 1))
            jid = f"{c}.{p}"
            hits = [i for i, r in enumerate(results) if r.job_id == jid]
            used.update(hits)
            if hits and all(results[i].ok for i in hits):
                out.append(f"Job {jid} {word}")
            continue
        cluster = int(text)
        hits = [
            i
            for i, r in enumerate(results)
            if r.job_id == text or (r.job_id and _cluster_of(r.job_id) == cluster)
        ]
        used.update(hits)
        if hits and all(results[i].ok for i in hits):
            out.append(f"All jobs in cluster {cluster} have been {word}")
    if constraint or all_jobs:
        rest = [r for i, r in enumerate(results) if i not in used]
        if any(r.ok for r in rest):
            if all_jobs:
                out.append(f"All jobs have been {word}")
            else:
                out.append(f"All jobs matching constraint ({constraint.strip()}) have been {word}")
    return out, err
