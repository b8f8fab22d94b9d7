"""The ClassAd expression tree and its text.

Nodes are plain slotted classes. Equality is structural and iterative (trees from long
`a || b || c ...` chains are thousands of levels deep), so it never hits the recursion
limit; use :func:`same_tree` or ``==``.

A tree's text (:func:`unparse`) lives here with the nodes, as Python's ``ast.unparse``
does: a node prints itself, and the text of an ad value needs only the mapping an ad is,
so nothing here imports the ClassAd or the evaluator above it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .values import ERROR, UNDEFINED

if TYPE_CHECKING:
    from .ad import ClassAd

# Binary operators by precedence, loosest first (HTCondor's classad grammar).
BINARY_PRECEDENCE: dict[str, int] = {
    "||": 1,
    "&&": 2,
    "|": 3,
    "^": 4,
    "&": 5,
    "==": 6,
    "!=": 6,
    "=?=": 6,
    "=!=": 6,
    "<": 7,
    "<=": 7,
    ">": 7,
    ">=": 7,
    "<<": 8,
    ">>": 8,
    ">>>": 8,
    "+": 9,
    "-": 9,
    "*": 10,
    "/": 10,
    "%": 10,
}
UNARY_OPS = ("-", "+", "!", "~")
UNARY_PRECEDENCE = 11


class Expr:
    """Base of every expression node."""

    __slots__ = ()
    _fields: tuple[str, ...] = ()

    def children(self) -> tuple[Expr, ...]:
        out: list[Expr] = []
        for f in self._fields:
            v = getattr(self, f)
            if isinstance(v, Expr):
                out.append(v)
            elif isinstance(v, tuple):
                out.extend(x for x in v if isinstance(x, Expr))
        return tuple(out)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Expr):
            return NotImplemented
        return same_tree(self, other)

    def __ne__(self, other: object) -> bool:
        r = self.__eq__(other)
        return r if r is NotImplemented else not r

    __hash__ = None  # type: ignore[assignment]  # mutable-free but deep: hash the text instead

    def __repr__(self) -> str:
        return f"{type(self).__name__}({unparse(self)!r})"

    def __str__(self) -> str:
        return unparse(self)


class Literal(Expr):
    """A constant: bool, int, float, str, UNDEFINED or ERROR."""

    __slots__ = ("value",)
    _fields = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


class AttrRef(Expr):
    """A bare attribute name (`Memory`), or `.Memory` when absolute (root scope)."""

    __slots__ = ("absolute", "name")
    _fields = ("name", "absolute")

    def __init__(self, name: str, absolute: bool = False) -> None:
        self.name = name
        self.absolute = absolute


class Select(Expr):
    """`base.name`: MY.x and TARGET.x are selections on the references MY and TARGET."""

    __slots__ = ("base", "name")
    _fields = ("base", "name")

    def __init__(self, base: Expr, name: str) -> None:
        self.base = base
        self.name = name


class Subscript(Expr):
    __slots__ = ("base", "index")
    _fields = ("base", "index")

    def __init__(self, base: Expr, index: Expr) -> None:
        self.base = base
        self.index = index


class Unary(Expr):
    __slots__ = ("op", "operand")
    _fields = ("op", "operand")

    def __init__(self, op: str, operand: Expr) -> None:
        self.op = op
        self.operand = operand


class Binary(Expr):
    __slots__ = ("left", "op", "right")
    _fields = ("op", "left", "right")

    def __init__(self, op: str, left: Expr, right: Expr) -> None:
        self.op = op
        self.left = left
        self.right = right


class Cond(Expr):
    """`cond ? then : other`."""

    __slots__ = ("cond", "other", "then")
    _fields = ("cond", "then", "other")

    def __init__(self, cond: Expr, then: Expr, other: Expr) -> None:
        self.cond = cond
        self.then = then
        self.other = other


class Elvis(Expr):
    """`left ?: right`: left unless it is UNDEFINED."""

    __slots__ = ("left", "right")
    _fields = ("left", "right")

    def __init__(self, left: Expr, right: Expr) -> None:
        self.left = left
        self.right = right


class Call(Expr):
    __slots__ = ("args", "name")
    _fields = ("name", "args")

    def __init__(self, name: str, args: tuple[Expr, ...]) -> None:
        self.name = name
        self.args = tuple(args)


class ListExpr(Expr):
    __slots__ = ("items",)
    _fields = ("items",)

    def __init__(self, items: tuple[Expr, ...]) -> None:
        self.items = tuple(items)


class AdExpr(Expr):
    """A nested ad literal `[ a = 1; b = a ]`."""

    __slots__ = ("ad",)
    _fields = ("ad",)

    def __init__(self, ad: ClassAd) -> None:
        self.ad = ad


class Paren(Expr):
    """Parentheses the author wrote; kept so that text round-trips as written."""

    __slots__ = ("inner",)
    _fields = ("inner",)

    def __init__(self, inner: Expr) -> None:
        self.inner = inner


def _literal_equal(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and a != a:
        return b != b
    return a is b or a == b


def same_tree(a: Expr, b: Expr) -> bool:
    """Structural equality, iterative. Attribute names compare without case."""
    stack: list[tuple[Any, Any]] = [(a, b)]
    while stack:
        x, y = stack.pop()
        if type(x) is not type(y):
            return False
        if isinstance(x, Literal):
            if not _literal_equal(x.value, y.value):
                return False
            continue
        if isinstance(x, AdExpr):
            ax, ay = x.ad, y.ad
            if set(ax.keys_lower()) != set(ay.keys_lower()):  # both ClassAds
                return False
            stack.extend((ax.lookup(k), ay.lookup(k)) for k in ax.keys_lower())
            continue
        for f in x._fields:
            vx, vy = getattr(x, f), getattr(y, f)
            if isinstance(vx, Expr):
                stack.append((vx, vy))
            elif isinstance(vx, tuple):
                if not isinstance(vy, tuple) or len(vx) != len(vy):
                    return False
                stack.extend(zip(vx, vy))
            elif isinstance(vx, str) and f == "name":
                if not isinstance(vy, str) or vx.lower() != vy.lower():
                    return False
            elif vx != vy:
                return False
    return True


def walk(expr: Expr):
    """Every node of the tree, parents before children (iterative)."""
    stack = [expr]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, AdExpr):
            stack.extend(reversed([node.ad.lookup(k) for k in node.ad.keys_lower()]))
        else:
            stack.extend(reversed(node.children()))


# -- text ------------------------------------------------------------------------------
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


def format_real_value(v: float) -> str:
    """A real as HTCondor's unparser writes it (new syntax): %.15E, zero as 0.0."""
    if v == 0.0:
        return "-0.0" if math.copysign(1.0, v) < 0 else "0.0"
    if math.isnan(v):
        return 'real("NaN")'
    if math.isinf(v):
        return 'real("INF")' if v > 0 else 'real("-INF")'
    return f"{v:.15E}"


def format_value(v: Any) -> str:
    """A literal or evaluated value as ClassAd text."""
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
    if isinstance(v, Mapping):  # a ClassAd
        return unparse_ad(v)
    raise TypeError(f"not a ClassAd value: {v!r}")


def unparse(expr: Expr, *, condor: bool = False) -> str:
    """Text that parses back to the same tree. With condor=True, HTCondor's own spelling
    of literals (reals as %.15E, lists as `{ a,b }`), as its string() function shows them."""
    return _unparse(expr, _TERNARY_PREC, condor)


def format_value_condor(v: Any) -> str:
    """A value as HTCondor's unparser writes it."""
    if isinstance(v, float):
        return format_real_value(v)
    if isinstance(v, list):
        return "{ " + ",".join(format_value_condor(x) for x in v) + " }"
    if isinstance(v, Mapping):  # a ClassAd
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
