"""The match kernel: ClassAd expressions evaluated over a columnar table of slot ads.

One ad is held constant (the job, when evaluating its Requirements and Rank; the job
again, as TARGET, when evaluating the slots' own expressions) and the expression is
evaluated for every row of a :class:`SlotTable` at once, with numpy. Slot attributes whose
values are expressions (START, Requirements, Rank, SlotWeight, ...) are grouped by their
text and each group is evaluated vectorised. Scoping is HTCondor's: a name is looked up in
the ad that holds the expression, then in the other ad.

What the kernel does not vectorise (nested ad literals, selection from computed ads,
eval(), random(), absolute references) is evaluated row by row with the scalar
evaluator, for just the expression that needs it, and counted in ``KernelStats.fallbacks``.

Every evaluation spends a step budget (:mod:`.budget`): a vectorised node costs a step per
64 rows, a fallback what the scalar evaluator charges; :func:`table_budget` is the default.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import numpy as np

from . import vector as V
from .ad import ClassAd
from .budget import EVAL_BUDGET, PER_AD_STEPS, Budget, BudgetExceeded
from .evaluate import EvalContext
from .evaluate import evaluate as scalar_evaluate
from .functions import call as scalar_call
from .parser import parse_expr
from .refs import DynamicReference, every_name
from .tree import (
    AdExpr,
    AttrRef,
    Binary,
    Call,
    Cond,
    Elvis,
    Expr,
    ListExpr,
    Literal,
    Paren,
    Select,
    Subscript,
    Unary,
    walk,
)
from .unparse import unparse
from .values import ERROR, UNDEFINED
from .vector import B, E, I, R, S, U, Vec, X

if TYPE_CHECKING:
    import random

T = TypeVar("T")
CONST, ROWS = 0, 1  # which side an expression is evaluated on (its MY)
_PREDICATES = {
    "isundefined": (U,),
    "iserror": (E,),
    "isstring": (S,),
    "isinteger": (I,),
    "isreal": (R,),
    "isboolean": (B,),
}
_SCOPE_DEPENDENT = {"eval", "unparse", "random", "evalineachcontext", "countmatches"}
# names the scalar evaluator resolves itself (CurrentTime: the pool time unless the ad has one)
_SPECIAL_NAMES = ("my", "target", "parent", "currenttime")
_LOGIC = {"&&", "||"}


class _Fallback(Exception):
    """Raised inside the kernel for a construct it evaluates row by row instead."""


@dataclass
class KernelStats:
    vector_evals: int = 0
    fallbacks: int = 0
    fallback_rows: int = 0
    fallback_exprs: list[str] = field(default_factory=list)

    def note_fallback(self, expr: Expr, rows: int) -> None:
        self.fallbacks += 1
        self.fallback_rows += rows
        if len(self.fallback_exprs) < 20:
            self.fallback_exprs.append(unparse(expr)[:200])


class SuppliedColumn(Protocol):
    """A column sent ready to build (``packedcolumns.PackedColumn``)."""

    def column(self, pool: V.StringPool) -> Column: ...


class Column:
    """One attribute over all rows: literal values, plus row groups holding expressions."""

    __slots__ = ("codes", "exprs", "lit", "name", "present", "uniq")

    def __init__(
        self, name: str, present: np.ndarray, lit: Vec, exprs: list[tuple[np.ndarray, Expr]]
    ):
        self.name = name
        self.present = present
        self.lit = lit
        self.exprs = exprs
        self.uniq: tuple[list[Any], np.ndarray] | None = None
        self.codes: tuple[np.ndarray, int, int] | None = None


def literal_of(e: Expr) -> tuple[bool, Any]:
    if type(e) is Literal:
        return True, e.value
    if type(e) is Unary and e.op == "-" and type(e.operand) is Literal:  # -5 parses as -(5)
        v = e.operand.value
        if type(v) is int:
            from .values import wrap_int

            return True, wrap_int(-v)
        if type(v) is float:
            return True, -v
    return False, None


def value_keys(v: Vec) -> tuple[np.ndarray, np.ndarray]:
    """(tag, payload) int64 columns that are equal exactly where two rows hold the same
    scalar value (reals by bit pattern, strings by exact code)."""
    n = v.n
    tags = v.tags().astype(np.int64)
    payload = np.zeros(n, dtype=np.int64)
    for t, arr in ((B, v.i), (I, v.i), (R, v.f), (S, v.s)):
        if arr is None:
            continue
        m = tags == t
        if m.any():
            a = np.broadcast_to(arr, (n,))
            payload[m] = a[m].view(np.int64) if a.dtype == np.float64 else a[m]
    return tags, payload


def literal_keys(col: Column, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``value_keys`` of the rows ``rows`` of ``col``, each row's (tag, payload) equal
    exactly where two rows hold the same literal value; the tag -1 where the name is
    missing, and -2 - row where it is an expression (which may answer otherwise on
    every row)."""
    tags, payload = value_keys(col.lit.take(rows))
    tags = np.where(col.present[rows], tags, -1)
    for exprs, _e in col.exprs:
        tags = np.where(np.isin(rows, exprs), -2 - rows, tags)
    return tags, payload


_NOT_PLAIN = object()
_ABSENT = (None, None)
_second = operator.itemgetter(1)
_PLAIN_TAG = {bool: B, int: I, float: R, str: S}


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
        self._built: dict[str, int] = {}  # key -> the table that last built its column
        self._ad_ids = np.zeros(0, np.intp)
        self.table = 0  # tables begun
        self.changed: np.ndarray | None = None  # rows whose ad was replaced (None: moved)
        self.reused = 0
        self.built = 0
        self.patched = 0
        self.rows_read = 0  # rows ``per_row`` read (not carried)

    def begin(self, ads: Sequence[Any]) -> None:
        """A new table of ``ads``: which rows hold another ad than the last table's."""
        n = len(ads)
        ids = np.fromiter(map(id, ads), np.intp, n)
        self.changed = None
        if len(self.pool.strings) > self.POOL_PER_ROW * max(n, 1_000):
            self.pool = V.StringPool()
            self._cols.clear()
            self._reads.clear()
        elif len(ids) == len(self._ad_ids):
            changed = np.flatnonzero(ids != self._ad_ids)
            if len(changed) <= self.PATCH_FRACTION * n:
                self.changed = changed
        self._ads, self._ad_ids = list(ads), ids
        self.table += 1

    def per_row(
        self, key: str, ads: Sequence[Any], read: Callable[[Any], T], *, same: bool = False
    ) -> list[T]:
        """``[read(ad) for ad in ads]`` for the table just begun (``ads`` are its ads):
        the last table's list, read again only at the rows whose ad was replaced, when
        the last table read it too; the very list when they read as before (so what is
        made from it may be kept: :meth:`derived`). ``read`` depends on its ad alone. The
        list is shared with the next table's: never change it. ``same``: a read is as
        before only when it is the very object it was (objects, not values)."""
        last = self._reads.get(key)
        if last is not None and last[1] == self.table - 1 and self.changed is not None:
            out = last[0]
            rows = self.changed.tolist()
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
        plain = all(type(ad) is ClassAd for ad in self.ads)
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
                f"objects {key}", self.ads, lambda ad: ad.lookup(key), same=True
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


class _Evaluator:
    """Evaluates trees over rows of a table with one ad held constant."""

    def __init__(
        self,
        table: SlotTable,
        const_ad: ClassAd | None,
        stats: KernelStats,
        now: float | None,
        budget: Budget,
        rng: random.Random | None = None,
    ) -> None:
        self.budget = budget
        self.step = 1 + table.n // 64  # a vectorised node costs about a step per 64 rows
        self.t = table
        self.pool = table.pool
        self.c = const_ad if const_ad is not None else ClassAd()
        self.stats = stats
        self.now = now
        self.rng = rng
        self.active: set[tuple[int, str]] = set()
        self.const_cache: dict[str, Vec] = {}

    # -- helpers -----------------------------------------------------------------------
    def n(self, rows: np.ndarray | None) -> int:
        return self.t.n if rows is None else len(rows)

    def const(self, value: Any, rows: np.ndarray | None) -> Vec:
        return V.const(value, self.n(rows), self.pool)

    def scalar_rows(self, expr: Expr, scope: int, rows: np.ndarray | None) -> Vec:
        """Row-by-row evaluation with the scalar evaluator (the fallback)."""
        idx = np.arange(self.t.n) if rows is None else rows
        self.stats.note_fallback(expr, len(idx))
        b = V.Builder(len(idx))
        for k, r in enumerate(idx):
            ad = self.t.ads[int(r)]
            my, target = (self.c, ad) if scope == CONST else (ad, self.c)
            val = scalar_evaluate(expr, my, target, now=self.now, rng=self.rng, budget=self.budget)
            b.put(np.array([k]), V.const(val, 1, self.pool))
        return b.build()

    def top(self, expr: Expr, scope: int, rows: np.ndarray | None = None) -> Vec:
        try:
            v = self.ev(expr, scope, rows)
            self.stats.vector_evals += 1
            return v
        except _Fallback:
            return self.scalar_rows(expr, scope, rows)

    # -- attributes -------------------------------------------------------------------
    def const_attr(self, name: str, rows: np.ndarray | None) -> Vec:
        """Attribute `name` of the constant ad, evaluated in its own scope."""
        e = self.c.lookup(name)
        if e is None:
            return self.const(UNDEFINED, rows)
        ok, v = literal_of(e)
        if ok:
            return self.const(v, rows)
        key = (CONST, name.lower())
        if key in self.active:
            return self.const(UNDEFINED, rows)  # a reference cycle: HTCondor gives UNDEFINED
        self.active.add(key)
        try:
            return self.guarded(e, CONST, rows)
        finally:
            self.active.discard(key)

    def guarded(self, e: Expr, scope: int, rows: np.ndarray | None) -> Vec:
        try:
            return self.ev(e, scope, rows)
        except _Fallback:
            return self.scalar_rows(e, scope, rows)

    def row_attr(self, name: str, rows: np.ndarray | None, fallback_to_const: bool) -> Vec:
        """Attribute `name` of each row's ad; absent rows look in the constant ad if asked."""
        col = self.t.column(name)
        n = self.n(rows)
        present = col.present if rows is None else col.present[rows]
        lit = col.lit if rows is None else col.lit.take(rows)
        if not col.exprs and present.all():
            return lit
        b = None
        if col.exprs:
            b = V.Builder(n)
            pos_of = None
            if rows is not None:
                pos_of = np.full(self.t.n, -1, dtype=np.int64)
                pos_of[rows] = np.arange(n)
            expr_mask = np.zeros(n, dtype=bool)
            key = (ROWS, name.lower())
            for grows, e in col.exprs:
                if pos_of is not None:
                    p = pos_of[grows]
                    keep = p >= 0
                    grows, p = grows[keep], p[keep]
                else:
                    p = grows
                if not len(grows):
                    continue
                expr_mask[p] = True
                if key in self.active:
                    v = V.const(UNDEFINED, len(grows), self.pool)
                else:
                    self.active.add(key)
                    try:
                        v = self.guarded(e, ROWS, grows)
                    finally:
                        self.active.discard(key)
                b.put(p, v)
            lit_rows = np.flatnonzero(present & ~expr_mask)
            b.put(lit_rows, lit.take(lit_rows))
        absent = np.flatnonzero(~present)
        if len(absent) and fallback_to_const and self.c.lookup(name) is not None:
            if b is None:
                b = V.Builder(n)
                pr = np.flatnonzero(present)
                b.put(pr, lit.take(pr))
            sub = None if rows is None else rows[absent]
            cv = self.const_attr(name, sub if sub is not None else absent)
            b.put(absent, cv)
        if b is None:
            return lit
        return b.build()

    def ref(self, name: str, scope: int, rows: np.ndarray | None) -> Vec:
        if scope == CONST:
            if name.lower() in self.c:
                return self.const_attr(name, rows)
            return self.row_attr(name, rows, fallback_to_const=False)
        return self.row_attr(name, rows, fallback_to_const=True)

    def select_scope(self, node: Select, scope: int, rows: np.ndarray | None) -> Vec:
        """MY.x and TARGET.x: look in exactly that side, with no fallback to the other."""
        base = node.base
        if type(base) is not AttrRef or base.absolute:
            raise _Fallback
        which = base.name.lower()
        if (
            which not in ("my", "target")
            or which in self.c
            or node.name.lower() in ("my", "target", "parent")
        ):
            raise _Fallback
        side = scope if which == "my" else 1 - scope
        if side == CONST:
            if node.name.lower() in self.c:
                return self.const_attr(node.name, rows)
            return self.const(UNDEFINED, rows)
        return self.row_attr(node.name, rows, fallback_to_const=False)

    # -- the tree -----------------------------------------------------------------------
    def ev(self, node: Expr, scope: int, rows: np.ndarray | None) -> Vec:
        t = type(node)
        if t is Literal:
            return self.const(node.value, rows)
        self.budget.charge(self.step)
        if t is AttrRef:
            if node.absolute or node.name.lower() in _SPECIAL_NAMES:
                raise _Fallback
            return self.ref(node.name, scope, rows)
        if t is Binary:
            return self.binary(node, scope, rows)
        if t is Paren:
            return self.ev(node.inner, scope, rows)
        if t is Select:
            return self.select_scope(node, scope, rows)
        if t is Unary:
            return V.unary(node.op, self.ev(node.operand, scope, rows))
        if t is Cond:
            return self.choose(self.ev(node.cond, scope, rows), node.then, node.other, scope, rows)
        if t is Elvis:
            left = self.ev(node.left, scope, rows)
            if left.uniform and left.tag != U:
                return left
            right = self.ev(node.right, scope, rows)
            if left.uniform:
                return right
            return V.where(left.tag == U, right, left)
        if t is Call:
            return self.call(node, scope, rows)
        if t is ListExpr:
            items = [self.ev(x, scope, rows) for x in node.items]
            return self.rowwise(lambda *vals: list(vals), items, rows)
        if t is Subscript:
            base = self.ev(node.base, scope, rows)
            index = self.ev(node.index, scope, rows)
            from .evaluate import _subscript

            ctx = EvalContext(None, None, self.now, self.rng, budget=self.budget)
            if self._holds_ads(base):
                raise _Fallback  # ad[...] evaluates in the nested ad's scope
            return self.rowwise(lambda b, i: _subscript(b, i, ctx), [base, index], rows)
        raise _Fallback  # AdExpr and anything new

    def _holds_ads(self, v: Vec) -> bool:
        tags = v.tags()
        rows = np.flatnonzero(tags == X)
        return (
            any(isinstance(v.value_at(int(r), self.pool, X), ClassAd) for r in rows[:1000])
            or len(rows) > 1000
        )

    def binary(self, node: Binary, scope: int, rows: np.ndarray | None) -> Vec:
        spine: list[Binary] = []
        n: Expr = node
        while type(n) is Binary:
            spine.append(n)
            n = n.left
        val = self.ev(n, scope, rows)
        for b in reversed(spine):
            op = b.op
            if op in _LOGIC:
                # skip the right side when the left already decides every row
                if val.uniform and val.tag in (B, I, R) and V.is_const(val):
                    tv = V.truth(val)
                    if (op == "&&" and not tv.i) or (op == "||" and tv.i):
                        val = tv
                        continue
                if val.uniform and val.tag == E:
                    continue
                right = self.ev(b.right, scope, rows)
                val = V.logical_and(val, right) if op == "&&" else V.logical_or(val, right)
                continue
            right = self.ev(b.right, scope, rows)
            if op in ("+", "-", "*", "/", "%"):
                val = V.arith(op, val, right)
            elif op in ("==", "!=", "<", "<=", ">", ">="):
                val = V.compare(op, val, right, self.pool)
            elif op == "=?=":
                val = V.identical(val, right, False)
            elif op == "=!=":
                val = V.identical(val, right, True)
            else:
                val = V.bitwise(op, val, right)
        return val

    def choose(
        self, cond: Vec, then: Expr, other: Expr, scope: int, rows: np.ndarray | None
    ) -> Vec:
        c = V.truth(cond)
        if V.is_const(c):
            if c.tag == B:
                return self.ev(then if c.i else other, scope, rows)
            return c
        tmask, fmask, umask, emask = V._bool_parts(c)
        b = V.Builder(c.n)
        for mask, branch in ((tmask, then), (fmask, other)):
            if mask.any():
                pos = np.flatnonzero(mask)
                sub = pos if rows is None else rows[pos]
                b.put(pos, self.ev(branch, scope, sub))
        if umask.any():
            b.put(np.flatnonzero(umask), Vec(int(umask.sum()), U))
        if emask.any():
            b.put(np.flatnonzero(emask), Vec(int(emask.sum()), E))
        return b.build()

    def call(self, node: Call, scope: int, rows: np.ndarray | None) -> Vec:
        name = node.name.lower()
        args = node.args
        if name in _SCOPE_DEPENDENT:
            raise _Fallback
        if name == "ifthenelse":
            if len(args) != 3:
                return self.const(ERROR, rows)
            cond = self.ev(args[0], scope, rows)
            return self.choose(cond, args[1], args[2], scope, rows)
        if name in _PREDICATES and len(args) == 1:
            v = self.ev(args[0], scope, rows)
            want = _PREDICATES[name][0]
            if v.uniform:
                return self.const(v.tag == want, rows)
            return Vec(v.n, B, i=(v.tag == want).astype(np.int64))
        vals = [self.ev(a, scope, rows) for a in args]
        ctx = EvalContext(None, None, self.now, self.rng, budget=self.budget)

        def fn(*values: Any) -> Any:
            return scalar_call(Call(node.name, tuple(Literal(x) for x in values)), None, ctx)

        return self.rowwise(fn, vals, rows)

    def rowwise(self, fn, vals: list[Vec], rows: np.ndarray | None) -> Vec:
        """Apply a scalar function row by row, once per distinct argument tuple."""
        n = self.n(rows)
        if all(V.is_const(v) for v in vals):
            return self.const(fn(*[v.value_at(0, self.pool) for v in vals]), rows)
        varying = [k for k, v in enumerate(vals) if not V.is_const(v)]
        fixed = {k: vals[k].value_at(0, self.pool) for k in range(len(vals)) if k not in varying}
        if len(varying) == 1 and vals[varying[0]].src is not None and rows is None:
            col = self.t.column(vals[varying[0]].src)
            uvals, inverse = self.t.uniques(col)
        else:
            uvals, inverse = self._uniques(vals, varying)
        self.budget.charge(len(uvals), "distinct argument values")
        results = []
        for u in uvals:
            args = [None] * len(vals)
            for k, x in fixed.items():
                args[k] = x
            if len(varying) == 1:
                args[varying[0]] = u
            else:
                for k, x in zip(varying, u):
                    args[k] = x
            results.append(fn(*args))
        return self._gather(results, inverse, n)

    def _uniques(self, vals: list[Vec], varying: list[int]) -> tuple[list[Any], np.ndarray]:
        n = vals[varying[0]].n
        cols = []
        has_x = np.zeros(n, dtype=bool)
        for k in varying:
            tags, payload = value_keys(vals[k])
            has_x |= tags == X
            cols += [tags, payload]
        if has_x.any():
            cols.append(np.where(has_x, np.arange(n), -1))
        keys = np.stack(cols, axis=1)
        _, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
        out = []
        for r in first:
            tup = tuple(vals[k].value_at(int(r), self.pool) for k in varying)
            out.append(tup[0] if len(varying) == 1 else tup)
        return out, inverse.reshape(-1)

    def _gather(self, results: list[Any], inverse: np.ndarray, n: int) -> Vec:
        k = len(results)
        kinds = {type(r) for r in results}
        if kinds == {bool}:  # the common case (stringListMember, regexp, ...): one gather
            return Vec(n, B, i=np.asarray(results, dtype=bool)[inverse])
        tags = np.zeros(k, dtype=np.int8)
        iv = np.zeros(k, dtype=np.int64)
        fv = np.zeros(k, dtype=np.float64)
        sv = np.zeros(k, dtype=np.int64)
        ov = None
        for j, r in enumerate(results):
            t = type(r)
            if t is bool:
                tags[j], iv[j] = B, r
            elif t is int:
                tags[j], iv[j] = I, r
            elif t is float:
                tags[j], fv[j] = R, r
            elif t is str:
                tags[j], sv[j] = S, self.pool.code(r)
            elif r is ERROR:
                tags[j] = E
            elif r is UNDEFINED:
                tags[j] = U
            else:
                tags[j] = X
                if ov is None:
                    ov = np.empty(k, dtype=object)
                ov[j] = r
        return Vec(
            n,
            tags[inverse],
            iv[inverse],
            fv[inverse],
            sv[inverse],
            ov[inverse] if ov is not None else None,
        ).simplify()


def _as_expr(e: Expr | str) -> Expr:
    return parse_expr(e) if isinstance(e, str) else e


def vectorizable(expr: Expr) -> bool:
    """Whether the kernel evaluates `expr` itself with no row-by-row fallback (static check;
    attributes it references are checked when they are reached)."""
    for node in walk(expr):
        t = type(node)
        if t is AdExpr:
            return False
        if t is AttrRef and (node.absolute or node.name.lower() in _SPECIAL_NAMES):
            return False
        if t is Select and not (
            type(node.base) is AttrRef and node.base.name.lower() in ("my", "target")
        ):
            return False
        if t is Call and node.name.lower() in _SCOPE_DEPENDENT:
            return False
    return True


class CompiledExpr:
    """An expression prepared once, evaluated against whole tables many times."""

    def __init__(self, expr: Expr | str) -> None:
        self.expr = _as_expr(expr)
        self.text = unparse(self.expr)
        self.vectorized = vectorizable(self.expr)

    def eval(
        self,
        table: SlotTable,
        const_ad: ClassAd | None,
        const_is: str = "my",
        *,
        stats: KernelStats | None = None,
        now: float | None = None,
        budget: Budget | None = None,
        rows: np.ndarray | None = None,
        rng: random.Random | None = None,
    ) -> Vec:
        """Values per row (of ``rows`` only, in their order, when given). const_is="my":
        `const_ad` is MY and rows are TARGET (a job's Requirements); "target": rows are MY
        and `const_ad` is TARGET (slot expressions). ``now`` and ``rng``: what time() and
        random() read (see :func:`~.evaluate.evaluate`).

        Without `budget`, past the default one (see :func:`table_budget`) every row is
        ERROR; with one, it spends from it and raises BudgetExceeded past it."""
        if const_is not in ("my", "target"):
            raise ValueError(f"const_is must be 'my' or 'target', not {const_is!r}")
        ev = _Evaluator(
            table, const_ad, stats or KernelStats(), now, budget or table_budget(table.n), rng
        )
        scope = CONST if const_is == "my" else ROWS
        if budget is not None:
            return ev.top(self.expr, scope, rows)
        try:
            return ev.top(self.expr, scope, rows)
        except BudgetExceeded:
            return V.const(ERROR, ev.n(rows), table.pool)

    def requirements_mask(
        self, table: SlotTable, const_ad: ClassAd | None, const_is: str = "my", **kw: Any
    ) -> np.ndarray:
        """Rows where the value is boolean true (numbers: nonzero), as HTCondor's match does."""
        return V.truth(self.eval(table, const_ad, const_is, **kw)).is_true()


def evaluate_rows(
    expr: Expr | str,
    table: SlotTable | Sequence[ClassAd],
    const_ad: ClassAd | None,
    const_is: str = "my",
    *,
    now: float | None = None,
    rng: random.Random | None = None,
) -> list[Any]:
    """Python values per row (for tests and tools; the negotiator uses the arrays)."""
    tbl = table if isinstance(table, SlotTable) else SlotTable.from_ads(table)
    values = CompiledExpr(expr).eval(tbl, const_ad, const_is, now=now, rng=rng)
    return values.to_values(tbl.pool)


@dataclass
class MatchResult:
    matches: np.ndarray  # bool per slot: both Requirements true
    rank: np.ndarray  # float64 per slot: the job's Rank (0.0 where not a number)
    fallbacks: int
    stats: KernelStats
    # rows whose job Requirements may differ among the ads they stand for (match_vector's
    # ``varies``); None when not asked
    unknown: np.ndarray | None = None


# MY.: an ad without its own Requirements does not borrow the other ad's (as matches()).
_JOB_REQ = Select(AttrRef("MY"), "Requirements")
_RANK = Select(AttrRef("MY"), "Rank")


def table_budget(rows: int) -> Budget:
    """The default budget for evaluating over ``rows`` ads at once (or scanning them)."""
    return Budget(EVAL_BUDGET + PER_AD_STEPS * rows)


def match_vector(
    job: ClassAd,
    slots: SlotTable | Sequence[ClassAd],
    *,
    now: float | None = None,
    budget: Budget | None = None,
    varies: Varying | None = None,
    rows: np.ndarray | None = None,
    rng: random.Random | None = None,
) -> MatchResult:
    """The symmetric match of one job against every slot (or the table's ``rows`` only,
    the result then in their order), and the job's Rank of each.

    With `budget`, raises BudgetExceeded past it; without, the default one
    (:func:`table_budget`) and, past it, no slot matches.

    ``varies``: rows of a table whose rows each stand for several ads that differ in the
    table's watched names (see :func:`_kleene`, whose preconditions the caller has
    checked); the job's Requirements are then evaluated in three-valued logic and the
    result's ``unknown`` holds the rows where they may differ among the ads."""
    tbl = slots if isinstance(slots, SlotTable) else SlotTable.from_ads(slots)
    n = tbl.n if rows is None else len(rows)
    if budget is None:
        try:
            return match_vector(
                job,
                tbl,
                now=now,
                budget=table_budget(tbl.n),
                varies=varies,
                rows=rows,
                rng=rng,
            )
        except BudgetExceeded:
            stats = KernelStats()
            return MatchResult(np.zeros(n, dtype=bool), np.zeros(n), 0, stats)
    stats = KernelStats()
    ev = _Evaluator(tbl, job, stats, now, budget, rng)
    unknown = None
    req = job.lookup("Requirements") if varies is not None else None
    if req is not None:
        assert varies is not None
        touched = tbl.touched
        ev.active.add((CONST, "requirements"))  # a reference back to it is UNDEFINED
        val, unknown = _kleene(ev, req, varies, rows)
        ev.active.discard((CONST, "requirements"))
        tbl.touched = touched  # what it read of the watched names is in ``unknown``
        stats.vector_evals += 1
        job_req = V.truth(val).is_true()
    else:
        job_req = V.truth(ev.top(_JOB_REQ, CONST, rows)).is_true()
    mask = job_req
    if mask.any():
        # the slots' own Requirements, with the job as TARGET; only where the job matched
        hit = np.flatnonzero(mask)
        sub = rows[hit] if rows is not None else None if len(hit) == n else hit
        slot_req = V.truth(ev.top(_JOB_REQ, ROWS, sub)).is_true()
        mask = np.zeros(n, dtype=bool)
        mask[hit] = slot_req
    rank = np.zeros(n, dtype=np.float64)
    if job.lookup("Rank") is not None:
        rv = ev.top(_RANK, CONST, rows)
        rank = _as_float(rv, n)
    return MatchResult(mask, rank, stats.fallbacks, stats, unknown)


@dataclass
class Varying:
    """Rows that each stand for several ads which differ in the table's watched names
    (``rows``), and the names whose values may follow them (``names``, the watched ones
    and those whose expressions reach one)."""

    rows: np.ndarray
    names: frozenset[str]
    _reads: dict[int, tuple[Expr, bool]] = field(default_factory=dict)

    def reads(self, node: Expr) -> bool:
        """Whether ``node`` names one of ``names`` (memoized: a request's tree is walked
        once a cycle)."""
        hit = self._reads.get(id(node))
        if hit is None or hit[0] is not node:
            found: set[str] = set()
            try:
                every_name(node, found)
                hit = (node, not found.isdisjoint(self.names))
            except DynamicReference:
                hit = (node, True)
            self._reads[id(node)] = hit
        return hit[1]

    def on(self, rows: np.ndarray) -> Varying:
        """The same names over other rows (a subset's), sharing what was walked."""
        return Varying(rows, self.names, self._reads)


def _kleene(
    ev: _Evaluator, node: Expr, varies: Varying, rows: np.ndarray | None = None
) -> tuple[Vec, np.ndarray]:
    """A job's Requirements over rows that each stand for several slots, which agree on
    every name but the table's watched ones, and on those agree in type: the value of
    each row (of its first slot) and where it may differ among the row's slots.

    The caller has checked (``slotclasses.kleene_safe``) that the expression is ``&&``,
    ``||`` and ``!`` over leaves whose watched reads pass only through operators whose
    result type follows from their operands' types. A leaf that read a watched name then
    has the same type on all of a row's slots; where that type is a boolean or a number
    (``varies``), its truth may differ, else its value is the same. The logic is
    ClassAd's three-valued one: ``x || true`` is true whatever boolean ``x`` is, and
    ``x && false`` false, which is how condor_submit's
    ``(TARGET.FileSystemDomain == MY.FileSystemDomain) || (TARGET.HasFileTransfer)``
    is decided per class while FileSystemDomain differs per machine.

    With ``rows``, over those rows of the table only; ``varies.rows`` is then theirs."""
    if not varies.reads(node):  # nothing in it can differ: the plain evaluator
        return ev.guarded(node, CONST, rows), np.zeros(ev.n(rows), dtype=bool)
    t = type(node)
    if t is Paren:
        return _kleene(ev, node.inner, varies, rows)
    if t is Unary and node.op == "!":
        v, u = _kleene(ev, node.operand, varies, rows)
        return V.unary("!", v), u
    if t is Binary and node.op in _LOGIC:
        lv, lu = _kleene(ev, node.left, varies, rows)
        if lv.uniform and not lu.any():  # as the plain evaluator, skip a decided right
            if lv.tag == E:
                return lv, lu
            tv = V.truth(lv)
            if V.is_const(tv) and tv.tag == B and bool(tv.i) == (node.op == "||"):
                return tv, lu
        rv, ru = _kleene(ev, node.right, varies, rows)
        lt, lf, l_undef, _le = V._bool_parts(V.truth(lv))
        rt, rf, _ru, _re = V._bool_parts(V.truth(rv))
        if node.op == "||":
            # a known true or error left decides; a known false/undefined one defers to
            # the right; a varying one is decided only by a right that is known true
            unk = np.where(lu, ru | ~rt, (lf | l_undef) & ru)
            return V.logical_or(lv, rv), unk
        unk = np.where(lu, ru | ~rf, (lt | l_undef) & ru)
        return V.logical_and(lv, rv), unk
    tbl = ev.t
    touched, tbl.touched = tbl.touched, False
    v = ev.guarded(node, CONST, rows)
    read, tbl.touched = tbl.touched, touched
    if not read:
        return v, np.zeros(ev.n(rows), dtype=bool)
    tags = v.tags()
    return v, varies.rows & ((tags == B) | (tags == I) | (tags == R))


def _as_float(v: Vec, n: int) -> np.ndarray:
    out = np.zeros(n, dtype=np.float64)
    tags = v.tags()
    if v.i is not None:
        m = (tags == I) | (tags == B)
        out[m] = np.broadcast_to(v.i, (n,))[m]
    if v.f is not None:
        m = tags == R
        out[m] = np.broadcast_to(v.f, (n,))[m]
    return out
