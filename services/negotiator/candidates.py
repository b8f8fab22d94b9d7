"""A request's candidate slots, best first: the classes of the slot table (and the states
of its p-slots) in the order of their rank keys, merged with the dead rows passed over."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .slotclasses import ClassView

__all__ = ["CandidateStream"]


def _rows_from(m: np.ndarray, s: int) -> Iterator[int]:
    """The rows of ``m`` from ``s`` on, converted a chunk at a time, the chunks growing:
    a request usually takes a few rows of a large class."""
    chunk = 8
    while s < len(m):
        yield from m[s : s + chunk].tolist()
        s += chunk
        chunk = min(2 * chunk, 256)


class CandidateStream:
    """A request's candidates, best first: classes (and p-slot states) in the order of
    their rank keys, the rows of those with equal keys merged in snapshot order, dead rows
    passed over.

    ``entries``: class rows, and states as ``-1 - state``. ``peek()`` gives the next live
    row and its key (None when there is none); ``pop()`` takes it. A class's leading dead
    rows are skipped once for the whole cycle (``starts``)."""

    def __init__(
        self,
        entries: np.ndarray,
        keys: np.ndarray,
        view: ClassView,
        alive: np.ndarray,
    ) -> None:
        self._view = view
        self._alive = alive
        self._entries = entries
        self._keys = keys
        if len(entries) > 1:
            cut = np.flatnonzero((keys[1:] != keys[:-1]).any(axis=1)) + 1
            self._starts = np.concatenate(([0], cut))
            self._bounds = [*self._starts.tolist(), len(entries)]
        else:
            self._starts = np.zeros(len(entries), dtype=np.int64)
            self._bounds = [0, len(entries)] if len(entries) else [0]
        self._g = 0
        self._states: np.ndarray | None = None  # each group's state (skip_to_state)
        self._rows: Iterator[int] | None = None
        self._head: int | None = None
        self._kept = -1  # the group read a row at a time whatever its rows cost
        self.key: tuple | None = None  # the head's (pre, rank, post, state, prank)

    @classmethod
    def empty(cls, view: ClassView, alive: np.ndarray) -> CandidateStream:
        return cls(np.empty(0, dtype=np.int64), np.empty((0, 5)), view, alive)

    def _class_rows(self, c: int) -> Iterator[int]:
        m, alive, starts = self._view.classes.members[c], self._alive, self._view.starts
        s = int(starts[c])
        while s < len(m) and not alive[m[s]]:
            s += 1
        starts[c] = s
        return _rows_from(m, s)

    def _open(self) -> bool:
        if self._g + 1 >= len(self._bounds):
            return False
        a, b = self._bounds[self._g], self._bounds[self._g + 1]
        self._g += 1
        self.key = tuple(self._keys[a].tolist())
        es = self._entries[a:b]
        view = self._view
        if b - a == 1:  # one class or one p-slot state: its rows as they are
            e = int(es[0])
            self._rows = self._class_rows(e) if e >= 0 else view.state_rows(-1 - e)
            return True
        # classes of one slot (Claimed slots, ungrouped p-slots) in one sorted array,
        # merged with the rows of the larger classes and of the p-slot states
        cs = es[es >= 0]
        size = view.sizes[cs]
        singles = view.reps[cs[size == 1]]
        singles = np.sort(singles[self._alive[singles]])
        parts = [iter(singles.tolist())] if len(singles) else []
        parts += [self._class_rows(int(c)) for c in cs[size > 1]]
        parts += [view.state_rows(-1 - int(e)) for e in es[es < 0]]
        self._rows = parts[0] if len(parts) == 1 else heapq.merge(*parts)
        return True

    def peek(self) -> int | None:
        while self._head is None:
            if self._rows is None and not self._open():
                return None
            for r in self._rows:  # type: ignore[union-attr]
                if self._alive[r]:
                    self._head = r
                    break
            else:
                self._rows = None
        return self._head

    def pop(self) -> int:
        r = self.peek()
        assert r is not None
        self._head = None
        return r

    def take(self, k: int) -> list[int]:
        """Up to ``k`` live rows of the head's key, the head first: what ``k`` pops would
        give, but for the rows of the next key."""
        if self.peek() is None:
            return []
        out = [self._head]
        self._head = None
        rows, alive = self._rows, self._alive
        if len(out) < k and rows is not None:
            for r in rows:
                if alive[r]:
                    out.append(r)
                    if len(out) == k:
                        break
            else:
                self._rows = None
        return out  # type: ignore[return-value]

    def unread(self, rows: list[int]) -> None:
        """Put rows ``take`` gave back in front, in their order (they keep the key)."""
        if rows:
            rest = self._rows if self._rows is not None else iter(())
            self._rows = itertools.chain(rows, rest)
            self._head = None

    @property
    def view(self) -> ClassView:
        return self._view

    def group(self) -> np.ndarray | None:
        """The entries of the key being read; None when its rows are all read, or when
        ``keep_group`` was said of it."""
        if self._rows is None or self._kept == self._g:
            return None
        return self._entries[self._bounds[self._g - 1] : self._bounds[self._g]]

    def keep_group(self) -> None:
        """The rest of the key being read is read a row at a time (``group`` says None
        of it from now on)."""
        self._kept = self._g

    def skip_group(self) -> None:
        """Pass over the rest of the key being read."""
        self._head = self._rows = None

    def skip_to_state(self, state: float) -> int | None:
        """``peek()`` once every key whose state is not ``state`` is passed over: found
        from the keys, not by opening each group (a request may have thousands)."""
        head = self.peek()
        while head is not None and self.key[3] != state:  # type: ignore[index]
            if self._states is None:
                self._states = self._keys[self._starts, 3]
            later = np.flatnonzero(self._states[self._g :] == state)
            self._head = self._rows = None
            if not len(later):
                self._g = len(self._bounds) - 1
                return None
            self._g += int(later[0])
            head = self.peek()
        return head
