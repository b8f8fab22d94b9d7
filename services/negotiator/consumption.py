"""What a job consumes of a partitionable slot with a consumption policy
(PslotConsumption, per class or state), whether it fits what the slot has left
(HTCondor's cp_sufficient_assets), and the job ad as matched against it, its requests
read as the consumption (cp_override_requested).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..classad import ClassAd
from .slotclasses import ClassView


def preserve_int(x: float) -> int | float:
    """A number as an int when it is whole (HTCondor's ads write whole numbers so)."""
    return int(x) if float(x).is_integer() else float(x)


class PslotConsumption:
    """What a request's job consumes of each candidate p-slot: one row per p-slot class
    or state (``view.row_keys``), looked up by slot row for the few p-slots a request
    is matched with. A re-offered p-slot's entry is set by slot row."""

    def __init__(
        self,
        view: ClassView | None = None,
        keys: np.ndarray | None = None,
        cons: np.ndarray | None = None,
    ) -> None:
        self._view = view
        # by row key, never changed once made (requests of one shape may share it);
        # indexed at the first lookup: most requests look up none
        self.by_key = ConsumptionByKey(keys, cons)
        self._set: dict[int, np.ndarray] = {}

    @classmethod
    def sharing(cls, view: ClassView, by_key: ConsumptionByKey) -> PslotConsumption:
        """Another request's consumption by row key, with re-offers of its own."""
        out = cls(view)
        out.by_key = by_key
        return out

    def get(self, row: int) -> np.ndarray | None:
        found = self._set.get(row)
        if found is not None or not self.by_key:
            return found
        assert self._view is not None
        return self.by_key.get(self._view.row_key(int(self._view.classes.of[row])))

    def __getitem__(self, row: int) -> np.ndarray:
        found = self.get(row)
        if found is None:
            raise KeyError(row)
        return found

    def __setitem__(self, row: int, cons: np.ndarray) -> None:
        self._set[row] = cons


class ConsumptionByKey:
    """Consumption rows by row key, indexed when first asked."""

    def __init__(self, keys: np.ndarray | None, cons: np.ndarray | None) -> None:
        self._keys = keys if keys is not None and cons is not None else None
        self._cons = cons
        self._at: dict[int, int] | None = None

    def __bool__(self) -> bool:
        return self._keys is not None and len(self._keys) > 0

    def get(self, key: int) -> np.ndarray | None:
        if self._keys is None or self._cons is None:
            return None
        if self._at is None:
            self._at = dict(zip(self._keys.tolist(), range(len(self._keys)), strict=True))
        k = self._at.get(key)
        return None if k is None else self._cons[k]


def sufficient(cons: np.ndarray, avail: np.ndarray) -> np.ndarray:
    """cp_sufficient_assets for rows of (k, resources) consumption against available."""
    valid = ~np.isnan(cons).any(axis=1)
    c = np.where(np.isnan(cons), -1.0, cons)
    return valid & (c <= avail).all(axis=1) & (c >= 0).all(axis=1) & (c > 0).any(axis=1)


def minus(held: list[float], cons: np.ndarray) -> list[float]:
    """What a p-slot holding ``held`` holds after ``cons`` (as the arrays subtract)."""
    return [a - c for a, c in zip(held, cons.tolist(), strict=True)]


def sufficient_one(cons: Sequence[float], avail: Sequence[float]) -> bool:
    """``sufficient`` of one row, without numpy (asked once a re-offered p-slot)."""
    return (
        all(0.0 <= c <= a for c, a in zip(cons, avail, strict=True))  # False for NaN
        and any(c > 0.0 for c in cons)
    )


def override_requests(job: ClassAd, cons: Sequence[float], resources: Sequence[str]) -> ClassAd:
    """The job with Request<Res> read as the consumption (where it has them)."""
    out = job
    for k, res in enumerate(resources):
        name = f"Request{res}"
        if job.lookup(name) is not None:
            if out is job:
                out = job.copy()
            out[name] = preserve_int(cons[k])
    return out


def with_zero_requests(job: ClassAd, resources: Sequence[str]) -> ClassAd:
    """HTCondor evaluates consumption with a missing Request<Res> read as 0."""
    missing = [f"Request{r}" for r in resources if job.lookup(f"Request{r}") is None]
    if not missing:
        return job
    out = job.copy()
    for name in missing:
        out[name] = 0
    return out
