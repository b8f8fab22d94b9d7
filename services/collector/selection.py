"""What a query's constraint selects and what its projection keeps: the constraint
evaluated over many ads at once by the match kernel (the ad-by-ad evaluator where the
kernel cannot), within an evaluation budget."""

from __future__ import annotations

import logging
import random
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..classad import BudgetExceeded, ClassAd, ClassAdSyntaxError, evaluate, parse_expr, unparse
from ..classad.kernel import CompiledExpr, SlotTable, table_budget
from ..classad.tree import Expr
from .errors import BadConstraint, CostlyConstraint

if TYPE_CHECKING:
    from .store import AdRecord

log = logging.getLogger(__name__)

ALWAYS_PROJECTED = frozenset({"mytype"})


def matching(records: list[AdRecord], constraint: str | Expr | None, now: float) -> list[AdRecord]:
    """The records whose constraint is true. Reads only the records (their ads never
    change), so it may run off the store's thread. Raises :class:`BadConstraint` and
    :class:`CostlyConstraint` as :meth:`AdStore.select` does."""
    expr = parse_constraint(constraint)
    if not records or expr is None:
        return records
    try:
        rows = selected_rows(expr, [r.ad for r in records], now)
    except BudgetExceeded as exc:
        raise CostlyConstraint(f"constraint {short_text(expr)} is too costly: {exc}") from None
    return [records[i] for i in rows]


def parse_constraint(constraint: str | Expr | None) -> Expr | None:
    """The constraint as an expression; None for "no constraint" (empty or blank text)."""
    if constraint is None or isinstance(constraint, Expr):
        return constraint
    if not constraint.strip():
        return None
    try:
        return parse_expr(constraint)
    except ClassAdSyntaxError as exc:
        raise BadConstraint(f"bad constraint {constraint!r}: {exc}") from None


def projection_keys(
    projection: Iterable[str], always: frozenset[str] = ALWAYS_PROJECTED
) -> frozenset[str] | None:
    """Lower-case attribute names a projection keeps; None when it keeps everything."""
    names = {p.strip().lower() for p in projection if p and p.strip()}
    return frozenset(names | always) if names else None


def show_value(value: Any) -> str:
    """A ClassAd value as the messages print it (strings quoted, UNDEFINED as undefined)."""
    return repr(value) if isinstance(value, str) else str(value)


def is_selected(value: Any) -> bool:
    # Old ClassAd semantics (HTCondor's daemons): true, or a non-zero number.
    if value is True:
        return True
    return type(value) in (int, float) and value != 0


def short_text(expr: Expr, limit: int = 200) -> str:
    # a message never echoes a huge constraint whole
    text = unparse(expr)
    return repr(text if len(text) <= limit else text[:limit] + "...")


def selected_rows(expr: Expr, ads: list[ClassAd], now: float) -> list[int]:
    """Indices of the ads (as MY, no TARGET) for which ``expr`` selects. Raises
    BudgetExceeded when the constraint costs more than the default budget for the ads."""
    rng = random.Random(now)  # random(): a generator per query (queries run off the loop too)
    try:
        table = SlotTable.from_ads(ads)
        budget = table_budget(len(ads))
        mask = CompiledExpr(expr).requirements_mask(
            table, None, "target", now=now, rng=rng, budget=budget
        )
        return mask.nonzero()[0].tolist()
    except BudgetExceeded:
        raise
    except Exception:  # the kernel must agree with the scalar evaluator; never fail a query
        log.exception("constraint %s: match kernel failed; evaluating ad by ad", expr)
        budget = table_budget(len(ads))
        return [
            i
            for i, ad in enumerate(ads)
            if is_selected(evaluate(expr, ad, None, now=now, rng=rng, budget=budget))
        ]
