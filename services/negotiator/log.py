"""NegotiatorLog: HTCondor's lines, written and read back.

The cycle (:mod:`.cycle`) produces :class:`LogLine` records -- pool time plus text, the
text worded as ``condor_negotiator`` words it at its default level (``D_ALWAYS`` and
``D_MATCH``, NEGOTIATOR_DEBUG's default; see matchmaker.cpp and matchmaker_negotiate.cpp).
:func:`format_line` prefixes HTCondor's timestamp ``MM/DD/YY HH:MM:SS `` for the wall time
``base_wall + t``. Timestamps are UTC (HTCondor writes local time; UTC keeps logs identical
wherever a pool runs). :func:`parse_negotiator_log` reads the text back into cycles for
tests and the Python API.

Claim ids never appear in these lines (HTCondor does not log them either).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "CYCLE_FINISHED",
    "CYCLE_STARTED",
    "Cycle",
    "LogLine",
    "LoggedMatch",
    "LoggedRejection",
    "NegotiatorLog",
    "format_line",
    "format_lines",
    "parse_negotiator_log",
    "parse_timestamp",
]

CYCLE_STARTED = "---------- Started Negotiation Cycle ----------"
CYCLE_FINISHED = "---------- Finished Negotiation Cycle ----------"
_TS_FORMAT = "%m/%d/%y %H:%M:%S"
_TS_LEN = 17  # "MM/DD/YY HH:MM:SS"


@dataclass(frozen=True)
class LogLine:
    """One NegotiatorLog line: pool time ``t`` and the text after the timestamp."""

    t: float
    text: str


def format_timestamp(wall: float) -> str:
    return time.strftime(_TS_FORMAT, time.gmtime(wall))


def format_line(line: LogLine, base_wall: float) -> str:
    """``MM/DD/YY HH:MM:SS text`` for wall time ``base_wall + line.t`` (UTC)."""
    return f"{format_timestamp(base_wall + line.t)} {line.text}"


def format_lines(lines: Iterable[LogLine], base_wall: float) -> list[str]:
    return [format_line(x, base_wall) for x in lines]


def parse_timestamp(text: str) -> float:
    """Unix seconds of a ``MM/DD/YY HH:MM:SS`` stamp read as UTC."""
    import calendar

    return float(calendar.timegm(time.strptime(text, _TS_FORMAT)))


class LoggedMatch(tuple):
    """A match read from the log: unpacks as the pair ``(job, slot)``; also has
    ``autocluster``, ``submitter`` and ``schedd`` (the schedd's address as logged).
    ``job`` is the autocluster's representative job ("12.0"), as HTCondor logs it."""

    autocluster: int
    submitter: str
    schedd: str

    def __new__(
        cls, job: str, autocluster: int, submitter: str, schedd: str, slot: str
    ) -> LoggedMatch:
        self = super().__new__(cls, (job, slot))
        self.autocluster, self.submitter, self.schedd = autocluster, submitter, schedd
        return self

    @property
    def job(self) -> str:
        return self[0]

    @property
    def slot(self) -> str:
        return self[1]

    def __repr__(self) -> str:
        return (
            f"LoggedMatch(job={self.job!r}, autocluster={self.autocluster}, "
            f"submitter={self.submitter!r}, schedd={self.schedd!r}, slot={self.slot!r})"
        )


@dataclass(frozen=True)
class LoggedRejection:
    job: str
    autocluster: int
    submitter: str
    schedd: str
    reason: str


@dataclass
class Cycle:
    """One negotiation cycle read from a NegotiatorLog (times are wall seconds, UTC)."""

    start: float
    end: float | None = None  # None: the log ends inside this cycle
    matches: list[LoggedMatch] = field(default_factory=list)
    rejections: list[LoggedRejection] = field(default_factory=list)
    submitters: list[str] = field(default_factory=list)  # in negotiation order
    public_ads: int = 0
    private_ads: int = 0
    unlogged_matches: int = 0  # matches past the per-cycle line cap
    lines: list[str] = field(default_factory=list)


_GOT_ADS = re.compile(r"Got ads: (\d+) public and (\d+) private")
_NEGOTIATING = re.compile(r"  Negotiating with (\S+) at (\S+)")
_REQUEST = re.compile(r"    Request (-?\d+)\.(-?\d+): autocluster (-?\d+) \(request count")
_MATCHED = re.compile(r"      Matched (-?\d+\.-?\d+) (\S+) (\S+) preempting .* (\S+)$")
_REJECTED = re.compile(r"      Rejected (-?\d+\.-?\d+) (\S+) (\S+): (.*)$")
_UNLOGGED = re.compile(r"    \.\.\. (\d+) more matches? not logged")


def parse_negotiator_log(text: str) -> list[Cycle]:
    """The cycles in NegotiatorLog text (lines outside a cycle are ignored).

    A match is read from its ``Matched`` line; its autocluster is that of the ``Request``
    line before it. Lines without a timestamp are kept in ``lines`` and otherwise skipped.
    """
    cycles: list[Cycle] = []
    cur: Cycle | None = None
    autocluster = -1
    for raw in text.splitlines():
        if len(raw) > _TS_LEN and raw[_TS_LEN] == " ":
            try:
                wall = parse_timestamp(raw[:_TS_LEN])
            except ValueError:
                wall, body = None, raw
            else:
                body = raw[_TS_LEN + 1 :]
        else:
            wall, body = None, raw
        if body == CYCLE_STARTED and wall is not None:
            cur = Cycle(start=wall)
            cycles.append(cur)
            autocluster = -1
        if cur is None:
            continue
        cur.lines.append(body)
        if body == CYCLE_FINISHED:
            cur.end = wall
            cur = None
            continue
        if m := _GOT_ADS.match(body):
            cur.public_ads, cur.private_ads = int(m[1]), int(m[2])
        elif m := _NEGOTIATING.match(body):
            cur.submitters.append(m[1])
        elif m := _REQUEST.match(body):
            autocluster = int(m[3])
        elif m := _MATCHED.match(body):
            cur.matches.append(LoggedMatch(m[1], autocluster, m[2], m[3], m[4]))
        elif m := _REJECTED.match(body):
            cur.rejections.append(LoggedRejection(m[1], autocluster, m[2], m[3], m[4]))
        elif m := _UNLOGGED.match(body):
            cur.unlogged_matches += int(m[1])
    return cycles


class NegotiatorLog:
    """A NegotiatorLog's lines and, parsed from them, its cycles (the pool API's view)."""

    def __init__(self, lines: Iterable[str]) -> None:
        self.lines = list(lines)
        self._cycles: list[Cycle] | None = None

    @classmethod
    def read(cls, path: str | Path) -> NegotiatorLog:
        return cls(Path(path).read_text().splitlines())

    @property
    def cycles(self) -> list[Cycle]:
        if self._cycles is None:
            self._cycles = parse_negotiator_log("\n".join(self.lines))
        return self._cycles

    def __len__(self) -> int:
        return len(self.lines)
