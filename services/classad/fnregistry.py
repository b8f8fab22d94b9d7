"""The ClassAd function table and what every function family needs to register into it:
``@fn("name", ...)`` adds a function, ``ev``/``strict`` evaluate its arguments, and the
string-list splitting the list functions share. :mod:`.functions` (the core set) and
:mod:`.policy_functions` register here; :func:`.functions.call` dispatches."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from .tree import Expr

__all__ = ["TABLE", "Fn", "ev", "fn", "split_list", "strict", "tokens"]

Fn = Callable[[tuple[Expr, ...], Any, Any], Any]
TABLE: dict[str, Fn] = {}


def fn(*names: str) -> Callable[[Fn], Fn]:
    def deco(f: Fn) -> Fn:
        for n in names:
            TABLE[n.lower()] = f
        return f

    return deco


def ev(e: Expr, scope: Any, ctx: Any) -> Any:
    """An argument's value, by the evaluator that called the function (``ctx.ev``: the
    evaluator sits above the table it calls into)."""
    return ctx.ev(e, scope, ctx)


def strict(args: tuple[Expr, ...], scope: Any, ctx: Any) -> list[Any]:
    return [ev(a, scope, ctx) for a in args]


def split_list(s: str, delims: str) -> list[str]:
    if not delims:
        return [s] if s else []
    parts = re.split("[" + re.escape(delims) + "]", s)
    return [p for p in parts if p]


_SPACE = " \t\n\r\f\v"


def tokens(s: str, delims: str) -> list[str]:
    """The stringList* functions' items: HTCondor's StringTokenIterator also trims each
    one and drops those left empty (split() does neither)."""
    return [t for p in split_list(s, delims) if (t := p.strip(_SPACE))]
