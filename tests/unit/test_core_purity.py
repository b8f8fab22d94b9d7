"""The daemons' cores are pure: only the shells touch the network, Ray, asyncio or the wall clock.

A core takes ``now`` as an argument, so the live shell and a virtual-time driver can share
it and every HTCondor rule is testable in milliseconds (design: "a pure core and a thin
shell"). This test reads each core module's syntax tree; it does not import anything.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import mockpool

PACKAGE = Path(mockpool.__file__).parent
DAEMONS = ("collector", "negotiator", "schedd", "startd")
SHELLS = {"service.py", "actor.py"}  # the only modules of a daemon that may do I/O
SHELL_PARTS = "service_"  # a shell split in parts: service_qmgmt.py is service.py's mixin
FORBIDDEN_MODULES = {"grpc", "ray", "asyncio"}
# Wall-clock readers: module -> functions.
WALL_CLOCK = {
    "time": {
        "time",
        "time_ns",
        "monotonic",
        "monotonic_ns",
        "perf_counter",
        "perf_counter_ns",
        "process_time",
        "process_time_ns",
        "sleep",
    },
    "datetime": {"now", "utcnow", "today"},
}


def _core_modules() -> list[Path]:
    return sorted(
        p
        for d in DAEMONS
        for p in (PACKAGE / d).glob("*.py")
        if p.name not in SHELLS and not p.name.startswith(SHELL_PARTS)
    )


def _violations(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found: list[str] = []
    imported_names: dict[str, str] = {}  # local name -> "module.function" for from-imports
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in FORBIDDEN_MODULES:
                    found.append(f"line {node.lineno}: import {alias.name}")
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            root = node.module.split(".")[0]
            if root in FORBIDDEN_MODULES:
                found.append(f"line {node.lineno}: from {node.module} import ...")
            for alias in node.names:
                imported_names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
                if alias.name in WALL_CLOCK.get(root, ()):
                    found.append(f"line {node.lineno}: from {node.module} import {alias.name}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            fn = node.func
            base = fn.value
            # time.time(), datetime.now(), datetime.datetime.now()
            name = (
                base.id
                if isinstance(base, ast.Name)
                else base.attr
                if isinstance(base, ast.Attribute)
                else ""
            )
            name = imported_names.get(name, name).split(".")[-1]
            if fn.attr in WALL_CLOCK.get(name, ()):
                found.append(f"line {node.lineno}: {name}.{fn.attr}()")
    return found


@pytest.mark.parametrize("path", _core_modules(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_core_module_is_pure(path: Path) -> None:
    assert _violations(path) == [], f"{path.parent.name}/{path.name} is a core module"


def test_checker_finds_what_it_looks_for(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import asyncio\nfrom grpc import aio\nimport time\nfrom datetime import datetime\n"
        "from time import monotonic\nx = time.time()\ny = datetime.now()\n"
    )
    got = _violations(bad)
    assert got == [
        "line 1: import asyncio",
        "line 2: from grpc import ...",
        "line 5: from time import monotonic",
        "line 6: time.time()",
        "line 7: datetime.now()",
    ]


def test_every_daemon_has_core_modules() -> None:
    for d in DAEMONS:
        assert any(p.parent.name == d for p in _core_modules()), d
