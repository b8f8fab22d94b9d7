"""The vectorised evaluator: a tree evaluated over a table's rows at once, one ad held
constant, with numpy; what it does not vectorise it evaluates row by row with the scalar
evaluator (a fallback, counted in :class:`KernelStats`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import vector as V
from ..ad import ClassAd
from ..budget import Budget
from ..evaluate import EvalContext, subscript
from ..evaluate import evaluate as scalar_evaluate
from ..functions import call as scalar_call
from ..tree import (
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
    unparse,
    walk,
)
from ..values import ERROR, UNDEFINED
from ..vector import B, E, I, R, S, U, Vec, X
from .column import literal_of, value_keys
from .table import SlotTable

if TYPE_CHECKING:
    import random

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
LOGIC = {"&&", "||"}


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


class TableEvaluator:
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
            ctx = EvalContext(None, None, self.now, self.rng, budget=self.budget)
            if self._holds_ads(base):
                raise _Fallback  # ad[...] evaluates in the nested ad's scope
            return self.rowwise(lambda b, i: subscript(b, i, ctx), [base, index], rows)
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
            if op in LOGIC:
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
