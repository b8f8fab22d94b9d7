"""Negotiator-ad cycle statistics: HTCondor's names, the 0..N history, shifting."""

from __future__ import annotations

import pytest

from mockpool.classad import ClassAd
from mockpool.negotiator import CycleStats, StatsHistory

NAMES = [
    "Time",
    "End",
    "Period",
    "Duration",
    "Phase1Duration",
    "Phase2Duration",
    "Phase3Duration",
    "Phase4Duration",
    "TotalSlots",
    "TrimmedSlots",
    "CandidateSlots",
    "SlotShareIter",
    "NumSchedulers",
    "NumIdleJobs",
    "NumJobsConsidered",
    "Matches",
    "Rejections",
    "MatchRate",
    "MatchRateSustained",
    "ActiveSubmitterCount",
    "Pies",
    "PieSpins",
    "PrefetchDuration",
    "PrefetchCpuTime",
    "CpuTime",
    "Phase1CpuTime",
    "Phase2CpuTime",
    "Phase3CpuTime",
    "Phase4CpuTime",
    "ScheddsOutOfTime",
    "SubmittersFailed",
    "SubmittersOutOfTime",
    "SubmittersShareLimit",
]


def cycle(start: float, end: float, matches: int) -> CycleStats:
    return CycleStats(
        start_time=start,
        end_time=end,
        duration=end - start,
        matches=matches,
        active_submitters={"bob@mockpool", "alice@mockpool"},
        active_schedds={"s1"},
    )


def test_attribute_names_are_htcondors():
    h = StatsHistory()
    h.push(cycle(0, 4, 8))
    attrs = h.attributes()
    assert set(attrs) == {f"LastNegotiationCycle{n}0" for n in NAMES}
    assert attrs["LastNegotiationCycleMatches0"] == 8
    assert attrs["LastNegotiationCycleMatchRate0"] == 2.0  # 8 matches / 4 s
    assert attrs["LastNegotiationCycleMatchRateSustained0"] == 0.0  # no previous cycle
    assert attrs["LastNegotiationCycleActiveSubmitterCount0"] == 2
    assert attrs["LastNegotiationCycleNumSchedulers0"] == 1
    assert attrs["LastNegotiationCycleTime0"] == 0 and attrs["LastNegotiationCycleEnd0"] == 4


def test_history_shifts_and_keeps_three_by_default():
    h = StatsHistory()
    for k in range(4):
        h.push(cycle(60 * k, 60 * k + 2, k))
    attrs = h.attributes()
    assert [attrs[f"LastNegotiationCycleMatches{i}"] for i in range(3)] == [3, 2, 1]
    assert "LastNegotiationCycleMatches3" not in attrs
    # Period i = End i - End i+1; the oldest kept has none
    assert attrs["LastNegotiationCyclePeriod0"] == 60
    assert attrs["LastNegotiationCyclePeriod2"] == 0
    assert attrs["LastNegotiationCycleMatchRateSustained0"] == pytest.approx(3 / 60, abs=1e-3)


def test_publish_replaces_old_cycle_attributes():
    h = StatsHistory(length=1)
    ad = ClassAd()
    ad["Name"] = "negotiator"
    ad["LastNegotiationCycleMatches5"] = 99  # stale, from a longer history
    h.push(cycle(0, 1, 7))
    out = h.publish(ad)
    assert out.eval("LastNegotiationCycleMatches0") == 7
    assert out.lookup("LastNegotiationCycleMatches5") is None
    assert out.eval("Name") == "negotiator"
    assert ad.eval("LastNegotiationCycleMatches5") == 99  # input untouched


def test_string_list_stats_and_length_bounds():
    s = cycle(0, 1, 0)
    s.submitters_failed = {"b@x", "a@x"}
    h = StatsHistory(length=2)
    h.push(s)
    assert h.attributes()["LastNegotiationCycleSubmittersFailed0"] == "a@x, b@x"
    assert StatsHistory(length=0).attributes() == {}
    with pytest.raises(ValueError, match="NEGOTIATION_CYCLE_STATS_LENGTH"):
        StatsHistory(length=101)
