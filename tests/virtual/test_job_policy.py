"""Job policy end to end in virtual time: periodic holds and releases, retries and
on-exit holds as a pool carries them out (the rules' own numbers are in
tests/unit/test_schedd_policy.py; the live twin is tests/live/test_job_policy_live.py)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from mockpool import Pool
from mockpool.pool.spec import parse_spec

SPEC = (Path(__file__).parent.parent / "data" / "job_policy.toml").read_text()


def test_policies_hold_release_retry_and_hold_at_exit() -> None:
    with Pool(parse_spec(SPEC.replace("[pool]", '[pool]\nclock = "virtual"'), "<policy>")) as pool:
        assert pool.wait(
            lambda: (
                len(pool.jobs("NumHolds == 2")) == 1
                and len(pool.jobs("JobStatus == 4", history=True)) == 1
            ),
            600,
        )
        pool.sleep_until(pool.now + 600)  # nothing releases the long job a third time
        events = pool.events
        jobs = {f"{j.eval('ClusterId')}.{j.eval('ProcId')}": j for j in pool.all_jobs()}
    by_kind = Counter((e["kind"], e.get("job")) for e in events if e.get("daemon") != "negotiator")

    # 1.0 runs past its allowed 100 s: held (code 46) at a policy round, let go once by
    # SYSTEM_PERIODIC_RELEASE, held again, and then kept held (SYSTEM_MAX_RELEASES 2)
    long = jobs["1.0"]
    assert long.eval("JobStatus") == 5 and long.eval("NumHolds") == 2
    assert long.eval("HoldReasonCode") == 46
    assert long.eval("HoldReason") == "The job exceeded allowed job duration of 01:40"
    # rounds every 60 s: started 5, over 100 s at 105, held at the round of 120;
    # released at 180 (60 s held), started again at once, over at 280, held at 300
    times = {
        k: [e["t"] for e in events if e["kind"] == k and e.get("job") == "1.0"]
        for k in ("hold", "release_hold", "job_started")
    }
    assert times == {"hold": [120.0, 300.0], "release_hold": [180.0], "job_started": [5.0, 180.0]}

    # 2.0 exits 1 each time: run again until it has completed max_retries + 1 = 3 times
    retried = jobs["2.0"]
    assert retried.eval("JobStatus") == 4 and retried.eval("NumJobCompletions") == 3
    assert retried.eval("ExitCode") == 1
    assert by_kind[("requeue", "2.0")] == 2 and by_kind[("job_completed", "2.0")] == 1
    assert by_kind[("job_exit", "2.0")] == 3  # three runs, each ended by the startd

    # 3.0 exits 3: held at its exit, the exit code kept
    at_exit = jobs["3.0"]
    assert at_exit.eval("JobStatus") == 5 and at_exit.eval("HoldReasonCode") == 3
    assert at_exit.eval("ExitCode") == 3 and at_exit.eval("NumJobCompletions") == 1
    assert at_exit.eval("HoldReason") == (
        "The job attribute OnExitHold expression 'ExitCode == 3' evaluated to TRUE"
    )
