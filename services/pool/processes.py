"""The processes a pool started (Ray's GCS, raylet, agents, workers): record them while
the pool runs, and end them after its holder died, by what was recorded.

A process is named by its pid *and* its start time (``/proc/<pid>/stat`` field 22, in
clock ticks since boot), so a pid reused by an unrelated process after a crash is never
signalled. Linux only (``/proc``); elsewhere nothing is recorded and ``end`` has nothing
to do beyond the holder's pid.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

__all__ = ["Recorded", "descendants", "end", "record", "start_time"]

_PROC = Path("/proc")


@dataclass(frozen=True)
class Recorded:
    pid: int
    start: int  # clock ticks after boot: with the pid, names one process for good
    name: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Recorded:
        return cls(int(d["pid"]), int(d["start"]), str(d.get("name", "")))

    def alive(self) -> bool:
        return start_time(self.pid) == self.start


def _stat(pid: int) -> tuple[str, str, int, int] | None:
    """(command name, state, parent pid, start time) of a process; None if it is gone."""
    try:
        text = (_PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    # "pid (comm) state ppid ...": comm may hold spaces and parentheses.
    comm = text[text.index("(") + 1 : text.rindex(")")]
    fields = text[text.rindex(")") + 2 :].split()
    return comm, fields[0], int(fields[1]), int(fields[19])


def start_time(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks after boot); None if gone or a zombie."""
    st = _stat(pid)
    return None if st is None or st[1] == "Z" else st[3]


def _table() -> dict[int, tuple[str, str, int, int]]:
    out: dict[int, tuple[str, str, int, int]] = {}
    if not _PROC.is_dir():
        return out
    for entry in _PROC.iterdir():
        if entry.name.isdigit() and (st := _stat(int(entry.name))) is not None:
            out[int(entry.name)] = st
    return out


def descendants(roots: Iterable[int]) -> list[Recorded]:
    """Every living process under ``roots`` (not the roots themselves)."""
    table = _table()
    children: dict[int, list[int]] = {}
    for pid, (_, state, ppid, _) in table.items():
        if state != "Z":
            children.setdefault(ppid, []).append(pid)
    found: list[Recorded] = []
    stack = list(roots)
    while stack:
        for child in children.get(stack.pop(), []):
            name, _, _, start = table[child]
            found.append(Recorded(child, start, name))
            stack.append(child)
    return found


def _mentioning(marker: str) -> list[Recorded]:
    """Living processes whose command line contains ``marker`` (a folder only this pool
    uses, such as its Ray session folder: orphans re-parented away are found by it)."""
    found: list[Recorded] = []
    for pid, (name, state, _, start) in _table().items():
        if state == "Z" or pid == os.getpid():
            continue
        try:
            cmdline = (_PROC / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        if marker.encode() in cmdline:
            found.append(Recorded(pid, start, name))
    return found


def record(root: int) -> list[Recorded]:
    """The processes ``root`` has started so far (its descendants)."""
    return descendants([root])


def end(
    recorded: Iterable[Recorded],
    *,
    marker: str = "",
    grace: float = 5.0,
    sleep: Callable[[float], None] = time.sleep,
) -> list[Recorded]:
    """End the recorded processes still alive, their descendants, and (if ``marker`` is
    given) processes whose command line names it: SIGTERM, then SIGKILL after ``grace``
    real seconds. Returns what was signalled; a process that is gone is skipped."""
    targets = {r.pid: r for r in recorded if r.alive()}
    targets.update({r.pid: r for r in descendants(list(targets))})
    if marker:
        targets.update({r.pid: r for r in _mentioning(marker)})
    targets.pop(os.getpid(), None)
    for r in targets.values():
        _signal(r, signal.SIGTERM)
    waited = 0.0
    while waited < grace and any(r.alive() for r in targets.values()):
        sleep(0.1)
        waited += 0.1
    for r in targets.values():
        _signal(r, signal.SIGKILL)
    return list(targets.values())


def _signal(r: Recorded, sig: int) -> None:
    if r.alive():  # checked just before: never a pid that now names another process
        with contextlib.suppress(ProcessLookupError):
            os.kill(r.pid, sig)
