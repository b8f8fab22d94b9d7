"""``log = job.log`` on a live pool, through ``mockpool submit`` run in the job's folder:
HTCondor's reader finds the job's submit, execute and terminated events, dated as its
ads date them (the virtual twin, with holds and removals: tests/virtual/test_user_log_virtual.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from builders.live import QuietPool

from mockpool.auth import Role
from mockpool.pool.serve import token_path

htcondor2 = pytest.importorskip("htcondor2")


def test_a_job_submitted_from_its_folder_writes_its_log_there(
    quiet_pool: QuietPool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pool = quiet_pool.pool
    admin_token = token_path(quiet_pool.home, Role.ADMIN)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "job.sub").write_text(
        "executable = /bin/sleep\narguments = 20\nrequest_memory = 100\n"
        "log = logs/../job.log\n+MockExitCode = 3\nqueue\n"
    )
    # alice's token: the schedd, running as this process's user, writes no file for her
    rc, out, err = quiet_pool.cli("submit", "job.sub")
    assert rc != 0 and "writes job event logs only for that user" in err, (out, err)
    assert str(tmp_path) not in str(pool.jobs("UserLog =!= undefined"))
    rc, out, err = quiet_pool.cli("submit", "job.sub", "--token", str(admin_token))
    assert rc == 0, err
    cluster = int(out.split("cluster ")[1].rstrip(".\n"))
    done = f"ClusterId == {cluster}"
    assert pool.wait(lambda: bool(pool.jobs(done, history=True)), 60)
    (ad,) = pool.jobs(done, history=True)
    log = tmp_path / "job.log"
    assert ad.get_value("UserLog") == str(log)
    assert pool.wait(lambda: log.is_file() and log.read_text().count("...\n") == 3, 10)
    events = list(htcondor2.JobEventLog(str(log)).events(0))
    assert [(int(e.type), e.cluster, e.proc) for e in events] == [
        (0, cluster, 0),
        (1, cluster, 0),
        (5, cluster, 0),
    ]
    assert [e.timestamp for e in events] == [
        ad.get_value(name) for name in ("QDate", "JobStartDate", "CompletionDate")
    ]
    assert events[0]["SubmitHost"] == pool.ads("Scheduler")[0].get_value("MyAddress")
    assert events[2]["ReturnValue"] == 3
