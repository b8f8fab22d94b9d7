"""One view of a machine: the pool spec refuses exactly the machines the startd cannot
build, and both read a machine's totals and slots through startd.layout.machine_layout."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from mockpool.config import ConfigDict, ConfigError, parse_config
from mockpool.pool.spec import parse_spec
from mockpool.pool.specmodel import SpecError
from mockpool.startd.layout import MEMORY_MB_PER_CPU, machine_layout
from mockpool.startd.machine import Machine

SPEC = """
[pool]
duration = 60
[[startds]]
count = 1
name = "m{{}}"
config = {config}
[[schedds]]
count = 1
"""


def spec_accepts(config: str) -> bool:
    try:
        parse_spec(SPEC.format(config=json.dumps(config)), "<t>")
    except SpecError:
        return False
    return True


def startd_builds(config: str) -> Machine | None:
    try:
        return Machine("m1", parse_config(config, "<t>", ConfigDict()), "127.0.0.1:0", 0, 0.0)
    except ConfigError:
        return None


def test_a_slot_of_1500_mb_on_a_machine_without_memory_set_is_run_by_both() -> None:
    # MEMORY unset: 1 cpu detected, 2048 MB a cpu; the spec used to assume 1024 MB
    config = "SLOT_TYPE_1 = cpus=1, memory=1500\nNUM_SLOTS_TYPE_1 = 1\n"
    assert spec_accepts(config)
    machine = startd_builds(config)
    assert machine is not None
    assert [(s.cpus, s.memory) for s in machine.ordered_slots()] == [(1, 1500)]


def test_a_slot_bigger_than_the_detected_memory_is_refused_by_both() -> None:
    config = "SLOT_TYPE_1 = cpus=1, memory=2049\nNUM_SLOTS_TYPE_1 = 1\n"
    assert not spec_accepts(config) and startd_builds(config) is None


def test_the_startd_prefix_is_read_by_both() -> None:
    # STARTD.MEMORY wins over MEMORY for the startd, so the slot fits
    config = (
        "MEMORY = 1000\nSTARTD.MEMORY = 4000\nSLOT_TYPE_1 = memory=3000\nNUM_SLOTS_TYPE_1 = 1\n"
    )
    assert spec_accepts(config)
    assert machine_layout(parse_config(config), "m1").memory == 4000


def test_detected_memory_is_2048_mb_a_cpu() -> None:
    layout = machine_layout(parse_config("NUM_CPUS = 3\n"), "m1")
    assert (layout.cpus, layout.memory, layout.detected_memory) == (3, 3 * 2048, 6144)
    assert MEMORY_MB_PER_CPU == 2048


_share = st.one_of(
    st.integers(1, 8).map(lambda n: f"1/{n}"),
    st.sampled_from(["25%", "50%", "100%", "10%"]),
    st.integers(1, 6).map(str),
)
_mem = st.one_of(
    st.integers(100, 9000).map(str), st.sampled_from(["25%", "50%", "1/2", "1/4", "auto"])
)


@st.composite
def machine_configs(draw: st.DrawFn) -> str:
    lines = []
    if draw(st.booleans()):
        lines.append(f"NUM_CPUS = {draw(st.integers(1, 16))}")
    if draw(st.booleans()):
        prefix = draw(st.sampled_from(["", "STARTD."]))
        lines.append(f"{prefix}MEMORY = {draw(st.integers(256, 65536))}")
    if draw(st.booleans()):
        lines.append(f"RESERVED_MEMORY = {draw(st.integers(0, 2048))}")
    for n in range(1, draw(st.integers(0, 2)) + 1):
        parts = []
        if draw(st.booleans()):
            parts.append(f"cpus={draw(_share)}")
        if draw(st.booleans()):
            parts.append(f"memory={draw(_mem)}")
        lines.append(f"SLOT_TYPE_{n} = {', '.join(parts) or '100%'}")
        lines.append(f"NUM_SLOTS_TYPE_{n} = {draw(st.integers(1, 4))}")
        if draw(st.booleans()):
            lines.append(f"SLOT_TYPE_{n}_PARTITIONABLE = True")
    return "\n".join(lines) + "\n"


@settings(max_examples=150, deadline=None)
@given(machine_configs())
def test_the_spec_refuses_exactly_the_machines_the_startd_cannot_build(config: str) -> None:
    machine = startd_builds(config)
    assert spec_accepts(config) == (machine is not None), config
    if machine is not None:
        layout = machine_layout(parse_config(config), "m1")
        want = [
            (t.cpus, t.memory_mb, t.partitionable)
            for t in layout.slot_types
            for _ in range(t.count)
        ]
        got = [(s.cpus, s.memory, s.kind == "Partitionable") for s in machine.ordered_slots()]
        assert got == want, config
