"""What a negotiation cycle gives: its matches (CycleMatch), its rejections
(CycleRejection), and the whole result with its log lines and stats (CycleResult).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from ..classad import ClassAd
from .accountant import Accountant
from .groups import GroupTree
from .log import CYCLE_FINISHED, LogLine
from .stats import CycleStats


class CycleMatch(NamedTuple):  # a tuple: a cycle makes up to 100,000 of them
    submitter: str
    schedd: str
    schedd_address: str
    autocluster_id: int
    job_id: str  # the autocluster's representative job (the schedd picks the real one)
    slot_name: str
    claim_id: str  # a secret: never log it (claimid.redact)
    slot_ad: ClassAd  # the slot's public ad as offered (a p-slot: before this match)
    startd_address: str  # host:port of the startd server holding the slot
    cost: float  # SlotWeight charged (a p-slot: W(S) - W(S'))


class CycleRejection(NamedTuple):  # a tuple, as CycleMatch: a cycle may reject thousands
    """A request the cycle could not serve, and HTCondor's reason (sent to its schedd,
    which sets LastRejMatchReason/LastRejMatchTime on the job)."""

    submitter: str
    schedd: str
    schedd_address: str
    autocluster_id: int
    job_id: str
    reason: str
    time: float


@dataclass
class CycleResult:
    """What a cycle gives (its CycleOutput): built up as it runs, returned at its end."""

    matches: list[CycleMatch]
    accountant: Accountant
    stats: CycleStats
    log: list[LogLine]
    finished: bool = False
    matching_end: float = 0.0
    rejections: list[CycleRejection] = field(default_factory=list)
    groups: GroupTree | None = None  # the group tree as negotiated (None without GROUP_NAMES)

    def rejections_by_schedd(self) -> dict[str, list[CycleRejection]]:
        out: dict[str, list[CycleRejection]] = {}
        for r in self.rejections:
            out.setdefault(r.schedd, []).append(r)
        return out

    def matches_by_schedd(self) -> dict[str, list[CycleMatch]]:
        out: dict[str, list[CycleMatch]] = {}
        for m in self.matches:
            out.setdefault(m.schedd, []).append(m)
        return out

    def finish(self, end: float, cpu_time: float | None = None) -> None:
        """Close the cycle at pool time ``end`` (after the matches were sent: HTCondor
        sends them during phase 4, so the sending counts in phase 4)."""
        if self.finished:
            return
        s = self.stats
        end = max(end, self.matching_end)
        s.duration_phase4 += end - self.matching_end
        s.end_time = end
        s.duration = end - s.start_time
        if cpu_time is not None:
            s.cpu_time = cpu_time
        self.log.append(LogLine(end, CYCLE_FINISHED))
        self.finished = True
