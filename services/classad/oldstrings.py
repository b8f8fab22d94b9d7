"""String escaping in old-syntax ad text (`condor_status -long`), which differs from new.

Old syntax has one escape: `\\"` is a quote inside a string; every other backslash is
itself (so `"C:\\dir"` is C, colon, backslash, ...). A `\\"` that ends the line closes
the string after a backslash instead. HTCondor reads old text by rewriting it to new
escaping (compat_classad.cpp's ConvertEscapingOldToNew); we do the same, and write the
reverse.
"""

from __future__ import annotations

from .lexer import _read_quoted

_LINE_END = ("", "\n", "\r")


def old_to_new(rhs: str) -> str:
    """Rewrite the right-hand side of one old-syntax line to new-syntax escaping."""
    out = []
    n = len(rhs)
    for i, c in enumerate(rhs):
        out.append(c)
        if c == "\\":
            nxt = rhs[i + 1] if i + 1 < n else ""
            after = rhs[i + 2] if i + 2 < n else ""
            if nxt != '"' or after in _LINE_END:
                out.append("\\")  # a literal backslash
    return "".join(out).rstrip(" \t\r\n")


def _old_quote(s: str) -> str:
    return '"' + s.replace('"', '\\"') + '"'


def new_to_old(text: str) -> str:
    """Rewrite the string literals in new-syntax expression text to old escaping: the
    value's characters as they are, with only `"` escaped (as HTCondor's printOld)."""
    out = []
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if c == '"':
            value, j = _read_quoted(text, i + 1, '"')
            out.append(_old_quote(value))
            i = j
        elif c == "'":  # a quoted attribute name: copied as it is
            _, j = _read_quoted(text, i + 1, "'")
            out.append(text[i:j])
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)
