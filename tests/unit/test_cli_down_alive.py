"""`down` sees a pool process of its own process gone once it ends (an `up` and a `down`
called in one Python process: the ended pool is this process' unreaped child)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from mockpool.cli.pool_cmds import _alive

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")


def _state(pid: int) -> str:
    text = Path(f"/proc/{pid}/stat").read_text()
    return text[text.rindex(")") + 2]


def test_an_ended_child_is_not_alive_though_unreaped() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 60
    while _state(child.pid) != "Z":  # a positive wait: until it has ended, unreaped
        assert time.monotonic() < deadline, "the child did not end"
        time.sleep(0.01)
    assert _alive(child.pid) is False


def test_a_running_process_is_alive() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    )
    try:
        assert _alive(child.pid) is True
    finally:
        child.communicate(b"")
