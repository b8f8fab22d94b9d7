"""The demo output the README shows and explains is what `mockpool run examples/pslot.toml`
prints: run in virtual time (the same daemons and summary; no Ray), every line of the
README's <!-- demo-output --> block has the run's form (numbers aside), and the lines
whose figures do not depend on the machine's speed are the run's exactly."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from doc_commands import form  # scripts/ (pytest's pythonpath): the docs' one rule

from mockpool.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
# figures that a live run and a virtual run share: counts, not times
EXACT = ("Machines ", "Negotiation cycles ", "Jobs: ", "Slots: ")


def shown() -> list[str]:
    text = (ROOT / "README.md").read_text()
    m = re.search(r"<!-- demo-output -->\s*```\w*\n(.*?)```", text, re.S)
    assert m is not None, "README.md has no <!-- demo-output --> block"
    return [line for line in m.group(1).splitlines() if line.strip()]


def test_form_masks_numbers_only() -> None:
    assert re.fullmatch(form("lag 2.85 pool s, 29.9%"), "lag 0.00 pool s, 30.0%")
    assert not re.fullmatch(form("lag 2.85 pool s"), "lag 2.85 real s")


@pytest.fixture(scope="module")
def printed(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    import contextlib
    import io

    out = io.StringIO()
    folder = tmp_path_factory.mktemp("demo")
    with contextlib.redirect_stdout(out):
        rc = main(
            [
                "run",
                str(ROOT / "examples" / "pslot.toml"),
                "--clock",
                "virtual",
                "--out",
                str(folder),
            ]
        )
    assert rc == 0
    return out.getvalue().splitlines()


def test_every_line_the_readme_shows_has_the_runs_form(printed: list[str]) -> None:
    for line in shown():
        if line.startswith(("Running ", "Token authentication")):
            continue  # the live run's own first lines (virtual: "in virtual time", no Ray)
        pattern = form(line)
        assert any(re.fullmatch(pattern, p) for p in printed), (
            f"README's demo line {line!r} is not what the run prints:\n" + "\n".join(printed)
        )


def test_the_counts_the_readme_explains_are_the_runs(printed: list[str]) -> None:
    for line in shown():
        if line.startswith(EXACT):
            assert line in printed, f"README shows {line!r}; the run prints:\n" + "\n".join(printed)
