"""The slot table: slot ads as columns, each built on first read (from the ads, from a
column sent ready to build, or carried from the table before)."""

from __future__ import annotations

import operator
from collections.abc import Iterable, Mapping, Sequence
from itertools import repeat
from typing import Any

import numpy as np

from .. import vector as V
from ..ad import ClassAd
from ..tree import Expr, Literal, unparse
from ..values import ERROR, UNDEFINED
from ..vector import B, E, I, R, S, U, Vec, X
from .carry import ColumnCarry
from .column import Column, SuppliedColumn, literal_of, value_keys

_NOT_PLAIN = object()
_ABSENT = (None, None)
_second = operator.itemgetter(1)
_PLAIN_TAG = {bool: B, int: I, float: R, str: S}


class SlotTable:
    """Slot ads as columns, built lazily per attribute and cached (and, given a
    :class:`ColumnCarry`, reused from the table before)."""

    def __init__(
        self,
        ads: Sequence[ClassAd],
        watch: frozenset[str] = frozenset(),
        carry: ColumnCarry | None = None,
        supplied: Mapping[str, SuppliedColumn] | None = None,
    ) -> None:
        self.ads = list(ads)
        # columns sent ready to build, by lower-case name (a columnar snapshot's): read
        # from there, not from the ads
        self._supplied = supplied or {}
        self.n = len(self.ads)
        # ads of exactly ClassAd are read straight from their attributes (a subclass may
        # watch its lookups)
        plain = set(map(type, self.ads)) <= {ClassAd}  # (a C loop: 10,000 ads a cycle)
        self._dicts = [ad._attrs for ad in self.ads] if plain else None
        self._carry = carry
        if carry is not None:
            carry.begin(self.ads)
            self.pool = carry.pool
        else:
            self.pool = V.StringPool()
        self._cols: dict[str, Column] = {}
        # rows' objects read ahead for columns not built yet (:meth:`gather`)
        self._gathered: dict[str, list[Any]] = {}
        # Lower-case names whose reading sets ``touched``: a caller that holds rows for
        # many ads (slot classes) learns whether an evaluation read a name that differs
        # among the ads a row stands for.
        self.watch = watch
        self.touched = False

    @classmethod
    def from_ads(cls, ads: Sequence[ClassAd]) -> SlotTable:
        return cls(ads)

    def __len__(self) -> int:
        return self.n

    def column(self, name: str) -> Column:
        key = name.lower()
        if key in self.watch:
            self.touched = True
        col = self._cols.get(key)
        if col is None:
            supplied = self._supplied.get(key)
            col = self._build(key) if supplied is None else supplied.column(self.pool)
            self._cols[key] = col
            if self._carry is not None:
                self._carry.mark_built(key)
        return col

    def gather(self, names: Iterable[str]) -> None:
        """Read the rows' objects of the columns of ``names`` that will be built (not
        built nor patched yet) in one pass over the ads: an ad's attributes are read
        while they are in the cache, not once per column (a cold 100,000-slot table
        costs a cache miss per ad and column)."""
        if self._dicts is None:
            return
        carry = self._carry
        keys = [
            k
            for k in dict.fromkeys(n.lower() for n in names)
            if k not in self._cols
            and k not in self._gathered
            and k not in self._supplied
            and (carry is None or carry.patchable(k) is None)
        ]
        if len(keys) < 2 or not self.n:
            return
        # one flat list, ad after ad (a list per ad would be 100,000 objects to collect)
        flat: list[Any] = []
        add, m = flat.extend, len(keys)
        for d in self._dicts:
            add(map(d.get, keys, repeat(_ABSENT)))
        for j, k in enumerate(keys):
            self._gathered[k] = list(map(_second, flat[j::m]))

    def objects(self, name: str) -> list[Any]:
        """Each row's object bound to ``name`` (None where missing), without a column:
        read ahead by :meth:`gather` when it was; with a carry, the last table's list
        read again only where an ad was replaced. Never change it."""
        key = name.lower()
        got = self._gathered.pop(key, None)
        if got is not None:
            return got
        if self._carry is not None:
            return self._carry.per_row(
                f"objects {key}", self.ads, lambda ad: ad.lookup(key), same=True, reads=(key,)
            )
        return self._read(key)

    def _build(self, key: str) -> Column:
        carry = self._carry
        row_exprs = self._gathered.pop(key, None)
        if row_exprs is None:
            if carry is not None and self._dicts is not None:
                last = carry.patchable(key)
                if last is not None:
                    return self._patch(key, carry, *last)
            row_exprs = self._read(key)
        n = self.n
        # the row's objects numbered by a sort of their ids (ids of live objects differ)
        ids = np.fromiter(map(id, row_exprs), np.intp, n)
        if carry is not None:
            col = carry.get(key, ids)
            if col is not None:
                return col
            col = self._columnise(key, row_exprs, ids)
            carry.put(key, row_exprs, ids, col)
            return col
        return self._columnise(key, row_exprs, ids)

    def _read(self, key: str) -> list[Any]:
        """Each row's object bound to ``key`` (None where missing). Each distinct object
        is classified once: ads decoded from the wire share the trees and literals of
        their equal attributes (classad.bindings), as the startd's do."""
        if self._dicts is not None:
            return list(map(_second, map(dict.get, self._dicts, repeat(key), repeat(_ABSENT))))
        return [ad.lookup(key) for ad in self.ads]

    def _patch(
        self, key: str, carry: ColumnCarry, row_exprs: list[Any], ids: np.ndarray, col: Column
    ) -> Column:
        """The last table's column of ``key`` with the rows of replaced ads read again:
        the same column while they hold the same objects."""
        assert self._dicts is not None and carry.changed is not None
        rows = carry.changed.tolist()
        fresh = [self._dicts[r].get(key, _ABSENT)[1] for r in rows]
        fresh_ids = np.fromiter(map(id, fresh), np.intp, len(fresh))
        if np.array_equal(fresh_ids, ids[carry.changed]):
            carry.keep(key)  # the same objects
            return col
        carry.patched += 1
        row_exprs = row_exprs.copy()
        for r, e in zip(rows, fresh, strict=True):
            row_exprs[r] = e
        ids = ids.copy()
        ids[carry.changed] = fresh_ids
        out = self._patch_literals(key, col, carry.changed, fresh)
        if out is None:
            out = self._columnise(key, row_exprs, ids)
        carry.put(key, row_exprs, ids, out)
        return out

    def _patch_literals(
        self, key: str, col: Column, rows: np.ndarray, fresh: list[Any]
    ) -> Column | None:
        """``col`` with ``rows`` now holding ``fresh``, as ``_columnise`` would build it,
        when they are plain literals or missing and the column holds neither expressions
        nor other values: its arrays copied and written at those rows (a slot's clocks,
        TotalJobRunTime, change at every update: 10,000 rows are not sorted again for a
        few hundred). None otherwise."""
        lit = col.lit
        if col.exprs or lit.o is not None:
            return None
        if any(e is not None and type(e) is not Literal for e in fresh):
            return None
        values = [None if e is None else e.value for e in fresh]
        kinds = np.fromiter(
            map(_PLAIN_TAG.get, map(type, values), repeat(-1)), np.int8, len(values)
        )
        absent = np.fromiter((v is None for v in values), bool, len(values))
        kinds[absent] = 0
        if (kinds < 0).any():  # a literal of another kind (UNDEFINED, a list)
            return None
        n = self.n

        def full(a: Any, dtype: Any) -> np.ndarray:
            return np.array(np.broadcast_to(0 if a is None else a, (n,)), dtype=dtype)

        tag = lit.tags().copy()
        ival, fval, sval = full(lit.i, np.int64), full(lit.f, np.float64), full(lit.s, np.int64)
        present = col.present.copy()
        tag[rows], present[rows] = kinds, ~absent
        ival[rows], fval[rows], sval[rows] = 0, 0.0, 0
        for t, arr in ((B, ival), (I, ival), (R, fval)):
            at = np.flatnonzero(kinds == t)
            if len(at):
                arr[rows[at]] = [values[k] for k in at.tolist()]
        at = np.flatnonzero(kinds == S)
        if len(at):
            sval[rows[at]] = [self.pool.code(values[k]) for k in at.tolist()]
        out = Vec(n, tag, ival, fval, sval).simplify()
        out.src = key
        return Column(key, present, out, [])

    def _columnise(self, key: str, row_exprs: list[Any], ids: np.ndarray) -> Column:
        n = self.n
        _, first, inverse = np.unique(ids, return_index=True, return_inverse=True)
        codes: np.ndarray | None = None  # each row's distinct object (None: its own)
        distinct: list[Expr | None] = row_exprs
        if 2 * len(first) <= n:
            distinct = [row_exprs[k] for k in first.tolist()]
            codes = inverse.reshape(n)

        def per_row(a: np.ndarray) -> np.ndarray:
            return a if codes is None else a[codes]

        m = len(distinct)
        tag = np.zeros(m, dtype=np.int8)
        present = (ids if codes is None else ids[first]) != id(None)
        ival = np.zeros(m, dtype=np.int64)
        fval = np.zeros(m, dtype=np.float64)
        sval = np.zeros(m, dtype=np.int64)
        oval: np.ndarray | None = None
        groups: dict[str, tuple[list[int], Expr]] = {}
        # the usual literals (bool, int, float, str) by type, in bulk; the rest one by one
        values = [e.value if type(e) is Literal else _NOT_PLAIN for e in distinct]
        kinds = np.fromiter(map(_PLAIN_TAG.get, map(type, values), repeat(0)), np.int8, m)

        def of(at: np.ndarray) -> list[Any]:
            return values if len(at) == m else [values[k] for k in at.tolist()]

        for t in (B, I):
            at = np.flatnonzero(kinds == t)
            if len(at):
                tag[at] = t
                ival[at] = of(at)
        at = np.flatnonzero(kinds == R)
        if len(at):
            tag[at] = R
            fval[at] = of(at)
        at = np.flatnonzero(kinds == S)
        if len(at):
            tag[at] = S
            sval[at] = list(map(self.pool.code, of(at)))
        for k in np.flatnonzero((kinds == 0) & present).tolist():
            e = distinct[k]
            assert e is not None
            ok, v = literal_of(e)
            if not ok:
                g = groups.get(text := unparse(e))
                if g is None:
                    groups[text] = ([k], e)
                else:
                    g[0].append(k)
                continue
            t = type(v)
            if t is int:  # a negated literal
                tag[k], ival[k] = I, v
            elif t is float:
                tag[k], fval[k] = R, v
            elif v is ERROR:
                tag[k] = E
            elif v is UNDEFINED:
                tag[k] = U
            else:
                tag[k] = X
                if oval is None:
                    oval = np.empty(m, dtype=object)
                oval[k] = v
        lit = Vec(
            n,
            per_row(tag),
            per_row(ival),
            per_row(fval),
            per_row(sval),
            None if oval is None else per_row(oval),
        ).simplify()
        lit.src = key
        exprs = []
        for ks, e in groups.values():
            if codes is None:
                rows = np.array(ks, dtype=np.int64)
            elif len(ks) == 1:
                rows = np.flatnonzero(codes == ks[0])
            else:
                rows = np.flatnonzero(np.isin(codes, ks))
            exprs.append((rows, e))
        return Column(key, per_row(present), lit, exprs)

    def codes(self, col: Column) -> tuple[np.ndarray, int, int]:
        """An int per row, equal exactly where two rows hold the same literal value (or
        the same expression text), -1 where the name is missing; and the least and the
        greatest of them. Cached with the column (a carried column keeps them): read
        only."""
        if col.codes is None:
            _values, inverse = self.uniques(col)
            code = inverse.astype(np.int64)
            code[~col.present] = -1
            for k, (rows, _e) in enumerate(col.exprs):
                code[rows] = -2 - k
            code.flags.writeable = False
            lo, hi = (int(code.min()), int(code.max())) if len(code) else (0, 0)
            col.codes = (code, lo, hi)
        return col.codes

    def uniques(self, col: Column) -> tuple[list[Any], np.ndarray]:
        """Distinct literal values of a column and each row's index into them (cached)."""
        if col.uniq is None:
            v = col.lit
            tags, payload = value_keys(v)
            xmask = tags == X
            if xmask.any():  # objects are not hashable by value: give each its own key
                payload[xmask] = np.flatnonzero(xmask)
            # np.unique(axis=0) of (tag, payload) rows, by one sort of both keys
            order = np.lexsort((payload, tags))
            st, sp = tags[order], payload[order]
            new = np.ones(len(order), dtype=bool)
            new[1:] = (st[1:] != st[:-1]) | (sp[1:] != sp[:-1])
            inverse = np.empty(len(order), dtype=np.int64)
            inverse[order] = np.cumsum(new) - 1
            first = order[new]  # the sort is stable: each value's first row
            values = [v.value_at(int(r), self.pool) for r in first]
            col.uniq = (values, inverse)
        return col.uniq
