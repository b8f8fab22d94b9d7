"""The knob table (config/knobs.py): every knob's bad value is refused by the pool spec
before anything starts, naming the knob and its line; defaults all pass; and
``mockpool config list`` prints the table."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from mockpool.cli.main import main
from mockpool.config import ConfigDict
from mockpool.config.knobs import KNOBS, check_knobs
from mockpool.pool.spec import parse_spec
from mockpool.pool.specmodel import SpecError

SPEC = """[pool]
duration = 60

[config]
{knob} = "{value}"

[[startds]]
count = 1

[[schedds]]
count = 1
"""
KNOB_LINE = 5

# a value each kind cannot read: a malformed expression (an attribute name would be
# UNDEFINED, and a daemon then takes the default, as HTCondor's param_integer does)
MALFORMED = {"int": "1 +", "float": "1 +", "bool": "1 +", "size_mb": "1 +", "size_kb": "1 +"}
MALFORMED["expr"] = "((("
READABLE = sorted(n for n, k in KNOBS.items() if k.kind in MALFORMED)
BOUNDED = sorted(n for n, k in KNOBS.items() if k.minimum is not None or k.maximum is not None)


def refusal(knob: str, value: str) -> str:
    with pytest.raises(SpecError) as got:
        parse_spec(SPEC.format(knob=knob, value=value), "pool.toml")
    return str(got.value)


@pytest.mark.parametrize("knob", READABLE)
def test_a_malformed_value_is_refused_naming_the_knob_and_its_line(knob: str) -> None:
    message = refusal(knob, MALFORMED[KNOBS[knob].kind])
    assert message.startswith(f"pool.toml:{KNOB_LINE}: {knob}"), message


@pytest.mark.parametrize("knob", BOUNDED)
def test_a_value_out_of_range_is_refused_naming_the_knob_and_its_line(knob: str) -> None:
    info = KNOBS[knob]
    value = info.minimum - 1 if info.minimum is not None else info.maximum + 1  # type: ignore[operator]
    # (a size below 0 does not parse as a size: refused as malformed, still by its line)
    message = refusal(knob, f"{value:g}")
    assert message.startswith(f"pool.toml:{KNOB_LINE}: {knob}"), message


def test_the_cases_the_issue_names_each_get_the_arithmetic_right() -> None:
    assert refusal("PRIORITY_HALFLIFE", "0").endswith(
        "PRIORITY_HALFLIFE = 0.0: must be at least 0.001"
    )
    assert refusal("NEGOTIATION_CYCLE_STATS_LENGTH", "101").endswith(
        "NEGOTIATION_CYCLE_STATS_LENGTH = 101: must be between 0 and 100"
    )
    assert refusal("NEGOTIATOR_UPDATE_INTERVAL", "0").endswith("must be at least 1")
    # the negotiator reads NEGOTIATOR.X before X: so does the check
    text = SPEC.format(knob="PRIORITY_HALFLIFE", value="60").replace(
        "[config]\n", '[config]\n"NEGOTIATOR.DEFAULT_PRIO_FACTOR" = "0.5"\n'
    )
    with pytest.raises(SpecError, match=r"pool\.toml:5: NEGOTIATOR\.DEFAULT_PRIO_FACTOR"):
        parse_spec(text, "pool.toml")


def test_every_default_passes_and_every_knob_has_a_type_and_a_reader() -> None:
    check_knobs(ConfigDict())
    for info in KNOBS.values():
        assert info.daemons and info.kind in (*MALFORMED, "str", "list"), info.name
        # every typed knob reads as its kind through the table's own reader
        if info.kind in ("int", "float", "bool", "size_mb", "size_kb") and info.default:
            got = info.read(ConfigDict().for_subsystem(info.daemons[0].upper()))
            want = bool if info.kind == "bool" else float if info.kind == "float" else int
            # (None: a default made of macros a daemon predefines, as NUM_CPUS's)
            assert isinstance(got, want) or (got is None and "$(" in info.default), info.name


def test_config_list_prints_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "list", "--daemon", "negotiator"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["NAME", "TYPE", "RANGE", "DAEMONS", "DEFAULT"]
    row = next(line for line in lines if line.startswith("PRIORITY_HALFLIFE "))
    assert re.split(r"\s{2,}", row) == [
        "PRIORITY_HALFLIFE",
        "float",
        ">= 0.001",
        "negotiator",
        "86400",
    ]
    assert not any(line.startswith("START ") for line in lines)  # the startd's
    assert len(lines) - 1 == sum(1 for k in KNOBS.values() if "negotiator" in k.daemons)


SERVICES = Path(__file__).resolve().parents[2] / "services"


def _knob_reads() -> list[tuple[str, str, str]]:
    """Every ``<config>.get_<kind>("NAME")`` in the daemons' code: (name, kind, where).
    The config language itself (services/config/) reads its own few knobs aside."""
    out = []
    for path in sorted(SERVICES.rglob("*.py")):
        rel = path.relative_to(SERVICES)
        if rel.parts[0] in ("v1", "config"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            if not node.func.attr.startswith("get_") or not node.args:
                continue
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and arg.value.isupper():
                out.append((arg.value, node.func.attr[4:], f"{rel}:{node.lineno}"))
    return out


def test_every_knob_a_daemon_reads_is_in_the_table_read_as_its_kind() -> None:
    reads = _knob_reads()
    assert len(reads) > 50  # the walk finds the daemons' reads
    missing = sorted({f"{name} ({where})" for name, _, where in reads if name not in KNOBS})
    assert not missing, f"knobs read but not in config/knobs.py: {missing}"
    wrong = sorted(
        f"{name}: read as {kind} at {where}, the table says {KNOBS[name].kind}"
        for name, kind, where in reads
        if KNOBS[name].kind != kind
    )
    assert not wrong, wrong
