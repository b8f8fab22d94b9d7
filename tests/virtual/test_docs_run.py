"""The pages' commands that need no live pool run as shown, and print what the pages say.

Each shell block of README.md, docs/ and deploy/README.md whose commands need neither a
pool nor Ray (virtual runs, sweeps, report, check, token secret: scripts/doc_commands.py
sorts them) runs line by line, in order, in a folder of its own that has the checkout's
examples/; each command must exit 0, print what its comment quotes and what an
<!-- output --> block under it shows (what varies masked: scripts/doc_commands.py VARIES).
A command no test runs is listed in tests/unit/test_docs_commands.py with the reason.
Also every pool spec a page shows runs in virtual time, and its invariants hold."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import doc_commands as dc  # scripts/ (pytest's pythonpath)
import pytest

from mockpool.pool.api import run_pool
from mockpool.pool.check import check_dir
from mockpool.pool.spec import parse_spec


@pytest.mark.parametrize("block", dc.shell_blocks("virtual"), ids=lambda b: b.where)
def test_a_pages_commands_run_as_shown(block: Any, tmp_path: Path) -> None:
    ran = 0
    with dc.working_dir(tmp_path, {"MOCKPOOL_HOME": str(tmp_path / "home")}):
        for command in dc.block_commands(block):
            if dc.how(command) == "not run":
                continue  # listed, with the reason, in tests/unit/test_docs_commands.py
            dc.check(command, dc.run(command))
            ran += 1
    assert ran


def test_the_virtual_blocks_are_found() -> None:
    found = {b.page for b in dc.shell_blocks("virtual")}
    assert {"docs/virtual-time.md", "docs/cluster.md", "docs/faults.md"} <= found


SPECS = [b for b in dc.blocks() if b.lang == "toml" and not b.mark.startswith("not-checked")]


@pytest.mark.parametrize("block", SPECS, ids=lambda b: b.where)
def test_a_pages_spec_runs_in_virtual_time(block: Any, tmp_path: Path) -> None:
    """For its duration (the default pool hour when it gives none), every invariant held."""
    spec = parse_spec(block.text, block.where, base_dir=dc.ROOT / "examples")
    spec.clock = "virtual"
    run_pool(spec, tmp_path, None)
    report = check_dir(tmp_path)
    assert report.ok, f"{block.where}: {report}"
