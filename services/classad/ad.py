"""The ClassAd: an ordered, case-insensitive mapping of attribute names to expressions."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping
from typing import TYPE_CHECKING, Any, Self

from .tree import AdExpr, Expr, ListExpr, Literal, unparse_ad
from .values import ERROR, UNDEFINED

if TYPE_CHECKING:
    import random

Plain = bool | int | float | str

# What ClassAd.eval evaluates with: classad.evaluate, which reads ads and so sits above
# this module. It hands itself over as it is imported (the package imports it before any
# ad can be made): this module imports nothing above the tree, and no circle.
_evaluate: Callable[..., Any]


def use_evaluator(evaluate: Callable[..., Any]) -> None:
    """Make ``evaluate`` (classad.evaluate's) what :meth:`ClassAd.eval` calls."""
    global _evaluate
    _evaluate = evaluate


def _shareable(value: Plain) -> bool:
    """Whether a plain value may share its Literal with the values equal to it: not
    -0.0 (equal to 0.0, written otherwise) nor NaN (equal to nothing)."""
    return type(value) is not float or (value == value and math.copysign(1.0, value) > 0)


@functools.lru_cache(maxsize=65_536)
def _shared_literal(_kind: type, value: Plain) -> Literal:
    return Literal(value)


@functools.lru_cache(maxsize=65_536)
def shared_binding(name: str, kind: type, value: Plain) -> tuple[str, Literal]:
    """:func:`literal_binding` for a value known :func:`_shareable` (a str, int or bool)
    of type ``kind``: one C-level cache look, for the callers that bind thousands."""
    return name, _shared_literal(kind, value)


def shared_literal(value: Plain) -> Literal:
    """``Literal(value)``, one object per value and type (True is not 1) where
    :func:`_shareable`: ads that share the objects of their equal values, as ads decoded
    from the wire do, are one object to the negotiator's columns, not thousands."""
    return _shared_literal(type(value), value) if _shareable(value) else Literal(value)


def literal_binding(name: str, value: Plain) -> tuple[str, Literal]:
    """``(name, Literal(value))``, one tuple per name, value and type where
    :func:`_shareable` (an ad binds it as it is: :meth:`ClassAd.from_exprs`)."""
    if _shareable(value):
        return shared_binding(name, type(value), value)
    return name, Literal(value)


# a name's lower case, one string per name (set_literals writes a few names many times)
_lower = functools.lru_cache(maxsize=1024)(str.lower)


def to_expr(value: Any) -> Expr:
    """A Python value (or an Expr) as an expression tree."""
    if isinstance(value, Expr):
        return value
    if value is None:
        return Literal(UNDEFINED)
    if value is UNDEFINED or value is ERROR or isinstance(value, (bool, int, float, str)):
        return Literal(value)
    if isinstance(value, ClassAd):
        return AdExpr(value)
    if isinstance(value, Mapping):
        return AdExpr(ClassAd(value))
    if isinstance(value, (list, tuple)):
        return ListExpr(tuple(to_expr(v) for v in value))
    raise TypeError(f"cannot store a {type(value).__name__} in a ClassAd")


class ClassAd(MutableMapping[str, Expr]):
    """Attribute name -> expression. Names keep the case they were set with; lookups ignore it.

    Setting a Python value stores a literal; ``ad.eval(name)`` evaluates an attribute with
    this ad as MY.
    """

    __slots__ = ("_attrs", "_nested", "parent")

    def __init__(self, attrs: Mapping[str, Any] | None = None, **kw: Any) -> None:
        self._attrs: dict[str, tuple[str, Expr]] = {}
        self.parent: ClassAd | None = None
        # whether a nested ad was ever stored (a copy must copy those, not share them)
        self._nested = False
        if attrs:
            for k, v in attrs.items():
                self[k] = v
        for k, v in kw.items():
            self[k] = v

    @classmethod
    def from_exprs(cls, pairs: Iterable[tuple[str, Expr]], base: ClassAd | None = None) -> ClassAd:
        """An ad from (name, expression tree) pairs, names already checked non-empty: the
        wire decoder's path, which builds hundreds of thousands of ads a run. ``base``: an
        ad whose bindings come first (copied in one step, its nested ads each copied for
        the new ad; a startd's machine constants, shared by its slot ads). A pair that is
        a tuple binds its name as it is (ads may share their bindings, as they share
        their trees), unless the ad already spells the name otherwise."""
        ad = cls()
        if base is not None:
            if base._nested:  # a nested ad belongs to one ad: it looks up its holder
                ad._attrs = base.copy()._attrs
                ad._nested = True
                for _n, e in ad._attrs.values():
                    if type(e) is AdExpr:
                        e.ad.parent = ad
            else:
                ad._attrs = base._attrs.copy()
        ad.set_bindings(pairs)
        return ad

    @property
    def holds_nested_ads(self) -> bool:
        """Whether a nested ad was ever stored in it (each such ad belongs to one holder:
        an ad that holds one cannot be the shared base of others)."""
        return self._nested

    @classmethod
    def sharing(cls, ad: ClassAd) -> Self:
        """An ad of this class sharing ``ad``'s attributes: not a copy, a second face of
        the same table (a subclass that watches its lookups: the negotiator's WatchedAd)."""
        view = cls.__new__(cls)
        view._attrs = ad._attrs
        view._nested = ad._nested
        view.parent = ad.parent
        return view

    @classmethod
    def from_attrs(cls, attrs: dict[str, tuple[str, Expr]]) -> ClassAd:
        """An ad that takes ``attrs`` (lower-case name -> (name, expression), no nested
        ads) as its own: the wire decoder's path."""
        ad = cls()
        ad._attrs = attrs
        return ad

    # -- mapping protocol -------------------------------------------------
    def __getitem__(self, name: str) -> Expr:
        return self._attrs[name.lower()][1]

    def __setitem__(self, name: str, value: Any) -> None:
        if not isinstance(name, str) or not name:
            raise KeyError(f"attribute name must be a non-empty string, got {name!r}")
        kind = type(value)  # the usual values first: to_expr's checks cost a call each
        if kind is str or kind is int or kind is float or kind is bool:
            expr: Expr = Literal(value)
        elif kind is Literal:
            expr = value
        else:
            expr = to_expr(value)
            if isinstance(expr, AdExpr):
                expr.ad.parent = self
                self._nested = True
        key = name.lower()
        old = self._attrs.get(key)
        self._attrs[key] = (old[0] if old else name, expr)

    def set_bindings(self, pairs: Iterable[tuple[str, Expr]]) -> None:
        """Bind each (name, expression) pair as :meth:`from_exprs` does, in this ad: the
        tuple itself where the ad spells the name alike or lacks it."""
        attrs = self._attrs
        for pair in pairs:
            name, expr = pair
            if type(expr) is AdExpr:
                expr.ad.parent = self
                self._nested = True
            key = name.lower()
            old = attrs.get(key)
            if old is None or old[0] == name:
                attrs[key] = pair if type(pair) is tuple else (name, expr)
            else:
                attrs[key] = (old[0], expr)

    def set_literals(self, values: Iterable[tuple[str, Plain]]) -> None:
        """``self[name] = value`` for each plain value (no conversion to look for), the
        bindings shared with other ads (:func:`literal_binding`)."""
        attrs = self._attrs
        for name, value in values:
            key = _lower(name)
            old = attrs.get(key)
            attrs[key] = literal_binding(old[0] if old else name, value)

    def __delitem__(self, name: str) -> None:
        del self._attrs[name.lower()]

    def pairs(self) -> Iterator[tuple[str, Expr]]:
        """(name as set, expression) of every attribute in order: ``items()`` without a
        lookup each."""
        return iter(self._attrs.values())

    def __iter__(self) -> Iterator[str]:
        return (n for n, _ in self._attrs.values())

    def __len__(self) -> int:
        return len(self._attrs)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._attrs

    # -- ClassAd operations -------------------------------------------------
    def lookup(self, name: str) -> Expr | None:
        """The expression bound to `name` (any case), or None."""
        hit = self._attrs.get(name.lower())
        return hit[1] if hit else None

    def keys_lower(self) -> list[str]:
        return list(self._attrs)

    def eval(
        self,
        name: str,
        target: ClassAd | None = None,
        *,
        now: float | None = None,
        rng: random.Random | None = None,
    ) -> Any:
        """Evaluate attribute `name` with this ad as MY (UNDEFINED when absent); `now` is
        the date time() and CurrentTime give, `rng` what random() draws from (without
        them, an expression that reads one raises MissingEvalInput)."""
        hit = self._attrs.get(name.lower())
        if hit is None:
            return UNDEFINED
        expr = hit[1]
        if type(expr) is Literal:  # most attributes: no evaluator needed
            return expr.value
        return _evaluate(expr, self, target, now=now, rng=rng)

    @staticmethod
    def lookups(ads: Iterable[ClassAd], name: str) -> list[Expr | None]:
        """``[ad.lookup(name) for ad in ads]``, a plain ad's read without a call."""
        key = name.lower()
        return [
            (hit[1] if (hit := ad._attrs.get(key)) else None)
            if type(ad) is ClassAd
            else ad.lookup(name)
            for ad in ads
        ]

    @staticmethod
    def string_values(
        ads: Iterable[ClassAd],
        name: str,
        target: ClassAd | None = None,
        *,
        now: float | None = None,
        rng: random.Random | None = None,
    ) -> list[str | None]:
        """Each ad's ``eval(name, target)`` where it is a string, else None: a literal
        read without a call per ad (a cycle reads every slot's Name and every private
        ad's Capability)."""
        key = name.lower()
        out: list[str | None] = []
        add = out.append
        for ad in ads:
            if type(ad) is not ClassAd:  # a subclass may watch its lookups
                v = ad.eval(name, target, now=now, rng=rng)
            elif (hit := ad._attrs.get(key)) is None:
                v = None
            else:
                e = hit[1]
                v = e.value if type(e) is Literal else ad.eval(name, target, now=now, rng=rng)
            add(v if isinstance(v, str) else None)
        return out

    def get_value(
        self,
        name: str,
        default: Any = None,
        *,
        now: float | None = None,
        rng: random.Random | None = None,
    ) -> Any:
        """The attribute's evaluated value, or `default` when absent or UNDEFINED."""
        v = self.eval(name, now=now, rng=rng)
        return default if v is UNDEFINED else v

    def copy(self) -> ClassAd:
        new = ClassAd.__new__(ClassAd)  # no __init__: a copy is made per match and update
        new.parent = None
        new._nested = False
        if not self._nested:  # trees are immutable: share them
            new._attrs = self._attrs.copy()
            return new
        new._attrs = {}
        new._nested = True
        for k, (n, e) in self._attrs.items():
            if isinstance(e, AdExpr):
                e = AdExpr(e.ad.copy())
                e.ad.parent = new
            new._attrs[k] = (n, e)
        return new

    def update(self, other: Any = (), /, **kw: Any) -> None:  # keeps names' first spelling
        items = other.items() if isinstance(other, Mapping) else other
        for k, v in items:
            self[k] = v
        for k, v in kw.items():
            self[k] = v

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ClassAd):
            return NotImplemented
        if set(self._attrs) != set(other._attrs):
            return False
        return all(self._attrs[k][1] == other._attrs[k][1] for k in self._attrs)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"ClassAd({unparse_ad(self)!r})"

    def __str__(self) -> str:
        return unparse_ad(self)
