"""What every daemon's shell shares: its context, channels to peers, events, loops.

A daemon service (``collector/service.py``, ``startd/service.py``, ...) is built with a
:class:`DaemonContext` and follows :class:`Service`: the actor host adds it to its one gRPC
server, tells it the server's address, starts it, and stops it. Services never read the
wall clock (only ``ctx.clock``) and never let an exception out of a periodic loop: a bad
message or a failing peer is logged and counted, and the daemon keeps running.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

import grpc
import grpc.aio

from . import rpc
from .auth import Role
from .clock import Clock
from .config import ConfigDict

log = logging.getLogger(__name__)

__all__ = [
    "RPC_TIMEOUT",
    "Channels",
    "DaemonContext",
    "EventLog",
    "ReplyCache",
    "Service",
    "abort_invalid",
    "periodic",
    "within",
]

T = TypeVar("T")

# Real seconds a daemon-to-daemon call may take before it is abandoned.
RPC_TIMEOUT = 10.0


class EventLog:
    """Structured events of one actor, kept in memory until the launcher drains them.

    Each event is a dict: ``t`` (pool time), ``daemon`` (its name), ``kind`` and the ids
    that say what happened (job, slot, claim -- claim ids shortened, never in full).
    """

    def __init__(self, clock: Clock, limit: int = 1_000_000) -> None:
        self._clock = clock
        self._events: list[dict[str, Any]] = []
        self._limit = limit
        self.dropped = 0

    def emit(self, daemon: str, kind: str, **fields: Any) -> None:
        if len(self._events) >= self._limit:
            self.dropped += 1
            return
        self._events.append(
            {"t": round(self._clock.now(), 3), "daemon": daemon, "kind": kind, **fields}
        )

    def drain(self, limit: int | None = None) -> list[dict[str, Any]]:
        """The oldest ``limit`` events (all with None), handed over and forgotten here."""
        out = self._events[:limit]
        del self._events[:limit]
        return out


class ReplyCache:
    """The last ``size`` replies by request id, so a retried batch is answered with the
    first reply instead of being applied twice (see ``rpc.call``'s retries)."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._replies: OrderedDict[str, Any] = OrderedDict()
        self._applying: dict[str, asyncio.Future[Any]] = {}

    async def once(self, request_id: str, apply: Callable[[], Awaitable[T]]) -> T:
        """The reply to ``request_id``, computed by ``apply()`` once. A batch applied in
        turns lets a retry land before its first reply exists: the retry waits for that
        reply. The batch runs to its end on its own task even if its caller goes away
        (a cancelled RPC), so no batch is left half applied."""
        reply = self.get(request_id)
        if reply is not None:
            return reply
        task = self._applying.get(request_id) if request_id else None
        if task is None:
            task = asyncio.ensure_future(apply())
            if request_id:
                self._applying[request_id] = task
                task.add_done_callback(lambda t: self._settle(request_id, t))
        return await asyncio.shield(task)

    def _settle(self, request_id: str, task: asyncio.Future[Any]) -> None:
        del self._applying[request_id]
        # (reading the exception also marks it seen when every waiter went away)
        if not task.cancelled() and task.exception() is None:
            self.put(request_id, task.result())

    def get(self, request_id: str) -> Any:
        return self._replies.get(request_id) if request_id else None

    def put(self, request_id: str, reply: Any) -> None:
        if not request_id:
            return
        self._replies[request_id] = reply
        while len(self._replies) > self._size:
            self._replies.popitem(last=False)


class Channels:
    """One channel per peer address, made on (and only used from) this loop."""

    def __init__(self, token: str, transport: rpc.Transport = rpc.GRPC) -> None:
        self._token = token
        self._transport = transport
        self._channels: dict[str, grpc.aio.Channel] = {}

    def get(self, address: str) -> grpc.aio.Channel:
        ch = self._channels.get(address)
        if ch is None:
            ch = self._channels[address] = self._transport.channel(address, self._token)
        return ch

    async def close(self) -> None:
        channels, self._channels = self._channels, {}
        for ch in channels.values():
            await ch.close()


@dataclass
class DaemonContext:
    """Everything a service needs from its host; built by the actor host."""

    clock: Clock
    config: ConfigDict
    secret: str  # the pool secret: services mint their own tokens from it
    collector_address: str
    events: EventLog
    state_dir: Path  # where this actor keeps what must survive a restart
    seed: int = 0
    address: str = ""  # this actor's gRPC server, set before Service.start
    # its CEDAR listeners for HTCondor's own clients (host:port): "" the actor's, or a
    # schedd's own by its lower-case name; empty without any
    cedar: dict[str, str] = field(default_factory=dict)
    host: str = "127.0.0.1"
    identity: str = ""  # this actor's daemon identity (``startd/startd0_0``), in its tokens
    channels: dict[tuple[Role, str], Channels] = field(default_factory=dict)
    transport: rpc.Transport = rpc.GRPC
    # Unix time of pool time 0 (a whole second): ads carry dates as Unix times counted
    # from it, and time() in their expressions does too
    ad_epoch: int = 0
    # the actor's loop's RecentDaemonCoreDutyCycle (its host measures it; 0.0 unmeasured)
    duty_cycle: Callable[[], float] = field(default=lambda: 0.0)

    @property
    def my_address(self) -> str:
        """This actor's daemons' MyAddress: a sinful string naming both listeners."""
        return self.address_of("")

    def address_of(self, daemon: str) -> str:
        """Daemon ``daemon``'s MyAddress (its own CEDAR listener's, else the actor's)."""
        from .claimid import sinful

        if not self.address:
            return ""
        cedar = self.cedar.get(daemon.lower()) or self.cedar.get("", "")
        return sinful(self.address, cedar)

    async def offload(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """Run a long computation off the event loop (a worker thread)."""
        return await asyncio.to_thread(fn, *args, **kwargs)

    def channel(
        self, address: str, role: Role = Role.DAEMON, identity: str | None = None
    ) -> grpc.aio.Channel:
        """A channel to a peer that presents a token of ``role`` naming ``identity``
        (default: this actor's); a schedd actor speaks for each of its schedds apart."""
        from .auth import make_token

        key = (role, self.identity if identity is None else identity)
        if key not in self.channels:
            self.channels[key] = Channels(make_token(self.secret, *key), self.transport)
        return self.channels[key].get(address)

    async def locate(self, ad_type: str, constraint: str) -> str | None:
        """The address (``host:port``) in the MyAddress of the first ``ad_type`` ad the
        collector has for ``constraint``: daemons find each other by name, so one that
        came back on a new address is reached there. None if none (or no collector)."""
        from .claimid import from_sinful
        from .v1 import collector_pb2 as cpb
        from .v1 import collector_pb2_grpc as cgrpc
        from .wire import ad_from_pb

        if not self.collector_address:
            return None
        stub = cgrpc.CollectorStub(self.channel(self.collector_address, Role.DAEMON))
        request = cpb.QueryRequest(ad_type=ad_type, constraint=constraint, projection=["MyAddress"])
        reply = await rpc.call(stub.Query, request, timeout=RPC_TIMEOUT)
        for msg in reply.ads:
            value = ad_from_pb(msg).get_value("MyAddress")
            if isinstance(value, str) and value:
                return from_sinful(value)
        return None

    async def close_channels(self) -> None:
        for ch in self.channels.values():
            await ch.close()
        self.channels.clear()


class Service(Protocol):
    """The shell of one kind of daemon (possibly hosting many daemons of that kind)."""

    # Full method name -> roles allowed (methods not listed admit every valid token).
    METHOD_ROLES: Mapping[str, frozenset[Role]]

    def add_to_server(self, server: grpc.aio.Server) -> None: ...

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    def status(self) -> dict[str, Any]:
        """A JSON-able summary for the launcher (counts, stats)."""
        ...


async def periodic(
    clock: Clock,
    interval: float | Callable[[], float],
    body: Callable[[], Awaitable[object]],
    *,
    name: str,
    first_delay: float = 0.0,
) -> None:
    """Run ``body`` every ``interval`` pool seconds until cancelled.

    An exception in ``body`` is logged and the loop goes on: a daemon never dies of one
    bad round. ``interval`` may be a callable (re-read each round).
    """
    next_t = clock.now() + first_delay
    while True:
        await clock.sleep_until(next_t)
        try:
            await body()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("%s: periodic round failed", name)
        step = interval() if callable(interval) else interval
        next_t = max(next_t + step, clock.now())


async def sleep_until_or(clock: Clock, t: float, event: asyncio.Event) -> None:
    """Sleep until pool time ``t`` or until ``event`` is set, whichever comes first."""
    if event.is_set():
        return
    sleeper = asyncio.ensure_future(clock.sleep_until(t))
    waiter = asyncio.ensure_future(event.wait())
    try:
        await asyncio.wait({sleeper, waiter}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for f in (sleeper, waiter):
            f.cancel()
        await asyncio.gather(sleeper, waiter, return_exceptions=True)


class Alarm:
    """When a daemon's loop next runs its core: at the core's next wake-up, or sooner
    when something it was handed moved that wake-up (the one sleep-until-or-woken loop
    every shell shares)."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._rung = asyncio.Event()
        self.armed: float | None = None  # the wake-up the loop sleeps until

    def ring(self) -> None:
        """The loop asks its core for the wake-up again."""
        self._rung.set()

    def ring_if_earlier(self, wake: float | None) -> None:
        """``ring`` if ``wake`` comes before the wake-up armed."""
        if wake is not None and (self.armed is None or wake < self.armed):
            self._rung.set()

    async def due(self, next_wakeup: Callable[[], float | None]) -> float:
        """Sleep until ``next_wakeup()`` (asked again whenever the alarm rings); the pool
        time it is then."""
        clock = self._clock
        while True:
            self._rung.clear()
            self.armed = t = next_wakeup()
            if t is not None and t <= clock.now():
                return clock.now()
            if t is None:
                await self._rung.wait()
            else:
                await sleep_until_or(clock, t, self._rung)


async def within(aw: Awaitable[T], timeout: float) -> T:
    """``aw``'s result, or TimeoutError after ``timeout`` seconds (``aw`` is cancelled).
    Unlike ``asyncio.wait_for`` on Python 3.11, a cancellation of the caller that lands
    as ``aw`` finishes is never swallowed (a loop being stopped stops)."""
    fut = asyncio.ensure_future(aw)
    try:
        done, _ = await asyncio.wait({fut}, timeout=timeout)
    except asyncio.CancelledError:
        fut.cancel()
        raise
    if not done:
        fut.cancel()
        raise TimeoutError(f"no answer within {timeout:g} s")
    return fut.result()


async def abort_invalid(context: grpc.aio.ServicerContext, message: str) -> None:
    """Refuse a request with INVALID_ARGUMENT and a message naming the problem."""
    await context.abort(grpc.StatusCode.INVALID_ARGUMENT, message)
