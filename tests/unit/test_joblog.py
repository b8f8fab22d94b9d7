"""The schedd core's user log events (services/schedd/joblog.py and the core's hooks):
which log a job writes to, and which events each step of its life queues, at which pool
time, with what; and the shell's appending (services/schedd/logfiles.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from builders.cores import cid
from builders.cores import make_schedd as make
from builders.cores import start_job as start

from mockpool.classad import ClassAd
from mockpool.schedd import userlog as ul
from mockpool.schedd.joblog import log_path, usage_rows
from mockpool.schedd.logfiles import append_user_logs
from mockpool.schedd.records import ActivationOutcome, ClaimOutcome, JobExit, MatchNotice
from mockpool.schedd.schedd import Schedd
from mockpool.schedd.submit import SubmitError, parse_submit

SLEEP = "executable = /bin/sleep\narguments = 60\n"


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "schedd1.sqlite"


def life(s: Schedd) -> list[tuple[int, str, float, dict]]:
    return [(e.code, f"{e.cluster}.{e.proc}", e.t, dict(e.fields)) for e in s.joblog.drain()]


# --------------------------------------------------------------------------- the path


def test_log_path_is_under_iwd_when_relative() -> None:
    assert log_path(ClassAd(UserLog="/u/a/x.log", Iwd="/elsewhere")) == "/u/a/x.log"
    assert log_path(ClassAd(UserLog="x.log", Iwd="/u/a")) == "/u/a/x.log"
    assert log_path(ClassAd(UserLog="../x.log", Iwd="/u/a/b")) == "/u/a/x.log"
    assert log_path(ClassAd(UserLog="x.log")) == "x.log"  # refused when written
    assert log_path(ClassAd(Iwd="/u/a")) is None and log_path(ClassAd(UserLog="")) is None


def test_submit_makes_iwd_and_the_log_absolute_from_the_submitting_folder() -> None:
    def records(text: str, iwd: str = "/home/alice/run") -> tuple[object, object]:
        ad = parse_submit(SLEEP + text + "queue\n", owner="alice", iwd=iwd).procs[0]
        return ad.get("Iwd"), ad.get("UserLog")

    # condor_submit: Iwd is the folder it ran in, or initialdir under it; the log under Iwd
    assert records("log = job.log\n") == ('"/home/alice/run"', '"/home/alice/run/job.log"')
    assert records("initialdir = out\nlog = ../job.log\n") == (
        '"/home/alice/run/out"',
        '"/home/alice/run/job.log"',
    )
    assert records("initialdir = /data\nlog = /logs/j.log\n") == ('"/data"', '"/logs/j.log"')
    assert records("") == ('"/home/alice/run"', None)
    assert records("log = job.log\n", iwd="") == (None, '"job.log"')  # not known: as written


def test_a_submitter_the_schedd_may_not_write_for_is_refused_a_log(path: Path) -> None:
    s = make(path)
    why = "the schedd runs as 'root'"
    with pytest.raises(SubmitError, match=r"^a\.sub: log = \"/u/j\.log\": the schedd runs as"):
        s.submit(SLEEP + "log = /u/j.log\nqueue 2\n", "a.sub", "alice", 0.0, log_refused=why)
    assert s.jobs == {} and s.joblog.drain() == []
    assert s.submit(SLEEP + "queue\n", "a.sub", "alice", 0.0, log_refused=why) == (1, 1)


def test_usage_rows_read_the_job_and_its_slot() -> None:
    job = ClassAd(RequestCpus=2, RequestMemory=100, RequestDisk=10, DiskUsage=43)
    slot = ClassAd(Cpus=2, Memory=128, Disk=1000)
    assert usage_rows(job, slot) == (
        ul.UsageRow("Cpus", None, 2, 2),
        ul.UsageRow("Disk", 43, 10, 1000),
        ul.UsageRow("Memory", None, 100, 128),
    )
    assert usage_rows(job, None)[0] == ul.UsageRow("Cpus", None, 2, None)


# --------------------------------------------------------------------------- the core


def test_a_job_without_a_log_queues_nothing(path: Path) -> None:
    s = make(path)
    s.submit(SLEEP + "queue 3\n", "a.sub", "alice", 1.0)
    claim = start(s, "1.0", 1, 5.0)
    s.on_job_exits([JobExit(claim, 1, 0, 5.0, 65.0)], 65.0)
    assert s.joblog.drain() == []


def test_the_date_format_is_the_pools_knob(path: Path) -> None:
    assert make(path).joblog.format == ul.DateFormat(iso=True, utc=False, sub_second=False)
    s = make(path, config="DEFAULT_USERLOG_FORMAT_OPTIONS = UTC, SUB_SECOND")
    assert s.joblog.format == ul.DateFormat(iso=True, utc=True, sub_second=True)


def test_submit_execute_terminate(path: Path) -> None:
    s = make(path)
    s.submit(
        SLEEP + "log = /u/j.log\nrequest_memory = 100\nbatch_name = b7\nqueue 2\n",
        "a.sub",
        "alice",
        1.0,
    )
    host = "exec1:1"
    slot_ad = ClassAd(Cpus=1, Memory=128, Disk=1000)
    claim = cid(1, host)
    s.on_matches([MatchNotice("alice@mockpool", 1, "slot1@exec1", claim, host, slot_ad)], 4.0)
    s.on_claim_results([ClaimOutcome(claim, True, claim_id=claim, slot_name="slot1@exec1")], 4.5)
    s.on_activation_results([ActivationOutcome(claim, True, start_time=5.0)], 5.5)
    s.on_job_exits([JobExit(claim, 1, 0, 5.0, 65.0, exit_code=3)], 66.0)
    events = s.joblog.drain()
    assert {e.path for e in events} == {"/u/j.log"}
    assert [(e.code, f"{e.cluster}.{e.proc}", e.t, dict(e.fields)) for e in events] == [
        (ul.SUBMIT, "1.0", 1.0, {"host": "<127.0.0.1:9618>", "batch_name": "b7"}),
        (ul.SUBMIT, "1.1", 1.0, {"host": "<127.0.0.1:9618>", "batch_name": "b7"}),
        # the run's start and end as the startd reported them, not when the schedd heard
        (ul.EXECUTE, "1.0", 5.0, {"host": "<exec1:1>", "slot": "slot1@exec1"}),
        (ul.TERMINATED, "1.0", 65.0, {"return_value": 3}),
    ]
    cpus, _disk, memory = events[-1].usage
    assert (cpus.request, cpus.allocated, memory.request, memory.allocated) == (1, 1, 100, 128)


def test_hold_release_remove_and_evictions(path: Path) -> None:
    s = make(path)
    s.submit(SLEEP + "log = /u/j.log\nqueue 3\n", "a.sub", "alice", 0.0)
    s.joblog.drain()
    c0 = start(s, "1.0", 1, 10.0)
    s.act("hold", ["1.0"], "", "", "alice", 20.0)
    s.act("release", ["1.0"], "", "", "alice", 30.0)
    c1 = start(s, "1.0", 2, 40.0)
    s.on_job_exits([JobExit(c1, 1, 0, 40.0, 50.0, reason="preempted")], 51.0)
    c2 = start(s, "1.0", 3, 60.0)
    s.on_claims_lost([c2], 70.0)
    s.act("remove", ["1.0"], "", "gone", "alice", 80.0)
    assert c0 != c1
    assert life(s) == [
        (ul.EXECUTE, "1.0", 10.0, {"host": "<exec1:1>", "slot": "slot1@exec1"}),
        (
            ul.HELD,
            "1.0",
            20.0,
            {"reason": "via condor_hold (by user alice)", "code": 1, "subcode": 0},
        ),
        (ul.RELEASED, "1.0", 30.0, {"reason": "via condor_release (by user alice)"}),
        (ul.EXECUTE, "1.0", 40.0, {"host": "<exec1:1>", "slot": "slot2@exec1"}),
        (ul.EVICTED, "1.0", 50.0, {"reason": "preempted"}),
        (ul.EXECUTE, "1.0", 60.0, {"host": "<exec1:1>", "slot": "slot3@exec1"}),
        (
            ul.RECONNECT_FAILED,
            "1.0",
            70.0,
            {"reason": "Job not found at execution machine", "startd": "exec1"},
        ),
        (ul.ABORTED, "1.0", 80.0, {"reason": "gone"}),
    ]


def test_policy_requeue_and_vacate(path: Path) -> None:
    s = make(path, config="PERIODIC_EXPR_INTERVAL = 10")
    s.submit(
        SLEEP + "log = /u/j.log\non_exit_remove = false\nperiodic_vacate = NumJobStarts == 2\n"
        "queue\n",
        "a.sub",
        "alice",
        0.0,
    )
    s.joblog.drain()
    claim = start(s, "1.0", 1, 1.0)
    s.on_job_exits([JobExit(claim, 1, 0, 1.0, 5.0, exit_code=7)], 5.0)
    start(s, "1.0", 2, 6.0)
    s.policy_round(s.policy_due(10.0), 10.0)
    got = life(s)
    assert [(code, t) for code, _, t, _ in got] == [
        (ul.EXECUTE, 1.0),
        (ul.EVICTED, 5.0),
        (ul.EXECUTE, 6.0),
        (ul.EVICTED, 10.0),
    ]
    requeued, vacated = got[1][3], got[3][3]
    assert requeued["requeued"] and requeued["return_value"] == 7
    assert vacated["code"] == 1000 and "PeriodicVacate" in vacated["reason"]


def test_lease_expiry_is_a_failed_reconnect(path: Path) -> None:
    s = make(path)
    s.submit(SLEEP + "log = /u/j.log\njob_lease_duration = 60\nqueue\n", "a.sub", "alice", 0.0)
    start(s, "1.0", 1, 0.0)
    s.joblog.drain()
    s.alive_round(61.0)  # nothing heard from the startd for the whole lease
    (event,) = life(s)
    assert event[:3] == (ul.RECONNECT_FAILED, "1.0", 61.0)
    assert event[3]["reason"].startswith("Job disconnected too long: JobLeaseDuration (60 seconds)")


# --------------------------------------------------------------------------- the files


def test_appends_to_new_empty_and_log_files(tmp_path: Path) -> None:
    new, empty, old = tmp_path / "new.log", tmp_path / "empty.log", tmp_path / "old.log"
    empty.write_text("")
    old.write_text("000 (001.000.000) 2026-11-28 08:00:00 Job submitted from host: <h>\n...\n")
    text = "009 (001.000.000) 2026-11-28 08:00:01 Job was aborted.\n...\n"
    assert append_user_logs({str(p): text for p in (new, empty, old)}) == {}
    assert new.read_text() == empty.read_text() == text
    assert old.read_text().endswith("...\n" + text)


def test_refuses_what_is_not_a_user_log_and_goes_on(tmp_path: Path) -> None:
    other = tmp_path / "notes.txt"
    other.write_text("my notes\n")
    link = tmp_path / "link.log"
    link.symlink_to(tmp_path / "target.log")
    fifo = tmp_path / "fifo.log"
    os.mkfifo(fifo)
    good = tmp_path / "good.log"
    errors = append_user_logs(
        {
            "relative.log": "x",
            str(other): "x",
            str(link): "x",
            str(fifo): "x",
            str(tmp_path / "no" / "dir.log"): "x",
            str(tmp_path): "x",
            str(good): "000 (1.0.0) x\n...\n",
        }
    )
    assert errors == {
        "relative.log": "not an absolute path (relative to a folder the schedd does not know)",
        str(other): "not a job event log: not appended to",
        str(link): "a symbolic link: not followed",
        str(fifo): "not a regular file",
        str(tmp_path / "no" / "dir.log"): "No such file or directory",
        str(tmp_path): "Is a directory",
    }
    assert other.read_text() == "my notes\n" and not (tmp_path / "target.log").exists()
    assert good.read_text() == "000 (1.0.0) x\n...\n"
