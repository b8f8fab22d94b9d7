"""The kernel's entry points: an expression compiled once and evaluated over tables, the
symmetric match of a job against every slot with its Rank, and the default budget."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import vector as V
from ..ad import ClassAd
from ..budget import EVAL_BUDGET, PER_AD_STEPS, Budget, BudgetExceeded
from ..parser import parse_expr
from ..tree import AttrRef, Expr, Select, unparse
from ..values import ERROR
from ..vector import B, I, R, Vec
from .evaluator import CONST, ROWS, KernelStats, TableEvaluator, vectorizable
from .kleene import Varying, kleene
from .table import SlotTable

if TYPE_CHECKING:
    import random


def _as_expr(e: Expr | str) -> Expr:
    return parse_expr(e) if isinstance(e, str) else e


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
        ev = TableEvaluator(
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
    table's watched names (see :func:`kleene`, whose preconditions the caller has
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
    ev = TableEvaluator(tbl, job, stats, now, budget, rng)
    unknown = None
    req = job.lookup("Requirements") if varies is not None else None
    if req is not None:
        assert varies is not None
        touched = tbl.touched
        ev.active.add((CONST, "requirements"))  # a reference back to it is UNDEFINED
        val, unknown = kleene(ev, req, varies, rows)
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
