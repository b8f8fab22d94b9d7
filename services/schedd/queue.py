"""The schedd's persistent job queue: one SQLite file per schedd.

What is stored (everything a restarted schedd needs; the rest is rebuilt):

- ``clusters`` and ``jobs``: as HTCondor keeps a cluster ad and proc ads, a submit's
  shared attributes are stored once per cluster and each job row holds only its own
  attributes over them (ProcId, GlobalJobId, and whatever its life changed), as JSON
  ``{attribute: ClassAd expression text}`` (``null``: the job deleted a cluster
  attribute). Queueing 10,000 jobs writes 10,000 small rows, not 10,000 whole ads.
- ``history``: jobs that left the queue (completed, removed), in leaving order; ``seq``
  gives condor_history's newest-first order.
- ``claims``: claims with a job running on them, so a restarted schedd still knows which
  startd runs what (claim ids are secrets: this file is the schedd's, like HTCondor's
  job_queue.log which also holds them).
- ``meta``: next cluster id, queue birth date, schema version; ``requests``: submit request
  ids already applied, with their answer (a retried Submit is not queued twice).
- ``events``: the schedd's events, each committed in the transaction of the queue change
  it describes, so that a crash loses both or neither (``seq`` numbers them; whoever
  gathers a pool's events knows which it has seen, and reads the rest from here).

Durability: WAL journal with ``synchronous=FULL``. The schedd acknowledges a submit only
after its transaction commits ("write before acknowledge"); with FULL the WAL is fsynced
at every commit, so an acknowledged job survives a power loss or kernel crash, not only a
crash of the process (NORMAL in WAL mode may lose the last commits on power loss, which
would break the promise made to the submitter). The cost is one fsync per commit, and
commits are batched: one per RPC or per round, never one per job.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..ownerfiles import private_dir, private_file

__all__ = ["SCHEMA_VERSION", "Batch", "JobQueue", "QueueError", "StoredClaim"]

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS clusters (cluster INTEGER PRIMARY KEY, ad TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS jobs (
    cluster INTEGER NOT NULL, proc INTEGER NOT NULL, ad TEXT NOT NULL,
    PRIMARY KEY (cluster, proc));
CREATE TABLE IF NOT EXISTS history (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    cluster INTEGER NOT NULL, proc INTEGER NOT NULL, ad TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS claims (
    claim_id TEXT PRIMARY KEY, cluster INTEGER NOT NULL, proc INTEGER NOT NULL,
    startd_address TEXT NOT NULL, slot_name TEXT NOT NULL, submitter TEXT NOT NULL,
    activated REAL NOT NULL);
CREATE TABLE IF NOT EXISTS requests (
    request_id TEXT PRIMARY KEY, cluster INTEGER NOT NULL, procs INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY, t REAL NOT NULL, kind TEXT NOT NULL, fields TEXT NOT NULL);
"""


class QueueError(ValueError):
    """The queue file cannot be opened or read (not a database, corrupt, wrong schema)."""


@dataclass(frozen=True)
class StoredClaim:
    """A claim with a job running on it, as persisted."""

    claim_id: str
    cluster: int
    proc: int
    startd_address: str
    slot_name: str
    submitter: str
    activated: float


@dataclass
class Batch:
    """The changes of one RPC or round, written in one transaction by ``JobQueue.apply``.

    ``clusters`` holds new clusters' shared attributes; ``jobs`` maps (cluster, proc) to
    the job's own attribute texts (insert or replace); ``to_history`` jobs leave the queue
    (deleted from ``jobs``, their whole ads appended to ``history`` in list order; a
    cluster row goes with its last job); ``claims_put``/``claims_del`` maintain the
    running claims.
    """

    clusters: dict[int, Mapping[str, str]] = field(default_factory=dict)
    jobs: dict[tuple[int, int], Mapping[str, str | None]] = field(default_factory=dict)
    to_history: list[tuple[int, int, Mapping[str, str]]] = field(default_factory=list)
    claims_put: dict[str, StoredClaim] = field(default_factory=dict)
    claims_del: set[str] = field(default_factory=set)
    meta: dict[str, str] = field(default_factory=dict)
    request: tuple[str, int, int] | None = None  # (request id, cluster, procs)
    events: list[tuple[int, float, str, str]] = field(default_factory=list)  # seq, t, kind, JSON

    def __bool__(self) -> bool:
        return bool(
            self.events
            or self.clusters
            or self.jobs
            or self.to_history
            or self.claims_put
            or self.claims_del
            or self.meta
            or self.request
        )


class JobQueue:
    """One schedd's queue file. Not thread-safe: one owner (the schedd core) uses it."""

    def __init__(self, path: str | Path, *, birth: float = 0.0) -> None:
        self.path = Path(path)
        try:
            # Jobs carry claim ids: owner-only folder and file. SQLite gives the -wal and
            # -shm files the database file's mode, so they are 0600 as well.
            private_dir(self.path.parent)
            private_file(self.path)
            # isolation_level=None: we issue BEGIN/COMMIT ourselves (one per batch).
            self._db = sqlite3.connect(str(self.path), isolation_level=None)
        except (sqlite3.Error, OSError) as exc:
            raise QueueError(f"cannot open job queue {self.path}: {exc}") from None
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            # FULL: a commit survives the machine losing power, as the schedd's fsync'd
            # job queue log (a virtual run keeps its queues on a simulated disk instead:
            # memqueue.py)
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.executescript(_SCHEMA)
            check = self._db.execute("PRAGMA quick_check").fetchone()
            if not check or check[0] != "ok":
                raise QueueError(f"job queue {self.path} is corrupt: {check[0] if check else '?'}")
            self._meta = dict(self._db.execute("SELECT key, value FROM meta").fetchall())
            version = self._meta.get("schema_version")
            if version is None:
                self._db.execute("BEGIN IMMEDIATE")
                self._set_meta(
                    {
                        "schema_version": str(SCHEMA_VERSION),
                        "next_cluster_id": "1",
                        "birth": repr(float(birth)),
                    }
                )
                self._db.execute("COMMIT")
            elif version != str(SCHEMA_VERSION):
                raise QueueError(
                    f"job queue {self.path} has schema version {version}, "
                    f"this schedd reads version {SCHEMA_VERSION}"
                )
        except QueueError:
            self._db.close()
            raise
        except sqlite3.Error as exc:
            self._db.close()
            raise QueueError(f"cannot read job queue {self.path}: {exc}") from None

    # --- meta ---------------------------------------------------------------------------

    def _set_meta(self, values: Mapping[str, str]) -> None:
        self._db.executemany(
            "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", list(values.items())
        )
        self._meta.update(values)

    @property
    def next_cluster_id(self) -> int:
        return int(self._meta["next_cluster_id"])

    @property
    def birth(self) -> float:
        """Pool time the queue file was created (HTCondor's JobQueueBirthdate)."""
        return float(self._meta.get("birth", "0"))

    # --- reading ------------------------------------------------------------------------

    def _read(self, sql: str, args: tuple[object, ...] = ()) -> list[tuple]:
        try:
            return self._db.execute(sql, args).fetchall()
        except sqlite3.Error as exc:
            raise QueueError(f"cannot read job queue {self.path}: {exc}") from None

    def load_clusters(self) -> dict[int, dict[str, str | None] | None]:
        """Each cluster's shared attributes (None: a row that is not a readable ad)."""
        rows = self._read("SELECT cluster, ad FROM clusters")
        return {c: _texts(ad) for c, ad in rows}

    def load_jobs(self) -> list[tuple[int, int, dict[str, str | None] | None]]:
        """Every job in the queue, by (cluster, proc): its own attributes over its cluster's
        (None: a row that is not a readable ad; the caller reports it and goes on)."""
        rows = self._read("SELECT cluster, proc, ad FROM jobs ORDER BY cluster, proc")
        return [(c, p, _texts(ad)) for c, p, ad in rows]

    def load_claims(self) -> list[StoredClaim]:
        rows = self._read(
            "SELECT claim_id, cluster, proc, startd_address, slot_name, submitter, activated"
            " FROM claims"
        )
        return [StoredClaim(*row) for row in rows]

    def last_event_seq(self) -> int:
        """The sequence number of the last event committed (0: none)."""
        return int(self._read("SELECT COALESCE(MAX(seq), 0) FROM events")[0][0])

    def events_between(self, after: int, upto: int) -> list[tuple[int, float, str, str]]:
        """Committed events with ``after < seq <= upto``: (seq, t, kind, fields as JSON)."""
        return self._read(
            "SELECT seq, t, kind, fields FROM events WHERE seq > ? AND seq <= ? ORDER BY seq",
            (after, upto),
        )

    def lookup_request(self, request_id: str) -> tuple[int, int] | None:
        """(cluster, procs) answered to an applied submit request, or None."""
        rows = self._read("SELECT cluster, procs FROM requests WHERE request_id = ?", (request_id,))
        return (rows[0][0], rows[0][1]) if rows else None

    def history(
        self, batch_size: int = 500
    ) -> Iterator[tuple[int, int, dict[str, str | None] | None]]:
        """Jobs that left the queue, newest first, read in pages (None: a row that is not a
        readable ad)."""
        last = None
        while True:
            if last is None:
                rows = self._read(
                    "SELECT seq, cluster, proc, ad FROM history ORDER BY seq DESC LIMIT ?",
                    (batch_size,),
                )
            else:
                rows = self._read(
                    "SELECT seq, cluster, proc, ad FROM history WHERE seq < ?"
                    " ORDER BY seq DESC LIMIT ?",
                    (last, batch_size),
                )
            if not rows:
                return
            for seq, cluster, proc, ad in rows:
                last = seq
                yield cluster, proc, _texts(ad)

    # --- writing ------------------------------------------------------------------------

    def apply(self, batch: Batch) -> None:
        """Write ``batch`` in one transaction (all or nothing); raise QueueError on failure."""
        if not batch:
            return
        db = self._db
        meta_before = dict(self._meta)
        try:
            db.execute("BEGIN IMMEDIATE")
            if batch.clusters:
                db.executemany(
                    "INSERT OR REPLACE INTO clusters (cluster, ad) VALUES (?, ?)",
                    [(c, json.dumps(attrs)) for c, attrs in batch.clusters.items()],
                )
            if batch.jobs:
                db.executemany(
                    "INSERT OR REPLACE INTO jobs (cluster, proc, ad) VALUES (?, ?, ?)",
                    [(c, p, json.dumps(attrs)) for (c, p), attrs in batch.jobs.items()],
                )
            if batch.to_history:
                db.executemany(
                    "DELETE FROM jobs WHERE cluster = ? AND proc = ?",
                    [(c, p) for c, p, _ in batch.to_history],
                )
                db.executemany(
                    "INSERT INTO history (cluster, proc, ad) VALUES (?, ?, ?)",
                    [(c, p, json.dumps(attrs)) for c, p, attrs in batch.to_history],
                )
                db.executemany(
                    "DELETE FROM clusters WHERE cluster = ?"
                    " AND NOT EXISTS (SELECT 1 FROM jobs WHERE jobs.cluster = ?)",
                    [(c, c) for c in {c for c, _, _ in batch.to_history}],
                )
            if batch.claims_del:
                db.executemany(
                    "DELETE FROM claims WHERE claim_id = ?", [(cid,) for cid in batch.claims_del]
                )
            if batch.claims_put:
                db.executemany(
                    "INSERT OR REPLACE INTO claims (claim_id, cluster, proc, startd_address,"
                    " slot_name, submitter, activated) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    [
                        (
                            c.claim_id,
                            c.cluster,
                            c.proc,
                            c.startd_address,
                            c.slot_name,
                            c.submitter,
                            c.activated,
                        )
                        for c in batch.claims_put.values()
                    ],
                )
            if batch.events:
                db.executemany(
                    "INSERT INTO events (seq, t, kind, fields) VALUES (?, ?, ?, ?)", batch.events
                )
            if batch.meta:
                self._set_meta(batch.meta)
            if batch.request is not None:
                db.execute(
                    "INSERT OR REPLACE INTO requests (request_id, cluster, procs) VALUES (?, ?, ?)",
                    batch.request,
                )
            db.execute("COMMIT")
        except sqlite3.Error as exc:
            self._meta = meta_before
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")
            raise QueueError(f"cannot write job queue {self.path}: {exc}") from None

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> JobQueue:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _texts(row: str) -> dict[str, str | None] | None:
    """A stored ad (JSON: attribute name -> expression text, or null for a deleted one);
    None when the row is anything else, so that one damaged row costs only its own job."""
    try:
        ad = json.loads(row)
    except (ValueError, TypeError):
        return None
    if not isinstance(ad, dict):
        return None
    if not all(isinstance(k, str) and (v is None or isinstance(v, str)) for k, v in ad.items()):
        return None
    return ad
