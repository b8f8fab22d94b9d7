"""The run summary's figures, worked out by hand, and the output folder's layout."""

from __future__ import annotations

import json
from pathlib import Path

from mockpool.classad import ClassAd, parse_ads
from mockpool.pool.report import (
    busy_cpu_seconds,
    job_counts,
    summarize,
    total_cpus,
    without_finished,
    write_output,
)


def job(cluster: int, proc: int, status: int, **attrs: object) -> ClassAd:
    return ClassAd(ClusterId=cluster, ProcId=proc, JobStatus=status, **attrs)


JOBS = [
    job(1, 0, 4, RemoteWallClockTime=60, RequestCpus=1),  # completed: 60 cpu-s
    job(1, 1, 2, RemoteWallClockTime=0, RequestCpus=2, JobCurrentStartDate=250),  # running 50 s x 2
    job(1, 2, 5, RemoteWallClockTime=30, RequestCpus=1),  # held after 30 s
    job(1, 3, 1),
]
SLOTS = [
    ClassAd(Name="slot1@a", Machine="a", TotalCpus=8, State="Unclaimed"),
    ClassAd(Name="slot1_1@a", Machine="a", TotalCpus=8, State="Claimed"),
    ClassAd(Name="slot1@b", Machine="b", TotalCpus=2, State="Claimed"),
]


def test_job_counts_by_state_name() -> None:
    assert job_counts([*JOBS, job(2, 0, 9)]) == {
        "Idle": 1,
        "Running": 1,
        "Removed": 0,
        "Completed": 1,
        "Held": 1,
        "Unknown": 1,
    }


def test_a_job_read_in_the_queue_and_then_in_the_history_counts_once_as_finished() -> None:
    def job(cluster: int, proc: int, status: int) -> ClassAd:
        return ClassAd({"ClusterId": cluster, "ProcId": proc, "JobStatus": status})

    queue = [job(1, 0, 2), job(1, 1, 2), job(2, 0, 1)]
    history = [job(1, 1, 4), job(3, 0, 4)]  # 1.1 completed between the two reads
    kept = without_finished(queue, history)
    assert [(a.get_value("ClusterId"), a.get_value("ProcId")) for a in kept] == [(1, 0), (2, 0)]
    counts = job_counts(kept + history)
    assert (counts["Idle"], counts["Running"], counts["Completed"]) == (1, 1, 2)


def test_busy_cpu_seconds_count_the_current_run() -> None:
    assert busy_cpu_seconds(JOBS, now=300) == 60 + 2 * 50 + 30


def test_total_cpus_counts_each_machine_once() -> None:
    assert total_cpus(SLOTS) == 10


def test_summary_and_output_folder(tmp_path: Path) -> None:
    s = summarize(
        now=300,
        real_seconds=10,
        time_scale=30,
        slots=SLOTS,
        jobs=JOBS,
        negotiator=None,
        negotiator_status={"cycles": 5, "matches": 3},
        host_status=[{"role": "central", "pid": 1, "peak_rss_mb": 100.0, "lag": None}],
        jobs_submitted=4,
        workload_errors=[],
        machines=2,
    )
    assert s["achieved_scale"] == 30
    assert s["cpu_utilisation"] == round(190 / (10 * 300), 4)
    assert s["slot_states"] == {"Unclaimed": 1, "Claimed": 2}
    assert (s["cycles"], s["matches"]) == (5, 3)
    write_output(
        tmp_path,
        events=[{"t": 1.0, "daemon": "x", "kind": "k"}],
        negotiator_log=["line"],
        ads={"slots": SLOTS, "jobs": JOBS},
        summary=s,
    )
    assert json.loads((tmp_path / "summary.json").read_text())["total_cpus"] == 10
    assert (tmp_path / "NegotiatorLog").read_text() == "line\n"
    slots = parse_ads((tmp_path / "ads" / "slots.ads").read_text())
    assert [a.get_value("Name") for a in slots] == ["slot1@a", "slot1_1@a", "slot1@b"]
    jobs = parse_ads((tmp_path / "ads" / "jobs.ads").read_text())
    assert [(a.get_value("ClusterId"), a.get_value("ProcId")) for a in jobs] == [
        (1, 0),
        (1, 1),
        (1, 2),
        (1, 3),
    ]


def test_the_summary_lines_give_the_measures_when_jobs_ran() -> None:
    from mockpool.pool.report import format_summary

    base = {
        "pool_seconds": 300,
        "real_seconds": 10,
        "time_scale": 30,
        "achieved_scale": 30,
        "machines": 1,
        "slots": 1,
        "total_cpus": 10,
        "cycles": 5,
        "matches": 15,
        "jobs": {"Completed": 15},
        "jobs_submitted": 15,
        "slot_states": {},
        "cpu_utilisation": 0.3,
        "workload_errors": [],
        "peak_rss_mb": {"total": 300},
        "lag": {},
    }
    measures = {
        "pool_loading_factor": 0.5,
        "negotiation_interval": 60.0,
        "throughput_per_hour": 301.5,
        "wait": {"mean": 49.7, "p95": 129.1},
    }
    text = format_summary(base | {"measures": measures})
    assert (
        "Loading factor 0.500 (C = 60 pool s); waits: mean 49.7 s, p95 129.1 s; 301.5 jobs per pool hour"
        in text
    )
    assert "Loading factor" not in format_summary(
        base | {"measures": measures | {"pool_loading_factor": None}}
    )
    assert "Loading factor" not in format_summary(base)
    # no job could start (none fits any slot): no waits to give, and the summary prints
    nothing = measures | {"pool_loading_factor": 0.0, "throughput_per_hour": 0.0}
    nothing["wait"] = {"mean": None, "p95": None, "never_started": 59}
    assert (
        "Loading factor 0.000 (C = 60 pool s); no job started; 0 jobs per pool hour"
        in format_summary(base | {"measures": nothing})
    )
