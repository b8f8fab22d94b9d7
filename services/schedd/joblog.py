"""The schedd core's side of the user job event log: which log a job writes to, and the
:class:`~.userlog.LogEvent` records of its life, queued for the shell to append.

A job writes to the log its ``UserLog`` attribute names (``log =`` in its submit file),
relative to its ``Iwd`` as condor_submit makes it. Jobs without one log nothing. The
records are pure data in pool time; :mod:`.userlog` writes their text.
"""

from __future__ import annotations

import math
import posixpath
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..classad import ClassAd
from .userlog import DateFormat, LogEvent, UsageRow, format_options

if TYPE_CHECKING:
    from random import Random

__all__ = ["JobLogBook", "log_path", "usage_rows"]

_RESOURCES = ("Cpus", "Disk", "Memory")  # setEventUsageAd's default ProvisionedResources


def log_path(ad: ClassAd, *, now: float | None = None, rng: Random | None = None) -> str | None:
    """The job's user log: ``UserLog``, under ``Iwd`` when relative (condor_submit makes
    both absolute from the submitting folder; a job queued without one keeps a relative
    path, which the shell refuses to write). None: the job keeps no log. ``now`` and
    ``rng``: what time() and random() in them read (the schedd's date and generator)."""
    path = ad.get_value("UserLog", now=now, rng=rng)
    if not isinstance(path, str) or not path:
        return None
    iwd = ad.get_value("Iwd", now=now, rng=rng)
    if not posixpath.isabs(path) and isinstance(iwd, str) and iwd:
        path = posixpath.join(iwd, path)
    return posixpath.normpath(path) if posixpath.isabs(path) else path


def _scalar(value: Any) -> int | float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def usage_rows(
    ad: ClassAd, slot_ad: ClassAd | None, *, now: float | None = None, rng: Random | None = None
) -> tuple[UsageRow, ...]:
    """The resources table of an evicted or terminated event (HTCondor's
    ``setEventUsageAd``): for Cpus, Disk and Memory, the job's ``<Res>Usage``, its
    ``Request<Res>`` and what its slot was given (the slot ad's ``<Res>``), evaluated at
    date ``now`` with generator ``rng``."""
    rows = []
    for res in _RESOURCES:
        allocated = _scalar(slot_ad.eval(res, now=now, rng=rng)) if slot_ad is not None else None
        rows.append(
            UsageRow(
                res,
                _scalar(ad.eval(f"{res}Usage", now=now, rng=rng)),
                _scalar(ad.eval(f"Request{res}", now=now, rng=rng)),
                allocated,
            )
        )
    return tuple(rows)


class JobLogBook:
    """The events the core decided since the shell last took them (``drain``)."""

    def __init__(self, options: str | None = None) -> None:
        self.format: DateFormat = format_options(options)  # DEFAULT_USERLOG_FORMAT_OPTIONS
        self._pending: list[LogEvent] = []

    def add(
        self,
        ad: ClassAd,
        cluster: int,
        proc: int,
        code: int,
        t: float,
        fields: Mapping[str, Any] | None = None,
        usage: tuple[UsageRow, ...] = (),
        *,
        now: float | None = None,
        rng: Random | None = None,
    ) -> None:
        """Event ``code`` of job ``cluster.proc`` (its ad ``ad``) at pool time ``t``, if
        the job keeps a log (its ``UserLog`` read at date ``now`` with ``rng``)."""
        path = log_path(ad, now=now, rng=rng)
        if path is not None:
            self._pending.append(LogEvent(path, code, cluster, proc, t, dict(fields or {}), usage))

    def drain(self) -> list[LogEvent]:
        out, self._pending = self._pending, []
        return out
