"""Logical lines of HTCondor's configuration and submit languages.

Rules, as HTCondor's line reader applies them (checked against htcondor 25's ``param``):

- every physical line is trimmed of leading and trailing whitespace;
- a line ending in a backslash continues on the next line: the backslash is removed and the
  next (trimmed) line is appended as is, so ``A = 1 \\`` + ``  2`` reads ``A = 1 2``;
- a line that starts with ``#`` is a comment; a backslash at its end does not continue it;
- a comment line inside a continuation is dropped, and the continuation goes on only if that
  comment line itself ends in a backslash (HTCondor also keeps the comment's last character
  in that case, which we do not reproduce);
- blank lines are skipped.
"""

from __future__ import annotations

from collections.abc import Iterator


class LineReader:
    """Reads logical lines, with access to the raw lines that follow (for ``@=`` values)."""

    def __init__(self, text: str) -> None:
        self._lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
        self._next = 0  # index of the next physical line

    def raw_line(self) -> tuple[int, str] | None:
        """The next physical line, untouched, with its 1-based number; None at the end."""
        if self._next >= len(self._lines):
            return None
        self._next += 1
        return self._next, self._lines[self._next - 1]

    def logical_line(self) -> tuple[int, str] | None:
        """The next logical line and the number of its first physical line; None at the end."""
        parts: list[str] = []
        first = 0
        while self._next < len(self._lines):
            self._next += 1
            line = self._lines[self._next - 1].strip()
            if line.startswith("#"):
                if parts and line.endswith("\\"):
                    continue  # a commented-out line inside a continuation that goes on
                if parts:
                    break
                continue
            if not line and not parts:
                continue
            if not parts:
                first = self._next
            if line.endswith("\\"):
                parts.append(line[:-1])
                continue
            parts.append(line)
            break
        if not parts:
            return None
        return first, "".join(parts).strip()

    def __iter__(self) -> Iterator[tuple[int, str]]:
        while (item := self.logical_line()) is not None:
            yield item
