"""The schedd core and what users send it: submits on hold, MAX_JOBS_PER_SUBMISSION, item
files sent with a submit, and stored records that cannot be served (issue 7, items 1, 3, 7).

Records "from an old queue" are written straight into the SQLite file, as a queue written
by an earlier mockpool (before numbers were checked at submit) may hold them.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from mockpool.classad import ClassAd, unparse
from mockpool.config import parse_config
from mockpool.schedd.queue import JobQueue
from mockpool.schedd.schedd import HELD, IDLE, Schedd
from mockpool.schedd.submit import SubmitError
from mockpool.v1 import schedd_pb2
from mockpool.wire import ad_to_pb, ads_to_pb

SLEEP = "executable = /bin/sleep\narguments = 60\n"


def _schedd(path: Path, config: str = "") -> Schedd:
    return Schedd("schedd1", JobQueue(path), parse_config(config, "<test>"), 0.0)


def _ids(ads: list[ClassAd]) -> list[str]:
    return [f"{a.get_value('ClusterId')}.{a.get_value('ProcId')}" for a in ads]


def _bad_records(s: Schedd) -> list[tuple[str, str, str]]:
    return [(f["job"], f["where"], f["problem"]) for k, f in s.drain_events() if k == "bad_record"]


# --- submits ----------------------------------------------------------------------------


def test_hold_true_queues_held_jobs_that_release_makes_idle(tmp_path: Path) -> None:
    s = _schedd(tmp_path / "q.sqlite")
    assert s.submit(SLEEP + "hold = true\nqueue 2\n", "a.sub", "alice", 10.0) == (1, 2)
    assert s.status()["held"] == 2 and s.status()["idle"] == 0
    ad = s.query("ProcId == 0")[0]
    assert ad.get_value("JobStatus") == HELD
    assert ad.get_value("HoldReasonCode") == 15
    assert ad.get_value("HoldReason") == "submitted on hold at user's request"
    assert s.resource_requests() == []  # a held job asks for no slot
    results, _ = s.act("release", ["1.0"], "", "", "alice", 20.0)
    assert [r.ok for r in results] == [True]
    ad = s.query("ProcId == 0")[0]
    assert ad.get_value("JobStatus") == IDLE and ad.get("HoldReason") is None
    (req,) = s.resource_requests()
    assert req.get_value("ResourceRequestCount") == 1
    s.queue.close()


def test_max_jobs_per_submission_is_the_schedds_knob(tmp_path: Path) -> None:
    s = _schedd(tmp_path / "q.sqlite", "MAX_JOBS_PER_SUBMISSION = 5")
    with pytest.raises(SubmitError, match=r"^a.sub:3: Number of submitted jobs would exceed"):
        s.submit(SLEEP + "queue 6\n", "a.sub", "alice", 0.0)
    assert s.query() == [] and s.queue.next_cluster_id == 1  # nothing stored
    assert s.submit(SLEEP + "queue 5\n", "a.sub", "alice", 0.0) == (1, 5)
    s.queue.close()


def test_a_schedds_submits_share_the_requirements_they_worked_out(tmp_path: Path) -> None:
    # one job a submit, as a workload's arrivals come: another duration, another owner
    # and cluster read nothing Requirements reads; a request of 1 MiB does
    s = _schedd(tmp_path / "q.sqlite", "APPEND_REQUIREMENTS = TARGET.HasFoo")
    mem = "(TARGET.Memory >= RequestMemory)"
    for args, owner in (("60", "alice"), ("90", "alice"), ("120", "bob")):
        s.submit(f"executable = /bin/sleep\narguments = {args}\nqueue\n", "a.sub", owner, 0.0)
    s.submit("executable = /bin/sleep\nrequest_memory = 1\nqueue\n", "b.sub", "alice", 0.0)
    assert s.requirements_memo.computed == 2
    texts = [unparse(ad.lookup("Requirements")) for ad in s.query()]
    assert all(t.startswith("(TARGET.HasFoo) && ") for t in texts)
    assert [mem in t for t in texts] == [True, True, True, False]
    s.queue.close()


def test_item_files_come_with_the_submit(tmp_path: Path) -> None:
    s = _schedd(tmp_path / "q.sqlite")
    text = "executable = /bin/sleep\narguments = $(t)\nqueue t from secs.txt\n"
    with pytest.raises(SubmitError, match="the file was not sent"):
        s.submit(text, "a.sub", "alice", 0.0)
    assert s.submit(text, "a.sub", "alice", 0.0, item_files={"secs.txt": "5\n7\n"}) == (1, 2)
    assert [a.get_value("MockDuration") for a in s.query()] == [5, 7]
    s.queue.close()


def test_env_comes_with_the_submit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MOCKPOOL_TEST_SECRET", "schedd-secret")
    s = _schedd(tmp_path / "q.sqlite")
    s.submit(SLEEP + '+S = "$ENV(MOCKPOOL_TEST_SECRET)"\nqueue\n', "a.sub", "alice", 0.0)
    s.submit(SLEEP + '+S = "$ENV(MOCKPOOL_TEST_SECRET)"\nqueue\n', "a.sub", "alice", 0.0,
             env={"MOCKPOOL_TEST_SECRET": "mine"})  # fmt: skip
    assert [a.get_value("S") for a in s.query()] == ["", "mine"]
    s.queue.close()


def test_poison_values_are_refused_and_nothing_is_stored(tmp_path: Path) -> None:
    s = _schedd(tmp_path / "q.sqlite")
    for line in ("request_memory = 99999999999999999999", "request_cpus = 1e300"):
        with pytest.raises(SubmitError, match="out of range"):
            s.submit(SLEEP + line + "\nqueue\n", "a.sub", "mallory", 0.0)
    assert s.query() == [] and s.queue.next_cluster_id == 1
    s.queue.close()


# --- stored records that cannot be served -----------------------------------------------


def _rewrite(path: Path, table: str, where: str, change: dict[str, str]) -> None:
    db = sqlite3.connect(str(path))
    (ad,) = db.execute(f"SELECT ad FROM {table} WHERE {where}").fetchone()
    db.execute(f"UPDATE {table} SET ad = ? WHERE {where}", (json.dumps(json.loads(ad) | change),))
    db.commit()
    db.close()


def _rows(path: Path, table: str) -> list[tuple[object, ...]]:
    db = sqlite3.connect(str(path))
    rows = db.execute(f"SELECT * FROM {table} ORDER BY 1, 2").fetchall()
    db.close()
    return rows


def test_bad_queue_records_are_skipped_reported_and_kept(tmp_path: Path) -> None:
    path = tmp_path / "q.sqlite"
    s = _schedd(path)
    for owner in ("mallory", "bob", "carol", "alice"):
        s.submit(SLEEP + "queue 2\n", "a.sub", owner, 0.0)
    s.queue.close()
    _rewrite(path, "jobs", "cluster = 1 AND proc = 1", {"RequestMemory": "99999999999999999999"})
    _rewrite(path, "clusters", "cluster = 2", {"RequestCpus": "1e400"})
    _rewrite(path, "jobs", "cluster = 3 AND proc = 0", {"Rank": "(("})
    db = sqlite3.connect(str(path))
    db.execute('INSERT INTO jobs (cluster, proc, ad) VALUES (9, 0, \'{"ProcId": "0"}\')')
    db.commit()
    db.close()
    stored = _rows(path, "jobs"), _rows(path, "clusters")

    s = _schedd(path)
    assert _ids(s.query()) == ["1.0", "3.1", "4.0", "4.1"]
    bad = sorted(_bad_records(s))
    syntax = bad.pop(3)  # the parser's own words for "(("
    assert syntax[:2] == ("3.0", "queue") and syntax[2].startswith("Rank: syntax error")
    assert bad == [
        ("1.1", "queue", "RequestMemory: number out of range: 99999999999999999999"),
        ("2.0", "queue", "cluster ad: RequestCpus: number out of range: 1e400"),
        ("2.1", "queue", "cluster ad: RequestCpus: number out of range: 1e400"),
        ("9.0", "queue", "no cluster ad"),
    ]
    # the other users' jobs are served, and go on to the negotiator
    assert sum(r.get_value("ResourceRequestCount") for r in s.resource_requests()) == 4
    reply = schedd_pb2.JobQueryReply()
    ads_to_pb(s.query(), reply.jobs)
    ad_to_pb(s.schedd_ad(0.0), reply.schedd)
    assert len(reply.jobs) == 4
    # nothing stored is lost or changed by leaving them out
    s.submit(SLEEP + "queue\n", "a.sub", "dave", 1.0)
    s.queue.close()
    jobs, clusters = _rows(path, "jobs"), _rows(path, "clusters")
    assert [r for r in jobs if r[0] != 10] == stored[0]
    assert [r for r in clusters if r[0] != 10] == stored[1]


def test_a_bad_history_record_is_skipped_and_reported_once(tmp_path: Path) -> None:
    path = tmp_path / "q.sqlite"
    s = _schedd(path)
    s.submit(SLEEP + "queue 3\n", "a.sub", "alice", 0.0)
    s.act("remove", ["1"], "", "", "alice", 1.0)
    assert _ids(s.history()) == ["1.2", "1.1", "1.0"]
    s.queue.close()
    db = sqlite3.connect(str(path))
    (ad,) = db.execute("SELECT ad FROM history WHERE proc = 1").fetchone()
    bad = json.dumps(json.loads(ad) | {"RequestMemory": "99999999999999999999"})
    db.execute("UPDATE history SET ad = ? WHERE proc = 1", (bad,))
    db.commit()
    db.close()
    s = _schedd(path)
    assert _ids(s.history()) == ["1.2", "1.0"]
    assert _ids(s.history("ProcId >= 0", limit=5)) == ["1.2", "1.0"]
    assert _bad_records(s) == [
        ("1.1", "history", "RequestMemory: number out of range: 99999999999999999999")
    ]
    s.queue.close()


def test_huge_weights_do_not_break_the_schedd_ad(tmp_path: Path) -> None:
    # a job from an old queue with RequestCpus = 1e300: the sum stays a real, which the wire
    # carries, instead of a 301-digit integer, which it cannot
    path = tmp_path / "q.sqlite"
    s = _schedd(path)
    s.submit(SLEEP + "queue\n", "a.sub", "alice", 0.0)
    s.queue.close()
    _rewrite(path, "clusters", "cluster = 1", {"RequestCpus": "1e300"})
    s = _schedd(path)
    (sub,) = s.submitter_ads(0.0)
    assert sub.get_value("WeightedIdleJobs") == 1e300
    ad_to_pb(sub)  # raised ValueError ("Value out of range") before
    ad_to_pb(s.schedd_ad(0.0))
    s.queue.close()


def test_stored_texts_are_served_as_one_expression_each_and_bad_ones_every_time(
    tmp_path: Path,
) -> None:
    """Records read back (a history of thousands of jobs) share the expression of each
    text they repeat; a text that cannot be served is refused at each record, however
    often a good one was served before."""
    s = _schedd(tmp_path / "q.sqlite")
    texts = {"Owner": '"alice"', "ProcId": "3", "Requirements": "Memory > 1024", "X": "1.5"}
    first, second = s._stored_ad(texts), s._stored_ad(dict(texts))
    assert isinstance(first, ClassAd) and isinstance(second, ClassAd)
    for name in texts:
        assert first.lookup(name) is second.lookup(name), name
    assert [unparse(first[n]) for n in texts] == ['"alice"', "3", "Memory > 1024", "1.5"]
    assert first.eval("ProcId") == 3 and first.eval("Owner") == "alice"
    bad = {**texts, "RequestMemory": "99999999999999999999"}
    for _ in range(2):
        assert s._stored_ad(bad) == "RequestMemory: number out of range: 99999999999999999999"
    assert s._stored_ad({**texts, "Y": "1 +"}).startswith("Y: ")
