"""A fresh clone, the README only: its live tour and its pytest snippet work as written.

The commands of the README's tour block (after ``<!-- tour -->``) run one by one in a
shell, from the repository root, with a fresh ``HOME`` (so ``~/.mockpool`` is this test's
own) and this environment's ``mockpool`` first on PATH. Each line's comment quotes what
its output shows (``# "6 job(s) submitted to cluster 1."``): every quoted text must be in
the output. A command that only reads (``q``, ``status``, ``grep``) is asked again until
its texts appear, as a reader who runs it a second later would.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.live, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
# commands that change the pool run once; the others may be asked again
CHANGES = ("mockpool up", "mockpool submit", "mockpool fault", "mockpool down", "sleep")
PATIENCE = 60.0  # real seconds a read-only command may take to show what the README says


def tour(readme: str) -> list[tuple[str, list[str]]]:
    """(command, the texts its comment quotes) for each line of the tour block."""
    m = re.search(r"<!-- tour -->\s*```sh\n(.*?)```", readme, re.S)
    assert m is not None, "README.md has no <!-- tour --> ```sh block"
    steps = []
    for line in m.group(1).splitlines():
        if not line.strip():
            continue
        command, _, comment = line.partition("  #")
        steps.append((command.strip(), re.findall(r'"([^"]+)"', comment)))
    return steps


def test_tour_lines_are_read_from_the_readme() -> None:
    text = 'x\n<!-- tour -->\n```sh\nmockpool q   # "6 jobs" and "6 running"\nsleep 1\n```\n'
    assert tour(text) == [("mockpool q", ["6 jobs", "6 running"]), ("sleep 1", [])]


@pytest.fixture
def home(tmp_path: Path) -> Iterator[dict[str, str]]:
    env = {k: v for k, v in os.environ.items() if k != "MOCKPOOL_HOME"}
    env["HOME"] = str(tmp_path)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    yield env
    if (tmp_path / ".mockpool" / "pool.json").exists():  # the tour stopped before `down`
        subprocess.run(["mockpool", "down"], env=env, cwd=ROOT, capture_output=True)


def test_readme_tour_runs_as_written(home: dict[str, str]) -> None:
    steps = tour(README.read_text())
    assert steps[0][0].startswith("mockpool up "), "the tour starts with a pool"
    for command, shown in steps:
        once = command.startswith(CHANGES)
        deadline = time.monotonic() + PATIENCE
        while True:
            proc = subprocess.run(
                ["bash", "-c", command], env=home, cwd=ROOT, capture_output=True, text=True
            )
            missing = [s for s in shown if s not in proc.stdout]
            if proc.returncode == 0 and not missing:
                break
            if once or time.monotonic() > deadline:
                raise AssertionError(
                    f"{command!r} (exit {proc.returncode}) does not show {missing}:\n"
                    f"{proc.stdout}\n{proc.stderr}"
                )
            time.sleep(0.5)  # a positive wait: asked again until the README's text shows


def test_readme_pytest_snippet_passes(
    mockpool_factory: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README's <!-- pytest --> block, run as pytest would, with the plugin's fixture."""
    m = re.search(r"<!-- pytest -->\s*```python\n(.*?)```", README.read_text(), re.S)
    assert m is not None, "README.md has no <!-- pytest --> block"
    namespace: dict[str, Any] = {}
    exec(compile(m.group(1), "README.md", "exec"), namespace)
    tests = [f for name, f in namespace.items() if name.startswith("test_")]
    assert tests
    monkeypatch.chdir(ROOT)  # the snippet's paths are the checkout's, as pytest runs there
    for test in tests:
        test(mockpool_factory)
