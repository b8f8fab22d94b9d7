"""The simulation kernel: one thread, one heap of (time, sequence, what), cores stepped
directly through the contract (``contract.py``).

Delivering a message calls the receiving core's ``deliver`` with the sender's record as
it is: no asyncio, no protobuf, no interceptor, no task per message. After every call
into a core the kernel asks it when it next wants to run and keeps one wake-up for it
on the heap (a stale one is skipped when popped), so a core that is never due costs
nothing. Time moves from entry to entry; entries of one instant run in the order they
were made, so a run is fixed by its inputs and its seed, whatever the interpreter's
hash seed.

Routing: a message goes to an *address* (one simulated process, an :class:`Actor`,
which hosts one or several cores); its type says which core there takes it
(``Collector...`` the collector, ``Schedd...`` the schedd its ``schedd_name`` names, and
so on: ``messages.py`` names every type for its receiver). A reply (``messages.REPLIES``)
goes back to the core that asked, which is how a live call's response comes back too.
A request that cannot be delivered comes back to its sender as an ``Undeliverable``.

The network: every message takes ``latency`` pool seconds; faults act in delivery
(``network.py``): a paused actor's requests wait unanswered (refused when the pause ends,
DEADLINE_EXCEEDED when the sender's deadline passes first) and its own wake-ups and
replies wait for its resume; rules refuse, drop or delay calls from given peers; a
skewed actor's cores read a clock ahead of pool time; a crashed core is gone (its
requests are refused) until the driver puts a rebuilt one in its place.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..claimid import from_sinful
from ..contract import Core, Event, Peer, Ready, Send, Undeliverable
from ..messages import REPLIES, REQUEST_ROLES, sending_role
from ..principals import Principal, Role
from .network import ActorFaults, Parked

__all__ = ["DEADLINE", "Actor", "Kernel", "Node"]

# Pool seconds a request waits for its reply before its sender is told it failed: the
# live pool's call deadline (``daemon.RPC_TIMEOUT``), which virtual time reads as pool
# seconds.
DEADLINE = 10.0

# what answers a request: a reply, or a refusal (an Undeliverable the receiver made, as a
# live servicer aborts a call with a status)
_REPLY_TYPES = frozenset((*REPLIES, Undeliverable))

# wake-ups of one core at one instant before the kernel calls it a core that never gets
# due (a bug: it would hang the run) rather than work done in slices
SPIN_LIMIT = 100_000

# heap entry kinds
_WAKE, _DELIVER, _CALL, _TIMEOUT = 0, 1, 2, 3


@dataclass(eq=False, slots=True)
class Node:
    """One core in the kernel: what it is, where it lives, who it says it is."""

    kind: str  # collector, negotiator, schedd, startd
    name: str
    core: Core
    actor: Actor
    principal: Principal
    alive: bool = True
    wake_at: float | None = None  # the wake-up it has on the heap (None: none)
    # what the driver does after every call into the core (a schedd's user logs are
    # written then); the events it returns are recorded with the call's
    after: Callable[[], list[Event]] | None = None
    asked: float = 0.0  # the time (on its own clock) its wake-up was asked for
    spun_at: float = -math.inf  # the instant of its last wake-ups, and how many there
    spins: int = 0

    @property
    def peer(self) -> Peer:
        return Peer(self.actor.address, self.principal)


@dataclass(eq=False)
class Actor:
    """One simulated process: an address, its cores by kind, its faults."""

    name: str
    address: str
    faults: ActorFaults
    cores: dict[str, Node] = field(default_factory=dict)  # kind -> the core (not schedds)
    schedds: dict[str, Node] = field(default_factory=dict)  # lower-case name -> schedd

    def receiver(self, msg: Any) -> Node | None:
        """The core of this actor that takes ``msg`` (by its type's name)."""
        kind = _kind_of(type(msg))
        if kind == "schedd":
            name = msg.schedd_name.lower()
            if name:
                return self.schedds.get(name)
            return next(iter(self.schedds.values())) if len(self.schedds) == 1 else None
        return self.cores.get(kind)


_KINDS: dict[type, str] = {}


def _kind_of(t: type) -> str:
    kind = _KINDS.get(t)
    if kind is None:
        name = t.__name__
        kind = next(
            (
                k
                for k in ("collector", "negotiator", "schedd", "startd")
                if name.lower().startswith(k)
            ),
            "",
        )
        _KINDS[t] = kind
    return kind


@dataclass(slots=True)
class _Delivery:
    """A message on its way: to ``node`` (a reply) or to whatever core of ``actor``
    takes it (a request); ``asker`` is the core a reply must go back to."""

    msg: Any
    sender: Node | None  # None: the driver
    actor: Actor
    asker: Node | None = None  # a reply's destination
    sent: float = 0.0
    ruled: bool = False  # the receiver's peer rules have acted on it (a delay)


class Kernel:
    """A heap of what is due, and the cores it steps."""

    def __init__(self, *, latency: float = 0.0, start: float = 0.0) -> None:
        self.now = float(start)
        self.latency = float(latency)
        self._heap: list[tuple[float, int, int, Any]] = []
        self._seq = itertools.count()
        self.actors: dict[str, Actor] = {}  # by address
        self._sinful: dict[str, Actor] = {}  # sinful strings seen, by the actor they name
        self.events: list[dict[str, Any]] = []  # what happened, in order
        self.delivered = 0  # messages handed to cores (for benches)
        self.on_event: Callable[[dict[str, Any]], None] | None = None

    # ------------------------------------------------------------------ building

    def actor(self, name: str, address: str, *, seed: int = 0) -> Actor:
        if address in self.actors:
            raise ValueError(f"address {address!r} is taken by actor {self.actors[address].name}")
        a = Actor(name, address, ActorFaults(seed))
        self.actors[address] = a
        return a

    def add(self, actor: Actor, kind: str, name: str, core: Core, principal: Principal) -> Node:
        """Put ``core`` in ``actor`` (a schedd by its name; one core of each other kind)."""
        node = Node(kind, name, core, actor, principal)
        if kind == "schedd":
            actor.schedds[name.lower()] = node
        else:
            if kind in actor.cores:
                raise ValueError(f"actor {actor.name} already has a {kind}")
            actor.cores[kind] = node
        self._rearm(node)
        return node

    def replace(self, node: Node, core: Core) -> None:
        """A crashed core's successor (rebuilt from its durable state) takes its place."""
        node.core = core
        node.alive = True
        node.wake_at = None
        self._rearm(node)

    def started(self, node: Node, ready: Ready) -> None:
        """What a core's start (or any call the driver made on it) produced: sent now."""
        self._act(node, ready, None)

    def crash(self, node: Node) -> None:
        """The core is gone: its memory with it, its wake-ups void, its requests refused."""
        node.alive = False
        node.wake_at = None

    def crash_actor(self, actor: Actor) -> None:
        """The whole process dies (kill -9): every core of it, and the calls it held
        unanswered (a pause) fail at once, as a reset connection does."""
        for node in [*actor.cores.values(), *actor.schedds.values()]:
            self.crash(node)
        faults = actor.faults
        parked, faults.parked, faults.held = faults.parked, [], []
        for p in parked:
            if not p.done:
                p.done = True
                d = p.entry
                self._undeliverable(d.sender, d.msg, "UNAVAILABLE", "the daemon died", 0.0)

    def readdress(self, actor: Actor, address: str) -> None:
        """A restarted process serves at ``address`` (a new port, as a new process gets;
        messages to the old one find nobody), with none of the old one's faults."""
        if self.actors.get(actor.address) is actor:
            del self.actors[actor.address]
        self._sinful = {k: a for k, a in self._sinful.items() if a is not actor}
        if address in self.actors:
            raise ValueError(f"address {address!r} is taken by actor {self.actors[address].name}")
        actor.address = address
        actor.faults = ActorFaults(actor.faults.seed)
        self.actors[address] = actor

    # ------------------------------------------------------------------ the clock

    def next_time(self) -> float | None:
        return self._heap[0][0] if self._heap else None

    def call_at(self, t: float, fn: Callable[[], None]) -> None:
        """Run ``fn`` (the driver's: a submit, a fault step) at pool time ``t``."""
        self._push(max(t, self.now), _CALL, fn)

    def run_until(self, t: float) -> None:
        """Run everything due up to and including ``t``; time ends at ``t``."""
        heap = self._heap
        pop = heapq.heappop
        while heap and heap[0][0] <= t:
            when, _, kind, what = pop(heap)
            self.now = when
            if kind == _WAKE:
                self._wake(what, when)
            elif kind == _DELIVER:
                self._deliver(what)
            elif kind == _TIMEOUT:
                self._timeout(what)
            else:
                what()
        if t > self.now and math.isfinite(t):
            self.now = t

    def run(self, until: float = math.inf, done: Callable[[], bool] | None = None) -> None:
        """Run to ``until`` or until the heap is empty or ``done()`` holds after an instant."""
        while self._heap and self._heap[0][0] <= until:
            self.run_until(self._heap[0][0])
            if done is not None and done():
                return
        if math.isfinite(until) and until > self.now:
            self.now = until

    # ------------------------------------------------------------------ sending

    def route(self, address: str) -> Actor | None:
        """The actor at ``address`` (``host:port``, or a sinful string as ads carry it)."""
        actor = self.actors.get(address)
        if actor is None and address.startswith("<"):
            actor = self._sinful.get(address)
            if actor is None:
                actor = self.actors.get(from_sinful(address))
                if actor is not None:
                    self._sinful[address] = actor  # (seen again: found at once)
        return actor

    def send(self, sender: Node | None, send: Send) -> None:
        """``send`` leaves ``sender`` now (None: the driver, whose calls take no time)."""
        actor = self.route(send.address)
        msg = send.msg
        if actor is None:
            if type(msg) not in _REPLY_TYPES and sender is not None:
                self._undeliverable(sender, msg, "UNAVAILABLE", f"nothing at {send.address}", 0.0)
            return
        lat = self.latency if sender is not None else 0.0
        d = _Delivery(msg, sender, actor, sent=self.now)
        self._push(self.now + lat, _DELIVER, d)

    def _reply(self, to: Node, msg: Any) -> None:
        d = _Delivery(msg, None, to.actor, asker=to, sent=self.now)
        self._push(self.now + self.latency, _DELIVER, d)

    def _undeliverable(self, to: Node, msg: Any, code: str, detail: str, after: float) -> None:
        d = _Delivery(Undeliverable(msg, code, detail), None, to.actor, asker=to, sent=self.now)
        self._push(self.now + after, _DELIVER, d)

    # ------------------------------------------------------------------ stepping

    def _push(self, t: float, kind: int, what: Any) -> None:
        heapq.heappush(self._heap, (t, next(self._seq), kind, what))

    def _rearm(self, node: Node) -> None:
        asked = node.core.next_wakeup()
        if asked is None or not node.alive:
            node.wake_at = None
            return
        skew = node.actor.faults.skew
        t = asked - skew  # the core's clock reads ahead of pool time by its skew
        if t < self.now:
            t = self.now
        if node.wake_at is None or t != node.wake_at:
            node.wake_at = t
            node.asked = asked
            self._push(t, _WAKE, node)

    def _wake(self, node: Node, when: float) -> None:
        if not node.alive or node.wake_at != when:
            return  # stale: the core has changed its mind since
        faults = node.actor.faults
        if faults.paused:
            node.wake_at = None
            faults.held.append(node)
            return
        node.wake_at = None
        if when == node.spun_at:
            node.spins += 1
            if node.spins > SPIN_LIMIT:
                raise RuntimeError(
                    f"{node.kind} {node.name} asked to run at {node.asked!r} again and again "
                    f"at pool time {when!r} without moving on: a core that never gets due"
                )
        else:
            node.spun_at, node.spins = when, 0
        # (asked - skew) + skew can fall an ulp short of what it asked for: never tick a
        # core before the time it asked for
        now = when + faults.skew if not faults.skew else max(when + faults.skew, node.asked)
        ready = node.core.tick(now)
        self._act(node, ready, None)

    def _deliver(self, d: _Delivery) -> None:
        actor = d.actor
        faults = actor.faults
        msg = d.msg
        if d.asker is not None:  # a reply (or a failure) going back to its asker
            node = d.asker
            if not node.alive:
                return
            if faults.paused:
                faults.held.append(d)
                return
            self._call(node, msg, Peer(actor.address, node.principal), None)
            return
        node = actor.receiver(msg)
        sender = d.sender
        one_way = type(msg) in _REPLY_TYPES or sender is None
        if node is None or not node.alive:
            if sender is not None:
                self._undeliverable(sender, msg, "UNAVAILABLE", "no such daemon", self.latency)
            return
        if faults.paused:
            if sender is not None:
                p = Parked(d)
                faults.parked.append(p)
                self._push(d.sent + DEADLINE, _TIMEOUT, p)
            return
        if sender is not None and not d.ruled and faults.peer.rules:
            rule = faults.rule_for(sender.principal.name)
            if rule is not None:
                if rule.kind != "delay":
                    why = f"connection lost ({rule.kind} fault)"
                    self._undeliverable(sender, msg, "UNAVAILABLE", why, self.latency)
                    return
                if rule.delay >= DEADLINE:  # the live handler is cancelled at the deadline
                    after = d.sent + DEADLINE - self.now
                    self._undeliverable(sender, msg, "DEADLINE_EXCEEDED", "delayed", after)
                    return
                d.ruled = True
                self._push(self.now + rule.delay, _DELIVER, d)
                return
        peer = _DRIVER
        if sender is not None:
            peer = sender.peer
            role = sending_role(peer.principal.role, type(msg))  # the token it is sent with
            if role != peer.principal.role:
                peer = Peer(peer.address, Principal(role, peer.principal.name))
            allowed = REQUEST_ROLES.get(type(msg))
            if allowed is not None and role not in allowed:
                # the live server's interceptor refuses it before any daemon sees it
                why = f"{type(msg).__name__} needs one of the roles {_names(allowed)}"
                self._undeliverable(sender, msg, "PERMISSION_DENIED", why, self.latency)
                return
        self._call(node, msg, peer, None if one_way else sender)

    def _timeout(self, p: Parked) -> None:
        if p.done:
            return
        p.done = True
        d = p.entry
        d.actor.faults.parked.remove(p)
        if d.sender is not None:
            self._undeliverable(
                d.sender, d.msg, "DEADLINE_EXCEEDED", "the daemon was not answering", 0.0
            )

    def _call(self, node: Node, msg: Any, peer: Peer, asker: Node | None) -> None:
        self.delivered += 1
        now = self.now + node.actor.faults.skew
        ready = node.core.deliver(msg, peer, now)
        self._act(node, ready, asker)

    def _act(self, node: Node, ready: Ready, asker: Node | None) -> None:
        if ready.events:
            self._record(ready.events)
        if node.after is not None:
            more = node.after()
            if more:
                self._record(more)
        for s in ready.sends:
            if asker is not None and type(s.msg) in _REPLY_TYPES:
                self._reply(asker, s.msg)
            elif type(s.msg) in _REPLY_TYPES:
                continue  # an answer to the driver: it reads cores directly
            else:
                self.send(node, s)
        self._rearm(node)

    def record(self, events: list[Event]) -> None:
        """Events the driver made (a fault's start), dated now."""
        self._record(events)

    def _record(self, events: list[Event]) -> None:
        t = round(self.now, 3)
        out = self.events
        hook = self.on_event
        for daemon, kind, fields in events:
            e = {"t": t, "daemon": daemon, "kind": kind, **fields}
            e.pop("_seq", None)  # a schedd's mark of its stored events: no one reads it here
            out.append(e)
            if hook is not None:
                hook(e)

    # ------------------------------------------------------------------ faults

    def pause(self, actor: Actor, on: bool) -> None:
        faults = actor.faults
        if on == faults.paused:
            return
        faults.paused = on
        if on:
            return
        parked, faults.parked = faults.parked, []
        for p in parked:  # refused, never processed, as the live host aborts them
            if not p.done:
                p.done = True
                d = p.entry
                self._undeliverable(
                    d.sender, d.msg, "UNAVAILABLE", "the daemon was not answering", 0.0
                )
        held, faults.held = faults.held, []
        for item in held:
            if isinstance(item, Node):
                if item.alive:
                    item.wake_at = None
                    self._push(self.now, _WAKE, item)
                    item.wake_at = self.now
            else:
                self._push(self.now, _DELIVER, item)

    def set_skew(self, actor: Actor, skew: float) -> None:
        actor.faults.skew = float(skew)
        for node in [*actor.cores.values(), *actor.schedds.values()]:
            node.wake_at = None
            self._rearm(node)


def _names(roles: frozenset[Role]) -> str:
    return ", ".join(sorted(r.value for r in roles))


_DRIVER = Peer("", Principal(Role.ADMIN))  # the driver acts as the pool's administrator
