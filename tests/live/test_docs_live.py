"""The pages' commands that need a live pool run as shown, against one `mockpool up` pool.

The shell blocks of README.md and docs/ with a command that needs a pool or Ray
(scripts/doc_commands.py sorts them) run line by line, in page order, in one folder that
has the checkout's examples/ and its own $MOCKPOOL_HOME. Their `mockpool up` line (one
spec for every page: docs/faults.md names the daemons of the pool docs/cli.md starts)
starts the module's pool first and their `mockpool down` line stops it last; each other
command must exit 0 and print what its comment quotes. The README's demo command runs
live, and prints what the README's demo output shows (numbers aside; the counts the
README explains exactly). The Python snippets that start a pool, or are pytest tests
taking the plugin's fixtures, run too and print what their <!-- output --> shows.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import re
from collections.abc import Iterator
from typing import Any

import doc_commands as dc  # scripts/ (pytest's pythonpath)
import pytest

pytestmark = [pytest.mark.live, pytest.mark.slow]


BLOCKS = dc.shell_blocks("live")
COMMANDS = [c for b in BLOCKS for c in dc.block_commands(b) if dc.how(c) == "live"]
DEMO = "mockpool run examples/pslot.toml"  # the README's demo command, run live
# figures of the demo that do not depend on the machine's speed: the README explains them
EXACT = ("Machines ", "Jobs: ", "Slots: ")


def _one(sub: str) -> Any:
    found = {c.text: c for c in COMMANDS if c.argv[1] == sub}
    assert len(found) == 1, f"the pages start and stop one pool for all; they show {sorted(found)}"
    return next(iter(found.values()))


UP, DOWN = _one("up"), _one("down")


@pytest.fixture(scope="module")
def ran(ray_session: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The pages' folder with their pool up; command text -> its result, as they run."""
    folder = tmp_path_factory.mktemp("docs")
    home = folder / "home"
    results: dict[str, Any] = {}
    with dc.working_dir(folder, {"MOCKPOOL_HOME": str(home)}):
        dc.check(UP, dc.run(UP))
        try:
            yield results
        finally:
            if (home / "pool.json").exists():
                dc.check(DOWN, dc.run(DOWN))


@pytest.mark.parametrize("block", BLOCKS, ids=lambda b: b.where)
def test_a_pages_commands_run_against_the_pool(block: Any, ran: dict[str, Any]) -> None:
    for command in dc.block_commands(block):
        if dc.how(command) == "not run" or command.text in (UP.text, DOWN.text):
            continue  # listed, with the reason, in tests/unit/test_docs_commands.py; the pool's
        if command.argv[1] == "run" and command.text in ran:
            result = ran[command.text]  # the same run in the same folder: once
        else:
            result = ran[command.text] = dc.run(command)
        dc.check(command, result)


EARLY = r"(: \d+ of \d+ cycles came early on a reschedule)?"


def _demo_shown() -> list[str]:
    text = (dc.ROOT / "README.md").read_text()
    m = re.search(r"<!-- demo-output -->\s*```\w*\n(.*?)```", text, re.S)
    assert m is not None, "README.md has no <!-- demo-output --> block"
    return [line for line in m.group(1).splitlines() if line.strip()]


def test_the_readme_demo_prints_what_the_readme_shows(ran: dict[str, Any]) -> None:
    (demo,) = [c for c in COMMANDS if c.text == DEMO and c.block.mark == "demo-command"]
    if DEMO not in ran:
        ran[DEMO] = dc.run(demo)
    dc.check(demo, ran[DEMO])
    printed = ran[DEMO].out.splitlines()
    for line in _demo_shown():
        # the cadence line names the cycles a reschedule brought early, when the live run's
        # timing made any (report.py): the README shows a run where none did
        pattern = dc.form(line) + (EARLY if line.startswith("C is the median gap") else "")
        assert any(re.fullmatch(pattern, p) for p in printed), (
            f"README's demo line {line!r} is not what the run prints:\n" + "\n".join(printed)
        )
        if line.startswith(EXACT):
            assert line in printed, f"README shows {line!r}; the run prints:\n" + "\n".join(printed)


PYTHON = [b for b in dc.blocks() if b.lang == "python" and dc.python_how(b) == "live"]


@pytest.mark.parametrize("block", PYTHON, ids=lambda b: b.where)
def test_a_pages_python_runs_against_a_live_pool(
    block: Any, ran: dict[str, Any], request: pytest.FixtureRequest
) -> None:
    """A program runs; a pytest test is called with the fixtures it names, as pytest would."""
    namespace: dict[str, Any] = {"__name__": "__doc__"}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block.text, block.where, "exec"), namespace)
        for name, test in list(namespace.items()):
            if name.startswith("test_") and callable(test):
                test(*(request.getfixturevalue(p) for p in inspect.signature(test).parameters))
    if block.output is not None:
        dc.compare(block.output, out.getvalue(), block.where)
