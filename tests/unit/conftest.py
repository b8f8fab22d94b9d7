"""Fixtures for unit tests (plain builders are in tests/builders)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from builders.cores import daemon_context

from mockpool.daemon import DaemonContext


@pytest.fixture
def daemon_ctx() -> Any:
    """Makes the context a service is built with in a test: a ManualClock at pool time
    100, an empty config, no collector; ``fields`` set the rest (host, address, ...)."""

    def make(state_dir: Path, **fields: Any) -> DaemonContext:
        return daemon_context(state_dir, **fields)

    return make
