"""A table's column: one attribute over all rows, its literal values as a vector and the
rows whose values are expressions grouped by expression; and the keys that tell two
rows' literal values apart."""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from .. import vector as V
from ..tree import Expr, Literal, Unary
from ..values import wrap_int
from ..vector import B, I, R, S, Vec


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
