"""A CedarServer in the test's process answers HTCondor's own client: the ``htcondor2``
bindings (in a child process) query it as a collector, authenticate by FS, and resume
their session on the next query."""

from __future__ import annotations

import asyncio
import getpass
import time
from pathlib import Path

import pytest
from builders.htcondor import run_htcondor

from mockpool.auth import Principal, Role
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
from mockpool.cedar.auth_fs import FSAuth
from mockpool.cedar.commands import (
    DC_AUTHENTICATE,
    DC_NOP_WRITE,
    DC_SEC_QUERY,
    QUERY_STARTD_ADS,
)
from mockpool.cedar.framing import PacketCodec
from mockpool.cedar.rawclient import RawClient, ServerThread, claimtobe_handshake, client_policy
from mockpool.classad import ClassAd, evaluate, parse_expr

ME = getpass.getuser()


def slot(i: int, cpus: int) -> ClassAd:
    ad = ClassAd()
    ad["MyType"] = "Machine"
    ad["Name"] = f"slot{i}@exec"
    ad["Cpus"] = cpus
    ad["Memory"] = 1024 * cpus
    ad["WeightedCpus"] = parse_expr("Cpus * 2")
    ad["State"] = "Unclaimed"
    ad["ClaimId"] = f"<10.0.0.1:1>#{i}#secret"  # private: never sent to a query
    return ad


ADS = [slot(1, 1), slot(2, 2), slot(3, 4)]


def collector_query(ads: list[ClassAd], seen: list) -> Command:
    """QUERY_STARTD_ADS as collector.cpp answers it: the query ad, then a 1 before each
    matching ad, projected, and a 0."""

    async def handle(req: CedarRequest) -> None:
        query = (await req.sock.recv()).get_ad(what="query ad")
        seen.append((req.peer, query))
        constraint = query.lookup("Requirements")
        projection = query.eval("Projection")
        names = projection.replace(",", " ").split() if isinstance(projection, str) else None
        out = Builder()
        for ad in ads:
            if constraint is None or evaluate(constraint, ad) is True:
                out.put_int(1).put_ad(ad, names)
        out.put_int(0)
        await req.sock.send(out)

    return Command(QUERY_STARTD_ADS, Level.READ, handle, "QUERY_STARTD_ADS")


QUERIES = """
c = htcondor2.Collector("127.0.0.1:{port}")
def text(ads):
    return [{{k: str(a.lookup(k)) for k in sorted(a.keys())}} for a in ads]
result = [
    text(c.query(htcondor2.AdType.Startd)),
    text(c.query(htcondor2.AdType.Startd, "Cpus >= 2", ["Name", "WeightedCpus"])),
]
"""


async def test_htcondor2_queries_a_cedar_server_and_resumes_its_session(tmp_path: Path) -> None:
    seen: list = []
    server = CedarServer([collector_query(ADS, seen)], SecurityConfig(), name="collector")
    port = await server.start()
    try:
        whole, projected = await run_htcondor(QUERIES.format(port=port), tmp_path)
    finally:
        await server.stop()
    # every public attribute of every ad; ClaimId stays home
    assert whole == [
        {
            "Cpus": str(c),
            "Memory": str(1024 * c),
            "MyType": '"Machine"',
            "Name": f'"slot{i}@exec"',
            "State": '"Unclaimed"',
            "WeightedCpus": "Cpus * 2",
        }
        for i, c in ((1, 1), (2, 2), (3, 4))
    ]
    # the constraint picks two; the projection brings what WeightedCpus uses
    assert projected == [
        {"Cpus": "2", "Name": '"slot2@exec"', "WeightedCpus": "Cpus * 2"},
        {"Cpus": "4", "Name": '"slot3@exec"', "WeightedCpus": "Cpus * 2"},
    ]
    # the query ads htcondor2 sent, and who sent them: FS, as the pool's own user
    (peer1, q1), (peer2, q2) = seen
    assert "Projection" not in q1
    assert q2.eval("Requirements", ADS[1]) is True and q2.eval("Requirements", ADS[0]) is False
    assert q2.eval("Projection") == "Name WeightedCpus"
    assert peer1.method == "FS" and peer1.user.startswith(f"{ME}@")
    assert peer1.principal == Principal(Role.ADMIN, ME)
    # one handshake; the second query resumed its session
    assert server.security.counts == {"new": 1, "resumed": 1}
    assert peer2.session_id == peer1.session_id != ""


async def test_fs_maps_a_user_who_is_not_the_pool_user_to_submit(tmp_path: Path) -> None:
    """FS user X submits as X; root is the pool's own user (FS_ROOT_TO_CONDOR)."""
    seen: list = []
    config = SecurityConfig(pool_user="somebody-else")
    server = CedarServer([collector_query(ADS[:1], seen)], config, name="collector")
    port = await server.start()
    try:
        await run_htcondor(QUERIES.format(port=port), tmp_path)
    finally:
        await server.stop()
    if ME == "root":
        assert seen[0][0].principal == Principal(Role.ADMIN, "somebody-else")
    else:
        assert seen[0][0].principal == Principal(Role.SUBMIT, ME)


# -- a raw client against a listener in a thread: the protocol's edges and its limits --

SHORT = Limits(handshake_timeout=0.2, read_timeout=0.2, write_timeout=2.0, max_message=4096)


def listener(
    *, limits: Limits = SHORT, unauthenticated_read: bool = False, extra=()
) -> ServerThread:
    async def boom(req: CedarRequest) -> None:
        raise RuntimeError("a handler's bug")

    commands = [
        collector_query(ADS, []),
        Command(DC_NOP_WRITE + 1000, Level.READ, boom, "BOOM"),
        Command(DC_NOP_WRITE, Level.DAEMON, boom, "DAEMON_ONLY"),
        *extra,
    ]
    config = SecurityConfig(methods=(ClaimToBeAuth(),), unauthenticated_read=unauthenticated_read)
    return ServerThread(lambda: CedarServer(commands, config, name="test", limits=limits))


def query_ad() -> ClassAd:
    q = ClassAd()
    q["MyType"] = "Query"
    q["Requirements"] = parse_expr("Cpus >= 2")
    q["Projection"] = "Name"
    return q


def read_names(client: RawClient) -> list[str]:
    msg = client.recv()
    names = []
    while msg.get_int() == 1:
        names.append(msg.get_ad().eval("Name"))
    msg.expect_end()
    return names


def test_claimtobe_runs_a_command_limited_to_its_level() -> None:
    with listener() as srv, RawClient("127.0.0.1", srv.port) as c:
        session = c.start_command(QUERY_STARTD_ADS, user="bob@example.org")
        assert session.eval("ReturnCode") == "AUTHORIZED"
        assert session.eval("User") == "bob@example.org"
        # a READ session may run the listener's READ commands (GetCommandsInAuthLevel)
        assert session.eval("ValidCommands") == f"{QUERY_STARTD_ADS},{DC_NOP_WRITE + 1000}"
        c.send(Builder().put_ad(query_ad()))
        assert read_names(c) == ["slot2@exec", "slot3@exec"]
        (sid,) = srv.call(lambda: list(srv.server.security.sessions._sessions))
        kept = srv.call(lambda: srv.server.security.sessions.resume(sid, time.time()))
    assert kept.principal == Principal(Role.SUBMIT, "bob")
    assert kept.limit == frozenset({Level.READ})
    assert kept.policy.eval("LimitAuthorization") == "READ"


def test_a_peer_without_the_level_is_told_denied_then_closed() -> None:
    with listener() as srv, RawClient("127.0.0.1", srv.port) as c:
        session = c.start_command(DC_NOP_WRITE, user="bob@example.org")
        assert session.eval("ReturnCode") == "DENIED"
        assert c.wait_closed() == b""
        assert srv.server.counts.refused == 1


def test_an_unknown_command_is_closed_without_a_word() -> None:
    with listener() as srv:
        with RawClient("127.0.0.1", srv.port) as c:
            c.send(Builder().put_int(DC_AUTHENTICATE).put_ad(client_policy(424242)))
            assert c.wait_closed() == b""
        with RawClient("127.0.0.1", srv.port) as c:
            c.send(Builder().put_int(424242))  # a raw command, no negotiation
            assert c.wait_closed() == b""
        assert srv.server.counts.refused == 2


def test_a_raw_command_runs_only_where_unauthenticated_peers_may() -> None:
    raw = Builder().put_int(QUERY_STARTD_ADS).put_ad(query_ad())  # payload in the same message
    with listener() as srv, RawClient("127.0.0.1", srv.port) as c:
        c.send(raw)
        assert c.wait_closed() == b""
    with listener(unauthenticated_read=True) as srv, RawClient("127.0.0.1", srv.port) as c:
        c.send(raw)
        assert read_names(c) == ["slot2@exec", "slot3@exec"]


def test_unauthenticated_read_lets_a_peer_skip_authentication() -> None:
    with listener(unauthenticated_read=True) as srv, RawClient("127.0.0.1", srv.port) as c:
        session = c.start_command(QUERY_STARTD_ADS, user=None)
        assert session.eval("User") == "unauthenticated@unmapped"
        assert session.eval("ReturnCode") == "AUTHORIZED"
        c.send(Builder().put_ad(query_ad()))
        assert read_names(c) == ["slot2@exec", "slot3@exec"]
    with listener() as srv, RawClient("127.0.0.1", srv.port) as c:  # authentication REQUIRED
        c.send(
            Builder()
            .put_int(DC_AUTHENTICATE)
            .put_ad(client_policy(5, methods="", authentication="NEVER"))
        )
        assert c.wait_closed() == b""  # cannot reconcile NEVER with REQUIRED
        assert srv.server.counts.refused == 1


@pytest.mark.parametrize(
    ("data", "counter"),
    [
        (bytes([11, 0, 0, 0, 1, 0]), "malformed"),  # an end byte past 10
        (bytes([1, 0, 0, 0x20, 0]) + bytes(8192), "malformed"),  # over max_message
        (bytes([1, 0, 0, 0, 3]) + b"abc", "malformed"),  # a command integer cut short
        (b"", "timeouts"),  # connects and says nothing
        (bytes([0, 0, 0, 0, 8]) + bytes(8), "timeouts"),  # a message that never ends
    ],
)
def test_bad_or_stalled_input_ends_the_connection_within_the_limits(
    data: bytes, counter: str
) -> None:
    with listener() as srv, RawClient("127.0.0.1", srv.port) as c:
        c.sock.sendall(data)
        c.wait_closed()  # the server closes: by its own check, or after its timeouts
        assert getattr(srv.server.counts, counter) == 1
        assert srv.server.counts.errors == 0
        with RawClient("127.0.0.1", srv.port) as good:  # and goes on serving
            good.start_command(QUERY_STARTD_ADS)
            good.send(Builder().put_ad(query_ad()))
            assert read_names(good) == ["slot2@exec", "slot3@exec"]


def test_a_handshake_that_stops_half_way_times_out() -> None:
    with listener() as srv, RawClient("127.0.0.1", srv.port) as c:
        c.send(Builder().put_int(DC_AUTHENTICATE).put_ad(client_policy(QUERY_STARTD_ADS)))
        assert c.recv().get_ad().eval("AuthMethodsList") == "CLAIMTOBE"
        c.send(Builder().put_int(2))  # picks CLAIMTOBE, then never claims
        assert c.recv().get_int() == 2
        c.wait_closed()
        assert srv.server.counts.timeouts == 1


def test_a_handlers_exception_is_one_log_line_not_the_listeners_end(caplog) -> None:
    with listener() as srv:
        with RawClient("127.0.0.1", srv.port) as c:
            c.start_command(DC_NOP_WRITE + 1000)
            c.wait_closed()
        assert srv.server.counts.errors == 1
        with RawClient("127.0.0.1", srv.port) as c:
            c.start_command(QUERY_STARTD_ADS)
            c.send(Builder().put_ad(query_ad()))
            assert read_names(c) == ["slot2@exec", "slot3@exec"]
    lines = [r for r in caplog.records if "a handler's bug" in r.getMessage()]
    assert len(lines) == 1 and lines[0].exc_info is None


def test_resuming_an_unknown_session_is_told_so_then_closed() -> None:
    ad = ClassAd()
    ad["Command"] = QUERY_STARTD_ADS
    ad["UseSession"] = "YES"
    ad["Sid"] = "nobody:1:2:3"
    ad["ResumeResponse"] = True
    with listener() as srv, RawClient("127.0.0.1", srv.port) as c:
        c.send(Builder().put_int(DC_AUTHENTICATE).put_ad(ad))
        assert c.recv().get_ad().eval("ReturnCode") == "SID_NOT_FOUND"
        assert c.wait_closed() == b""


def test_stop_ends_every_connection_without_waiting_for_timeouts() -> None:
    long = Limits(handshake_timeout=3600, read_timeout=3600)
    with listener(limits=long) as srv:
        clients = [RawClient("127.0.0.1", srv.port) for _ in range(3)]
        clients[0].sock.sendall(bytes([0, 0, 0, 0, 8]))  # half a message
        srv.call(lambda: None)  # let the listener see the connections
    for c in clients:  # the listener is stopped: every connection was closed
        assert c.wait_closed() == b""
        c.close()


async def test_a_large_reply_yields_to_the_loop_between_packets() -> None:
    big = [slot(i, 1) for i in range(1500)]
    ticks = []

    async def ticker() -> None:
        while True:
            ticks.append(None)
            await asyncio.sleep(0)

    async def reply(req: CedarRequest) -> None:
        out = Builder()
        for ad in big:
            out.put_int(1).put_ad(ad)
        out.put_int(0)
        before = len(ticks)
        await req.sock.send(out)
        ticks_during.append(len(ticks) - before)

    ticks_during: list[int] = []
    config = SecurityConfig(methods=(ClaimToBeAuth(),))
    server = CedarServer(
        [Command(QUERY_STARTD_ADS, Level.READ, reply)],
        config,
        name="t",
        limits=Limits(packet_size=4096),
    )
    port = await server.start()
    tick = asyncio.create_task(ticker())
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        codec = PacketCodec()
        writer.write(
            b"".join(codec.encode(m.build()) for m in claimtobe_handshake(QUERY_STARTD_ADS))
        )
        got = await reader.read()  # everything until the server closes
    finally:
        tick.cancel()
        await server.stop()
    packets = len(got) // 4096
    assert packets >= 30
    # the ticker ran between the reply's packets, not once after the whole reply
    assert ticks_during[0] >= packets // 4 - 1


CLAIM_QUERY = """
c = htcondor2.Collector("127.0.0.1:{port}")
try:
    result = [a["Name"] for a in c.query(htcondor2.AdType.Startd, "Cpus >= 2", ["Name"])]
except Exception as exc:
    result = "refused: " + str(exc)
"""


async def test_htcondor2_claims_to_be_only_where_the_config_allows_it(tmp_path: Path) -> None:
    client_config = "SEC_CLIENT_AUTHENTICATION_METHODS = CLAIMTOBE"
    seen: list = []
    allowing = SecurityConfig(methods=(FSAuth(), ClaimToBeAuth()))
    server = CedarServer([collector_query(ADS, seen)], allowing, name="collector")
    port = await server.start()
    try:
        names = await run_htcondor(CLAIM_QUERY.format(port=port), tmp_path, client_config)
    finally:
        await server.stop()
    assert names == ["slot2@exec", "slot3@exec"]
    ((peer, _),) = seen
    assert peer.method == "CLAIMTOBE" and peer.user.startswith(f"{ME}@")
    assert peer.limit == frozenset({Level.READ})
    # the default listener offers FS only: a client that will only claim is refused
    server = CedarServer([collector_query(ADS, [])], SecurityConfig(), name="collector")
    port = await server.start()
    try:
        refused = await run_htcondor(CLAIM_QUERY.format(port=port), tmp_path, client_config)
    finally:
        await server.stop()
    assert refused.startswith("refused: ")
    assert server.counts.refused == 1 and server.counts.commands == 0


def test_dc_sec_query_answers_whether_the_command_would_be_authorized() -> None:
    ad = client_policy(DC_SEC_QUERY)
    ad["AuthCommand"] = QUERY_STARTD_ADS
    with listener() as srv, RawClient("127.0.0.1", srv.port) as c:
        c.send(Builder().put_int(DC_AUTHENTICATE).put_ad(ad))
        assert c.recv().get_ad().eval("Authentication") == "YES"
        c.send(Builder().put_int(2))  # CLAIMTOBE
        assert c.recv().get_int() == 2
        c.send(Builder().put_int(1).put_string("bob@example.org"))
        assert [c.recv().get_int(), c.recv().get_int()] == [1, 0]  # claimed; no key
        assert c.recv().get_ad().eval("ReturnCode") == "AUTHORIZED"
        assert c.recv().get_ad().eval("AuthorizationSucceeded") is True
        assert c.wait_closed() == b""
        assert srv.server.counts.commands == 0  # no handler ran
