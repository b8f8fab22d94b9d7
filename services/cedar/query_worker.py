"""A query-worker process: the collector's CEDAR queries answered outside its process.

HTCondor's collector forks a worker per big query (``COLLECTOR_QUERY_WORKERS``) so that
its loop never makes a big reply. A fork per query was measured here and made things
worse (a Python parent's heap is copy-on-write and reference counts write to every page,
so the collector paid a fault per page after each fork). What this module does instead:
one long-lived worker process per collector holds a replica of its ads, fed by the store
(``AdStore.on_stored`` / ``on_removed``, in the store's order), and answers the
``QUERY_*_ADS`` the collector hands it:

- The collector's listener keeps the security handshake (sessions, authorization, the
  pause gate) and reads the query ad; then, instead of replying, it sends the worker the
  connection itself (its descriptor over a Unix socket, with the packet layer's state:
  cipher key, IVs and counters) after every ad update that came before it. The worker
  answers from its replica with the same rules (:func:`collector_cmds.select_with`,
  :func:`collector_cmds.send_reply`) and closes. The collector's loop only applies
  updates and forwards bytes it already holds (each ad's wire form as received).
- Every ad that arrives is encoded for CEDAR there and then, in the worker (about 65 us
  an ad, 13% of a core at 10,000 slots re-advertised every 5 real seconds): no query
  pays for encoding, the first one included. A pool without CEDAR starts no worker and
  pays nothing; ``COLLECTOR_QUERY_WORKERS = 0`` keeps queries in the collector's loop.
- The worker runs at Linux's idle scheduling class (SCHED_IDLE): any normal process that
  wakes takes the CPU from it at once, the collector's loop first. At two nice levels below
  the collector (before), 50 concurrent queries of a live 10,000-slot pool at time scale 10
  pushed the central loop's worst lag to 1.03-1.14 pool s; at SCHED_IDLE 0.45-0.95
  (`python bench/cedar_query.py --live --time-scale 10`, 2 cores). A machine kept busy by
  other work answers queries late rather than delaying the daemons' timers.
- The changes go to the worker every ``_FLUSH_EVERY`` (100 ms), a write a batch (a query
  handed over sends what is pending first): every write lets go of the GIL, and the loop
  then waits up to a switch interval (5 ms) to get it back from the actor's busy threads
  (the negotiator's); a write per loop turn was 16% of the central actor's loop at 10,000
  slots (py-spy), ten a second cost it a few percent at most.
- When the worker dies, the collector answers queries itself (the in-loop path, encodings
  made as they are asked for) and starts a new worker after ``restart_after`` real
  seconds (doubled for each in a row that did not last a minute, at most 60), sending it
  every stored ad first; the queries it had been handed are lost
  with it (their clients see the connection close, as when HTCondor's worker dies).

Messages on the Unix socket, one way: a 4-byte big-endian length and a pickle of
``("ops", [(type key, ad type, name key, name, wire, stable prefix), ...])`` (``wire``
None: the ad was removed) or ``("query", command, query ad, may read private ads, now,
packet state, limits)`` with the connection's descriptor attached to its first byte.
"""

from __future__ import annotations

import array
import asyncio
import contextlib
import logging
import os
import pickle
import socket
import struct
import subprocess
import sys
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .. import gctune, turns
from ..collector.store import (
    ANY_AD,
    MACHINE_PRIVATE,
    AdRecord,
    CollectorError,
    PrivateAdsRefused,
    matching,
)
from ..wire import PARTS, room_for
from .collector_cmds import QueryRefused, _kept, parse_query, select_with, send_reply
from .crypto import AesGcmCipher
from .framing import PacketCodec
from .server import CedarSocket

if TYPE_CHECKING:
    from ..classad import ClassAd
    from ..classad.tree import Expr
    from ..collector.store import AdStore

__all__ = ["QueryWorker", "Replica", "answer_here", "every_record", "main"]

log = logging.getLogger(__name__)

_LENGTH = struct.Struct(">I")
_MAX_QUEUED = 512 * 1024 * 1024  # bytes the collector holds for a worker that reads none
_DUMP_PER_TURN = 2_000  # stored ads framed for a new worker in one loop turn (a few ms)
_APPLY_PER_TURN = 64  # ads decoded and encoded by the worker between its other work
_OFFLOAD_AT = 5_000  # a constraint over this many ads is evaluated off the worker's loop
_LASTS = 60.0  # real seconds a worker must last for its death to count as no failure
_MAX_DELAY = 60.0  # real seconds at most between a worker's death and the next's start
# the collector writes the changes a few times a second, not every loop turn: each send
# lets go of the GIL, and the loop waits to get it back from the actor's other threads
_FLUSH_EVERY = 0.1  # real seconds
_SEND_BUFFER = 8 * 1024 * 1024  # bytes the worker may be behind before writes wait
_SO_SNDBUFFORCE = getattr(socket, "SO_SNDBUFFORCE", 32)  # Linux's number; Python names none

Op = tuple[str, str, str, str, "bytes | None", int]


def _frame(message: tuple[Any, ...]) -> bytes:
    body = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return _LENGTH.pack(len(body)) + body


def _op_stored(record: AdRecord) -> Op:
    type_key = record.ad_type.lower()
    return (type_key, record.ad_type, record.name.lower(), record.name, record.wire(),
            record.stable_prefix)  # fmt: skip


def _op_removed(record: AdRecord) -> Op:
    return (record.ad_type.lower(), record.ad_type, record.name.lower(), record.name, None, 0)


def every_record(store: AdStore) -> list[AdRecord]:
    """Every stored record, each table's in its order (a new replica's first feed)."""
    return [r for ad_type in list(store.counts()) for r in store.records(ad_type)]


# ----------------------------------------------------------------------------- collector side


class QueryWorker:
    """The collector's side: starts the worker process, feeds it the store's changes,
    hands it queries; restarts it when it dies. Runs on the collector's event loop."""

    def __init__(
        self,
        store: AdStore,
        *,
        name: str = "collector",
        restart_after: float = 1.0,
        argv: list[str] | None = None,
    ) -> None:
        self.store = store
        self.name = name
        self.restart_after = restart_after
        # the worker's command line; its Unix socket's descriptor is appended
        self._argv = argv or [sys.executable, "-m", "mockpool.cedar.query_worker"]
        self._loop: asyncio.AbstractEventLoop | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._sock: socket.socket | None = None
        self._out: deque[tuple[memoryview, int | None]] = deque()
        self._queued = 0
        self._writing = False
        self._ops: list[Op] = []
        self._flush_due = False
        self._dumping = False
        self._ready = False  # fed every stored ad: queries may go to it
        self._stopped = False
        self._restart: asyncio.TimerHandle | None = None
        self._failures = 0  # deaths in a row of workers that did not last
        self.restart_delay = restart_after  # the last wait before a new worker
        self._ready_at = 0.0  # loop time the current worker became ready
        self.counts = {"started": 0, "died": 0, "handed": 0, "answered_here": 0}

    # -- life ----------------------------------------------------------------------------
    def start(self) -> None:
        """Start the worker and feed it every stored ad (in turns), then each change."""
        self._loop = asyncio.get_running_loop()
        self._stopped = False
        self.store.on_stored = self._on_stored
        self.store.on_removed = self._on_removed
        self._spawn()

    @property
    def ready(self) -> bool:
        """Whether queries go to the worker (it runs and has been sent every ad)."""
        return self._ready

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def _spawn(self) -> None:
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._proc = subprocess.Popen(
                [*self._argv, str(theirs.fileno())],
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
            )
        except OSError:
            log.exception("%s: could not start the query worker", self.name)
            mine.close()
            self._schedule_restart()
            return
        finally:
            theirs.close()
        mine.setblocking(False)
        for option in (_SO_SNDBUFFORCE, socket.SO_SNDBUF):  # FORCE: past wmem_max, if allowed
            with contextlib.suppress(OSError):
                mine.setsockopt(socket.SOL_SOCKET, option, _SEND_BUFFER)
                break
        self._sock = mine
        self.counts["started"] += 1
        assert self._loop is not None
        self._loop.add_reader(mine.fileno(), self._on_readable)
        self._ops = []
        self._dumping = True
        self._loop.create_task(self._dump())

    async def _dump(self) -> None:
        """Send every stored ad, a few thousand a turn; changes meanwhile wait in
        ``_ops`` and follow (so they land after the version the dump sent)."""
        sock = self._sock
        records = every_record(self.store)
        async for part in turns.in_turns(records, _DUMP_PER_TURN):
            if self._sock is not sock:
                return  # died meanwhile
            self._send(_frame(("ops", [_op_stored(r) for r in part])))
        if self._sock is not sock:
            return
        self._dumping = False
        self._ready = True
        assert self._loop is not None
        self._ready_at = self._loop.time()
        self._flush()
        log.info("%s: query worker %s fed %d ads", self.name, self.pid, len(records))

    async def stop(self) -> None:
        """Stop the worker (it exits when its socket closes) and feed it no more."""
        self._stopped = True
        if self._restart is not None:
            self._restart.cancel()
        if self.store.on_stored == self._on_stored:
            self.store.on_stored = self.store.on_removed = None
        proc, self._proc = self._proc, None
        self._broken("stopped")
        if proc is not None:
            try:
                await asyncio.to_thread(proc.wait, 5.0)
            except subprocess.TimeoutExpired:
                proc.kill()
                await asyncio.to_thread(proc.wait)

    def _broken(self, why: str) -> None:
        """The worker is gone or unusable: queries come back to the collector."""
        sock, self._sock = self._sock, None
        self._ready = self._dumping = False
        self._ops = []
        if sock is not None and self._loop is not None:
            self._loop.remove_reader(sock.fileno())
            if self._writing:
                self._loop.remove_writer(sock.fileno())
            sock.close()
        self._writing = False
        while self._out:
            _, fd = self._out.popleft()
            if fd is not None:
                os.close(fd)  # that client's query is lost with the worker
        self._queued = 0
        if why == "stopped":
            return
        proc, self._proc = self._proc, None
        if proc is not None:
            if proc.poll() is None:
                proc.kill()
            with contextlib.suppress(Exception):
                proc.wait(1.0)
        self.counts["died"] += 1
        log.warning("%s: query worker %s: %s; answering queries here", self.name,
                    proc.pid if proc else "?", why)  # fmt: skip
        self._schedule_restart()

    def _schedule_restart(self) -> None:
        """The next worker starts ``restart_after`` real seconds on, doubled for each
        worker before it in a row that died within ``_LASTS`` of being fed (one that
        cannot start at all is not retried every second for ever), at most ``_MAX_DELAY``."""
        if self._stopped or self._loop is None:
            return
        lasted = self._ready_at and self._loop.time() - self._ready_at >= _LASTS
        self._failures = 0 if lasted else self._failures + 1
        self._ready_at = 0.0
        self.restart_delay = min(self.restart_after * 2 ** max(0, self._failures - 1), _MAX_DELAY)
        self._restart = self._loop.call_later(self.restart_delay, self._respawn)

    def _respawn(self) -> None:
        self._restart = None
        if not self._stopped and self._sock is None:
            self._spawn()

    def _on_readable(self) -> None:
        """The worker writes nothing: readable means it closed its end (it died)."""
        sock = self._sock
        if sock is None:
            return
        try:
            data = sock.recv(4096)
        except BlockingIOError:
            return
        except OSError as exc:
            data = b""
            log.debug("%s: query worker socket: %s", self.name, exc)
        if not data:
            code = self._proc.poll() if self._proc is not None else None
            self._broken(f"exited ({code})" if code is not None else "closed its socket")

    # -- the feed ------------------------------------------------------------------------
    def _on_stored(self, record: AdRecord) -> None:
        if self._sock is not None:
            self._ops.append(_op_stored(record))
            self._flush_soon()

    def _on_removed(self, record: AdRecord) -> None:
        if self._sock is not None:
            self._ops.append(_op_removed(record))
            self._flush_soon()

    def _flush_soon(self) -> None:
        if not self._flush_due and self._loop is not None:
            self._flush_due = True
            self._loop.call_later(_FLUSH_EVERY, self._flush)

    def _flush(self) -> None:
        self._flush_due = False
        if self._ops and not self._dumping and self._sock is not None:
            ops, self._ops = self._ops, []
            self._send(_frame(("ops", ops)))

    # -- queries -------------------------------------------------------------------------
    def hand_over(
        self, sock: CedarSocket, command: int, query_ad: ClassAd, private_ok: bool, now: float
    ) -> bool:
        """Send the query and its connection to the worker, after every change so far;
        False when it cannot take it (not ready, or the connection cannot be carried):
        the caller answers it."""
        if not self._ready or self._sock is None:
            self.counts["answered_here"] += 1
            return False
        detached = sock.detach()
        if detached is None:
            self.counts["answered_here"] += 1
            return False
        fd, state = detached
        self._flush()
        self._send(_frame(("query", command, query_ad, private_ok, now, state, sock.limits)), fd)
        self.counts["handed"] += 1
        return True

    # -- writing -------------------------------------------------------------------------
    def _send(self, data: bytes, fd: int | None = None) -> None:
        if self._sock is None:
            if fd is not None:
                os.close(fd)
            return
        self._out.append((memoryview(data), fd))
        self._queued += len(data)
        if self._queued > _MAX_QUEUED:
            self._broken(f"{self._queued} bytes unread")
            return
        if not self._writing:
            self._write()

    def _write(self) -> None:
        sock = self._sock
        while self._out and sock is not None:
            data, fd = self._out[0]
            try:
                if fd is None:
                    n = sock.send(data)
                else:
                    fds = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [fd]))]
                    n = sock.sendmsg([data], fds)
            except BlockingIOError:
                n = 0
            except OSError as exc:
                self._broken(f"socket: {exc}")
                return
            if n == 0:
                if not self._writing and self._loop is not None:
                    self._writing = True
                    self._loop.add_writer(sock.fileno(), self._write)
                return
            if fd is not None:
                os.close(fd)  # it went with the first byte; the worker holds its own
            self._queued -= n
            if n < len(data):
                self._out[0] = (data[n:], None)
            else:
                self._out.popleft()
        if self._writing and sock is not None and self._loop is not None:
            self._writing = False
            self._loop.remove_writer(sock.fileno())


# ----------------------------------------------------------------------------- worker side


class Replica:
    """The worker's copy of the collector's tables, in the store's order; every ad
    encoded for CEDAR as it arrives."""

    def __init__(self) -> None:
        self.tables: dict[str, dict[str, AdRecord]] = {}
        self.applied = 0

    def apply(self, ops: list[Op]) -> None:
        for type_key, ad_type, key, name, wire, prefix in ops:
            table = self.tables.get(type_key)
            if table is None:
                table = self.tables[type_key] = {}
            if wire is None:
                table.pop(key, None)
            else:
                record = AdRecord(ad_type, name, PARTS.decode(wire, prefix), 0, 0)
                _ = _kept(record).enc.plain  # encoded on arrival, bytes joined: no query pays
                table[key] = record
            self.applied += 1
        room_for(sum(len(t) for t in self.tables.values()))  # as the collector's decoder

    def candidates(self, ad_type: str, private_ok: bool) -> list[AdRecord]:
        """``AdStore.candidates``, with the rule of ``CollectorService.select``."""
        low = ad_type.lower()
        if low == MACHINE_PRIVATE.lower() and not private_ok:
            raise PrivateAdsRefused(
                f"{MACHINE_PRIVATE} ads hold claim ids: only the negotiator or an admin "
                "may read them"
            )
        if low == ANY_AD.lower():
            return [
                r
                for key, t in sorted(self.tables.items())
                if key != MACHINE_PRIVATE.lower()
                for r in t.values()
            ]
        return list(self.tables.get(low, {}).values())

    def picker(self, private_ok: bool, now: float) -> Callable[[str, Expr | None], Any]:
        """The ``pick`` of :func:`collector_cmds.select_with` over this replica."""

        async def pick(table: str, constraint: Expr | None) -> list[AdRecord]:
            records = self.candidates(table, private_ok)
            if constraint is None or len(records) < _OFFLOAD_AT:
                return matching(records, constraint, now)
            return await asyncio.to_thread(matching, records, constraint, now)

        return pick


async def answer_here(
    replica: Replica,
    sock: CedarSocket,
    command: int,
    query_ad: ClassAd,
    private_ok: bool,
    now: float,
) -> int:
    """Answer one query from ``replica`` on ``sock``; QueryRefused or CollectorError
    (nothing sent) for one the collector drops. The same rules as the collector's."""
    q = parse_query(command, query_ad)
    chosen = await select_with(replica.picker(private_ok, now), q)
    return await send_reply(sock, chosen, query_ad, now)


async def _serve_query(replica: Replica, fd: int, msg: tuple[Any, ...]) -> None:
    _, command, query_ad, private_ok, now, state, limits = msg
    raw = socket.socket(fileno=fd)
    try:
        reader, writer = await asyncio.open_connection(sock=raw)
    except OSError as exc:
        raw.close()
        log.info("query worker: connection handed over is gone: %s", exc)
        return
    codec = PacketCodec.restored(state, AesGcmCipher.from_state)
    sock = CedarSocket(reader, writer, limits, codec=codec)
    try:
        await answer_here(replica, sock, command, query_ad, private_ok, now)
    except (QueryRefused, CollectorError) as exc:
        log.warning("query worker: query refused: %s", exc)
    except (ConnectionError, asyncio.TimeoutError) as exc:
        log.info("query worker: %s: %s", sock.peer_text, exc)
    except Exception as exc:  # one query's failure must not end the worker
        log.error("query worker: %s: %s: %s", sock.peer_text, type(exc).__name__, exc)
    finally:
        await sock.close()


async def serve(fd: int) -> None:
    """The worker's loop: read the collector's messages in order, apply the changes,
    answer each query in a task of its own; end when the collector closes the socket."""
    loop = asyncio.get_running_loop()
    control = socket.socket(fileno=fd)
    control.setblocking(False)
    replica = Replica()
    buf = bytearray()
    fds: deque[int] = deque()
    tasks: set[asyncio.Task[None]] = set()
    readable = asyncio.Event()
    loop.add_reader(control.fileno(), readable.set)
    keeper = loop.create_task(_keep_gc())  # the replica lives long: frozen, never walked
    space = socket.CMSG_SPACE(64 * array.array("i").itemsize)
    try:
        while True:
            try:
                data, ancdata, _, _ = control.recvmsg(1 << 20, space)
            except BlockingIOError:
                readable.clear()
                await readable.wait()
                continue
            if not data:
                return  # the collector closed it: its process ended, or it stopped us
            for level, kind, cdata in ancdata:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    got = array.array("i")
                    got.frombytes(cdata[: len(cdata) - len(cdata) % got.itemsize])
                    fds.extend(got)
            buf += data
            while len(buf) >= 4:
                (n,) = _LENGTH.unpack_from(buf)
                if len(buf) < 4 + n:
                    break
                msg = pickle.loads(buf[4 : 4 + n])
                del buf[: 4 + n]
                if msg[0] == "ops":
                    ops = msg[1]
                    for start in range(0, len(ops), _APPLY_PER_TURN):
                        replica.apply(ops[start : start + _APPLY_PER_TURN])
                        await asyncio.sleep(0)
                elif msg[0] == "query":
                    task = loop.create_task(_serve_query(replica, fds.popleft(), msg))
                    tasks.add(task)
                    task.add_done_callback(tasks.discard)
    finally:
        loop.remove_reader(control.fileno())
        keeper.cancel()
        for task in list(tasks):
            task.cancel()
        control.close()


async def _keep_gc() -> None:
    keeper = gctune.Keeper()
    while True:
        await asyncio.sleep(gctune.FREEZE_EVERY)
        keeper.tick()


def main(argv: list[str] | None = None) -> None:
    """``python -m mockpool.cedar.query_worker FD``: serve the collector on FD."""
    args = sys.argv[1:] if argv is None else argv
    logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s")
    with contextlib.suppress(OSError, AttributeError):
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    gctune.paced()
    asyncio.run(serve(int(args[0])))


if __name__ == "__main__":
    main()
