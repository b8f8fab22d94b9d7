"""A virtual run is a plain Python program: it never imports Ray (half a second of a
short run's start-up, and nothing of Ray runs in it)."""

from __future__ import annotations

PROGRAM = """
import sys, tempfile, pathlib
from mockpool.pool.api import run_pool
summary = run_pool(spec, pathlib.Path(tempfile.mkdtemp()))
assert summary["jobs"]["Completed"] == 2, summary["jobs"]
print("ray" in sys.modules)
"""


def test_a_virtual_run_does_not_import_ray(run_two_jobs_in_a_child) -> None:
    assert run_two_jobs_in_a_child(PROGRAM) == "False"
