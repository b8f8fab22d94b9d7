"""Slot attributes as columns packed by kind: what a columnar snapshot carries from the
collector to the negotiator (``mockpool.v1.SlotColumn``), and the one conversion between
that message and the cores.

A column holds one attribute over the slots of a snapshot, in its slot order: a kind
per row (missing, a literal of each type, or an expression) and the values of each kind
in row order, strings and expressions as tables of distinct values with an index per
row. Reading it is numpy work, not a decoding of ads: the negotiator builds its match
columns from it (:meth:`PackedColumn.column`) and decodes a whole ad only where it needs
one. A column that does not hold together (a row count that is not the snapshot's, a
kind that is none, a value of the wrong type for its kind, too few or too many values,
an expression that does not parse) is refused with an error naming the attribute and
the slot.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .classad import ERROR, UNDEFINED, ClassAdSyntaxError, unparse
from .classad.kernel import Column, literal_of
from .classad.tree import Expr, Literal
from .classad.vector import B, E, I, R, S, StringPool, U, Vec
from .v1 import collector_pb2 as cpb
from .wire import WireError, parse_text

__all__ = [
    "BOOL",
    "ERROR_KIND",
    "EXPR",
    "INT",
    "KIND_NAMES",
    "MISSING",
    "REAL",
    "STRING",
    "UNDEFINED_KIND",
    "PackedColumn",
    "column_from_pb",
    "column_to_pb",
    "kind_of",
]

# a row's kind: the values of mockpool.v1.ColumnKind
MISSING, BOOL, INT, REAL, STRING, UNDEFINED_KIND, ERROR_KIND, EXPR = range(8)
KIND_NAMES = ("MISSING", "BOOL", "INT", "REAL", "STRING", "UNDEFINED", "ERROR", "EXPR")
# the kernel's literal tag of each kind (EXPR rows are the column's expressions)
_TAG = np.array([U, B, I, R, S, U, E, U], dtype=np.int8)
_PLAIN_KIND = {bool: BOOL, int: INT, float: REAL, str: STRING}


def kind_of(e: Expr | None) -> tuple[int, Any]:
    """The kind of a bound expression and its value (the expression for EXPR). A
    negated number literal (``-5`` parses as ``-(5)``) is a literal, as the match
    kernel reads it."""
    if e is None:
        return MISSING, None
    if type(e) is Literal:
        v = e.value
        kind = _PLAIN_KIND.get(type(v))
        if kind is not None:
            return kind, v
        if v is UNDEFINED:
            return UNDEFINED_KIND, None
        if v is ERROR:
            return ERROR_KIND, None
        return EXPR, e  # a list or a nested ad: sent as its text
    ok, v = literal_of(e)
    if ok and type(v) in (int, float):
        return _PLAIN_KIND[type(v)], v
    return EXPR, e


@dataclass(frozen=True, eq=False)
class PackedColumn:
    """One slot attribute over ``len(kinds)`` rows. ``ints`` holds the BOOL and INT rows'
    values in row order, ``reals`` the REAL rows'; ``string_rows`` (``expr_rows``) each
    STRING (EXPR) row's index into ``strings`` (``exprs``)."""

    name: str
    kinds: np.ndarray  # uint8
    ints: np.ndarray  # int64
    reals: np.ndarray  # float64
    strings: Sequence[str]
    string_rows: np.ndarray  # int64
    exprs: Sequence[Expr]
    expr_rows: np.ndarray  # int64

    def column(self, pool: StringPool) -> Column:
        """The match kernel's column of these rows (as ``SlotTable`` would read it from
        the ads), string codes from ``pool``."""
        n, kinds = len(self.kinds), self.kinds
        key = self.name.lower()
        tag = _TAG[kinds]
        ival = np.zeros(n, dtype=np.int64)
        fval = np.zeros(n, dtype=np.float64)
        sval = np.zeros(n, dtype=np.int64)
        ival[(kinds == BOOL) | (kinds == INT)] = self.ints
        fval[kinds == REAL] = self.reals
        if len(self.string_rows):
            codes = np.fromiter(map(pool.code, self.strings), np.int64, len(self.strings))
            sval[kinds == STRING] = codes[self.string_rows]
        groups: dict[str, tuple[list[np.ndarray], Expr]] = {}
        if len(self.expr_rows):
            at = np.flatnonzero(kinds == EXPR)
            for k, e in enumerate(self.exprs):
                rows = at[self.expr_rows == k]
                if not len(rows):
                    continue
                kind, v = kind_of(e)
                if kind != EXPR:  # a literal sent as text
                    tag[rows] = _TAG[kind]
                    if kind in (BOOL, INT):
                        ival[rows] = v
                    elif kind == REAL:
                        fval[rows] = v
                    elif kind == STRING:
                        sval[rows] = pool.code(v)
                    continue
                g = groups.setdefault(unparse(e), ([], e))
                g[0].append(rows)
        lit = Vec(n, tag, ival, fval, sval).simplify()
        lit.src = key
        # the expressions in the order of their first rows, as the ads would give them
        exprs = sorted(
            ((np.sort(np.concatenate(rs)), e) for rs, e in groups.values()),
            key=lambda g: int(g[0][0]),
        )
        return Column(key, kinds != MISSING, lit, exprs)


_INT64, _FLOAT64, _UINT32 = np.dtype("<i8"), np.dtype("<f8"), np.dtype("<u4")


def column_to_pb(col: PackedColumn) -> cpb.SlotColumn:
    return cpb.SlotColumn(
        name=col.name,
        kinds=col.kinds.astype(np.uint8).tobytes(),
        ints=col.ints.astype(_INT64).tobytes(),
        reals=col.reals.astype(_FLOAT64).tobytes(),
        strings=col.strings,
        string_rows=col.string_rows.astype(_UINT32).tobytes(),
        exprs=[unparse(e) for e in col.exprs],
        expr_rows=col.expr_rows.astype(_UINT32).tobytes(),
    )


def _array(raw: bytes, dtype: np.dtype, what: str, where: str) -> np.ndarray:
    if len(raw) % dtype.itemsize:
        raise WireError(
            f"{where}: {len(raw)} bytes of {what} are not whole {dtype.itemsize}-byte values"
        )
    return np.frombuffer(raw, dtype=dtype)


def column_from_pb(msg: cpb.SlotColumn, slot_names: Sequence[str]) -> PackedColumn:
    """The column a ``SlotColumn`` carries over the slots ``slot_names`` (the snapshot's
    order); WireError naming the attribute, and the slot where one is at fault, when it
    does not hold together."""
    name = msg.name
    if not name.strip():
        raise WireError("snapshot column without a name")
    n = len(slot_names)
    kinds = np.frombuffer(msg.kinds, dtype=np.uint8)
    where = f"snapshot column {name!r}"
    if len(kinds) != n:
        raise WireError(f"{where} has {len(kinds)} rows for the snapshot's {n} slots")

    def slot(row: int) -> str:
        return f"{where}, slot {slot_names[row]!r}"

    bad = np.flatnonzero(kinds > EXPR)
    if len(bad):
        r = int(bad[0])
        raise WireError(f"{slot(r)}: kind {int(kinds[r])} is not a column kind")
    ints = _array(msg.ints, _INT64, "integers", where).astype(np.int64)
    reals = _array(msg.reals, _FLOAT64, "reals", where).astype(np.float64)
    string_rows = _array(msg.string_rows, _UINT32, "string rows", where).astype(np.int64)
    expr_rows = _array(msg.expr_rows, _UINT32, "expression rows", where).astype(np.int64)
    for values, wanted, what in (
        (ints, (BOOL, INT), "integer"),
        (reals, (REAL,), "real"),
        (string_rows, (STRING,), "string"),
        (expr_rows, (EXPR,), "expression"),
    ):
        rows = np.flatnonzero(np.isin(kinds, wanted))
        if len(values) < len(rows):
            r = int(rows[len(values)])
            raise WireError(
                f"{slot(r)}: a {KIND_NAMES[int(kinds[r])]} row without its {what} value"
                f" ({len(values)} for {len(rows)} rows)"
            )
        if len(values) > len(rows):
            raise WireError(
                f"{where} has {len(values)} {what} values for its {len(rows)} rows of that type"
            )
    at = np.flatnonzero((kinds == BOOL) | (kinds == INT))
    odd = np.flatnonzero((kinds[at] == BOOL) & ((ints < 0) | (ints > 1)))
    if len(odd):
        k = int(odd[0])
        raise WireError(f"{slot(int(at[k]))}: a BOOL row holds {int(ints[k])}, not 0 or 1")
    for index, table, what, kind in (
        (string_rows, msg.strings, "string", STRING),
        (expr_rows, msg.exprs, "expression", EXPR),
    ):
        out = np.flatnonzero(index >= len(table))
        if len(out):
            k = int(out[0])
            r = int(np.flatnonzero(kinds == kind)[k])
            raise WireError(f"{slot(r)}: {what} {int(index[k])} of a table of {len(table)}")
    exprs: list[Expr] = []
    for k, text in enumerate(msg.exprs):
        try:
            exprs.append(parse_text(text))  # one tree per text, cycle after cycle
        except ClassAdSyntaxError as exc:
            used = np.flatnonzero(expr_rows == k)
            who = slot(int(np.flatnonzero(kinds == EXPR)[used[0]])) if len(used) else where
            raise WireError(f"{who}: expression {text[:200]!r} does not parse: {exc}") from None
    return PackedColumn(name, kinds, ints, reals, list(msg.strings), string_rows, exprs, expr_rows)
