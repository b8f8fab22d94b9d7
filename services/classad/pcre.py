"""Regular expressions as HTCondor's ClassAd library runs them: PCRE2, on bytes, with a
match limit.

HTCondor (src/classad/fnCall.cpp, ``regexp_helper``) compiles the pattern with PCRE2 and
only the options the user's ``i``/``m``/``s``/``x`` letters ask for (no UTF mode: ``.``
matches one byte), matches with PCRE2's default match context, whose match limit
(10,000,000) turns a catastrophic pattern into PCRE2_ERROR_MATCHLIMIT, and makes any match
error the function's ERROR. We use the same library through the ``pcre2`` binding's low-level
module, undoing the two options that binding adds on its own (ALT_BSUX, NEVER_BACKSLASH_C),
and without JIT (HTCondor does not JIT, and the JIT counts its limit differently).

Cost. A match is first tried with a low limit set in the pattern (``(*LIMIT_MATCH=n)``,
which can only lower the caller's), then with limits ten times higher up to HTCondor's own;
the evaluation is charged each tier it is tried at (``limit // PCRE_STEPS_PER_STEP`` steps,
see :mod:`.budget`), and the subject's length as for a string that long, before the match
runs, so a budget stops a costly regular expression before it runs rather than after. A result within a tier is the one the full limit gives, so
the tiers change the cost and never the answer.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

from pcre2 import _cy

from .budget import STRING_BYTES_PER_STEP

MATCH_LIMIT = 10_000_000  # PCRE2's default, which HTCondor's classad library keeps
TIERS = (100, 1_000, 10_000, 100_000, 1_000_000, MATCH_LIMIT)
# Measured: PCRE2's interpreter takes ~57 ns a backtracking step (0.57 s to reach 10,000,000),
# 25 of them about one evaluation step. So the last tier costs 400,000 steps, more than
# EVAL_BUDGET: a default budget stops a match before HTCondor's own limit would.
PCRE_STEPS_PER_STEP = 25

_CASELESS, _MULTILINE, _DOTALL, _EXTENDED = 0x8, 0x400, 0x20, 0x80
_ALT_BSUX, _NEVER_BACKSLASH_C = 0x2, 0x100000  # the binding's additions, undone
_ANCHORED, _NOTEMPTY_ATSTART = 0x80000000, 0x8
_MATCH_LIMIT_ERRORS = (-47, -53, -63)  # MATCHLIMIT, DEPTHLIMIT, HEAPLIMIT
_CONTEXT = _cy.create_match_context()


class RegexError(Exception):
    """The pattern does not compile, or the match failed (over PCRE2's limits)."""


def _options(letters: str) -> int:
    # As HTCondor: the letters it knows, anywhere in the string; others are ignored.
    opts = 0
    for ch, bit in (("i", _CASELESS), ("m", _MULTILINE), ("s", _DOTALL), ("x", _EXTENDED)):
        if ch in letters:
            opts |= bit
    return opts


@lru_cache(maxsize=2048)
def _compile(pattern: bytes, opts: int, limit: int) -> _cy.PCRE2Code:
    text = pattern if limit >= MATCH_LIMIT else b"(*LIMIT_MATCH=%d)" % limit + pattern
    try:
        return _cy.compile(text, opts, _ALT_BSUX | _NEVER_BACKSLASH_C)
    except _cy.LibraryError as exc:
        raise RegexError(f"bad regular expression: {exc}") from None


def _c_string(s: str) -> bytes:
    # HTCondor passes C strings: a NUL ends the pattern and the target.
    return s.encode("utf-8", "surrogatepass").split(b"\0", 1)[0]


class Regex:
    """A compiled pattern; :meth:`search` charges ``charge(steps)`` before each try."""

    __slots__ = ("_own_limit", "groups", "opts", "pattern")

    def __init__(self, pattern: str, letters: str) -> None:
        self.pattern = _c_string(pattern)
        self.opts = _options(letters)
        code = _compile(self.pattern, self.opts, MATCH_LIMIT)  # raises RegexError
        self.groups = _cy.pattern_capture_count(code)
        # a pattern that sets its own limits is run once, at HTCondor's, and charged for it
        self._own_limit = b"(*LIMIT_" in self.pattern

    def search(
        self, subject: bytes, start: int, options: int, charge: Callable[[int], None]
    ) -> list[tuple[int, int]] | None:
        """Spans of group 0..n (``(-1, -1)`` when unset) of the first match at or after
        ``start``, or None. RegexError past PCRE2's match limit (HTCondor's ERROR)."""
        tiers = TIERS[-1:] if self._own_limit else TIERS
        for limit in tiers:
            charge(max(1, limit // PCRE_STEPS_PER_STEP))
            code = _compile(self.pattern, self.opts, limit)
            try:
                md, _, _ = _cy.match(code, subject, len(subject), start, _CONTEXT, options)
            except _cy.LibraryError as exc:
                if exc.code in _MATCH_LIMIT_ERRORS and limit < MATCH_LIMIT:
                    continue  # over this tier: try the next, charged again
                raise RegexError(f"regular expression failed: {exc}") from None
            if md is None:
                return None
            return [
                _cy.match_substring_span_bynumber(md, subject, g) for g in range(self.groups + 1)
            ]
        raise AssertionError("unreachable: the last tier raises or returns")


@lru_cache(maxsize=1024)
def compile_regex(pattern: str, letters: str) -> Regex:
    """A cached :class:`Regex`; RegexError when the pattern does not compile."""
    return Regex(pattern, letters)


def _subject(target: str, charge: Callable[[int], None]) -> bytes:
    # encoding and scanning a long subject costs its length, whatever the tiers say
    charge(len(target) // STRING_BYTES_PER_STEP)
    return _c_string(target)


def search(rx: Regex, target: str, charge: Callable[[int], None]) -> bool:
    """regexp(): whether ``rx`` matches anywhere in ``target``."""
    return rx.search(_subject(target, charge), 0, 0, charge) is not None


def substitute(
    rx: Regex,
    target: str,
    repl: str,
    full: bool,
    every: bool,
    charge: Callable[[int], None],
    charge_bytes: Callable[[int], None],
) -> str:
    """regexps()/replace()/replaceAll(), as HTCondor's regexp_helper builds its output.

    ``full``: the whole target with the match(es) replaced (else only the replacement);
    ``every``: every match, not overlapping. In the replacement ``\\N`` (one digit) is group
    N, unset groups are empty, and a group past the last one that took part is an error."""
    subject = _subject(target, charge)
    template = _c_string(repl)
    out = bytearray()
    pos = 0
    after_empty = False
    while True:
        if pos > len(subject):
            # HTCondor steps one byte past an empty match at the end and PCRE2 refuses the
            # offset (PCRE2_ERROR_BADOFFSET): a global replace that matched empty there is ERROR
            raise RegexError("global replacement ran past the end after an empty match")
        opts = (_NOTEMPTY_ATSTART | _ANCHORED) if after_empty else 0
        spans = rx.search(subject, pos, opts, charge)
        if spans is None:
            if after_empty:
                # no non-empty match right after an empty one: keep one byte, go on
                out += subject[pos : pos + 1]
                pos += 1
                after_empty = False
                continue
            break
        start, end = spans[0]
        if full:
            out += subject[pos:start]
        used = 1 + max(g for g, s in enumerate(spans) if s[0] >= 0)  # pcre2_match's rc
        piece = _expand(template, subject, spans, used)
        charge_bytes(len(piece) + (start - pos if full else 0))
        out += piece
        pos = end
        after_empty = start == end
        if not every:
            break
    if full:
        out += subject[pos:]
    return bytes(out).decode("utf-8", "replace")


_GROUP_REF = re.compile(rb"\\([0-9])")


@lru_cache(maxsize=256)
def _template(template: bytes) -> tuple[bytes | int, ...]:
    """The replacement as literal pieces and group numbers (``\\N``: one digit; a backslash
    before anything else stays, as in HTCondor's scan of it)."""
    parts = _GROUP_REF.split(template)
    return tuple(p if k % 2 == 0 else int(p) for k, p in enumerate(parts) if p or k % 2)


def _expand(template: bytes, subject: bytes, spans: list[tuple[int, int]], used: int) -> bytes:
    pieces = []
    for p in _template(template):
        if type(p) is int:
            if p >= used:
                raise RegexError(f"replacement refers to group {p}, which did not take part")
            s, e = spans[p]
            pieces.append(subject[s:e] if s >= 0 else b"")
        else:
            pieces.append(p)
    return b"".join(pieces)
