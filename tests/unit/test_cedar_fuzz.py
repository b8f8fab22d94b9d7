"""Fuzz a CEDAR listener: random bytes, random packets, random messages, and real
handshakes cut short or mutated. Whatever arrives, the listener closes the connection by
its own checks or timeouts (short ones here: the test waits for the close, never
sleeps), logs no error, and answers a good query right after."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from builders.cedarfuzz import ErrorLog, send
from builders.htcondor import run_htcondor
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mockpool.cedar import (
    Builder,
    CedarRequest,
    CedarServer,
    Command,
    Level,
    Limits,
    SecurityConfig,
)
from mockpool.cedar.auth_claim import ClaimToBeAuth
from mockpool.cedar.commands import DC_AUTHENTICATE, QUERY_STARTD_ADS
from mockpool.cedar.rawclient import RawClient, ServerThread, claimtobe_handshake, encode_messages
from mockpool.classad import ClassAd, evaluate

LIMITS = Limits(handshake_timeout=0.25, read_timeout=0.25, write_timeout=2.0, max_message=2048)


def slot(i: int) -> ClassAd:
    ad = ClassAd()
    ad["Name"] = f"slot{i}@fuzz"
    ad["Cpus"] = i
    return ad


async def query(req: CedarRequest) -> None:
    q = (await req.sock.recv()).get_ad(what="query ad")
    constraint = q.lookup("Requirements")
    out = Builder()
    for ad in (slot(1), slot(2)):
        if constraint is None or evaluate(constraint, ad) is True:
            out.put_int(1).put_ad(ad)
    await req.sock.send(out.put_int(0))


@pytest.fixture(scope="module")
def fuzzed() -> Iterator[tuple[ServerThread, ErrorLog]]:
    errors = ErrorLog()
    loggers = [logging.getLogger("mockpool.cedar"), logging.getLogger("asyncio")]
    for lg in loggers:
        lg.addHandler(errors)
    config = SecurityConfig(methods=(ClaimToBeAuth(),), unauthenticated_read=True)
    commands = [Command(QUERY_STARTD_ADS, Level.READ, query, "QUERY_STARTD_ADS")]
    with ServerThread(lambda: CedarServer(commands, config, name="fuzz", limits=LIMITS)) as srv:
        yield srv, errors
    for lg in loggers:
        lg.removeHandler(errors)


def good_query(srv: ServerThread) -> list[str]:
    """The slots' names, as a good client asks for them. The fuzz's handshake time is
    short (0.25 s): on a busy machine the good handshake itself may run out of it, and
    the listener closes it as it should. Only then (it counted a timeout) is it asked
    again; any other close fails."""
    for _ in range(3):
        timeouts = srv.server.counts.timeouts
        try:
            return _query(srv.port)
        except ConnectionError:
            if srv.server.counts.timeouts == timeouts:
                raise
    raise AssertionError("three good queries in a row ran out of the handshake time")


def _query(port: int) -> list[str]:
    with RawClient("127.0.0.1", port) as c:
        assert c.start_command(QUERY_STARTD_ADS).eval("ReturnCode") == "AUTHORIZED"
        q = ClassAd()
        q["Requirements"] = True
        c.send(Builder().put_ad(q))
        msg = c.recv()
        names = []
        while msg.get_int() == 1:
            names.append(msg.get_ad().eval("Name"))
        return names


def query_message() -> Builder:
    q = ClassAd()
    q["MyType"] = "Query"
    q["Requirements"] = True
    return Builder().put_ad(q)


HANDSHAKE = encode_messages([*claimtobe_handshake(QUERY_STARTD_ADS), query_message()])
RAW_QUERY = encode_messages([Builder().put_int(QUERY_STARTD_ADS).put_ad(ClassAd())])

packets = st.lists(
    st.tuples(st.integers(0, 12), st.binary(max_size=64)), min_size=1, max_size=4
).map(lambda ps: b"".join(bytes([e]) + len(p).to_bytes(4, "big") + p for e, p in ps))


def garbage_message(command: int, count: int, lines: list[str]) -> bytes:
    """A command's message whose ad is garbage of the right shape."""
    body = b"".join(x.encode("utf-8", "surrogatepass").replace(b"\0", b"") + b"\0" for x in lines)
    return encode_messages([Builder().put_int(command).put_int(count).put_bytes(body)])


garbage_ads = st.builds(
    garbage_message,
    st.sampled_from([DC_AUTHENTICATE, QUERY_STARTD_ADS, 12345]),
    st.integers(-3, 120),
    st.lists(st.text(max_size=30), max_size=6),
)


@st.composite
def mutated_handshakes(draw: st.DrawFn) -> bytes:
    base = draw(st.sampled_from([HANDSHAKE, RAW_QUERY]))
    data = bytearray(base[: draw(st.integers(0, len(base)))])
    for _ in range(draw(st.integers(0, 3))):
        if data:
            data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
    return bytes(data)


inputs = st.one_of(st.binary(max_size=200), packets, garbage_ads, mutated_handshakes())


@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=inputs, stall=st.sampled_from([False] * 9 + [True]))
def test_whatever_arrives_the_listener_closes_cleanly_and_keeps_serving(
    fuzzed: tuple[ServerThread, ErrorLog], data: bytes, stall: bool
) -> None:
    srv, errors = fuzzed
    send(srv.port, data, stall)
    assert srv.server.counts.errors == 0
    assert errors.records == []
    assert good_query(srv) == ["slot1@fuzz", "slot2@fuzz"]


def test_htcondor2_still_gets_answers_after_the_fuzz(
    fuzzed: tuple[ServerThread, ErrorLog], tmp_path: Path
) -> None:
    srv, errors = fuzzed
    code = f"""
c = htcondor2.Collector("127.0.0.1:{srv.port}")
result = sorted(a["Name"] for a in c.query(htcondor2.AdType.Startd))
"""
    config = "SEC_CLIENT_AUTHENTICATION_METHODS = CLAIMTOBE"
    assert asyncio.run(run_htcondor(code, tmp_path, config)) == ["slot1@fuzz", "slot2@fuzz"]
    assert errors.records == []
