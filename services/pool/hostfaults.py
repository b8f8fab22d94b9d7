"""Faults a daemon host takes in: a pause, a clock skew, and rules for the calls it
receives from given peers (partition, drop, delay).

They go in at the host and its transport, never inside a core:

- **pause** (a catatonic daemon): calls to the host hang unanswered (the caller's deadline
  ends them) and the host's own timers do not fire, until the pause ends;
- **skew**: the host's pool clock reads ``skew`` seconds ahead (negative: behind);
- **partition** and **drop**: calls from the peer are refused as a broken connection is
  (UNAVAILABLE), every one or a seeded fraction of them;
- **delay**: calls from the peer (every one or a fraction) wait ``delay`` pool seconds.

A rule names the peer by the identities in its tokens (``schedd/schedd1``,
``startd/startd0_0``, ``negotiator``): a partition between two hosts is a rule on each.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import grpc
import grpc.aio

from ..auth import AUTH_METADATA_KEY, token_identity
from .peerrules import PeerRule, PeerRules

__all__ = ["FaultInterceptor", "HostFaults", "PeerRule"]


def _identity(metadata: Any) -> str:
    """The identity a call's token names (its ``sub``, unverified); "" if none."""
    for key, value in metadata or ():
        if key == AUTH_METADATA_KEY and isinstance(value, str):
            return token_identity(value.removeprefix("Bearer "))
    return ""


class HostFaults:
    """The faults in force on one host, changed by the launcher through the host."""

    def __init__(self, seed: int = 0) -> None:
        self._peer = PeerRules(seed)
        self.rules = self._peer.rules
        self.skew = 0.0
        self._running: asyncio.Event | None = None  # cleared while paused

    def running(self) -> asyncio.Event:
        if self._running is None:
            self._running = asyncio.Event()
            self._running.set()
        return self._running

    @property
    def paused(self) -> bool:
        return not self.running().is_set()

    def pause(self, on: bool) -> None:
        ev = self.running()
        if on:
            ev.clear()
        else:
            ev.set()

    async def resumed(self) -> None:
        """Returns at once unless paused; then when the pause ends."""
        await self.running().wait()

    def rule_for(self, identity: str) -> PeerRule | None:
        return self._peer.rule_for(identity)


class FaultInterceptor(grpc.aio.ServerInterceptor):
    """Applies a host's :class:`HostFaults` to the calls it receives."""

    def __init__(self, faults: HostFaults, sleep: Callable[[float], Any]) -> None:
        self._faults = faults
        self._sleep = sleep  # pool-clock sleep, for delays

    async def intercept_service(self, continuation, handler_call_details):  # type: ignore[no-untyped-def]
        handler = await continuation(handler_call_details)
        faults = self._faults
        if handler is None or handler.request_streaming or handler.response_streaming:
            return handler
        if faults.paused:
            return handler._replace(unary_unary=_hang(faults))
        if not faults.rules:
            return handler
        rule = faults.rule_for(_identity(handler_call_details.invocation_metadata))
        if rule is None:
            return handler
        if rule.kind == "delay":
            return handler._replace(unary_unary=_delayed(handler.unary_unary, self._sleep, rule))
        return handler._replace(unary_unary=_refuse(rule))


def _hang(faults: HostFaults) -> Callable[..., Any]:
    async def hang(request: Any, context: grpc.aio.ServicerContext) -> Any:
        await faults.resumed()  # the caller's deadline ends the call first, as a rule
        await context.abort(grpc.StatusCode.UNAVAILABLE, "the daemon was not answering")

    return hang


def _refuse(rule: PeerRule) -> Callable[..., Any]:
    async def refuse(request: Any, context: grpc.aio.ServicerContext) -> Any:
        await context.abort(grpc.StatusCode.UNAVAILABLE, f"connection lost ({rule.kind} fault)")

    return refuse


def _delayed(inner: Callable[..., Any], sleep: Callable[[float], Any], rule: PeerRule) -> Any:
    async def delayed(request: Any, context: grpc.aio.ServicerContext) -> Any:
        await sleep(rule.delay)
        return await inner(request, context)

    return delayed
