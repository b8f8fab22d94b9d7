"""condor_q -reverse-analyze: each slot's own Requirements (START) against the jobs.

What HTCondor's condor_q prints (condor_q.V6/queue.cpp ``print_jobs_analysis`` with
``reverse_analyze``, jobmatch.cpp ``doSlotRunAnalysisToBuffer`` in its tabular form):
a line naming the job (``C.P: Analyzing matches for 1 job``) or the count of jobs, a
three-line heading, then one line per slot in the collector's order: its name, type
(Stat, Part or Dyn), how many jobs its Requirements accept (MY = slot, TARGET = job),
how many jobs' Requirements accept it (MY = job, TARGET = slot), and the percentage of
jobs for which both hold. An offline slot prints ``NAME  is offline`` instead. The name
column is as wide as the longest Machine plus 7 or the longest Name, at least 16.

Known difference: HTCondor prints the detailed per-slot analysis (numbered conditions)
with -better-analyze or when a single slot is analysed; that form is not built here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..classad import ClassAd, evaluate
from ..classad.operators import truth
from ..tooltime import TOOL_RNG, wall_now

__all__ = ["SlotMatches", "format_reverse_analyze", "reverse_analyze"]


@dataclass(frozen=True)
class SlotMatches:
    """One slot's line of the table."""

    name: str
    slot_type: str  # Stat, Part or Dyn
    offline: bool
    slot_matches_job: int  # cOffConstraint: the slot's Requirements accept the job
    job_matches_slot: int  # cReqConstraint: the job's Requirements accept the slot
    both: int
    jobs: int

    @property
    def both_percent(self) -> float:
        return 100.0 * self.both / self.jobs if self.jobs else 0.0


def _half_match(my: ClassAd, target: ClassAd, now: float | None) -> bool:
    """IsAConstraintMatch(my, target): MY's Requirements true with TARGET (nonzero
    numbers count as true; a missing Requirements never matches)."""
    req = my.lookup("Requirements")
    at = wall_now(now)  # the pool's date when the caller knows it, else the wall clock
    return req is not None and truth(evaluate(req, my, target, now=at, rng=TOOL_RNG)) is True


def _str(ad: ClassAd, name: str) -> str:
    v = ad.eval(name)
    return v if isinstance(v, str) else ""


def _slot_type(slot: ClassAd) -> str:
    if slot.eval("DynamicSlot") is True:
        return "Dyn"
    if slot.eval("PartitionableSlot") is True:
        return "Part"
    return "Stat"


def reverse_analyze(
    slot: ClassAd, jobs: Sequence[ClassAd], *, now: float | None = None
) -> SlotMatches:
    """The counts of one slot against ``jobs``."""
    offline = slot.eval("Offline") is True
    by_slot = by_job = both = 0
    if not offline:
        for job in jobs:
            s = _half_match(slot, job, now)
            j = _half_match(job, slot, now)
            by_slot += s
            by_job += j
            both += s and j
    return SlotMatches(
        _str(slot, "Name"), _slot_type(slot), offline, by_slot, by_job, both, len(jobs)
    )


def format_reverse_analyze(
    banner: str, jobs: Sequence[ClassAd], slots: Sequence[ClassAd], *, now: float | None = None
) -> str:
    """The whole -reverse-analyze text for one schedd: ``banner`` (its ``-- Schedd:``
    header), then the table of ``slots`` against ``jobs``. No slots: the banner alone."""
    out = [banner]
    if not slots:
        return banner
    if len(jobs) == 1:
        c, p = jobs[0].eval("ClusterId"), jobs[0].eval("ProcId")
        c, p = (c if isinstance(c, int) else 0), (p if isinstance(p, int) else 0)
        out.append(f"{c}.{p}: Analyzing matches for 1 job\n")
    elif jobs:
        out.append(f"Analyzing matches for {len(jobs)} jobs\n")
    machine = max(len(_str(s, "Machine")) for s in slots)
    width = max(machine + 7, max(len(_str(s, "Name")) for s in slots), 16)

    def head(a: str, b: str, c: str, d: str, e: str) -> str:
        return f"{a[:width]:<{width}} {b:>4} {c[:12]:>12} {d[:12]:>12} {e[:10]:>10}\n"

    out.append(head("", "Slot", "Slot's Req ", "  Job's Req ", "Both   "))
    out.append(head("Name", "Type", "Matches Job", "Matches Slot", "Match %"))
    out.append(head("-" * 24, "----", "-" * 12, "-" * 12, "-" * 10))
    for slot in slots:
        m = reverse_analyze(slot, jobs, now=now)
        if m.offline:
            out.append(f"{m.name[:24]:<24}  is offline\n")
            continue
        out.append(
            f"{m.name[:width]:<{width}} {m.slot_type:<4} {m.slot_matches_job:12d}"
            f" {m.job_matches_slot:12d} {m.both_percent:10.2f}\n"
        )
    return "".join(out)
