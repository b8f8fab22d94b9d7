"""The Ray actor that hosts daemons: one process, one event loop, one gRPC server.

A host runs one *role*: ``central`` (collector + negotiator, HTCondor's central manager;
the collector alone when the negotiator has a host of its own), ``negotiator``,
``startd`` (many machines) or ``schedd`` (one or more schedds). Starting is two-phase so
that pool time 0 is the moment every daemon is reachable:

1. ``serve()`` builds the services and starts the gRPC server; returns its address.
2. ``run(epoch_wall, collector_address)`` makes the pool clock and starts the loops.

Everything here is shell: the services own the behaviour. The launcher drains events and
NegotiatorLog lines from hosts, so a run on a multi-node cluster needs no shared disk.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import gc
import logging
import math
import os
import resource
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc.aio

from .. import gctune, rpc
from ..auth import Role, TokenAuthInterceptor
from ..clock import Clock, ScaledClock
from ..config import ConfigDict
from ..daemon import DaemonContext, EventLog, Service
from ..dutycycle import DutyCycle, install, window_of
from ..inprocess import SameProcessFirst
from ..ownerfiles import private_dir
from .hostfaults import FaultInterceptor, HostFaults, PeerRule

log = logging.getLogger(__name__)

ROLES = ("central", "negotiator", "startd", "schedd")
ROUTABLE = "routable"  # [pool] host: listen on the node's own address (a Ray cluster)


# How often a live actor's loop is probed for lag, in pool seconds: its daemons' own
# timers can go unused for long stretches (a busy startd advertises on each change, not
# on its timer), and a loop that never sleeps on the clock would report no lag at all.
LAG_PROBE_INTERVAL = 1.0


class _PendingClock:
    """Stands in for the pool clock between serve() and run(): time stands still at 0.
    Services keep ``ctx.clock``; ``run()`` swaps the ScaledClock in behind it."""

    def __init__(self, faults: HostFaults) -> None:
        self.inner: Clock | None = None
        self._faults = faults  # a skewed clock reads ahead; a paused host's timers wait

    def now(self) -> float:
        return self.inner.now() + self._faults.skew if self.inner else 0.0

    async def sleep_until(self, t: float) -> None:
        if self.inner is None:
            raise RuntimeError("the pool clock has not started")
        skew = self._faults.skew
        inner = t - skew
        while inner + skew < t:  # (t - skew) + skew can fall an ulp short of t
            inner = math.nextafter(inner, math.inf)
        await self.inner.sleep_until(inner)
        await self._faults.resumed()

    async def sleep(self, dt: float) -> None:
        await self.sleep_until(self.now() + max(0.0, dt))

    def lag_stats(self) -> Any:
        return self.inner.lag_stats() if self.inner else None

    @property
    def unskewed(self) -> _PoolTime:
        """This clock without the host's skew: pool time itself."""
        return _PoolTime(self)


class _PoolTime:
    """``now()`` of a host's clock less its skew (what its events are dated by)."""

    def __init__(self, clock: _PendingClock) -> None:
        self._clock = clock

    def now(self) -> float:
        inner = self._clock.inner
        return inner.now() if inner else 0.0


class _CallCounter(grpc.aio.ServerInterceptor):
    """Counts the RPCs this actor's server receives, by method (for load reports)."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    async def intercept_service(self, continuation, handler_call_details):  # type: ignore[no-untyped-def]
        self.counts[handler_call_details.method.rsplit("/", 1)[-1]] += 1
        return await continuation(handler_call_details)


class DaemonHost:
    """Hosts the services of one role. Wrapped with ``ray.remote`` by the launcher."""

    def __init__(
        self,
        role: str,
        *,
        secret: str,
        config: ConfigDict,
        state_dir: str,
        host: str = "127.0.0.1",
        seed: int = 0,
        machines: list[tuple[str, ConfigDict]] | None = None,
        schedds: list[str] | None = None,
        log_base_wall: float = 0.0,
        priorities: dict[str, dict[str, float]] | None = None,
        identity: str = "",
        transport: rpc.Transport | None = None,
        with_negotiator: bool = True,
        cedar: bool = False,
        pool_user: str = "",
    ) -> None:
        if role not in ROLES:
            raise ValueError(f"unknown host role {role!r} (expected one of {ROLES})")
        # Nothing asyncio or gRPC here: __init__ does not run on the actor's event loop.
        self.role = role
        self._secret = secret
        self._config = config
        self._state_dir = Path(state_dir)
        self._host = host
        self._seed = seed
        self._machines = machines or []
        self._schedds = schedds or []
        self._log_base_wall = log_base_wall
        self._priorities = priorities or {}
        self._identity = identity  # the name in this actor's daemon tokens
        self._with_negotiator = with_negotiator  # a central host's negotiator is its own
        # ``transport`` given: a host in a test's own process, which must leave that
        # process's collector and listeners alone
        self._transport = transport or SameProcessFirst()
        self._own_process = transport is None  # a Ray actor: the process is this host's
        if self._own_process:
            gctune.paced()
        # CEDAR listeners for HTCondor's own clients: a live actor's only; the pool's
        # owner (``pool_user``) is its administrator when FS authenticates them
        self._cedar_on = cedar and self._own_process
        self._pool_user = pool_user
        self._cedar: dict[str, Any] = {}
        self.faults = HostFaults(seed)
        self._clock = _PendingClock(self.faults)
        self._services: list[Service] = []
        self._server: Any = None
        self._ctx: DaemonContext | None = None
        self._started = False
        self._calls = _CallCounter()
        self._probe: asyncio.Task[None] | None = None
        self._gc_keeper: asyncio.Task[None] | None = None
        self._unmeter: Callable[[], None] | None = None  # undoes the duty cycle's meter

    async def serve(
        self,
        collector_address: str = "",
        port: int = 0,
        clock: tuple[float, float] | None = None,
        cedar_port: int = 0,
    ) -> str:
        """Build the services and start the server (on ``port``: a restarted central
        manager comes back where every daemon looks for its collector; its CEDAR listener
        on ``cedar_port``). ``clock``: (time scale, epoch) of a pool already running, for a
        host restarted in it: its daemons are built at the pool's time, not at 0."""
        private_dir(self._state_dir)  # queues hold claim ids: owner-only
        if clock is not None and self._clock.inner is None:
            self._clock.inner = ScaledClock(*clock)
        if self._host == ROUTABLE:  # on a Ray cluster: this node's address
            import ray

            self._host = ray.util.get_node_ip_address()
        ctx = DaemonContext(
            clock=self._clock,  # type: ignore[arg-type]
            config=self._config,
            secret=self._secret,
            collector_address=collector_address,
            # events are dated in pool time: a skewed daemon's clock misleads its rules,
            # not the record of what happened when
            events=EventLog(self._clock.unskewed),  # type: ignore[arg-type]
            state_dir=self._state_dir,
            seed=self._seed,
            host=self._host,
            identity=self._identity,
            transport=self._transport,
            ad_epoch=int(self._log_base_wall),
        )
        self._ctx = ctx
        self._services = self._build(ctx)
        roles: dict[str, frozenset[Role]] = {}
        for s in self._services:
            roles.update(s.METHOD_ROLES)
        self._server, ctx.address = await self._transport.start_server(
            [s.add_to_server for s in self._services],
            self._host,
            port,
            interceptors=[
                self._calls,
                FaultInterceptor(self.faults, self._clock.sleep),
                TokenAuthInterceptor(self._secret, method_roles=roles),
            ],
        )
        if self.role == "central":
            ctx.collector_address = ctx.address
        if self._cedar_on and self.role != "startd":
            from .cedar_listeners import start_listeners

            self._cedar = await start_listeners(
                self.role,
                self._services,
                self._config,
                self._secret,
                self._pool_user,
                host=self._host,
                port=cedar_port,
                gate=self.faults.resumed,
            )
            ctx.cedar = {key: server.address for key, server in self._cedar.items()}
        return ctx.address

    def cedar_addresses(self) -> dict[str, str]:
        """Where HTCondor's clients reach this actor's daemons: ``{"": host:port}`` (the
        central manager, a negotiator) or a schedd's by its lower-case name."""
        return {key: server.address for key, server in self._cedar.items()}

    def _build(self, ctx: DaemonContext) -> list[Service]:
        if self.role in ("central", "negotiator"):
            from ..collector.service import CollectorService
            from ..negotiator.service import NegotiatorService

            services: list[Service] = []
            if self.role == "central":
                services.append(CollectorService(ctx))
            if self.role == "negotiator" or self._with_negotiator:
                services.append(
                    NegotiatorService(
                        ctx, log_base_wall=self._log_base_wall, priorities=self._priorities
                    )
                )
            return services
        if self.role == "startd":
            from ..startd.service import StartdService

            return [StartdService(ctx, self._machines)]
        from ..schedd.service import ScheddService

        return [ScheddService(ctx, self._schedds)]

    async def run(
        self, time_scale: float, epoch_wall: float, only: list[int] | None = None
    ) -> None:
        """Start the pool clock and the loops (of services ``only``, by index, if given)."""
        if self._clock.inner is None:
            self._clock.inner = ScaledClock(time_scale, epoch_wall)
        for i, s in enumerate(self._services):
            if only is None or i in only:
                await s.start()
        self._started = True
        if self._probe is None:
            self._probe = asyncio.get_running_loop().create_task(self._probe_lag())
        if self._ctx is not None and self._unmeter is None:
            # the daemons' RecentDaemonCoreDutyCycle: how busy this actor's loop is
            meter = DutyCycle(window_of(self._config, time_scale))
            self._unmeter = install(asyncio.get_running_loop(), meter)
            if self._unmeter is not None:
                self._ctx.duty_cycle = meter.recent
        if self._own_process and self._gc_keeper is None:
            gc.freeze()  # what start-up built lives as long as the actor: never scan it
            self._gc_keeper = asyncio.get_running_loop().create_task(self._keep_gc())

    def reset_lag(self) -> None:
        """Start this actor's lag figures afresh (a bench's span of its own)."""
        if self._clock.inner is not None:
            self._clock.inner.reset_lag_stats()  # type: ignore[attr-defined]

    async def _probe_lag(self) -> None:
        """Sleep on the pool clock, again and again: each wakeup's lateness is in the
        clock's lag figures (the live clock records every sleep's)."""
        while True:
            await self._clock.sleep(LAG_PROBE_INTERVAL)

    @staticmethod
    async def _keep_gc() -> None:
        """Freeze what the process kept, again and again (real time: the collector's
        pace is the process's, not the pool's)."""
        keeper = gctune.Keeper()
        while True:
            await asyncio.sleep(gctune.FREEZE_EVERY)
            keeper.tick()

    async def _stop_timers(self) -> None:
        if self._unmeter is not None:
            self._unmeter()
            self._unmeter = None
        for task in (self._probe, self._gc_keeper):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        self._probe = self._gc_keeper = None

    async def stop(self) -> dict[str, Any]:
        """Stop loops and the server; returns the final status."""
        final = await self.status()
        await self._stop_timers()
        for server in self._cedar.values():
            await server.stop()
        self._cedar = {}
        for s in reversed(self._services):
            try:
                await s.stop()
            except Exception:
                log.exception("stopping %s", type(s).__name__)
        if self._server is not None:
            await self._transport.stop_server(self._server, 0.5)
            self._server = None
        if self._ctx is not None:
            await self._ctx.close_channels()
        return final

    def _daemon_names(self) -> list[str]:
        """The names its daemons sign their events with."""
        if self.role == "startd":
            return [name for name, _ in self._machines]
        if self.role == "schedd":
            return list(self._schedds)
        return ["collector", "negotiator"] if self.role == "central" else ["negotiator"]

    async def status(self) -> dict[str, Any]:
        lag = self._clock.lag_stats()
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return {
            "role": self.role,
            "identity": self._identity,
            "daemons": self._daemon_names(),  # what the metrics label its figures with
            "pid": os.getpid(),
            "node": _ray_node_id(),
            "address": self._ctx.address if self._ctx else "",
            # ru_maxrss is KiB on Linux: the peak resident memory of this actor process.
            "peak_rss_mb": usage.ru_maxrss / 1024,
            "cpu_s": usage.ru_utime + usage.ru_stime,  # the actor process's CPU time
            # How late this actor's loops woke, in pool seconds: a pool that cannot keep
            # up with its time scale shows it here instead of drifting silently.
            "lag": None
            if lag is None
            else {"wakeups": lag.count, "mean": lag.mean, "max": lag.max},
            "rpcs_received": dict(self._calls.counts),
            "services": {type(s).__name__: s.status() for s in self._services},
            # each CEDAR listener's counts: connections, commands, refusals, ...
            "cedar": {
                key or self.role: dataclasses.asdict(server.counts)
                for key, server in self._cedar.items()
            },
        }

    async def jobs_in_queue(self) -> int:
        """Jobs in the queues of this host's schedds (0 for other roles)."""
        total = 0
        for s in self._services:
            for core in s.status().get("schedds", {}).values():
                total += int(core.get("jobs", 0))
        return total

    async def drain_events(self, limit: int | None = None) -> list[dict[str, Any]]:
        """The oldest ``limit`` events (all with None), handed over."""
        return self._ctx.events.drain(limit) if self._ctx else []

    def _hosting(self, name: str) -> Any:
        """The service that hosts daemon ``name`` and can crash it alone."""
        for s in self._services:
            if hasattr(s, "crash_daemon") and any(
                name.lower() == d.lower() for d in self._daemon_names()
            ):
                return s
        raise ValueError(f"{self.role} host: cannot crash {name!r} alone")

    async def crash_daemon(self, name: str) -> None:
        """Daemon ``name`` of this host dies alone (its memory and work in flight); the
        others and the server run on."""
        self._hosting(name).crash_daemon(name)

    async def restart_daemon(self, name: str, seen: dict[str, int]) -> list[dict[str, Any]]:
        """Daemon ``name`` again, from its durable state; the events its crash kept in
        that state and no one gathered (``seen``: what was, by daemon)."""
        service = self._hosting(name)
        service.restart_daemon(name)
        stored = getattr(service, "stored_events", None)
        if stored is None:
            return []
        return [e for e in stored(seen) if str(e["daemon"]).lower() == name.lower()]

    async def stored_events(self, seen: dict[str, int]) -> list[dict[str, Any]]:
        """Events its schedds committed before a crash and no one gathered (see
        ``ScheddService.stored_events``); [] for other roles."""
        out: list[dict[str, Any]] = []
        for s in self._services:
            stored = getattr(s, "stored_events", None)
            if stored is not None:
                out += stored(seen)
        return out

    async def event_marks(self) -> dict[str, int]:
        """Its schedds' last events committed before they started, by name."""
        out: dict[str, int] = {}
        for s in self._services:
            marks = getattr(s, "event_marks", None)
            if marks is not None:
                out.update(marks())
        return out

    async def drain_log(self, limit: int | None = None) -> list[str]:
        """NegotiatorLog lines (at most ``limit``), handed over."""
        lines: list[str] = []
        for s in self._services:
            drain = getattr(s, "drain_log", None)
            if drain is not None:
                lines.extend(drain(None if limit is None else limit - len(lines)))
        return lines

    async def serving(self) -> bool:
        """Whether this host's daemons run (False in an actor Ray has just restarted)."""
        return self._started

    async def pause(self, on: bool) -> None:
        self.faults.pause(on)

    async def set_skew(self, seconds: float) -> None:
        self.faults.skew = float(seconds)

    async def set_rule(self, name: str, rule: PeerRule | None) -> None:
        if rule is None:
            self.faults.rules.pop(name, None)
        else:
            self.faults.rules[name] = rule


def _ray_node_id() -> str:
    """The Ray node this host runs on ("" outside Ray: a host in a test's process, which
    need not pay Ray's import, half a second, to learn that)."""
    ray = sys.modules.get("ray")
    if ray is None or not ray.is_initialized():
        return ""
    return str(ray.get_runtime_context().get_node_id())
