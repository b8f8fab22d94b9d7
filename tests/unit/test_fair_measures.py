"""Fair-share targets, time to fair share, work lost and the cadence: worked by hand."""

from __future__ import annotations

import numpy as np
import pytest

from mockpool.pool.fairshare import misallocated, targets, time_to_fair_share, water_fill
from mockpool.pool.jobmeasures import cadence, duration_bins, work_lost
from mockpool.pool.measures import JobRun


def test_water_fill_gives_the_small_demand_its_all_and_splits_the_rest() -> None:
    # 10 cpus, demands 2, 5, 9: 10/3 each is above 2 -> 2; 8 left, 4 each: 5 -> 4, 9 -> 4
    assert water_fill(10, [2, 5, 9], [1, 1, 1]) == pytest.approx([2, 4, 4])
    # weights 3:1 of 8 cpus, both wanting more: 6 and 2
    assert water_fill(8, [10, 10], [3, 1]) == pytest.approx([6, 2])


def test_groups_get_their_quota_first_and_none_takes_the_rest() -> None:
    group = {"alice": "", "bob": "group_a", "carol": ""}
    # 8 cpus, group_a quota 2: <none> has 6, alice and carol 3 each; bob his 2
    fair = targets(8, {"alice": 10, "bob": 10, "carol": 10}, group, {"group_a": 2})
    assert fair == pytest.approx({"alice": 3, "bob": 2, "carol": 3})
    # bob alone wants more: without surplus he stops at 2; accepting it, he takes all 8
    alone = {"alice": 0, "bob": 10, "carol": 0}
    assert targets(8, alone, group, {"group_a": 2})["bob"] == pytest.approx(2)
    assert targets(8, alone, group, {"group_a": 2}, {"group_a": True})["bob"] == pytest.approx(8)


def test_misallocation_needs_someone_over_and_someone_under() -> None:
    # alice 0.25 over, bob 0.25 under -> 0.25; bob under with nobody over -> 0
    assert list(misallocated(np.array([0.25, 0.0]), np.array([0.25, 0.125]))) == [0.25, 0.0]


def test_time_to_fair_share_is_the_end_of_the_last_interval_off() -> None:
    lows = [0.0, 20.0, 40.0, 60.0, 80.0]
    wanted = [True] * 4 + [False]
    # off in [20, 40) (0.3 > 0.125), fair after: first queued at 5 -> 40 - 5 = 35
    assert time_to_fair_share(lows, 20, [0.0, 0.3, 0.1, 0.0, 0.9], wanted, 5.0, 0.125) == 35.0
    assert time_to_fair_share(lows, 20, [0.0] * 5, wanted, 5.0, 0.125) == 0.0
    # still off in the last interval with demand: never settled
    assert time_to_fair_share(lows, 20, [0, 0, 0, 0.2, 0], wanted, 5.0, 0.125) is None


def _run(job: str, slot: str, start: float, end: float, ended: str = "exit") -> JobRun:
    return JobRun(job, "s1", "a@p", slot, 2, 0.0, start, end, ended == "exit", ended)


def test_work_lost_counts_evicted_and_lost_runs_in_cpu_seconds() -> None:
    runs = [
        _run("1.0", "x", 0, 100),
        _run("1.1", "y", 0, 30, "evicted"),  # 30 s x 2 cpus = 60
        _run("1.2", "z", 10, 20, "lost"),  # 10 s x 2 cpus = 20
    ]
    lost = work_lost(runs)  # busy: (100 + 30 + 10) x 2 = 280
    assert lost["preemption"] == {"runs": 1, "cpu_seconds": 60, "fraction": round(60 / 280, 4)}
    assert lost["claims_lost"]["cpu_seconds"] == 20


def test_duration_bins_measure_each_jobs_period_to_the_next_start_on_its_slot() -> None:
    # C = 20. Slot x: a 30 s job at 0, the next at 40 (period 40: 30/40 = 0.75, the
    # saw-tooth's at D/C 1.5); the last job of a slot has no period and is left out
    runs = [_run("1.0", "x", 0, 30), _run("1.1", "x", 40, 70)]
    bins = duration_bins(runs, [(0.0, 5)], 20.0)
    assert bins["jobs"] == 1 and bins["left_out"] == 1
    assert bins["bins"] == [
        {
            "d_over_c": 1.5,
            "low": 1.5,
            "high": 1.5,
            "jobs": 1,
            "loading_factor": 0.75,
            "theory": 0.75,
        }
    ]
    # nothing waiting when 1.0 ended (2 queued, both started by 40... 1.1 queued at 35)
    assert duration_bins(runs, [(0.0, 1), (35.0, 1)], 20.0)["jobs"] == 0


def test_cadence_counts_the_gaps_shorter_than_the_interval() -> None:
    cad = cadence([0.0, 50.0, 70.0, 90.0, 140.0], {"NEGOTIATOR_INTERVAL": "50"})
    assert cad["configured_interval"] == 50.0 and cad["median_gap"] == 35.0
    assert (cad["gaps"], cad["early_gaps"], cad["late_gaps"]) == (4, 2, 0)
    assert cadence([0.0], None)["median_gap"] is None
