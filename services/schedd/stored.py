"""A schedd's queue file read from outside, with the schedd down: its queue, history and
durable events, as a running schedd would have answered for them.

Opened read-only (``mode=ro``): a pool that collects the output of a dead schedd must not
change what the schedd will find when it comes back. A job whose stored texts do not
parse keeps the attributes that do (the running schedd reports such a record as a
``bad_record`` event when it loads it; here the record is only read).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..classad import ClassAd, ClassAdSyntaxError, parse_expr
from .queue import _texts

if TYPE_CHECKING:
    from .memqueue import MemoryJobQueue

__all__ = ["StoredQueue", "read_stored_queue", "stored_in_memory"]


class StoredQueue:
    """What a dead schedd's queue file holds: ``jobs`` (in the queue), ``history`` (left
    it, newest first) and ``events`` (its durable events after a given sequence number)."""

    def __init__(
        self, jobs: list[ClassAd], history: list[ClassAd], events: list[dict[str, Any]]
    ) -> None:
        self.jobs = jobs
        self.history = history
        self.events = events


def _ad(texts: dict[str, str | None]) -> ClassAd:
    ad = ClassAd()
    for name, text in texts.items():
        if text is None or not name:
            continue
        try:
            ad[name] = parse_expr(text)
        except (ClassAdSyntaxError, ValueError):
            continue
    return ad


def read_stored_queue(path: str | Path, schedd: str, events_after: int = 0) -> StoredQueue:
    """The queue file at ``path`` of schedd ``schedd``; OSError or sqlite3.Error when it
    cannot be read (the caller says which schedd's output is missing)."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"{p}: no job queue here")
    db = sqlite3.connect(f"{p.resolve().as_uri()}?mode=ro", uri=True)
    try:
        clusters = {c: _texts(ad) for c, ad in db.execute("SELECT cluster, ad FROM clusters")}
        rows = db.execute("SELECT cluster, proc, ad FROM jobs ORDER BY cluster, proc")
        jobs = [(c, proc, _texts(ad)) for c, proc, ad in rows]
        history = [_texts(ad) for (ad,) in db.execute("SELECT ad FROM history ORDER BY seq DESC")]
        events: list[tuple[int, float, str, str]] = []
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if "events" in tables:
            events = db.execute(
                "SELECT seq, t, kind, fields FROM events WHERE seq > ? ORDER BY seq",
                (events_after,),
            ).fetchall()
    finally:
        db.close()
    return _stored(schedd, clusters, jobs, history, events)


def stored_in_memory(queue: MemoryJobQueue, schedd: str, events_after: int = 0) -> StoredQueue:
    """The same from a virtual run's queue on its simulated disk (read, never written)."""
    history = [ad for _, _, ad in queue.history()]
    events = queue.events_between(events_after, queue.last_event_seq())
    return _stored(schedd, queue.load_clusters(), queue.load_jobs(), history, events)


_Texts = dict[str, str | None] | None


def _stored(
    schedd: str,
    clusters: dict[int, _Texts],
    jobs: list[tuple[int, int, _Texts]],
    history: list[_Texts],
    events: list[tuple[int, float, str, str]],
) -> StoredQueue:
    """Jobs as their cluster's attributes under their own, history newest first, and the
    events as the pool gathers them."""
    ads = []
    for cluster, _proc, own in jobs:
        texts = dict(clusters.get(cluster) or {})
        for name, text in (own or {}).items():
            if text is None:
                texts.pop(name, None)
            else:
                texts[name] = text
        ads.append(_ad(texts))
    gathered = []
    for seq, t, kind, fields in events:
        try:
            extra = json.loads(fields)
        except ValueError:
            extra = {}
        gathered.append({"t": t, "daemon": schedd, "kind": kind, **extra, "_seq": int(seq)})
    return StoredQueue(ads, [_ad(texts or {}) for texts in history], gathered)
