"""The startd's job-exit reports: each job end told to the schedd that ran the job.

Exits queue per destination, (schedd address, schedd name): the schedds of one actor come
and go one by one. One ScheddJobsExited is on its way per destination at a time; exits
that end meanwhile go in the next, sent when the schedd acks. A report that cannot be
delivered is counted, and the collector is asked where the schedd is now (a restarted
schedd comes back on a new address): found elsewhere, the exits go there (and later ones
for the old address too); else the same report (same ``corr``, so the live pump sends
the same request id and a schedd that did take it does not apply it twice) is sent again
``RETRY_INTERVAL`` after the answer, and so on until the schedd answers.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from ..claimid import from_sinful
from ..classad.tree import quote_string
from ..contract import Ready
from ..messages import CollectorQuery, ScheddJobsExited
from .adverts import RETRY_INTERVAL
from .grants import JobExitRecord

log = logging.getLogger(__name__)

__all__ = ["ExitReports"]

Dest = tuple[str, str]  # (schedd address as the claim gave it, schedd name lower-case)


@dataclass(slots=True)
class _Report:
    corr: str
    dest: Dest
    exits: list[JobExitRecord]
    retry: float | None = None  # waiting to be sent again then
    locating: str = ""  # the corr of the collector query asking where the schedd is


class ExitReports:
    """Exits waiting for their schedds, and the reports on their way."""

    def __init__(self) -> None:
        self.pending: dict[Dest, list[JobExitRecord]] = {}
        self._busy: dict[Dest, _Report] = {}  # a report on its way, or waiting to retry
        self._by_corr: dict[str, _Report] = {}  # reports and collector queries by corr
        self.moved: dict[str, str] = {}  # schedd address -> where it came back
        self._n = 0

    def waiting(self) -> int:
        """Exits not yet on their way."""
        return sum(len(v) for v in self.pending.values())

    def next_retry(self) -> float | None:
        return min((r.retry for r in self._busy.values() if r.retry is not None), default=None)

    def queue(self, exits: list[JobExitRecord], ready: Ready) -> None:
        """New exits: each to its schedd (where it moved, if it did), sent now to every
        destination with no report on its way."""
        for e in exits:
            address = self.moved.get(e.schedd_address, e.schedd_address)
            self.pending.setdefault((address, e.schedd_name.lower()), []).append(e)
        self._send_pending(ready)

    def drop_machine(self, machine: str) -> None:
        """A machine crashed: its exits not yet on their way go with it."""
        at = "@" + machine.lower()
        for dest, exits in list(self.pending.items()):
            exits[:] = [e for e in exits if not e.slot_name.lower().endswith(at)]
            if not exits:
                del self.pending[dest]

    def _send_pending(self, ready: Ready) -> None:
        for dest in list(self.pending):
            if dest not in self._busy:
                self._send_next(dest, ready)

    def _send_next(self, dest: Dest, ready: Ready) -> None:
        exits = self.pending.pop(dest, None)
        if not exits:
            return
        self._n += 1
        r = _Report(f"exits:{self._n}", dest, exits)
        self._busy[dest] = self._by_corr[r.corr] = r
        self._send(r, ready)

    @staticmethod
    def _send(r: _Report, ready: Ready) -> None:
        msg = ScheddJobsExited(r.corr, r.exits[0].schedd_name, r.exits)
        ready.send(from_sinful(r.dest[0]), msg)

    def retries(self, now: float, ready: Ready) -> None:
        """Send again the reports whose retry is due."""
        for r in list(self._busy.values()):
            if r.retry is not None and r.retry <= now:
                r.retry = None
                self._send(r, ready)

    def _done(self, r: _Report) -> None:
        del self._busy[r.dest]
        del self._by_corr[r.corr]

    def acked(self, corr: str, stats: dict[str, int], ready: Ready) -> None:
        r = self._by_corr.get(corr)
        if r is None or r.locating or r.retry is not None:
            return  # not a report on its way (a stale answer)
        stats["exits_reported"] += len(r.exits)
        self._done(r)
        self._send_next(r.dest, ready)

    def failed(
        self,
        corr: str,
        detail: str,
        now: float,
        collector: str,
        stats: dict[str, int],
        ready: Ready,
    ) -> None:
        """The report did not arrive: ask the collector where its schedd is (or wait)."""
        r = self._by_corr.get(corr)
        if r is None or r.locating or r.retry is not None:
            return
        stats["exit_report_failures"] += 1
        log.warning("startd: cannot report %d job exits to %s: %s", len(r.exits), r.dest[0], detail)
        name = r.exits[0].schedd_name
        if not name or not collector:
            r.retry = now + RETRY_INTERVAL
            return
        r.locating = f"locate:{r.corr}"
        self._by_corr[r.locating] = r
        constraint = f"Name == {quote_string(name)}"
        ready.send(collector, CollectorQuery(r.locating, "Scheduler", constraint, ("MyAddress",)))

    def located(self, corr: str, found: str | None, now: float, ready: Ready) -> None:
        """The collector's answer (None: no ad, or no answer): the schedd's address."""
        r = self._by_corr.pop(corr, None)
        if r is None or r.locating != corr:
            return
        r.locating = ""
        address, name = r.dest
        if found is None or found == address:
            r.retry = now + RETRY_INTERVAL
            return
        log.info("startd: schedd %s moved from %s to %s", r.exits[0].schedd_name, address, found)
        self.moved[address] = found
        self._done(r)
        there = (found, name)
        self.pending.setdefault(there, [])[:0] = r.exits  # before what ended since
        if there not in self._busy:
            self._send_next(there, ready)
        if self.pending.get(r.dest):  # queued for the old address meanwhile
            self._send_next(r.dest, ready)
