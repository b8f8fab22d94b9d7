"""mockpool sweep: the grid, the table (means and 95% intervals), resuming, bad input."""

from __future__ import annotations

import csv
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mockpool.pool.sweep import Point, SweepError, aggregate, parse_set, plan, run_sweep

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_parse_set() -> None:
    assert parse_set("NEGOTIATOR_INTERVAL=30, 60,120") == (
        "NEGOTIATOR_INTERVAL",
        ["30", "60", "120"],
    )
    assert parse_set("negotiator.NEGOTIATOR_INTERVAL=5")[1] == ["5"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("NOT_A_KNOB_AT_ALL=1", "not a configuration knob"),
        ("NEGOTIATOR_INTERVAL=", "needs values"),
        ("NEGOTIATOR_INTERVAL=30,,60", "needs values"),
        ("NEGOTIATOR_INTERVAL", "expected KNOB=VALUE"),
        ("NEGOTIATOR_INTERVAL=30,30", "given twice"),
    ],
)
def test_bad_sets_are_refused(text: str, message: str) -> None:
    with pytest.raises(SweepError, match=message):
        parse_set(text)


def test_plan_is_the_grid_times_the_seeds() -> None:
    points = plan([("A", ["1", "2"]), ("B", ["x", "y", "z"])], [7, 8])
    assert len(points) == 12
    assert points[0] == Point((("A", "1"), ("B", "x")), 7)
    assert points[1] == Point((("A", "1"), ("B", "x")), 8)
    assert points[-1].name == "A-2__B-z__seed8"
    with pytest.raises(SweepError, match="given twice"):
        plan([("A", ["1"]), ("a", ["2"])], [0])


def test_aggregate_means_and_student_intervals() -> None:
    p = Point((("NEGOTIATOR_INTERVAL", "60"),), 0)
    lf = [0.5, 0.7, 0.6]
    rows = aggregate([(p, {"measures": {"pool_loading_factor": v}, "cycles": 10}) for v in lf])
    (row,) = rows
    # mean 0.6, sd 0.1, t(0.975, 2) = 4.303: 4.303 x 0.1 / sqrt(3) = 0.24844
    assert row["loading_factor"] == pytest.approx(0.6)
    assert row["loading_factor_ci95"] == pytest.approx(4.303 * 0.1 / math.sqrt(3), abs=1e-5)
    assert row["cycles"] == 10 and row["cycles_ci95"] == 0
    assert row["wait_mean_s"] is None and row["seeds"] == 3


def test_a_sweep_runs_every_point_and_resumes(tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    calls: list[tuple[int, int, int]] = []
    rows = run_sweep(
        str(EXAMPLES / "pslot.toml"),
        [("NEGOTIATOR_INTERVAL", ["30", "60"])],
        seeds=2,
        out=out,
        workers=1,
        progress=lambda *a: calls.append(a),
    )
    assert [r["NEGOTIATOR_INTERVAL"] for r in rows] == ["30", "60"]
    assert all(r["seeds"] == 2 and r["jobs_completed"] == 15 for r in rows)
    # a shorter interval means more cycles in the spec's 300 s
    assert rows[0]["cycles"] > rows[1]["cycles"]
    assert calls[-1] == (4, 4, 0)
    table = json.loads((out / "sweep.json").read_text())
    assert table["knobs"] == {"NEGOTIATOR_INTERVAL": ["30", "60"]} and table["seeds"] == [1, 2]
    with (out / "sweep.csv").open() as f:
        assert len(list(csv.DictReader(f))) == 2
    # interrupted: one point's run is gone; a second run redoes only that one
    shutil.rmtree(out / "points" / "NEGOTIATOR_INTERVAL-60__seed2")
    calls.clear()
    again = run_sweep(
        str(EXAMPLES / "pslot.toml"),
        [("NEGOTIATOR_INTERVAL", ["30", "60"])],
        seeds=2,
        out=out,
        workers=1,
        progress=lambda *a: calls.append(a),
    )
    assert calls[0] == (3, 4, 3) and calls[-1] == (4, 4, 3)
    assert again == rows  # virtual time: the rerun point gives the same numbers


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mockpool.cli.main", "sweep", *args],
        capture_output=True,
        text=True,
        env={**os.environ},
        timeout=300,
    )


def test_the_cli_runs_points_in_parallel_worker_processes(tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    spec = str(EXAMPLES / "pslot.toml")
    proc = _cli(spec, "--set", "NEGOTIATOR_INTERVAL=30,60", "--workers", "2", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "NEGOTIATOR_INTERVAL" in proc.stdout and "LOADING_FACTOR" in proc.stdout
    rows = json.loads((out / "sweep.json").read_text())["table"]
    assert [r["jobs_completed"] for r in rows] == [15, 15]


def test_the_cli_refuses_bad_values_before_running(tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mockpool.cli.main",
            "sweep",
            str(EXAMPLES / "pslot.toml"),
            "--set",
            "NEGOTIATOR_INTERVAL=60,-5",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        env={**os.environ},
        timeout=120,
    )
    assert proc.returncode == 2
    assert "NEGOTIATOR_INTERVAL=-5" in proc.stderr and "must be a number >= 0" in proc.stderr
    assert not (out / "points").exists()


def test_the_report_of_a_sweep_plots_each_knob(tmp_path: Path) -> None:
    from mockpool.pool.plots import write_report

    out = tmp_path / "sweep"
    run_sweep(
        str(EXAMPLES / "pslot.toml"),
        [("NEGOTIATOR_INTERVAL", ["30", "60"]), ("UPDATE_INTERVAL", ["60", "120"])],
        seeds=1,
        out=out,
        workers=1,
    )
    page = write_report(out).read_text()
    # each knob, and the saw-tooth (every point ran jobs of one duration)
    assert page.count("<img") == 3
    assert "Loading factor against job duration" in page
    assert "Each measure against NEGOTIATOR_INTERVAL" in page
    assert "Each measure against UPDATE_INTERVAL" in page


def test_a_cadence_sweep_shows_the_interval_trade_off_and_what_reschedules_save(
    tmp_path: Path,
) -> None:
    # examples/workload.toml: two submitters (a batch of 90 s jobs and a Poisson stream
    # in a group). Each submit asks the negotiator for a cycle once the schedd's ads are
    # out (condor_submit's reschedule): the stream's jobs need not wait for the interval.
    # Without those reschedules (SCHEDD_SEND_RESCHEDULE = False), a longer
    # NEGOTIATOR_INTERVAL means fewer cycles (less negotiator load) and longer waits.
    rows = run_sweep(
        str(EXAMPLES / "workload.toml"),
        [
            ("NEGOTIATOR_INTERVAL", ["20", "60", "180"]),
            ("SCHEDD_SEND_RESCHEDULE", ["true", "false"]),
        ],
        seeds=3,
        out=tmp_path / "sweep",
        workers=1,
    )
    by = {(r["NEGOTIATOR_INTERVAL"], r["SCHEDD_SEND_RESCHEDULE"]): r for r in rows}
    assert all(r["seeds"] == 3 for r in rows)
    quiet = [by[i, "false"] for i in ("20", "60", "180")]
    asked = [by[i, "true"] for i in ("20", "60", "180")]
    assert quiet[0]["cycles"] > quiet[1]["cycles"] > quiet[2]["cycles"]
    assert quiet[0]["wait_mean_s"] < quiet[1]["wait_mean_s"] < quiet[2]["wait_mean_s"]
    # the reschedules add cycles to a long interval and keep the waits of a short one
    assert asked[2]["cycles"] > quiet[2]["cycles"]
    assert asked[2]["wait_mean_s"] < quiet[2]["wait_mean_s"]
    assert abs(asked[2]["wait_mean_s"] - asked[0]["wait_mean_s"]) < asked[0]["wait_mean_s_ci95"]
    for r in rows:  # three seeds: an interval around every mean
        assert r["loading_factor_ci95"] is not None and r["wait_mean_s_ci95"] > 0


def test_a_workload_parameter_can_be_swept(tmp_path: Path) -> None:
    assert parse_set("workload.tuned.duration.sigma=0,40") == (
        "workload.tuned.duration.sigma",
        ["0", "40"],
    )
    rows = run_sweep(
        str(EXAMPLES / "tuning.toml"),
        [("workload.tuned.duration.sigma", ["0", "40"])],
        out=tmp_path / "sweep",
        workers=1,
    )
    lf = {r["workload.tuned.duration.sigma"]: r["loading_factor"] for r in rows}
    assert lf["0"] == pytest.approx(0.9, abs=0.01) and lf["40"] < 0.85


@pytest.mark.parametrize(
    ("knob", "message"),
    [
        ("workload.nosuch.jobs=1", "NAME one of tuned"),
        ("workload.tuned.owner.first=x", "workload.tuned.owner is not a table"),
        ("workload.tuned.duration.sigma=-5", "sigma"),
    ],
)
def test_bad_workload_parameters_are_refused_before_running(
    tmp_path: Path, knob: str, message: str
) -> None:
    with pytest.raises(SweepError, match=message):
        run_sweep(str(EXAMPLES / "tuning.toml"), [parse_set(knob)], out=tmp_path / "s")
    assert not (tmp_path / "s").exists()


def test_a_sweep_on_a_cluster_refuses_live_points_and_an_unreachable_address(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--address` runs virtual points as Ray tasks (tests/live/ray_cluster_run.py runs
    one on two nodes); a live point is a pool of actors, refused; a cluster that does not
    answer fails in seconds, before anything runs."""
    from mockpool.cli.main import main

    spec = str(EXAMPLES / "pslot.toml")
    with pytest.raises(SweepError, match="a live point is a pool of Ray actors"):
        run_sweep(
            spec, [("NEGOTIATOR_INTERVAL", ["30"])], clock="live", out=tmp_path, address="auto"
        )
    argv = ["sweep", spec, "--set", "NEGOTIATOR_INTERVAL=30", "--out", str(tmp_path / "s")]
    assert main([*argv, "--address", "127.0.0.1:1"]) == 2
    assert "cannot reach the Ray cluster at 127.0.0.1:1" in capsys.readouterr().err
    assert not list((tmp_path / "s" / "points").iterdir())


def test_a_points_packed_folder_is_unpacked_whole(tmp_path: Path) -> None:
    """What a Ray task hands back (the point's folder, packed) lands as a local sweep
    writes it: the folder appears only once whole, and a stale .partial is replaced."""
    import io
    import tarfile

    from mockpool.pool.sweepray import unpack_point

    src = tmp_path / "src"
    src.mkdir()
    (src / "summary.json").write_text('{"cycles": 3}')
    (src / "node.json").write_text('{"node_id": "abc"}')
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.add(src, arcname=".")
    final = tmp_path / "points" / "A-1__seed0"
    (tmp_path / "points" / "A-1__seed0.partial").mkdir(parents=True)  # an earlier crash
    assert unpack_point(buf.getvalue(), final) == {"cycles": 3}
    assert sorted(p.name for p in final.iterdir()) == ["node.json", "summary.json"]
    assert not final.with_name("A-1__seed0.partial").exists()


def test_a_sweep_on_a_cluster_resumes_with_the_points_not_yet_on_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With --address, only the points missing from OUT/points go to the cluster (here a
    stand-in for sweepray.run_on_cluster, which writes what a task would hand back)."""
    from mockpool.pool import sweepray

    asked: list[list[str]] = []

    def cluster(address: str, points: list, folders: Path, done: object) -> None:
        asked.append([p.name for p, _spec in points])
        for p, _spec in points:
            (folders / p.name).mkdir()
            (folders / p.name / "summary.json").write_text('{"cycles": 4}')
            done(p, {"cycles": 4})  # type: ignore[operator]

    monkeypatch.setattr(sweepray, "run_on_cluster", cluster)
    spec, sets = str(EXAMPLES / "pslot.toml"), [("NEGOTIATOR_INTERVAL", ["30", "60"])]
    rows = run_sweep(spec, sets, seeds=2, out=tmp_path, address="auto")
    assert len(asked[0]) == 4 and [r["cycles"] for r in rows] == [4, 4]
    shutil.rmtree(tmp_path / "points" / asked[0][1])
    run_sweep(spec, sets, seeds=2, out=tmp_path, address="auto")
    assert asked[1] == [asked[0][1]]
    run_sweep(spec, sets, seeds=2, out=tmp_path, address="auto")
    assert len(asked) == 2  # nothing left to run: the cluster is not asked at all
