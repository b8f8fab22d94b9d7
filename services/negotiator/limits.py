"""Concurrency limits, counted pool-wide by the negotiator as HTCondor's does.

The rules (matchmaker.cpp ``rejectForConcurrencyLimits``, Accountant.cpp ``LoadLimits``,
``GetLimitMax``, ``IncrementLimit``; NegotiationUtils.cpp ``ParseConcurrencyLimit``):

- A job's ConcurrencyLimits is a comma/space separated list, compared in lower case, of
  ``name[.sub][:count]``; count is read as strtod reads it and a count <= 0 counts 1. An
  item whose names are not attribute names is ignored.
- In use: at the start of a cycle, the sum over every slot ad of its ConcurrencyLimits and
  PreemptingConcurrencyLimits (a claimed slot publishes its job's); every match of the
  cycle adds its job's limits.
- The most a limit may reach: ``<limit>_LIMIT``, else ``CONCURRENCY_LIMIT_DEFAULT_<scope>``
  for ``scope.sub`` (the part before the last dot), else CONCURRENCY_LIMIT_DEFAULT
  (2308032). A job is rejected when, for one of its limits, in use + count > the most.
- The NegotiatorLog reason: ``concurrency limit <names> reached`` (the names that were
  over, sorted, joined with ", ").
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..classad import ClassAd
from ..config import ConfigDict

if TYPE_CHECKING:
    import random

__all__ = ["ConcurrencyLimits", "LimitMaxima", "parse_limits"]

_SEP = re.compile(r"[,\s]+")
_ATTR = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_STRTOD = re.compile(r"\s*[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def _strtod(text: str) -> float:
    m = _STRTOD.match(text)
    return float(m.group(0)) if m else 0.0


def parse_limits(text: str) -> list[tuple[str, float]]:
    """(name, count) of each valid item of a ConcurrencyLimits string, names in lower case."""
    out = []
    for item in _SEP.split(text.lower()):
        if not item:
            continue
        name, colon, count = item.partition(":")
        increment = _strtod(count) if colon else 1.0
        head, dot, sub = name.partition(".")
        if not _ATTR.fullmatch(head) or (dot and not _ATTR.fullmatch(sub)):
            continue  # HTCondor: "Ignoring invalid concurrency limit"
        out.append((name, increment if increment > 0 else 1.0))
    return out


class LimitMaxima:
    """The most each limit may reach, from the negotiator's configuration.

    Every ``*_LIMIT`` and ``CONCURRENCY_LIMIT_DEFAULT*`` knob is checked once, here: HTCondor
    stops the negotiator on a value that is not a number when it first reads it; mockpool
    refuses the configuration at start instead (ConfigError naming file, line and knob).
    """

    def __init__(self, config: ConfigDict) -> None:
        self._config = config
        self._cache: dict[str, float] = {}
        for knob in config.knobs():
            upper = knob.name.upper()
            if upper.endswith("_LIMIT") or upper.startswith("CONCURRENCY_LIMIT_DEFAULT"):
                config.get_float(knob.name, 0.0)  # refuses what a negotiator stops on
        self._default = config.get_float("CONCURRENCY_LIMIT_DEFAULT")

    def __call__(self, limit: str) -> float:
        got = self._cache.get(limit)
        if got is None:
            default = self._default
            scope, dot, _ = limit.rpartition(".")
            if dot:
                default = self._config.get_float(f"CONCURRENCY_LIMIT_DEFAULT_{scope}", default)
            got = self._cache[limit] = self._config.get_float(f"{limit}_LIMIT", default)
        return got


class ConcurrencyLimits:
    """One cycle's count of limits in use, and the check a match must pass."""

    def __init__(
        self,
        maxima: LimitMaxima,
        slots: Iterable[ClassAd],
        *,
        now: float | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.maxima = maxima
        self.in_use: dict[str, float] = {}
        for ad in slots:
            for attr in ("ConcurrencyLimits", "PreemptingConcurrencyLimits"):
                value = ad.eval(attr, now=now, rng=rng)
                if isinstance(value, str) and value:
                    self.add(value)

    def add(self, limits: str) -> None:
        for name, count in parse_limits(limits):
            self.in_use[name] = self.in_use.get(name, 0.0) + count

    def over(self, limits: str) -> str | None:
        """The first limit of ``limits`` the job would take over its maximum (None: none
        does); HTCondor stops at the first, so one rejection names one limit."""
        for name, count in parse_limits(limits):
            if self.in_use.get(name, 0.0) + count > self.maxima(name):
                return name
        return None

    def attributes(self) -> dict[str, float]:
        """``ConcurrencyLimit_<name>`` (dots as underscores) for the negotiator ad."""
        return {
            f"ConcurrencyLimit_{n.replace('.', '_')}": v for n, v in sorted(self.in_use.items())
        }
