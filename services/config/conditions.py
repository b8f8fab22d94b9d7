"""``if``/``elif``/``else``/``endif`` blocks, shared by config files and submit files.

A condition is ``[!]defined NAME``, ``[!]version <op> x.y[.z]`` (compared with the HTCondor
version mockpool follows) or text that, once its macros are expanded, reads as a boolean
(``true``/``false``/``yes``/``no``/``t``/``f``, a number, a constant expression); empty is
false. Anything else is an error, as in HTCondor's config and condor_submit.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from .configdict import _parse_if_bool

__all__ = ["HTCONDOR_VERSION", "Conditions", "evaluate_condition"]

HTCONDOR_VERSION = (25, 0, 0)  # what ``if version >= x.y`` compares with
_VERSION = re.compile(r"version\s*(==|>=|<=|>|<|!=)\s*(\d+(?:\.\d+){0,2})\Z", re.IGNORECASE)


def _compare_version(op: str, text: str) -> bool:
    want = tuple(int(p) for p in text.split("."))
    have = HTCONDOR_VERSION[: len(want)]  # "8.2.3 is equal to 8.2"
    return {
        "==": have == want,
        "!=": have != want,
        ">=": have >= want,
        "<=": have <= want,
        ">": have > want,
        "<": have < want,
    }[op]


def evaluate_condition(
    text: str, is_defined: Callable[[str], bool], expand: Callable[[str], str]
) -> bool:
    """The value of an ``if`` condition; ValueError names a condition it cannot read
    (``expand`` may raise its own error for a bad macro)."""
    negate = text.startswith("!")
    text = text[1:].strip() if negate else text
    words = text.split()
    if len(words) == 2 and words[0].lower() == "defined":
        value = is_defined(words[1])
    elif m := _VERSION.match(text):
        value = _compare_version(m.group(1), m.group(2))
    else:
        expanded = expand(text).strip()
        if not expanded:
            value = False
        else:
            try:
                value = _parse_if_bool(expanded)
            except ValueError:
                raise ValueError(f"unsupported 'if' condition {text!r}") from None
    return value != negate


class Conditions:
    """The open ``if`` blocks: whether the lines being read count."""

    def __init__(self) -> None:
        # one entry per open ``if``: (this branch is active, some branch was taken)
        self._open: list[tuple[bool, bool]] = []

    @property
    def active(self) -> bool:
        return all(active for active, _ in self._open)

    def step(self, word: str, rest: str, test: Callable[[str], bool]) -> None:
        """Apply one of ``if``/``elif``/``else``/``endif``; ``test`` evaluates a condition
        (called only where the branch could be taken). ValueError for a misplaced one."""
        if word == "if":
            value = test(rest) if self.active else False
            self._open.append((value, value))
            return
        if not self._open:
            raise ValueError(f"'{word}' without 'if'")
        _, taken = self._open.pop()
        if word == "endif":
            return
        if word == "else":
            self._open.append((not taken, True))
        else:
            value = (not taken) and self.active and test(rest)
            self._open.append((value, taken or value))

    def close(self) -> None:
        if self._open:
            raise ValueError("'if' without 'endif'")
