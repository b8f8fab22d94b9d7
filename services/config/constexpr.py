"""Constant ClassAd expressions in knob values: ``HOUR = (60 * $(MINUTE))``.

HTCondor reads a numeric or boolean knob as a literal first and, failing that, evaluates it
as a ClassAd expression over constants (``string_is_long_param`` in condor_config.cpp). This
is that evaluator for the constant subset: numbers, ``true``/``false``, ``+ - * / %``,
comparisons, ``&& || !``, ``?:``, lists ``{...}`` as function arguments and the functions
min, max, int, real, floor, ceiling, round and ifThenElse. Integer ``/`` and ``%`` truncate
toward zero, as in ClassAds. Anything else (attribute references, strings) raises
``ValueError``: the full language lives in :mod:`mockpool.classad`.
"""

from __future__ import annotations

import math
import re

Number = int | float | bool

_TOKEN = re.compile(
    r"\s*(?:(?P<num>(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?)"
    r"|(?P<name>[A-Za-z_]\w*)"
    r"|(?P<op>&&|\|\||==|!=|<=|>=|[-+*/%()<>!?:,{}]))"
)


def _tokens(text: str) -> list[str]:
    out: list[str] = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise ValueError(f"unexpected {text[pos:].strip()[:20]!r}")
        out.append(m.group(m.lastgroup or "op"))
        pos = m.end()
    return out


def _num(v: object) -> int | float:
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise ValueError("expected a number")
    return v


def _unbool(v: object) -> object:
    return int(v) if isinstance(v, bool) else v


def _truth(v: object) -> bool:
    if isinstance(v, bool):
        return v
    if isinstance(v, int | float):
        return v != 0
    raise ValueError("expected a boolean")


def _round_half_away(x: float) -> int:
    return math.floor(abs(x) + 0.5) * (1 if x >= 0 else -1)


_FUNCS = {
    "int": lambda a: int(_num(a[0])),
    "real": lambda a: float(_num(a[0])),
    "floor": lambda a: math.floor(_num(a[0])),
    "ceiling": lambda a: math.ceil(_num(a[0])),
    "round": lambda a: _round_half_away(_num(a[0])),
}


MAX_DEPTH = 32  # nesting of parentheses, calls and unary operators; deeper is refused


class _Parser:
    def __init__(self, text: str) -> None:
        self.toks = _tokens(text)
        self.i = 0
        self.depth = 0

    def nest(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ValueError("expression nested too deeply")

    def peek(self) -> str | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self, want: str | None = None) -> str:
        tok = self.peek()
        if tok is None or (want is not None and tok != want):
            raise ValueError(f"expected {want or 'a value'}")
        self.i += 1
        return tok

    def expr(self) -> object:
        self.nest()
        cond = self.binary(0)
        if self.peek() == "?":
            self.take("?")
            a = self.expr()
            self.take(":")
            b = self.expr()
            cond = a if _truth(cond) else b
        self.depth -= 1
        return cond

    _LEVELS = (("||",), ("&&",), ("==", "!="), ("<", "<=", ">", ">="), ("+", "-"), ("*", "/", "%"))

    def binary(self, level: int) -> object:
        if level == len(self._LEVELS):
            return self.unary()
        left = self.binary(level + 1)
        while self.peek() in self._LEVELS[level]:
            op = self.take()
            right = self.binary(level + 1)
            left = _apply(op, left, right)
        return left

    def unary(self) -> object:
        tok = self.peek()
        if tok in ("-", "+", "!"):
            self.take()
            self.nest()
            v = self.unary()
            self.depth -= 1
            if tok == "!":
                return not _truth(v)
            return -_num(v) if tok == "-" else _num(v)
        return self.primary()

    def primary(self) -> object:
        tok = self.take()
        if tok == "(":
            v = self.expr()
            self.take(")")
            return v
        if tok[0].isdigit() or tok[0] == ".":
            return float(tok) if any(c in tok for c in ".eE") else int(tok)
        if tok.lower() in ("true", "false"):
            return tok.lower() == "true"
        if tok[0].isalpha() or tok[0] == "_":
            if self.peek() != "(":
                raise ValueError(f"{tok!r} is not a constant")
            return self.call(tok.lower())
        raise ValueError(f"unexpected {tok!r}")

    def call(self, name: str) -> object:
        self.take("(")
        args: list[object] = []
        while self.peek() != ")":
            if self.peek() == "{":
                self.take("{")
                while self.peek() != "}":
                    args.append(self.expr())
                    if self.peek() != "}":
                        self.take(",")
                self.take("}")
            else:
                args.append(self.expr())
            if self.peek() != ")":
                self.take(",")
        self.take(")")
        if name in ("min", "max") and args:
            nums = [_num(a) for a in args]
            return min(nums) if name == "min" else max(nums)
        if name == "ifthenelse" and len(args) == 3:
            return args[1] if _truth(args[0]) else args[2]
        if name in _FUNCS and len(args) == 1:
            return _FUNCS[name](args)
        raise ValueError(f"unsupported function {name}()")


def _apply(op: str, a: object, b: object) -> object:
    if op == "&&":
        return _truth(a) and _truth(b)
    if op == "||":
        return _truth(a) or _truth(b)
    if op in ("==", "!="):
        same = _num(_unbool(a)) == _num(_unbool(b))
        return same if op == "==" else not same
    x, y = _num(a), _num(b)
    if op == "<":
        return x < y
    if op == "<=":
        return x <= y
    if op == ">":
        return x > y
    if op == ">=":
        return x >= y
    if op == "+":
        return x + y
    if op == "-":
        return x - y
    if op == "*":
        return x * y
    if y == 0:
        raise ValueError("division by zero")
    if isinstance(x, int) and isinstance(y, int):
        q = abs(x) // abs(y) * (1 if (x >= 0) == (y >= 0) else -1)  # truncate toward zero
        return q if op == "/" else x - q * y
    return x / y if op == "/" else math.fmod(x, y)


def evaluate_constant(text: str) -> Number:
    """Evaluates a constant expression to an int, float or bool; ``ValueError`` otherwise."""
    p = _Parser(text)
    if p.peek() is None:
        raise ValueError("empty expression")
    try:
        value = p.expr()
    except OverflowError:  # int(1e999), floor(inf), a huge integer times a real
        raise ValueError("a number out of range") from None
    if p.peek() is not None:
        raise ValueError(f"unexpected {p.peek()!r}")
    if not isinstance(value, int | float | bool):
        raise ValueError("not a number or boolean")
    return value
