"""ClassAd operators on values, as HTCondor's classad library defines them.

Rules (checked against HTCondor's own library):
- arithmetic and comparison: ERROR if either side is ERROR, else UNDEFINED if either is
  UNDEFINED; booleans count as 0/1 in `+ - * / %` and in comparisons; strings, lists and
  ads in arithmetic are ERROR; int op int stays int and wraps at 64 bits.
- `/` and `%` truncate toward zero (C); a zero divisor is ERROR; `%` on reals is ERROR.
- string comparison ignores case for `==`/`<`...; `=?=` is exact and type-sensitive.
- unary `-`/`+` and the bitwise operators take numbers/integers only: `-true` is ERROR.
- shifts use the low six bits of the count, as the x86 instructions do.
- a real result of +infinity is ERROR; -infinity and NaN are values (HTCondor's check).
"""

from __future__ import annotations

import math
from typing import Any

from .ad import ClassAd
from .values import ERROR, INT_MIN, UNDEFINED, wrap_int

_ASCII_LOWER = {c: c + 32 for c in range(65, 91)}


def fold(s: str) -> str:
    """ASCII case folding, as C's strcasecmp does (non-ASCII letters keep their case)."""
    return s.lower() if s.isascii() else s.translate(_ASCII_LOWER)


def _num(v: Any) -> Any:
    """int or float for arithmetic (bool -> int), or None when not a number."""
    t = type(v)
    if t is int or t is float:
        return v
    if t is bool:
        return int(v)
    return None


def arith(op: str, a: Any, b: Any) -> Any:
    if a is ERROR or b is ERROR:
        return ERROR
    if a is UNDEFINED or b is UNDEFINED:
        return UNDEFINED
    x, y = _num(a), _num(b)
    if x is None or y is None:
        return ERROR
    if type(x) is int and type(y) is int:
        if op == "+":
            return wrap_int(x + y)
        if op == "-":
            return wrap_int(x - y)
        if op == "*":
            return wrap_int(x * y)
        if y == 0:
            return ERROR
        if op == "/":
            if x == INT_MIN and y == -1:
                return 2**63 - 1  # HTCondor guards the one overflowing quotient
            q = abs(x) // abs(y)
            return q if (x < 0) == (y < 0) else -q
        if x == INT_MIN and y == -1:
            return 0
        r = abs(x) % abs(y)
        return -r if x < 0 else r
    if op == "%":
        return ERROR  # % on reals
    x, y = float(x), float(y)
    try:
        if op == "+":
            r = x + y
        elif op == "-":
            r = x - y
        elif op == "*":
            r = x * y
        elif y == 0.0:
            r = (
                math.nan
                if x == 0.0 or x != x
                else math.copysign(math.inf, x) * math.copysign(1.0, y)
            )
        else:
            r = x / y
    except OverflowError:  # pragma: no cover - float ops give inf, not an exception
        r = math.inf
    # HTCondor reports a result of +infinity as ERROR (-infinity and NaN pass through)
    return ERROR if r == math.inf else r


def compare(op: str, a: Any, b: Any) -> Any:
    if a is ERROR or b is ERROR:
        return ERROR
    if a is UNDEFINED or b is UNDEFINED:
        return UNDEFINED
    ta, tb = type(a), type(b)
    if ta is str and tb is str:
        x, y = fold(a), fold(b)
    else:
        x, y = _num(a), _num(b)
        if x is None or y is None:
            return ERROR
        if type(x) is float or type(y) is float:  # HTCondor converts the int to a double
            x, y = float(x), float(y)
    if op == "==":
        return x == y
    if op == "!=":
        return x != y
    if op == "<":
        return x < y
    if op == "<=":
        return x <= y
    if op == ">":
        return x > y
    return x >= y


def identical(a: Any, b: Any) -> Any:
    """`a =?= b`: same type and same value; never UNDEFINED."""
    if a is UNDEFINED or b is UNDEFINED or a is ERROR or b is ERROR:
        return a is b
    ta, tb = type(a), type(b)
    if ta is not tb:
        if isinstance(a, (list, dict)) and isinstance(b, (list, dict)):
            return ERROR
        if isinstance(a, ClassAd) and isinstance(b, ClassAd):
            return ERROR
        return False
    if ta in (int, float, bool, str):
        return a == b
    return ERROR  # lists and ads: HTCondor's library reports ERROR


def bitwise(op: str, a: Any, b: Any) -> Any:
    if a is ERROR or b is ERROR:
        return ERROR
    if a is UNDEFINED or b is UNDEFINED:
        return UNDEFINED
    if type(a) is not int or type(b) is not int:
        return ERROR
    if op == "&":
        return a & b
    if op == "|":
        return a | b
    if op == "^":
        return a ^ b
    n = b & 63
    if op == "<<":
        return wrap_int(a << n)
    if op == ">>":
        if a >= 0:
            return a >> n
        # HTCondor sign-extends a negative value one bit at a time, `count` times: a
        # negative count leaves it unshifted and a count of 64 or more gives -1.
        return a if b < 0 else (-1 if b >= 64 else a >> b)
    if a >= 0:
        return a >> n
    # HTCondor clears the sign-extended bits with a mask shifted by (64 - count), both
    # shift counts taken modulo 64 as x86 does: so -8 >>> 0 is 0 and -8 >>> 63 is 1
    mask = ~wrap_int(-1 << ((64 - b) & 63))
    return (a >> n) & mask


def truth(v: Any) -> Any:
    """A value in a logical context: bool, number (nonzero is true), UNDEFINED, or ERROR."""
    t = type(v)
    if t is bool:
        return v
    if t is int or t is float:
        return v != 0
    if v is UNDEFINED:
        return UNDEFINED
    return ERROR


def unary(op: str, v: Any) -> Any:
    if v is ERROR:
        return ERROR
    if v is UNDEFINED:
        return UNDEFINED
    t = type(v)
    if op == "!":
        r = truth(v)
        return r if r is ERROR else not r
    if op == "~":
        return ~v if t is int else ERROR
    if t is int:
        return wrap_int(-v) if op == "-" else v
    if t is float:
        return -v if op == "-" else v
    return ERROR


ARITH_OPS = frozenset("+-*/%")
COMPARE_OPS = frozenset(("==", "!=", "<", "<=", ">", ">="))
BITWISE_OPS = frozenset(("&", "|", "^", "<<", ">>", ">>>"))
