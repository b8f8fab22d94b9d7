"""Fixtures for unit tests (plain builders are in tests/builders)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mockpool.clock import ManualClock
from mockpool.config import parse_config
from mockpool.daemon import DaemonContext, EventLog


@pytest.fixture
def daemon_ctx() -> Any:
    """Makes the context a service is built with in a test: a ManualClock at pool time
    100, an empty config, no collector; ``fields`` set the rest (host, address, ...)."""

    def make(state_dir: Path, **fields: Any) -> DaemonContext:
        clock = ManualClock(100.0)
        return DaemonContext(
            clock=clock,
            config=parse_config("", "<test>"),
            secret="s" * 40,
            collector_address="",
            events=EventLog(clock),
            state_dir=state_dir,
            **fields,
        )

    return make
