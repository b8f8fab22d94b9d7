"""Tokens of the ClassAd language."""

from __future__ import annotations

from dataclasses import dataclass

from .errors import ClassAdSyntaxError

# Longest first, so `=?=` wins over `=`, `>>>` over `>>`.
OPERATORS = (
    "=?=",
    "=!=",
    ">>>",
    "==",
    "!=",
    "<=",
    ">=",
    "<<",
    ">>",
    "&&",
    "||",
    "?:",
    "<",
    ">",
    "+",
    "-",
    "*",
    "/",
    "%",
    "!",
    "~",
    "&",
    "|",
    "^",
    "?",
    ":",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ",",
    ";",
    ".",
    "=",
)
KEYWORDS = {"true", "false", "undefined", "error", "is", "isnt"}
_DIGITS = frozenset("0123456789")
_IDENT_START = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")
_IDENT = _IDENT_START | _DIGITS
_ESCAPES = {
    "n": "\n",
    "t": "\t",
    "r": "\r",
    "b": "\b",
    "f": "\f",
    "v": "\v",
    "a": "\a",
    "\\": "\\",
    '"': '"',
    "'": "'",
    "?": "?",
}


@dataclass(slots=True)
class Token:
    kind: str  # "int", "real", "string", "name", "qname", "op", "eof"
    value: object
    pos: int
    end: int


def _read_quoted(text: str, i: int, quote: str) -> tuple[str, int]:
    """Read a quoted string starting after the opening quote; return (value, index after).

    HTCondor strings are bytes: an octal escape is one byte, so "\\303\\251" is "é".
    """
    out = bytearray()
    n = len(text)
    start = i - 1
    while True:
        j = i
        # fast path over ordinary characters
        while j < n and text[j] != quote and text[j] != "\\":
            j += 1
        out += text[i:j].encode("utf-8", "surrogateescape")
        if j >= n:
            raise ClassAdSyntaxError("unterminated string", text, start, f"closing {quote}")
        if text[j] == quote:
            return out.decode("utf-8", "surrogateescape"), j + 1
        if j + 1 >= n:
            raise ClassAdSyntaxError("unterminated string", text, start, f"closing {quote}")
        c = text[j + 1]
        if c in "01234567":
            k = j + 1
            digits = ""
            # up to three octal digits; a leading digit above 3 allows only two
            limit = 3 if c in "0123" else 2
            while k < n and len(digits) < limit and text[k] in "01234567":
                digits += text[k]
                k += 1
            out.append(int(digits, 8))
            i = k
        else:
            out += _ESCAPES.get(c, c).encode("utf-8", "surrogateescape")
            i = j + 2


def tokenize(text: str) -> list[Token]:
    toks: list[Token] = []
    i, n = 0, len(text)
    while True:
        # whitespace and comments
        while i < n:
            c = text[i]
            if c in " \t\r\n\f\v":
                i += 1
            elif text.startswith("//", i):
                j = text.find("\n", i)
                i = n if j < 0 else j + 1
            elif text.startswith("/*", i):
                j = text.find("*/", i + 2)
                if j < 0:
                    raise ClassAdSyntaxError("unterminated comment", text, i, "*/")
                i = j + 2
            else:
                break
        if i >= n:
            toks.append(Token("eof", None, n, n))
            return toks
        c = text[i]
        if c in _DIGITS or (c == "." and i + 1 < n and text[i + 1] in _DIGITS):
            j = i
            while j < n and text[j] in _DIGITS:
                j += 1
            is_real = False
            if j < n and text[j] == "." and not (j + 1 < n and text[j + 1] in _IDENT_START):
                is_real = True
                j += 1
                while j < n and text[j] in _DIGITS:
                    j += 1
            if j < n and text[j] in "eE":
                k = j + 1
                if k < n and text[k] in "+-":
                    k += 1
                if k < n and text[k] in _DIGITS:
                    is_real = True
                    j = k
                    while j < n and text[j] in _DIGITS:
                        j += 1
            if j < n and text[j] in _IDENT_START:
                raise ClassAdSyntaxError("malformed number", text, i, "a number")
            lit = text[i:j]
            if not is_real and len(lit) > 1 and lit[0] == "0":
                # HTCondor's lexer rejects integers with leading zeros (no octal)
                raise ClassAdSyntaxError("integer with a leading zero", text, i, "a number")
            if is_real:
                toks.append(Token("real", float(lit), i, j))
            else:
                # beyond 20 digits the value is out of range anyway (and int() refuses
                # very long strings)
                toks.append(Token("int", int(lit) if len(lit) <= 20 else 2**64, i, j))
            i = j
        elif c in _IDENT_START:
            j = i + 1
            while j < n and text[j] in _IDENT:
                j += 1
            toks.append(Token("name", text[i:j], i, j))
            i = j
        elif c == '"':
            s, j = _read_quoted(text, i + 1, '"')
            toks.append(Token("string", s, i, j))
            i = j
        elif c == "'":
            s, j = _read_quoted(text, i + 1, "'")
            toks.append(Token("qname", s, i, j))
            i = j
        else:
            for op in OPERATORS:
                if text.startswith(op, i):
                    toks.append(Token("op", op, i, i + len(op)))
                    i += len(op)
                    break
            else:
                raise ClassAdSyntaxError(f"unexpected character {c!r}", text, i, "an expression")
