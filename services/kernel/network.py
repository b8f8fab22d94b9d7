"""What the network and the host do to a message in virtual time: one actor's faults.

The live pool's faults act in its transport and its host (``pool/hostfaults.py``): a
paused host hangs the calls it receives and its timers wait; a skewed host's clock reads
ahead; rules refuse, drop or delay calls from given peers. The kernel applies the same
faults in delivery, with the same rules (``pool/peerrules.py``) and the same seeded
draws, so a fault plan means one thing live and virtual.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..pool.peerrules import PeerRule, PeerRules

__all__ = ["ActorFaults", "Parked"]


@dataclass(slots=True)
class Parked:
    """A request that reached a paused actor: it waits, unanswered, until the pause ends
    (then it is refused, never processed: the live host aborts it UNAVAILABLE) or its
    sender's deadline passes first (DEADLINE_EXCEEDED)."""

    entry: Any  # the kernel's delivery record
    done: bool = False


@dataclass
class ActorFaults:
    """The faults in force on one actor (one simulated process)."""

    seed: int = 0
    skew: float = 0.0
    paused: bool = False
    peer: PeerRules = field(init=False)
    parked: list[Parked] = field(default_factory=list)  # requests held by the pause
    held: list[Any] = field(default_factory=list)  # replies and wake-ups held by it

    def __post_init__(self) -> None:
        self.peer = PeerRules(self.seed)

    def set_rule(self, name: str, rule: PeerRule | None) -> None:
        if rule is None:
            self.peer.rules.pop(name, None)
        else:
            self.peer.rules[name] = rule

    def rule_for(self, identity: str) -> PeerRule | None:
        return self.peer.rule_for(identity) if self.peer.rules else None
