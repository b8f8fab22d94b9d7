"""The collector's query worker (cedar/query_worker.py): a replica of the store, fed by its
changes, answers exactly as the collector does; every ad is encoded as it arrives; the
connection (and its cipher) carries over to another process; a dead worker leaves the
collector answering and is started again."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from builders.htcondor import run_htcondor

from mockpool.auth import Principal, Role, acting_as
from mockpool.cedar import Builder, CedarServer, SecurityConfig, commands
from mockpool.cedar.collector_cmds import answer, collector_commands
from mockpool.cedar.crypto import AesGcmCipher
from mockpool.cedar.framing import PacketCodec
from mockpool.cedar.query_worker import (
    QueryWorker,
    Replica,
    _op_removed,
    _op_stored,
    answer_here,
    every_record,
)
from mockpool.classad import ClassAd, parse_expr
from mockpool.collector.collector import CollectorUpdate
from mockpool.collector.service import CollectorService


def _ad(**attrs: object) -> ClassAd:
    out = ClassAd()
    for k, v in attrs.items():
        out[k] = v
    return out


def _slot(i: int, cpus: int = 1, state: str = "Unclaimed") -> ClassAd:
    return _ad(Name=f"slot{i}@exec1", Machine="exec1", Cpus=cpus, State=state, Memory=512 * cpus)


@pytest.fixture
async def collector(tmp_path: Path, daemon_ctx: Any) -> AsyncIterator[CollectorService]:
    svc = CollectorService(daemon_ctx(tmp_path, host="cm", address="127.0.0.1:9618"))
    await svc.start()
    yield svc
    await svc.stop()


def _advertise(svc: CollectorService, *ads: tuple[str, ClassAd], invalidate: bool = False) -> None:
    updates = [CollectorUpdate(i, t, a, invalidate=invalidate) for i, (t, a) in enumerate(ads)]
    took, refused = svc.core.advertise(updates, svc.ctx.clock.now())
    assert took == len(updates) and not refused


class _Sink:
    """What a reply writes (a CedarSocket's flush/send), kept."""

    encrypted = False

    def __init__(self) -> None:
        self.data = b""

    async def flush(self, builder: Builder) -> None:
        self.data += builder.take().build()

    async def send(self, builder: Builder) -> None:
        self.data += builder.build()


QUERIES: list[tuple[int, ClassAd, Role]] = [
    (commands.QUERY_STARTD_ADS, _ad(MyType="Query"), Role.READ),
    (
        commands.QUERY_STARTD_ADS,
        _ad(Requirements=parse_expr("Cpus >= 2"), Projection="Name Cpus", LimitResults=5),
        Role.READ,
    ),
    (commands.QUERY_ANY_ADS, _ad(MyType="Query"), Role.READ),
    (commands.QUERY_STARTD_PVT_ADS, _ad(MyType="Query"), Role.NEGOTIATOR),
    (commands.QUERY_SCHEDD_ADS, _ad(LocationQuery="schedd1@ap"), Role.READ),
]


async def _both(svc: CollectorService, replica: Replica) -> list[tuple[bytes, bytes]]:
    """Each query's reply from the collector and from the replica."""
    out = []
    now = svc.store.ad_epoch + svc.ctx.clock.now()
    for command, query, role in QUERIES:
        here, there = _Sink(), _Sink()
        with acting_as(Principal(role)):
            await answer(svc, here, query, command)
        private_ok = role in (Role.NEGOTIATOR, Role.ADMIN)
        await answer_here(replica, there, command, query, private_ok, now)
        out.append((here.data, there.data))
    return out


async def test_a_replica_fed_by_the_store_answers_as_the_collector(
    collector: CollectorService,
) -> None:
    """The store's hooks in order, applied to a replica: after updates, a rename of
    spelling, an invalidation (which takes the private ad along) and an ad added back
    (it goes to the end, as in the store), every reply is byte for byte the collector's."""
    store = collector.store
    replica = Replica()
    replica.apply([_op_stored(r) for r in every_record(store)])  # the collector's own ad
    store.on_stored = lambda r: replica.apply([_op_stored(r)])
    store.on_removed = lambda r: replica.apply([_op_removed(r)])
    _advertise(
        collector,
        *[("Machine", _slot(i, cpus=i)) for i in (1, 2, 3)],
        ("MachinePrivate", _ad(Name="slot2@exec1", Capability="<10.0.0.1:1>#1#secret")),
        ("Scheduler", _ad(Name="schedd1@ap", Machine="ap", MyAddress="<127.0.0.1:9001>")),
    )
    for here, there in await _both(collector, replica):
        assert here == there and here.startswith(b"\0" * 7 + b"\1")  # some ads went
    _advertise(collector, ("Machine", _slot(1, cpus=8)), ("Machine", _ad(Name="SLOT3@exec1")))
    _advertise(collector, ("Machine", _slot(2)), invalidate=True)
    _advertise(collector, ("Machine", _slot(2, cpus=4)))
    assert [r.name for r in replica.candidates("Machine", False)] == [
        "slot1@exec1", "SLOT3@exec1", "slot2@exec1"
    ]  # fmt: skip
    assert replica.candidates("MachinePrivate", True) == []  # invalidated with its slot
    for here, there in await _both(collector, replica):
        assert here == there


async def test_every_ad_is_encoded_as_it_arrives_in_the_replica_not_the_collector(
    collector: CollectorService,
) -> None:
    """No query pays for an encoding (the replica made each on arrival), and the
    collector's own records are not encoded for it."""
    replica = Replica()
    collector.store.on_stored = lambda r: replica.apply([_op_stored(r)])
    _advertise(collector, *[("Machine", _slot(i)) for i in range(1, 5)])
    # each ad's lines made and joined into the bytes a reply carries
    assert all(r.cedar.enc._plain is not None for r in replica.candidates("Machine", False))
    assert all(r.cedar is None for r in collector.store.records("Machine"))


def test_without_a_listener_the_store_feeds_no_one(collector: CollectorService) -> None:
    """A pool without CEDAR pays nothing: no hook is set."""
    assert collector.store.on_stored is None and collector.store.on_removed is None


def test_a_connection_carries_on_with_its_cipher_state() -> None:
    """An encrypted codec exported mid-connection and restored elsewhere seals the next
    packets exactly as the original would, and opens what the peer sends next."""
    key = bytes(range(32))
    server = PacketCodec(packet_size=64)
    server.set_cipher(AesGcmCipher(key, random=lambda n: b"S" * n))
    client = PacketCodec(packet_size=64)
    client.set_cipher(AesGcmCipher(key, random=lambda n: b"C" * n))
    # some traffic first: both directions' first packets (IVs sent, digests used)
    for payload in (b"hello" * 20, b"x"):
        packet = server.encode(payload)
        assert _opened(client, packet) == payload
        packet = client.encode(payload)
        assert _opened(server, packet) == payload
    state = server.export_state()
    assert state is not None
    carried = PacketCodec.restored(state, AesGcmCipher.from_state)
    assert carried.encode(b"the reply" * 30) == server.encode(b"the reply" * 30)
    later = client.encode(b"more")
    assert _opened(carried, later) == b"more"


def _opened(codec: PacketCodec, packets: bytes) -> bytes:
    out, i = b"", 0
    while i < len(packets):
        header = packets[i : i + 5]
        n = int.from_bytes(header[1:], "big")
        out += codec.decode(header, packets[i + 5 : i + 5 + n])
        i += 5 + n
    return out


# ----------------------------------------------------------------------------- the process

QUERY = """
c = htcondor2.Collector("127.0.0.1:{port}")
result = [
    sorted((a["Name"], a["Cpus"]) for a in c.query(htcondor2.AdType.Startd)),
    [(a["Name"], a.get("Capability")) for a in c.query(htcondor2.AdType.StartdPrivate)],
]
"""


async def _until(condition: Callable[[], bool]) -> None:
    """Wait for ``condition`` (the worker process starts and reads on its own time)."""
    for _ in range(600):
        if condition():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the query worker never got there")


async def _queried(port: int, folder: Path, config: str = "") -> Any:
    got = await run_htcondor(QUERY.format(port=port), folder, config)
    return [[tuple(x) for x in part] for part in got]


async def test_the_worker_process_answers_and_a_dead_one_is_replaced(
    collector: CollectorService, tmp_path: Path
) -> None:
    """htcondor2 queries a listener whose collector hands queries to its worker: the
    ads as updated and invalidated, private ads to the pool's own user; killed, the
    worker's queries are answered by the collector until a new worker, fed every ad,
    takes them again; the listener's stop ends it."""
    _advertise(
        collector,
        *[("Machine", _slot(i, cpus=i)) for i in (1, 2, 3)],
        ("MachinePrivate", _ad(Name="slot2@exec1", Capability="<10.0.0.1:1>#1#secret")),
    )
    worker = QueryWorker(collector.store, restart_after=0.0)
    server = CedarServer(collector_commands(collector, worker), SecurityConfig(), name="cm")
    worker.start()
    server.closers.append(worker.stop)
    port = await server.start()
    try:
        await _until(lambda: worker.ready)
        _advertise(collector, ("Machine", _slot(1, cpus=8)))
        _advertise(collector, ("Machine", _slot(2)), invalidate=True)
        got = await _queried(port, tmp_path)
        assert got == [[("slot1@exec1", 8), ("slot3@exec1", 3)], []]
        assert worker.counts["handed"] == 2 and worker.counts["answered_here"] == 0
        _advertise(collector, ("Machine", _slot(2, cpus=2)))
        _advertise(
            collector, ("MachinePrivate", _ad(Name="slot2@exec1", Capability="<10.0.0.1:1>#2#s"))
        )
        pid = worker.pid
        assert pid is not None
        # the worker yields the CPU to every normal process: the collector's loop first
        assert os.sched_getscheduler(pid) == os.SCHED_IDLE
        os.kill(pid, signal.SIGKILL)
        await _until(lambda: worker.counts["died"] == 1)
        # answered here (or by the new worker, if it was quick): the same ads either way
        want = [
            [("slot1@exec1", 8), ("slot2@exec1", 2), ("slot3@exec1", 3)],
            [("slot2@exec1", "<10.0.0.1:1>#2#s")],
        ]
        assert await _queried(port, tmp_path) == want
        await _until(lambda: worker.ready and worker.counts["started"] == 2)
        handed = worker.counts["handed"]
        assert await _queried(port, tmp_path) == want
        assert worker.counts["handed"] == handed + 2
        new_pid = worker.pid
    finally:
        await server.stop()
    assert new_pid is not None and new_pid != pid
    assert worker.pid is None and not worker.ready
    with pytest.raises(ChildProcessError):
        os.waitpid(new_pid, os.WNOHANG)  # reaped


async def test_an_encrypted_connection_is_answered_by_the_worker(
    collector: CollectorService, tmp_path: Path
) -> None:
    """With encryption and integrity required, the worker carries the AES-GCM stream on
    from where the collector's handshake left it."""
    from mockpool.cedar.crypto import AesCrypto

    _advertise(collector, *[("Machine", _slot(i, cpus=i)) for i in (1, 2)])
    worker = QueryWorker(collector.store)
    config = SecurityConfig(crypto=AesCrypto(), encryption="REQUIRED", integrity="REQUIRED")
    server = CedarServer(collector_commands(collector, worker), config, name="cm")
    worker.start()
    server.closers.append(worker.stop)
    port = await server.start()
    try:
        await _until(lambda: worker.ready)
        got = await _queried(
            port, tmp_path, "SEC_DEFAULT_ENCRYPTION = REQUIRED\nSEC_DEFAULT_INTEGRITY = REQUIRED"
        )
    finally:
        await server.stop()
    assert got[0] == [("slot1@exec1", 1), ("slot2@exec1", 2)]
    assert worker.counts["handed"] == 2


@pytest.mark.parametrize(("knob", "started"), [("", 1), ("COLLECTOR_QUERY_WORKERS = 0", 0)])
async def test_the_central_listener_starts_a_worker_unless_told_not_to(
    collector: CollectorService, knob: str, started: int
) -> None:
    """HTCondor's knob: 0 keeps the queries in the collector's loop."""
    from mockpool.config import parse_config
    from mockpool.pool.cedar_listeners import start_listeners

    config = parse_config(knob + "\n", "<test>")
    servers = await start_listeners(
        "central", [collector], config, "s" * 40, "pooluser", host="127.0.0.1"
    )
    try:
        counts = servers[""].counts.query_worker
        assert counts.get("started", 0) == started
        assert (collector.store.on_stored is not None) == bool(started)
    finally:
        await servers[""].stop()
    assert collector.store.on_stored is None  # stopped with the listener


async def test_a_worker_that_cannot_start_is_retried_ever_later(
    collector: CollectorService,
) -> None:
    """Each worker in a row that dies before it lasts doubles the wait before the next
    (from ``restart_after``); meanwhile every query stays with the collector."""
    import sys

    exits = [sys.executable, "-c", "import sys; sys.exit(3)"]  # as an import error would
    worker = QueryWorker(collector.store, restart_after=0.01, argv=exits)
    worker.start()
    try:
        await _until(lambda: worker.counts["died"] >= 4)
        died, delay = worker.counts["died"], worker.restart_delay
        assert delay == pytest.approx(0.01 * 2 ** (died - 1))
        query = _ad(MyType="Query")
        assert not worker.hand_over(None, commands.QUERY_STARTD_ADS, query, False, 0.0)  # type: ignore[arg-type]
        assert worker.counts["handed"] == 0 and worker.counts["answered_here"] == 1
    finally:
        await worker.stop()
