"""The scalar evaluator: the reference semantics every other evaluator must agree with.

Scoping follows HTCondor's daemons (old ClassAd semantics): a bare name is looked up in
the ad that holds the expression, then its enclosing ads, then TARGET. `MY.x` and
`TARGET.x` look only in that ad. An attribute is evaluated in the scope of the ad it was
found in, so a slot attribute reached from a job sees the slot as MY and the job as
TARGET. A reference back to an attribute that is being evaluated is UNDEFINED, as in
HTCondor (so `a = a + 1` is UNDEFINED and nothing loops).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .ad import ClassAd, use_evaluator
from .budget import Budget, BudgetExceeded
from .errors import MissingEvalInput
from .functions import call
from .operators import (
    ARITH_OPS,
    BITWISE_OPS,
    COMPARE_OPS,
    arith,
    bitwise,
    compare,
    identical,
    truth,
    unary,
)
from .parser import parse_expr
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
)
from .values import ERROR, UNDEFINED

if TYPE_CHECKING:
    import random

MAX_REFERENCE_DEPTH = 200  # attribute-to-attribute chains deeper than this are ERROR


class EvalContext:
    """What one evaluation needs besides the tree: the two ads, the caller's date
    (``now``: what time() gives) and generator (``rng``: what random() draws from), and
    the step budget it may spend (a fresh default one unless given). Without ``now`` or
    ``rng``, an expression that reads them raises MissingEvalInput: never the wall clock
    or the process's shared generator. ``ev`` is the evaluator itself: a function of the
    table (below this module) evaluates its arguments with it."""

    __slots__ = ("active", "alternates", "budget", "ev", "now", "parents", "rng", "targets")

    def __init__(
        self,
        my: ClassAd | None,
        target: ClassAd | None,
        now: float | None = None,
        rng: random.Random | None = None,
        budget: Budget | None = None,
    ) -> None:
        self.budget = budget if budget is not None else Budget()
        self.targets: dict[int, ClassAd | None] = {}
        if my is not None:
            self.targets[id(my)] = target
        if target is not None:
            self.targets.setdefault(id(target), my)
        self.parents: dict[int, ClassAd] = {}
        # a nested ad's own alternate scope while evaluateInContext runs in it (HTCondor
        # gives it the TARGET of the ad that holds it)
        self.alternates: dict[int, ClassAd] = {}
        self.active: set[tuple[int, str]] = set()
        self.now = now
        self.rng = rng
        self.ev = _ev

    def time(self) -> int:
        """time() and CurrentTime: the caller's date, in whole seconds."""
        if self.now is None:
            raise MissingEvalInput(
                "time() (CurrentTime, formatTime()) evaluated without now: the evaluator "
                "has no clock; pass the pool's date (a tool: now=time.time())"
            )
        return int(self.now)

    def random_source(self) -> random.Random:
        """The generator random() draws from: the caller's."""
        if self.rng is None:
            raise MissingEvalInput(
                "random() evaluated without rng: the evaluator has no generator of its "
                "own; pass a seeded random.Random (a tool: rng=random.Random())"
            )
        return self.rng

    def parent_of(self, ad: ClassAd) -> ClassAd | None:
        return ad.parent if ad.parent is not None else self.parents.get(id(ad))

    def root_of(self, ad: ClassAd) -> ClassAd:
        seen = 0
        while True:
            p = self.parent_of(ad)
            if p is None or seen > 1000:
                return ad
            ad = p
            seen += 1

    def target_of(self, ad: ClassAd | None) -> ClassAd | None:
        if ad is None:
            return None
        return self.targets.get(id(self.root_of(ad)))


def evaluate(
    expr: Expr | str,
    my: ClassAd | None = None,
    target: ClassAd | None = None,
    *,
    now: float | None = None,
    rng: random.Random | None = None,
    budget: Budget | None = None,
) -> Any:
    """Evaluate `expr` with `my` as MY and `target` as TARGET. Never raises for bad values.

    ``now`` is the date time() and CurrentTime give, ``rng`` the generator random() draws
    from; an expression that reads one not given raises MissingEvalInput.

    Without `budget`, an evaluation past the default step budget is ERROR; with one, it
    spends from it and raises :class:`BudgetExceeded` past it (see :mod:`.budget`)."""
    if isinstance(expr, str):
        expr = parse_expr(expr)
    ctx = EvalContext(my, target, now, rng, budget)
    if budget is not None:
        return eval_in(expr, my, ctx)
    try:
        return eval_in(expr, my, ctx)
    except BudgetExceeded:
        return ERROR


use_evaluator(evaluate)  # ClassAd.eval's, handed over: the ad module sits below this one


def eval_in(expr: Expr, scope: ClassAd | None, ctx: EvalContext) -> Any:
    try:
        return _ev(expr, scope, ctx)
    except RecursionError:
        return ERROR


def eval_attr(ad: ClassAd, name: str, ctx: EvalContext) -> Any:
    """Evaluate attribute `name` of `ad` in ad's own scope; UNDEFINED when absent."""
    expr = ad.lookup(name)
    if expr is None:
        return UNDEFINED
    if type(expr) is Literal:
        return expr.value
    key = (id(ad), name.lower())
    if key in ctx.active:
        # HTCondor: a reference back to an attribute under evaluation is UNDEFINED
        return UNDEFINED
    if len(ctx.active) >= MAX_REFERENCE_DEPTH:
        return ERROR
    ctx.active.add(key)
    try:
        return _ev(expr, ad, ctx)
    finally:
        ctx.active.discard(key)


def _lookup_bare(name: str, scope: ClassAd | None, ctx: EvalContext) -> Any:
    low = name.lower()
    if scope is None:
        return UNDEFINED
    ad: ClassAd | None = scope
    while ad is not None:
        if low in ad:
            return eval_attr(ad, name, ctx)
        ad = ctx.parent_of(ad)
    alternate = ctx.alternates.get(id(scope))
    if alternate is not None:
        return eval_attr(alternate, name, ctx) if low in alternate else UNDEFINED
    if ctx.parent_of(scope) is not None:
        return UNDEFINED  # only a top-level ad falls back to TARGET, not an ad nested in it
    tgt = ctx.target_of(scope)
    if tgt is not None and low in tgt:
        return eval_attr(tgt, name, ctx)
    return UNDEFINED


def _ref(node: AttrRef, scope: ClassAd | None, ctx: EvalContext) -> Any:
    low = node.name.lower()
    if node.absolute:
        if scope is None:
            return UNDEFINED
        root = ctx.root_of(scope)
        if ctx.targets.get(id(root)) is not None:
            return UNDEFINED  # in a match the outermost scope is the match itself, which has no attributes
        return eval_attr(root, node.name, ctx)
    if scope is not None and low in scope:
        return eval_attr(scope, node.name, ctx)
    if low == "my":
        return scope if scope is not None else UNDEFINED
    if low == "target":
        t = ctx.target_of(scope)
        return t if t is not None else UNDEFINED
    if low == "parent":
        p = ctx.parent_of(scope) if scope is not None else None
        return p if p is not None else UNDEFINED
    if low == "currenttime":
        # old ClassAds' alias for time(), unless the ad itself defines it (classad.cpp)
        return ctx.time()
    return _lookup_bare(node.name, scope, ctx)


def _select(base: Any, name: str, ctx: EvalContext) -> Any:
    """`base.name`: look in the ad, then the ads it is nested in (never in TARGET)."""
    if isinstance(base, ClassAd):
        low = name.lower()
        ad: ClassAd | None = base
        while ad is not None:
            if low in ad:
                return eval_attr(ad, name, ctx)
            ad = ctx.parent_of(ad)
        if low == "my":
            return base
        if low == "target":
            t = ctx.target_of(base)
            return t if t is not None else UNDEFINED
        if low == "parent":
            p = ctx.parent_of(base)
            return p if p is not None else UNDEFINED
        return UNDEFINED
    if isinstance(base, list):
        return [_select(x, name, ctx) for x in base]
    if base is UNDEFINED:
        return UNDEFINED
    return ERROR


def subscript(base: Any, index: Any, ctx: EvalContext) -> Any:
    if base is ERROR or index is ERROR:
        return ERROR
    if base is UNDEFINED or index is UNDEFINED:
        return UNDEFINED
    if isinstance(base, list):
        if type(index) is not int or not 0 <= index < len(base):
            return ERROR
        return base[index]
    if isinstance(base, ClassAd):
        if type(index) is not str:
            return ERROR
        return eval_attr(base, index, ctx)
    return ERROR


def _binary(node: Binary, scope: ClassAd | None, ctx: EvalContext) -> Any:
    # Left-deep chains (a || b || c ...) are walked in a loop, not by recursion.
    spine: list[Binary] = []
    n: Expr = node
    while type(n) is Binary:
        spine.append(n)
        n = n.left
    if len(spine) > 1:  # _ev charged the first
        ctx.budget.charge(len(spine) - 1)
    val = _ev(n, scope, ctx)
    for b in reversed(spine):
        op = b.op
        if op == "&&":
            left = truth(val)
            if left is False or left is ERROR:
                val = left
                continue
            right = truth(_ev(b.right, scope, ctx))
            if left is True:
                val = right
            else:  # left UNDEFINED
                val = right if (right is False or right is ERROR) else UNDEFINED
        elif op == "||":
            left = truth(val)
            if left is True or left is ERROR:
                val = left
                continue
            right = truth(_ev(b.right, scope, ctx))
            if left is False:
                val = right
            else:
                val = right if (right is True or right is ERROR) else UNDEFINED
        else:
            right = _ev(b.right, scope, ctx)
            if op in ARITH_OPS:
                val = arith(op, val, right)
            elif op in COMPARE_OPS:
                val = compare(op, val, right)
            elif op == "=?=":
                val = identical(val, right)
            elif op == "=!=":
                r = identical(val, right)
                val = r if r is ERROR else not r
            elif op in BITWISE_OPS:
                val = bitwise(op, val, right)
            else:  # pragma: no cover - the parser makes no other operator
                val = ERROR
    return val


def _ev(node: Expr, scope: ClassAd | None, ctx: EvalContext) -> Any:
    t = type(node)
    if t is Literal:
        return node.value  # type: ignore[attr-defined]
    budget = ctx.budget  # every other node is a step: inlined, this is the hot path
    budget.left -= 1
    if budget.left < 0:
        budget.charge(0)
    if t is AttrRef:
        return _ref(node, scope, ctx)  # type: ignore[arg-type]
    if t is Binary:
        return _binary(node, scope, ctx)  # type: ignore[arg-type]
    if t is Paren:
        return _ev(node.inner, scope, ctx)  # type: ignore[attr-defined]
    if t is Select:
        return _select(_ev(node.base, scope, ctx), node.name, ctx)  # type: ignore[attr-defined]
    if t is Unary:
        return unary(node.op, _ev(node.operand, scope, ctx))  # type: ignore[attr-defined]
    if t is Call:
        return call(node, scope, ctx)  # type: ignore[arg-type]
    if t is Cond:
        c = truth(_ev(node.cond, scope, ctx))  # type: ignore[attr-defined]
        if c is True:
            return _ev(node.then, scope, ctx)  # type: ignore[attr-defined]
        if c is False:
            return _ev(node.other, scope, ctx)  # type: ignore[attr-defined]
        return c
    if t is Elvis:
        v = _ev(node.left, scope, ctx)  # type: ignore[attr-defined]
        return _ev(node.right, scope, ctx) if v is UNDEFINED else v  # type: ignore[attr-defined]
    if t is Subscript:
        return subscript(_ev(node.base, scope, ctx), _ev(node.index, scope, ctx), ctx)  # type: ignore[attr-defined]
    if t is ListExpr:
        budget.charge(len(node.items), "list items")  # type: ignore[attr-defined]
        return [_ev(x, scope, ctx) for x in node.items]  # type: ignore[attr-defined]
    if t is AdExpr:
        ad = node.ad  # type: ignore[attr-defined]
        if ad.parent is None and scope is not None and ad is not scope:
            ctx.parents[id(ad)] = scope
        return ad
    return ERROR


def matches(
    job: ClassAd,
    slot: ClassAd,
    *,
    now: float | None = None,
    rng: random.Random | None = None,
) -> bool:
    """The symmetric match: the job's Requirements and the slot's Requirements both true."""
    for a, b in ((job, slot), (slot, job)):
        req = a.lookup("Requirements")
        if req is None:
            return False
        if (
            truth(evaluate(req, a, b, now=now, rng=rng)) is not True
        ):  # nonzero numbers count as true
            return False
    return True
