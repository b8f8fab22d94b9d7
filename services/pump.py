"""The generic pump: one core's live loop and sends, written once for the shells.

A shell decodes a request into its message record (its servicer), and hands the rest to
its :class:`Pump`: deliver it, take the reply out of the ``Ready`` and act on the rest;
act on what a tick or a delivery returns (the events to the actor's log, each message
sent by the sender of its type, whose answer, or an ``Undeliverable`` for a call that
failed, is delivered back to the core); sleep until the core's next wake-up, or sooner
when something it was handed moved it (:class:`~.daemon.Alarm`). No HTCondor rule and no
knob lives here or in a shell: a core owns every decision and every timer.

What a shell still adds is its codec: a sender per message type its core sends (the RPC,
the message encoded, the reply decoded into the answer record) and how a failed call
reads to its core; and hooks for how its actor shares the loop (a startd's round of
10,000 slot ads takes turns with the other daemons of its process) and for work its core
hands out to run off the loop (a negotiation cycle's computation).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from typing import Any

import grpc.aio

from .contract import Core, Peer, Ready, Send, Undeliverable
from .daemon import Alarm, DaemonContext
from .messages import REPLIES
from .principals import Principal, Role

log = logging.getLogger(__name__)

__all__ = ["ANSWERER", "Pump", "Sender", "undeliverable"]

# A sender: one message of the core's out on the wire; the answer to deliver back to the
# core (a reply record, an Undeliverable), or None when nothing goes back.
Sender = Callable[[Send], Awaitable[Any]]

# who the answers to a core's own calls come from (the core reads only the message)
ANSWERER = Principal(Role.DAEMON)

# Work a core hands out (None: none now), and what it does with the work's result (the
# result, or the exception it raised) at a pool time.
Offload = tuple[Callable[[], Callable[[], Any] | None], Callable[[Any, float], Ready]]

_REPLY_TYPES = frozenset((*REPLIES, Undeliverable))


def undeliverable(msg: Any, exc: BaseException) -> Undeliverable:
    """The failure of a call that carried ``msg``: its gRPC status, or UNAVAILABLE."""
    if isinstance(exc, grpc.aio.AioRpcError):
        return Undeliverable(msg, exc.code().name, exc.details() or "")
    return Undeliverable(msg, "UNAVAILABLE", str(exc))


class Pump:
    """One core's loop, sends and deliveries in a live actor."""

    def __init__(
        self,
        core: Core,
        ctx: DaemonContext,
        senders: Mapping[type, Sender],
        *,
        name: str,
        retry_after: float,
        before_tick: Callable[[float], Awaitable[None]] | None = None,
        after_tick: Callable[[float], Awaitable[None]] | None = None,
        after_act: Callable[[Ready], None] | None = None,
        failure: Callable[[Any, BaseException], Any] | None = None,
        offload: Offload | None = None,
        on_error: Callable[[], None] | None = None,
    ) -> None:
        self.core = core
        self.ctx = ctx
        self._senders = senders
        self._name = name
        self._retry_after = retry_after  # pool seconds after a tick that raised
        self._before_tick = before_tick
        self._after_tick = after_tick
        self._after_act = after_act
        self._failure = failure or undeliverable
        self._offload = offload
        self._on_error = on_error  # after a tick or an answer's delivery raised
        self._alarm = Alarm(ctx.clock)
        self._loop_task: asyncio.Task[None] | None = None
        self._sending: set[asyncio.Task[None]] = set()

    # --- running ----------------------------------------------------------------------

    def start(self, ready: Ready) -> None:
        """Act on what the core's start returned, and run the loop."""
        self._alarm = Alarm(self.ctx.clock)
        self.act(ready)
        loop = asyncio.get_running_loop()
        self._loop_task = loop.create_task(self._loop(), name=self._name)

    async def stop(self) -> None:
        tasks = [*([self._loop_task] if self._loop_task else []), *self._sending]
        self._loop_task, self._sending = None, set()
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _loop(self) -> None:
        """Sleep until the core's next wake-up (or an earlier one a delivery set), tick."""
        clock = self.ctx.clock
        while True:
            try:
                now = await self._alarm.due(self.core.next_wakeup)
                if self._before_tick is not None:
                    await self._before_tick(now)
                now = clock.now()
                self.act(self.core.tick(now))
                if self._after_tick is not None:
                    await self._after_tick(now)
            except asyncio.CancelledError:
                raise
            except Exception:  # a bug: logged, and the core is ticked again later
                log.exception("%s: tick failed", self._name)
                if self._on_error is not None:
                    self._on_error()
                await clock.sleep_until(clock.now() + self._retry_after)

    # --- acting on a Ready ------------------------------------------------------------

    def act(self, ready: Ready) -> None:
        """A ``Ready``'s events to the actor's log, its messages sent; the loop woken if
        the core now wants to run earlier than it sleeps."""
        emit = self.ctx.events.emit
        for daemon, kind, fields in ready.events:
            emit(daemon, kind, **fields)
        if self._after_act is not None:
            self._after_act(ready)
        for send in ready.sends:
            self._spawn(self._send(send))
        if self._offload is not None and (job := self._offload[0]()) is not None:
            self._spawn(self._run(job))
        self._alarm.ring_if_earlier(self.core.next_wakeup())

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)

    async def _run(self, job: Callable[[], Any]) -> None:
        """Work the core handed out, in a worker thread; its result back to the core."""
        assert self._offload is not None
        try:
            result: Any = await self.ctx.offload(job)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the core says what a failed computation means
            result = exc
        self._guarded(lambda: self.act(self._offload[1](result, self.ctx.clock.now())))

    async def _send(self, send: Send) -> None:
        try:
            answer = await self._senders[type(send.msg)](send)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a failing peer never stops the core
            answer = self._failure(send.msg, exc)
        if answer is not None:
            self._guarded(lambda: self.back(answer, send.address))

    def _guarded(self, step: Callable[[], None]) -> None:
        """``step`` (a delivery to the core and what follows it); a bug in it is
        logged, never lost in a task nobody awaits."""
        try:
            step()
        except Exception:
            log.exception("%s: a delivery failed", self._name)
            if self._on_error is not None:
                self._on_error()

    def back(self, answer: Any, address: str) -> None:
        """An answer to what the core sent, delivered to it."""
        self.act(self.core.deliver(answer, Peer(address, ANSWERER), self.ctx.clock.now()))

    def request(self, msg: Any, who: Principal, now: float) -> Any:
        """Deliver a caller's request; its reply (the first reply or refusal in the
        ``Ready``), the rest acted on."""
        ready = self.core.deliver(msg, Peer("", who), now)
        reply = None
        rest = Ready(events=ready.events)
        for send in ready.sends:
            if reply is None and type(send.msg) in _REPLY_TYPES:
                reply = send.msg
            else:
                rest.sends.append(send)
        self.act(rest)
        return reply
