"""The one contract every daemon core answers (raft's ``Tick`` and ``Ready``).

A core is a state machine: the caller owns the network, the clock and the disk. It asks
the core when it next wants to run (:meth:`Core.next_wakeup`), runs it then
(:meth:`Core.tick`), and hands it each message that arrives (:meth:`Core.deliver`). Both
return a :class:`Ready`: the messages to send, each to an address, and the events that
happened. Durable state is written by the core through the store it was given (a SQLite
queue or an accountant file live, the simulated disk in virtual time) inside the call,
so whatever a reply in ``sends`` acknowledges is committed before the caller sends it.

Two callers drive cores through this contract: the live pump (one per actor: gRPC in,
gRPC out, a scaled clock) and the virtual kernel (one heap of messages, no network).
Neither knows an HTCondor rule; a core never knows which of them drives it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from .principals import Principal

__all__ = ["Core", "Event", "Peer", "Ready", "Send", "Undeliverable"]

Event = tuple[str, str, dict[str, Any]]  # (daemon name, kind, fields)


@dataclass(frozen=True, slots=True)
class Peer:
    """Who sent a message: the address its replies go to and the principal its token
    names (what authorization reads: the same role table live and virtual)."""

    address: str
    principal: Principal


@dataclass(frozen=True, slots=True)
class Send:
    """One message for the caller to send: ``msg`` (a record of ``messages``) to the
    daemon at ``address``. A reply goes to the asker's :attr:`Peer.address`."""

    address: str
    msg: Any


@dataclass(slots=True)
class Ready:
    """What one call to a core produced, for its caller to act on in order."""

    sends: list[Send] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)

    def send(self, address: str, msg: Any) -> None:
        self.sends.append(Send(address, msg))

    def extend(self, other: Ready) -> Ready:
        self.sends += other.sends
        self.events += other.events
        return self

    def __bool__(self) -> bool:
        return bool(self.sends or self.events)


@dataclass(frozen=True, slots=True)
class Undeliverable:
    """A message the caller could not deliver, or whose reply never came: handed back to
    its sender as a delivery of its own. ``code`` is the gRPC status name a live call
    would end with (UNAVAILABLE: no such daemon, partitioned, dropped or crashed;
    DEADLINE_EXCEEDED: no reply within the deadline, as from a paused or slow peer;
    PERMISSION_DENIED, INVALID_ARGUMENT, NOT_FOUND: the receiver refused it)."""

    msg: Any  # the message as it was sent (its ``corr`` says which conversation)
    code: str
    detail: str = ""


class Core(Protocol):
    """What the live pump and the virtual kernel call on every daemon core."""

    def next_wakeup(self) -> float | None:
        """The pool time the core next wants :meth:`tick` (None: only a message wakes it)."""
        ...

    def tick(self, now: float) -> Ready:
        """Run whatever is due at ``now``."""
        ...

    def deliver(self, msg: Any, sender: Peer, now: float) -> Ready:
        """Take one message (a request, a reply, or an :class:`Undeliverable`)."""
        ...
