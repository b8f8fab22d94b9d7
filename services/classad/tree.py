"""The ClassAd expression tree.

Nodes are plain slotted classes. Equality is structural and iterative (trees from long
`a || b || c ...` chains are thousands of levels deep), so it never hits the recursion
limit; use :func:`same_tree` or ``==``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

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
        from .unparse import unparse

        return f"{type(self).__name__}({unparse(self)!r})"

    def __str__(self) -> str:
        from .unparse import unparse

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
    from .ad import ClassAd

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
            if not isinstance(ax, ClassAd) or set(ax.keys_lower()) != set(ay.keys_lower()):
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
