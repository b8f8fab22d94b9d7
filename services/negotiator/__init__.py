"""The negotiator: accountant, cadence, the match cycle, its stats and NegotiatorLog.

Public API:

- ``negotiate(snapshot, requests, accountant, config, now, *, timer=, cpu_timer=, finish=)``
  -> ``CycleResult(matches, accountant, stats, log)``: one cycle, pure.
- ``CycleAds``, ``ResourceRequest`` (``.from_ad``), ``CycleMatch``, ``CycleConfig``,
  ``NegotiatorInputError``.
- ``Accountant`` (RUP, EUP, usage, factors, group records), ``Cadence`` (when cycles run), ``StatsHistory`` /
  ``CycleStats`` (negotiator-ad attributes), ``LogLine``, ``format_line``,
  ``parse_negotiator_log``, ``NegotiatorLog`` (lines -> ``.cycles``).
- The pie and group quotas are pure modules: :mod:`.pie` (``negotiate_with_group``) and
  :mod:`.groups` (``GroupConfig``, ``GroupTree``); :mod:`.accounting_ads` builds the
  Accounting ads.
- ``NegotiatorService`` lives in :mod:`mockpool.negotiator.service` (imports gRPC).
"""

from .accountant import Accountant, AccountantError
from .cadence import Cadence, CadenceError
from .cycle import negotiate
from .cycleinput import (
    CycleAds,
    CycleConfig,
    NegotiatorInputError,
    ResourceRequest,
    requests_from_ads,
)
from .cycleoutput import CycleMatch, CycleRejection, CycleResult
from .log import Cycle, LogLine, NegotiatorLog, format_line, format_lines, parse_negotiator_log
from .stats import CycleStats, StatsHistory

__all__ = [
    "Accountant",
    "AccountantError",
    "Cadence",
    "CadenceError",
    "Cycle",
    "CycleConfig",
    "CycleResult",
    "CycleStats",
    "LogLine",
    "CycleMatch",
    "CycleRejection",
    "NegotiatorInputError",
    "NegotiatorLog",
    "ResourceRequest",
    "CycleAds",
    "StatsHistory",
    "format_line",
    "format_lines",
    "negotiate",
    "parse_negotiator_log",
    "requests_from_ads",
]
