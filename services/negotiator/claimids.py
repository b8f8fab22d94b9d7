"""Reading slots' names, startd addresses and unused claim ids: the private ads joined to
the public ones by Name (PrivateAds), a consumption-policy p-slot's ClaimIdList, a
slot's Capability otherwise.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np

from ..claimid import from_sinful
from ..classad import ClassAd
from ..classad.kernel import ColumnCarry
from ..classad.tree import Literal

T = TypeVar("T")


def string_attr(
    ad: ClassAd,
    name: str,
    target: ClassAd | None = None,
    now: float | None = None,
    rng: random.Random | None = None,
) -> str | None:
    """``ad.eval(name, target)`` when it is a string (``eval`` reads a literal without
    the evaluator)."""
    v = ad.eval(name, target, now=now, rng=rng)
    return v if isinstance(v, str) else None


@functools.lru_cache(maxsize=4096)  # a machine's slots share their startd's address
def address_of_sinful(my_address: str) -> str:
    return from_sinful(my_address)


def startd_address_of(offer: ClassAd, now: float, rng: random.Random | None) -> str:
    """host:port of the startd an offered slot ad's MyAddress names ("" without one)."""
    e = offer.lookup("MyAddress")
    addr = e.value if type(e) is Literal else string_attr(offer, "MyAddress", None, now, rng)
    return address_of_sinful(addr) if isinstance(addr, str) else ""


NOT_LITERAL = object()


def literal_name(ad: ClassAd) -> str | object | None:
    """A slot ad's Name when it is a literal (a string, else None); NOT_LITERAL when
    it is an expression, whose value may change with the time."""
    e = ad.lookup("Name")
    if e is None:
        return None
    if type(e) is not Literal:
        return NOT_LITERAL
    return e.value if isinstance(e.value, str) else None


def claim_ids(
    private: ClassAd, consumption_policy: bool, now: float, rng: random.Random | None
) -> list[str]:
    """Unused claim ids of a slot: a consumption-policy p-slot's ClaimIdList, else its
    Capability."""
    if consumption_policy:
        lst = private.eval("ClaimIdList", now=now, rng=rng)
        if isinstance(lst, list):
            ids = [x for x in lst if isinstance(x, str) and x]
            if ids:
                return ids
        elif isinstance(lst, str) and lst.strip():
            return [x for x in lst.replace(",", " ").split() if x]
    cap = string_attr(private, "Capability", None, now, rng)
    return [cap] if cap else []


class PrivateAds:
    """The cycle's private ads, with their Names and Capabilities (with a carry, read
    again only where an ad was replaced)."""

    def __init__(
        self,
        ads: Sequence[ClassAd],
        carry: ColumnCarry | None,
        now: float,
        rng: random.Random | None,
    ) -> None:
        self.ads = list(ads)
        self._carry = carry
        self.now, self.rng = now, rng
        if carry is not None:
            carry.begin(self.ads)
            self.names = carry.per_row("Name", self.ads, self._name, reads=("name",))
            self.caps = carry.per_row(
                "Capability", self.ads, self._capability, reads=("capability",)
            )
        else:
            self.names = ClassAd.string_values(self.ads, "Name", now=now, rng=rng)
            self.caps = ClassAd.string_values(self.ads, "Capability", now=now, rng=rng)

    def _name(self, private: ClassAd) -> str | None:
        return string_attr(private, "Name", None, self.now, self.rng)

    def _capability(self, private: ClassAd) -> str | None:
        return string_attr(private, "Capability", None, self.now, self.rng)

    def _made(self, key: str, sources: tuple[Any, ...], make: Callable[[], T]) -> T:
        return make() if self._carry is None else self._carry.derived(key, sources, make)

    def claims(
        self, names: Sequence[str], rows: np.ndarray, has_cp: np.ndarray
    ) -> tuple[ClaimLists, np.ndarray]:
        """Each slot's unused claim ids (empty for slots not in ``rows``), the slots named
        ``names`` (their consumption policies ``has_cp``), joined to their private ads by
        Name; and the rows that have some. The join, and which private ads hold a
        Capability, are kept while the Names and Capabilities are."""
        private_names, caps = self.names, self.caps
        join = self._made(
            "join", (names, private_names), lambda: join_by_name(names, private_names)
        )
        has_cap = self._made(
            "has_cap", (caps,), lambda: np.fromiter(map(bool, caps), bool, len(caps))
        )
        k = join[rows]
        mine = k >= 0
        cp = has_cp[rows]
        plain = rows[mine & ~cp]
        plain = plain[has_cap[join[plain]]]
        is_plain = np.zeros(len(names), dtype=bool)
        is_plain[plain] = True
        # a plain slot's list is made when the cycle first reads it (most are never read)
        lists = ClaimLists(caps, join, is_plain)
        policy = []
        for r in rows[mine & cp].tolist():
            if ids := claim_ids(self.ads[join[r]], True, self.now, self.rng):
                lists[r] = ids
                policy.append(r)
        if not policy:
            return lists, plain
        found = is_plain.copy()
        found[policy] = True
        return lists, np.flatnonzero(found)


def join_by_name(names: Sequence[str], private_names: Sequence[str | None]) -> np.ndarray:
    """The row of each slot's private ad (-1: none), by Name."""
    at = {x: k for k, x in enumerate(private_names) if x is not None}.get
    return np.fromiter((at(x, -1) for x in names), np.int64, len(names))


class ClaimLists(dict[int, list[str]]):
    """Each slot's unused claim ids, by row (an empty list for a slot that has none): a
    plain slot's is its private ad's Capability, listed when first read (and kept: a
    match takes its id from the list); a consumption-policy p-slot's, its ClaimIdList,
    listed by the caller at once."""

    def __init__(self, caps: Sequence[str | None], join: np.ndarray, plain: np.ndarray) -> None:
        super().__init__()
        self._caps, self._join, self._plain = caps, join, plain

    def __missing__(self, row: int) -> list[str]:
        if not self._plain[row]:
            return []
        made = self[row] = [self._caps[self._join[row]]]  # type: ignore[list-item]
        return made
