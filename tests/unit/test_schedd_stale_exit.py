"""The schedd core and a job exit for a claim it gave up (a startd back from a long pause
reports what it found): no completion, no history entry, an event that says so. Lease
300, last heard at 100: the schedd gives up at 400."""

from __future__ import annotations

from pathlib import Path

import pytest
from builders.cores import job_ad, v
from builders.cores import make_schedd as make
from builders.cores import start_job as start

from mockpool.schedd.records import JobExit
from mockpool.schedd.schedd import COMPLETED, IDLE, RUNNING, Schedd

SUB = "executable = /bin/sleep\narguments = 450\njob_lease_duration = 300\nqueue\n"


@pytest.fixture
def given_up(tmp_path: Path) -> tuple[Schedd, str]:
    """Job 1.0 runs from 0 on claim 1 at exec1; the startd last answers at 100 and then
    goes silent: at 400 the schedd gives the claim up and the job is Idle again."""
    s = make(tmp_path / "schedd1.sqlite")
    s.submit(SUB, "a.sub", "alice", 0.0)
    old = start(s, "1.0", 1, 0.0)
    s.on_keepalive_answer([old], [], 100.0)
    assert s.next_keepalive() is not None
    out, _ = s.alive_round(400.0)
    assert out.releases == {"exec1:1": [old]}
    assert v(job_ad(s, "1.0"), "JobStatus") == IDLE
    s.drain_events()
    return s, old


def stale(claim: str) -> JobExit:
    """The paused startd's report, sent when it woke at 1000: the job ran 0..350."""
    return JobExit(claim, 1, 0, 0.0, 350.0, exit_code=0, slot_name="slot1@exec1")


def test_an_exit_of_a_given_up_claim_leaves_an_idle_job_idle(given_up) -> None:  # type: ignore[no-untyped-def]
    s, old = given_up
    out = s.on_job_exits([stale(old)], 1000.0)
    assert not out.releases and not out.activations
    ad = job_ad(s, "1.0")
    assert v(ad, "JobStatus") == IDLE and ad.lookup("NumJobCompletions") is None
    assert len(s.resource_requests()) == 1  # still wants a slot
    assert s.history() == []
    assert s.drain_events() == [
        (
            "job_exit_ignored",
            {
                "job": "1.0",
                "slot": "slot1@exec1",
                "claim": "<exec1:1>#100#1#...",
                "why": "claim not held",
            },
        )
    ]


def test_an_exit_of_a_given_up_claim_does_not_end_the_jobs_new_run(given_up) -> None:  # type: ignore[no-untyped-def]
    """Matched again at 420 on claim 2 at exec2 and running there when the old report
    comes at 1000: it runs on, and completes once, when its own claim says so (at 870)."""
    s, old = given_up
    new = start(s, "1.0", 2, 420.0, host="exec2:1")
    s.drain_events()
    s.on_job_exits([stale(old)], 1000.0)
    ad = job_ad(s, "1.0")
    assert v(ad, "JobStatus") == RUNNING and v(ad, "RemoteHost") == "slot2@exec1"
    assert [k for k, _ in s.drain_events()] == ["job_exit_ignored"]
    s.on_job_exits([JobExit(new, 1, 0, 420.0, 870.0, slot_name="slot2@exec1")], 870.0)
    s.on_job_exits([stale(old)], 1000.0)  # and once more, after the completion
    (done,) = s.history()
    assert v(done, "JobStatus") == COMPLETED and v(done, "NumJobCompletions") == 1
    kinds = [k for k, _ in s.drain_events()]
    assert kinds.count("job_completed") == 1 and kinds[-1] == "job_exit_ignored"
