"""The qmgmt protocol's state machine (mockpool.cedar.qmgmt), fed the request messages
htcondor2 25 sends (the bindings' schedd.cpp, submit_protocol.cpp and qmgmt_send_stubs.cpp:
integers 8 bytes, SetAttribute2's flags one byte, the value before the name), against a
fake backend that records what reaches the schedd."""

from __future__ import annotations

import errno
from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest

from mockpool.cedar import qmgmt as q
from mockpool.cedar.qmgmt import QmgmtRefusal, QmgmtSession, StagedCluster
from mockpool.cedar.rawclient import qmgmt_request
from mockpool.cedar.stream import Builder, Message
from mockpool.classad import ClassAd
from mockpool.schedd.jobads import EditSpec

NO_ACK = bytes([q.NO_ACK])


@dataclass
class FakeSchedd:
    """A backend: cluster ids from 5, jobs 1.0 (alice) and 2.0 (bob) queued."""

    next_cluster: int = 5
    committed: list[tuple[list[StagedCluster], list[EditSpec]]] = field(default_factory=list)
    checked: list[EditSpec] = field(default_factory=list)
    refuse_commit: QmgmtRefusal | None = None
    queued: list[ClassAd] = field(
        default_factory=lambda: [
            ClassAd(ClusterId=1, ProcId=0, Owner="alice", RequestCpus=2, Rank=1.5),
            ClassAd(ClusterId=2, ProcId=0, Owner="bob", RequestCpus=1, Rank=0.5),
        ]
    )

    async def new_cluster(self) -> int:
        self.next_cluster += 1
        return self.next_cluster - 1

    async def check_edit(self, edit: EditSpec) -> int:
        self.checked.append(edit)
        if edit.job_ids == ("9.0",):
            raise QmgmtRefusal(errno.ENOENT, "Modifying attribute Foo in nonexistent job 9.0")
        if edit.constraint == "false":
            raise QmgmtRefusal(errno.ENOENT, "no job matches constraint false")
        return 1 if edit.job_ids else 2

    async def commit(self, clusters: Sequence[StagedCluster], edits: Sequence[EditSpec]) -> None:
        if self.refuse_commit is not None:
            raise self.refuse_commit
        self.committed.append((list(clusters), list(edits)))

    async def jobs(self, constraint: str, projection: Sequence[str] = ()) -> list[ClassAd]:
        if constraint == "true":
            return list(self.queued)
        if constraint == "ClusterId == 1 && ProcId == 0":
            return self.queued[:1]
        return []


request = qmgmt_request  # the calls as htcondor2 sends them


def reply_of(got: tuple[Builder | None, bool]) -> Message:
    builder, going = got
    assert builder is not None and going
    return Message(builder.build())


def ints(got: tuple[Builder | None, bool]) -> list[int]:
    m = reply_of(got)
    out = []
    while not m.at_end():
        out.append(m.get_int())
    return out


def session(schedd: FakeSchedd, **kw: object) -> QmgmtSession:
    return QmgmtSession(schedd, user="alice", superuser=False, **kw)  # type: ignore[arg-type]


async def test_submit_as_htcondor2_sends_it() -> None:
    schedd = FakeSchedd()
    s = session(schedd)
    # ActualScheddQ::init_capabilities: GetCapabilities(0), answered by an ad alone
    caps = reply_of(await s.handle(request(q.GetCapabilities, 0))).get_ad()
    assert caps.get_value("LateMaterialize") is False and caps.get_value("UseJobsets") is False
    # NewCluster: the id
    got = await s.handle(request(q.NewCluster))
    assert got[0] is not None and got[0].build() == (5).to_bytes(8, "big")
    # NewProc(5) -> 0, then the cluster ad and the proc ad with NoAck: no answers
    assert ints(await s.handle(request(q.NewProc, 5))) == [0]
    for name, value in (
        ("ClusterId", "5"),
        ("Owner", "undefined"),
        ("Cmd", '"/bin/sleep"'),
        ("Iwd", '"C:\\dir"'),  # old syntax: a backslash is itself
        ("Requirements", 'TARGET.Arch == "X86_64"'),
    ):
        assert await s.handle(request(q.SetAttribute2, 5, -1, value, name, NO_ACK)) == (None, True)
    for name, value in (("ProcId", "0"), ("JobStatus", "1"), ("Item", '"a"')):
        assert await s.handle(request(q.SetAttribute2, 5, 0, value, name, NO_ACK)) == (None, True)
    assert ints(await s.handle(request(q.NewProc, 5))) == [1]
    for name, value in (("ProcId", "1"), ("JobStatus", "1"), ("Item", '"b"')):
        await s.handle(request(q.SetAttribute2, 5, 1, value, name, NO_ACK))
    assert schedd.committed == []  # nothing reaches the schedd before the commit
    # DisconnectQ(commit): CommitTransactionNoFlags -> rval 0 and an (empty) ad
    m = reply_of(await s.handle(request(q.CommitTransactionNoFlags)))
    assert m.get_int() == 0 and len(m.get_ad()) == 0 and m.at_end()
    ((cluster,), edits) = schedd.committed[0]
    assert edits == [] and cluster.cluster == 5
    assert cluster.ad == {
        "ClusterId": "5",
        "Owner": "undefined",
        "Cmd": '"/bin/sleep"',
        "Iwd": '"C:\\\\dir"',  # as new-syntax text
        "Requirements": 'TARGET.Arch == "X86_64"',
    }
    assert cluster.procs == {
        0: {"ProcId": "0", "JobStatus": "1", "Item": '"a"'},
        1: {"ProcId": "1", "JobStatus": "1", "Item": '"b"'},
    }
    # CloseSocket: no answer, the connection ends
    assert await s.handle(request(q.CloseSocket)) == (None, False)


async def test_a_deferred_failure_fails_the_commit_with_the_schedds_words() -> None:
    schedd = FakeSchedd()
    s = session(schedd)
    await s.handle(request(q.NewCluster))
    await s.handle(request(q.NewProc, 5))
    # a bad value with NoAck: no answer now, the commit fails, later ones are ignored
    assert await s.handle(request(q.SetAttribute2, 5, 0, "(1 +", "Bad", NO_ACK)) == (None, True)
    assert await s.handle(request(q.SetAttribute2, 5, 0, "1", "1x", NO_ACK)) == (None, True)
    m = reply_of(await s.handle(request(q.CommitTransactionNoFlags)))
    assert (m.get_int(), m.get_int()) == (-1, -errno.EINVAL)  # errno negated, as qmgmt does
    ad = m.get_ad()
    assert ad.get_value("ErrorCode") == 2
    assert ad.get_value("ErrorReason") == (
        "Received invalid attribute value '(1 +' for job 5.0; ignoring"
    )
    assert schedd.committed == []
    # the schedd refusing the jobs at the commit (Owner): the same answer
    schedd.refuse_commit = QmgmtRefusal(
        errno.EACCES, "Setting owner to bob when active owner is alice is not permitted"
    )
    await s.handle(request(q.NewCluster))
    await s.handle(request(q.NewProc, 6))
    await s.handle(request(q.SetAttribute2, 6, -1, '"bob"', "Owner", NO_ACK))
    m = reply_of(await s.handle(request(q.CommitTransaction, 0)))
    assert (m.get_int(), m.get_int()) == (-1, -errno.EACCES)
    assert m.get_ad().get_value("ErrorReason").startswith("Setting owner to bob")


async def test_new_proc_and_set_attribute_outside_the_active_cluster() -> None:
    s = session(FakeSchedd())
    assert ints(await s.handle(request(q.NewProc, 5))) == [-1, errno.EACCES]  # no NewCluster
    await s.handle(request(q.NewCluster))
    assert ints(await s.handle(request(q.NewProc, 4))) == [-1, errno.EACCES]
    # acked SetAttribute of a proc that NewProc did not give: a queued job's edit, which
    # the schedd checks at once
    assert ints(await s.handle(request(q.SetAttribute, 9, 0, "1", "Foo"))) == [-1, errno.ENOENT]
    assert ints(await s.handle(request(q.SetAttribute, 0, -1, "1", "Foo"))) == [
        -1,
        errno.ENOENT,
    ]
    # an empty value: refused when acked, the connection dropped with NoAck (qmgmt's)
    assert ints(await s.handle(request(q.SetAttribute, 5, -1, "", "Foo"))) == [-1, errno.EINVAL]
    assert await s.handle(request(q.SetAttribute2, 5, -1, "", "Foo", NO_ACK)) == (None, False)


async def test_edit_as_htcondor2_sends_it() -> None:
    schedd = FakeSchedd()
    s = session(schedd)
    # Schedd.edit("1.0", "Foo", '"x"'): SetAttribute2 with NoAck, then the commit
    assert await s.handle(request(q.SetAttribute2, 1, 0, '"x"', "Foo", NO_ACK)) == (None, True)
    m = reply_of(await s.handle(request(q.CommitTransactionNoFlags)))
    assert m.get_int() == 0
    assert schedd.committed == [([], [EditSpec(("1.0",), "", "Foo", '"x"')])]
    assert schedd.checked == []  # NoAck edits are checked at the commit
    # Schedd.edit(constraint): SetAttributeByConstraint (no flags) answers the count
    assert ints(
        await s.handle(request(q.SetAttributeByConstraint, 'Owner == "alice"', "3", "Foo"))
    ) == [2]
    assert schedd.checked[-1] == EditSpec((), 'Owner == "alice"', "Foo", "3")
    assert ints(await s.handle(request(q.SetAttributeByConstraint, "false", "3", "Foo"))) == [
        -1,
        errno.ENOENT,
    ]
    # OnlyMyJobs (flags 0x10): the schedd adds the owner clause for a non-superuser
    flags = bytes([q.ONLY_MY_JOBS])
    await s.handle(request(q.SetAttributeByConstraint2, "ProcId == 0", "3", "Bar", flags))
    assert schedd.checked[-1].constraint == '(Owner == "alice") && (ProcId == 0)'
    m = reply_of(await s.handle(request(q.CommitTransactionNoFlags)))
    assert m.get_int() == 0
    assert [e.name for e in schedd.committed[-1][1]] == ["Foo", "Bar"]


async def test_abort_and_a_dropped_connection_change_nothing() -> None:
    schedd = FakeSchedd()
    s = session(schedd)
    await s.handle(request(q.NewCluster))
    await s.handle(request(q.NewProc, 5))
    await s.handle(request(q.SetAttribute2, 1, 0, "1", "Foo", NO_ACK))
    assert ints(await s.handle(request(q.AbortTransaction))) == [0]
    m = reply_of(await s.handle(request(q.CommitTransactionNoFlags)))
    assert m.get_int() == 0 and schedd.committed == []  # nothing was left to commit
    # an unknown request ends the connection without an answer
    assert await s.handle(request(99999)) == (None, False)


async def test_reads_and_refusals() -> None:
    schedd = FakeSchedd()
    s = session(schedd)
    m = reply_of(await s.handle(request(q.GetJobAd, 1, 0)))
    assert m.get_int() == 0 and m.get_ad().get_value("Owner") == "alice"
    assert ints(await s.handle(request(q.GetJobAd, 3, 0))) == [-1, errno.ENOENT]
    assert ints(await s.handle(request(q.GetAttributeInt, 1, 0, "RequestCpus"))) == [0, 2]
    m = reply_of(await s.handle(request(q.GetAttributeFloat, 1, 0, "Rank")))
    # CEDAR's doubles keep 31 bits of mantissa (Stream::put(double))
    assert (m.get_int(), m.get_float()) == (0, pytest.approx(1.5, rel=1e-9))
    m = reply_of(await s.handle(request(q.GetAttributeString, 1, 0, "Owner")))
    assert (m.get_int(), m.get_string()) == (0, "alice")
    m = reply_of(await s.handle(request(q.GetAttributeExpr, 1, 0, "Owner")))
    assert (m.get_int(), m.get_string()) == (0, '"alice"')
    assert ints(await s.handle(request(q.GetAttributeInt, 1, 0, "Nope"))) == [-1, errno.ENOENT]
    # GetNextJob walks the queue, one ad a call
    owners = []
    got = await s.handle(request(q.GetNextJob, 1))
    while (m := reply_of(got)).get_int() == 0:
        owners.append(m.get_ad().get_value("Owner"))
        got = await s.handle(request(q.GetNextJob, 0))
    assert owners == ["alice", "bob"]
    # GetAllJobsByConstraint: (0, ad) per job, then -1 and errno 0, in one message
    m = reply_of(await s.handle(request(q.GetAllJobsByConstraint, "true", "Owner")))
    seen = []
    while m.get_int() == 0:
        seen.append(dict(m.get_ad().pairs()))
    assert m.get_int() == 0 and m.at_end() and [list(a) for a in seen] == [["Owner"], ["Owner"]]
    # what mockpool does not offer: refused, the arguments read
    assert ints(await s.handle(request(q.SetJobFactory, 5, 10, "", "digest"))) == [-1, errno.EINVAL]
    assert ints(await s.handle(request(q.SendSpoolFile, "x"))) == [-2, errno.EINVAL]
    assert ints(await s.handle(request(q.SetEffectiveOwner, "bob"))) == [-1, errno.EACCES]
    assert ints(await s.handle(request(q.SetEffectiveOwner, "alice"))) == [0]
    # a read-only connection (QMGMT_READ_CMD) builds nothing
    ro = session(schedd, read_only=True)
    m = reply_of(await ro.handle(request(q.NewCluster)))
    assert (m.get_int(), m.get_int()) == (-1, errno.EACCES)
    assert m.get_ad().get_value("ErrorCode") == errno.EACCES


async def test_a_short_request_is_an_error_not_a_guess() -> None:
    from mockpool.cedar.encoding import StreamError

    s = session(FakeSchedd())
    with pytest.raises(StreamError, match="NewProc's cluster id"):
        await s.handle(request(q.NewProc))
    with pytest.raises(StreamError, match="untouched bytes"):
        await s.handle(request(q.NewCluster, 7))
