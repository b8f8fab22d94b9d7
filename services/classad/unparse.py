"""ClassAd text from trees: what the parser reads back to the same tree."""

from __future__ import annotations

import math
import re
from typing import Any

from .tree import (
    BINARY_PRECEDENCE,
    UNARY_PRECEDENCE,
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

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_RESERVED = {"true", "false", "undefined", "error", "is", "isnt"}
_STR_ESCAPES = {
    "\\": "\\\\",
    '"': '\\"',
    "\n": "\\n",
    "\t": "\\t",
    "\r": "\\r",
    "\b": "\\b",
    "\f": "\\f",
}
_TERNARY_PREC = 0
_ELVIS_PREC = 12


def quote_string(s: str, quote: str = '"') -> str:
    out = []
    for ch in s:
        if ch in _STR_ESCAPES and (ch != '"' or quote == '"'):
            out.append(_STR_ESCAPES[ch])
        elif ch == quote:
            out.append("\\" + ch)
        elif ord(ch) < 32 or ord(ch) == 127:
            out.append(f"\\{ord(ch):03o}")
        elif 0xDC80 <= ord(ch) <= 0xDCFF:  # a byte that is not UTF-8, kept by the lexer
            out.append(f"\\{ord(ch) - 0xDC00:03o}")
        else:
            out.append(ch)
    return quote + "".join(out) + quote


def format_name(name: str) -> str:
    if _IDENT.match(name) and name.lower() not in _RESERVED:
        return name
    return quote_string(name, "'")


def format_real(v: float) -> str:
    if math.isnan(v):
        return 'real("NaN")'
    if math.isinf(v):
        return 'real("INF")' if v > 0 else 'real("-INF")'
    r = repr(v)
    if "e" not in r and "." not in r:  # never print a real so that it reads back as an int
        r += ".0"
    return r


def format_value(v: Any) -> str:
    """A literal or evaluated value as ClassAd text."""
    from .ad import ClassAd

    if v is UNDEFINED:
        return "undefined"
    if v is ERROR:
        return "error"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return format_real(v)
    if isinstance(v, str):
        return quote_string(v)
    if isinstance(v, list):
        return "{ " + ", ".join(format_value(x) for x in v) + " }" if v else "{ }"
    if isinstance(v, ClassAd):
        return unparse_ad(v)
    raise TypeError(f"not a ClassAd value: {v!r}")


def unparse(expr: Expr, *, condor: bool = False) -> str:
    """Text that parses back to the same tree. With condor=True, HTCondor's own spelling
    of literals (reals as %.15E, lists as `{ a,b }`), as its string() function shows them."""
    return _unparse(expr, _TERNARY_PREC, condor)


def format_value_condor(v: Any) -> str:
    """A value as HTCondor's unparser writes it."""
    from .ad import ClassAd
    from .convert import format_real_value

    if isinstance(v, float):
        return format_real_value(v)
    if isinstance(v, list):
        return "{ " + ",".join(format_value_condor(x) for x in v) + " }"
    if isinstance(v, ClassAd):
        return unparse_ad(v, condor=True)
    return format_value(v)


def _unparse(e: Expr, ctx: int, condor: bool) -> str:
    """Text for `e` placed where an operand of precedence `ctx` is expected."""
    if isinstance(e, Binary):
        # Walk the left spine iteratively: chains can be thousands long.
        spine: list[Binary] = []
        node: Expr = e
        while isinstance(node, Binary):
            spine.append(node)
            node = node.left
        text = _unparse(node, BINARY_PRECEDENCE[spine[-1].op], condor)
        for b in reversed(spine):
            p = BINARY_PRECEDENCE[b.op]
            if isinstance(b.left, Binary) and BINARY_PRECEDENCE[b.left.op] < p:
                text = f"({text})"
            text = f"{text} {b.op} {_unparse(b.right, p + 1, condor)}"
        return f"({text})" if BINARY_PRECEDENCE[e.op] < ctx else text
    if isinstance(e, Literal):
        s = format_value_condor(e.value) if condor else format_value(e.value)
        if s.startswith("-") and ctx > 0:
            return f"({s})"
        return s
    if isinstance(e, AttrRef):
        return ("." if e.absolute else "") + format_name(e.name)
    if isinstance(e, (Select, Subscript)):
        # postfix chains (x.a.b[0]...) can be thousands long: walk them in a loop
        suffixes: list[str] = []
        node = e
        while isinstance(node, (Select, Subscript)):
            if isinstance(node, Select):
                suffixes.append(f".{format_name(node.name)}")
            else:
                suffixes.append(f"[{_unparse(node.index, _TERNARY_PREC, condor)}]")
            node = node.base
        return _unparse(node, 100, condor) + "".join(reversed(suffixes))
    if isinstance(e, Unary):
        # HTCondor's unparser writes a space before a unary operator (" -x")
        text = (" " if condor else "") + e.op + _unparse(e.operand, UNARY_PRECEDENCE, condor)
        return f"({text})" if ctx > UNARY_PRECEDENCE else text
    if isinstance(e, Cond):
        text = (
            f"{_unparse(e.cond, 1, condor)} ? {_unparse(e.then, _TERNARY_PREC, condor)}"
            f" : {_unparse(e.other, _TERNARY_PREC, condor)}"
        )
        return f"({text})" if ctx > _TERNARY_PREC else text
    if isinstance(e, Elvis):
        # binds tighter than unary operators; the right operand is a unary expression
        text = f"{_unparse(e.left, _ELVIS_PREC, condor)} ?: {_unparse(e.right, UNARY_PRECEDENCE, condor)}"
        return f"({text})" if ctx > _ELVIS_PREC else text
    if isinstance(e, Call):
        return f"{e.name}({','.join(_unparse(a, _TERNARY_PREC, condor) for a in e.args)})"
    if isinstance(e, ListExpr):
        sep = "," if condor else ", "
        if not e.items and not condor:
            return "{ }"
        return "{ " + sep.join(_unparse(a, _TERNARY_PREC, condor) for a in e.items) + " }"
    if isinstance(e, AdExpr):
        return unparse_ad(e.ad, condor)
    if isinstance(e, Paren):
        return f"({_unparse(e.inner, _TERNARY_PREC, condor)})"
    raise TypeError(f"not an expression node: {e!r}")


def unparse_ad(ad: Any, condor: bool = False) -> str:
    """New syntax: `[ a = 1; b = a ]`."""
    parts = [f"{format_name(n)} = {_unparse(ad[n], _TERNARY_PREC, condor)}" for n in ad]
    if not parts:
        return "[  ]" if condor else "[ ]"  # HTCondor writes an empty ad with two spaces
    return "[ " + "; ".join(parts) + " ]"
