"""What a user sends a live schedd (issue 7, items 1, 3 and 7): the schedd reads no file a
user names (the submitting side reads item files and sends them), a poison job is refused
and a bad record from an old queue is left out, while q, history and negotiation go on."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from mockpool import Pool
from mockpool.config import parse_config
from mockpool.pool.client import PoolError
from mockpool.schedd.queue import JobQueue
from mockpool.schedd.schedd import Schedd
from mockpool.schedd.submit import SubmitInputs

pytestmark = [pytest.mark.live, pytest.mark.slow]

SLEEP = "executable = /bin/sleep\narguments = 60\n"
WAIT = 120.0  # real seconds; the machine is shared, so wait on conditions generously


def _seed_old_queue(path: Path) -> None:
    """A queue as an older mockpool may have left it: cluster 1 has a job whose
    RequestMemory does not fit 64 bits (accepted at submit then) and a sound one."""
    path.parent.mkdir(parents=True)
    old = Schedd("schedd1", JobQueue(path), parse_config(""), 0.0)
    old.submit(SLEEP + "queue 2\n", "old.sub", "olduser", 0.0)
    old.queue.close()
    db = sqlite3.connect(str(path))
    (ad,) = db.execute("SELECT ad FROM jobs WHERE cluster = 1 AND proc = 0").fetchone()
    bad = json.loads(ad) | {"RequestMemory": "99999999999999999999"}
    db.execute("UPDATE jobs SET ad = ? WHERE cluster = 1 AND proc = 0", (json.dumps(bad),))
    db.commit()
    db.close()


@pytest.fixture(scope="module")
def pool(ray_session: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pool]:
    state = tmp_path_factory.mktemp("state")
    _seed_old_queue(state / "schedd" / "schedd1.sqlite")
    p = Pool(config={"NEGOTIATOR_INTERVAL": 20}, time_scale=100, state_dir=state)
    p.start()
    try:
        yield p
    finally:
        p.stop()


def _ids(pool: Pool, constraint: str = "", history: bool = False) -> list[str]:
    ads = pool.jobs(constraint, ["ClusterId", "ProcId"], history=history)
    return [f"{a.get_value('ClusterId')}.{a.get_value('ProcId')}" for a in ads]


def _refused(pool: Pool, text: str, inputs: SubmitInputs | None = None) -> PoolError:
    with pytest.raises(PoolError) as info:
        pool._run(pool.client.submit(text, owner="mallory", source="evil.sub", inputs=inputs))
    return info.value


def test_an_old_bad_record_is_left_out_and_reported(pool: Pool) -> None:
    assert _ids(pool, 'Owner == "olduser"') == ["1.1"]
    bad = [e for e in pool.events if e.get("kind") == "bad_record"]
    assert bad and bad[0]["job"] == "1.0" and "out of range" in bad[0]["problem"]


def test_the_schedd_reads_no_file_a_user_names(pool: Pool, tmp_path: Path) -> None:
    secret = tmp_path / "admin-token"
    secret.write_text("SECRET-TOKEN-TEXT\n")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    before = _ids(pool)
    # a client that sends no item files, as a hostile one would: the schedd refuses the
    # path without opening it (a FIFO would have held its event loop past the deadline)
    for path in (secret, fifo):
        err = _refused(pool, f"{SLEEP}arguments = $(t)\nqueue t from {path}\n", SubmitInputs())
        assert err.code == grpc.StatusCode.INVALID_ARGUMENT, err
        assert f"evil.sub:4: queue ... from {path}: the file was not sent" in str(err)
        assert "SECRET-TOKEN-TEXT" not in str(err)
    err = _refused(pool, f"{SLEEP}include : {secret}\nqueue\n", SubmitInputs())
    assert f"evil.sub:3: include {secret}: the file was not sent" in str(err)
    assert "SECRET-TOKEN-TEXT" not in str(err)
    assert _ids(pool) == before


def test_the_submitting_side_reads_and_sends_item_files(
    pool: Pool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "secs.txt").write_text("30\n45\n")
    os.mkfifo(tmp_path / "fifo")
    monkeypatch.chdir(tmp_path)
    cluster, n = pool.submit(
        "executable = /bin/sleep\narguments = $(t)\nqueue t from secs.txt\n", owner="alice"
    )
    assert n == 2
    ads = pool.jobs(f"ClusterId == {cluster}", ["MockDuration"])
    assert [a.get_value("MockDuration") for a in ads] == [30, 45]
    # a FIFO on the user's side is refused there too, not waited on
    err = _refused(pool, f"{SLEEP}queue t from fifo\n")
    assert err.code == grpc.StatusCode.INVALID_ARGUMENT and "not a regular file" in str(err)


def test_a_poison_job_is_refused_and_the_pool_goes_on(pool: Pool) -> None:
    before = _ids(pool)
    for line in ("request_memory = 99999999999999999999", "request_cpus = 1e300",
                 "+Foo = 99999999999999999999"):  # fmt: skip
        err = _refused(pool, f"{SLEEP}{line}\nqueue\n")
        assert err.code == grpc.StatusCode.INVALID_ARGUMENT and "out of range" in str(err), err
    assert _ids(pool) == before
    # another user's job is negotiated, runs and reaches history; q works throughout
    cluster, _ = pool.submit(SLEEP + "queue\n", owner="bob")
    done = f"ClusterId == {cluster} && JobStatus == 4"
    assert pool.wait(lambda: _ids(pool, done, history=True) == [f"{cluster}.0"], timeout=WAIT)
    assert "1.1" in _ids(pool) + _ids(pool, history=True)  # the old sound job is served


def test_hold_true_and_max_jobs_per_submission(pool: Pool) -> None:
    cluster, n = pool.submit(SLEEP + "hold = true\nqueue 2\n", owner="carol")
    ads = pool.jobs(f"ClusterId == {cluster}", ["JobStatus", "HoldReasonCode", "HoldReason"])
    assert n == 2 and [a.get_value("JobStatus") for a in ads] == [5, 5]
    assert ads[0].get_value("HoldReasonCode") == 15
    assert ads[0].get_value("HoldReason") == "submitted on hold at user's request"
    before = _ids(pool)
    err = _refused(pool, SLEEP + "queue 100000000000000000000\n")
    assert "Number of submitted jobs would exceed MAX_JOBS_PER_SUBMISSION (20000)" in str(err)
    assert _ids(pool) == before
