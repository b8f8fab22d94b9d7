"""Where each key and value of a TOML document is: the line numbers of a spec's messages.

``tomllib`` gives values without positions. This scanner reads a document that tomllib has
already accepted and records, for every key path, the line of its key (or table header)
and the line where its value's text begins, whatever the layout: quoted and dotted keys,
``[a.b]`` and ``[[a]]`` headers, inline tables, arrays (of tables too) over several lines,
multi-line strings. A path is a tuple of keys and array indices: ``("startds", 0,
"config", "text")`` is the ``text`` of the first ``[[startds]]``'s config, written as
``[startds.config]`` ``text = ...``, ``config.text = ...`` or ``config = { text = ... }``.

It trusts the text to be valid TOML (it is read after tomllib): on anything else it
stops where it is and keeps what it found, never raising.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

Path = tuple[str | int, ...]

_BARE = re.compile(r"[A-Za-z0-9_-]+")
_BLANK = " \t"


@dataclass(frozen=True)
class Place:
    key_line: int  # the key's line (a table's header line)
    value_line: int  # where the value's text begins (a multi-line string: its first line)


class _Stop(Exception):
    """The text is not the TOML the scanner expects: keep what was found."""


class _Scanner:
    def __init__(self, text: str) -> None:
        self.s = text.replace("\r\n", "\n")
        self.i = 0
        self.line = 1
        self.places: dict[Path, Place] = {}
        self.arrays: dict[Path, int] = {}  # [[array]] path -> tables so far

    # --- characters ---------------------------------------------------------------

    def peek(self, n: int = 1) -> str:
        return self.s[self.i : self.i + n]

    def advance(self, n: int) -> None:
        self.line += self.s.count("\n", self.i, self.i + n)
        self.i += n

    def blanks(self, newlines: bool = False) -> None:
        """Skips spaces and tabs (and newlines and comments, if ``newlines``)."""
        while self.i < len(self.s):
            c = self.s[self.i]
            if c in _BLANK or (newlines and c == "\n"):
                self.advance(1)
            elif c == "#" and newlines:
                end = self.s.find("\n", self.i)
                self.advance((len(self.s) if end < 0 else end) - self.i)
            else:
                return

    def expect(self, text: str) -> None:
        if self.peek(len(text)) != text:
            raise _Stop
        self.advance(len(text))

    # --- keys -------------------------------------------------------------------

    def simple_key(self) -> str:
        c = self.peek()
        if c in ('"', "'"):
            start = self.i
            self.string_end()
            raw = self.s[start : self.i]
            try:
                return str(tomllib.loads(f"k = {raw}")["k"])
            except tomllib.TOMLDecodeError:
                raise _Stop from None
        m = _BARE.match(self.s, self.i)
        if not m:
            raise _Stop
        self.advance(m.end() - self.i)
        return m.group()

    def keys(self) -> list[str]:
        keys = [self.simple_key()]
        self.blanks()
        while self.peek() == ".":
            self.advance(1)
            self.blanks()
            keys.append(self.simple_key())
            self.blanks()
        return keys

    def resolve(self, keys: list[str]) -> Path:
        """A header's keys as a path: a key that names an array of tables means its last."""
        path: Path = ()
        for k in keys:
            path += (k,)
            if path in self.arrays:
                path += (self.arrays[path] - 1,)
        return path

    # --- values -----------------------------------------------------------------

    def string_end(self) -> int:
        """Moves past the string at the cursor; the line its content starts on."""
        quote = self.peek()
        if self.peek(3) == quote * 3:
            self.advance(3)
            if self.peek() == "\n":  # a newline right after the opening quotes is dropped
                self.advance(1)
            if quote == '"':
                self.line_continuations()
            first = self.line
            while self.i < len(self.s) and self.peek(3) != quote * 3:
                self.advance(2 if quote == '"' and self.peek() == "\\" else 1)
            self.advance(3)
            while self.peek() == quote:  # up to two quotes may end the content
                self.advance(1)
            return first
        first = self.line
        self.advance(1)
        while self.i < len(self.s) and self.peek() not in (quote, "\n"):
            self.advance(2 if quote == '"' and self.peek() == "\\" else 1)
        self.expect(quote)
        return first

    def line_continuations(self) -> None:
        """A backslash at the end of a line (``\"\"\"\\``) drops the line break and the
        blanks after it: the content starts at the next character that is not blank."""
        while m := re.match(r"\\[ \t]*\n[ \t\n]*", self.s[self.i : self.i + 4096]):
            self.advance(m.end())

    def value(self, path: Path, key_line: int) -> None:
        c = self.peek()
        if c in ('"', "'"):
            self.places[path] = Place(key_line, self.string_end())
        elif c == "[":
            self.places[path] = Place(key_line, self.line)
            self.advance(1)
            index = 0
            while True:
                self.blanks(newlines=True)
                if self.peek() == "]" or self.i >= len(self.s):
                    self.advance(1)
                    return
                self.value((*path, index), self.line)
                index += 1
                self.blanks(newlines=True)
                if self.peek() == ",":
                    self.advance(1)
        elif c == "{":
            self.places[path] = Place(key_line, self.line)
            self.advance(1)
            while True:
                self.blanks(newlines=True)
                if self.peek() == "}" or self.i >= len(self.s):
                    self.advance(1)
                    return
                self.key_value(path)
                self.blanks(newlines=True)
                if self.peek() == ",":
                    self.advance(1)
        else:  # a number, a boolean or a date: up to the next separator
            self.places[path] = Place(key_line, self.line)
            m = re.compile(r"[^,\]}\n#]*").match(self.s, self.i)
            self.advance((m.end() if m else self.i) - self.i)

    def key_value(self, table: Path) -> None:
        line = self.line
        keys = self.keys()
        self.expect("=")
        self.blanks()
        for n in range(1, len(keys)):  # a dotted key makes its tables where it is written
            self.places.setdefault((*table, *keys[:n]), Place(line, line))
        self.value((*table, *keys), line)

    # --- the document -----------------------------------------------------------

    def run(self) -> dict[Path, Place]:
        table: Path = ()
        try:
            while True:
                self.blanks(newlines=True)
                if self.i >= len(self.s):
                    break
                if self.peek() != "[":
                    self.key_value(table)
                    continue
                line = self.line
                double = self.peek(2) == "[["
                self.advance(2 if double else 1)
                self.blanks()
                keys = self.keys()
                self.expect("]]" if double else "]")
                if double:
                    array = (*self.resolve(keys[:-1]), keys[-1])
                    self.places.setdefault(array, Place(line, line))
                    self.arrays[array] = self.arrays.get(array, 0) + 1
                    table = (*array, self.arrays[array] - 1)
                else:
                    table = self.resolve(keys)
                self.places[table] = Place(line, line)
        except (_Stop, IndexError):
            pass
        return self.places


class TomlPlaces:
    """The lines of a TOML document's keys and values, by path (see the module's doc)."""

    def __init__(self, text: str) -> None:
        self.places = _Scanner(text).run()

    def find(self, path: Path) -> Place | None:
        """The place of ``path``, or of its nearest written ancestor; None if neither."""
        for n in range(len(path), 0, -1):
            place = self.places.get(path[:n])
            if place is not None:
                return place
        return None

    def line(self, path: Path) -> int:
        """The line of ``path``'s key (or its nearest written ancestor's); 0 if none."""
        place = self.find(path)
        return place.key_line if place else 0

    def content_line(self, path: Path) -> int:
        """The line where the value of ``path`` begins; 0 when it is not written out."""
        place = self.places.get(path)
        return place.value_line if place else 0


def table_path(table: str | None, index: int | None, key: str | None = None) -> Path:
    """A spec builder's (table, index, key) as a path: ``("startds.config", 2, "text")``
    is ``("startds", 2, "config", "text")``."""
    head, *rest = table.split(".") if table else [None]
    path: Path = (head,) if head is not None else ()
    if index is not None:
        path += (index,)
    return (*path, *rest, *((key,) if key is not None else ()))


class SpecLines:
    """The lines a spec's messages name, looked up as (table, index, key)."""

    def __init__(self, text: str) -> None:
        self.places = TomlPlaces(text)

    def _path(self, table: str | None, index: int | None, key: str | None = None) -> Path:
        path = table_path(table, index, key)
        if index == 0 and table_path(table, 0) not in self.places.places:
            # a lone [table] read as a one-table array: its keys have no index
            path = table_path(table, None, key)
        return path

    def table_start(self, table: str, index: int | None) -> int:
        """The line of ``[table]`` or the ``index``-th ``[[table]]`` (0 if absent)."""
        return self.places.line(self._path(table, index))

    def key(self, table: str | None, index: int | None, key: str) -> int:
        """The line of ``key`` in the table, else the table's own line (0 if neither)."""
        return self.places.line(self._path(table, index, key))

    def value_start(self, table: str | None, index: int | None, key: str) -> int:
        """Lines to prepend to an inline string so that its lines keep the file's numbers."""
        return max(0, self.places.content_line(self._path(table, index, key)) - 1)

    def path(self, *path: str | int) -> int:
        """The line of an explicit path (or its nearest written ancestor), 0 if none."""
        return self.places.line(tuple(path))
