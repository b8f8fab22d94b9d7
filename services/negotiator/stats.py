"""Per-cycle statistics and their negotiator-ad attributes, with HTCondor's names.

``publishNegotiationCycleStats`` (matchmaker.cpp) publishes, for the last
NEGOTIATION_CYCLE_STATS_LENGTH cycles (default 3, at most 100), ``<Name><i>`` with i = 0
the latest cycle: LastNegotiationCycleTime0, ...End0, ...Period0, ...Duration0,
...Phase1Duration0 .. Phase4Duration0, ...TotalSlots0, ...TrimmedSlots0,
...CandidateSlots0, ...SlotShareIter0, ...NumSchedulers0, ...NumIdleJobs0,
...NumJobsConsidered0, ...Matches0, ...Rejections0, ...MatchRate0,
...MatchRateSustained0, ...ActiveSubmitterCount0, ...Pies0, ...PieSpins0,
...PrefetchDuration0, ...CpuTime0 and Phase<k>CpuTime0, ...PrefetchCpuTime0,
...ScheddsOutOfTime0, ...SubmittersFailed0, ...SubmittersOutOfTime0,
...SubmittersShareLimit0 (the last four are comma-separated names).

Times: Time/End are dates (Unix times, whole seconds) as in every ad: the pool's date of
pool time 0 (``ad_epoch``) plus the pool seconds the cycle started and ended at. Durations are
pool seconds too -- the real time the cycle took times the pool's time scale, which is
what a user of the pool sees -- published as reals (3 decimals) rather than HTCondor's
whole seconds, because a fast cycle would otherwise always read 0. CPU times are real
process seconds (they are not scaled: they measure the negotiator, not the pool).
Period i = End i - End i+1 (0 for the oldest kept), as HTCondor computes it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..classad import ClassAd

__all__ = ["MAX_CYCLE_STATS", "CycleStats", "StatsHistory", "stats_attributes"]

MAX_CYCLE_STATS = 100  # HTCondor's MAX_NEGOTIATION_CYCLE_STATS
_P = "LastNegotiationCycle"


@dataclass
class CycleStats:
    """What one cycle did (HTCondor's NegotiationCycleStats, plus what mockpool adds)."""

    start_time: float = 0.0
    end_time: float = 0.0
    charged: dict[str, int] = field(default_factory=dict)  # slots held per submitter at start
    duration: float = 0.0
    duration_phase1: float = 0.0
    duration_phase2: float = 0.0
    duration_phase3: float = 0.0
    duration_phase4: float = 0.0
    total_slots: int = 0
    trimmed_slots: int = 0
    candidate_slots: int = 0
    slot_share_iterations: int = 0
    num_idle_jobs: int = 0
    num_jobs_considered: int = 0
    matches: int = 0
    rejections: int = 0
    pies: int = 0
    pie_spins: int = 0
    prefetch_duration: float = 0.0
    cpu_time: float = 0.0
    phase1_cpu_time: float = 0.0
    phase2_cpu_time: float = 0.0
    phase3_cpu_time: float = 0.0
    phase4_cpu_time: float = 0.0
    prefetch_cpu_time: float = 0.0
    active_schedds: set[str] = field(default_factory=set)
    active_submitters: set[str] = field(default_factory=set)
    schedds_out_of_time: set[str] = field(default_factory=set)
    submitters_failed: set[str] = field(default_factory=set)
    submitters_out_of_time: set[str] = field(default_factory=set)
    submitters_share_limit: set[str] = field(default_factory=set)
    # mockpool's own (not published under HTCondor names)
    claimed_slots_skipped: int = 0  # Claimed slots trimmed (preemption off, or retiring)
    slots_without_claim_id: int = 0
    kernel_fallbacks: int = 0
    slot_classes: int = 0  # rows the requests were evaluated on (.slotclasses)
    snapshot_columns: int = 0  # slot columns the snapshot sent packed (a columnar one)
    requests_by_slot: int = 0  # requests evaluated slot by slot: a wide name undecided
    # a request's answers, per class row or p-slot state (.memo): evaluated, or
    # remembered from a request of the same shape
    rows_evaluated: int = 0
    rows_remembered: int = 0
    orders_remembered: int = 0  # requests that took a same-shaped one's candidate order
    jobs_matched_in_runs: int = 0  # matched with the slots after them in one step (_match_run)

    def summary(self) -> dict[str, Any]:
        """JSON-able figures for status() and events."""
        return {
            "start": self.start_time,
            "end": self.end_time,
            "duration": round(self.duration, 3),
            "phases": [
                round(d, 3)
                for d in (
                    self.duration_phase1,
                    self.duration_phase2,
                    self.duration_phase3,
                    self.duration_phase4,
                )
            ],
            "matches": self.matches,
            "rejections": self.rejections,
            "idle_jobs": self.num_idle_jobs,
            "jobs_considered": self.num_jobs_considered,
            "total_slots": self.total_slots,
            "snapshot_columns": self.snapshot_columns,
            "candidate_slots": self.candidate_slots,
            "active_submitters": len(self.active_submitters),
            "schedulers": len(self.active_schedds),
            "claimed_slots_skipped": self.claimed_slots_skipped,
            "kernel_fallbacks": self.kernel_fallbacks,
        }


def _names(values: set[str]) -> str:
    return ", ".join(sorted(values))


def stats_attributes(s: CycleStats, i: int, period: float, epoch: int = 0) -> dict[str, Any]:
    """The ``<attr><i>`` attributes of one cycle (dates counted from ``epoch``)."""
    r = round
    values: dict[str, Any] = {
        "Time": epoch + int(s.start_time),
        "End": epoch + int(s.end_time),
        "Period": r(period, 3),
        "Duration": r(s.duration, 3),
        "Phase1Duration": r(s.duration_phase1, 3),
        "Phase2Duration": r(s.duration_phase2, 3),
        "Phase3Duration": r(s.duration_phase3, 3),
        "Phase4Duration": r(s.duration_phase4, 3),
        "TotalSlots": s.total_slots,
        "TrimmedSlots": s.trimmed_slots,
        "CandidateSlots": s.candidate_slots,
        "SlotShareIter": s.slot_share_iterations,
        "NumSchedulers": len(s.active_schedds),
        "NumIdleJobs": s.num_idle_jobs,
        "NumJobsConsidered": s.num_jobs_considered,
        "Matches": s.matches,
        "Rejections": s.rejections,
        "MatchRate": r(s.matches / s.duration, 3) if s.duration > 0 else 0.0,
        "MatchRateSustained": r(s.matches / period, 3) if period > 0 else 0.0,
        "ActiveSubmitterCount": len(s.active_submitters),
        "Pies": s.pies,
        "PieSpins": s.pie_spins,
        "PrefetchDuration": r(s.prefetch_duration, 3),
        "PrefetchCpuTime": r(s.prefetch_cpu_time, 3),
        "CpuTime": r(s.cpu_time, 3),
        "Phase1CpuTime": r(s.phase1_cpu_time, 3),
        "Phase2CpuTime": r(s.phase2_cpu_time, 3),
        "Phase3CpuTime": r(s.phase3_cpu_time, 3),
        "Phase4CpuTime": r(s.phase4_cpu_time, 3),
        "ScheddsOutOfTime": _names(s.schedds_out_of_time),
        "SubmittersFailed": _names(s.submitters_failed),
        "SubmittersOutOfTime": _names(s.submitters_out_of_time),
        "SubmittersShareLimit": _names(s.submitters_share_limit),
    }
    return {f"{_P}{k}{i}": v for k, v in values.items()}


class StatsHistory:
    """The last ``length`` cycles' stats, newest first, published as HTCondor does."""

    def __init__(self, length: int = 3, *, ad_epoch: int = 0) -> None:
        if not 0 <= length <= MAX_CYCLE_STATS:
            raise ValueError(
                f"NEGOTIATION_CYCLE_STATS_LENGTH must be 0..{MAX_CYCLE_STATS}, got {length}"
            )
        self.length = length
        self.ad_epoch = int(ad_epoch)  # Unix time of pool time 0: the dates count from it
        self.cycles: list[CycleStats] = []

    def push(self, stats: CycleStats) -> None:
        """A finished cycle becomes number 0; the others shift up; the oldest falls off."""
        self.cycles.insert(0, stats)
        del self.cycles[max(self.length, 0) :]

    @property
    def latest(self) -> CycleStats | None:
        return self.cycles[0] if self.cycles else None

    def attributes(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for i, s in enumerate(self.cycles):
            nxt = self.cycles[i + 1] if i + 1 < len(self.cycles) else None
            period = s.end_time - nxt.end_time if nxt is not None else 0.0
            out.update(stats_attributes(s, i, period, self.ad_epoch))
        return out

    def publish(self, ad: ClassAd | Mapping[str, Any]) -> ClassAd:
        """``ad`` (copied) with every cycle attribute replaced by the current history."""
        new = ad.copy() if isinstance(ad, ClassAd) else ClassAd(dict(ad))
        for name in [n for n in new if n.startswith(_P)]:
            del new[name]
        for name, value in self.attributes().items():
            new[name] = value
        return new
