"""Phase 1's plan: which schedds a cycle asks for resource requests, from the submitter
ads in the collector (HTCondor asks each schedd whose submitters have idle jobs)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..classad import ClassAd

if TYPE_CHECKING:
    import random

__all__ = ["ScheddsToAsk", "schedds_to_ask"]


@dataclass
class ScheddsToAsk:
    addresses: dict[str, str] = field(default_factory=dict)  # schedd name -> its address
    submitters_at: dict[str, set[str]] = field(default_factory=dict)  # schedd -> submitters
    ignored: int = 0  # submitter ads with no schedd name or address

    def names(self) -> list[str]:
        """The schedds to ask, in the order the cycle asks them."""
        return sorted(self.addresses)


def schedds_to_ask(
    submitters: Sequence[ClassAd], *, now: float | None = None, rng: random.Random | None = None
) -> ScheddsToAsk:
    """Which schedds to ask for requests (``now``: the date time() in the Submitter ads
    reads, ``rng``: what random() draws from)."""
    plan = ScheddsToAsk()
    for ad in submitters:
        idle, sname, addr, who = (
            ad.eval(a, now=now, rng=rng) for a in ("IdleJobs", "ScheddName", "ScheddIpAddr", "Name")
        )
        if not (isinstance(sname, str) and isinstance(addr, str)):
            plan.ignored += 1
            continue
        plan.submitters_at.setdefault(sname, set()).add(who if isinstance(who, str) else "")
        if isinstance(idle, int) and not isinstance(idle, bool) and idle > 0:
            plan.addresses[sname] = addr
    return plan
