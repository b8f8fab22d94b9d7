"""What one binding (an attribute name and its expression) turns into, made once.

Ads repeat the same bindings: a cluster's jobs share most of their attributes, every
slot of a machine the same policy expressions. Their wire entries and their lines of ad
text are therefore made once per binding and kept, keyed by the name and the literal's
type and value (a real by its bit pattern, so 0.0 and -0.0 stay apart; a bool apart
from an int, though True == 1), or by the tree's identity, the tree held with the entry
so that its id cannot be reused.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

from .tree import Expr, Literal

__all__ = ["BindingCache"]

T = TypeVar("T")

# Strings longer than this are not kept by value (a long one rarely repeats).
_LONGEST_KEPT = 256


class BindingCache(Generic[T]):
    """``make(name, expr)`` for each binding, remembered; cleared when it grows past
    ``limit`` entries."""

    def __init__(self, make: Callable[[str, Expr], T], limit: int = 200_000) -> None:
        self._make = make
        self._limit = limit
        self._kept: dict[tuple, tuple[Expr, T]] = {}

    def __len__(self) -> int:
        return len(self._kept)

    def of(self, bindings: Iterable[tuple[str, Expr]]) -> list[T]:
        """What each of ``bindings`` makes, in order (one loop for a whole ad: this is
        the hot path of every ad sent or printed)."""
        kept, make = self._kept, self._make
        if len(kept) > self._limit:
            kept.clear()
        out = []
        for name, expr in bindings:
            if type(expr) is Literal:
                value = expr.value
                t = type(value)
                if t is float:
                    key: tuple | None = (name, t, value.hex())
                elif t is int or t is bool or (t is str and len(value) <= _LONGEST_KEPT):
                    key = (name, t, value)
                else:
                    key = None
            else:
                key = (name, id(expr))
            hit = kept.get(key) if key is not None else None
            if hit is None or (hit[0] is not expr and type(expr) is not Literal):
                made = make(name, expr)
                if key is not None:
                    kept[key] = (expr, made)
            else:
                made = hit[1]
            out.append(made)
        return out

    def clear(self) -> None:
        self._kept.clear()
