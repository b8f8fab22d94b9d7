"""Parse ClassAd expressions and ads (new syntax `[a = 1; b = 2]` and old `a = 1` lines).

Precedence climbing with an explicit nesting limit: deeply nested input is a syntax error,
never a RecursionError. Long left-associative chains (`a || b || c ...`) are built in a
loop and do not count as nesting.
"""

from __future__ import annotations

from .ad import ClassAd
from .errors import ClassAdSyntaxError
from .lexer import Token, tokenize
from .oldstrings import old_to_new
from .tree import (
    BINARY_PRECEDENCE,
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

MAX_NESTING = 120  # parentheses, lists, ads, calls, unary operators and ?: branches
_KEYWORD_OPS = {"is": "=?=", "isnt": "=!="}
_LITERAL_NAMES = {"true": True, "false": False, "undefined": UNDEFINED, "error": ERROR}


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.toks = tokenize(text)
        self.i = 0
        self.depth = 0

    # -- token helpers ----------------------------------------------------------
    @property
    def tok(self) -> Token:
        return self.toks[self.i]

    def fail(self, message: str, expected: str, tok: Token | None = None) -> ClassAdSyntaxError:
        t = tok or self.tok
        return ClassAdSyntaxError(message, self.text, t.pos, expected)

    def is_op(self, op: str) -> bool:
        t = self.toks[self.i]
        return t.kind == "op" and t.value == op

    def expect_op(self, op: str, what: str = "") -> Token:
        t = self.tok
        if t.kind != "op" or t.value != op:
            raise self.fail("syntax error", what or f"'{op}'")
        self.i += 1
        return t

    def enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise self.fail(
                f"expression nested more than {MAX_NESTING} levels deep", "less nesting"
            )

    def binary_op(self) -> str | None:
        t = self.tok
        if t.kind == "op" and t.value in BINARY_PRECEDENCE:
            return t.value  # type: ignore[return-value]
        if t.kind == "name" and t.value.lower() in _KEYWORD_OPS:  # type: ignore[union-attr]
            return _KEYWORD_OPS[t.value.lower()]  # type: ignore[union-attr]
        return None

    # -- grammar -----------------------------------------------------------------
    def expression(self) -> Expr:
        cond = self.binary(1)
        if self.is_op("?"):
            self.i += 1
            self.enter()
            then = self.expression()
            self.expect_op(":", "':' of the ?: operator")
            other = self.expression()
            self.depth -= 1
            return Cond(cond, then, other)
        return cond

    def binary(self, min_prec: int) -> Expr:
        left = self.unary()
        while True:
            op = self.binary_op()
            if op is None:
                return left
            prec = BINARY_PRECEDENCE[op]
            if prec < min_prec:
                return left
            self.i += 1
            right = self.binary(prec + 1)
            left = Binary(op, left, right)

    def unary(self) -> Expr:
        ops: list[str] = []
        while self.tok.kind == "op" and self.tok.value in ("-", "+", "!", "~"):
            ops.append(self.tok.value)  # type: ignore[arg-type]
            self.i += 1
            self.enter()
        node = self.postfix()
        for op in reversed(ops):
            node = Unary(op, node)
        self.depth -= len(ops)
        return node

    def postfix(self) -> Expr:
        node = self.primary()
        while True:
            if self.is_op("."):
                self.i += 1
                node = Select(node, self.attr_name())
            elif self.is_op("["):
                self.i += 1
                self.enter()
                index = self.expression()
                self.expect_op("]", "']' closing the subscript")
                self.depth -= 1
                node = Subscript(node, index)
            elif self.is_op("?:"):
                # HTCondor's elvis binds tighter than every other operator, unary ones
                # included: `1 ?: 2 * 3` is 3 and `-undefined ?: 4` is -4
                self.i += 1
                self.enter()
                node = Elvis(node, self.unary())
                self.depth -= 1
            else:
                return node

    def attr_name(self) -> str:
        t = self.tok
        if t.kind == "qname" or (t.kind == "name" and t.value.lower() not in _KEYWORD_OPS):  # type: ignore[union-attr]
            self.i += 1
            return t.value  # type: ignore[return-value]
        raise self.fail("syntax error", "an attribute name")

    def primary(self) -> Expr:
        t = self.tok
        k = t.kind
        if k == "int":
            self.i += 1
            prev = self.toks[self.i - 2] if self.i >= 2 else None
            negated = prev is not None and prev.kind == "op" and prev.value == "-"
            return Literal(_int_literal(t.value, negated))  # type: ignore[arg-type]
        if k == "real":
            self.i += 1
            return Literal(t.value)
        if k == "string":
            self.i += 1
            return Literal(t.value)
        if k == "qname":
            self.i += 1
            return AttrRef(t.value)  # type: ignore[arg-type]
        if k == "name":
            low = t.value.lower()  # type: ignore[union-attr]
            if low in _LITERAL_NAMES:
                self.i += 1
                return Literal(_LITERAL_NAMES[low])
            if low in _KEYWORD_OPS:
                raise self.fail("syntax error", "an expression")
            self.i += 1
            if self.is_op("("):
                return self.call(t.value)  # type: ignore[arg-type]
            return AttrRef(t.value)  # type: ignore[arg-type]
        if k == "op":
            v = t.value
            if v == "(":
                self.i += 1
                self.enter()
                inner = self.expression()
                self.expect_op(")", "')'")
                self.depth -= 1
                return Paren(inner)
            if v == "{":
                return self.list_literal()
            if v == "[":
                return AdExpr(self.new_ad())
            if v == ".":
                self.i += 1
                return AttrRef(self.attr_name(), absolute=True)
        raise self.fail("syntax error", "an expression")

    def call(self, name: str) -> Expr:
        self.expect_op("(")
        self.enter()
        args: list[Expr] = []
        if not self.is_op(")"):
            while True:
                args.append(self.expression())
                if self.is_op(","):
                    self.i += 1
                    continue
                break
        self.expect_op(")", f"',' or ')' in the arguments of {name}()")
        self.depth -= 1
        return Call(name, tuple(args))

    def list_literal(self) -> Expr:
        self.expect_op("{")
        self.enter()
        items: list[Expr] = []
        if not self.is_op("}"):
            while True:
                items.append(self.expression())
                if self.is_op(","):
                    self.i += 1
                    if self.is_op("}"):  # a trailing comma is allowed
                        break
                    continue
                break
        self.expect_op("}", "',' or '}' in a list")
        self.depth -= 1
        return ListExpr(tuple(items))

    def new_ad(self) -> ClassAd:
        """`[ name = expr; ... ]`, a trailing ';' allowed."""
        self.expect_op("[")
        self.enter()
        ad = ClassAd()
        while not self.is_op("]"):
            name = self.attr_name()
            self.expect_op("=", f"'=' after the attribute name {name}")
            ad[name] = self.expression()
            if self.is_op(";"):
                self.i += 1
                continue
            if not self.is_op("]"):
                raise self.fail("syntax error", "';' or ']' in a ClassAd")
        self.i += 1
        self.depth -= 1
        return ad

    def at_end(self) -> None:
        if self.tok.kind != "eof":
            raise self.fail("unexpected text after the expression", "end of input")


def _int_literal(v: int, negated: bool) -> int:
    # HTCondor's lexer turns an out-of-range integer literal into 0; the one exception is
    # 2**63 under a minus sign, which is the smallest 64-bit integer.
    if v <= 2**63 - 1:
        return v
    if v == 2**63 and negated:
        return -(2**63)
    return 0


def parse_expr(text: str) -> Expr:
    """Parse one ClassAd expression; raises ClassAdSyntaxError on malformed text."""
    if not isinstance(text, str):
        raise TypeError(f"parse_expr needs a str, got {type(text).__name__}")
    p = _guarded(text)
    e = _run(p, p.expression)
    p.at_end()
    return e


def _guarded(text: str) -> _Parser:
    try:
        return _Parser(text)
    except RecursionError:  # pragma: no cover - the lexer does not recurse
        raise ClassAdSyntaxError("input too complex", text, 0, "simpler text") from None


def _run(p: _Parser, fn):
    try:
        return fn()
    except RecursionError:
        raise ClassAdSyntaxError(
            "expression nested too deeply", p.text, p.tok.pos, "less nesting"
        ) from None


def parse_ad(text: str) -> ClassAd:
    """One ad: new syntax `[ ... ]` or old syntax lines `Name = expr`."""
    stripped = text.lstrip()
    if stripped.startswith("["):
        p = _guarded(text)
        ad = _run(p, p.new_ad)
        p.at_end()
        return ad
    ads = _parse_old(text, allow_many=False)
    return ads[0] if ads else ClassAd()


def parse_ads(text: str) -> list[ClassAd]:
    """Several ads: new-syntax ads one after another, or old-syntax ads separated by blank lines."""
    if text.lstrip().startswith("["):
        p = _guarded(text)
        ads: list[ClassAd] = []
        while p.tok.kind != "eof":
            ads.append(_run(p, p.new_ad))
            if p.is_op(";") or p.is_op(","):
                p.i += 1
        return ads
    return _parse_old(text, allow_many=True)


def _parse_old(text: str, allow_many: bool) -> list[ClassAd]:
    """Old syntax: `Name = expr` per line; blank lines separate ads; `#` lines are comments."""
    ads: list[ClassAd] = []
    cur: ClassAd | None = None
    offset = 0
    lines = text.split("\n")
    idx = 0
    while idx < len(lines):
        line = lines[idx]
        line_start = offset
        offset += len(line) + 1
        idx += 1
        s = line.strip()
        if not s:
            if cur is not None and allow_many:
                ads.append(cur)
                cur = None
            continue
        if s.startswith("#") or (s.startswith("***") and s.endswith("***")):
            continue
        eq = _old_assignment(line)
        if eq is None:
            raise ClassAdSyntaxError(
                "syntax error in old-syntax ad", text, line_start, "Name = expression"
            )
        name, expr_start = eq
        expr_text = old_to_new(line[expr_start:])
        try:
            expr = parse_expr(expr_text)
        except ClassAdSyntaxError as e:
            raise ClassAdSyntaxError(
                e.reason, text, line_start + expr_start + e.position, e.expected
            ) from None
        if cur is None:
            if ads and not allow_many:
                raise ClassAdSyntaxError("more than one ad", text, line_start, "a single ad")
            cur = ClassAd()
        cur[name] = expr
    if cur is not None:
        ads.append(cur)
    return ads


def _old_assignment(line: str) -> tuple[str, int] | None:
    """(`Name`, index where the expression starts) for `Name = expr`, else None."""
    s = line.lstrip()
    lead = len(line) - len(s)
    if s.startswith("'"):
        end = s.find("'", 1)
        if end < 0:
            return None
        name, rest_at = s[1:end], end + 1
    else:
        j = 0
        while j < len(s) and (s[j].isalnum() or s[j] == "_"):
            j += 1
        name, rest_at = s[:j], j
        if not name or not (name[0].isalpha() or name[0] == "_"):
            return None
    k = rest_at
    while k < len(s) and s[k] in " \t":
        k += 1
    if k >= len(s) or s[k] != "=" or s.startswith("==", k):
        return None
    return name, lead + k + 1
