"""Where a macro is in a config or submit value, found as HTCondor finds it.

HTCondor (config.cpp ``next_config_macro``) looks for ``$``, an optional second ``$``, letters,
digits or ``_``, then ``(``; the text between is the macro's function:

- ``$(`` is a plain macro and ``$ENV(`` an environment variable. Their body is a name of
  letters, digits, ``_``, ``.`` and ``/``, then optionally ``:`` and a default of those
  characters, ``$``, space, ``,``, ``\\`` and ``:``, where a ``(`` skips to the next ``)``.
  Any other character (``$(A * 2)``, ``$(X:a-b)``) or a missing ``)`` means the text is not a
  macro; the search goes on inside it, so ``$(X:$(A)-1)`` still expands ``$(A)``.
- ``$INT(``, ``$REAL(``, ``$EVAL(``, ``$CHOICE(``, ``$SUBSTR(``, ``$RANDOM_INTEGER(``,
  ``$RANDOM_CHOICE(``, ``$STRING(``, ``$BASENAME(``, ``$DIRNAME(`` and ``$F...(`` (the
  filename letters): the body is anything up to the first ``)``; with no ``)`` it is text.
- ``$$(`` (match-time substitution) and any other ``$NAME(`` are not macros; the search goes
  on from their ``(``.
- ``$(DOLLAR)`` is passed over while expanding and turned into ``$`` at the end.
"""

from __future__ import annotations

from dataclasses import dataclass

SPECIAL = frozenset(
    {
        "ENV",
        "RANDOM_CHOICE",
        "RANDOM_INTEGER",
        "CHOICE",
        "SUBSTR",
        "INT",
        "REAL",
        "STRING",
        "EVAL",
        "BASENAME",
        "DIRNAME",
    }
)
_FILENAME_LETTERS = frozenset("pnxdqabfwu")
_DEFAULT_EXTRA = frozenset("$ ,\\:")  # allowed after the ':' besides the name characters


@dataclass(frozen=True)
class Span:
    """One macro use: ``text[start:end]`` is ``$FUNC(body)``."""

    start: int
    end: int  # exclusive: just past the ")"
    func: str  # "" for $(...), else ENV, INT, ... (as written)
    body: str
    colon: int  # index in body of the ":" before a default; -1 when there is none

    @property
    def name(self) -> str:
        return self.body if self.colon < 0 else self.body[: self.colon]

    @property
    def default(self) -> str | None:
        return None if self.colon < 0 else self.body[self.colon + 1 :]


def _idchar(c: str) -> bool:
    return (c.isascii() and c.isalnum()) or c in "_./"


def _function(prefix: str) -> str | None:
    """The macro function ``$prefix(`` names; None when it is not a macro."""
    if prefix == "":
        return ""
    if prefix[0] == "F" and all(c.lower() in _FILENAME_LETTERS for c in prefix[1:]):
        return prefix
    return prefix if prefix in SPECIAL else None


def _name_body_end(text: str, start: int) -> tuple[int, int] | None:
    """(index of the closing ")", colon index in the body or -1) for a ``$(``/``$ENV(`` body
    starting at ``start``; None when the text there is not such a body."""
    i, colon, n = start, -1, len(text)
    while i < n and text[i] != ")":
        c = text[i]
        i += 1
        if colon < 0 and c == ":":
            colon = i - 1 - start
            continue
        if colon >= 0:
            if c == "(":
                close = text.find(")", i)
                if close >= 0:
                    i = close + 1
                    continue
            elif c in _DEFAULT_EXTRA:
                continue
        if not _idchar(c):
            return None
    return (i, colon) if i < n else None


def next_macro(text: str, pos: int = 0, *, dollar_only: bool = False) -> Span | None:
    """The first macro at or after ``pos``. ``$(DOLLAR)`` is passed over, or, with
    ``dollar_only``, is the only macro found."""
    n = len(text)
    i = pos
    while True:
        d = text.find("$", i)
        if d < 0:
            return None
        p = d + 1
        double = p < n and text[p] == "$"
        if double:
            p += 1
        q = p
        while q < n and (text[q].isascii() and (text[q].isalnum() or text[q] == "_")):
            q += 1
        if q >= n or text[q] != "(":
            i = max(q, d + 1)
            continue
        func = None if double else _function(text[p:q])
        if func is None:
            i = q
            continue
        body = q + 1
        if func in ("", "ENV"):
            found = _name_body_end(text, body)
            if found is None:
                i = body
                continue
            close, colon = found
        else:
            close, colon = text.find(")", body), -1
            if close < 0:
                i = body
                continue
        is_dollar = func == "" and text[body:close].lower() == "dollar"
        if is_dollar != dollar_only:
            i = close  # passed over whole, as HTCondor's body check skips it
            continue
        return Span(d, close + 1, func, text[body:close], colon)


def spans(text: str) -> list[Span]:
    """Every macro of ``text`` in one pass, as written (nothing expanded or rescanned)."""
    out: list[Span] = []
    pos = 0
    while (span := next_macro(text, pos)) is not None:
        out.append(span)
        pos = span.end
    return out


def replace_dollars(text: str) -> str:
    """``$(DOLLAR)`` as ``$``, as HTCondor does once the other macros are expanded."""
    pos = 0
    while (span := next_macro(text, pos, dollar_only=True)) is not None:
        text = text[: span.start] + "$" + text[span.end :]
        pos = span.start
    return text
