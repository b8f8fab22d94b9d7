"""Fixtures for virtual-time tests."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable

import pytest

# one machine, one schedd, alice's two 60 s jobs at 0: the smallest pool that runs a job
TWO_JOBS_SPEC = """
[pool]
clock = "virtual"
duration = 600
[[startds]]
count = 1
[[schedds]]
count = 1
[[submit]]
at = 0
schedd = 0
owner = "alice"
description = "executable = /bin/sleep\\\\narguments = 60\\\\nqueue 2\\\\n"
"""


@pytest.fixture
def run_two_jobs_in_a_child() -> Callable[[str], str]:
    """Run ``program`` in a fresh interpreter (so that what it imports is its own) with
    ``spec`` bound to the parsed TWO_JOBS_SPEC; return the last line it prints."""

    def run(program: str) -> str:
        code = (
            "from mockpool.pool.spec import parse_spec\n"
            f"spec = parse_spec('''{TWO_JOBS_SPEC}''', '<test>')\n" + program
        )
        proc = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=300
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        return proc.stdout.strip().splitlines()[-1]

    return run
