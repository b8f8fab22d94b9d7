"""The submitter a job is accounted to (its AccountingGroup, else its Owner, at the pool's
UID_DOMAIN): the name the negotiator's fair share and the Submitter ads go by."""

from __future__ import annotations

import random

from ..classad import ClassAd
from .submit import UID_DOMAIN

__all__ = ["submitter_of"]


def submitter_of(ad: ClassAd, now: float, rng: random.Random) -> str:
    """The accounting name: AccountingGroup if set, else Owner, then ``@mockpool``
    (evaluated at date ``now`` with ``rng``)."""
    group = ad.get_value("AccountingGroup", now=now, rng=rng)
    name = (
        group if isinstance(group, str) and group else ad.get_value("Owner", "", now=now, rng=rng)
    )
    return f"{name}@{UID_DOMAIN}"
