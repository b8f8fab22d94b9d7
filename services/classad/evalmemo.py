"""Remembered evaluations: an expression evaluated between two ads again gives what it gave
before when every attribute it can read is bound to the same expression objects.

A startd checks START and the job's Requirements at every claim and activation, and a
schedd checks the symmetric match for every job it starts on a claim it holds: thousands
of evaluations of one tree between ads that read alike. Ads built from shared bindings (a
slot's ads, a cluster's job ads, ads decoded from the wire) hold one object per equal
value, so the identities of the bindings an expression can reach say whether it would
give the same answer, for a few dict looks instead of a tree walk.

What an evaluation can read is found from the tree, conservatively: every attribute name
it names in any scope, and those named by the expressions the two ads bind to them,
transitively (:func:`..refs.every_name`). An expression is not remembered when what it
reads is only known as it runs (``eval``, a computed subscript), when it compares or
returns a whole ad (``MY``, ``TARGET`` as a value: an ad's identity, not its bindings),
when it calls ``debug`` (a log line each time), when it can reach a nested ad (which
can change in place), when the evaluation read the clock or the
generator (``time()``, ``random()``), or when its value is not a plain scalar. An ad with
a parent (a nested ad) is never looked up here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .ad import ClassAd
from .budget import BudgetExceeded
from .evaluate import EvalContext, eval_in
from .operators import truth
from .refs import DynamicReference, every_name
from .tree import AdExpr, AttrRef, Call, Expr, Literal, Select
from .values import ERROR, UNDEFINED

if TYPE_CHECKING:
    import random

__all__ = ["EvalMemo"]

_SCOPES = frozenset({"my", "target", "parent", "self"})
_NOT_REMEMBERED_CALLS = frozenset({"debug"})
_ABSENT = (None, None)  # the binding of a name an ad lacks (its expression: None)
_PLAIN = (bool, int, float, str)


class _Watched(EvalContext):
    """An evaluation context that notes whether the clock or the generator was read."""

    __slots__ = ("read_input",)

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.read_input = False

    def time(self) -> int:
        self.read_input = True
        return super().time()

    def random_source(self) -> random.Random:
        self.read_input = True
        return super().random_source()


def _names(expr: Expr) -> frozenset[str] | None:
    """The lower-case names ``expr`` can read, or None when it cannot be remembered."""
    out: set[str] = set()
    try:
        every_name(expr, out)
    except DynamicReference:
        return None
    # a scope used as a value (not as the base of a selection) reads an ad's identity; a
    # nested ad is left out, as where an ad binds one (see _reach)
    stack: list[Expr] = [expr]
    while stack:
        node = stack.pop()
        t = type(node)
        if t is AdExpr or (t is Literal and isinstance(node.value, ClassAd)):  # type: ignore[attr-defined]
            return None
        if t is AttrRef and node.name.lower() in _SCOPES:  # type: ignore[attr-defined]
            return None
        if t is Call and node.name.lower() in _NOT_REMEMBERED_CALLS:  # type: ignore[attr-defined]
            return None
        if t is Select and type(node.base) is AttrRef:  # type: ignore[attr-defined]
            continue  # MY.x, TARGET.x, a.x: its base is a name, not a value
        stack.extend(node.children())
    return frozenset(out)


class EvalMemo:
    """Evaluations remembered by expression and the identities of what they can read.

    One per daemon core (it holds the expressions it remembers alive, so their ids stay
    theirs); ``limit`` answers are kept, then all are forgotten at once.
    """

    def __init__(self, limit: int = 20_000) -> None:
        self.limit = limit
        self._size = 0
        # id(expression) -> (the expression, the names its evaluations between ads read
        # (sorted), answers by the ids of the two ads' bindings of those names); None:
        # this expression is never remembered
        self._by_expr: dict[
            int, tuple[Expr, tuple[str, ...], dict[tuple[int, ...], Any]] | None
        ] = {}
        # id(expression) -> (the expression, its own names, or None: not rememberable)
        self._own: dict[int, tuple[Expr, frozenset[str] | None]] = {}
        self.hits = 0
        self.misses = 0

    def eval(
        self,
        ad: ClassAd,
        name: str,
        target: ClassAd,
        *,
        now: float | None,
        rng: random.Random | None,
    ) -> Any:
        """``ad.eval(name, target, now=now, rng=rng)``, remembered where it may be."""
        expr = ad.lookup(name)
        if expr is None:
            return UNDEFINED
        if type(expr) is Literal:
            return expr.value
        return self.evaluate(expr, ad, target, now=now, rng=rng)

    def evaluate(
        self,
        expr: Expr,
        my: ClassAd,
        target: ClassAd,
        *,
        now: float | None,
        rng: random.Random | None,
    ) -> Any:
        """``evaluate(expr, my, target, now=now, rng=rng)``, remembered where it may be."""
        if type(expr) is Literal:
            return expr.value
        entry = self._by_expr.get(id(expr), _ABSENT)
        if entry is None or my.parent is not None or target.parent is not None:
            return self._run(expr, my, target, now, rng)[0]
        if entry is not _ABSENT:
            _, names, answers = entry  # type: ignore[misc]
            hit = answers.get(self._key(names, my, target), _ABSENT)
            if hit is not _ABSENT:
                self.hits += 1
                return hit[0]
        self.misses += 1
        reach = self._reach(expr, my, target)
        value, read_input = self._run(expr, my, target, now, rng)
        if reach is None:
            self._by_expr[id(expr)] = None
            return value
        if read_input or not (type(value) in _PLAIN or value is UNDEFINED or value is ERROR):
            return value
        if entry is _ABSENT or not reach <= set(entry[1]):  # type: ignore[index]
            names = tuple(sorted(reach if entry is _ABSENT else reach | set(entry[1])))  # type: ignore[index]
            self._size -= 0 if entry is _ABSENT else len(entry[2])  # type: ignore[index]
            entry = self._by_expr[id(expr)] = (expr, names, {})
        _, names, answers = entry  # type: ignore[misc]
        key = self._key(names, my, target)
        if self._size >= self.limit:
            self.clear()
            entry = self._by_expr[id(expr)] = (expr, names, {})
            answers = entry[2]
        # the bindings held with the answer keep their ids theirs while it is kept
        answers[key] = (value, self._held(names, my, target))
        self._size += 1
        return value

    def matches(
        self, job: ClassAd, slot: ClassAd, *, now: float | None, rng: random.Random | None
    ) -> bool:
        """:func:`..evaluate.matches` (both Requirements true), remembered where it may be."""
        for a, b in ((job, slot), (slot, job)):
            req = a.lookup("Requirements")
            if req is None or truth(self.evaluate(req, a, b, now=now, rng=rng)) is not True:
                return False
        return True

    def clear(self) -> None:
        """Forget every answer (the expressions' own names are kept)."""
        self._by_expr.clear()
        self._size = 0

    # -- internals -----------------------------------------------------------------------
    @staticmethod
    def _key(names: tuple[str, ...], my: ClassAd, target: ClassAd) -> tuple[int, ...]:
        g1, g2 = my._attrs.get, target._attrs.get
        return (
            *[id(g1(n, _ABSENT)[1]) for n in names],
            *[id(g2(n, _ABSENT)[1]) for n in names],
        )

    @staticmethod
    def _held(names: tuple[str, ...], my: ClassAd, target: ClassAd) -> tuple[Any, ...]:
        g1, g2 = my._attrs.get, target._attrs.get
        return (*[g1(n, _ABSENT)[1] for n in names], *[g2(n, _ABSENT)[1] for n in names])

    def _own_names(self, expr: Expr) -> frozenset[str] | None:
        hit = self._own.get(id(expr))
        if hit is None:
            if len(self._own) >= self.limit:
                self._own.clear()
            hit = self._own[id(expr)] = (expr, _names(expr))
        return hit[1]

    def _reach(self, expr: Expr, my: ClassAd, target: ClassAd) -> set[str] | None:
        """Every name an evaluation of ``expr`` between ``my`` and ``target`` can read
        (None: what it reads is not known before it runs)."""
        own = self._own_names(expr)
        if own is None:
            return None
        reach = set(own)
        todo = list(own)
        while todo:
            name = todo.pop()
            for ad in (my, target):
                bound = ad.lookup(name)
                if bound is None:
                    continue
                if type(bound) is Literal:
                    if isinstance(bound.value, (ClassAd, list)):
                        return None  # a value that can change in place
                    continue
                if type(bound) is AdExpr:
                    return None  # a nested ad can change in place
                more = self._own_names(bound)
                if more is None:
                    return None
                for n in more - reach:
                    reach.add(n)
                    todo.append(n)
        return reach

    @staticmethod
    def _run(
        expr: Expr, my: ClassAd, target: ClassAd, now: float | None, rng: random.Random | None
    ) -> tuple[Any, bool]:
        ctx = _Watched(my, target, now, rng)
        try:
            value = eval_in(expr, my, ctx)
        except BudgetExceeded:
            value = ERROR
        return value, ctx.read_input
