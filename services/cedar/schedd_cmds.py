"""The schedd's CEDAR commands, as ``htcondor2.Schedd`` and HTCondor's tools send them.

Each handler reads HTCondor's request, calls the method of :class:`ScheddService` that
the gRPC server would (``servicers.call_servicer``: the same ``METHOD_ROLES`` check, the
caller's principal set, so every finer rule is the servicer's: alice cannot act on bob's
jobs),
and answers in HTCondor's reply format, refusals included:

- ``QUERY_JOB_ADS`` / ``QUERY_JOB_ADS_WITH_AUTH`` (schedd.cpp ``command_query_job_ads``):
  a query ad (``Requirements``, ``Projection`` as names separated by white space or
  commas, ``LimitResults``, ``SendServerTime``, ``SummaryOnly``, ``MyJobs``); each job
  ad in its own message (projected as ``putClassAd`` projects: with the attributes the
  named ones use), then a last ad ``Owner = 0`` with ``ErrorCode = 0`` and the summary
  counts (``MyType = "Summary"``), or ``Owner = 0``, ``ErrorCode``, ``ErrorString`` for
  a refused query (htcondor2 raises "Failed to fetch ads from schedd").
- ``QUERY_SCHEDD_HISTORY`` (history_queue.cpp, condor_history -inherit): ``Requirements``,
  ``Projection`` (a list or a string), ``NumJobMatches`` (ATTR_NUM_MATCHES), ``Since``; the ads and a last ad
  ``Owner = 0, NumJobMatches = n, MalformedAds = 0`` in one message (a message each with
  ``StreamResults``); a refusal as ``Owner = 0, ErrorCode, ErrorString``.
- ``ACT_ON_JOBS`` (schedd.cpp ``actOnJobs``, dc_schedd.cpp): ``JobAction`` (1 hold, 2
  release, 3 remove, 5 and 6 vacate), ``ActionIds`` ("1.0,2.3") or ``ActionConstraint``,
  the reason (``HoldReason``, ``ReleaseReason``, ``RemoveReason``); the answer is the
  result ad (``result_total_0`` .. ``_6`` by HTCondor's action_result_t, ``ActionResult``
  1 when a job was acted on, ``TotalJobAds``, ``JobAction``); when it is 1 the client
  confirms with an integer 1 and the schedd answers 1. A request it cannot read is
  refused with an integer 0 (``refuse``), which htcondor2 reports as "Error when
  performing action on the schedd".
- ``QMGMT_WRITE_CMD`` / ``QMGMT_READ_CMD``: the queue management protocol
  (:mod:`.qmgmt`), its transaction committed through ``NewCluster``, ``SubmitJobAds``
  and ``Edit``; reads through ``QueryJobs``.
- ``RESCHEDULE``: ``Reschedule`` (no answer).

Differences from HTCondor's schedd: an action is applied before the client confirms
(HTCondor aborts it when the client goes away in between); suspend, continue and the
forced removal (``RemoveX``) act on no job; job aggregates (``QueryDefaultAutocluster``,
``ProjectionIsGroupBy``) are refused. Times in replies (``ServerTime``) are the pool's
dates. One command table serves one schedd of an actor (``schedd_name``).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import grpc

from .. import auth, rpc
from ..classad import ClassAd, unparse
from ..jobstates import QUEUE_STATES
from ..schedd.jobads import EditSpec
from ..v1 import schedd_pb2 as spb
from ..wire import ad_from_pb, ads_from_pb
from . import commands as cmd
from .qmgmt import QmgmtRefusal, QmgmtSession, StagedCluster
from .server import CedarClosed, CedarRequest, Command, CommandError, Level, Peer
from .servicers import call_servicer
from .stream import Builder

if TYPE_CHECKING:
    from ..schedd.service import ScheddService

__all__ = ["ScheddCalls", "schedd_commands"]

log = logging.getLogger(__name__)

OK, NOT_OK = 1, 0  # condor_commands.h
# JobAction (proc.h's JA_*) -> the servicer's action
_ACTIONS = {1: "hold", 2: "release", 3: "remove", 5: "vacate", 6: "vacate"}
_NO_OP_ACTIONS = frozenset({4, 7, 8, 9})  # RemoveX, ClearDirtyJobAttrs, Suspend, Continue
_REASONS = {"hold": "HoldReason", "release": "ReleaseReason", "remove": "RemoveReason"}
_TOTALS = range(7)  # action_result_t: AR_ERROR .. AR_LIMIT_EXCEEDED
_NAMES = re.compile(r"[^,\s]+")  # StringTokenIterator's separators
_SEND_AT = 256 * 1024  # bytes of a one-message reply gathered before a piece goes out
_END_WAIT = 5.0  # seconds a command without payload waits for its end of message
_ERRNO = {  # a servicer's refusal as the errno qmgmt answers
    grpc.StatusCode.PERMISSION_DENIED: errno.EACCES,
    grpc.StatusCode.UNAUTHENTICATED: errno.EACCES,
    grpc.StatusCode.NOT_FOUND: errno.ENOENT,
    grpc.StatusCode.RESOURCE_EXHAUSTED: errno.E2BIG,
}


class ScheddCalls:
    """Calls of the schedd servicer's methods for one peer (``call_servicer``: checked
    as the gRPC server checks them, run with its principal set)."""

    def __init__(self, service: ScheddService, peer: Peer, schedd_name: str) -> None:
        self.service = service
        self.peer = peer
        self.schedd_name = schedd_name

    async def call(self, method: str, request: Any, *, handover: bool = False) -> Any:
        return await call_servicer(
            self.peer.principal,
            self.service,
            method,
            request,
            peer=self.peer.address,
            handover=handover,
        )

    async def jobs(self, method: str, request: Any) -> tuple[list[ClassAd], ClassAd]:
        """QueryJobs or History: the job ads and the schedd's ad."""
        reply = await self.call(method, request, handover=True)
        if isinstance(reply, rpc.Handover):
            ads, schedd_ad = reply.value
            return list(ads), schedd_ad
        return ads_from_pb(reply.jobs), ad_from_pb(reply.schedd)


# ----------------------------------------------------------------------------- queries


def _names(value: object) -> list[str]:
    """A projection: a string of names, or a list of them."""
    if isinstance(value, str):
        return _NAMES.findall(value)
    if isinstance(value, (list, tuple)):
        return [n for v in value if isinstance(v, str) for n in _NAMES.findall(v)]
    return []


def _bool(ad: ClassAd, name: str, default: bool) -> bool:
    if ad.lookup(name) is None:
        return default
    value = ad.eval(name)
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return value != 0
    return default


def _int(ad: ClassAd, name: str) -> int | None:
    if ad.lookup(name) is None:
        return None
    value = ad.eval(name)
    return value if type(value) is int else None


def _constraint(ad: ClassAd, name: str) -> str:
    expr = ad.lookup(name)
    return "" if expr is None else unparse(expr)


# the ads of a reply, each with the attributes to send (None: all of it)
Ads = list[tuple[ClassAd, list[str] | None]]


def _error_ad(code: int, text: str) -> Ads:
    return [(ClassAd({"Owner": 0, "ErrorString": text, "ErrorCode": code}), None)]


_STATUS_COUNTS = tuple((name, code) for code, name in QUEUE_STATES.items())


def _summary(ads: Sequence[ClassAd], schedd_ad: ClassAd, server_time: int) -> ClassAd:
    """sendDone's last ad: the counts of the jobs the query chose and of all users'."""
    counts = dict.fromkeys((n for n, _ in _STATUS_COUNTS), 0)
    by_status = {s: n for n, s in _STATUS_COUNTS}
    for ad in ads:
        name = by_status.get(ad.get_value("JobStatus"))
        if name is not None:
            counts[name] += 1
    out = ClassAd({"Owner": 0, "ErrorCode": 0, "ServerTime": server_time, "MyType": "Summary"})
    totals = {
        "Idle": schedd_ad.get_value("TotalIdleJobs", 0),
        "Running": schedd_ad.get_value("TotalRunningJobs", 0),
        "Removed": schedd_ad.get_value("TotalRemovedJobs", 0),
        "Completed": 0,
        "Held": schedd_ad.get_value("TotalHeldJobs", 0),
    }
    for prefix, numbers in (("Allusers", totals), ("", counts)):
        out[f"{prefix}Jobs"] = sum(numbers.values())
        for name, n in numbers.items():
            out[f"{prefix}{name}"] = n
        out[f"{prefix}Suspended"] = 0
        for name in ("SchedulerJobs", "SchedulerIdle", "SchedulerRunning", "SchedulerRemoved"):
            out[f"{prefix}{name}"] = 0
        out[f"{prefix}SchedulerCompleted"] = out[f"{prefix}SchedulerHeld"] = 0
    return out


async def query_jobs(calls: ScheddCalls, query: ClassAd) -> Ads:
    """The ads answering a QUERY_JOB_ADS query ad, in order (a message each)."""
    if _bool(query, "ProjectionIsGroupBy", False) or _bool(query, "QueryDefaultAutocluster", False):
        return _error_ad(1, "job aggregate queries are not supported by mockpool's schedd")
    constraint = _constraint(query, "Requirements")
    principal = calls.peer.principal
    if query.lookup("MyJobs") is not None and principal is not None:
        mine = query.eval("MyJobs")
        if mine is not False and principal.role is not auth.Role.ADMIN and principal.name:
            owner = f'(Owner == "{principal.name}")'
            constraint = f"{owner} && ({constraint})" if constraint else owner
    limit = _int(query, "LimitResults")
    projection = _names(query.eval("Projection")) if query.lookup("Projection") else []
    request = spb.JobQueryRequest(
        schedd_name=calls.schedd_name,
        constraint=constraint,
        limit=limit if limit is not None and limit > 0 else 0,
    )
    try:
        ads, schedd_ad = await calls.jobs("QueryJobs", request)
    except CommandError as exc:
        return _error_ad(1, exc.details)
    if limit == 0:
        ads = []
    server_time = schedd_ad.get_value("MyCurrentTime", 0)
    with_time = _bool(query, "SendServerTime", True)
    out: Ads = []
    if not _bool(query, "SummaryOnly", False):
        for ad in ads:
            if with_time:  # (the servicer hands over copies: the queue's own stay as they are)
                ad["ServerTime"] = server_time
                out.append((ad, [*projection, "ServerTime"] if projection else None))
            else:
                out.append((ad, projection or None))
    out.append((_summary(ads, schedd_ad, server_time), None))
    return out


async def history(calls: ScheddCalls, query: ClassAd) -> tuple[Ads, bool]:
    """The ads answering a QUERY_SCHEDD_HISTORY query ad, and whether each is a message
    of its own (StreamResults) or they make one."""
    stream = _bool(query, "StreamResults", False)
    source = query.eval("HistoryRecordSource") if query.lookup("HistoryRecordSource") else ""
    if isinstance(source, str) and source and source.upper() != "SCHEDD":
        text = (
            f"{source.upper()}_HISTORY undefined in remote configuration. "
            "No such related history to be queried."
        )
        return _error_ad(5, text), stream
    matches = _int(query, "NumJobMatches")
    projection = _names(query.eval("Projection")) if query.lookup("Projection") else []
    request = spb.JobQueryRequest(
        schedd_name=calls.schedd_name,
        constraint=_constraint(query, "Requirements"),
        limit=matches if matches is not None and matches > 0 else 0,
        since=_constraint(query, "Since"),
    )
    try:
        ads, _ = await calls.jobs("History", request)
    except CommandError as exc:
        return _error_ad(1, exc.details), stream
    if matches == 0:
        ads = []
    out: Ads = [(ad, projection or None) for ad in ads]
    out.append((ClassAd({"Owner": 0, "NumJobMatches": len(ads), "MalformedAds": 0}), None))
    return out, stream


# ----------------------------------------------------------------------------- actions


def _ids(text: str) -> list[str]:
    return [t for t in re.split(r"[,\s]+", text) if t]


async def act(calls: ScheddCalls, request_ad: ClassAd) -> ClassAd | None:
    """The result ad for an ACT_ON_JOBS command ad (None: refused, nothing done)."""
    number = _int(request_ad, "JobAction")
    if number is None or (number not in _ACTIONS and number not in _NO_OP_ACTIONS):
        return None
    ids_text = request_ad.eval("ActionIds") if request_ad.lookup("ActionIds") else ""
    constraint = _constraint(request_ad, "ActionConstraint")
    if (not isinstance(ids_text, str)) or (bool(ids_text) == bool(constraint)):
        return None  # one of the two, as the schedd requires
    totals = dict.fromkeys(_TOTALS, 0)
    job_ads = 0
    if number in _ACTIONS:
        action = _ACTIONS[number]
        reason_attr = _REASONS.get(action)
        reason = (
            request_ad.eval(reason_attr) if reason_attr and request_ad.lookup(reason_attr) else ""
        )
        principal = calls.peer.principal
        request = spb.ActRequest(
            schedd_name=calls.schedd_name,
            action=action,
            job_ids=_ids(ids_text),
            constraint=constraint,
            reason=reason if isinstance(reason, str) else "",
            owner=principal.name if principal is not None else "",
            others_denied=True,
            hold_subcode=(_int(request_ad, "HoldReasonSubCode") or 0) if action == "hold" else 0,
        )
        try:
            reply = await calls.call("Act", request)
        except CommandError as exc:
            log.info("ACT_ON_JOBS from %s refused: %s", calls.peer.user, exc.details)
            return None
        for r in reply.results:
            if r.job_id:  # (a constraint that chose nothing has a result without a job)
                totals[r.result] = totals.get(r.result, 0) + 1
    try:
        _, schedd_ad = await calls.jobs(
            "QueryJobs", spb.JobQueryRequest(schedd_name=calls.schedd_name, constraint="false")
        )
        job_ads = int(schedd_ad.get_value("TotalJobAds", 0))
    except CommandError:
        job_ads = 0
    principal = calls.peer.principal
    out = ClassAd({"ActionResultType": 2})
    for code, n in totals.items():
        out[f"result_total_{code}"] = n
    out["JobAction"] = number
    out["ActionResult"] = 1 if totals[1] else 0
    out["TotalJobAds"] = job_ads
    out["IsQueueSuperUser"] = principal is not None and principal.role is auth.Role.ADMIN
    return out


# ----------------------------------------------------------------------------- qmgmt


class _Backend:
    """A qmgmt connection's calls into the schedd (the servicer's methods)."""

    def __init__(self, calls: ScheddCalls) -> None:
        self.calls = calls

    async def _call(self, method: str, request: Any) -> Any:
        try:
            return await self.calls.call(method, request)
        except CommandError as exc:
            code = _ERRNO.get(exc.code, errno.EINVAL)  # type: ignore[arg-type]
            raise QmgmtRefusal(code, exc.details) from None

    async def new_cluster(self) -> int:
        reply = await self._call(
            "NewCluster", spb.NewClusterRequest(schedd_name=self.calls.schedd_name)
        )
        return int(reply.cluster_id)

    def _edit_request(self, edits: Sequence[EditSpec], check_only: bool) -> spb.EditRequest:
        request = spb.EditRequest(schedd_name=self.calls.schedd_name, check_only=check_only)
        for e in edits:
            request.edits.add(
                job_ids=list(e.job_ids),
                constraint=e.constraint,
                name=e.name,
                value=e.value or "",
                delete=e.value is None,
            )
        return request

    async def check_edit(self, edit: EditSpec) -> int:
        reply = await self._call("Edit", self._edit_request([edit], True))
        return int(reply.matched[0]) if reply.matched else 0

    async def commit(self, clusters: Sequence[StagedCluster], edits: Sequence[EditSpec]) -> None:
        for staged in clusters:
            request = spb.SubmitJobAdsRequest(
                schedd_name=self.calls.schedd_name, cluster_id=staged.cluster
            )
            _put_texts(staged.ad, request.cluster)
            for proc, texts in sorted(staged.procs.items()):
                _put_texts({**texts, "ProcId": str(proc)}, request.procs.add())
            await self._call("SubmitJobAds", request)
        if edits:
            await self._call("Edit", self._edit_request(edits, False))

    async def jobs(self, constraint: str, projection: Sequence[str] = ()) -> list[ClassAd]:
        request = spb.JobQueryRequest(
            schedd_name=self.calls.schedd_name, constraint=constraint, projection=list(projection)
        )
        try:
            ads, _ = await self.calls.jobs("QueryJobs", request)
        except CommandError as exc:
            raise QmgmtRefusal(errno.EINVAL, exc.details) from None
        return ads


def _put_texts(texts: dict[str, str], out: Any) -> None:
    for name, text in texts.items():
        out.attributes.add(name=name, expression=text)


# ----------------------------------------------------------------------------- commands


async def _send_ads(req: CedarRequest, ads: Ads, *, each: bool) -> None:
    """The ads, a message each or all in one; a long one-message reply goes out in
    pieces as it is made."""
    reply = Builder()
    for i, (ad, names) in enumerate(ads):
        reply.put_ad(ad, names)
        if each and i < len(ads) - 1:
            await req.sock.send(reply)
            reply = Builder()
        elif len(reply) >= _SEND_AT:
            await req.sock.flush(reply)
    await req.sock.send(reply)


def schedd_commands(service: ScheddService, schedd_name: str = "") -> list[Command]:
    """The commands a CEDAR listener answers for schedd ``schedd_name`` of ``service``
    (empty: its only one), at the levels HTCondor's schedd registers them."""

    async def on_query(req: CedarRequest) -> None:
        msg = await req.sock.recv()
        query = msg.get_ad(what="the job query ad")
        msg.expect_end("the job query")
        ads = await query_jobs(ScheddCalls(service, req.peer, schedd_name), query)
        await _send_ads(req, ads, each=True)

    async def on_history(req: CedarRequest) -> None:
        msg = await req.sock.recv()
        query = msg.get_ad(what="the history query ad")
        msg.expect_end("the history query")
        ads, stream = await history(ScheddCalls(service, req.peer, schedd_name), query)
        await _send_ads(req, ads, each=stream)

    async def on_act(req: CedarRequest) -> None:
        msg = await req.sock.recv()
        request_ad = msg.get_ad(what="the action ad")
        msg.expect_end("the action ad")
        result = await act(ScheddCalls(service, req.peer, schedd_name), request_ad)
        if result is None:
            await req.sock.send(Builder().put_int(NOT_OK))  # the schedd's refuse()
            return
        await req.sock.send(Builder().put_ad(result))
        if result.get_value("ActionResult") != 1:
            return  # nothing done: the schedd closes
        confirm = await req.sock.recv()
        answer = confirm.get_int("the tool's confirmation")
        if answer == OK:
            await req.sock.send(Builder().put_int(OK))

    async def on_qmgmt(req: CedarRequest) -> None:
        calls = ScheddCalls(service, req.peer, schedd_name)
        principal = req.peer.principal
        session = QmgmtSession(
            _Backend(calls),
            user=principal.name if principal is not None else "",
            superuser=principal is not None and principal.role is auth.Role.ADMIN,
            read_only=req.command == cmd.QMGMT_READ_CMD,
        )
        going = True
        while going:
            try:
                msg = await req.sock.recv()
            except CedarClosed:
                return  # the client went: an unfinished transaction changes nothing
            reply, going = await session.handle(msg)
            if reply is not None:
                await req.sock.send(reply)

    async def on_reschedule(req: CedarRequest) -> None:
        with contextlib.suppress(CedarClosed, asyncio.TimeoutError):
            await req.sock.recv(_END_WAIT)  # the command's end of message (no payload)
        calls = ScheddCalls(service, req.peer, schedd_name)
        await calls.call("Reschedule", spb.ScheddRescheduleRequest(schedd_name=schedd_name))

    return [
        Command(cmd.QUERY_JOB_ADS, Level.READ, on_query, "QUERY_JOB_ADS"),
        Command(cmd.QUERY_JOB_ADS_WITH_AUTH, Level.READ, on_query, "QUERY_JOB_ADS_WITH_AUTH"),
        Command(cmd.QUERY_SCHEDD_HISTORY, Level.READ, on_history, "QUERY_SCHEDD_HISTORY"),
        Command(cmd.ACT_ON_JOBS, Level.WRITE, on_act, "ACT_ON_JOBS"),
        Command(cmd.QMGMT_WRITE_CMD, Level.WRITE, on_qmgmt, "QMGMT_WRITE_CMD"),
        Command(cmd.QMGMT_READ_CMD, Level.READ, on_qmgmt, "QMGMT_READ_CMD"),
        Command(cmd.RESCHEDULE, Level.WRITE, on_reschedule, "RESCHEDULE"),
    ]
