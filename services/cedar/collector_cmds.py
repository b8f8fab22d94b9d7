"""The collector's CEDAR commands: HTCondor's ``QUERY_*_ADS``, answered from the ad store.

What a client sends (condor_query.cpp ``CondorQuery::getQueryAd``): the command, then one
message holding the query ad, with

- ``Requirements``: the constraint, evaluated with each stored ad as MY and no TARGET
  (an ad is sent when it is true or a non-zero number); absent: every ad;
- ``Projection``: the attributes wanted, a string of names separated by commas or white
  space (an expression, as the negotiator sends, is evaluated against each ad to such a
  string); absent or empty: whole ads;
- ``LimitResults``: at most this many ads (when > 0);
- ``TargetType``: the table for QUERY_STARTD_ADS ("StartD": the startd daemons' ads),
  QUERY_GENERIC_ADS (the generic table named) and QUERY_MULTIPLE_ADS (a list of tables,
  each with its own ``<Tag>Requirements``, ``<Tag>Projection``, ``<Tag>LimitResults``);
- ``LocationQuery``: a locate (``Collector.locate``, ``Daemon::locate``): a startd is
  looked for among the startd daemon ads, then the slot ads.

The reply (collector.cpp ``receive_query_cedar_worker_thread``) is one message: each ad
after an integer 1, then an integer 0. A query the collector refuses (private ads to a
reader without NEGOTIATOR or ADMINISTRATOR authorization, an unknown table for
QUERY_MULTIPLE_ADS, a constraint past its evaluation budget) gets no reply: HTCondor's
handler returns FALSE and the client reports a failed communication.

Records are selected by :meth:`CollectorService.select`, the store call the gRPC
``Query`` makes, so the rules (private ads, evaluation budget, big tables evaluated off
the loop) are the same. Each record keeps its ad's CEDAR encoding once made
(``AdRecord.cedar``; a record is replaced whenever its ad changes): a second query of
10,000 slot ads joins stored bytes (many new encodings at once are made off the loop),
and an ad a reply carried is encoded again as soon as its update arrives
(``AdStore.on_replaced``), so a table clients keep reading stays encoded as the startds
re-advertise it.
The reply goes out in pieces of ``_ADS_PER_PIECE`` ads, each made and sent in a turn of
the loop (``turns``), so fifty big replies at once hold the daemon's other work for a
piece's few milliseconds at a time.

In a live pool none of that runs in the collector's process: the listener hands each
query, with its connection, to the collector's query-worker process
(``query_worker.py``), which holds a replica of the store, every ad encoded as it
arrived, and answers with :func:`select_with` and :func:`send_reply` as here. The path
above is the fallback (no worker: ``COLLECTOR_QUERY_WORKERS = 0``, or it died and is
being started again).
"""

from __future__ import annotations

import asyncio
import logging
import random
import re
import weakref
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .. import turns
from ..auth import Role, acting_as
from ..classad import ClassAd, evaluate
from ..classad.tree import Expr, Literal
from ..collector.store import MACHINE, MACHINE_PRIVATE, AdRecord, CollectorError
from . import commands as cmd
from .adwire import EncodedAd, encode_ad
from .server import CedarRequest, CedarSocket, Command, CommandError, Level
from .servicers import method_roles
from .stream import Builder

if TYPE_CHECKING:
    from ..collector.service import CollectorService
    from .query_worker import QueryWorker

__all__ = [
    "QUERY_COMMANDS",
    "CollectorQuery",
    "QueryPart",
    "QueryRefused",
    "collector_commands",
    "parse_query",
]

log = logging.getLogger(__name__)

# HTCondor's command numbers beyond the ones commands.py names (condor_commands.h)
QUERY_CKPT_SRVR_ADS = 9
QUERY_LICENSE_ADS = 43
QUERY_STORAGE_ADS = 46
QUERY_HAD_ADS = 56
QUERY_GRID_ADS = 71

ANY = "Any"
STARTD_DAEMON = "StartD"  # STARTD_DAEMON_ADTYPE: the startd's own ad (none in mockpool)

# each query command's table (HTCondor's MyType for its ads); None: from TargetType
QUERY_COMMANDS: dict[int, str | None] = {
    cmd.QUERY_STARTD_ADS: MACHINE,
    cmd.QUERY_SCHEDD_ADS: "Scheduler",
    cmd.QUERY_MASTER_ADS: "DaemonMaster",
    QUERY_CKPT_SRVR_ADS: "CkptServer",
    cmd.QUERY_STARTD_PVT_ADS: MACHINE_PRIVATE,
    cmd.QUERY_SUBMITTOR_ADS: "Submitter",
    cmd.QUERY_COLLECTOR_ADS: "Collector",
    QUERY_LICENSE_ADS: "License",
    QUERY_STORAGE_ADS: "Storage",
    cmd.QUERY_ANY_ADS: ANY,
    cmd.QUERY_NEGOTIATOR_ADS: "Negotiator",
    QUERY_HAD_ADS: "HAD",
    QUERY_GRID_ADS: "Grid",
    cmd.QUERY_ACCOUNTING_ADS: "Accounting",
    cmd.QUERY_GENERIC_ADS: None,
    cmd.QUERY_MULTIPLE_ADS: None,
    cmd.QUERY_MULTIPLE_PVT_ADS: None,
}
_PRIVATE_COMMANDS = frozenset({cmd.QUERY_STARTD_PVT_ADS, cmd.QUERY_MULTIPLE_PVT_ADS})
# AdTypeToString's names that QUERY_MULTIPLE_ADS reads as the standard tables
_TAG_TABLES = {"slot": MACHINE, "machine": MACHINE, "startd": STARTD_DAEMON}
_TOKENS = re.compile(r"[^,\s]+")  # StringTokenIterator's default separators
# ads in one piece of a reply, made and sent in a turn of the loop: 256 slot ads are
# about 400 kB, a millisecond or two of framing (and sealing); a reply of 10,000 goes
# as fast as the client reads it (htcondor2 parses as it reads: ~0.7 s)
_ADS_PER_PIECE = 256
_ENCODE_OFFLOAD_AT = 2_000  # whole ads to encode that go to a worker thread (~50 ms)
# who may read private ads (the gRPC Query's rule: collector/service.py)
_PRIVATE_READERS = frozenset({Role.NEGOTIATOR, Role.ADMIN})


class QueryRefused(ValueError):
    """A query the collector does not answer; the text says why (for its log)."""


@dataclass(frozen=True)
class QueryPart:
    """One table a query reads, with its constraint, projection and limit."""

    table: str  # the store's ad type ("Any": every public table)
    constraint: Expr | None
    projection: tuple[str, ...] | None  # None: whole ads
    projection_expr: Expr | None = None  # evaluated against each ad to a projection
    limit: int | None = None


Chosen = tuple[QueryPart, list[AdRecord]]  # a part of a query and the records it chose


@dataclass(frozen=True)
class CollectorQuery:
    """A query ad, read: its tables in order, the overall limit, whether it locates."""

    parts: tuple[QueryPart, ...]
    limit: int | None
    locate: bool
    private: bool  # a NEGOTIATOR-level query (the private table may be read)


# ----------------------------------------------------------------------------- parsing


def _limit(query: ClassAd, attr: str) -> int | None:
    """``LookupInteger(attr)`` when it is > 0, else None (no limit)."""
    if query.lookup(attr) is None:
        return None
    value = query.eval(attr)
    if type(value) is int and value > 0:
        return value
    return None


def _projection(query: ClassAd, attr: str) -> tuple[tuple[str, ...] | None, Expr | None]:
    """(names, None) for a string projection, (None, expr) for an expression, (None,
    None) for none; an empty string means whole ads."""
    expr = query.lookup(attr)
    if expr is None:
        return None, None
    if type(expr) is Literal:
        value = expr.value
        if isinstance(value, str):
            names = tuple(_TOKENS.findall(value))
            return (names or None), None
        return None, None
    return None, expr


def _constraint(expr: Expr | None) -> Expr | None:
    """The Requirements to evaluate; a literal true (what a client sends for "every ad")
    is none at all."""
    if type(expr) is Literal and expr.value is True:
        return None
    return expr


def _string(query: ClassAd, attr: str) -> str:
    value = query.eval(attr) if query.lookup(attr) is not None else None
    return value if isinstance(value, str) else ""


def parse_query(command: int, query: ClassAd) -> CollectorQuery:
    """What ``command`` with ``query`` asks for; :class:`QueryRefused` for a command that
    is not a collector query or a query HTCondor's collector drops."""
    if command not in QUERY_COMMANDS:
        raise QueryRefused(f"command {command} is not a collector query")
    private = command in _PRIVATE_COMMANDS
    constraint = _constraint(query.lookup("Requirements"))
    projection, projection_expr = _projection(query, "Projection")
    limit = _limit(query, "LimitResults")
    locate = query.lookup("LocationQuery") is not None
    target = _string(query, "TargetType")

    def part(table: str, tag: str = "") -> QueryPart:
        req, proj, pexpr, lim = constraint, projection, projection_expr, limit
        if tag:
            if query.lookup(f"{tag}Requirements") is not None:
                req = _constraint(query.lookup(f"{tag}Requirements"))
            if query.lookup(f"{tag}Projection") is not None:
                proj, pexpr = _projection(query, f"{tag}Projection")
            tag_limit = _limit(query, f"{tag}LimitResults")
            if tag_limit is not None:
                lim = tag_limit if lim is None else min(lim, tag_limit)
        return QueryPart(table, req, proj, pexpr, lim)

    table = QUERY_COMMANDS[command]
    if command in (cmd.QUERY_MULTIPLE_ADS, cmd.QUERY_MULTIPLE_PVT_ADS):
        tags = _TOKENS.findall(target)
        if not tags:
            raise QueryRefused("Failed to find TargetType attribute in query ad of QUERY_MULTIPLE")
        parts = []
        for tag in tags:
            name = _TAG_TABLES.get(tag.lower(), tag)
            if name.lower() == ANY.lower():
                raise QueryRefused(f'Invalid TargetType="{target}" in QUERY_MULTIPLE')
            if name.lower() == MACHINE_PRIVATE.lower() and not private:
                raise QueryRefused("Query of STARTD_PVT_ADS not authorized")
            parts.append(part(name, tag))
        return CollectorQuery(tuple(parts), limit, locate, private)
    if command == cmd.QUERY_GENERIC_ADS:
        if not target:
            raise QueryRefused(
                "Failed to find TargetType attribute in query ad of QUERY_GENERIC_ADS"
            )
        if target.lower() == MACHINE_PRIVATE.lower():
            raise QueryRefused("Query of STARTD_PVT_ADS not authorized")
        return CollectorQuery((part(target),), limit, locate, private)
    assert table is not None
    if command == cmd.QUERY_STARTD_ADS:
        if locate:  # a startd daemon's ad, else a slot's
            tables = (STARTD_DAEMON, MACHINE)
            return CollectorQuery(tuple(part(t) for t in tables), limit, locate, private)
        if target.lower() == STARTD_DAEMON.lower():
            table = STARTD_DAEMON
    return CollectorQuery((part(table),), limit, locate, private)


# ----------------------------------------------------------------------------- answering


class _Kept:
    """A record's whole ad as CEDAR sends it, and whether a reply has carried it."""

    __slots__ = ("enc", "sent")

    def __init__(self, enc: EncodedAd) -> None:
        self.enc = enc
        self.sent = False


def _kept(record: AdRecord) -> _Kept:
    """The record's encoding, made once (records never change)."""
    kept = record.cedar
    if kept is None:
        private = record.ad_type.lower() == MACHINE_PRIVATE.lower()
        kept = record.cedar = _Kept(encode_ad(record.ad, private=private))
    return kept


def _encoded(record: AdRecord) -> EncodedAd:
    """The record's whole ad for a reply (which marks it sent)."""
    kept = _kept(record)
    kept.sent = True
    return kept.enc


def _replaced(old: AdRecord, new: AdRecord) -> None:
    """The store's hook when an ad is updated: the new version of an ad that a reply
    carried is encoded now, in the update's turn (tens of microseconds), so that the
    clients who read the table read it from stored bytes again; an ad no reply carried
    since its last update is left until one asks (a table nobody reads costs nothing)."""
    kept = old.cedar
    if isinstance(kept, _Kept) and kept.sent and new.cedar is None:
        _kept(new)


def _projected(record: AdRecord, part: QueryPart, query: ClassAd, now: float) -> EncodedAd:
    names: Sequence[str] | None = part.projection
    if part.projection_expr is not None:
        # random() in it: a generator of the query's date, as the store's constraints
        value = evaluate(part.projection_expr, query, record.ad, now=now, rng=random.Random(now))
        names = _TOKENS.findall(value) if isinstance(value, str) else None
    if not names:
        return _encoded(record)
    private = record.ad_type.lower() == MACHINE_PRIVATE.lower()
    return encode_ad(record.ad, names, private=private)


Pick = Callable[[str, "Expr | None"], Awaitable[list[AdRecord]]]  # (table, constraint)


async def select(service: CollectorService, q: CollectorQuery) -> list[Chosen]:
    """The records a query answers with, by the part that chose them, in order and
    within the limits; CollectorError (PrivateAdsRefused, CostlyConstraint, ...) as the
    store raises it."""
    return await select_with(service.select, q)


async def select_with(pick: Pick, q: CollectorQuery) -> list[Chosen]:
    """:func:`select` with ``pick`` choosing a table's records (the collector's store,
    or a query worker's replica of it)."""
    out: list[Chosen] = []
    total = 0
    for part in q.parts:
        room = None if q.limit is None else q.limit - total
        if part.limit is not None:
            room = part.limit if room is None else min(room, part.limit)
        if room is not None and room <= 0:
            break
        if part.table.lower() == MACHINE_PRIVATE.lower() and not q.private:
            raise QueryRefused("QUERY_STARTD_PVT_ADS not authorized")
        records = await pick(part.table, part.constraint)
        if room is not None:
            records = records[:room]
        out.append((part, records))
        total += len(records)
    return out


# one encoding thread per collector: fifty queries each encoding the same 10,000 ads in
# threads of their own made the loop wait behind all of them for the GIL (2 s)
_ENCODING: weakref.WeakKeyDictionary[Any, asyncio.Lock] = weakref.WeakKeyDictionary()


async def _encode_fresh(service: CollectorService, chosen: list[Chosen]) -> None:
    """Encode the whole ads chosen that have no encoding yet (a fresh collector's, or
    updated since): many at once off the loop, as Query evaluates a big table's
    constraint, by one query at a time (the others then find them done)."""
    lock = _ENCODING.get(service)
    if lock is None:
        lock = _ENCODING[service] = asyncio.Lock()
    async with lock:
        fresh = [r for part, recs in chosen if _whole(part) for r in recs if r.cedar is None]
        if len(fresh) >= _ENCODE_OFFLOAD_AT:
            await service.ctx.offload(_encode_all, fresh)


def _encode_all(records: Sequence[AdRecord]) -> None:
    """Make the encodings the records lack (off the loop: records never change, and a
    record made twice by two queries at once is the same bytes)."""
    for record in records:
        _kept(record)


async def answer(
    service: CollectorService, sock: CedarSocket, query_ad: ClassAd, command: int
) -> int:
    """Send the reply to one query; returns how many ads went. QueryRefused or
    CollectorError (nothing sent) for a query the collector drops.

    The reply goes out a piece at a time, each piece made and sent in a turn of the
    loop of its own (``turns``): fifty queries at once take turns with each other and
    with the daemon's timers instead of all running in one round."""
    q = parse_query(command, query_ad)
    chosen = await select(service, q)
    await turns.own_turn()  # fifty queries chosen in one round start a round apart
    now = service.store.ad_epoch + service.ctx.clock.now()
    await _encode_fresh(service, chosen)
    return await send_reply(sock, chosen, query_ad, now)


async def send_reply(sock: CedarSocket, chosen: list[Chosen], query_ad: ClassAd, now: float) -> int:
    """The reply's ads (1 before each, 0 at the end), a piece of ``_ADS_PER_PIECE`` a
    turn; how many ads went."""
    reply = Builder()
    sent = 0
    for part, records in chosen:
        whole = _whole(part)
        async for batch in turns.in_turns(records, _ADS_PER_PIECE):
            for record in batch:
                enc = _encoded(record) if whole else _projected(record, part, query_ad, now)
                reply.put_int(1).put_encoded_ad(enc)
            sent += len(batch)
            await sock.flush(reply)
    reply.put_int(0)
    await sock.send(reply)
    return sent


def _whole(part: QueryPart) -> bool:
    return part.projection is None and part.projection_expr is None


def collector_commands(
    service: CollectorService, worker: QueryWorker | None = None
) -> list[Command]:
    """The collector's query commands for a CEDAR listener: READ, and NEGOTIATOR for
    the private ads (as collector.cpp registers them); the caller must also be one the
    gRPC ``Query`` admits. With a ``worker`` running, a query is handed to it with its
    connection once its ad is read (the collector's loop makes no reply); without one
    (not started, died, restarting) the collector answers it."""

    service.store.on_replaced = _replaced

    async def handle(req: CedarRequest) -> None:
        msg = await req.sock.recv()
        query_ad = msg.get_ad(what="the query ad")
        msg.expect_end("the query")
        principal = req.peer.principal
        if principal is None or principal.role not in method_roles(service, "Query"):
            raise CommandError("PERMISSION_DENIED", f"{req.peer.user} may not query ads")
        if worker is not None:
            now = service.store.ad_epoch + service.ctx.clock.now()
            private_ok = principal.role in _PRIVATE_READERS
            if worker.hand_over(req.sock, req.command, query_ad, private_ok, now):
                return
        try:
            with acting_as(principal):
                sent = await answer(service, req.sock, query_ad, req.command)
        except (QueryRefused, CollectorError) as exc:
            log.warning("%s: query from %s refused: %s", service.name, req.peer.user, exc)
            return
        log.debug("%s: query %d from %s: %d ads", service.name, req.command, req.peer.user, sent)

    return [
        Command(number, Level.NEGOTIATOR if number in _PRIVATE_COMMANDS else Level.READ, handle)
        for number in QUERY_COMMANDS
    ]
