"""A virtual run's job queue (``memqueue``) answers as the SQLite one does, batch for
batch, and a simulated crash keeps exactly what was committed."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from mockpool.config import parse_config
from mockpool.durable import SimulatedDisk
from mockpool.schedd.memqueue import MemoryJobQueue
from mockpool.schedd.queue import Batch, JobQueue, QueueError, StoredClaim
from mockpool.schedd.schedd import Schedd


def _reads(q: JobQueue | MemoryJobQueue) -> dict[str, object]:
    return {
        "next": q.next_cluster_id,
        "birth": q.birth,
        "clusters": q.load_clusters(),
        "jobs": q.load_jobs(),
        "claims": sorted(q.load_claims(), key=lambda c: c.claim_id),
        "events": q.events_between(0, 10**9),
        "last": q.last_event_seq(),
        "history": list(q.history(batch_size=3)),
        "requests": [q.lookup_request(f"r{i}") for i in range(30)],
    }


def _random_batches(rng: random.Random, n: int) -> list[Batch]:
    batches: list[Batch] = []
    queued: set[tuple[int, int]] = set()
    seq, cluster = 0, 0
    for _ in range(n):
        b = Batch()
        kind = rng.random()
        if kind < 0.35:  # a submit
            cluster += 1
            b.clusters[cluster] = {"Owner": '"u"', "Cmd": '"/bin/sleep"', "C": str(cluster)}
            for proc in range(rng.randint(1, 4)):
                b.jobs[(cluster, proc)] = {"ProcId": str(proc)}
                queued.add((cluster, proc))
            b.meta["next_cluster_id"] = str(cluster + 1)
            b.request = (f"r{cluster}", cluster, len(b.jobs))
        elif kind < 0.6 and queued:  # some jobs change
            for key in rng.sample(sorted(queued), min(len(queued), rng.randint(1, 3))):
                b.jobs[key] = {"ProcId": str(key[1]), "JobStatus": str(rng.randint(1, 5))}
        elif kind < 0.85 and queued:  # some leave
            for c, p in rng.sample(sorted(queued), min(len(queued), rng.randint(1, 3))):
                queued.discard((c, p))
                b.to_history.append((c, p, {"ClusterId": str(c), "ProcId": str(p)}))
        else:  # claims
            cid = f"<c{rng.randint(0, 5)}>#1#1"
            if rng.random() < 0.5:
                b.claims_put[cid] = StoredClaim(cid, 1, 0, "a:1", "slot1@m", "u@x", 3.0)
            else:
                b.claims_del.add(cid)
        for _ in range(rng.randint(0, 2)):
            seq += 1
            b.events.append((seq, float(seq), "kind", "{}"))
        batches.append(b)
    return batches


@pytest.mark.parametrize("seed", range(8))
def test_the_memory_queue_reads_as_sqlite_after_the_same_batches(tmp_path: Path, seed: int) -> None:
    sql = JobQueue(tmp_path / "q.sqlite", birth=7.0)
    mem = SimulatedDisk().job_queue("q", birth=7.0)
    for batch in _random_batches(random.Random(seed), 60):
        sql.apply(batch)
        mem.apply(batch)
        assert _reads(mem) == _reads(sql)
    sql.close()


def test_a_crash_keeps_every_commit_and_no_failed_batch() -> None:
    disk = SimulatedDisk()
    q = disk.job_queue("schedd1", birth=2.0)
    q.apply(
        Batch(
            clusters={1: {"A": "1"}},
            jobs={(1, 0): {"ProcId": "0"}},
            events=[(1, 0.0, "submit", "{}")],
        )
    )
    # a batch that cannot commit (an event number already used) leaves no trace
    with pytest.raises(QueueError, match="event seqs"):
        q.apply(Batch(jobs={(1, 1): {"ProcId": "1"}}, events=[(1, 1.0, "again", "{}")]))
    before = _reads(q)
    q.close()  # the schedd dies
    with pytest.raises(QueueError, match="closed"):
        q.load_jobs()
    again = disk.job_queue("schedd1", birth=99.0)  # its restart: birth stays the first
    assert _reads(again) == before
    assert again.load_jobs() == [(1, 0, {"ProcId": "0"})] and again.birth == 2.0


def test_nothing_a_caller_keeps_is_shared_with_the_disk() -> None:
    q = SimulatedDisk().job_queue("q")
    attrs = {"ProcId": "0"}
    q.apply(Batch(clusters={1: {"A": "1"}}, jobs={(1, 0): attrs}))
    attrs["ProcId"] = "changed"
    loaded = q.load_jobs()[0][2]
    assert loaded == {"ProcId": "0"}
    assert loaded is not None
    loaded["ProcId"] = "again"
    assert q.load_jobs()[0][2] == {"ProcId": "0"}


def test_a_schedd_core_restarts_from_the_simulated_disk() -> None:
    disk = SimulatedDisk()
    config = parse_config("", "<test>")
    core = Schedd("schedd1", disk.job_queue("schedd1"), config, 0.0)
    cluster, n = core.submit(
        "executable = /bin/sleep\narguments = 60\nqueue 3\n", "a.sub", "alice", 1.0
    )
    core.queue.close()  # crash: memory gone
    again = Schedd("schedd1", disk.job_queue("schedd1"), config, 5.0)
    ids = sorted((a.get_value("ClusterId"), a.get_value("ProcId")) for a in again.query(now=5.0))
    assert ids == [(cluster, p) for p in range(n)] and n == 3
    assert again.queue.next_cluster_id == cluster + 1


def test_a_reader_from_outside_makes_no_queue() -> None:
    disk = SimulatedDisk()
    with pytest.raises(FileNotFoundError, match=r"schedd/gone\.sqlite"):
        disk.existing_queue("schedd/gone.sqlite")
    disk.job_queue("schedd/s1.sqlite", birth=3.0).close()
    assert disk.existing_queue("schedd/s1.sqlite").birth == 3.0
    with pytest.raises(FileNotFoundError):  # still none: the failed read made nothing
        disk.existing_queue("schedd/gone.sqlite")
