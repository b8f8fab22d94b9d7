"""Accounting names and what each submitter holds: weighted resources and slots in use,
counted from the Claimed slot ads (the accountant's WeightedResourcesUsed and
ResourcesUsed).
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import numpy as np

from ..classad import ClassAd

POOL_DOMAIN = "mockpool"  # accounting names are "<owner or group>@mockpool"


# the attributes a slot's accounting name is read from, the first found first
_ACCOUNTING_ATTRS = ("AccountingGroup", "RemoteUser", "RemoteOwner")
ACCOUNTING_NAMES = tuple(a.lower() for a in _ACCOUNTING_ATTRS)


def accounting_name(
    ad: ClassAd, now: float | None = None, rng: random.Random | None = None
) -> str | None:
    for attr in _ACCOUNTING_ATTRS:
        v = ad.eval(attr, now=now, rng=rng)
        if isinstance(v, str) and v:
            return v if "@" in v else f"{v}@{POOL_DOMAIN}"
    return None


def slot_usage(
    slots: Sequence[ClassAd],
    weights: np.ndarray,
    claimed: np.ndarray,
    names: Sequence[str | None] | None = None,
    *,
    now: float | None = None,
    rng: random.Random | None = None,
) -> tuple[dict[str, float], dict[str, int]]:
    """Weighted resources in use and slots held per submitter, from the Claimed slot ads
    (the accountant's WeightedResourcesUsed and ResourcesUsed); ``names``: each slot's
    accounting name, when read already."""
    usage: dict[str, float] = {}
    counts: dict[str, int] = {}
    for r in np.flatnonzero(claimed).tolist():
        name = names[r] if names is not None else accounting_name(slots[r], now, rng)
        if name is not None:
            usage[name] = usage.get(name, 0.0) + float(weights[r])
            counts[name] = counts.get(name, 0) + 1
    return usage, counts
