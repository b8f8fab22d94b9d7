"""The schedd's SQLite queue: durable, write-before-acknowledge, restartable."""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path

import pytest

from mockpool.config import parse_config
from mockpool.schedd.queue import Batch, JobQueue, QueueError
from mockpool.schedd.schedd import COMPLETED, Schedd

SUB = "executable = /bin/sleep\narguments = 60\nqueue 3\n"


def make(path: Path, now: float = 0.0) -> Schedd:
    return Schedd("schedd1", JobQueue(path), parse_config("", "<test>"), now)


def test_fresh_queue_starts_at_cluster_1(tmp_path: Path) -> None:
    q = JobQueue(tmp_path / "q.sqlite", birth=5.0)
    assert q.next_cluster_id == 1
    assert q.birth == 5.0
    assert q.load_jobs() == []
    q.close()


def test_wal_and_full_sync(tmp_path: Path) -> None:
    q = JobQueue(tmp_path / "q.sqlite")
    assert q._db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert q._db.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    q.close()


def test_queue_folder_and_files_are_owner_only_even_with_an_open_umask(tmp_path: Path) -> None:
    old = os.umask(0)  # the most permissive umask: files must still be 0600, folders 0700
    try:
        q = JobQueue(tmp_path / "state" / "schedd" / "q.sqlite")
        q.apply(Batch(clusters={1: {"Cmd": '"/bin/sleep"'}}, jobs={(1, 0): {"ProcId": "0"}}))
    finally:
        os.umask(old)
    files = sorted(p.name for p in (tmp_path / "state" / "schedd").iterdir())
    assert files == ["q.sqlite", "q.sqlite-shm", "q.sqlite-wal"]  # WAL and SHM while open
    for name in files:
        assert stat.S_IMODE(os.stat(tmp_path / "state" / "schedd" / name).st_mode) == 0o600, name
    for d in (tmp_path / "state", tmp_path / "state" / "schedd"):
        assert stat.S_IMODE(os.stat(d).st_mode) == 0o700
    q.close()


def test_reopen_restores_jobs_next_cluster_and_history(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    s = make(path, 10.0)
    assert s.submit(SUB, "a.sub", "alice", 10.0) == (1, 3)
    # job 1.0 leaves the queue (removed while idle: straight to history)
    results, _ = s.act("remove", ["1.0"], "", "", "alice", 20.0)
    assert results[0].ok
    before = {ad.get_value("ProcId"): str(ad) for ad in s.query()}
    s.queue.close()

    s2 = make(path, 30.0)
    after = {ad.get_value("ProcId"): str(ad) for ad in s2.query()}
    assert after == before
    assert sorted(after) == [1, 2]
    # the next cluster id continues after a restart
    assert s2.submit(SUB, "b.sub", "bob", 31.0) == (2, 3)
    hist = s2.history()
    assert [(h.get_value("ClusterId"), h.get_value("ProcId")) for h in hist] == [(1, 0)]
    assert hist[0].get_value("JobStatus") == 3
    assert hist[0].get_value("RemoveReason") == "via condor_rm (by user alice)"
    s2.queue.close()


def test_write_before_acknowledge(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    s = make(path)
    s.submit(SUB, "a.sub", "alice", 10.0)
    # a second, independent connection sees the rows as soon as submit returned
    other = sqlite3.connect(str(path))
    rows = other.execute("SELECT cluster, proc FROM jobs ORDER BY proc").fetchall()
    assert rows == [(1, 0), (1, 1), (1, 2)]
    (meta,) = other.execute("SELECT value FROM meta WHERE key = 'next_cluster_id'").fetchone()
    assert meta == "2"
    other.close()
    s.queue.close()


def test_job_rows_hold_only_their_own_attributes(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    s = make(path)
    s.submit(SUB, "a.sub", "alice", 10.0)
    q = s.queue
    jobs = q.load_jobs()
    assert jobs[1] == (1, 1, {"ProcId": "1", "GlobalJobId": '"schedd1#1.1#10"'})
    cluster = q.load_clusters()[1]
    assert cluster["Cmd"] == '"/bin/sleep"' and "ProcId" not in cluster
    q.close()


def test_completed_job_reaches_history_and_cluster_row_goes(tmp_path: Path) -> None:
    from mockpool.schedd.records import ActivationOutcome, ClaimOutcome, JobExit, MatchNotice

    path = tmp_path / "s.sqlite"
    s = make(path)
    s.submit("executable = /bin/sleep\narguments = 5\nqueue\n", "a.sub", "alice", 0.0)
    s.on_matches([MatchNotice("alice@mockpool", 1, "slot1@m", "<m:1>#1#1#x", "m:1")], 1.0)
    s.on_claim_results([ClaimOutcome("<m:1>#1#1#x", True, claim_id="<m:1>#1#1#x")], 1.0)
    s.on_activation_results([ActivationOutcome("<m:1>#1#1#x", True, start_time=1.0)], 1.0)
    s.on_job_exits([JobExit("<m:1>#1#1#x", 1, 0, 1.0, 6.0)], 6.0)
    assert s.query() == []
    q = s.queue
    assert q.load_jobs() == [] and q.load_clusters() == {} and q.load_claims() == []
    (h,) = s.history()
    assert h.get_value("JobStatus") == COMPLETED
    q.close()


def test_not_a_database_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "junk.sqlite"
    path.write_bytes(b"this is not a database, just some text" * 100)
    with pytest.raises(QueueError, match=r"junk\.sqlite"):
        JobQueue(path)


def test_other_schema_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    JobQueue(path).close()
    db = sqlite3.connect(str(path))
    db.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    with pytest.raises(QueueError, match="schema version 99"):
        JobQueue(path)


def test_unreadable_rows_cost_only_their_own_jobs(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    s = make(path)
    s.submit("executable = /bin/sleep\narguments = 60\nqueue 2\n", "a.sub", "alice", 0.0)
    s.act("remove", ["1.1"], "", "", "alice", 1.0)
    s.queue.close()
    db = sqlite3.connect(str(path))
    db.execute("INSERT INTO jobs (cluster, proc, ad) VALUES (7, 0, '{broken')")
    db.execute("INSERT INTO clusters (cluster, ad) VALUES (8, '[1, 2]')")
    db.execute("INSERT INTO jobs (cluster, proc, ad) VALUES (8, 0, '{}')")
    db.execute("INSERT INTO jobs (cluster, proc, ad) VALUES (1, 5, '{\"ProcId\": 5}')")
    db.execute("INSERT INTO history (cluster, proc, ad) VALUES (6, 0, 'null')")
    db.execute("INSERT INTO history (cluster, proc, ad) VALUES (6, 1, '{\"A\": null}')")
    db.commit()
    db.close()
    s = make(path)  # starts: the damaged rows are reported and left as they are
    assert [a.get_value("ProcId") for a in s.query()] == [0]
    assert [a.get_value("ProcId") for a in s.history()] == [1]
    bad = sorted((f["job"], f["problem"]) for k, f in s.drain_events() if k == "bad_record")
    assert bad == [
        ("1.5", "unreadable row"),
        ("6.0", "unreadable row"),
        ("6.1", "A: no value"),
        ("7.0", "no cluster ad"),
        ("8.0", "cluster ad: unreadable row"),
    ]
    assert s.queue.next_cluster_id == 9  # never reuses a damaged row's cluster id
    s.queue.close()


def test_failed_batch_changes_nothing(tmp_path: Path) -> None:
    q = JobQueue(tmp_path / "q.sqlite")
    q.apply(
        Batch(
            clusters={1: {"A": "1"}}, jobs={(1, 0): {"ProcId": "0"}}, meta={"next_cluster_id": "2"}
        )
    )
    bad = Batch(jobs={(2, 0): {"ProcId": "0"}}, meta={"next_cluster_id": "3"})
    bad.request = ("r1", 2, 1)
    q._db.execute(
        "CREATE TRIGGER boom BEFORE INSERT ON requests BEGIN SELECT RAISE(ABORT, 'boom'); END"
    )
    with pytest.raises(QueueError, match="boom"):
        q.apply(bad)
    assert q.next_cluster_id == 2
    assert [(c, p) for c, p, _ in q.load_jobs()] == [(1, 0)]
    q.close()


def test_ten_thousand_jobs_in_one_submit_survive_a_reopen(tmp_path: Path) -> None:
    # The speed of this submit is measured by bench/queue_snapshot.py, not asserted here.
    s = make(tmp_path / "s.sqlite")
    assert s.submit(
        "executable = /bin/sleep\narguments = 60\nqueue 10000\n", "a.sub", "alice", 0.0
    ) == (1, 10000)
    assert s.status()["idle"] == 10000
    s.queue.close()
    s2 = make(tmp_path / "s.sqlite")
    assert s2.status()["idle"] == 10000
    (req,) = s2.resource_requests()
    assert req.get_value("ResourceRequestCount") == 10000
    s2.queue.close()
