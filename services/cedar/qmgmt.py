"""HTCondor's queue management protocol (qmgmt), as a schedd answers it: one connection's
state machine (``QMGMT_WRITE_CMD`` / ``QMGMT_READ_CMD``).

After the command, the client sends requests, one message each: an integer request
number (qmgmt_constants.h) and its arguments; the schedd answers most with an integer
``rval`` (>= 0 success; < 0 failure, then an integer errno), some with more
(src/condor_schedd.V6/qmgmt_receivers.cpp ``do_Q_request``, the client side in
qmgmt_send_stubs.cpp). How ``htcondor2.Schedd.submit`` uses it (submit.cpp, the
bindings' schedd.cpp): GetCapabilities, NewCluster, then per job NewProc and its
attributes as SetAttribute2 with the NoAck flag (no answer: a failure is kept and fails
the commit), the cluster ad first, then CommitTransactionNoFlags (answered by rval and
an ad: ErrorCode / ErrorReason on failure) and CloseSocket (no answer; the schedd
closes). ``Schedd.edit`` sends SetAttribute2 (NoAck) per job id, or one
SetAttributeByConstraint (answered by the number of jobs it matched), then the commit.

Encoding details that matter: SetAttribute2's and SetAttributeByConstraint2's flags are
one byte (``SetAttributePublicFlags_t``), every other integer eight; SetAttribute sends
the value before the name.

Nothing is changed before the commit: a transaction keeps the clusters being built (the
cluster ad and proc ads, attribute texts) and the edits of queued jobs, and the commit
hands them to the :class:`QmgmtBackend` (the schedd's servicer); a connection that ends
without one changes nothing (``handle_q``'s AbortTransaction). Edits of queued jobs made
with NoAck are checked at the commit, as HTCondor's deferred errors fail it; acked ones
and SetAttributeByConstraint are checked at once (``check_edit``), so their answers are
HTCondor's.

Not supported (answered as failures, not as a dropped connection): late materialization
(SetJobFactory, SendMaterializeData: the capabilities ad says LateMaterialize false),
job sets (SendJobQueueAd), spooled files, timer attributes, dirty attributes, and
editing a cluster ad after its submit.
"""

from __future__ import annotations

import errno
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ..classad import ClassAd, ClassAdSyntaxError, parse_expr, unparse
from ..classad.oldstrings import new_to_old, old_to_new
from ..classad.tree import Literal
from ..schedd.jobads import EditSpec
from ..tooltime import TOOL_RNG, wall_now
from .stream import Builder, Message

__all__ = [
    "QmgmtBackend",
    "QmgmtRefusal",
    "QmgmtSession",
    "StagedCluster",
]

# qmgmt_constants.h
InitializeConnection = 10001
NewCluster = 10002
NewProc = 10003
DestroyCluster = 10004
DestroyProc = 10005
SetAttribute = 10006
CommitTransactionNoFlags = 10007
GetAttributeFloat = 10008
GetAttributeInt = 10009
GetAttributeString = 10010
GetAttributeExpr = 10011
DeleteAttribute = 10012
GetNextJob = 10013
SendSpoolFile = 10017
GetJobAd = 10018
GetJobByConstraint = 10019
GetNextJobByConstraint = 10020
SetAttributeByConstraint = 10021
InitializeReadOnlyConnection = 10022
BeginTransaction = 10023
AbortTransaction = 10024
SetTimerAttribute = 10025
GetAllJobsByConstraint = 10026
SetAttribute2 = 10027
CloseSocket = 10028
SendSpoolFileIfNeeded = 10029
SetEffectiveOwner = 10030
CommitTransaction = 10031
SetAttributeByConstraint2 = 10032
GetDirtyAttributes = 10033
GetNextDirtyJobByConstraint = 10034
SetAllowProtectedAttrChanges = 10035
GetCapabilities = 10036
SetJobFactory = 10037
SendMaterializeData = 10039
SendJobQueueAd = 10040

# condor_qmgr.h: SetAttribute flags (one byte on the wire)
NO_ACK = 1 << 1
ONLY_MY_JOBS = 1 << 4

_MAX_PROCS = 1_000_000  # procs one connection may build (MAX_JOBS_PER_SUBMISSION stops less)
_STAGED_ATTRS = 500_000  # attributes one connection may stage before the commit


class QmgmtRefusal(Exception):
    """A refused call: HTCondor's errno and its words."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.errno = code
        self.message = message


@dataclass
class StagedCluster:
    """A cluster being built: its id (from NewCluster), cluster ad and proc ads as
    attribute texts, in the order the procs came."""

    cluster: int
    ad: dict[str, str] = field(default_factory=dict)
    procs: dict[int, dict[str, str]] = field(default_factory=dict)
    next_proc: int = 0


class QmgmtBackend(Protocol):
    """What a qmgmt connection asks of the schedd (the servicer's methods, called as
    the connection's user). Refusals are :class:`QmgmtRefusal`."""

    async def new_cluster(self) -> int: ...

    async def check_edit(self, edit: EditSpec) -> int:
        """The number of jobs ``edit`` would change, or QmgmtRefusal; changes nothing."""
        ...

    async def commit(self, clusters: Sequence[StagedCluster], edits: Sequence[EditSpec]) -> None:
        """Queue the clusters and apply the edits (QmgmtRefusal: nothing of a part that
        fails is kept)."""
        ...

    async def jobs(self, constraint: str, projection: Sequence[str] = ()) -> list[ClassAd]:
        """Queued job ads matching ``constraint`` (QmgmtRefusal: a bad constraint)."""
        ...


def _capabilities() -> ClassAd:
    """GetSchedulerCapabilities's ad, as far as mockpool's schedd goes: no late
    materialization, no job sets, no extended submit commands."""
    return ClassAd({"LateMaterialize": False, "LateMaterializeVersion": 2, "UseJobsets": False})


class QmgmtSession:
    """One qmgmt connection. ``handle`` takes each request message and returns the
    answer to send (None: none) and whether the connection goes on."""

    def __init__(
        self,
        backend: QmgmtBackend,
        *,
        user: str,
        superuser: bool,
        read_only: bool = False,
    ) -> None:
        self.backend = backend
        self.user = user
        self.superuser = superuser
        self.read_only = read_only
        self.clusters: list[StagedCluster] = []
        self.edits: list[EditSpec] = []
        self.deferred: QmgmtRefusal | None = None  # the first NoAck failure of this transaction
        self._staged_attrs = 0
        self._scan: list[ClassAd] | None = None  # GetNextJob's results, in order
        self._scan_key: str | None = None

    # --- plumbing -----------------------------------------------------------------------

    @staticmethod
    def _rval(rval: int, err: int = 0) -> Builder:
        reply = Builder().put_int(rval)
        if rval < 0:
            reply.put_int(err)
        return reply

    def _refused(self, exc: QmgmtRefusal) -> Builder:
        return self._rval(-1, exc.errno)

    def _abort(self) -> None:
        self.clusters, self.edits, self.deferred = [], [], None
        self._staged_attrs = 0

    @property
    def active(self) -> StagedCluster | None:
        return self.clusters[-1] if self.clusters else None

    def _writable(self) -> None:
        if self.read_only:
            raise QmgmtRefusal(errno.EACCES, "this connection is read-only (QMGMT_READ_CMD)")

    async def handle(self, msg: Message) -> tuple[Builder | None, bool]:
        """The answer to one request and whether the connection goes on. A request that
        does not decode (StreamError) or is not one qmgmt knows ends the connection, as
        ``do_Q_request`` returning -1 does."""
        request = msg.get_int("the qmgmt request number")
        handler = _HANDLERS.get(request)
        if handler is None:
            return None, False
        return await handler(self, msg)

    # --- the transaction ----------------------------------------------------------------

    async def _new_cluster(self, msg: Message) -> tuple[Builder | None, bool]:
        msg.expect_end("NewCluster")
        try:
            self._writable()
            cluster = await self.backend.new_cluster()
        except QmgmtRefusal as exc:
            reply = self._rval(-1, exc.errno)
            return reply.put_ad(ClassAd({"ErrorCode": exc.errno, "ErrorReason": exc.message})), True
        self.clusters.append(StagedCluster(cluster))
        return self._rval(cluster), True

    async def _new_proc(self, msg: Message) -> tuple[Builder | None, bool]:
        cluster = msg.get_int("NewProc's cluster id")
        msg.expect_end("NewProc")
        staged = self.active
        if self.read_only or staged is None or staged.cluster != cluster or cluster < 1:
            return self._rval(-1, errno.EACCES), True
        if sum(len(c.procs) for c in self.clusters) >= _MAX_PROCS:
            return self._rval(-4, errno.EINVAL), True  # NEWJOB_ERR_MAX_JOBS_PER_SUBMISSION
        proc = staged.next_proc
        staged.next_proc += 1
        staged.procs[proc] = {}
        return self._rval(proc), True

    def _staged_ad(self, cluster: int, proc: int) -> dict[str, str] | None:
        """The ad being built for ``cluster.proc`` (proc -1: the cluster ad), if any."""
        for staged in self.clusters:
            if staged.cluster == cluster:
                return staged.ad if proc == -1 else staged.procs.get(proc)
        return None

    async def _set_attribute(self, msg: Message, request: int) -> tuple[Builder | None, bool]:
        cluster = msg.get_int("SetAttribute's cluster id")
        proc = msg.get_int("SetAttribute's proc id")
        value = msg.get_string("SetAttribute's value")
        name = msg.get_string("SetAttribute's name")
        flags = msg.get_bytes(1, "SetAttribute's flags")[0] if request == SetAttribute2 else 0
        msg.expect_end("SetAttribute")
        no_ack = bool(flags & NO_ACK)
        if not value:  # qmgmt drops a NoAck connection that sends no value
            return (None, False) if no_ack else (self._rval(-1, errno.EINVAL), True)
        if no_ack and self.deferred is not None:
            return None, True  # ignored after the transaction's first failure
        try:
            self._writable()
            where = f"{cluster}.{proc}"
            staged = self._staged_ad(cluster, proc)
            if staged is not None:
                self._stage(staged, name, _check_attr(name, value, where))
            elif cluster < 1 or proc < 0:
                raise QmgmtRefusal(
                    errno.ENOENT, f"Modifying attribute {name} in nonexistent job {where}"
                )
            else:
                edit = EditSpec((where,), "", name, _check_attr(name, value, where))
                if not no_ack:
                    await self.backend.check_edit(edit)
                self._add_edit(edit)
        except QmgmtRefusal as exc:
            if no_ack:
                self.deferred = exc
                return None, True
            return self._refused(exc), True
        return (None if no_ack else self._rval(0)), True

    def _stage(self, ad: dict[str, str], name: str, value: str) -> None:
        self._staged_attrs += 1
        if self._staged_attrs > _STAGED_ATTRS:
            raise QmgmtRefusal(
                errno.E2BIG, f"more than {_STAGED_ATTRS} attributes in one transaction"
            )
        for k in [k for k in ad if k.lower() == name.lower()]:
            del ad[k]
        ad[name] = value

    def _add_edit(self, edit: EditSpec) -> None:
        self._staged_attrs += 1
        if self._staged_attrs > _STAGED_ATTRS:
            raise QmgmtRefusal(
                errno.E2BIG, f"more than {_STAGED_ATTRS} attributes in one transaction"
            )
        self.edits.append(edit)

    async def _set_by_constraint(self, msg: Message, request: int) -> tuple[Builder | None, bool]:
        constraint = msg.get_string("SetAttributeByConstraint's constraint")
        value = msg.get_string("SetAttributeByConstraint's value")
        name = msg.get_string("SetAttributeByConstraint's name")
        flags = 0
        if request == SetAttributeByConstraint2:
            flags = msg.get_bytes(1, "SetAttributeByConstraint's flags")[0]
        msg.expect_end("SetAttributeByConstraint")
        if flags & ONLY_MY_JOBS and not self.superuser:
            mine = f'(Owner == "{self.user}")'
            constraint = f"{mine} && ({constraint})" if constraint.strip() else mine
        try:
            self._writable()
            text = _new_text(constraint or "true", "constraint")
            edit = EditSpec((), text, name, _check_attr(name, value, "*"))
            matched = await self.backend.check_edit(edit)
            self._add_edit(edit)
        except QmgmtRefusal as exc:
            return self._refused(exc), True
        return self._rval(matched), True

    async def _delete_attribute(self, msg: Message) -> tuple[Builder | None, bool]:
        cluster = msg.get_int("DeleteAttribute's cluster id")
        proc = msg.get_int("DeleteAttribute's proc id")
        name = msg.get_string("DeleteAttribute's name")
        msg.expect_end("DeleteAttribute")
        try:
            self._writable()
            staged = self._staged_ad(cluster, proc)
            if staged is not None:
                found = [k for k in staged if k.lower() == name.lower()]
                if not found:
                    raise QmgmtRefusal(errno.ENOENT, f"{name} is not set in job {cluster}.{proc}")
                for k in found:
                    del staged[k]
            else:
                edit = EditSpec((f"{cluster}.{proc}",), "", name, None)
                await self.backend.check_edit(edit)
                self._add_edit(edit)
        except QmgmtRefusal as exc:
            return self._refused(exc), True
        return self._rval(0), True

    async def _destroy(self, msg: Message, request: int) -> tuple[Builder | None, bool]:
        cluster = msg.get_int("the cluster id")
        proc = msg.get_int("the proc id") if request == DestroyProc else -1
        msg.expect_end("DestroyCluster" if proc == -1 else "DestroyProc")
        for i, staged in enumerate(self.clusters):
            if staged.cluster != cluster:
                continue
            if proc == -1:
                del self.clusters[i]
            elif staged.procs.pop(proc, None) is None:
                break
            return self._rval(0), True
        # a queued job is removed with ACT_ON_JOBS here, not through qmgmt
        return self._rval(-1, errno.ENOENT), True

    async def _begin(self, msg: Message) -> tuple[Builder | None, bool]:
        msg.expect_end("BeginTransaction")
        self.deferred = None
        return self._rval(0), True

    async def _abort_request(self, msg: Message) -> tuple[Builder | None, bool]:
        msg.expect_end("AbortTransaction")
        self._abort()
        return self._rval(0), True

    async def _commit(self, msg: Message, request: int) -> tuple[Builder | None, bool]:
        if request == CommitTransaction:
            msg.get_int("CommitTransaction's flags")
        msg.expect_end("CommitTransaction")
        failure = self.deferred
        clusters = [c for c in self.clusters if c.procs]
        edits = self.edits
        self._abort()
        if failure is None and (clusters or edits):
            try:
                await self.backend.commit(clusters, edits)
            except QmgmtRefusal as exc:
                failure = exc
        if failure is not None:
            # as the schedd answers a transaction its errors failed: errno negated
            reply = self._rval(-1, -failure.errno if failure.errno > 0 else -1)
            return reply.put_ad(ClassAd({"ErrorCode": 2, "ErrorReason": failure.message})), True
        return self._rval(0).put_ad(ClassAd()), True

    # --- small requests -----------------------------------------------------------------

    async def _no_reply(self, msg: Message) -> tuple[Builder | None, bool]:
        return None, True  # InitializeConnection: a no-op with no answer

    async def _close(self, msg: Message) -> tuple[Builder | None, bool]:
        msg.expect_end("CloseSocket")
        return None, False

    async def _capabilities(self, msg: Message) -> tuple[Builder | None, bool]:
        msg.get_int("GetCapabilities's mask")
        msg.expect_end("GetCapabilities")
        return Builder().put_ad(_capabilities()), True

    async def _effective_owner(self, msg: Message) -> tuple[Builder | None, bool]:
        owner = msg.get_string("SetEffectiveOwner's owner")
        msg.expect_end("SetEffectiveOwner")
        # acting as another user is not offered (it would bypass the Owner check)
        if owner and owner != self.user:
            return self._rval(-1, errno.EACCES), True
        return self._rval(0), True

    async def _allow_protected(self, msg: Message) -> tuple[Builder | None, bool]:
        msg.get_int("SetAllowProtectedAttrChanges's value")
        msg.expect_end("SetAllowProtectedAttrChanges")
        return self._rval(0), True

    async def _unsupported(self, msg: Message, request: int) -> tuple[Builder | None, bool]:
        """A request mockpool does not offer: its arguments read, a failure answered."""
        reads = _UNSUPPORTED[request]
        for kind in reads:
            if kind == "i":
                msg.get_int()
            elif kind == "s":
                msg.get_string()
            else:
                msg.get_ad()
        msg.expect_end()
        if request == SendSpoolFileIfNeeded:
            return Builder().put_int(-2), True
        if request == SendSpoolFile:
            return self._rval(-2, errno.EINVAL), True
        return self._rval(-1, errno.EINVAL), True

    # --- reads --------------------------------------------------------------------------

    async def _job_ad(self, cluster: int, proc: int) -> ClassAd | None:
        staged = self._staged_ad(cluster, proc)
        if staged is not None:
            return _ad_of(staged)
        ads = await self.backend.jobs(f"ClusterId == {cluster} && ProcId == {proc}")
        return ads[0] if ads else None

    async def _get_attribute(self, msg: Message, request: int) -> tuple[Builder | None, bool]:
        cluster = msg.get_int("the cluster id")
        proc = msg.get_int("the proc id")
        name = msg.get_string("the attribute name")
        msg.expect_end("GetAttribute")
        try:
            ad = await self._job_ad(cluster, proc)
        except QmgmtRefusal as exc:
            return self._refused(exc), True
        expr = None if ad is None else ad.lookup(name)
        if expr is None:
            return self._rval(-1, errno.ENOENT), True
        if request == GetAttributeExpr:
            return self._rval(0).put_string(new_to_old(unparse(expr))), True
        # the wall clock, as before: this connection knows no pool date
        value = ad.eval(name, now=wall_now(), rng=TOOL_RNG) if ad is not None else None
        if request == GetAttributeString:
            if not isinstance(value, str):
                return self._rval(-1, errno.EINVAL), True
            return self._rval(0).put_string(value), True
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return self._rval(-1, errno.EINVAL), True
        if request == GetAttributeInt:
            return self._rval(0).put_int(int(value)), True
        return self._rval(0).put_float(float(value)), True

    async def _get_job_ad(self, msg: Message) -> tuple[Builder | None, bool]:
        cluster = msg.get_int("the cluster id")
        proc = msg.get_int("the proc id")
        msg.expect_end("GetJobAd")
        try:
            ad = await self._job_ad(cluster, proc)
        except QmgmtRefusal as exc:
            return self._refused(exc), True
        if ad is None:
            return self._rval(-1, errno.ENOENT), True
        return self._rval(0).put_ad(ad), True

    async def _get_by_constraint(self, msg: Message) -> tuple[Builder | None, bool]:
        constraint = msg.get_string("the constraint")
        msg.expect_end("GetJobByConstraint")
        return await self._first(constraint)

    async def _first(self, constraint: str) -> tuple[Builder | None, bool]:
        try:
            ads = await self.backend.jobs(constraint or "true")
        except QmgmtRefusal as exc:
            return self._refused(exc), True
        if not ads:
            return self._rval(-1, errno.ENOENT), True
        return self._rval(0).put_ad(ads[0]), True

    async def _get_next(self, msg: Message, request: int) -> tuple[Builder | None, bool]:
        init = msg.get_int("initScan")
        constraint = msg.get_string("the constraint") if request == GetNextJobByConstraint else ""
        msg.expect_end("GetNextJob")
        if init or self._scan is None or self._scan_key != constraint:
            try:
                self._scan = await self.backend.jobs(constraint or "true")
            except QmgmtRefusal as exc:
                self._scan = None
                return self._refused(exc), True
            self._scan_key = constraint
        if not self._scan:
            return self._rval(-1, errno.ENOENT), True
        return self._rval(0).put_ad(self._scan.pop(0)), True

    async def _get_all(self, msg: Message) -> tuple[Builder | None, bool]:
        constraint = msg.get_string("the constraint")
        projection = msg.get_string("the projection")
        msg.expect_end("GetAllJobsByConstraint")
        names = [n for n in projection.replace(",", " ").split() if n]
        try:
            ads = await self.backend.jobs(constraint or "true", names)
        except QmgmtRefusal as exc:
            return self._refused(exc), True
        reply = Builder()
        for ad in ads:
            reply.put_int(0).put_ad(ad, names or None)
        return reply.put_int(-1).put_int(0), True


def _new_text(text: str, what: str) -> str:
    """An expression as qmgmt sends it (old syntax, where a quote is the only escape) as
    new-syntax text; EINVAL when it does not parse."""
    try:
        return unparse(parse_expr(old_to_new(text)))
    except ClassAdSyntaxError as exc:
        raise QmgmtRefusal(errno.EINVAL, f"can't parse {what} {text!r}: {exc}") from None


def _check_attr(name: str, value: str, where: str) -> str:
    """qmgmt's checks of an attribute as it is set (a ClassAd name, an expression); the
    value as new-syntax text."""
    if (
        not name
        or not name.isascii()
        or not (name[0].isalpha() or name[0] == "_")
        or not all(c.isalnum() or c == "_" for c in name)
    ):
        raise QmgmtRefusal(errno.EINVAL, f"Got invalid attribute named {name} for job {where}")
    try:
        return unparse(parse_expr(old_to_new(value)))
    except ClassAdSyntaxError:
        raise QmgmtRefusal(
            errno.EINVAL, f"Received invalid attribute value '{value}' for job {where}; ignoring"
        ) from None


def _ad_of(texts: dict[str, str]) -> ClassAd:
    ad = ClassAd()
    for name, text in texts.items():
        try:
            ad[name] = parse_expr(text)
        except ClassAdSyntaxError:
            ad[name] = Literal(text)
    return ad


# the arguments of requests read and refused: i an integer, s a string, a an ad
_UNSUPPORTED: dict[int, str] = {
    SetTimerAttribute: "iisi",
    SendSpoolFile: "s",
    SendSpoolFileIfNeeded: "a",
    GetDirtyAttributes: "ii",
    GetNextDirtyJobByConstraint: "is",
    SetJobFactory: "iiss",
    SendJobQueueAd: "iiia",
}


Handler = Callable[[QmgmtSession, Message], Awaitable[tuple[Builder | None, bool]]]


def _with_request(
    fn: Callable[[QmgmtSession, Message, int], Awaitable[tuple[Builder | None, bool]]],
    request: int,
) -> Handler:
    async def call(self: QmgmtSession, msg: Message) -> tuple[Builder | None, bool]:
        return await fn(self, msg, request)

    return call


def _handlers() -> dict[int, Handler]:
    s = QmgmtSession
    table: dict[int, Handler] = {
        InitializeConnection: s._no_reply,
        InitializeReadOnlyConnection: s._no_reply,
        NewCluster: s._new_cluster,
        NewProc: s._new_proc,
        DeleteAttribute: s._delete_attribute,
        BeginTransaction: s._begin,
        AbortTransaction: s._abort_request,
        CloseSocket: s._close,
        GetCapabilities: s._capabilities,
        SetEffectiveOwner: s._effective_owner,
        SetAllowProtectedAttrChanges: s._allow_protected,
        GetJobAd: s._get_job_ad,
        GetJobByConstraint: s._get_by_constraint,
        GetAllJobsByConstraint: s._get_all,
    }
    with_request = {
        s._destroy: (DestroyCluster, DestroyProc),
        s._set_attribute: (SetAttribute, SetAttribute2),
        s._set_by_constraint: (SetAttributeByConstraint, SetAttributeByConstraint2),
        s._commit: (CommitTransactionNoFlags, CommitTransaction),
        s._get_attribute: (
            GetAttributeFloat,
            GetAttributeInt,
            GetAttributeString,
            GetAttributeExpr,
        ),
        s._get_next: (GetNextJob, GetNextJobByConstraint),
        s._unsupported: tuple(_UNSUPPORTED),
    }
    for fn, requests in with_request.items():
        for request in requests:
            table[request] = _with_request(fn, request)
    return table


_HANDLERS: dict[int, Handler] = _handlers()
