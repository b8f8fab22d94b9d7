"""What one table hands the next: columns, reads and what was made from them, for a
negotiator that builds a table of the same slots every cycle."""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np

from .. import vector as V
from ..tree import Literal
from .column import Column

T = TypeVar("T")


class ColumnCarry:
    """Columns carried from one table to the next, as a negotiator's cycles build one
    table of the same slots after another: a column whose rows hold the very objects
    they held last time (ads decoded from the wire share the objects of equal values,
    and an ad that did not change is the same ad) is the same column, and is reused with
    its distinct values. The carry keeps the rows' objects alive, so an id it compares
    is never a newer object's; the string pool is the carry's, so the codes agree.

    When a table's ads stand where the last table's did and most are the very same
    objects, a column read by that table too is patched: only the rows whose ad was
    replaced are read again (a cycle's snapshot changes a few dozen of 10,000 slots).
    A carried table's ads are therefore never changed in place (the negotiator's held
    ads are immutable: a changed slot is a new ad)."""

    # a pool that has grown past this many strings per row is started afresh (slot
    # names come and go with dynamic slots)
    POOL_PER_ROW = 8
    # patch a column when at most this fraction of its rows' ads were replaced
    PATCH_FRACTION = 0.25

    def __init__(self) -> None:
        self.pool = V.StringPool()
        # key -> (rows' objects, their ids, column, the table it was last valid for)
        self._cols: dict[str, tuple[list[Any], np.ndarray, Column, int]] = {}
        # key -> (a value read from each row's ad, the table it was read for)
        self._reads: dict[str, tuple[list[Any], int]] = {}
        # key -> (the lists it was made from, what was made: see derived)
        self._derived: dict[str, tuple[tuple[Any, ...], Any]] = {}
        self._ads: list[Any] = []  # the last table's ads, alive so their ids stay theirs
        self._last_ads: list[Any] = []  # the table's before that (see per_row's reads)
        self._built: dict[str, int] = {}  # key -> the table that last built its column
        self._ad_ids = np.zeros(0, np.intp)
        self.table = 0  # tables begun
        self.changed: np.ndarray | None = None  # rows whose ad was replaced (None: moved)
        # rows whose ad was replaced, however many (None: the rows moved)
        self.replaced: np.ndarray | None = None
        self.reused = 0
        self.built = 0
        self.patched = 0
        self.rows_read = 0  # rows ``per_row`` read (not carried)

    def begin(self, ads: Sequence[Any]) -> None:
        """A new table of ``ads``: which rows hold another ad than the last table's."""
        n = len(ads)
        ids = np.fromiter(map(id, ads), np.intp, n)
        self.changed = self.replaced = None
        if len(self.pool.strings) > self.POOL_PER_ROW * max(n, 1_000):
            self.pool = V.StringPool()
            self._cols.clear()
            self._reads.clear()
        elif len(ids) == len(self._ad_ids):
            changed = self.replaced = np.flatnonzero(ids != self._ad_ids)
            if len(changed) <= self.PATCH_FRACTION * n:
                self.changed = changed
        self._last_ads, self._ads, self._ad_ids = self._ads, list(ads), ids
        self.table += 1

    def per_row(
        self,
        key: str,
        ads: Sequence[Any],
        read: Callable[[Any], T],
        *,
        same: bool = False,
        reads: tuple[str, ...] = (),
    ) -> list[T]:
        """``[read(ad) for ad in ads]`` for the table just begun (``ads`` are its ads):
        the last table's list, read again only at the rows whose ad was replaced, when
        the last table read it too; the very list when they read as before (so what is
        made from it may be kept: :meth:`derived`). ``read`` depends on its ad alone. The
        list is shared with the next table's: never change it. ``same``: a read is as
        before only when it is the very object it was (objects, not values).

        ``reads``: the lower-case names ``read`` depends on alone, where each is a
        literal. A replaced ad that binds the very same literals as the ad it replaced
        (or lacks them as it did) reads as that ad did, however many ads were replaced:
        a startd's periodic round replaces every slot's ad, sharing the bindings that
        did not change."""
        last = self._reads.get(key)
        rows_at = self.replaced if reads else self.changed  # (changed: replaced, when few)
        if last is not None and last[1] == self.table - 1 and rows_at is not None:
            out = last[0]
            rows = rows_at.tolist()
            if reads:
                before = self._last_ads
                rows = [r for r in rows if not _same_literals(before[r], ads[r], reads)]
            fresh = [read(ads[r]) for r in rows]
            if any(
                v is not out[r] if same else (type(v) is not type(out[r]) or v != out[r])
                for r, v in zip(rows, fresh)
            ):
                out = out.copy()
                for r, v in zip(rows, fresh):
                    out[r] = v
            self.rows_read += len(rows)
        else:
            out = [read(ad) for ad in ads]
            self.rows_read += len(out)
        self._reads[key] = (out, self.table)
        return out

    def mark_built(self, key: str) -> None:
        """The table just begun built the column of ``key`` (however it built it)."""
        self._built[key] = self.table

    def names_built(self) -> list[str]:
        """The keys whose columns the last table built: the names a columnar snapshot
        is asked to send for the next."""
        return [k for k, t in self._built.items() if t == self.table]

    def derived(self, key: str, sources: tuple[Any, ...], make: Callable[[], T]) -> T:
        """``make()``, made from ``sources`` (lists :meth:`per_row` gave): what it made
        last time while they are the very objects they were then."""
        hit = self._derived.get(key)
        if hit is not None and all(map(operator.is_, hit[0], sources)):
            return hit[1]
        value = make()
        self._derived[key] = (sources, value)  # kept alive: their ids stay theirs
        return value

    def patchable(self, key: str) -> tuple[list[Any], np.ndarray, Column] | None:
        """The column of ``key`` as the last table had it, if this table may patch it."""
        hit = self._cols.get(key)
        if hit is None or self.changed is None or hit[3] != self.table - 1:
            return None
        return hit[0], hit[1], hit[2]

    def get(self, key: str, ids: np.ndarray) -> Column | None:
        hit = self._cols.get(key)
        if hit is not None and np.array_equal(hit[1], ids):
            self.keep(key)
            return hit[2]
        return None

    def keep(self, key: str) -> None:
        """The column of ``key`` holds for this table as it is."""
        row_exprs, ids, col, _ = self._cols[key]
        self._cols[key] = (row_exprs, ids, col, self.table)
        self.reused += 1

    def put(self, key: str, row_exprs: list[Any], ids: np.ndarray, col: Column) -> None:
        self.built += 1
        self._cols[key] = (row_exprs, ids, col, self.table)


def _same_literals(old: Any, new: Any, names: tuple[str, ...]) -> bool:
    """Whether ``new`` binds each of ``names`` (lower-case) to the very literal ``old``
    does, or lacks it as ``old`` does; neither ad in a scope (where a name it lacks
    would be looked up further)."""
    if old.parent is not None or new.parent is not None:
        return False
    a, b = old._attrs, new._attrs
    for name in names:
        x = a.get(name)
        if x is not b.get(name) or (x is not None and type(x[1]) is not Literal):
            return False
    return True
