"""The pool spec: topology, config layering, workload, and errors naming file:line."""

from __future__ import annotations

from pathlib import Path

import pytest

from mockpool.pool.spec import load_spec, parse_spec
from mockpool.pool.specmodel import SpecError

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

GOOD = """\
[pool]
time_scale = 120
duration = 600
seed = 3

[config]
NEGOTIATOR_INTERVAL = 30
START_JOBS = "$(NEGOTIATOR_INTERVAL:5)"

[[startds]]
name = "node{:02d}"
count = 3
machines_per_actor = 2
config = '''
NUM_CPUS = 8
MEMORY = 16G
'''

[[schedds]]
count = 2

[[submit]]
at = 60
schedd = "schedd2"
owner = "bob"
description = '''
executable = /bin/sleep
arguments = 30
queue 4
'''

[[submit]]
owner = "alice"
description = '''
cmd = /bin/sleep
args = 5
queue
'''
"""


def test_good_spec() -> None:
    s = parse_spec(GOOD, "good.toml")
    assert (s.time_scale, s.duration, s.seed, s.host) == (120.0, 600.0, 3, "127.0.0.1")
    assert s.machine_names == ["node01", "node02", "node03"]
    assert s.startds[0].machines_per_actor == 2
    assert s.schedd_names == ["schedd1", "schedd2"]
    # config layering: the pool knob is seen by the machines, macros expand
    cfg = s.startds[0].config
    assert cfg.get_int("NEGOTIATOR_INTERVAL") == 30
    assert cfg.get_int("NUM_CPUS") == 8 and cfg.get_size_mb("MEMORY") == 16384
    assert s.config.lookup("START_JOBS") == "30"
    assert s.config.raw("NUM_CPUS") != "8"  # group knobs stay in the group
    # workload sorted by submit time; schedd by name or index
    assert [(x.at, x.schedd, x.owner) for x in s.submits] == [
        (0.0, "schedd1", "alice"),
        (60.0, "schedd2", "bob"),
    ]


def test_examples_load() -> None:
    pslot = load_spec(EXAMPLES / "pslot.toml")
    assert pslot.machine_names == ["exec0001"]
    assert pslot.startds[0].config.get_int("NUM_CPUS") == 10
    mixed = load_spec(EXAMPLES / "mixed.toml")
    assert len(mixed.machine_names) == 190 and len(mixed.schedd_names) == 3


def _error(text: str) -> str:
    with pytest.raises(SpecError) as info:
        parse_spec(text, "pool.toml")
    return str(info.value)


def test_toml_syntax_error_names_line() -> None:
    msg = _error("[pool]\ntime_scale = 60\nduration = = 3\n")
    assert msg.startswith("pool.toml:3:")


def test_bad_value_names_line_and_key() -> None:
    msg = _error("[pool]\ntime_scale = 60\n\n[[startds]]\ncount = 0\n")
    assert msg.startswith("pool.toml:5:") and "count" in msg and ">= 1" in msg
    assert _error("[pool]\ntime_scale = -1\n").startswith("pool.toml:2:")
    assert "unknown key" in _error("[pool]\ntimescale = 60\n")
    assert "unknown table" in _error("[pools]\nx = 1\n")


BIG_CONFIG = "[[startds]]\ncount = 1\nconfig = '''\n{}\n'''\n"


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        # counts past any host's means: refused, not built until memory runs out
        ("[[startds]]\ncount = 99999999999999999\n", 2, ("count", "<= 1,000,000")),
        (
            '[[workload]]\nowner = "a"\njobs = 100000000000\nduration = 60\n',
            3,
            ("jobs", "<= 10,000,000"),
        ),
        ("[[schedds]]\ncount = 99999999999\n", 2, ("count", "<= 10,000")),
        ("[pool]\nduration = nan\n", 2, ("duration", "nan")),
        # an integer or size knob whose constant is infinite has no value to truncate to
        (BIG_CONFIG.format("NUM_CPUS = 1e309"), 4, ("NUM_CPUS",)),
        (BIG_CONFIG.format("MEMORY = 1e309"), 4, ("MEMORY",)),
    ],
)
def test_numbers_out_of_any_range_name_their_line(
    text: str, line: int, words: tuple[str, ...]
) -> None:
    msg = _error(text)
    assert msg.startswith(f"pool.toml:{line}:"), msg
    assert all(w in msg for w in words), msg


def test_bad_inline_config_keeps_file_lines() -> None:
    text = "[[startds]]\ncount = 1\nconfig = '''\nNUM_CPUS = 4\nMEMORY = lots\n'''\n"
    msg = _error(text)
    assert msg.startswith("pool.toml:5:") and "MEMORY" in msg and "lots" in msg


def test_bad_config_table_value() -> None:
    msg = _error("[config]\nNEGOTIATOR_INTERVAL = 60\n'START X' = 1\n")
    assert msg.startswith("pool.toml:3:")


def test_bad_preemption_policy_refuses_the_pool() -> None:
    msg = _error(
        "[config]\nNEGOTIATOR_INTERVAL = 60\nPREEMPTION_REQUIREMENTS = 'RemoteUserPrio >'\n"
    )
    assert (
        msg.startswith("pool.toml:3: PREEMPTION_REQUIREMENTS = ")
        and "not a ClassAd expression" in msg
    )
    msg = _error("[config]\nPREEMPTION_RANK = '\"high\"'\n")
    assert (
        msg.startswith("pool.toml:2: PREEMPTION_RANK = ") and "must be a number expression" in msg
    )
    msg = _error("[config]\nNEGOTIATOR_CONSIDER_PREEMPTION = 'sometimes'\n")
    assert msg.startswith("pool.toml:2:") and "NEGOTIATOR_CONSIDER_PREEMPTION" in msg


def test_slot_layout_that_does_not_fit() -> None:
    text = (
        "[[startds]]\nconfig = '''\nNUM_CPUS = 2\nSLOT_TYPE_1 = cpus=4\nNUM_SLOTS_TYPE_1 = 1\n'''\n"
    )
    assert "pool.toml" in _error(text)


def test_bad_submit_description_names_line() -> None:
    text = "[[submit]]\nowner = 'a'\ndescription = '''\nexecutable = /bin/sleep\nrequest_memory = 12Q\nqueue\n'''\n"
    msg = _error(text)
    assert msg.startswith("pool.toml:5:") and "12Q" in msg


def test_submit_schedd_must_exist() -> None:
    assert "out of range" in _error("[[submit]]\nschedd = 3\nowner = 'a'\ndescription = 'queue'\n")
    assert "no schedd named" in _error(
        "[[submit]]\nschedd = 'x'\nowner = 'a'\ndescription = 'queue'\n"
    )
    assert "owner" in _error("[[submit]]\ndescription = 'queue'\n")


def test_duplicate_machine_names_refused() -> None:
    text = "[[startds]]\nname = 'n{}'\ncount = 2\n\n[[startds]]\nname = 'n{}'\ncount = 1\n"
    assert "used twice" in _error(text)
    assert "same name" in _error("[[startds]]\nname = 'fixed'\ncount = 2\n")


def test_missing_spec_file(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="cannot read"):
        load_spec(tmp_path / "nope.toml")


def test_up_and_run_refuse_a_bad_preemption_policy(tmp_path, capsys) -> None:
    from mockpool.cli.main import main

    spec = tmp_path / "bad.toml"
    spec.write_text(
        "[pool]\ntime_scale = 60\n\n[config]\nPREEMPTION_REQUIREMENTS = 'RemoteUserPrio >'\n"
    )
    for cmd in ("up", "run"):
        assert (
            main([cmd, str(spec), *(["--pool", str(tmp_path / "home")] if cmd == "up" else [])])
            == 2
        )
        err = capsys.readouterr().err
        assert f"{spec}:5: PREEMPTION_REQUIREMENTS = " in err and "not a ClassAd expression" in err
    assert not (tmp_path / "home").exists()  # nothing was started


def test_bad_policy_expressions_and_limits_refuse_the_pool() -> None:
    # an unparsable consumption expression in a machine family's config: file, line, knob
    text = (
        "[[startds]]\ncount = 1\nconfig = '''\nNUM_CPUS = 4\nCONSUMPTION_POLICY = True\n"
        "CONSUMPTION_MEMORY = quantize(target.RequestMemory, {512}\n'''\n"
    )
    msg = _error(text)
    assert msg.startswith("pool.toml:6: CONSUMPTION_MEMORY = ") and "syntax error" in msg
    # ill-typed: a string where a number of cpus belongs
    text = "[[startds]]\nconfig = '''\nCONSUMPTION_POLICY = True\nCONSUMPTION_CPUS = \"two\"\n'''\n"
    msg = _error(text)
    assert msg.startswith("pool.toml:4: CONSUMPTION_CPUS = ") and "not a number" in msg
    # SLOT_WEIGHT for the whole pool: the negotiator's check names the line
    msg = _error("[config]\nNEGOTIATOR_INTERVAL = 60\nSLOT_WEIGHT = 'Cpus >'\n")
    assert msg.startswith("pool.toml:3: SLOT_WEIGHT = Cpus >") and "syntax error" in msg
    msg = _error("[config]\nSLOT_WEIGHT = 'Cpus > 1'\n")
    assert msg.startswith("pool.toml:2: SLOT_WEIGHT") and "not a number" in msg
    # a concurrency limit that is not a number
    msg = _error("[config]\nNEGOTIATOR_INTERVAL = 60\nMATLAB_LIMIT = '10 ten'\n")
    assert msg.startswith("pool.toml:3: MATLAB_LIMIT") and "expected a number" in msg


def test_a_schedd_interval_that_is_not_seconds_stops_the_pool_before_it_starts() -> None:
    msg = _error(
        "[pool]\ntime_scale = 60\n\n[config]\nSCHEDD_MIN_INTERVAL = -5\n\n[[startds]]\ncount = 1\n"
    )
    assert "SCHEDD_MIN_INTERVAL must be a number >= 0, got -5" in msg
    assert msg.startswith("pool.toml:5: ")


def test_a_bad_schedd_knob_or_system_policy_names_its_line_once() -> None:
    msg = _error("[config]\nSYSTEM_PERIODIC_HOLD = 'JobStatus =='\n")
    assert msg.startswith("pool.toml:2: SYSTEM_PERIODIC_HOLD = ") and "syntax error" in msg
    # (a bare word is an UNDEFINED attribute to HTCondor, which then uses the default)
    msg = _error("[config]\nPERIODIC_EXPR_INTERVAL = '5 soon'\n")
    assert msg == 'pool.toml:2: PERIODIC_EXPR_INTERVAL = "5 soon": expected an integer'
    msg = _error("[config]\n\nMAX_JOBS_RUNNING = '9 many'\n")
    assert msg == 'pool.toml:3: MAX_JOBS_RUNNING = "9 many": expected an integer'
