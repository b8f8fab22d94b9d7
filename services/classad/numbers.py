"""Number literals that HTCondor's ClassAd language does not keep as written.

The language reads an integer literal beyond 64 bits as 0 and a real beyond a double as
INF (as HTCondor's lexer does; checked against classad2). Code that stores what a user
wrote (the submit path) refuses such literals rather than keep a value the user did not
mean.
"""

from __future__ import annotations

from .errors import ClassAdSyntaxError
from .lexer import tokenize

INT64_MAX = 2**63 - 1


def out_of_range_number(text: str) -> str | None:
    """The first number literal in ``text`` that HTCondor would not keep as written: an
    integer beyond 64 bits (the language reads it as 0) or a real beyond a double (INF).
    None when every literal fits, or when ``text`` does not tokenize."""
    try:
        toks = tokenize(text)
    except ClassAdSyntaxError:
        return None
    for k, tok in enumerate(toks):
        if tok.kind == "int" and tok.value > INT64_MAX:  # type: ignore[operator]
            negated = k > 0 and toks[k - 1].kind == "op" and toks[k - 1].value == "-"
            if negated and k > 1:  # "x - 9223372036854775808" subtracts: not a negation
                before = toks[k - 2]
                negated = before.kind == "op" and before.value not in (")", "]", "}")
            if not (negated and tok.value == INT64_MAX + 1):
                return text[tok.pos : tok.end]
        elif tok.kind == "real" and tok.value == float("inf"):
            return text[tok.pos : tok.end]
    return None
