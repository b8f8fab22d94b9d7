"""The slot ads' attributes that columnar snapshots ask for, kept in columns as the ads
arrive.

A column is kept from the first snapshot that asks for its name. A slot ad stored costs
a row and a line in a log of changed rows; each column reads the ads of the rows logged
since it last caught up, in bulk, before it is packed (a few hundred rows a cycle, not
a read of 100,000 ads, nor a write to every column at every update). A name no
snapshot asked for in a while is no longer kept. Pure core: no gRPC, no clock.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from typing import Any

import numpy as np

from ..classad import ClassAd, unparse
from ..packedcolumns import BOOL, EXPR, INT, REAL, STRING, PackedColumn, kind_of

__all__ = ["SlotColumns"]

_EMPTY_INTS = np.zeros(0, dtype=np.int64)


class _Kept:
    """One attribute over the rows: a kind per row, numbers in place, strings and
    expressions as codes into a table of distinct ones."""

    def __init__(self, key: str, cap: int, caught_up: int) -> None:
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
        self.caught_up = caught_up  # the change log's lines it has read (SlotColumns)

    def grow(self, cap: int) -> None:
        for name in ("kinds", "ints", "reals", "codes"):
            old = getattr(self, name)
            new = np.zeros(cap, dtype=old.dtype)
            new[: len(old)] = old
            setattr(self, name, new)

    def write(self, rows: list[int], ads: list[ClassAd | None]) -> None:
        """Read ``rows`` from their ads (None: a free row, holding nothing)."""
        if len(self.kinds) < len(ads):
            self.grow(len(ads))
        key = self.key
        read = [kind_of(None if (ad := ads[r]) is None else ad.lookup(key)) for r in rows]
        kinds = np.fromiter((k for k, _ in read), np.uint8, len(read))
        at = np.array(rows, dtype=np.int64)
        self.kinds[at] = kinds
        for wanted, out in (((BOOL, INT), self.ints), ((REAL,), self.reals)):
            sel = np.flatnonzero(np.isin(kinds, wanted))
            if len(sel):
                out[at[sel]] = [read[k][1] for k in sel.tolist()]
        for kind, code_of, by in (
            (STRING, self._string_code, _same),
            (EXPR, self._expr_code, id),
        ):
            sel = np.flatnonzero(kinds == kind)
            if len(sel):
                codes = []
                for k in sel.tolist():
                    v = read[k][1]
                    code = code_of.get(by(v))
                    if code is None:
                        code = code_of[by(v)] = self._add(v)
                    codes.append(code)
                self.codes[at[sel]] = codes

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


def _same(v: Any) -> Any:
    return v


class SlotColumns:
    """Kept columns of the slot ads stored, a row per slot (rows are reused as slots
    come and go)."""

    # a column no snapshot asked for in this many is no longer kept
    FORGET_AFTER = 16
    # rows a column reads in one go (a turn of the caller's, see :meth:`catch_up`)
    ROWS_PER_STEP = 4096

    def __init__(self) -> None:
        self._row: dict[str, int] = {}  # the slot's name key -> its row
        self._free: list[int] = []
        self._ads: list[ClassAd | None] = []  # each row's ad (None: a free row)
        self._cols: dict[str, _Kept] = {}
        self._snapshots = 0
        # rows whose ad changed, in order; line k of it is _log[k - _log_from]
        self._log: list[int] = []
        self._log_from = 0
        self._building: set[_Kept] = set()  # new columns being read, not kept yet

    def __len__(self) -> int:
        return len(self._row)

    def kept(self) -> list[str]:
        return list(self._cols)

    def put(self, key: str, ad: ClassAd) -> None:
        """The slot ad stored under ``key`` is now ``ad``."""
        row = self._row.get(key)
        if row is None:
            if self._free:
                row = self._free.pop()
            else:
                row = len(self._ads)
                self._ads.append(None)
            self._row[key] = row
        self._ads[row] = ad
        self._changed(row)

    def drop(self, key: str) -> None:
        """The slot ad stored under ``key`` is gone."""
        row = self._row.pop(key, None)
        if row is None:
            return
        self._ads[row] = None  # the row holds nothing (nor its ad alive)
        self._free.append(row)
        self._changed(row)

    def _changed(self, row: int) -> None:
        if self._cols or self._building:  # else nothing to catch up with
            self._log.append(row)

    def rows(self, keys: Sequence[str]) -> np.ndarray:
        """The rows of the slots stored under ``keys``, in that order (they stay theirs
        until a slot comes or goes)."""
        return np.fromiter(map(self._row.__getitem__, keys), np.int64, len(keys))

    def catch_up(self, keys: Iterable[str]) -> Iterator[None]:
        """Bring the columns of ``keys`` (distinct lower-case names) up to the ads stored
        (a new one made over every row), a step of at most ``ROWS_PER_STEP`` rows at a
        time: iterate it, between steps the caller may take other work (updates logged
        meanwhile are read too, and two catch-ups at once write the same values)."""
        for key in keys:
            end = self._log_from + len(self._log)
            col = self._cols.get(key)
            if col is None or len(col.table) > 2 * len(self._row) + 1024:
                col = _Kept(key, max(len(self._ads), 1), end)
                todo: Iterable[int] = range(len(self._ads))
                self._building.add(col)  # rows stored from here on are logged for it
            else:
                todo = dict.fromkeys(self._log[col.caught_up - self._log_from :])
            try:
                it = iter(todo)
                while step := list(islice(it, self.ROWS_PER_STEP)):
                    col.write(step, self._ads)
                    yield
            except BaseException:  # left half done (the caller's call was cancelled)
                self._building.discard(col)  # not kept, nor holding the log back
                raise
            if col in self._building:
                self._building.discard(col)
                self._cols[key] = col
            col.caught_up = max(col.caught_up, end)
        for col in self._cols.values():  # rows logged while the steps ran
            end = self._log_from + len(self._log)
            if col.caught_up < end:
                col.write(
                    list(dict.fromkeys(self._log[col.caught_up - self._log_from :])), self._ads
                )
                col.caught_up = end

    def pack(self, names: Sequence[str], rows: np.ndarray) -> list[PackedColumn]:
        """The columns of ``names`` (distinct without regard to case, none blank:
        ``AdStore.columns_asked``), in the asker's spelling, over ``rows`` (:meth:`rows`),
        in that order; caught up first."""
        keys = [n.lower() for n in names]
        for _ in self.catch_up(keys):
            pass
        self._snapshots += 1
        out = []
        for name, key in zip(names, keys, strict=True):
            col = self._cols[key]
            col.asked = self._snapshots
            out.append(col.pack(name, rows))
        stale = self._snapshots - self.FORGET_AFTER
        for key in [k for k, c in self._cols.items() if c.asked < stale]:
            del self._cols[key]
        self._trim()
        return out

    def _trim(self) -> None:
        """Forget the log lines every column has read."""
        low = min((c.caught_up for c in (*self._cols.values(), *self._building)), default=None)
        if low is None:
            self._log_from += len(self._log)
            self._log.clear()
        elif low > self._log_from:
            del self._log[: low - self._log_from]
            self._log_from = low
