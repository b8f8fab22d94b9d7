"""Measures of a run, worked out by hand on small event logs (tests/unit/testdata/measures)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from builders.events import saturated_events

from mockpool.pool.measures import MeasureError, job_runs, load_run, measure, sawtooth, write_series

DATA = Path(__file__).parent / "testdata" / "measures"
LAG = {
    "central:1": {"max": 0.2, "mean": 0.1, "wakeups": 3},
    "startd:2": {"max": 0.5, "mean": 0.3, "wakeups": 4},
    "schedd:3": None,
}


def events(name: str) -> list[dict]:
    return [json.loads(line) for line in (DATA / name).read_text().splitlines() if line.strip()]


@pytest.mark.parametrize(
    ("d_over_c", "expected"),
    [
        (0.5, 0.5),
        (1.0, 1.0),
        (1.5, 0.75),
        (2.5, 2.5 / 3),
        (2.0, 1.0),
        (0.2, 0.2),
        (3.2, 0.8),
        (0.0, 0.0),
    ],
)
def test_sawtooth_hand_worked_points(d_over_c: float, expected: float) -> None:
    # D/C = 1.5: a 1.5-cycle job, then idle to the next cycle: busy 1.5 of every 2 cycles.
    assert sawtooth(d_over_c) == pytest.approx(expected)


def test_job_runs_join_startd_events_by_claim_and_job() -> None:
    runs = job_runs(events("two_slots.jsonl"), now=140.0)
    got = [(r.job, r.slot, r.submitter, r.qdate, r.start, r.end, r.finished) for r in runs]
    assert got == [
        ("1.0", "slot1@exec1", "alice@pool", 0.0, 10.0, 40.0, True),
        ("1.1", "slot2@exec1", "alice@pool", 0.0, 10.0, 40.0, True),
        # claim c1 reused: the claim event named only its first job, the schedd comes from it
        ("1.2", "slot1@exec1", "alice@pool", 0.0, 70.0, 100.0, True),
        ("2.0", "slot2@exec1", "group_a.bob@pool", 5.0, 70.0, 100.0, True),
    ]


def test_a_job_still_running_ends_at_the_run_end_or_its_claims_release() -> None:
    ev = [
        e
        for e in events("two_slots.jsonl")
        if not (e["kind"] == "job_exit" and e["job"] in ("1.2", "2.0"))
    ]
    ev.append(
        {"t": 80.0, "daemon": "exec1", "kind": "release", "slot": "slot2@exec1", "claim": "c4"}
    )
    runs = {r.job: r for r in job_runs(ev, now=90.0)}
    assert (runs["1.2"].end, runs["1.2"].finished) == (90.0, False)  # still running at the stop
    assert (runs["2.0"].end, runs["2.0"].finished) == (80.0, False)  # killed when its claim went


def test_a_job_killed_by_its_claims_lease_ends_when_the_lease_ran_out() -> None:
    # 2.0 runs on claim c4 from 70, planned to end at 100; the claim's lease runs out at
    # 85 (the startd found it later and dated it then): the run ends at 85, unfinished
    ev = [
        e for e in events("two_slots.jsonl") if not (e["kind"] == "job_exit" and e["job"] == "2.0")
    ]
    ev.append(
        {
            "t": 85.0,
            "daemon": "exec1",
            "kind": "lease_expired",
            "slot": "slot2@exec1",
            "claim": "c4",
        }
    )
    runs = {r.job: r for r in job_runs(ev, now=140.0)}
    assert (runs["2.0"].start, runs["2.0"].end, runs["2.0"].finished) == (70.0, 85.0, False)


def test_a_preempted_job_ends_at_its_eviction() -> None:
    # 2.0 (claim c4, planned end 100) is evicted at 85 by a preemption: its run ends
    # there, unfinished, whether or not its claim's release was logged
    ev = [
        e for e in events("two_slots.jsonl") if not (e["kind"] == "job_exit" and e["job"] == "2.0")
    ]
    ev.append(
        {
            "t": 85.0,
            "daemon": "exec1",
            "kind": "job_evicted",
            "slot": "slot2@exec1",
            "job": "2.0",
            "claim": "c4",
            "start": 70.0,
            "end": 85.0,
            "reason": "preempted by carol@pool (user priority)",
        }
    )
    runs = {r.job: r for r in job_runs(ev, now=140.0)}
    assert (runs["2.0"].end, runs["2.0"].finished) == (85.0, False)


def test_measures_of_two_slots_by_hand() -> None:
    m = measure(events("two_slots.jsonl"), now=120.0, total_cpus=2, lag=LAG, bin_seconds=60)
    s = m.summary
    # from the first start to the next cycle after the last end (129), cut at the stop
    assert s["window"] == [10.0, 120.0]
    assert s["negotiation_interval"] == 60.0  # cycle starts 9, 69, 129
    # each slot busy 60 s of the 110 s window
    assert s["pool_loading_factor"] == pytest.approx(0.5455)
    slots = s["slot_loading_factor"]
    assert slots["count"] == 2 and slots["mean"] == pytest.approx(60 / 110, abs=1e-3)
    assert s["duration_classes"] == [
        {"duration": 30, "d_over_c": 0.5, "loading_factor": 0.5455, "theory": 0.5, "slots": 2}
    ]
    # one 30 s gap on each slot (40 -> 70)
    assert s["idle_gaps"]["count"] == 2 and s["idle_gaps"]["mean"] == 30.0
    # waits 10, 10, 70 (alice) and 65 (bob, queued at 5)
    assert s["wait"]["count"] == 4
    assert s["wait"]["mean"] == 38.75 and s["wait"]["p50"] == 37.5 and s["wait"]["max"] == 70.0
    assert s["wait"]["never_started"] == 0
    assert s["throughput_per_hour"] == 130.909  # 4 jobs in 110 s
    assert s["cycle_duration"]["mean"] == 1.0
    assert s["matches_per_cycle"]["mean"] == pytest.approx(1.0)  # 2, 1, 0
    assert s["clock_lag"] == {"max": 0.5, "mean": 0.2}


def test_the_window_ends_at_the_first_cycle_after_the_last_job() -> None:
    # a saturated slot's window then holds whole match periods: here two of 60 s, 30 s busy
    # in each, and slot1's loading factor is the saw-tooth's 0.5 but for the 1 s the
    # first job started after its cycle
    m = measure(events("two_slots.jsonl"), now=140.0, total_cpus=2)
    assert m.summary["window"] == [10.0, 129.0]
    assert m.summary["pool_loading_factor"] == pytest.approx(60 / 119, abs=1e-4)
    last = [e for e in events("two_slots.jsonl") if e["kind"] != "cycle" or e["cycle"] < 3]
    assert measure(last, now=140.0, total_cpus=2).summary["window"] == [
        10.0,
        100.0,
    ]  # no cycle after


def test_utilisation_and_usage_series_by_hand() -> None:
    m = measure(events("two_slots.jsonl"), now=120.0, total_cpus=2, bin_seconds=60)
    # [0, 60): 2 jobs x 30 s = 60 cpu-s of 120; 4 queued, 2 started; [60, 120): the same
    assert m.series["utilisation"] == [
        {
            "t": 0.0,
            "busy_cpus": 1.0,
            "utilisation": 0.5,
            "completed": 2,
            "idle_jobs": 2,
            "misallocated": 0.0,
        },
        {
            "t": 60.0,
            "busy_cpus": 1.0,
            "utilisation": 0.5,
            "completed": 2,
            "idle_jobs": 0,
            "misallocated": 0.0,
        },
    ]
    usage = {(u["t"], u["kind"], u["name"]): (u["share"], u["target"]) for u in m.series["usage"]}
    # targets are max-min shares of the mean demand (fairshare.py). [0, 60): alice wants
    # (40 + 40 + 60) / 60 = 2.333 cpus, bob (queued at 5) 55 / 60 = 0.917. group_a gets
    # min(quota 1, 0.917); <none> (quota 2 - 1 = 1) min(1, 2.333) = 1 and, as the root
    # that accepts surplus, the 0.083 group_a left: alice 1.083 / 2 = 0.5417.
    # [60, 120): each wants 40 / 60 = 0.667 and gets it: 0.3333 of the pool each.
    assert usage == {
        (0.0, "submitter", "alice@pool"): (0.5, 0.5417),
        (0.0, "submitter", "group_a.bob@pool"): (0.0, 0.4583),
        (0.0, "group", "group_a"): (0.0, 0.5),
        (60.0, "submitter", "alice@pool"): (0.25, 0.3333),
        (60.0, "submitter", "group_a.bob@pool"): (0.25, 0.3333),
        (60.0, "group", "group_a"): (0.25, 0.5),
    }
    assert m.summary["usage"]["submitter:alice@pool"]["cpu_seconds"] == 90.0
    assert m.summary["usage"]["group:group_a"] == {
        "cpu_seconds": 30.0,
        "mean_share": 0.125,
        "mean_target": 0.5,
        "time_to_quota": None,  # 0.25 of the pool at most, against 0.5
    }
    assert [(c["t"], c["matches"]) for c in m.series["cycles"]] == [(9.0, 2), (69.0, 1), (129.0, 0)]


def test_time_for_a_group_to_reach_its_quota() -> None:
    ev = events("two_slots.jsonl")
    for e in ev:
        if "quotas" in e:
            e["quotas"] = {"group_a": 0.5}  # a quarter of the pool's 2 cpus
    m = measure(ev, now=120.0, total_cpus=2, bin_seconds=60)
    # bob's job, queued at 5, runs in [60, 120) at a share of 0.25: reached by 120
    assert m.summary["usage"]["group:group_a"]["time_to_quota"] == 115.0


def test_a_job_that_never_started_counts_and_leaves_a_submitter_with_demand() -> None:
    ev = [
        *events("two_slots.jsonl"),
        {
            "t": 90.0,
            "daemon": "schedd1",
            "kind": "submit",
            "cluster": 3,
            "procs": 2,
            "submitter": "carol@pool",
        },
    ]
    m = measure(ev, now=120.0, total_cpus=2, bin_seconds=60)
    assert m.summary["wait"]["never_started"] == 2
    targets = {
        (u["t"], u["name"]): u["target"] for u in m.series["usage"] if u["kind"] == "submitter"
    }
    assert targets[(0.0, "carol@pool")] == 0.0  # not queued yet
    # [60, 120): carol wants 2 x 30 / 60 = 1 cpu, alice and bob 0.667 each. <none>
    # (quota 1, alice and carol) gets 1 plus the 0.333 group_a (quota 1) leaves; alice and
    # carol split 1.333 equally: 0.667 each, a third of the pool
    assert targets[(60.0, "carol@pool")] == pytest.approx(1 / 3, abs=1e-4)


def test_an_empty_run_has_empty_measures() -> None:
    m = measure([], now=60.0, total_cpus=4)
    assert m.summary["pool_loading_factor"] is None
    assert m.summary["wait"]["count"] == 0 and m.summary["wait"]["mean"] is None
    assert m.summary["duration_classes"] == [] and m.series["jobs"] == []


def test_series_are_written_as_csv(tmp_path: Path) -> None:
    m = measure(events("two_slots.jsonl"), now=120.0, total_cpus=2, bin_seconds=60)
    paths = write_series(tmp_path, m)
    assert sorted(p.name for p in paths) == [
        "cycles.csv",
        "jobs.csv",
        "slots.csv",
        "usage.csv",
        "utilisation.csv",
    ]
    lines = (tmp_path / "utilisation.csv").read_text().splitlines()
    assert lines == [
        "t,busy_cpus,utilisation,completed,idle_jobs,misallocated",
        "0.0,1.0,0.5,2,2,0.0",
        "60.0,1.0,0.5,2,0,0.0",
    ]


def test_load_run_refuses_a_folder_without_a_run(tmp_path: Path) -> None:
    with pytest.raises(MeasureError, match="holds no run"):
        load_run(tmp_path)
    with pytest.raises(MeasureError, match="no such folder"):
        load_run(tmp_path / "nope")


def test_load_run_names_the_line_of_a_bad_event(tmp_path: Path) -> None:
    (tmp_path / "summary.json").write_text('{"pool_seconds": 10}')
    (tmp_path / "events.jsonl").write_text('{"t": 1, "daemon": "a", "kind": "x"}\n{oops\n')
    with pytest.raises(MeasureError, match=r"events\.jsonl:2: not a JSON event"):
        load_run(tmp_path)
    (tmp_path / "events.jsonl").write_text('{"t": 1}\n')
    with pytest.raises(MeasureError, match=r"events\.jsonl:1: an event needs t, daemon and kind"):
        load_run(tmp_path)
    (tmp_path / "events.jsonl").write_text("")
    (tmp_path / "summary.json").write_text("[]")
    with pytest.raises(MeasureError, match="not a run summary"):
        load_run(tmp_path)


@pytest.mark.parametrize("d_over_c", [0.2, 0.5, 1.0, 1.5, 2.5, 3.2])
def test_a_saturated_pool_without_claim_reuse_measures_the_saw_tooth(d_over_c: float) -> None:
    c = 60.0
    ev = saturated_events(jobs=30, slots=3, d=d_over_c * c, c=c)
    m = measure(ev, now=max(e["t"] for e in ev), total_cpus=3)
    assert m.summary["negotiation_interval"] == c
    # at a whole D/C the job ends as a cycle starts and waits for the next: the formula's
    # value from the right (its ⌈⌉ term reads 1 there)
    want = sawtooth(d_over_c + 1e-9)
    assert m.summary["pool_loading_factor"] == pytest.approx(want, abs=1e-3)
    (cls,) = m.summary["duration_classes"]
    assert cls["theory"] == pytest.approx(sawtooth(d_over_c), abs=1e-4)
    assert cls["loading_factor"] == pytest.approx(want, abs=1e-3)
