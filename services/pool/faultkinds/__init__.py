"""The kinds of fault a plan may hold, one module each (see ``base.py``)."""

from __future__ import annotations

from .base import FaultError, FaultKind
from .crash import CRASH
from .network import DELAY, DROP, PARTITION
from .pause import PAUSE
from .restart import RESTART
from .skew import SKEW

__all__ = ["FAULT_KINDS", "FAULT_PARAMS", "FaultError", "FaultKind", "kinds_text", "param_help"]

# in the order plans and messages list them
FAULT_KINDS: dict[str, FaultKind] = {
    k.name: k for k in (CRASH, RESTART, PAUSE, PARTITION, DROP, DELAY, SKEW)
}

# the keys of their own the kinds take, in the order they first appear, and what each
# means (the `mockpool fault` flags and the master's FaultRequest carry them)
FAULT_PARAMS: tuple[str, ...] = tuple(
    dict.fromkeys(p for k in FAULT_KINDS.values() for p in k.params)
)
_MEANING = {
    "fraction": "the fraction of calls",
    "delay": "pool seconds each call waits",
    "skew": "seconds the clock reads ahead",
}


def kinds_text() -> str:
    """``crash, restart, ... or skew``: the kinds as a sentence lists them."""
    *rest, last = FAULT_KINDS
    return f"{', '.join(rest)} or {last}"


def param_help(key: str) -> str:
    """A kind's key as the CLI explains it: the kinds that take it, and its meaning."""
    users = [k.name for k in FAULT_KINDS.values() if key in k.params]
    return f"{', '.join(users)}: {_MEANING[key]}"
