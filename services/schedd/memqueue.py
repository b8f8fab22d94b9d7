"""A virtual run's job queues: a simulated disk in memory (FoundationDB's simulation).

A live schedd keeps its queue in SQLite with fsync (``queue.JobQueue``); on virtual time
nothing outlives the process anyway, and what a simulated crash must keep is exactly what
was committed: a :class:`MemoryJobQueue` answers the same calls as ``JobQueue``, and its
tables live on the pool's :class:`~..durable.SimulatedDisk`, not in the queue object. A crashed
schedd's queue is closed and its memory dropped; the restarted one opens the same tables
again, with every committed batch and nothing else (``apply`` is all or nothing: it
checks what it writes before it changes anything). One recovery path for both: the
schedd core reads either the same way.

Stored rows are the same texts SQLite stores ({attribute: expression text}), copied in
and out, so nothing a caller keeps is shared with the disk.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from dataclasses import dataclass, field

from .queue import SCHEMA_VERSION, Batch, QueueError, StoredClaim

__all__ = ["MemoryJobQueue", "new_tables"]

_Ad = dict[str, str | None]


@dataclass
class _Tables:
    """One queue's committed state (what SQLite's file holds)."""

    meta: dict[str, str]
    clusters: dict[int, _Ad] = field(default_factory=dict)
    jobs: dict[tuple[int, int], _Ad] = field(default_factory=dict)
    procs: dict[int, int] = field(default_factory=dict)  # jobs in the queue by cluster
    history: list[tuple[int, int, _Ad]] = field(default_factory=list)  # seq order
    claims: dict[str, StoredClaim] = field(default_factory=dict)
    requests: dict[str, tuple[int, int]] = field(default_factory=dict)
    events: list[tuple[int, float, str, str]] = field(default_factory=list)  # seq order
    event_seqs: list[int] = field(default_factory=list)


def new_tables(birth: float) -> _Tables:
    """A fresh queue's tables (what SQLite writes into a new file)."""
    meta = {
        "schema_version": str(SCHEMA_VERSION),
        "next_cluster_id": "1",
        "birth": repr(float(birth)),
    }
    return _Tables(meta)


class MemoryJobQueue:
    """``JobQueue``'s calls over a :class:`SimulatedDisk`'s tables."""

    def __init__(self, name: str, tables: _Tables) -> None:
        self.path = name
        self._t: _Tables | None = tables

    @property
    def _tables(self) -> _Tables:
        if self._t is None:
            raise QueueError(f"job queue {self.path} is closed")
        return self._t

    # --- meta ---------------------------------------------------------------------------

    @property
    def next_cluster_id(self) -> int:
        return int(self._tables.meta["next_cluster_id"])

    @property
    def birth(self) -> float:
        return float(self._tables.meta.get("birth", "0"))

    # --- reading ------------------------------------------------------------------------

    def load_clusters(self) -> dict[int, dict[str, str | None] | None]:
        t = self._tables
        return {c: dict(t.clusters[c]) for c in sorted(t.clusters)}

    def load_jobs(self) -> list[tuple[int, int, dict[str, str | None] | None]]:
        t = self._tables
        return [(c, p, dict(t.jobs[(c, p)])) for c, p in sorted(t.jobs)]

    def load_claims(self) -> list[StoredClaim]:
        return list(self._tables.claims.values())

    def last_event_seq(self) -> int:
        seqs = self._tables.event_seqs
        return seqs[-1] if seqs else 0

    def events_between(self, after: int, upto: int) -> list[tuple[int, float, str, str]]:
        t = self._tables
        lo = bisect.bisect_right(t.event_seqs, after)
        hi = bisect.bisect_right(t.event_seqs, upto)
        return t.events[lo:hi]

    def lookup_request(self, request_id: str) -> tuple[int, int] | None:
        return self._tables.requests.get(request_id)

    def history(
        self, batch_size: int = 500
    ) -> Iterator[tuple[int, int, dict[str, str | None] | None]]:
        """Jobs that left the queue, newest first (``batch_size``: as ``JobQueue``'s)."""
        rows = self._tables.history
        for k in range(len(rows) - 1, -1, -1):
            c, p, ad = rows[k]
            yield c, p, dict(ad)

    # --- writing ------------------------------------------------------------------------

    def apply(self, batch: Batch) -> None:
        """Commit ``batch`` whole, or (QueueError) nothing of it."""
        if not batch:
            return
        t = self._tables
        last = t.event_seqs[-1] if t.event_seqs else 0
        seqs = [seq for seq, *_ in batch.events]
        if any(b <= a for a, b in zip([last, *seqs], seqs)):
            raise QueueError(f"cannot write job queue {self.path}: event seqs out of order")
        t.clusters.update((c, dict(attrs)) for c, attrs in batch.clusters.items())
        for key, attrs in batch.jobs.items():
            if key not in t.jobs:
                t.procs[key[0]] = t.procs.get(key[0], 0) + 1
            t.jobs[key] = dict(attrs)
        for c, p, attrs in batch.to_history:
            if t.jobs.pop((c, p), None) is not None:
                t.procs[c] -= 1
            t.history.append((c, p, dict(attrs)))
        for c in {c for c, _, _ in batch.to_history}:  # a cluster goes with its last job
            if not t.procs.get(c):
                t.procs.pop(c, None)
                t.clusters.pop(c, None)
        for cid in batch.claims_del:
            t.claims.pop(cid, None)
        t.claims.update(batch.claims_put)
        t.events += batch.events
        t.event_seqs += seqs
        t.meta.update(batch.meta)
        if batch.request is not None:
            request_id, cluster, procs = batch.request
            t.requests[request_id] = (cluster, procs)

    def close(self) -> None:
        """Let go of the tables (they stay on the disk, as a file does)."""
        self._t = None

    def __enter__(self) -> MemoryJobQueue:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
