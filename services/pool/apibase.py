"""What every kind of :class:`~mockpool.pool.api.Pool` shares, whatever runs it: how its
spec is made from the caller's arguments, and the calls written on top of the others
(``wait``, ``all_jobs``, ``slots``, the parsed NegotiatorLog)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from ..classad import ClassAd
from .spec import load_spec, parse_spec
from .specmodel import PoolSpec

__all__ = ["DEFAULT_SPEC", "PoolBase", "clock_of", "spec_from"]

# What Pool() starts without a spec: one 4-cpu machine (one partitionable slot).
DEFAULT_SPEC = """
[[startds]]
count = 1
config = "NUM_CPUS = 4\\nMEMORY = 4096"
"""


def spec_from(
    spec: PoolSpec | str | os.PathLike[str] | None,
    config: Mapping[str, Any] | str | None,
    overrides: Mapping[str, Any],
) -> PoolSpec:
    if isinstance(spec, PoolSpec):
        out = spec
    elif spec is None:
        out = parse_spec(DEFAULT_SPEC, "<default pool>")
    elif isinstance(spec, str) and ("\n" in spec or "[" in spec):
        out = parse_spec(spec, "<spec>")
    else:
        out = load_spec(spec)
    if config:
        from ..config import parse_config

        text = (
            config
            if isinstance(config, str)
            else "\n".join(f"{k} = {v}" for k, v in config.items())
        )
        out.config = parse_config(text, "<Pool config>", out.config)
        # the given knobs go on top of each machine group's own
        out.startds = [
            replace(g, config=parse_config(text, "<Pool config>", g.config)) for g in out.startds
        ]
    for k, v in overrides.items():
        setattr(out, k, v)
    return out


def clock_of(spec: PoolSpec | str | os.PathLike[str] | None, overrides: Mapping[str, Any]) -> str:
    """The clock a Pool made of these arguments will have (before making its spec)."""
    if "clock" in overrides:
        return str(overrides["clock"])
    if isinstance(spec, PoolSpec):
        return spec.clock
    if spec is None:
        return "live"
    if isinstance(spec, str) and ("\n" in spec or "[" in spec):
        return parse_spec(spec, "<spec>").clock
    return load_spec(spec).clock


class PoolBase:
    """The calls a pool makes of its own others. A subclass gives ``spec``, ``virtual``,
    ``start``, ``stop``, ``now``, ``sleep_until``, ``jobs``, ``ads``, ``drain`` and
    ``negotiator_log_lines``."""

    spec: PoolSpec
    virtual: bool

    def start(self) -> Any:
        raise NotImplementedError

    def stop(self) -> list[dict[str, Any]]:
        raise NotImplementedError

    @property
    def now(self) -> float:
        raise NotImplementedError

    def sleep_until(self, t: float) -> None:
        raise NotImplementedError

    def jobs(self, constraint: str = "", *args: Any, **kw: Any) -> list[ClassAd]:
        raise NotImplementedError

    def ads(self, ad_type: str = "Machine", constraint: str = "", *args: Any) -> list[ClassAd]:
        raise NotImplementedError

    def drain(self) -> None:
        raise NotImplementedError

    @property
    def negotiator_log_lines(self) -> list[str]:
        raise NotImplementedError

    @property
    def log_base_wall(self) -> float:
        raise NotImplementedError

    @property
    def start_date(self) -> float:
        """The date (Unix time, a whole second) of pool time 0: every date in the ads
        (QDate, EnteredCurrentStatus, ...) and time() in their expressions is it plus
        pool seconds. Now for a live pool; 2026-01-01 00:00:00 UTC for a virtual one."""
        return self.log_base_wall

    def __enter__(self) -> Any:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def wait(
        self,
        condition: Callable[[], Any],
        timeout: float = 60.0,
        *,
        fail_condition: Callable[[], Any] | None = None,
        poll: float = 0.1,
    ) -> bool:
        """Poll ``condition()`` until it is true (True) or ``timeout`` real seconds pass
        (False). ``fail_condition()`` true stops the wait early with False.

        A virtual pool moves only while waited on: it runs ``poll`` x time_scale pool
        seconds between polls, for at most ``timeout`` x time_scale pool seconds (what
        the same wait covers on a live pool of this spec)."""
        if self.virtual:
            scale = self.spec.time_scale
            limit, step = self.now + timeout * scale, max(poll * scale, 1e-3)
            while True:
                if condition():
                    return True
                if (fail_condition is not None and fail_condition()) or self.now >= limit:
                    return False
                self.sleep_until(min(limit, self.now + step))
        deadline = time.monotonic() + timeout
        while True:
            if condition():
                return True
            if (fail_condition is not None and fail_condition()) or time.monotonic() > deadline:
                return False
            time.sleep(poll)

    def all_jobs(self, constraint: str = "") -> list[ClassAd]:
        """Queue and history of every schedd."""
        out: list[ClassAd] = []
        for name in self.spec.schedd_names:
            out += self.jobs(constraint, schedd=name) + self.jobs(
                constraint, schedd=name, history=True
            )
        return out

    def slots(self, constraint: str = "") -> list[ClassAd]:
        return self.ads("Machine", constraint)

    @property
    def negotiator_log(self) -> Any:
        """The NegotiatorLog so far, parsed (``.lines``, ``.cycles``)."""
        from ..negotiator.log import NegotiatorLog

        self.drain()
        return NegotiatorLog(self.negotiator_log_lines)
