"""A virtual run is a plain Python program: it never imports Ray (half a second of a
short run's start-up, and nothing of Ray runs in it)."""

from __future__ import annotations

import subprocess
import sys

PROGRAM = """
import sys, tempfile, pathlib
from mockpool.pool.api import run_pool
from mockpool.pool.spec import parse_spec
spec = parse_spec('''
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
''', "<test>")
summary = run_pool(spec, pathlib.Path(tempfile.mkdtemp()))
assert summary["jobs"]["Completed"] == 2, summary["jobs"]
print("ray" in sys.modules)
"""


def test_a_virtual_run_does_not_import_ray() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", PROGRAM], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().splitlines()[-1] == "False"
