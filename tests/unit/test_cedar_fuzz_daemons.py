"""Fuzz each daemon's real CEDAR listener (``pool.cedar_listeners.start_listeners``): the
central manager's (collector and negotiator commands), a negotiator's own, and a
schedd's. Random frames and cut or mutated handshakes, then, after a good handshake as
the pool's administrator (every command's level passes), random messages for each of the
listener's commands: queue-management calls with their numbers and random arguments,
ACT_ON_JOBS and query ads, priority setters' names and numbers. Whatever arrives, the
listener closes by its own checks or (short) timeouts, counts no handler error, logs no
error, and answers a good query right after; at the end ``htcondor2`` still gets answers.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from builders.cedarfuzz import ErrorLog, send
from builders.cores import daemon_context
from builders.htcondor import run_htcondor
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mockpool.cedar import Builder, Limits
from mockpool.cedar import commands as cmd
from mockpool.cedar import qmgmt as q
from mockpool.cedar.rawclient import RawClient, ServerThread, claimtobe_handshake, encode_messages
from mockpool.classad import ClassAd, parse_expr
from mockpool.collector.collector import CollectorUpdate
from mockpool.collector.service import CollectorService
from mockpool.condor_version import CONDOR_VERSION
from mockpool.config import parse_config
from mockpool.daemon import DaemonContext
from mockpool.negotiator.service import NegotiatorService
from mockpool.pool.cedar_listeners import start_listeners
from mockpool.schedd.service import ScheddService

# short timeouts, so a stalled client costs two seconds; long enough that the good
# query's client, on a loaded 2-core machine, is not itself timed out (at 1 s it once was,
# beside a benchmark: "server closed the connection")
LIMITS = Limits(handshake_timeout=2.0, read_timeout=2.0, write_timeout=5.0, max_message=4096)
ADMIN = "fuzzer"  # the pool's own user: CLAIMTOBE as it is an administrator
CONFIG = "SEC_DEFAULT_AUTHENTICATION_METHODS = CLAIMTOBE\n"
E = 1_767_225_600  # the pool's date of pool time 0
SUB = "executable = /bin/sleep\narguments = 60\nqueue 3\n"


class DaemonListener:
    """One role's services and their listener, on a ServerThread's loop (pool time
    stands still: a ManualClock)."""

    def __init__(self, role: str, folder: Path) -> None:
        self.role = role
        self.folder = folder
        self.services: list[Any] = []
        self.server: Any = None

    def _ctx(self, name: str) -> DaemonContext:
        return daemon_context(
            self.folder / name, CONFIG, host="cm", address="127.0.0.1:9618", ad_epoch=E
        )

    def _negotiator(self) -> NegotiatorService:
        priorities = {"alice@pool": {"factor": 10.0, "priority": 2.0}}
        return NegotiatorService(self._ctx("negotiator"), log_base_wall=E, priorities=priorities)

    async def start(self) -> int:
        if self.role == "central":
            collector = CollectorService(self._ctx("collector"))
            await collector.start()
            slots = [ClassAd(Name=f"slot{i}@exec1", Machine="exec1", Cpus=i) for i in (1, 2)]
            took, _ = collector.core.advertise(
                [CollectorUpdate(i, "Machine", a) for i, a in enumerate(slots)], 100.0
            )
            assert took == 2
            self.services = [collector, self._negotiator()]
        elif self.role == "negotiator":
            self.services = [self._negotiator()]
        else:
            schedd = ScheddService(self._ctx("schedd"), ["schedd1"])
            schedd.cores["schedd1"].submit(SUB, "a.sub", "alice", 10.0)
            self.services = [schedd]
        (self.server,) = (
            await start_listeners(
                self.role,
                self.services,
                parse_config(CONFIG, "<fuzz>"),
                "s" * 40,
                ADMIN,
                host="127.0.0.1",
                limits=LIMITS,
            )
        ).values()
        return self.server.port

    async def stop(self) -> None:
        await self.server.stop()
        for svc in self.services:
            if hasattr(svc, "stop"):
                await svc.stop()

    @property
    def numbers(self) -> list[int]:
        return self.server.command_numbers

    def good_query(self, port: int) -> list[Any]:
        """A read each role answers: slot names, accounting names, or job ids."""
        command = {
            "central": cmd.QUERY_STARTD_ADS,
            "negotiator": cmd.QUERY_ACCOUNTING_ADS,
            "schedd": cmd.QUERY_JOB_ADS,
        }[self.role]
        with RawClient("127.0.0.1", port) as c:
            assert c.start_command(command, user=f"{ADMIN}@x").eval("ReturnCode") == "AUTHORIZED"
            query = ClassAd()
            query["Requirements"] = True
            c.send(Builder().put_ad(query))
            if self.role == "schedd":  # an ad per message, the summary last
                ads = []
                while (ad := c.recv().get_ad()).eval("MyType") != "Summary":
                    ads.append(ad)
                return sorted((a.eval("ClusterId"), a.eval("ProcId")) for a in ads)
            msg = c.recv()
            names = []
            while msg.get_int() == 1:
                names.append(msg.get_ad().eval("Name"))
            return sorted(names)


GOOD = {
    "central": ["slot1@exec1", "slot2@exec1"],
    "negotiator": ["alice@pool"],
    "schedd": [(1, 0), (1, 1), (1, 2)],
}


@pytest.fixture(scope="module", params=["central", "negotiator", "schedd"])
def listener(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[ServerThread, DaemonListener, ErrorLog]]:
    errors = ErrorLog()
    loggers = [logging.getLogger("mockpool"), logging.getLogger("asyncio")]
    for lg in loggers:
        lg.addHandler(errors)
    daemon = DaemonListener(request.param, tmp_path_factory.mktemp(request.param))
    try:
        with ServerThread(lambda: daemon) as srv:
            yield srv, daemon, errors
    finally:
        for lg in loggers:
            lg.removeHandler(errors)


# ------------------------------------------------------------------------------ inputs

# attributes the commands read (queries, ACT_ON_JOBS), and one none reads
names = st.sampled_from(
    [
        *("Owner", "ClusterId", "ProcId", "JobStatus", "Requirements", "Projection", "Name"),
        *("JobAction", "ActionIds", "ActionConstraint", "HoldReason", "LimitResults", "x"),
    ]
)
exprs = st.one_of(
    st.integers(-(2**63), 2**63 - 1).map(str),
    st.text(max_size=20).map(lambda t: '"' + t.replace('"', "").replace("\0", "") + '"'),
    st.integers(0, 6).map(str),  # JobAction's numbers
    st.sampled_from(["true", "undefined", "error", "ProcId >= 1", "1 +", "{1,", "Owner =?="]),
    st.sampled_from(['"1.0"', '"1.0,1.2"', '"1"', '"1.x"', '"alice"']),
)


@st.composite
def ads(draw: st.DrawFn) -> ClassAd:
    ad = ClassAd()
    for name, text in draw(st.lists(st.tuples(names, exprs), max_size=5)):
        try:
            ad[name] = parse_expr(text)
        except Exception:
            ad[name] = text  # not an expression: the text as a string
    return ad


values = st.one_of(
    st.integers(-(2**31), 2**31).map(lambda v: ("int", v)),
    st.sampled_from([*range(10000, 10041), 0, -1]).map(lambda v: ("int", v)),
    st.text(max_size=40).map(lambda v: ("str", v)),
    st.binary(max_size=16).map(lambda v: ("bytes", v)),
    ads().map(lambda v: ("ad", v)),
)


def message(parts: list[tuple[str, Any]]) -> Builder:
    b = Builder()
    for kind, v in parts:
        if kind == "int":
            b.put_int(v)
        elif kind == "str":
            b.put_string(v.replace("\0", ""))
        elif kind == "bytes":
            b.put_bytes(v)
        else:
            b.put_ad(v)
    return b


# each queue-management call's arguments (qmgmt_send_stubs.cpp): i an int, s a string
# (a name, a value or a constraint), b the flags byte
SIGNATURES = {
    q.NewCluster: "",
    q.NewProc: "i",
    q.DestroyCluster: "i",
    q.DestroyProc: "ii",
    q.SetAttribute: "iiss",
    q.SetAttribute2: "iissb",
    q.SetAttributeByConstraint: "sss",
    q.SetAttributeByConstraint2: "sssb",
    q.DeleteAttribute: "iis",
    q.BeginTransaction: "",
    q.AbortTransaction: "",
    q.CommitTransaction: "i",
    q.CommitTransactionNoFlags: "",
    q.CloseSocket: "",
    q.GetCapabilities: "i",
    q.SetEffectiveOwner: "s",
    q.SetAllowProtectedAttrChanges: "i",
    q.GetAttributeInt: "iis",
    q.GetAttributeExpr: "iis",
    q.GetJobAd: "ii",
    q.GetJobByConstraint: "s",
    q.GetNextJob: "i",
    q.GetNextJobByConstraint: "is",
    q.GetAllJobsByConstraint: "ss",
}
typed = {
    # ids: the seeded cluster 1 and its procs, a new cluster's, none's, the largest
    "i": st.sampled_from([1, 1, 1, 0, 2, -1, 2**31 - 1, -(2**31)]).map(lambda v: ("int", v)),
    "s": st.one_of(names, exprs, st.text(max_size=20)).map(lambda v: ("str", v)),
    "b": st.binary(min_size=1, max_size=1).map(lambda v: ("bytes", v)),
}


@st.composite
def qmgmt_calls(draw: st.DrawFn) -> list[tuple[str, Any]]:
    """A queue-management call: its number, then its arguments, as the stubs send them
    or (one time in four) random ones."""
    number = draw(st.sampled_from(sorted(SIGNATURES)))
    if draw(st.integers(0, 3)) == 0:
        return [("int", number), *draw(st.lists(values, max_size=4))]
    return [("int", number), *(draw(typed[k]) for k in SIGNATURES[number])]


messages = st.lists(st.lists(values, min_size=1, max_size=4), min_size=1, max_size=4)


@st.composite
def after_handshake(draw: st.DrawFn, numbers: list[int]) -> bytes:
    """A good CLAIMTOBE handshake for one of the listener's commands, random messages."""
    number = draw(st.sampled_from(numbers))
    if number in (cmd.QMGMT_WRITE_CMD, cmd.QMGMT_READ_CMD):  # a session of calls
        msgs = [message(m) for m in draw(st.lists(qmgmt_calls(), min_size=1, max_size=8))]
    else:
        msgs = [message(m) for m in draw(messages)]
    return encode_messages([*claimtobe_handshake(number, f"{ADMIN}@x"), *msgs])


@st.composite
def before_handshake(draw: st.DrawFn, numbers: list[int]) -> bytes:
    """Garbage frames, or a handshake cut short and bytes changed."""
    if draw(st.booleans()):
        return draw(st.binary(max_size=200))
    base = encode_messages(claimtobe_handshake(draw(st.sampled_from(numbers)), f"{ADMIN}@x"))
    data = bytearray(base[: draw(st.integers(0, len(base)))])
    for _ in range(draw(st.integers(0, 3))):
        if data:
            data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
    return bytes(data)


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data(), stall=st.sampled_from([False] * 19 + [True]))
def test_whatever_arrives_the_daemon_keeps_serving(
    listener: tuple[ServerThread, DaemonListener, ErrorLog], data: st.DataObject, stall: bool
) -> None:
    srv, daemon, errors = listener
    numbers = daemon.numbers
    shaken = data.draw(st.integers(0, 3)) > 0  # three in four after a good handshake
    sent = data.draw((after_handshake if shaken else before_handshake)(numbers))
    failed, logged = daemon.server.counts.errors, len(errors.records)
    send(srv.port, sent, stall)
    assert daemon.server.counts.errors == failed  # no handler raised
    assert [r.getMessage() for r in errors.records[logged:]] == []
    # it answers; the slots are as seeded (the collector's commands change nothing), the
    # queue and the priorities as the fuzz left them (it may submit, remove or set)
    answer = daemon.good_query(srv.port)
    assert answer == GOOD["central"] if daemon.role == "central" else isinstance(answer, list)


def test_htcondor2_still_gets_answers_after_the_fuzz(
    listener: tuple[ServerThread, DaemonListener, ErrorLog], tmp_path: Path
) -> None:
    srv, daemon, errors = listener
    code = {
        "central": 'result = sorted(a["Name"] for a in '
        "htcondor2.Collector(ADDR).query(htcondor2.AdType.Startd))",
        "negotiator": "result = sorted(a['Name'] for a in "
        "htcondor2.Negotiator(classad2.ClassAd({'MyAddress': ADDR})).getPriorities())",
        "schedd": "result = sorted((a['ClusterId'], a['ProcId']) for a in "
        "htcondor2.Schedd(classad2.ClassAd({'MyAddress': ADDR, 'CondorVersion': VERSION}))"
        ".query())",
    }[daemon.role]
    config = "SEC_CLIENT_AUTHENTICATION_METHODS = CLAIMTOBE"
    got = asyncio.run(
        run_htcondor(
            f'ADDR = "<127.0.0.1:{srv.port}>"\nVERSION = "{CONDOR_VERSION}"\n{code}',
            tmp_path,
            config,
        )
    )
    # the same answer as the raw client's; the collector's slots no command changes
    assert [tuple(x) if isinstance(x, list) else x for x in got] == daemon.good_query(srv.port)
    if daemon.role == "central":
        assert got == GOOD["central"]
    # the fuzz reached the handlers: most commands were asked, some messages refused
    counts = daemon.server.counts
    assert len(counts.by_command) >= min(5, len(daemon.numbers)) and counts.malformed > 0
    assert daemon.server.counts.errors == 0
    assert errors.records == []


def test_text_that_is_not_utf8_is_refused_as_malformed(
    listener: tuple[ServerThread, DaemonListener, ErrorLog],
) -> None:
    # found by the fuzz: a submitter's name of bytes that are not UTF-8 reached the
    # negotiator's gRPC side, which cannot carry it, and the handler failed
    srv, daemon, errors = listener
    if daemon.role == "schedd":  # a qmgmt query whose constraint is such text
        number, body = cmd.QMGMT_READ_CMD, Builder().put_int(q.GetJobByConstraint)
    else:  # RESET_USAGE of such a submitter
        number, body = 458, Builder()
    body.put_bytes(b"\x80\xff\x00")
    counts = daemon.server.counts
    failed, malformed = counts.errors, counts.malformed
    send(srv.port, encode_messages([*claimtobe_handshake(number, f"{ADMIN}@x"), body]), False)
    assert counts.errors == failed
    assert counts.malformed == malformed + 1
    assert daemon.good_query(srv.port) is not None
    assert errors.records == []
