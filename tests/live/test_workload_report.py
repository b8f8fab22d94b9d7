"""End to end: a [[workload]] spec run on a live pool with --report, its measures and page."""

from __future__ import annotations

import base64
import csv
import json
import re
from pathlib import Path

import pytest

from mockpool.cli.main import main

pytestmark = [pytest.mark.live, pytest.mark.slow]

SPEC = """\
[pool]
time_scale = 40
duration = 240
seed = 5

[config]
NEGOTIATOR_INTERVAL = 20
UPDATE_INTERVAL = 20
GROUP_NAMES = "group_a"
GROUP_QUOTA_group_a = 2

[[startds]]
count = 1
config = '''
NUM_CPUS = 4
MEMORY = 4096
'''

[[schedds]]
count = 1

[[workload]]
name = "fixed"
owner = "alice"
jobs = 8
duration = 30

[[workload]]
name = "trickle"
owner = "bob"
accounting_group = "group_a"
jobs = 4
duration = { dist = "empirical", values = [30] }  # one duration class with alice's
arrival = { kind = "poisson", rate = 0.1, start = 10 }
"""


def test_a_workload_run_writes_measures_series_and_report(
    ray_session: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "pool.toml"
    spec.write_text(SPEC)
    out = tmp_path / "out"
    assert main(["run", str(spec), "--out", str(out), "--report"]) == 0
    assert "Report written to" in capsys.readouterr().out

    summary = json.loads((out / "summary.json").read_text())
    assert summary["jobs_submitted"] == 12 and not summary["workload_errors"]
    m = summary["measures"]
    # 12 short jobs on 4 cpus in 240 pool s: every job runs, none waits forever
    assert m["jobs_finished"] == 12 and m["wait"]["never_started"] == 0
    assert 0 < m["pool_loading_factor"] <= 1
    assert 0 <= m["wait"]["p50"] <= m["wait"]["max"] < 240
    assert m["negotiation_interval"] == pytest.approx(20, abs=5)
    assert m["matches_per_cycle"]["count"] >= 5
    assert {"submitter:alice@mockpool", "submitter:group_a.bob@mockpool", "group:group_a"} <= set(
        m["usage"]
    )
    # group_a's quota of 2 of the pool's 4 cpus, from the negotiator's cycle events
    assert m["usage"]["group:group_a"]["mean_target"] == pytest.approx(0.5)
    assert "time_to_quota" in m["usage"]["group:group_a"]
    assert m["usage"]["submitter:alice@mockpool"]["cpu_seconds"] == pytest.approx(8 * 30, rel=0.05)
    # the fixed-duration jobs form a class with its saw-tooth value beside the measured one
    (fixed,) = m["duration_classes"]
    assert fixed["duration"] == 30 and 0 < fixed["loading_factor"] <= 1
    assert fixed["d_over_c"] == pytest.approx(30 / m["negotiation_interval"], abs=0.01)
    assert m["clock_lag"]["max"] >= 0

    with (out / "jobs.csv").open() as f:
        jobs = list(csv.DictReader(f))
    assert len(jobs) == 12 and all(float(j["wait"]) >= 0 for j in jobs)
    for name in ("slots", "utilisation", "usage", "cycles"):
        assert (out / f"{name}.csv").read_text().count("\n") >= 2, name

    page = (out / "report.html").read_text()
    images = re.findall(r'<img alt="[^"]+" src="data:image/png;base64,([^"]+)"', page)
    assert len(images) == 5
    assert all(base64.b64decode(i).startswith(b"\x89PNG") for i in images)
