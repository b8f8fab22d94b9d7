"""The slot ads' attributes that columnar snapshots ask for, kept in columns as the ads
arrive.

A column is kept from the first snapshot that asks for its name and written at every
slot ad stored after, so that a snapshot's columns are a gather of the rows it holds,
not a read of 100,000 ads. A name no snapshot asked for in a while is no longer kept.
Pure core: no gRPC, no clock.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ..classad import ClassAd, unparse
from ..packedcolumns import BOOL, EXPR, INT, REAL, STRING, PackedColumn, kind_of

__all__ = ["SlotColumns"]

_EMPTY_INTS = np.zeros(0, dtype=np.int64)


class _Kept:
    """One attribute over the rows: a kind per row, numbers in place, strings and
    expressions as codes into a table of distinct ones."""

    def __init__(self, key: str, cap: int) -> None:
        self.key = key
        self.kinds = np.zeros(cap, dtype=np.uint8)
        self.ints = np.zeros(cap, dtype=np.int64)
        self.reals = np.zeros(cap, dtype=np.float64)
        self.codes = np.zeros(cap, dtype=np.int64)  # STRING and EXPR rows
        self.table: list[Any] = []  # the strings and expressions, by code
        self.texts: list[str | None] = []  # an expression's text, once a snapshot sent it
        self._string_code: dict[str, int] = {}
        self._expr_code: dict[int, int] = {}  # by the expression's id (held in table)
        self.asked = 0  # the snapshot that last asked for it

    def grow(self, cap: int) -> None:
        for name in ("kinds", "ints", "reals", "codes"):
            old = getattr(self, name)
            new = np.zeros(cap, dtype=old.dtype)
            new[: len(old)] = old
            setattr(self, name, new)

    def set(self, row: int, ad: ClassAd | None) -> None:
        kind, v = kind_of(None if ad is None else ad.lookup(self.key))
        self.kinds[row] = kind
        if kind in (BOOL, INT):
            self.ints[row] = v
        elif kind == REAL:
            self.reals[row] = v
        elif kind == STRING:
            code = self._string_code.get(v)
            if code is None:
                code = self._string_code[v] = self._add(v)
            self.codes[row] = code
        elif kind == EXPR:
            code = self._expr_code.get(id(v))
            if code is None:
                code = self._expr_code[id(v)] = self._add(v)
            self.codes[row] = code

    def _add(self, value: Any) -> int:
        self.table.append(value)
        self.texts.append(None)
        return len(self.table) - 1

    def pack(self, name: str, rows: np.ndarray) -> PackedColumn:
        kinds = self.kinds[rows]
        ints = self.ints[rows][(kinds == BOOL) | (kinds == INT)]
        reals = self.reals[rows][kinds == REAL]
        codes = self.codes[rows]
        strings: list[str] = []
        string_rows = _EMPTY_INTS
        sel = codes[kinds == STRING]
        if len(sel):
            used, string_rows = np.unique(sel, return_inverse=True)
            strings = [self.table[c] for c in used.tolist()]
        exprs: list[Any] = []
        expr_rows = _EMPTY_INTS
        sel = codes[kinds == EXPR]
        if len(sel):
            used, inverse = np.unique(sel, return_inverse=True)
            # expressions of equal text (ads that do not share their trees) sent once
            by_text: dict[str, int] = {}
            index = np.empty(len(used), dtype=np.int64)
            for k, c in enumerate(used.tolist()):
                text = self.texts[c]
                if text is None:
                    text = self.texts[c] = unparse(self.table[c])
                j = by_text.setdefault(text, len(exprs))
                if j == len(exprs):
                    exprs.append(self.table[c])
                index[k] = j
            expr_rows = index[inverse]
        return PackedColumn(
            name,
            kinds,
            ints,
            reals,
            strings,
            string_rows.astype(np.int64),
            exprs,
            expr_rows.astype(np.int64),
        )


class SlotColumns:
    """Kept columns of the slot ads stored, a row per slot (rows are reused as slots
    come and go)."""

    # a column no snapshot asked for in this many is no longer kept
    FORGET_AFTER = 16

    def __init__(self) -> None:
        self._row: dict[str, int] = {}  # the slot's name key -> its row
        self._free: list[int] = []
        self._ads: list[ClassAd | None] = []  # each row's ad (None: a free row)
        self._cols: dict[str, _Kept] = {}
        self._snapshots = 0

    def __len__(self) -> int:
        return len(self._row)

    def kept(self) -> list[str]:
        return list(self._cols)

    def put(self, key: str, ad: ClassAd) -> None:
        """The slot ad stored under ``key`` is now ``ad``."""
        row = self._row.get(key)
        if row is None:
            row = self._free.pop() if self._free else self._new_row()
            self._row[key] = row
        self._ads[row] = ad
        for col in self._cols.values():
            col.set(row, ad)

    def _new_row(self) -> int:
        row = len(self._ads)
        self._ads.append(None)
        cap = len(self._ads)
        for col in self._cols.values():
            if len(col.kinds) < cap:
                col.grow(2 * cap)
        return row

    def drop(self, key: str) -> None:
        """The slot ad stored under ``key`` is gone."""
        row = self._row.pop(key, None)
        if row is None:
            return
        self._ads[row] = None
        for col in self._cols.values():
            col.set(row, None)  # the row holds nothing (nor its strings alive)
        self._free.append(row)

    def rows(self, keys: Sequence[str]) -> np.ndarray:
        """The rows of the slots stored under ``keys``, in that order (they stay theirs
        until a slot comes or goes)."""
        return np.fromiter(map(self._row.__getitem__, keys), np.int64, len(keys))

    def pack(self, names: Iterable[str], rows: np.ndarray) -> list[PackedColumn]:
        """The columns of ``names`` (each once, in the asker's spelling) over ``rows``
        (:meth:`rows`), in that order."""
        self._snapshots += 1
        out = []
        for name in dict.fromkeys(n for n in names if n.strip()):
            key = name.lower()
            col = self._cols.get(key)
            if col is None or len(col.table) > 2 * len(self._row) + 1024:
                col = self._cols[key] = self._build(key)
            col.asked = self._snapshots
            out.append(col.pack(name, rows))
        stale = self._snapshots - self.FORGET_AFTER
        for key in [k for k, c in self._cols.items() if c.asked < stale]:
            del self._cols[key]
        return out

    def _build(self, key: str) -> _Kept:
        """A column of ``key`` over every row (its table holding only what they use)."""
        col = _Kept(key, max(len(self._ads), 1))
        for row, ad in enumerate(self._ads):
            if ad is not None:
                col.set(row, ad)
        return col
