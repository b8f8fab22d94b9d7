"""The schedd's CEDAR commands (mockpool.cedar.schedd_cmds) in-process: each handler fed
HTCondor's request messages on a fake socket, answered by a real ScheddService whose
methods it calls as the gRPC server would (roles checked, the caller's principal set).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from mockpool.auth import Principal, Role
from mockpool.cedar import commands as cmd
from mockpool.cedar import qmgmt as q
from mockpool.cedar.handshake import Peer
from mockpool.cedar.rawclient import qmgmt_request
from mockpool.cedar.schedd_cmds import schedd_commands
from mockpool.cedar.server import CedarClosed, CedarRequest
from mockpool.cedar.stream import Builder, Message
from mockpool.classad import ClassAd, parse_expr
from mockpool.schedd.schedd import HELD, IDLE, Schedd
from mockpool.schedd.service import ScheddService

SUB = "executable = /bin/sleep\narguments = 60\nqueue 3\n"
ALICE = Peer(user="alice@mockpool", method="FS", principal=Principal(Role.SUBMIT, "alice"))
BOB = Peer(user="bob@mockpool", method="FS", principal=Principal(Role.SUBMIT, "bob"))
READER = Peer(user="carol@mockpool", method="IDTOKENS", principal=Principal(Role.READ, "carol"))


@dataclass
class FakeSocket:
    """Messages in (as the client sends them), messages out (as built)."""

    incoming: list[Message]
    sent: list[bytes] = field(default_factory=list)
    encrypted: bool = False
    _flushed: bytes = b""

    async def recv(self, timeout: float | None = None) -> Message:
        if not self.incoming:
            raise CedarClosed("the client closed the connection")
        return self.incoming.pop(0)

    async def send(self, builder: Builder) -> None:
        self.sent.append(self._flushed + builder.build())
        self._flushed = b""

    async def flush(self, builder: Builder) -> None:
        self._flushed += builder.take().build()

    def replies(self) -> list[Message]:
        return [Message(b) for b in self.sent]


@pytest.fixture
async def service(tmp_path: Path, daemon_ctx: Any) -> AsyncIterator[ScheddService]:
    svc = ScheddService(daemon_ctx(tmp_path, ad_epoch=1_700_000_000), ["schedd1"])
    yield svc
    await svc.stop()


def core(svc: ScheddService) -> Schedd:
    return svc.cores["schedd1"]


def ad_msg(ad: ClassAd) -> Message:
    return Message(Builder().put_ad(ad).build())


async def run(svc: ScheddService, command: int, peer: Peer, *msgs: Message) -> FakeSocket:
    handler = next(c.handler for c in schedd_commands(svc) if c.number == command)
    sock = FakeSocket(list(msgs))
    await handler(CedarRequest(command, sock, peer))  # type: ignore[arg-type]
    return sock


def ads_of(m: Message) -> list[ClassAd]:
    out = []
    while not m.at_end():
        out.append(m.get_ad())
    return out


# --------------------------------------------------------------------------- queries


async def test_query_job_ads(service: ScheddService) -> None:
    core(service).submit(SUB, "a.sub", "alice", 10.0)  # 1.0 1.1 1.2
    query = ClassAd({"Projection": "ProcId\nOwner", "SendServerTime": True})
    query["Requirements"] = parse_expr("ProcId >= 1")
    sock = await run(service, cmd.QUERY_JOB_ADS, READER, ad_msg(query))
    *jobs, done = [m.get_ad() for m in sock.replies()]  # a message per ad
    # the projection, and ServerTime (the pool's date: epoch + 100 s)
    assert [dict(a.pairs()).keys() for a in jobs] == [{"Owner", "ProcId", "ServerTime"}] * 2
    assert [a.get_value("ProcId") for a in jobs] == [1, 2]
    assert jobs[0].get_value("ServerTime") == 1_700_000_100
    assert done.get_value("Owner") == 0 and done.get_value("ErrorCode") == 0
    assert done.get_value("MyType") == "Summary"
    assert (done.get_value("Jobs"), done.get_value("Idle")) == (2, 2)  # the query's jobs
    assert (done.get_value("AllusersJobs"), done.get_value("AllusersIdle")) == (3, 3)
    # LimitResults; SummaryOnly sends the last ad alone
    limited = ClassAd({"LimitResults": 1})
    assert len((await run(service, cmd.QUERY_JOB_ADS, READER, ad_msg(limited))).sent) == 2
    summary = ClassAd({"SummaryOnly": True})
    (only,) = (await run(service, cmd.QUERY_JOB_ADS, READER, ad_msg(summary))).replies()
    assert only.get_ad().get_value("AllusersJobs") == 3


async def test_my_jobs_and_refused_queries(service: ScheddService) -> None:
    core(service).submit(SUB, "a.sub", "alice", 10.0)
    core(service).submit("executable = /bin/sleep\narguments = 1\nqueue\n", "b", "bob", 10.0)
    mine = ClassAd({"MyJobs": True})
    *jobs, _ = [
        m.get_ad()
        for m in (await run(service, cmd.QUERY_JOB_ADS_WITH_AUTH, BOB, ad_msg(mine))).replies()
    ]
    assert [a.get_value("Owner") for a in jobs] == ["bob"]
    # a peer with no pool identity may not query: the error ad htcondor2 reports
    nobody = Peer(user="unauthenticated@unmapped")
    (m,) = (await run(service, cmd.QUERY_JOB_ADS, nobody, ad_msg(ClassAd()))).replies()
    ad = m.get_ad()
    assert (ad.get_value("Owner"), ad.get_value("ErrorCode")) == (0, 1)
    assert ad.get_value("ErrorString") == "QueryJobs is not open to an unauthenticated peer"
    grouped = ClassAd({"ProjectionIsGroupBy": True})
    (m,) = (await run(service, cmd.QUERY_JOB_ADS, READER, ad_msg(grouped))).replies()
    assert "not supported" in m.get_ad().get_value("ErrorString")


async def test_history(service: ScheddService) -> None:
    s = core(service)
    s.submit(SUB, "a.sub", "alice", 10.0)
    s.act("remove", ["1.0", "1.1", "1.2"], "", "", "alice", 20.0)  # newest first: 1.2 1.1 1.0
    query = ClassAd({"NumJobMatches": -1})
    query["Projection"] = parse_expr('{"ProcId"}')
    query["Since"] = parse_expr("ProcId == 0")
    (m,) = (await run(service, cmd.QUERY_SCHEDD_HISTORY, READER, ad_msg(query))).replies()
    *jobs, done = ads_of(m)  # one message: the ads, then the last one
    assert [dict(a.pairs()) == {"ProcId": a["ProcId"]} for a in jobs] == [True, True]
    assert [a.get_value("ProcId") for a in jobs] == [2, 1]
    assert (done.get_value("Owner"), done.get_value("NumJobMatches")) == (0, 2)
    assert done.get_value("MalformedAds") == 0
    epochs = ClassAd({"HistoryRecordSource": "JOB_EPOCH"})
    (m,) = (await run(service, cmd.QUERY_SCHEDD_HISTORY, READER, ad_msg(epochs))).replies()
    assert m.get_ad().get_value("ErrorString").startswith("JOB_EPOCH_HISTORY undefined")


# --------------------------------------------------------------------------- actions


def totals(ad: ClassAd) -> list[int]:
    return [ad.get_value(f"result_total_{i}") for i in range(7)]


async def test_act_on_jobs(service: ScheddService) -> None:
    s = core(service)
    s.submit(SUB, "a.sub", "alice", 10.0)  # 1.0 1.1 1.2
    s.submit("executable = /bin/sleep\narguments = 1\nqueue\n", "b", "bob", 10.0)  # 2.0
    # htcondor2's act(Hold, ["1.0", "1.1", "2.0"]): ids, the reason in HoldReason
    hold = ClassAd({"JobAction": 1, "ActionResultType": 2, "ActionIds": "1.0,1.1,2.0"})
    hold["HoldReason"] = "Python-initiated action"
    hold["HoldReasonSubCode"] = parse_expr("None")  # (str(None), as the bindings send it)
    sock = await run(
        service, cmd.ACT_ON_JOBS, ALICE, ad_msg(hold), Message(Builder().put_int(1).build())
    )
    result, confirmed = sock.replies()
    ad = result.get_ad()
    assert totals(ad) == [0, 2, 0, 0, 0, 1, 0]  # 2 held, bob's 2.0 denied
    assert (ad.get_value("ActionResult"), ad.get_value("JobAction")) == (1, 1)
    assert ad.get_value("TotalJobAds") == 4 and ad.get_value("IsQueueSuperUser") is False
    assert confirmed.get_int() == 1  # after the tool's confirmation
    assert s.jobs[(1, 0)].status == HELD and s.jobs[(2, 0)].status == IDLE
    assert s.jobs[(1, 0)].ad.get_value("HoldReason") == "Python-initiated action"
    assert s.jobs[(1, 0)].ad.get_value("HoldReasonSubCode") == 0  # "None": none given
    # act(Hold, "1.2", ("why", "7")): the reason's code is the HoldReasonSubCode
    coded = ClassAd({"JobAction": 1, "ActionIds": "1.2", "HoldReason": "why"})
    coded["HoldReasonSubCode"] = parse_expr("7")
    await run(service, cmd.ACT_ON_JOBS, ALICE, ad_msg(coded), Message(Builder().put_int(1).build()))
    held = s.jobs[(1, 2)].ad
    assert (held.get_value("HoldReasonCode"), held.get_value("HoldReasonSubCode")) == (1, 7)
    # a constraint (act(Release, 1) is "ClusterID == 1"); nothing done: no confirmation
    release = ClassAd({"JobAction": 2, "ActionResultType": 2})
    release["ActionConstraint"] = parse_expr("ClusterID == 1")
    (result,) = (await run(service, cmd.ACT_ON_JOBS, BOB, ad_msg(release))).replies()
    ad = result.get_ad()
    assert totals(ad) == [0, 0, 0, 0, 0, 3, 0] and ad.get_value("ActionResult") == 0
    # an action ad the schedd cannot take: refused with NOT_OK, nothing done
    for bad in (ClassAd({"JobAction": 42, "ActionIds": "1.0"}), ClassAd({"JobAction": 1})):
        (m,) = (await run(service, cmd.ACT_ON_JOBS, ALICE, ad_msg(bad))).replies()
        assert m.get_int() == 0 and m.at_end()
    # a READ token may not act (the servicer's roles): refused
    (m,) = (await run(service, cmd.ACT_ON_JOBS, READER, ad_msg(hold))).replies()
    assert m.get_int() == 0


# --------------------------------------------------------------------------- qmgmt


request = qmgmt_request  # the calls as htcondor2 sends them


def submit_requests(owner: str = "undefined", procs: int = 2) -> list[Message]:
    """htcondor2's submit of ``/bin/sleep 30``, ``procs`` jobs, cluster 1."""
    no_ack = bytes([q.NO_ACK])
    out = [request(q.GetCapabilities, 0), request(q.NewCluster)]
    cluster_ad = {
        "ClusterId": "1",
        "Owner": owner,
        "Cmd": '"/bin/sleep"',
        "Arguments": '"30"',
        "Requirements": "true",
        "Iwd": '"/tmp"',
    }
    for p in range(procs):
        out.append(request(q.NewProc, 1))
        if p == 0:
            out += [request(q.SetAttribute2, 1, -1, v, k, no_ack) for k, v in cluster_ad.items()]
        for k, v in (("ProcId", str(p)), ("JobStatus", "1")):
            out.append(request(q.SetAttribute2, 1, p, v, k, no_ack))
    return [*out, request(q.CommitTransactionNoFlags), request(q.CloseSocket)]


async def test_qmgmt_submit_and_edit(service: ScheddService) -> None:
    sock = await run(service, cmd.QMGMT_WRITE_CMD, ALICE, *submit_requests())
    caps, cluster, proc0, proc1, commit = sock.replies()
    assert caps.get_ad().get_value("LateMaterialize") is False
    assert [cluster.get_int(), proc0.get_int(), proc1.get_int()] == [1, 0, 1]
    assert commit.get_int() == 0 and len(commit.get_ad()) == 0
    s = core(service)
    ad = s.jobs[(1, 1)].ad
    assert ad.get_value("Owner") == "alice" and ad.get_value("MockDuration") == 30
    assert ad.get_value("QDate") == 1_700_000_100
    # Schedd.edit(["1.0", "1.1"], "Foo", "7"): NoAck SetAttribute2s, the commit
    no_ack = bytes([q.NO_ACK])
    sock = await run(
        service,
        cmd.QMGMT_WRITE_CMD,
        ALICE,
        request(q.SetAttribute2, 1, 0, "7", "Foo", no_ack),
        request(q.SetAttribute2, 1, 1, "7", "Foo", no_ack),
        request(q.CommitTransactionNoFlags),
        request(q.CloseSocket),
    )
    (commit,) = sock.replies()
    assert commit.get_int() == 0
    assert [s.jobs[(1, p)].ad.get_value("Foo") for p in (0, 1)] == [7, 7]
    # bob may not edit alice's jobs: by constraint, answered at once
    sock = await run(
        service,
        cmd.QMGMT_WRITE_CMD,
        BOB,
        request(q.SetAttributeByConstraint, "ClusterId == 1", "8", "Foo"),
        request(q.CloseSocket),
    )
    (m,) = sock.replies()
    assert (m.get_int(), m.get_int()) == (-1, 13)  # EACCES


async def test_qmgmt_refusals(service: ScheddService) -> None:
    # Owner set to another user: the commit fails with the schedd's words
    sock = await run(service, cmd.QMGMT_WRITE_CMD, ALICE, *submit_requests(owner='"bob"'))
    commit = sock.replies()[-1]
    assert (commit.get_int(), commit.get_int()) == (-1, -13)
    reason = commit.get_ad().get_value("ErrorReason")
    assert reason == "Setting owner to bob when active owner is alice is not permitted"
    assert core(service).jobs == {}
    # a READ token cannot build a cluster (the servicer's roles)
    sock = await run(service, cmd.QMGMT_WRITE_CMD, READER, request(q.NewCluster))
    (m,) = sock.replies()
    assert (m.get_int(), m.get_int()) == (-1, 13)
    assert m.get_ad().get_value("ErrorReason") == "NewCluster is not open to role read"
    # a connection that ends before its commit changes nothing
    await run(service, cmd.QMGMT_WRITE_CMD, ALICE, *submit_requests()[:-2])
    assert core(service).jobs == {}


async def test_reschedule(service: ScheddService) -> None:
    s = core(service)
    s.ad_cadence.start(100.0)  # a run of the ads just started: nothing pending
    assert not s.ad_cadence.reschedule_pending
    await run(service, cmd.RESCHEDULE, ALICE, Message(b""))
    assert s.ad_cadence.reschedule_pending
