"""The invariant checker over hand-made run folders: each scenario file in testdata/check
holds a run that passes and one that breaks its invariant, with the exact violations."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mockpool.pool.check import INVARIANTS, CheckError, check_dir

DATA = Path(__file__).parent / "testdata" / "check"


def scenarios(path: Path) -> list[tuple[str, list[str], dict[str, str]]]:
    """(name, expected violations, {section: text}) per ``=== name`` block of a file."""
    out: list[tuple[str, list[str], dict[str, str]]] = []
    section = None
    for line in path.read_text().splitlines():
        if line.startswith("=== "):
            out.append((line[4:], [], {}))
            section = None
        elif not out or (section is None and line.startswith("#")):
            continue
        elif line.startswith("expect: "):
            out[-1][1].append(line[8:])
        elif line.startswith("--- "):
            section = line[4:]
            out[-1][2][section] = ""
        elif section is not None:
            out[-1][2][section] += line + "\n"
    return out


def write_run(folder: Path, sections: dict[str, str]) -> Path:
    (folder / "ads").mkdir(parents=True)
    (folder / "events.jsonl").write_text(sections.get("events", ""))
    for name in ("jobs", "history", "slots"):
        (folder / "ads" / f"{name}.ads").write_text(sections.get(name, ""))
    if "summary" in sections:
        (folder / "summary.json").write_text(sections["summary"])
    return folder


def test_every_invariant_has_a_scenario_file() -> None:
    assert sorted(p.stem for p in DATA.glob("*.txt")) == sorted(INVARIANTS)


@pytest.mark.parametrize("invariant", INVARIANTS)
def test_scenario_passes_and_its_violation_is_named(invariant: str, tmp_path: Path) -> None:
    runs = scenarios(DATA / f"{invariant}.txt")
    names = [name for name, _, _ in runs]
    assert names[0] == "ok" and names[-1] == "violation"
    for name, expected, sections in runs:
        report = check_dir(write_run(tmp_path / name.replace(" ", "_"), sections))
        assert [str(v) for v in report.violations] == expected, name
        assert report.ok == name.startswith("ok")
        assert all(v.invariant == invariant for v in report.violations)


def test_unreadable_folder_and_bad_line_are_named(tmp_path: Path) -> None:
    with pytest.raises(CheckError, match=r"no events\.jsonl here"):
        check_dir(tmp_path)
    run = write_run(
        tmp_path / "run", {"events": json.dumps({"t": 0, "kind": "submit"}) + "\n{oops\n"}
    )
    with pytest.raises(CheckError, match=r"events.jsonl:2: not JSON"):
        check_dir(run)
    (run / "events.jsonl").write_text('{"kind": "submit"}\n')
    with pytest.raises(CheckError, match=r"events.jsonl:1: event without a numeric time"):
        check_dir(run)
    (run / "events.jsonl").write_text("")
    (run / "ads" / "slots.ads").unlink()
    with pytest.raises(CheckError, match=r"slots.ads: cannot read"):
        check_dir(run)


def test_mockpool_check_command_prints_and_sets_the_status(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from mockpool.cli.main import main

    (_, _, good), (_, expected, bad) = scenarios(DATA / "job_lost.txt")
    assert main(["check", str(write_run(tmp_path / "ok", good))]) == 0
    assert f"{len(INVARIANTS)} invariants hold over 2 events and 2 jobs" in capsys.readouterr().out
    assert main(["check", str(write_run(tmp_path / "bad", bad))]) == 1
    assert capsys.readouterr().out.splitlines()[1:] == [f"  {line}" for line in expected]
    assert main(["check", str(tmp_path / "missing")]) == 2
    assert "no events.jsonl here" in capsys.readouterr().err
