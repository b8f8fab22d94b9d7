"""Job policy on a live pool of Ray actors: the spec of tests/virtual/test_job_policy.py
(whose exact timeline is worked out there) at time scale 60, and `mockpool q -hold`
showing why the jobs are held."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from builders.live import point_cli_at, run_cli

from mockpool import Pool
from mockpool.pool.spec import parse_spec

pytestmark = [pytest.mark.live, pytest.mark.slow]

SPEC = (Path(__file__).parent.parent / "data" / "job_policy.toml").read_text()


def test_policies_and_q_hold_on_a_live_pool(ray_session: None, tmp_path: Path) -> None:
    spec = parse_spec(SPEC.replace("[pool]", "[pool]\ntime_scale = 60"), "<policy>")
    with Pool(spec) as pool:
        assert pool.wait(
            lambda: (
                len(pool.jobs("NumHolds == 2")) == 1
                and len(pool.jobs("JobStatus == 5 && ExitCode == 3")) == 1
                and len(pool.jobs("JobStatus == 4", history=True)) == 1
            ),
            30,
        )
        point_cli_at(pool, tmp_path)
        rc, out, err = run_cli(tmp_path, "q", "-hold")
        events = pool.events
        retried = pool.jobs("ClusterId == 2", history=True)
    assert rc == 0, err
    by_kind = Counter((e["kind"], e.get("job")) for e in events if e.get("daemon") != "negotiator")
    assert by_kind[("hold", "1.0")] == 2 and by_kind[("release_hold", "1.0")] == 1
    held_at = [e["t"] for e in events if e["kind"] == "hold" and e.get("job") == "1.0"]
    started = [e["t"] for e in events if e["kind"] == "job_started" and e.get("job") == "1.0"]
    for start, hold in zip(started, held_at, strict=True):  # at the round after 100 s
        # (2 s each way: a live pool's lag, generously: the schedd dates job_started
        # when it takes the startd's answer, which a loaded loop takes late, while the
        # policy reads the start the startd reported)
        assert start + 100 - 2 <= hold < start + 160 + 2
    (job,) = retried
    assert job.eval("NumJobCompletions") == 3 and job.eval("ExitCode") == 1
    assert by_kind[("requeue", "2.0")] == 2
    rows = out.splitlines()
    assert " ID      OWNER          HELD_SINCE  CODE/SUB HOLD_REASON" in rows
    (long_row,) = [r for r in rows if r.startswith("   1.0   alice  ")]
    assert "  46/0   The job exceeded allowed job durat" in long_row  # cut at 79 columns
    (exit_row,) = [r for r in rows if r.startswith("   3.0   alice  ")]
    assert "    3/0   The job attribute OnExitHold expre" in exit_row
    assert "Total for query: 2 jobs; 0 completed, 0 removed, 0 idle, 0 running, 2 held" in out
