"""The schedd's gRPC shell: one servicer for the schedds an actor hosts, and their loops.

Requests route by ``schedd_name`` (empty: the only schedd on this server). The servicer
turns messages into core calls (:mod:`.schedd`) and sends what the core asks for:

- Submit: the core commits the jobs before the reply and asks for a reschedule: once its
  ads have gone to the collector (see ``.cadence``), the negotiator is asked for a cycle
  (its address from the collector's "Negotiator" ad, cached; a failure is logged and the
  next cycle comes on its own).
- Matches: answered at once; claims are then requested per startd address (one
  RequestClaims each, all addresses concurrently), and each address's granted claims are
  activated with one ActivateClaims.
- JobsExited and Act: claims to give up go out as one ReleaseClaims per startd.
- Loops: Scheduler and Submitter ads when a core's ``AdCadence`` says (every
  SCHEDD_INTERVAL, SCHEDD_MIN_INTERVAL after a change, sooner for a reschedule; one
  Advertise for all schedds of this actor; submitters left without jobs are
  invalidated), then the reschedules asked for; keepalives when the core says they are
  due (each claim every min(ALIVE_INTERVAL, JobLeaseDuration / 3), at least 10 s), one
  KeepAlive per (startd, schedd) carrying all its claims there.

Core calls are synchronous and run on the event loop, so each is atomic with respect to
the others; network calls never hold a core in an intermediate state.
"""

from __future__ import annotations

import asyncio
import functools
import getpass
import json
import logging
import math
from collections import Counter, defaultdict
from collections.abc import Awaitable, Mapping
from typing import Any

import grpc
import grpc.aio

from .. import rpc, turns
from ..auth import ALL_ROLES, Principal, Role, caller, daemon_identity, submit_owner
from ..classad import ClassAd
from ..classad.unparse import quote_string
from ..daemon import RPC_TIMEOUT, DaemonContext, ReplyCache, abort_invalid, sleep_until_or
from ..v1 import collector_pb2 as cpb
from ..v1 import collector_pb2_grpc as cgrpc
from ..v1 import negotiator_pb2 as npb
from ..v1 import negotiator_pb2_grpc as ngrpc
from ..v1 import schedd_pb2 as spb
from ..v1 import schedd_pb2_grpc as sgrpc
from ..v1 import startd_pb2 as tpb
from ..v1 import startd_pb2_grpc as tgrpc
from ..wire import WireError, ad_from_bytes, ad_from_pb, ad_to_pb, ads_to_pb, split_fields
from .handover import HandedActivations, HandedClaims
from .logfiles import append_user_logs
from .memqueue import MemoryJobQueue
from .queue import JobQueue, QueueError
from .schedd import (
    MIN_ALIVE_EVERY,
    ActivationOutcome,
    ClaimOutcome,
    ClaimRequest,
    CostlyConstraint,
    JobExit,
    MatchNotice,
    Outbox,
    Rejection,
    Schedd,
    ScheddError,
)
from .service_qmgmt import QmgmtMethods
from .submit import SubmitError
from .userlog import format_events
from .wallclock import DEFAULT_INTERVAL as WALL_CLOCK_DEFAULT

__all__ = ["SERVICE_NAME", "ScheddService"]

log = logging.getLogger(__name__)

SERVICE_NAME = "mockpool.v1.Schedd"
_MATCHES_FIELD = spb.MatchesRequest.DESCRIPTOR.fields_by_name["matches"].number
_MATCH_ENTRIES = frozenset({_MATCHES_FIELD})
_SLOT_FIELD = spb.Match.DESCRIPTOR.fields_by_name["slot"].number
_SLOT_ENTRY = frozenset({_SLOT_FIELD})
# claims asked for (or activated) in one request to a startd, each with its job ad: 20,000
# in one message held the schedd's loop for 0.4 s to serialise, and its reply as long
PER_STARTD_REQUEST = 1_000
_RECENT_REQUESTS = 1024  # request ids remembered for retried Matches / JobsExited


def _method(name: str) -> str:
    return f"/{SERVICE_NAME}/{name}"


def _batches(items: list[Any], size: int) -> list[list[Any]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


@functools.cache
def _pool_user() -> str:
    return getpass.getuser()


def _log_refusal(principal: Principal) -> str | None:
    """Why this caller's jobs may not keep a job event log (None: they may). The schedd
    writes it as the user it runs as (HTCondor's writes as the job's owner), so only that
    user's own token or an admin's may name a file for it to write."""
    user = _pool_user()
    if principal.role is Role.ADMIN or principal.name == user:
        return None
    return (
        f"this pool's schedd runs as {user!r} and writes job event logs only for that user "
        f"or an admin token, not for {principal.name!r}"
    )


class ScheddService(QmgmtMethods, sgrpc.ScheddServicer):
    """Several schedds behind one servicer (``names``), each with its queue file
    ``ctx.state_dir / f"{name}.sqlite"``."""

    METHOD_ROLES: Mapping[str, frozenset[Role]] = {
        _method("Submit"): frozenset({Role.SUBMIT, Role.ADMIN}),
        _method("Act"): frozenset({Role.SUBMIT, Role.ADMIN}),
        _method("NewCluster"): frozenset({Role.SUBMIT, Role.ADMIN}),
        _method("SubmitJobAds"): frozenset({Role.SUBMIT, Role.ADMIN}),
        _method("Edit"): frozenset({Role.SUBMIT, Role.ADMIN}),
        _method("Reschedule"): frozenset({Role.SUBMIT, Role.ADMIN}),
        _method("QueryJobs"): ALL_ROLES,
        _method("History"): ALL_ROLES,
        _method("GetResourceRequests"): frozenset({Role.NEGOTIATOR, Role.ADMIN}),
        _method("Matches"): frozenset({Role.NEGOTIATOR, Role.ADMIN}),
        _method("JobsExited"): frozenset({Role.DAEMON, Role.ADMIN}),
    }

    def __init__(self, ctx: DaemonContext, names: list[str]) -> None:
        if not names:
            raise ValueError("a ScheddService needs at least one schedd name")
        self.ctx = ctx
        self.cores: dict[str, Schedd] = {}
        self.down: dict[str, str] = {}  # crashed schedds of this actor: lower-case -> name
        self._changed: asyncio.Event | None = None
        self._by_core: dict[str, set[asyncio.Future[Any]]] = {}  # a schedd's background work
        self._policy_wake: asyncio.Event | None = None  # a schedd came back (its policy too)
        try:
            for name in names:
                if name.lower() in self.cores:
                    raise ValueError(f"schedd name {name!r} given twice")
                self._open(name)
        except Exception:
            for core in self.cores.values():
                core.queue.close()
            raise
        self.stats: Counter[str] = Counter()
        self._user_log_refused: set[tuple[str, str]] = set()  # (schedd, path) reported
        self.core_stats: defaultdict[str, Counter[str]] = defaultdict(Counter)  # by schedd
        self._tasks: list[asyncio.Task[None]] = []
        self._background: set[asyncio.Task[Any]] = set()
        self._ready_wake: asyncio.Event | None = None
        self._alive_wake: asyncio.Event | None = None  # claims changed: re-read the next keepalive
        self._negotiator: str | None = None
        self._recent = ReplyCache(_RECENT_REQUESTS)

    def _open(self, name: str) -> Schedd:
        """Schedd ``name`` from its queue file (a restart after a crash too)."""
        now = self.ctx.clock.now()
        queue: JobQueue | MemoryJobQueue
        if self.ctx.disk is not None:
            # named as the file would be in state_dir (the launcher reads it by that name)
            disk_name = f"{self.ctx.state_dir.name}/{name}.sqlite"
            queue = self.ctx.disk.job_queue(disk_name, birth=now)
        else:
            queue = JobQueue(self.ctx.state_dir / f"{name}.sqlite", birth=now)
        try:
            core = self.cores[name.lower()] = Schedd(
                name, queue, self.ctx.config, now, ad_epoch=self.ctx.ad_epoch
            )
        except Exception:
            queue.close()
            raise
        self._after(core, changed=False)  # records left out
        return core

    # --- one schedd of the actor crashing and coming back --------------------------------

    def crash_daemon(self, name: str) -> None:
        """Schedd ``name`` dies as a process would: its memory and its work in flight go,
        nothing is flushed or said; its queue file stays. The actor's other schedds and
        its server run on (a call for this one is refused as a dead daemon's is)."""
        core = self.cores.pop(name.lower())
        self.down[name.lower()] = core.name
        for task in self._by_core.pop(name.lower(), set()):
            task.cancel()
        core.drain_events()  # not gathered: lost with the process (the file keeps its own)
        core.queue.close()

    def restart_daemon(self, name: str) -> None:
        """Schedd ``name`` again, from its queue file (what a restarted actor does)."""
        core = self._open(self.down.pop(name.lower()))
        core.address = self.ctx.address_of(core.name)
        self._spawn(self._send(core, core.startup_outbox()), core)
        self._after(core)
        if self._policy_wake is not None:
            self._policy_wake.set()

    def _running(self, core: Schedd) -> bool:
        """Whether ``core`` is still the schedd of its name (not crashed meanwhile)."""
        return self.cores.get(core.name.lower()) is core

    # --- the Service protocol -----------------------------------------------------------

    def add_to_server(self, server: grpc.aio.Server) -> None:
        sgrpc.add_ScheddServicer_to_server(self, server)
        # Matches read as bytes: a cycle's 20,000 matches parsed whole would hold the loop
        # for most of a second (every schedd of the actor, every timer)
        raw = {
            "Matches": grpc.unary_unary_rpc_method_handler(
                self.Matches, response_serializer=spb.MatchesReply.SerializeToString
            )
        }
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE_NAME, raw),))
        server.add_registered_method_handlers(SERVICE_NAME, raw)

    async def start(self) -> None:
        for core in self.cores.values():
            core.address = self.ctx.address_of(core.name)
            self._spawn(self._send(core, core.startup_outbox()), core)
        self._changed = asyncio.Event()
        self._policy_wake = asyncio.Event()
        self._ready_wake = asyncio.Event()
        self._alive_wake = asyncio.Event()
        self._tasks = [
            asyncio.create_task(self._ads_loop()),
            asyncio.create_task(self._activate_when_ready()),
            asyncio.create_task(self._keepalive_loop()),
            asyncio.create_task(self._policy_loop()),
            asyncio.create_task(self._wallclock_loop()),
        ]

    async def stop(self) -> None:
        tasks = self._tasks + list(self._background)
        self._tasks = []
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._background.clear()
        for core in self.cores.values():
            core.queue.close()

    def stored_events(self, seen: Mapping[str, int]) -> list[dict[str, Any]]:
        """Events a crash kept in the queue files but no one gathered: each schedd's
        committed after ``seen[name]`` and before it started (later ones are drained)."""
        out: list[dict[str, Any]] = []
        for core in self.cores.values():
            after = seen.get(core.name.lower(), core.loaded_event_seq)
            for seq, t, kind, fields in core.queue.events_between(after, core.loaded_event_seq):
                out.append({"t": t, "daemon": core.name, "kind": kind, **json.loads(fields)})
                out[-1]["_seq"] = seq
        return out

    def event_marks(self) -> dict[str, int]:
        """Each schedd's last event committed before it started: what came before is not
        this pool's to gather (a queue file a pool before it left)."""
        return {core.name.lower(): core.loaded_event_seq for core in self.cores.values()}

    def status(self) -> dict[str, Any]:
        return {
            "schedds": {
                core.name: {**core.status(), **self.core_stats[core.name]}
                for core in self.cores.values()
            },
            "stats": dict(self.stats),
        }

    # --- plumbing -----------------------------------------------------------------------

    def _spawn(self, coro: Awaitable[Any], core: Schedd | None = None) -> None:
        """Run follow-up work (claims, releases, reschedule) after a reply; its failure is
        logged, never lost silently and never fatal. Work of ``core`` ends if it crashes."""
        task = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._finished)
        if core is not None:
            mine = self._by_core.setdefault(core.name.lower(), set())
            mine.add(task)
            task.add_done_callback(mine.discard)

    def _finished(self, task: asyncio.Task[Any]) -> None:
        self._background.discard(task)
        if not task.cancelled() and task.exception() is not None:
            self.stats["background_failures"] += 1
            log.error("schedd background work failed", exc_info=task.exception())

    def _after(self, core: Schedd, *, changed: bool = True) -> None:
        """Emit the core's events; note that its ads need refreshing."""
        if core.name.lower() in self.down:
            return  # a crashed schedd says nothing more
        for kind, fields, seq in core.drain_numbered():
            if seq is not None:  # stored with its change: the gatherer counts what it saw
                fields = {**fields, "_seq": seq}
            if kind == "bad_record":
                log.warning(
                    "%s: job %s left out of the %s: %s",
                    core.name,
                    fields["job"],
                    fields["where"],
                    fields["problem"],
                )
            self.ctx.events.emit(core.name, kind, **fields)
        self._write_user_logs(core)
        if changed:
            core.ad_cadence.changed(self.ctx.clock.now())
        if self._changed is not None:
            self._changed.set()  # the ads loop reads the cadences again
        if changed and self._alive_wake is not None:
            self._alive_wake.set()

    def _write_user_logs(self, core: Schedd) -> None:
        """Append the core's user log events to their files, one write per file; a log
        that cannot be written is reported (once per file) and the schedd goes on."""
        events = core.joblog.drain()
        if not events:
            return
        texts = format_events(events, core.ad_epoch, core.joblog.format)
        for path, error in append_user_logs(texts).items():
            self.stats["user_log_failures"] += 1
            if (core.name, path) in self._user_log_refused:
                continue
            self._user_log_refused.add((core.name, path))
            job = next(f"{e.cluster}.{e.proc}" for e in events if e.path == path)
            log.warning(
                "%s: cannot write the user log %s (job %s): %s", core.name, path, job, error
            )
            self.ctx.events.emit(core.name, "user_log_failed", job=job, path=path, error=error)

    async def _core(self, name: str, context: grpc.aio.ServicerContext) -> Schedd:
        if not name:
            if len(self.cores) == 1:
                return next(iter(self.cores.values()))
            names = ", ".join(c.name for c in self.cores.values())
            await abort_invalid(context, f"schedd_name is required: this server hosts {names}")
        core = self.cores.get(name.lower())
        if core is None and name.lower() in self.down:
            await context.abort(grpc.StatusCode.UNAVAILABLE, f"schedd {name} is not running")
        if core is None:
            names = ", ".join(c.name for c in self.cores.values())
            await context.abort(
                grpc.StatusCode.NOT_FOUND, f"no schedd named {name!r} here (hosts {names})"
            )
        assert core is not None
        return core

    # --- users --------------------------------------------------------------------------

    async def Submit(
        self, request: spb.SubmitRequest, context: grpc.aio.ServicerContext
    ) -> spb.SubmitReply:
        core = await self._core(request.schedd_name, context)
        # thousands of jobs in one transaction: submits to this actor's schedds that
        # arrive together run a loop round apart, not all before its timers
        await turns.own_turn()
        now = self.ctx.clock.now()
        principal = caller()
        try:
            owner = submit_owner(principal, request.owner)
        except PermissionError as exc:
            await context.abort(grpc.StatusCode.PERMISSION_DENIED, str(exc))
        try:
            cluster, n = core.submit(
                request.description,
                request.source or "<submit>",
                owner,
                now,
                request_id=request.request_id or None,
                item_files=dict(request.item_files),
                env=dict(request.env),
                iwd=request.iwd,
                log_refused=_log_refusal(principal),
            )
        except SubmitError as exc:
            await abort_invalid(context, str(exc))
        except QueueError as exc:
            log.error("%s: submit not stored: %s", core.name, exc)
            await context.abort(grpc.StatusCode.INTERNAL, f"job not queued: {exc}")
        except (ValueError, ArithmeticError) as exc:
            # a value the description's checks let through: still the user's input, refused
            # as such and naming it (the traceback is logged, for the check that missed it)
            log.warning("%s: submit refused: %r", core.name, exc, exc_info=True)
            source = request.source or "<submit>"
            await abort_invalid(context, f"{source}: {type(exc).__name__}: {exc}")
        self.stats["submits"] += 1
        self._after(core)  # with the jobs, the core asked for a reschedule after its ads
        return spb.SubmitReply(cluster_id=cluster, num_procs=n)

    async def QueryJobs(
        self, request: spb.JobQueryRequest, context: grpc.aio.ServicerContext
    ) -> spb.JobQueryReply | rpc.Handover:
        core = await self._core(request.schedd_name, context)
        now = self.ctx.clock.now()
        try:
            ads = core.query(request.constraint, list(request.projection), request.limit, now=now)
        except CostlyConstraint as exc:
            await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, str(exc))
        except ScheddError as exc:
            await abort_invalid(context, str(exc))
        if rpc.handover_wanted(context):  # the queue's own ads: copies for the caller
            return self._job_handover(core, [ad.copy() for ad in ads], now)
        return self._job_reply(core, ads, now)

    async def History(
        self, request: spb.JobQueryRequest, context: grpc.aio.ServicerContext
    ) -> spb.JobQueryReply | rpc.Handover:
        core = await self._core(request.schedd_name, context)
        now = self.ctx.clock.now()
        try:
            ads = core.history(
                request.constraint,
                list(request.projection),
                request.limit,
                now=now,
                since=request.since,
            )
        except CostlyConstraint as exc:
            await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, str(exc))
        except ScheddError as exc:
            await abort_invalid(context, str(exc))
        except QueueError as exc:
            log.error("%s: history unreadable: %s", core.name, exc)
            await context.abort(grpc.StatusCode.INTERNAL, str(exc))
        if rpc.handover_wanted(context):  # read from the database: the caller's own
            return self._job_handover(core, ads, now)
        return self._job_reply(core, ads, now)

    def _job_reply(self, core: Schedd, ads: list[ClassAd], now: float) -> spb.JobQueryReply:
        """Job ads and the schedd ad; a job ad that cannot be sent is reported and left
        out, so one odd job never fails a query for everyone."""
        reply = spb.JobQueryReply()
        ads_to_pb(ads, reply.jobs, functools.partial(self._unsendable, core))
        ad_to_pb(core.schedd_ad(now), reply.schedd)
        self._after(core, changed=False)
        return reply

    def _job_handover(self, core: Schedd, ads: list[ClassAd], now: float) -> rpc.Handover:
        """``_job_reply`` for a caller of this process that asks for objects (a virtual
        pool's client): the ads themselves, not a message."""
        self._after(core, changed=False)
        return rpc.Handover((ads, core.schedd_ad(now)))

    def _unsendable(self, core: Schedd, ad: ClassAd, exc: WireError) -> None:
        job_id = f"{ad.get_value('ClusterId', '?')}.{ad.get_value('ProcId', '?')}"
        log.warning("%s: job %s left out of a reply: %s", core.name, job_id, exc)
        self.ctx.events.emit(core.name, "bad_record", job=job_id, where="reply", problem=str(exc))

    async def Act(self, request: spb.ActRequest, context: grpc.aio.ServicerContext) -> spb.ActReply:
        core = await self._core(request.schedd_name, context)
        now = self.ctx.clock.now()
        who = caller()
        # A SUBMIT token manages its own user's jobs only; ADMIN is the queue superuser.
        user = who.name if who.role is Role.SUBMIT else None
        try:
            results, out = core.act(
                request.action,
                list(request.job_ids),
                request.constraint,
                request.reason,
                user or request.owner,
                now,
                only_owner=user,
                others_denied=request.others_denied,
                hold_subcode=request.hold_subcode,
            )
        except CostlyConstraint as exc:
            await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, str(exc))
        except ScheddError as exc:
            await abort_invalid(context, str(exc))
        self._after(core)
        self._spawn(self._send(core, out), core)
        reply = spb.ActReply()
        for r in results:
            reply.results.add(job_id=r.job_id, ok=r.ok, error=r.error, result=r.code)
        return reply

    # --- the negotiator -----------------------------------------------------------------

    async def GetResourceRequests(
        self, request: spb.ResourceRequestsRequest, context: grpc.aio.ServicerContext
    ) -> spb.ResourceRequestsReply:
        core = await self._core(request.schedd_name, context)
        reply = spb.ResourceRequestsReply()
        ads_to_pb(
            core.resource_requests(request.submitter or None),
            reply.requests,
            functools.partial(self._unsendable, core),
        )
        return reply

    async def Matches(
        self, raw: bytes | spb.MatchesRequest, context: grpc.aio.ServicerContext
    ) -> spb.MatchesReply:
        """A negotiator's matches, as bytes: the few fields beside them parsed at once,
        each match in its turn (``_use_matches``)."""
        if not isinstance(raw, bytes):  # a servicer called directly
            raw = raw.SerializeToString()
        try:
            found, rest = await self.ctx.offload(split_fields, raw, _MATCH_ENTRIES)
            matches = found[_MATCHES_FIELD]
        except WireError:  # protobuf's parser says what is wrong (or reads what we cannot)
            rest, matches = raw, []
        try:
            request = spb.MatchesRequest.FromString(rest)
        except Exception as exc:  # DecodeError, bad UTF-8
            await abort_invalid(
                context, f"/{SERVICE_NAME}/Matches: the request is not a valid message: {exc}"
            )
        if request.matches:
            matches = [m.SerializeToString() for m in request.matches]
            del request.matches[:]
        core = await self._core(request.schedd_name, context)
        return await self._recent.once(
            request.request_id, lambda: self._apply_matches(core, request, matches)
        )

    async def _apply_matches(
        self, core: Schedd, request: spb.MatchesRequest, matches: list[bytes]
    ) -> spb.MatchesReply:
        """The reply to a Matches request: sent once the request is taken in, before the
        matches are used on their own task (HTCondor's schedd likewise acknowledges a
        match and contacts the startd later). The slot ads are decoded there too, in
        turns: the negotiator's cycle waits neither for the schedd's claim bookkeeping
        nor for 10,000 slot ads to be decoded."""
        now = self.ctx.clock.now()
        if request.rejections:
            core.on_rejections(
                [
                    Rejection(int(r.cluster_id), int(r.proc_id), r.reason, r.time)
                    for r in request.rejections
                ],
                now,
            )
            self.stats["rejections"] += len(request.rejections)
            self.core_stats[core.name]["rejections"] += len(request.rejections)
        self.stats["matches"] += len(matches)
        self._spawn(self._use_matches(core, matches), core)
        return spb.MatchesReply(received=len(matches))

    async def _use_matches(self, core: Schedd, matches: list[bytes]) -> None:
        notices: list[MatchNotice] = []
        async for part in turns.in_turns(matches, turns.ADS_PER_TURN):
            notices += [n for m in part if (n := self._match_notice(core, m)) is not None]
        matches.clear()  # the request's messages (10,000 slot ads) need not outlive the claims
        out = Outbox()
        async for part in turns.in_turns(notices, turns.ADS_PER_TURN):
            out.extend(core.on_matches(part, self.ctx.clock.now()))
        self.stats["matches_dropped"] += out.dropped
        self._after(core)
        await self._send(core, out)

    def _match_notice(self, core: Schedd, raw: bytes) -> MatchNotice | None:
        """The match (its bytes) as the core takes it; None (the match dropped, and why
        logged) when it or its slot ad does not decode."""
        try:
            found, rest = split_fields(raw, _SLOT_ENTRY)
            m = spb.Match.FromString(rest)
        except Exception as exc:  # WireError, DecodeError
            self.stats["matches_dropped"] += 1
            log.warning("%s: match dropped: not a valid message: %s", core.name, exc)
            return None
        try:
            # (a slot field sent twice merges, as protobuf's parser would merge them)
            slot = ad_from_bytes(b"".join(found[_SLOT_FIELD])) if found[_SLOT_FIELD] else None
        except WireError as exc:
            self.stats["matches_dropped"] += 1
            log.warning("%s: match for %s dropped: bad slot ad: %s", core.name, m.slot_name, exc)
            return None
        return MatchNotice(
            m.submitter, int(m.autocluster_id), m.slot_name, m.claim_id, m.startd_address, slot
        )

    # --- startds ------------------------------------------------------------------------

    async def JobsExited(
        self, request: spb.JobsExitedRequest, context: grpc.aio.ServicerContext
    ) -> spb.JobsExitedReply:
        who = caller()
        if not (who.role is Role.ADMIN or who.is_daemon("startd")):
            await context.abort(
                grpc.StatusCode.PERMISSION_DENIED,
                f"{who} is not a startd: may not report job exits",
            )
        gone = {e.schedd_name.lower() for e in request.exits} & self.down.keys()
        if gone:  # a startd sends each schedd its own: again once it is back
            await context.abort(
                grpc.StatusCode.UNAVAILABLE, f"schedd {self.down[min(gone)]} is not running"
            )
        return await self._recent.once(request.request_id, lambda: self._apply_exits(request))

    async def _apply_exits(self, request: spb.JobsExitedRequest) -> spb.JobsExitedReply:
        by_core: dict[str, list[JobExit]] = {}
        for e in request.exits:
            key = e.schedd_name.lower() if e.schedd_name else ""
            if not key and len(self.cores) == 1:
                key = next(iter(self.cores))
            if key not in self.cores:
                log.warning(
                    "JobsExited for unknown schedd %r (job %d.%d)",
                    e.schedd_name,
                    e.cluster_id,
                    e.proc_id,
                )
                continue
            by_core.setdefault(key, []).append(
                JobExit(
                    e.claim_id,
                    int(e.cluster_id),
                    int(e.proc_id),
                    e.start_time,
                    e.end_time,
                    int(e.exit_code),
                    e.slot_name,
                    e.reason,
                    e.claim_closing,
                )
            )
        accepted = 0
        for key, exits in by_core.items():
            core = self.cores[key]
            async for part in turns.in_turns(exits, turns.ADS_PER_TURN):
                if not self._running(core):
                    break  # crashed meanwhile: the startd's report is answered, as lost
                out = core.on_job_exits(part, self.ctx.clock.now())
                self._after(core)
                self._spawn(self._send(core, out), core)
            accepted += len(exits)
        self.stats["job_exits"] += accepted
        return spb.JobsExitedReply(accepted=accepted)

    # --- sending what a core asked for --------------------------------------------------

    async def _send(self, core: Schedd, out: Outbox) -> None:
        """Send an outbox: every address concurrently; results feed back into the core."""
        jobs: list[Awaitable[None]] = []
        jobs += [
            self._request_claims(core, a, part)
            for a, reqs in out.claims.items()
            for part in _batches(reqs, PER_STARTD_REQUEST)
        ]
        jobs += [
            self._activate(core, a, part)
            for a, acts in out.activations.items()
            for part in _batches(acts, PER_STARTD_REQUEST)
        ]
        jobs += [self._release(core, a, ids) for a, ids in out.releases.items() if ids]
        if jobs:
            await asyncio.gather(*jobs)

    def _stub(self, core: Schedd, address: str) -> tgrpc.StartdStub:
        return self._stub_for(core, address)[0]

    def _stub_for(self, core: Schedd, address: str) -> tuple[tgrpc.StartdStub, bool]:
        """A stub to the startd at ``address``, and whether it is of this process (it
        takes the core's records: ``rpc.can_hand_over``)."""
        # Each schedd speaks to startds as itself: a claim is usable only by its holder.
        identity = daemon_identity("schedd", core.name)
        channel = self.ctx.channel(address, Role.DAEMON, identity)
        return tgrpc.StartdStub(channel), rpc.can_hand_over(channel)

    async def _request_claims(self, core: Schedd, address: str, reqs: list) -> None:
        stub, handing = self._stub_for(core, address)
        request: tpb.RequestClaimsRequest | rpc.Handover
        if handing:  # a startd of this process: the core's records, its answers back
            request = rpc.Handover(
                HandedClaims.of(rpc.request_id(), core.name, self.ctx.address, reqs)
            )
        else:
            request = tpb.RequestClaimsRequest(request_id=rpc.request_id())
            async for part in turns.in_turns(reqs, turns.ADS_PER_TURN):
                for r in part:
                    msg = request.claims.add(
                        claim_id=r.claim_id,
                        slot_name=r.slot_name,
                        schedd_name=core.name,
                        schedd_address=self.ctx.address,
                        owner=r.owner,
                        send_leftovers=r.leftovers,
                    )
                    ad_to_pb(r.job_ad, msg.job)
        failed = ""
        results: list[tpb.ClaimResult] | list[ClaimOutcome] = []
        try:
            reply = await rpc.call(stub.RequestClaims, request, timeout=RPC_TIMEOUT)
            results = reply.value if isinstance(reply, rpc.Handover) else list(reply.results)
        except grpc.aio.AioRpcError as exc:
            log.warning("%s: RequestClaims to %s failed: %s", core.name, address, exc.details())
            self.stats["rpc_failures"] += 1
            failed = f"RequestClaims failed: {exc.code().name}"

        # each outcome stands alone: a big batch is decoded and given to the core in
        # turns, its activations still sent as one request per startd
        def outcome(i: int) -> ClaimOutcome:
            if failed:
                return ClaimOutcome(reqs[i].claim_id, False, failed)
            if i >= len(results):
                return ClaimOutcome(reqs[i].claim_id, False, "no answer from the startd")
            res = results[i]
            if isinstance(res, ClaimOutcome):
                return res
            return self._claim_outcome(core, address, reqs[i], res)

        out = Outbox()
        async for part in turns.in_turns(range(len(reqs)), turns.ADS_PER_TURN):
            outcomes = [outcome(i) for i in part]
            out.extend(core.on_claim_results(outcomes, self.ctx.clock.now()))
        self._after(core)
        if core.next_ready_time() is not None and self._ready_wake is not None:
            self._ready_wake.set()
        await self._send(core, out)

    @staticmethod
    def _claim_outcome(
        core: Schedd, address: str, req: ClaimRequest, res: tpb.ClaimResult
    ) -> ClaimOutcome:
        slot_ad: ClassAd | None = None
        leftover_ad: ClassAd | None = None
        try:
            if res.HasField("slot"):
                slot_ad = ad_from_pb(res.slot)
            if res.leftover_claim_id and res.HasField("leftover_slot"):
                leftover_ad = ad_from_pb(res.leftover_slot)
        except WireError as exc:
            log.warning("%s: bad slot ad from %s: %s", core.name, address, exc)
        return ClaimOutcome(
            req.claim_id,
            res.ok,
            res.error,
            res.claim_id,
            res.slot_name,
            slot_ad,
            res.ready_time,
            res.leftover_claim_id if leftover_ad is not None else "",
            leftover_ad,
        )

    async def _activate_when_ready(self) -> None:
        """Activate preempting claims once their slots' jobs have retired."""
        clock = self.ctx.clock
        assert self._ready_wake is not None
        while True:
            self._ready_wake.clear()
            due = [t for c in self.cores.values() if (t := c.next_ready_time()) is not None]
            if not due:
                await self._ready_wake.wait()
                continue
            if min(due) > clock.now():
                sleeper = asyncio.ensure_future(clock.sleep_until(min(due)))
                waker = asyncio.ensure_future(self._ready_wake.wait())
                try:
                    await asyncio.wait({sleeper, waker}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    for t in (sleeper, waker):
                        t.cancel()
                continue
            now = clock.now()
            for core in self.cores.values():
                out = core.activate_ready(now)
                if out:
                    self._after(core)
                    self._spawn(self._send(core, out), core)

    async def _activate(self, core: Schedd, address: str, acts: list) -> None:
        stub, handing = self._stub_for(core, address)
        request: tpb.ActivateClaimsRequest | rpc.Handover
        if handing:  # a startd of this process: the core's records, its answers back
            request = rpc.Handover(HandedActivations.of(rpc.request_id(), acts))
        else:
            request = tpb.ActivateClaimsRequest(request_id=rpc.request_id())
            async for part in turns.in_turns(acts, turns.ADS_PER_TURN):
                for a in part:
                    msg = request.activations.add(claim_id=a.claim_id)
                    ad_to_pb(a.job_ad, msg.job)
        outcomes: list[ActivationOutcome] = []
        try:
            reply = await rpc.call(stub.ActivateClaims, request, timeout=RPC_TIMEOUT)
        except grpc.aio.AioRpcError as exc:
            log.warning("%s: ActivateClaims to %s failed: %s", core.name, address, exc.details())
            self.stats["rpc_failures"] += 1
            outcomes = [
                ActivationOutcome(
                    a.claim_id, False, f"ActivateClaims failed: {exc.code().name}", answered=False
                )
                for a in acts
            ]
        else:
            # the startd's results, or (handed over) its ActivationOutcomes: alike fields
            results = reply.value if isinstance(reply, rpc.Handover) else reply.results
            answered = {r.claim_id: r for r in results}
            for a in acts:
                r = answered.get(a.claim_id)
                if r is None:
                    outcomes.append(
                        ActivationOutcome(
                            a.claim_id, False, "no answer from the startd", answered=False
                        )
                    )
                else:
                    outcomes.append(ActivationOutcome(a.claim_id, r.ok, r.error, r.start_time))
        # each outcome stands alone: a big batch goes to the core in turns
        async for part in turns.in_turns(outcomes, turns.ADS_PER_TURN):
            out = core.on_activation_results(part, self.ctx.clock.now())
            self._after(core)
            await self._send(core, out)

    async def _release(self, core: Schedd, address: str, claim_ids: list[str]) -> None:
        request = tpb.ReleaseClaimsRequest(request_id=rpc.request_id(), claim_ids=claim_ids)
        answered = True
        try:
            await rpc.call(self._stub(core, address).ReleaseClaims, request, timeout=RPC_TIMEOUT)
        except grpc.aio.AioRpcError as exc:
            # The startd drops the claim anyway when its lease runs out.
            log.warning("%s: ReleaseClaims to %s failed: %s", core.name, address, exc.details())
            self.stats["rpc_failures"] += 1
            answered = False
        core.on_releases_done(claim_ids, self.ctx.clock.now(), answered=answered)
        self._after(core)

    async def _reschedule(self, schedd_name: str) -> None:
        """Ask the negotiator for a cycle; a failure is logged, never raised."""
        try:
            address = self._negotiator or await self._find_negotiator()
            if not address:
                log.info("%s: no negotiator ad yet; not asking for a reschedule", schedd_name)
                return
            stub = ngrpc.NegotiatorStub(self.ctx.channel(address, Role.DAEMON))
            await rpc.call(
                stub.Reschedule, npb.RescheduleRequest(schedd_name=schedd_name), timeout=RPC_TIMEOUT
            )
            self.stats["reschedules"] += 1
        except Exception as exc:
            self._negotiator = None  # look it up again next time
            log.warning("%s: reschedule failed: %s", schedd_name, exc)

    async def _find_negotiator(self) -> str | None:
        self._negotiator = await self.ctx.locate("Negotiator", "")
        return self._negotiator

    # --- loops --------------------------------------------------------------------------

    async def _advertise(self) -> None:
        """One Advertise with every schedd's Scheduler and Submitter ads, and
        invalidations for submitters that have no jobs left."""
        if not self.ctx.collector_address:
            return
        now = self.ctx.clock.now()
        request = cpb.AdvertiseRequest()
        for core in self.cores.values():
            ad = core.schedd_ad(now, self.ctx.duty_cycle())
            ad_to_pb(ad, request.updates.add(ad_type="Scheduler").ad)
            ads, gone = core.submitter_updates(now)
            for ad in ads:
                ad_to_pb(ad, request.updates.add(ad_type="Submitter").ad)
            for key in gone:
                ad_to_pb(key, request.updates.add(ad_type="Submitter", invalidate=True).ad)
        stub = cgrpc.CollectorStub(self.ctx.channel(self.ctx.collector_address, Role.DAEMON))
        try:
            reply = await rpc.call(stub.Advertise, request, timeout=RPC_TIMEOUT)
        except grpc.aio.AioRpcError as exc:
            log.warning("schedd ads not advertised: %s", exc.details())
            self.stats["rpc_failures"] += 1
            return
        for err in reply.errors:
            log.warning("collector refused a schedd ad: %s", err)
        for core in self.cores.values():
            core.submitters_advertised()
        self.stats["advertise"] += 1

    async def _ads_loop(self) -> None:
        """Send the ads when a core's cadence says so (one Advertise for all), then the
        reschedules the cores asked for: after the ads, so the cycle sees them."""
        assert self._changed is not None
        clock = self.ctx.clock
        while True:
            cores = list(self.cores.values())  # (one may have crashed or come back)
            if not cores:
                self._changed.clear()
                await self._changed.wait()
                continue
            due = min(core.ad_cadence.due() for core in cores)
            if due > clock.now():
                self._changed.clear()
                await sleep_until_or(clock, due, self._changed)
                continue
            now = clock.now()
            for core in cores:
                core.ad_cadence.start(now)
            try:
                await self._advertise()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("schedd ads failed")
            for core in cores:
                if core.ad_cadence.finish():
                    self._spawn(self._reschedule(core.name))

    async def _policy_loop(self) -> None:
        """Each core's periodic job policy, when its PERIODIC_EXPR_INTERVAL comes round;
        thousands of jobs are looked at in turns, so timers still wake on time."""
        clock = self.ctx.clock
        while True:
            times = [t for c in self.cores.values() if (t := c.next_policy_time()) is not None]
            if not times:  # none of its schedds has a policy: until one comes back
                assert self._policy_wake is not None
                self._policy_wake.clear()
                await self._policy_wake.wait()
                continue
            await clock.sleep_until(min(times))
            for core in list(self.cores.values()):
                async for part in turns.in_turns(core.policy_due(clock.now())):
                    if not self._running(core):
                        break
                    try:
                        out = core.policy_round(part, clock.now())
                    except Exception:
                        log.exception("%s: periodic job policy failed", core.name)
                        break
                    if out is not None:
                        self._after(core)
                        self._spawn(self._send(core, out), core)

    async def _wallclock_loop(self) -> None:
        """Each core's wall-clock checkpoint, every WALL_CLOCK_CKPT_INTERVAL (0: none). A
        schedd back from a crash starts its rounds again: while every one is down, look
        every minute (its first round is an interval after its start)."""
        clock = self.ctx.clock
        every = self.ctx.config.get_int("WALL_CLOCK_CKPT_INTERVAL", WALL_CLOCK_DEFAULT)
        while every > 0:
            times = [t for c in self.cores.values() if (t := c.wallclock_next) is not None]
            await clock.sleep_until(min(times, default=clock.now() + min(every, 60)))
            for core in list(self.cores.values()):
                try:
                    core.wall_clock_round(clock.now())
                except Exception:  # the queue could not be written: the next round tries
                    log.exception("%s: wall-clock checkpoint failed", core.name)

    async def _keepalive_loop(self) -> None:
        """Sleep until a core's next keepalive is due (woken when claims change), send."""
        assert self._alive_wake is not None
        clock = self.ctx.clock
        while True:
            try:
                self._alive_wake.clear()
                # a turn per schedd: each looks over thousands of claims
                async for (core,) in turns.in_turns(list(self.cores.values()), 1):
                    given_up, due = core.alive_round(clock.now())
                    if given_up:
                        self._after(core)
                        self._spawn(self._send(core, given_up), core)
                    for address, claim_ids in due.items():
                        # in the background: a startd that does not answer (catatonic)
                        # must not hold up the keepalives to others nor giving up on it
                        self._spawn(self._keepalive_one(core, address, claim_ids), core)
                times = [t for c in self.cores.values() if (t := c.alive_next) is not None]
                due = min(times, default=math.inf)
                waits = [asyncio.ensure_future(self._alive_wake.wait())]
                if times:
                    waits.append(asyncio.ensure_future(clock.sleep_until(due)))
                try:
                    await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    for f in waits:
                        f.cancel()
                    await asyncio.gather(*waits, return_exceptions=True)
                # Claims changed: a claim made now needs no keepalive before
                # now + MIN_ALIVE_EVERY, so one look then covers every change until then
                # (a busy schedd changes claims thousands of times a cycle).
                changed_at = clock.now()
                if changed_at < due:
                    await clock.sleep_until(min(due, changed_at + MIN_ALIVE_EVERY))
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("schedd keepalive round failed")
                await clock.sleep_until(clock.now() + 10.0)

    async def _keepalive_one(self, core: Schedd, address: str, claim_ids: list[str]) -> None:
        """One KeepAlive; when its startd does not answer, look its machine up in the
        collector: a startd that came back on a new address is asked there."""
        request = tpb.KeepAliveRequest(schedd_name=core.name, claim_ids=claim_ids)
        try:
            reply = await rpc.call(
                self._stub(core, address).KeepAlive, request, timeout=RPC_TIMEOUT
            )
        except grpc.aio.AioRpcError as exc:
            log.warning("%s: KeepAlive to %s failed: %s", core.name, address, exc.details())
            self.stats["rpc_failures"] += 1
            moved = await self._relocate(core, address, claim_ids)
            if moved is None:
                return
            try:
                reply = await rpc.call(
                    self._stub(core, moved).KeepAlive, request, timeout=RPC_TIMEOUT
                )
            except grpc.aio.AioRpcError:
                self.stats["rpc_failures"] += 1
                return
        self.stats["keepalives"] += 1
        self.core_stats[core.name]["keepalives"] += 1
        core.on_keepalive_answer(claim_ids, reply.unknown_claim_ids, self.ctx.clock.now())
        self._after(core, changed=bool(reply.unknown_claim_ids))

    async def _relocate(self, core: Schedd, address: str, claim_ids: list[str]) -> str | None:
        """The new address of the startd behind ``address`` (by a machine it held a claim
        on), if the collector has one that differs."""
        claim = next((core.claims[c] for c in claim_ids if c in core.claims), None)
        if claim is None:
            return None
        machine = claim.slot_name.rpartition("@")[2]
        try:
            found = await self.ctx.locate("Machine", f"Machine == {quote_string(machine)}")
        except grpc.aio.AioRpcError:
            return None
        if found is None or found == address:
            return None
        log.info("%s: startd of %s moved from %s to %s", core.name, machine, address, found)
        core.readdress(address, found)
        return found
