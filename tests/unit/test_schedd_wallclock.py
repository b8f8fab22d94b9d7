"""RemoteWallClockTime and its checkpoint, as HTCondor's schedd keeps them (wallclock.py):
a round every WALL_CLOCK_CKPT_INTERVAL from the schedd's start writes each running job's
run so far when it is longer than the interval; a schedd that starts again credits the
checkpoint, not the time up to the restart. Every number is worked out by hand."""

from __future__ import annotations

from pathlib import Path

import pytest
from builders.cores import job_ad, v
from builders.cores import make_schedd as make
from builders.cores import start_job as start

from mockpool.schedd.records import JobExit
from mockpool.schedd.schedd import IDLE, RUNNING
from mockpool.schedd.wallclock import checkpoint, credited

SLEEP = "executable = /bin/sleep\narguments = 5000\njob_lease_duration = 120\n"
EVERY = "WALL_CLOCK_CKPT_INTERVAL = 300"


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "schedd1.sqlite"


def test_a_checkpoint_is_the_run_so_far_once_it_is_longer_than_the_interval() -> None:
    assert checkpoint(100.0, 300.0, 300) is None  # 200 s run
    assert checkpoint(100.0, 400.0, 300) is None  # 300 s: not longer (CkptWallClock's >)
    assert checkpoint(100.0, 600.0, 300) == 500.0
    assert checkpoint(100.0, 600.0, 0) is None  # WALL_CLOCK_CKPT_INTERVAL 0: no rounds
    assert credited(40.0, 500.0) == 540.0 and credited(40.0, 0.0) == 40.0


def test_rounds_run_from_the_schedds_start_and_write_the_queue(path: Path) -> None:
    """Schedd started at 0, job activated at 100: the round at 300 (run 200) writes
    nothing, the one at 600 (run 500) writes 500; the next is due at 900."""
    s = make(path, config=EVERY)
    s.submit(SLEEP + "queue\n", "a.sub", "alice", 0.0)
    start(s, "1.0", 1, 100.0)
    assert s.wallclock_next == 300.0
    s.wall_clock_round(299.0)  # not due: nothing
    s.wall_clock_round(300.0)
    assert v(job_ad(s, "1.0"), "WallClockCheckpoint") is None and s.wallclock_next == 600.0
    s.wall_clock_round(600.0)
    assert v(job_ad(s, "1.0"), "WallClockCheckpoint") == 500.0 and s.wallclock_next == 900.0


def test_a_crashed_schedd_credits_the_last_checkpoint_not_the_time_down(path: Path) -> None:
    """Started at 0, job activated at 100, checkpoint 500 at 600, killed at 750 (the claim's
    120 s lease ends at 870, the startd ends it), restarted at 2000: RemoteWallClockTime
    is 500, not 2000 - 100 = 1900; the startd no longer knows the claim, so the job is
    Idle with those 500 s."""
    s = make(path, config=EVERY)
    s.submit(SLEEP + "queue\n", "a.sub", "alice", 0.0)
    c1 = start(s, "1.0", 1, 100.0)
    s.wall_clock_round(300.0)
    s.wall_clock_round(600.0)
    s.queue.close()  # killed at 750: nothing more reaches the queue
    r = make(path, 2000.0, config=EVERY)
    ad = job_ad(r, "1.0")
    assert v(ad, "RemoteWallClockTime") == 500.0 and v(ad, "WallClockCheckpoint") is None
    assert v(ad, "JobStatus") == RUNNING  # until its startd is asked
    r.on_keepalive_answer([c1], [c1], 2000.0)
    ad = job_ad(r, "1.0")
    assert v(ad, "JobStatus") == IDLE and v(ad, "RemoteWallClockTime") == 500.0
    assert r.wallclock_next == 2300.0  # the restarted schedd's rounds run from its start


def test_started_with_the_schedd_the_checkpoint_comes_at_700(path: Path) -> None:
    """Schedd and job both at 100, interval 300: the round at 400 sees a run of exactly
    300 (not longer: no checkpoint), the one at 700 writes 600; killed at 750 and back
    at 2000, the job is credited 600."""
    s = make(path, 100.0, config=EVERY)
    s.submit(SLEEP + "queue\n", "a.sub", "alice", 100.0)
    c1 = start(s, "1.0", 1, 100.0)
    s.wall_clock_round(400.0)
    assert v(job_ad(s, "1.0"), "WallClockCheckpoint") is None
    s.wall_clock_round(700.0)
    s.queue.close()
    r = make(path, 2000.0, config=EVERY)
    r.on_keepalive_answer([c1], [c1], 2000.0)
    assert v(job_ad(r, "1.0"), "RemoteWallClockTime") == 600.0


def test_a_reconnected_job_counts_from_the_reconnect(path: Path) -> None:
    """Checkpoint 500 at 600 (run from 100), killed at 750, back at 800 within the lease
    (2400 s here); the schedd asks its startd at 810, the job reconnects and exits at
    1000. As HTCondor's reconnect shadow, born when the reconnect starts:
    500 + (1000 - 810) = 690; the 150 s after the checkpoint and the 60 s until the
    reconnect are not counted."""
    s = make(path, config=EVERY)
    s.submit(SLEEP.replace("120", "2400") + "queue\n", "a.sub", "alice", 0.0)
    c1 = start(s, "1.0", 1, 100.0)
    s.wall_clock_round(600.0)
    s.queue.close()
    r = make(path, 800.0, config=EVERY)
    assert v(job_ad(r, "1.0"), "RemoteWallClockTime") == 500.0
    assert r.alive_round(810.0)[1] == {"exec1:1": [c1]}  # the reconnect
    r.on_keepalive_answer([c1], [], 810.5)
    r.on_job_exits([JobExit(c1, 1, 0, 100.0, 1000.0)], 1000.0)
    (h,) = r.history()
    assert v(h, "RemoteWallClockTime") == 690.0 and v(h, "JobCurrentStartDate") == 100
    assert v(h, "WallClockCheckpoint") is None


def test_a_run_that_ends_counts_once_and_drops_its_checkpoint(path: Path) -> None:
    """Run 100-700, checkpoint 500 at 600: at the exit RemoteWallClockTime is 600 (the
    checkpoint is not added again) and the checkpoint is gone, here and after a restart."""
    s = make(path, config=EVERY)
    s.submit(SLEEP + "queue 2\n", "a.sub", "alice", 0.0)
    c1 = start(s, "1.0", 1, 100.0)
    c2 = start(s, "1.1", 2, 100.0, host="exec2:1")
    s.wall_clock_round(600.0)
    assert v(job_ad(s, "1.1"), "WallClockCheckpoint") == 500.0
    # 1.1 is evicted at 650 by a lost claim: its 550 s counted, its checkpoint gone
    s.on_claims_lost([c2], 650.0)
    ad = job_ad(s, "1.1")
    assert v(ad, "RemoteWallClockTime") == 550.0 and v(ad, "WallClockCheckpoint") is None
    s.on_job_exits([JobExit(c1, 1, 0, 100.0, 700.0)], 700.0)
    (h,) = s.history()
    assert v(h, "RemoteWallClockTime") == 600.0 and v(h, "WallClockCheckpoint") is None
    s.queue.close()
    r = make(path, 900.0, config=EVERY)  # nothing left to credit
    assert v(job_ad(r, "1.1"), "RemoteWallClockTime") == 550.0


def test_no_rounds_when_the_interval_is_zero(path: Path) -> None:
    s = make(path, config="WALL_CLOCK_CKPT_INTERVAL = 0")
    s.submit(SLEEP + "queue\n", "a.sub", "alice", 0.0)
    start(s, "1.0", 1, 100.0)
    assert s.wallclock_next is None
    s.wall_clock_round(10_000.0)
    assert v(job_ad(s, "1.0"), "WallClockCheckpoint") is None
