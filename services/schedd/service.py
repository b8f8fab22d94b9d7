"""The schedd's gRPC shell: one servicer for the schedds an actor hosts, on the pump.

Every rule and timer is the core's: each schedd's (:mod:`.driver` over :mod:`.schedd`),
and what the actor's schedds share, one loop and one Advertise (:mod:`.host`), which the
generic pump (:mod:`..pump`) runs as it runs every daemon's core. This module decodes
requests into the contract's messages (``messages.py``), delivers them to the schedd they
name (``schedd_name``; empty: the only schedd on this server) and returns the reply; the
pump sends the rest, each message type through a small function that makes its RPC and
returns the answer (or the failure, as ``Undeliverable``) for the core
(``service_calls.py``).

What stays here is transport: the protobuf codec (Matches read as bytes, slot ads
decoded in turns), splitting a big message into requests of ``PER_STARTD_REQUEST``
claims, dedup of retried Matches/JobsExited (``ReplyCache``), refusing calls for a
crashed schedd of the actor as a dead daemon would, and writing user logs and log lines.

Core calls are synchronous and run on the event loop, so each is atomic with respect to
the others; network calls never hold a core in an intermediate state.
"""

from __future__ import annotations

import asyncio
import functools
import getpass
import json
import logging
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Mapping
from typing import Any

import grpc
import grpc.aio

from .. import rpc, turns
from ..auth import ALL_ROLES, Role, caller
from ..classad import ClassAd
from ..contract import Peer, Ready, Send, Undeliverable
from ..daemon import DaemonContext, ReplyCache, abort_invalid
from ..messages import (
    REPLIES,
    ScheddJobsExited,
    ScheddMatches,
    ScheddResourceRequestsRequest,
    StartdActivateClaims,
    StartdRequestClaims,
)
from ..pump import Pump, undeliverable
from ..startd.grants import JobExitRecord
from ..v1 import schedd_pb2 as spb
from ..v1 import schedd_pb2_grpc as sgrpc
from ..wire import WireError, ad_from_bytes, ad_to_pb, ads_to_pb, split_fields
from .driver import ScheddDriver, exits_refusal
from .host import (
    RETRY_AFTER,
    FromSchedd,
    JointAdvertise,
    JointAnswer,
    Outputs,
    ScheddHost,
    ToSchedd,
)
from .logfiles import append_user_logs
from .queue import JobQueue, QueueError
from .records import CostlyConstraint, MatchNotice, RejectionNotice, ScheddError
from .schedd import Schedd
from .service_calls import CALLS, advertise
from .service_qmgmt import QmgmtMethods
from .submit import SubmitError

__all__ = ["SERVICE_NAME", "ScheddService"]

log = logging.getLogger(__name__)

SERVICE_NAME = "mockpool.v1.Schedd"
_MATCHES_FIELD = spb.MatchesRequest.DESCRIPTOR.fields_by_name["matches"].number
_MATCH_ENTRIES = frozenset({_MATCHES_FIELD})
_SLOT_FIELD = spb.Match.DESCRIPTOR.fields_by_name["slot"].number
_SLOT_ENTRY = frozenset({_SLOT_FIELD})
_RECENT_REQUESTS = 1024  # request ids remembered for retried Matches / JobsExited
_REPLY_TYPES = (*REPLIES, Undeliverable)
# the answers to these take turns before they are delivered (see _request)
_ITEMS = {StartdRequestClaims: "claims", StartdActivateClaims: "activations"}


def _method(name: str) -> str:
    return f"/{SERVICE_NAME}/{name}"


@functools.cache
def _pool_user() -> str:
    return getpass.getuser()


async def _no_matches() -> AsyncIterator[list[MatchNotice]]:
    """One empty part: a message with no match still counts as a change of the queue."""
    yield []


def _reply_of(ready: Ready, corr: str) -> Any:
    """The reply in ``ready`` to the request ``corr`` (taken out of its sends)."""
    for i, send in enumerate(ready.sends):
        msg = send.msg
        if isinstance(msg, _REPLY_TYPES):
            answered = msg.msg.corr if isinstance(msg, Undeliverable) else msg.corr
            if answered == corr:
                del ready.sends[i]
                return msg
    raise AssertionError(f"the schedd core gave no reply to {corr}")


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
        self.host = ScheddHost()
        self.down: dict[str, str] = {}  # crashed schedds of this actor: lower-case -> name
        self._kept: dict[str, Counter[str]] = {}  # a crashed schedd's counters, until back
        self._by_core: dict[str, set[asyncio.Future[Any]]] = {}  # a schedd's work in flight
        self._counts: Counter[str] = Counter()  # the shell's own (decoding, user logs)
        self._user_log_refused: set[tuple[str, str]] = set()  # (schedd, path) reported
        self._background: set[asyncio.Task[Any]] = set()
        self._recent = ReplyCache(_RECENT_REQUESTS)
        self.pump = Pump(
            self.host,
            ctx,
            {FromSchedd: self._from_schedd, JointAdvertise: self._advertise},
            name="schedd",
            retry_after=RETRY_AFTER,
            after_act=self._outputs,
            failure=self._failure,
        )
        try:
            for name in names:
                if name.lower() in self.host.drivers:
                    raise ValueError(f"schedd name {name!r} given twice")
                self._open(name)
        except Exception:
            for driver in self.host.drivers.values():
                driver.core.queue.close()
            raise

    @property
    def drivers(self) -> dict[str, ScheddDriver]:
        """The running schedds, by lower-case name."""
        return self.host.drivers

    @property
    def cores(self) -> dict[str, Schedd]:
        return {key: d.core for key, d in self.host.drivers.items()}

    def _open(self, name: str) -> ScheddDriver:
        """Schedd ``name`` from its queue file (a restart after a crash too)."""
        now = self.ctx.clock.now()
        queue = JobQueue(self.ctx.state_dir / f"{name}.sqlite", birth=now)
        try:
            core = Schedd(name, queue, self.ctx.config, now, ad_epoch=self.ctx.ad_epoch)
        except Exception:
            queue.close()
            raise
        driver = ScheddDriver(core, now, duty_cycle=self.ctx.duty_cycle, pool_user=_pool_user())
        self.host.add(driver)
        self._act(driver, driver.after_call(now, changed=False))  # records left out
        return driver

    def _placed(self, driver: ScheddDriver) -> None:
        """The addresses known once the server serves: its own, the collector's."""
        driver.core.address = self.ctx.address_of(driver.name)
        driver.address = self.ctx.address
        driver.collector_address = self.ctx.collector_address or ""

    # --- one schedd of the actor crashing and coming back --------------------------------

    def crash_daemon(self, name: str) -> None:
        """Schedd ``name`` dies as a process would: its memory and its work in flight go,
        nothing is flushed or said; its queue file stays. The actor's other schedds and
        its server run on (a call for this one is refused as a dead daemon's is)."""
        driver = self.host.remove(name)
        self.down[name.lower()] = driver.name
        self._kept[name.lower()] = driver.stats  # the actor's counters go on
        for task in self._by_core.pop(name.lower(), set()):
            task.cancel()
        driver.core.drain_events()  # not gathered: lost with the process (the file keeps its own)
        driver.core.queue.close()

    def restart_daemon(self, name: str) -> None:
        """Schedd ``name`` again, from its queue file (what a restarted actor does)."""
        driver = self._open(self.down.pop(name.lower()))
        driver.stats.update(self._kept.pop(name.lower(), Counter()))
        self._placed(driver)
        self.pump.act(self.host.restart(driver, self.ctx.clock.now()))

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
        for driver in self.host.drivers.values():
            self._placed(driver)
        self.pump.start(self.host.start(self.ctx.clock.now()))

    async def stop(self) -> None:
        await self.pump.stop()
        tasks = list(self._background)
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._background.clear()
        for driver in self.host.drivers.values():
            driver.core.queue.close()

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

    @property
    def stats(self) -> Counter[str]:
        """The actor's counters: its schedds' (a crashed one's kept) and the shell's."""
        total = Counter(self._counts)
        for counts in [*(d.stats for d in self.host.drivers.values()), *self._kept.values()]:
            total.update(counts)
        return total

    def status(self) -> dict[str, Any]:
        total = self.stats
        return {
            "schedds": {d.name: d.status() for d in self.host.drivers.values()},
            "stats": dict(total),
        }

    # --- acting on what a core said ------------------------------------------------------

    def _spawn(self, coro: Awaitable[Any], driver: ScheddDriver) -> None:
        """Run a schedd's follow-up work (a cycle's matches decoded in turns); its failure
        is logged, never lost silently and never fatal. It ends if the schedd crashes."""
        task = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._finished)
        self._owned(task, driver)

    def _owned(self, task: asyncio.Future[Any], driver: ScheddDriver) -> None:
        """``task`` is ``driver``'s: cancelled if that schedd crashes."""
        mine = self._by_core.setdefault(driver.name.lower(), set())
        mine.add(task)
        task.add_done_callback(mine.discard)

    def _finished(self, task: asyncio.Task[Any]) -> None:
        self._background.discard(task)
        if not task.cancelled() and task.exception() is not None:
            self._counts["background_failures"] += 1
            log.error("schedd background work failed", exc_info=task.exception())

    def _act(self, driver: ScheddDriver, ready: Ready) -> None:
        """What ``driver`` said after a call of the caller's, acted on by the pump."""
        self.pump.act(self.host.wrap(driver, ready))

    def _outputs(self, ready: Ready) -> None:
        """After the pump acted: log lines, job event logs, bad records and failed ticks
        written where they go."""
        for daemon, kind, fields in ready.events:
            if kind == "bad_record":
                log.warning(
                    "%s: job %s left out of the %s: %s",
                    daemon,
                    fields["job"],
                    fields["where"],
                    fields["problem"],
                )
        for name, exc in self.host.failures:
            log.error("%s: timers failed", name, exc_info=exc)
        self.host.failures.clear()
        for out in self.host.take_outputs():
            for level, text in out.notes:
                log.log(level, "%s", text)
            self._write_user_logs(out)

    def _write_user_logs(self, out: Outputs) -> None:
        """Append a schedd's user log events to their files, one write per file; a log
        that cannot be written is reported (once per file) and the schedd goes on."""
        name = out.driver.name
        for path, error in append_user_logs(out.user_logs).items():
            self._counts["user_log_failures"] += 1
            if (name, path) in self._user_log_refused:
                continue
            self._user_log_refused.add((name, path))
            job = out.log_jobs[path]
            log.warning("%s: cannot write the user log %s (job %s): %s", name, path, job, error)
            self.ctx.events.emit(name, "user_log_failed", job=job, path=path, error=error)

    # --- the pump's senders: one schedd's message, the actor's Advertise ---------------

    async def _from_schedd(self, send: Send) -> ToSchedd | None:
        """One schedd's request: its RPC (as that schedd), the answer for it; nothing
        from a schedd that crashed since it asked."""
        env: FromSchedd = send.msg
        driver = env.schedd
        if not self.host.running(driver):
            return None
        # the schedd's own work: a crash stops it where it is (a claim request built in
        # turns is never sent by a schedd that died meanwhile)
        work = asyncio.ensure_future(CALLS[type(env.msg)](self, driver, send.address, env.msg))
        self._owned(work, driver)
        try:
            await asyncio.wait({work})
        except asyncio.CancelledError:
            work.cancel()
            raise
        if work.cancelled():
            return None
        answer = work.result()
        items = _ITEMS.get(type(env.msg))
        if answer is not None and items:
            # a big batch's answers took turns with the rest of the loop (its timers,
            # the other batches): they still do, then go to the core as one
            async for _ in turns.in_turns(getattr(env.msg, items), turns.ADS_PER_TURN):
                pass
        return None if answer is None else ToSchedd(driver, answer)

    async def _advertise(self, send: Send) -> JointAnswer:
        return await advertise(self, send.address, send.msg)

    def _failure(self, msg: Any, exc: BaseException) -> Any:
        failed = undeliverable(msg, exc)
        return self.host.failed(msg, failed.code, failed.detail)

    async def _driver(self, name: str, context: grpc.aio.ServicerContext) -> ScheddDriver:
        if not name:
            if len(self.drivers) == 1:
                return next(iter(self.drivers.values()))
            names = ", ".join(d.name for d in self.drivers.values())
            await abort_invalid(context, f"schedd_name is required: this server hosts {names}")
        driver = self.drivers.get(name.lower())
        if driver is None and name.lower() in self.down:
            await context.abort(grpc.StatusCode.UNAVAILABLE, f"schedd {name} is not running")
        if driver is None:
            names = ", ".join(d.name for d in self.drivers.values())
            await context.abort(
                grpc.StatusCode.NOT_FOUND, f"no schedd named {name!r} here (hosts {names})"
            )
        assert driver is not None
        return driver

    async def _core(self, name: str, context: grpc.aio.ServicerContext) -> Schedd:
        return (await self._driver(name, context)).core

    # --- users --------------------------------------------------------------------------

    async def Submit(
        self, request: spb.SubmitRequest, context: grpc.aio.ServicerContext
    ) -> spb.SubmitReply:
        driver = await self._driver(request.schedd_name, context)
        # thousands of jobs in one transaction: submits to this actor's schedds that
        # arrive together run a loop round apart, not all before its timers
        await turns.own_turn()
        now = self.ctx.clock.now()
        source = request.source or "<submit>"
        try:
            (cluster, n), ready = driver.submit(
                now,
                caller(),
                request.description,
                source,
                request.owner,
                request_id=request.request_id or None,
                item_files=dict(request.item_files),
                env=dict(request.env),
                iwd=request.iwd,
            )
        except PermissionError as exc:
            await context.abort(grpc.StatusCode.PERMISSION_DENIED, str(exc))
        except SubmitError as exc:
            await abort_invalid(context, str(exc))
        except QueueError as exc:
            log.error("%s: submit not stored: %s", driver.name, exc)
            await context.abort(grpc.StatusCode.INTERNAL, f"job not queued: {exc}")
        except (ValueError, ArithmeticError) as exc:
            # a value the description's checks let through: still the user's input, refused
            # as such and naming it (the traceback is logged, for the check that missed it)
            log.warning("%s: submit refused: %r", driver.name, exc, exc_info=True)
            await abort_invalid(context, f"{source}: {type(exc).__name__}: {exc}")
        # with the jobs, the core asked for a reschedule after its ads
        self._act(driver, ready)
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
        self._quiet(core, now)
        return reply

    def _job_handover(self, core: Schedd, ads: list[ClassAd], now: float) -> rpc.Handover:
        """``_job_reply`` for a caller of this process that asks for objects (a virtual
        pool's client): the ads themselves, not a message."""
        self._quiet(core, now)
        return rpc.Handover((ads, core.schedd_ad(now)))

    def _quiet(self, core: Schedd, now: float) -> None:
        """After a read: what the core said meanwhile (records left out), no change."""
        driver = self.drivers.get(core.name.lower())
        if driver is not None and driver.core is core:
            self._act(driver, driver.after_call(now, changed=False))

    def _unsendable(self, core: Schedd, ad: ClassAd, exc: WireError) -> None:
        job_id = f"{ad.get_value('ClusterId', '?')}.{ad.get_value('ProcId', '?')}"
        log.warning("%s: job %s left out of a reply: %s", core.name, job_id, exc)
        self.ctx.events.emit(core.name, "bad_record", job=job_id, where="reply", problem=str(exc))

    async def Act(self, request: spb.ActRequest, context: grpc.aio.ServicerContext) -> spb.ActReply:
        driver = await self._driver(request.schedd_name, context)
        try:
            results, ready = driver.act(
                self.ctx.clock.now(),
                caller(),
                request.action,
                list(request.job_ids),
                request.constraint,
                request.reason,
                request.owner,
                others_denied=request.others_denied,
                hold_subcode=request.hold_subcode,
            )
        except CostlyConstraint as exc:
            await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, str(exc))
        except ScheddError as exc:
            await abort_invalid(context, str(exc))
        self._act(driver, ready)
        reply = spb.ActReply()
        for r in results:
            reply.results.add(job_id=r.job_id, ok=r.ok, error=r.error, result=r.code)
        return reply

    # --- the negotiator -----------------------------------------------------------------

    async def GetResourceRequests(
        self, request: spb.ResourceRequestsRequest, context: grpc.aio.ServicerContext
    ) -> spb.ResourceRequestsReply:
        driver = await self._driver(request.schedd_name, context)
        ask = ScheddResourceRequestsRequest(rpc.request_id(), driver.name, request.submitter)
        answer = await self._deliver(ask, context)
        reply = spb.ResourceRequestsReply()
        ads_to_pb(answer.ads, reply.requests, functools.partial(self._unsendable, driver.core))
        return reply

    async def Matches(
        self, raw: bytes | spb.MatchesRequest, context: grpc.aio.ServicerContext
    ) -> spb.MatchesReply:
        """A negotiator's matches, as bytes: the few fields beside them parsed at once,
        each match decoded in its turn, then delivered to the core."""
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
        driver = await self._driver(request.schedd_name, context)
        return await self._recent.once(
            request.request_id, lambda: self._apply_matches(driver, request, matches, context)
        )

    async def _apply_matches(
        self,
        driver: ScheddDriver,
        request: spb.MatchesRequest,
        matches: list[bytes],
        context: grpc.aio.ServicerContext,
    ) -> spb.MatchesReply:
        """The reply to a Matches request: sent once the request is taken in, before the
        matches are decoded and used on their own task. The core answers a match message
        with the count it received before it uses any (``ScheddDriver``: the ack first in
        its Ready); that count is known here on the wire, so the live negotiator's cycle
        waits neither for 10,000 slot ads to be decoded nor for the claim bookkeeping.
        The rejections are delivered at once (their events go out with the matches')."""
        corr = request.request_id or rpc.request_id()
        peer = Peer("", caller())
        held = Ready()
        if request.rejections:
            rejections = [
                RejectionNotice(int(r.cluster_id), int(r.proc_id), r.reason, r.time)
                for r in request.rejections
            ]
            msg = ScheddMatches(corr, driver.name, int(request.cycle), [], rejections)
            held = driver.deliver(msg, peer, self.ctx.clock.now())
            _reply_of(held, corr)  # answered below
        self._spawn(
            self._use_matches(driver, corr, int(request.cycle), matches, held, peer), driver
        )
        return spb.MatchesReply(received=len(matches))

    async def _use_matches(
        self,
        driver: ScheddDriver,
        corr: str,
        cycle: int,
        matches: list[bytes],
        held: Ready,
        peer: Peer,
    ) -> None:
        """The matches decoded and delivered in turns; the claim requests of all the
        turns go as one request per startd."""
        notices: list[MatchNotice] = []
        async for part in turns.in_turns(matches, turns.ADS_PER_TURN):
            notices += [n for m in part if (n := self._match_notice(driver, m)) is not None]
        matches.clear()  # the request's messages (10,000 slot ads) need not outlive the claims
        ready = held
        parts: Any = turns.in_turns(notices, turns.ADS_PER_TURN) if notices else _no_matches()
        async for part in parts:
            if not self.host.running(driver):
                return
            msg = ScheddMatches(corr, driver.name, cycle, list(part))
            got = driver.deliver(msg, peer, self.ctx.clock.now())
            _reply_of(got, corr)  # answered at once (see _apply_matches)
            ready.extend(got)
        ready.sends = driver.merge_sends(ready.sends)
        self._act(driver, ready)

    def _match_notice(self, driver: ScheddDriver, raw: bytes) -> MatchNotice | None:
        """The match (its bytes) as the core takes it; None (the match dropped, and why
        logged) when it or its slot ad does not decode."""
        try:
            found, rest = split_fields(raw, _SLOT_ENTRY)
            m = spb.Match.FromString(rest)
        except Exception as exc:  # WireError, DecodeError
            self._counts["matches_dropped"] += 1
            log.warning("%s: match dropped: not a valid message: %s", driver.name, exc)
            return None
        try:
            # (a slot field sent twice merges, as protobuf's parser would merge them)
            slot = ad_from_bytes(b"".join(found[_SLOT_FIELD])) if found[_SLOT_FIELD] else None
        except WireError as exc:
            self._counts["matches_dropped"] += 1
            log.warning("%s: match for %s dropped: bad slot ad: %s", driver.name, m.slot_name, exc)
            return None
        return MatchNotice(
            m.submitter, int(m.autocluster_id), m.slot_name, m.claim_id, m.startd_address, slot
        )

    # --- startds ------------------------------------------------------------------------

    async def JobsExited(
        self, request: spb.JobsExitedRequest, context: grpc.aio.ServicerContext
    ) -> spb.JobsExitedReply:
        refused = exits_refusal(caller())
        if refused:
            await context.abort(grpc.StatusCode.PERMISSION_DENIED, refused)
        gone = {e.schedd_name.lower() for e in request.exits} & self.down.keys()
        if gone:  # a startd sends each schedd its own: again once it is back
            await context.abort(
                grpc.StatusCode.UNAVAILABLE, f"schedd {self.down[min(gone)]} is not running"
            )
        return await self._recent.once(
            request.request_id, lambda: self._apply_exits(request, context)
        )

    async def _apply_exits(
        self, request: spb.JobsExitedRequest, context: grpc.aio.ServicerContext
    ) -> spb.JobsExitedReply:
        by_core: dict[str, list[JobExitRecord]] = {}
        for e in request.exits:
            key = e.schedd_name.lower() if e.schedd_name else ""
            if not key and len(self.drivers) == 1:
                key = next(iter(self.drivers))
            if key not in self.drivers:
                log.warning(
                    "JobsExited for unknown schedd %r (job %d.%d)",
                    e.schedd_name,
                    e.cluster_id,
                    e.proc_id,
                )
                continue
            by_core.setdefault(key, []).append(
                JobExitRecord(
                    e.claim_id,
                    int(e.cluster_id),
                    int(e.proc_id),
                    e.start_time,
                    e.end_time,
                    int(e.exit_code),
                    e.slot_name,
                    e.schedd_name,
                    "",
                    e.reason,
                    e.claim_closing,
                )
            )
        accepted = 0
        for key, exits in by_core.items():
            driver = self.drivers[key]
            async for part in turns.in_turns(exits, turns.ADS_PER_TURN):
                if not self.host.running(driver):
                    break  # crashed meanwhile: the startd's report is answered, as lost
                msg = ScheddJobsExited(rpc.request_id(), driver.name, list(part))
                await self._deliver(msg, context)
            accepted += len(exits)
        return spb.JobsExitedReply(accepted=accepted)

    # --- requests of the cores: one function per message type ---------------------------

    async def _deliver(self, msg: Any, context: grpc.aio.ServicerContext) -> Any:
        """Deliver a request from a caller to the schedd it names; its reply (a refusal
        aborts the call)."""
        reply = self.pump.request(msg, caller(), self.ctx.clock.now())
        if isinstance(reply, Undeliverable):
            await context.abort(grpc.StatusCode[reply.code], reply.detail)
        return reply
