"""Three-valued matching over slot classes: a job's Requirements over rows that each stand
for several slots, and where the answer may differ among a row's slots."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .. import vector as V
from ..refs import DynamicReference, every_name
from ..tree import Binary, Expr, Paren, Unary
from ..vector import B, E, I, R, Vec
from .evaluator import CONST, LOGIC, TableEvaluator


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


def kleene(
    ev: TableEvaluator, node: Expr, varies: Varying, rows: np.ndarray | None = None
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
        return kleene(ev, node.inner, varies, rows)
    if t is Unary and node.op == "!":
        v, u = kleene(ev, node.operand, varies, rows)
        return V.unary("!", v), u
    if t is Binary and node.op in LOGIC:
        lv, lu = kleene(ev, node.left, varies, rows)
        if lv.uniform and not lu.any():  # as the plain evaluator, skip a decided right
            if lv.tag == E:
                return lv, lu
            tv = V.truth(lv)
            if V.is_const(tv) and tv.tag == B and bool(tv.i) == (node.op == "||"):
                return tv, lu
        rv, ru = kleene(ev, node.right, varies, rows)
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
