"""The kinds of fault a plan may hold, one module each (see ``base.py``)."""

from __future__ import annotations

from .base import FaultError, FaultKind
from .crash import CRASH
from .network import DELAY, DROP, PARTITION
from .pause import PAUSE
from .restart import RESTART
from .skew import SKEW

__all__ = ["FAULT_KINDS", "FaultError", "FaultKind"]

# in the order plans and messages list them
FAULT_KINDS: dict[str, FaultKind] = {
    k.name: k for k in (CRASH, RESTART, PAUSE, PARTITION, DROP, DELAY, SKEW)
}
