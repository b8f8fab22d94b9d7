"""Rules for the calls a daemon host receives from given peers: partition, drop, delay.

Pure: the live host's interceptor (``hostfaults``) and the virtual kernel's delivery
(``kernel.network``) read the same rules with the same seeded draws. A rule names the
peer by the identities in its tokens (``schedd/schedd1``, ``startd/startd0_0``,
``negotiator``): a partition between two hosts is a rule on each.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

__all__ = ["PeerRule", "PeerRules"]


@dataclass(frozen=True)
class PeerRule:
    """What happens to calls from ``identities``: ``kind`` is a network fault's
    (faultkinds/network.py: partition, drop, delay)."""

    kind: str
    identities: frozenset[str]
    fraction: float = 1.0
    delay: float = 0.0


class PeerRules:
    """The rules in force on one host, by name, and the host's seeded draws."""

    def __init__(self, seed: int = 0) -> None:
        self.rules: dict[str, PeerRule] = {}
        self._rng = random.Random(seed)

    def rule_for(self, identity: str) -> PeerRule | None:
        """The rule that acts on this call from ``identity`` (a fraction is drawn per call)."""
        for rule in self.rules.values():
            if identity in rule.identities and (
                rule.fraction >= 1.0 or self._rng.random() < rule.fraction
            ):
                return rule
        return None
