"""Three-valued ClassAd values over many rows at once, and the operators on them.

A :class:`Vec` holds one value per row: a type tag per row (or one tag for all rows) and
numpy payloads. Operators work on whole columns; where rows mix types, the rows are split
by tag combination and each combination is computed with the uniform-type kernels, so
there is exactly one implementation of each rule. The rules are those of
:mod:`mockpool.classad.operators` (the scalar reference).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .operators import fold
from .values import ERROR, UNDEFINED

U, E, B, I, R, S, X = range(7)  # noqa: E741 -- undefined, error, boolean, integer, real, string, other
INT_MIN = np.int64(-(2**63))
INT_MAX = np.int64(2**63 - 1)


class StringPool:
    """Interns strings to integer codes; case-folded codes make `==` an integer compare."""

    def __init__(self) -> None:
        self.strings: list[str] = []
        self.codes: dict[str, int] = {}
        self.fold_codes: dict[str, int] = {}
        self._fold_of: list[int] = []
        self._fold_arr: np.ndarray | None = None
        self._rank_arr: np.ndarray | None = None

    def code(self, s: str) -> int:
        c = self.codes.get(s)
        if c is None:
            c = len(self.strings)
            self.strings.append(s)
            self.codes[s] = c
            f = fold(s)
            fc = self.fold_codes.setdefault(f, len(self.fold_codes))
            self._fold_of.append(fc)
            self._fold_arr = None
            self._rank_arr = None
        return c

    def fold_array(self) -> np.ndarray:
        """fold code for each exact code."""
        if self._fold_arr is None:
            self._fold_arr = np.asarray(self._fold_of, dtype=np.int64)
        return self._fold_arr

    def rank_array(self) -> np.ndarray:
        """For each exact code, the rank of its case-folded text in sorted order."""
        if self._rank_arr is None:
            folded = sorted(self.fold_codes, key=lambda t: t.encode())
            rank_of_fold = np.empty(len(folded), dtype=np.int64)
            for r, t in enumerate(folded):
                rank_of_fold[self.fold_codes[t]] = r
            self._rank_arr = (
                rank_of_fold[self.fold_array()] if self.strings else np.zeros(0, np.int64)
            )
        return self._rank_arr


class Vec:
    """One ClassAd value per row. `tag` is an int (all rows) or an int8 array."""

    __slots__ = ("f", "i", "n", "o", "s", "src", "tag")

    def __init__(
        self, n: int, tag: Any, i: Any = None, f: Any = None, s: Any = None, o: Any = None
    ):
        self.src: str | None = None  # the column this Vec is, unchanged (enables cached uniques)
        self.n = n
        self.tag = tag
        self.i = i
        self.f = f
        self.s = s
        self.o = o

    @property
    def uniform(self) -> bool:
        return not isinstance(self.tag, np.ndarray)

    def tags(self) -> np.ndarray:
        if isinstance(self.tag, np.ndarray):
            return self.tag
        return np.full(self.n, self.tag, dtype=np.int8)

    def take(self, rows: np.ndarray) -> Vec:
        def t(a: Any) -> Any:
            return a[rows] if isinstance(a, np.ndarray) and a.ndim == 1 else a

        tag = self.tag[rows] if isinstance(self.tag, np.ndarray) else self.tag
        return Vec(len(rows), tag, t(self.i), t(self.f), t(self.s), t(self.o))

    def simplify(self) -> Vec:
        """Turn an all-same tag array into a single tag."""
        if isinstance(self.tag, np.ndarray) and self.n:
            t0 = int(self.tag[0])
            if (self.tag == t0).all():
                self.tag = t0
        return self

    def is_true(self) -> np.ndarray:
        """Rows whose value is boolean true (a Requirements mask)."""
        if self.uniform:
            if self.tag != B:
                return np.zeros(self.n, dtype=bool)
            return np.broadcast_to(self.i != 0, (self.n,)).copy()
        return (self.tag == B) & (np.broadcast_to(self.i, (self.n,)) != 0)

    def to_values(self, pool: StringPool) -> list[Any]:
        """Every row's value (as ``value_at`` gives it), a tag's rows at a time."""
        n = self.n
        if self.uniform:
            return self._values_of(int(self.tag), None, n, pool)
        out: list[Any] = [None] * n
        for t in np.unique(self.tag).tolist():
            rows = np.flatnonzero(self.tag == t)
            for r, v in zip(rows.tolist(), self._values_of(t, rows, n, pool), strict=True):
                out[r] = v
        return out

    def _values_of(self, t: int, rows: np.ndarray | None, n: int, pool: StringPool) -> list[Any]:
        """The values of ``rows`` (None: all), whose tag is ``t``."""
        k = n if rows is None else len(rows)

        def payload(a: Any) -> list[Any]:
            if isinstance(a, np.ndarray) and a.ndim == 1:
                return (a if rows is None else a[rows]).tolist()
            return [a] * k

        if t == U:
            return [UNDEFINED] * k
        if t == E:
            return [ERROR] * k
        if t == B:
            return [bool(x) for x in payload(self.i)]
        if t == I:
            return [int(x) for x in payload(self.i)]
        if t == R:
            return [float(x) for x in payload(self.f)]
        if t == S:
            strings = pool.strings
            return [strings[int(c)] for c in payload(self.s)]
        return payload(self.o)

    def value_at(self, r: int, pool: StringPool, tag: int | None = None) -> Any:
        t = (
            self.tag
            if tag is None and self.uniform
            else (tag if tag is not None else int(self.tag[r]))
        )

        def pick(a: Any) -> Any:
            return a[r] if isinstance(a, np.ndarray) and a.ndim == 1 else a

        if t == U:
            return UNDEFINED
        if t == E:
            return ERROR
        if t == B:
            return bool(pick(self.i))
        if t == I:
            return int(pick(self.i))
        if t == R:
            return float(pick(self.f))
        if t == S:
            return pool.strings[int(pick(self.s))]
        return pick(self.o)


def const(value: Any, n: int, pool: StringPool) -> Vec:
    """A Python value as a Vec whose payload is a scalar (numpy broadcasts it)."""
    if value is UNDEFINED:
        return Vec(n, U)
    if value is ERROR:
        return Vec(n, E)
    t = type(value)
    if t is bool:
        return Vec(n, B, i=np.int64(value))
    if t is int:
        return Vec(n, I, i=np.int64(value))
    if t is float:
        return Vec(n, R, f=np.float64(value))
    if t is str:
        return Vec(n, S, s=np.int64(pool.code(value)))
    o = np.empty(1, dtype=object)
    o[0] = value
    return Vec(n, X, o=o[0])


def is_const(v: Vec) -> bool:
    """True when every row holds the same value (uniform tag, scalar payload)."""
    if not v.uniform:
        return False
    for a in (v.i, v.f, v.s):
        if isinstance(a, np.ndarray) and a.ndim == 1:
            return False
    return not (isinstance(v.o, np.ndarray) and v.o.ndim == 1 and v.o.dtype == object)


def full(a: Any, n: int, dtype: Any) -> np.ndarray:
    if isinstance(a, np.ndarray) and a.ndim == 1:
        return a
    return np.full(n, a if a is not None else 0, dtype=dtype)


class Builder:
    """Assemble a mixed Vec from pieces computed on row subsets."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.tag = np.zeros(n, dtype=np.int8)  # U by default
        self.i: np.ndarray | None = None
        self.f: np.ndarray | None = None
        self.s: np.ndarray | None = None
        self.o: np.ndarray | None = None

    def put(self, rows: np.ndarray, v: Vec) -> None:
        if not len(rows):
            return
        self.tag[rows] = v.tag
        tags = v.tags()
        if v.i is not None and ((tags == B) | (tags == I)).any():
            if self.i is None:
                self.i = np.zeros(self.n, dtype=np.int64)
            self.i[rows] = v.i
        if v.f is not None and (tags == R).any():
            if self.f is None:
                self.f = np.zeros(self.n, dtype=np.float64)
            self.f[rows] = v.f
        if v.s is not None and (tags == S).any():
            if self.s is None:
                self.s = np.zeros(self.n, dtype=np.int64)
            self.s[rows] = v.s
        if v.o is not None and (tags == X).any():
            if self.o is None:
                self.o = np.empty(self.n, dtype=object)
            if isinstance(v.o, np.ndarray) and v.o.ndim == 1 and v.o.dtype == object:
                self.o[rows] = v.o
            else:
                for r in rows:
                    self.o[r] = v.o

    def build(self) -> Vec:
        return Vec(self.n, self.tag, self.i, self.f, self.s, self.o).simplify()


def split_apply(vs: list[Vec], fn) -> Vec:
    """Apply `fn` (which needs uniform tags) to each combination of row tags."""
    n = vs[0].n
    if all(v.uniform for v in vs):
        return fn(*vs)
    key = np.zeros(n, dtype=np.int64)
    for v in vs:
        key = key * 8 + (v.tag if v.uniform else v.tag.astype(np.int64))
    counts = np.bincount(key)
    b = Builder(n)
    for k in np.flatnonzero(counts):
        rows = np.flatnonzero(key == k)
        b.put(rows, fn(*[v.take(rows).simplify() for v in vs]))
    return b.build()


def where(cond: np.ndarray, a: Vec, b: Vec) -> Vec:
    """Row-wise choice between two Vecs."""
    n = a.n
    if cond.all():
        return a
    if not cond.any():
        return b
    bl = Builder(n)
    rows_a = np.flatnonzero(cond)
    rows_b = np.flatnonzero(~cond)
    bl.put(rows_a, a.take(rows_a) if not is_const(a) else a_resized(a, len(rows_a)))
    bl.put(rows_b, b.take(rows_b) if not is_const(b) else a_resized(b, len(rows_b)))
    return bl.build()


def a_resized(v: Vec, n: int) -> Vec:
    return Vec(n, v.tag, v.i, v.f, v.s, v.o)


# -- uniform kernels ------------------------------------------------------------------
def _num_payload(v: Vec) -> tuple[Any, bool]:
    """(payload, is_real) for a B/I/R uniform Vec."""
    if v.tag == R:
        return v.f, True
    return v.i, False


def _with_errors(n: int, ok_tag: int, bad: np.ndarray | None, **payload: Any) -> Vec:
    if bad is None or not np.any(bad):
        return Vec(n, ok_tag, **payload)
    tag = np.where(bad, np.int8(E), np.int8(ok_tag)).astype(np.int8)
    if np.ndim(tag) == 0:
        tag = np.full(n, tag, dtype=np.int8)
    return Vec(n, tag, **payload).simplify()


def arith(op: str, a: Vec, b: Vec) -> Vec:
    def k(a: Vec, b: Vec) -> Vec:
        n = a.n
        ta, tb = a.tag, b.tag
        if ta == E or tb == E:
            return Vec(n, E)
        if ta == U or tb == U:
            return Vec(n, U)
        if ta not in (B, I, R) or tb not in (B, I, R):
            return Vec(n, E)
        x, xr = _num_payload(a)
        y, yr = _num_payload(b)
        if not xr and not yr:
            x = np.asarray(x, dtype=np.int64)
            y = np.asarray(y, dtype=np.int64)
            with np.errstate(all="ignore"):
                if op == "+":
                    return Vec(n, I, i=x + y)
                if op == "-":
                    return Vec(n, I, i=x - y)
                if op == "*":
                    return Vec(n, I, i=x * y)
                zero = y == 0
                ys = np.where(zero, 1, y)
                overflow = (x == INT_MIN) & (ys == -1)
                ys2 = np.where(overflow, 1, ys)
                if op == "/":
                    q = np.abs(x) // np.abs(ys2)
                    q = np.where((x < 0) != (ys2 < 0), -q, q)
                    q = np.where(overflow, INT_MAX, q)
                    return _with_errors(n, I, zero, i=q)
                r = np.fmod(x, ys2)
                r = np.where(overflow, 0, r)
                return _with_errors(n, I, zero, i=r)
        if op == "%":
            return Vec(n, E)
        xf = np.asarray(x, dtype=np.float64)
        yf = np.asarray(y, dtype=np.float64)
        with np.errstate(all="ignore"):
            if op == "+":
                r = xf + yf
            elif op == "-":
                r = xf - yf
            elif op == "*":
                r = xf * yf
            else:
                r = xf / yf
        # as the scalar rule: +infinity is ERROR, -infinity and NaN are values
        return _with_errors(n, R, r == np.inf, f=r)

    return split_apply([a, b], k)


def compare(op: str, a: Vec, b: Vec, pool: StringPool) -> Vec:
    def k(a: Vec, b: Vec) -> Vec:
        n = a.n
        ta, tb = a.tag, b.tag
        if ta == E or tb == E:
            return Vec(n, E)
        if ta == U or tb == U:
            return Vec(n, U)
        if ta == S and tb == S:
            if op in ("==", "!=") and (np.ndim(a.s) == 0 or np.ndim(b.s) == 0):
                # column against a constant: compare exact codes with the few codes whose
                # folded text equals the constant's, instead of gathering fold codes per row
                col, c = (a.s, b.s) if np.ndim(b.s) == 0 else (b.s, a.s)
                fa = pool.fold_array()
                same = np.flatnonzero(fa == fa[int(c)])
                r = col == same[0]
                for code in same[1:]:
                    r = r | (col == code)
                return Vec(n, B, i=r if op == "==" else ~r)
            if op in ("==", "!="):
                fa = pool.fold_array()
                x, y = fa[a.s], fa[b.s]
            else:
                ra = pool.rank_array()
                x, y = ra[a.s], ra[b.s]
        elif ta in (B, I, R) and tb in (B, I, R):
            x, xr = _num_payload(a)
            y, yr = _num_payload(b)
            if xr or yr:
                x = np.asarray(x, dtype=np.float64)
                y = np.asarray(y, dtype=np.float64)
        else:
            return Vec(n, E)
        if op == "==":
            r = x == y
        elif op == "!=":
            r = x != y
        elif op == "<":
            r = x < y
        elif op == "<=":
            r = x <= y
        elif op == ">":
            r = x > y
        else:
            r = x >= y
        return Vec(n, B, i=r)  # boolean payloads may be bool arrays: cheaper to combine

    return split_apply([a, b], k)


def identical(a: Vec, b: Vec, negate: bool) -> Vec:
    def k(a: Vec, b: Vec) -> Vec:
        n = a.n
        ta, tb = a.tag, b.tag
        if ta == X and tb == X:
            return Vec(n, E)
        if ta != tb:
            r: Any = np.int64(0)
        elif ta in (U, E):
            r = np.int64(1)
        elif ta in (B, I):
            r = (
                (a.i == b.i).astype(np.int64)
                if np.ndim(a.i) or np.ndim(b.i)
                else np.int64(a.i == b.i)
            )
        elif ta == R:
            r = np.asarray(a.f == b.f, dtype=np.int64)
        elif ta == S:
            r = np.asarray(a.s == b.s, dtype=np.int64)
        else:  # one side X, the other not: different types
            r = np.int64(0)
        if negate:
            r = 1 - r
        return Vec(n, B, i=r)

    return split_apply([a, b], k)


def bitwise(op: str, a: Vec, b: Vec) -> Vec:
    def k(a: Vec, b: Vec) -> Vec:
        n = a.n
        ta, tb = a.tag, b.tag
        if ta == E or tb == E:
            return Vec(n, E)
        if ta == U or tb == U:
            return Vec(n, U)
        if ta != I or tb != I:
            return Vec(n, E)
        x = np.asarray(a.i, dtype=np.int64)
        y = np.asarray(b.i, dtype=np.int64)
        if op == "&":
            return Vec(n, I, i=x & y)
        if op == "|":
            return Vec(n, I, i=x | y)
        if op == "^":
            return Vec(n, I, i=x ^ y)
        sh = (y & 63).astype(np.uint64)
        if op == "<<":
            return Vec(n, I, i=(x.astype(np.uint64) << sh).astype(np.int64))
        arith_shift = x >> sh.astype(np.int64)
        if op == ">>":  # negatives as the scalar rule: unshifted for count < 0, -1 from 64
            neg = np.where(y < 0, x, np.where(y >= 64, -1, x >> np.clip(y, 0, 63)))
            return Vec(n, I, i=np.where(x >= 0, arith_shift, neg))
        # >>> as the scalar rule: negatives are masked with ~(-1 << ((64 - count) & 63))
        msh = ((64 - y) & 63).astype(np.uint64)
        mask = ~(
            (np.full(np.shape(msh), -1, dtype=np.int64).astype(np.uint64) << msh).astype(np.int64)
        )
        return Vec(n, I, i=np.where(x >= 0, arith_shift, arith_shift & mask))

    return split_apply([a, b], k)


def truth(v: Vec) -> Vec:
    """Logical-context value: B rows, U rows, E rows."""

    def k(v: Vec) -> Vec:
        t = v.tag
        if t == B:
            return v
        if t == I:
            return Vec(v.n, B, i=np.not_equal(v.i, 0))
        if t == R:
            return Vec(v.n, B, i=np.not_equal(v.f, 0.0))
        if t == U:
            return Vec(v.n, U)
        return Vec(v.n, E)

    return split_apply([v], k)


def _bool_parts(v: Vec) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(true, false, undefined, error) row masks of a truth Vec."""
    n = v.n
    if v.uniform:
        z = np.zeros(n, dtype=bool)
        if v.tag == B:
            t = np.broadcast_to(np.asarray(v.i) != 0, (n,))
            return t, ~t, z, z
        if v.tag == U:
            return z, z, ~z, z
        return z, z, z, ~z
    tg = v.tag
    val = np.broadcast_to(np.asarray(v.i) != 0, (n,)) if v.i is not None else np.zeros(n, bool)
    isb = tg == B
    return isb & val, isb & ~val, tg == U, tg == E


def _from_parts(n: int, t: np.ndarray, u: np.ndarray, e: np.ndarray) -> Vec:
    if not u.any() and not e.any():
        return Vec(n, B, i=t)
    tag = np.full(n, B, dtype=np.int8)
    tag[u] = U
    tag[e] = E
    return Vec(n, tag, i=t.astype(np.int64)).simplify()


def logical_and(a: Vec, b: Vec) -> Vec:
    n = a.n
    if a.uniform and b.uniform and a.tag == B and b.tag == B:
        return Vec(n, B, i=np.logical_and(a.i, b.i))
    at, af, au, ae = _bool_parts(truth(a))
    bt, bf, _bu, be = _bool_parts(truth(b))
    # false && _ = false; error && _ = error; true && x = x; undefined && false = false,
    # undefined && error = error, otherwise undefined.
    rf = af | (at & bf) | (au & bf)
    re_ = ae | (at & be) | (au & be)
    rt = at & bt
    ru = ~(rf | re_ | rt)
    return _from_parts(n, rt, ru, re_)


def logical_or(a: Vec, b: Vec) -> Vec:
    n = a.n
    if a.uniform and b.uniform and a.tag == B and b.tag == B:
        return Vec(n, B, i=np.logical_or(a.i, b.i))
    at, af, au, ae = _bool_parts(truth(a))
    bt, bf, _bu, be = _bool_parts(truth(b))
    rt = at | (af & bt) | (au & bt)
    re_ = (ae | (af & be) | (au & be)) & ~at
    rf = af & bf
    ru = ~(rt | re_ | rf)
    return _from_parts(n, rt, ru, re_)


def unary(op: str, v: Vec) -> Vec:
    def k(v: Vec) -> Vec:
        n, t = v.n, v.tag
        if t == E:
            return Vec(n, E)
        if t == U:
            return Vec(n, U)
        if op == "!":
            if t == B:
                return Vec(n, B, i=np.logical_not(v.i))
            if t == I:
                return Vec(n, B, i=np.asarray(v.i == 0, dtype=np.int64))
            if t == R:
                return Vec(n, B, i=np.asarray(v.f == 0.0, dtype=np.int64))
            return Vec(n, E)
        if op == "~":
            return Vec(n, I, i=~np.asarray(v.i, dtype=np.int64)) if t == I else Vec(n, E)
        if t == I:
            with np.errstate(all="ignore"):
                return Vec(n, I, i=-np.asarray(v.i, dtype=np.int64) if op == "-" else v.i)
        if t == R:
            return Vec(n, R, f=-np.asarray(v.f) if op == "-" else v.f)
        return Vec(n, E)

    return split_apply([v], k)
