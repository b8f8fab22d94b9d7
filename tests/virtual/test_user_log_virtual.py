"""``log = job.log`` end to end in virtual time: the schedd writes each job's event log,
and HTCondor's own reader (htcondor2.JobEventLog) finds every event of its life, in
order, dated as the job's ads date them (the pool's start date plus pool seconds)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mockpool import Pool
from mockpool.pool.spec import parse_spec

htcondor2 = pytest.importorskip("htcondor2")

SPEC = """
[pool]
clock = "virtual"
seed = 0

[config]
NEGOTIATOR_INTERVAL = 20

[[startds]]
count = 1
config = '''
NUM_CPUS = 2
SLOT_TYPE_0_PARTITIONABLE = False
'''
"""

JOB = "executable = /bin/sleep\nrequest_memory = 100\nlog = job.log\n"


def test_a_jobs_life_in_its_event_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # condor_submit's folder: the relative log is under it
    with Pool(parse_spec(SPEC, "<userlog>")) as pool:
        base = int(pool.start_date)
        pool.submit(JOB + "arguments = 30\n+MockExitCode = 4\nqueue\n", owner="alice")
        pool.submit(JOB + "arguments = 1000\nqueue\n", owner="alice")
        # a log that cannot be written: reported once, and the job is queued all the same
        missing = JOB.replace("job.log", "no/such/folder/x.log")
        pool.submit(missing + "hold = true\nqueue 2\n", owner="alice")

        def running() -> bool:
            return len(pool.jobs("ClusterId == 2 && JobStatus == 2")) == 1

        assert pool.wait(running, 100)
        pool.sleep_until(pool.now + 10)
        assert pool.act("hold", ["2.0"])[0].ok
        pool.sleep_until(pool.now + 10)
        assert pool.act("release", ["2.0"])[0].ok
        assert pool.wait(lambda: running() and pool.now > 60, 200)
        assert pool.wait(lambda: len(pool.jobs("ClusterId == 1", history=True)) == 1, 100)
        assert pool.act("remove", ["2.0"])[0].ok
        assert pool.wait(lambda: len(pool.jobs("ClusterId == 2", history=True)) == 1, 100)
        ads = {int(a.get_value("ClusterId")): a for a in pool.jobs(history=True)}
        failed = [e for e in pool.events if e["kind"] == "user_log_failed"]
        assert len(pool.jobs("ClusterId == 3")) == 2
        end = base + int(pool.now) + 1

    log = tmp_path / "job.log"
    assert [(e["job"], e["path"], e["error"]) for e in failed] == [
        ("3.0", str(tmp_path / "no/such/folder/x.log"), "No such file or directory")
    ]
    assert ads[1].get_value("UserLog") == str(log) and ads[1].get_value("Iwd") == str(tmp_path)
    events = list(htcondor2.JobEventLog(str(log)).events(0))
    by_job = {c: [(int(e.type), e.timestamp, e) for e in events if e.cluster == c] for c in (1, 2)}
    # job 1: submitted, run, terminated with its exit code; dated as its ads are
    one = by_job[1]
    assert [code for code, _, _ in one] == [0, 1, 5]
    assert [t for _, t, _ in one] == [
        ads[1].get_value("QDate"),
        ads[1].get_value("JobStartDate"),
        ads[1].get_value("CompletionDate"),
    ]
    assert one[2][2]["ReturnValue"] == 4 and one[2][2]["TerminatedNormally"]
    assert one[1][2]["SlotName"] == ads[1].get_value("LastRemoteHost")
    # job 2: submitted, run, held, released, run again, removed
    two = by_job[2]
    assert [code for code, _, _ in two] == [0, 1, 12, 13, 1, 9]
    assert two[2][2]["HoldReasonCode"] == 1
    assert two[2][2]["HoldReason"] == ads[2].get_value("LastHoldReason")
    assert two[3][2]["Reason"] == ads[2].get_value("ReleaseReason")
    assert two[5][2]["Reason"] == ads[2].get_value("RemoveReason")
    assert two[4][1] == ads[2].get_value("JobCurrentStartDate")
    # the whole file in the order things happened, within the pool's run
    times = [e.timestamp for e in events]
    assert times == sorted(times) and base <= times[0] and times[-1] <= end
    assert log.read_text().startswith("000 (001.000.000) 2026-")
