"""The shells hold no HTCondor rule, and run on the generic pump: every decision is a
core's (issue 38).

A shell (a daemon's gRPC service module, the actor that hosts daemons, the daemon
plumbing) only translates, sleeps and sends. Read statically, a rule shows itself three
ways, and each is refused here:

- a knob read: a call of one of ConfigDict's typed getters (``get_int``, ``get_expr``, ...);
- a knob named: a string that is a knob of the table (``config/knobs.py``);
- a ClassAd looked into: ``eval``, ``get_value``, ``lookup``, ``matches``, ``evaluate``
  on anything, but for the few reads listed below, each with why it is no rule.

Every daemon shell runs on the generic pump (``pump.py``) and has no loop of its own: no
``while`` in a coroutine, no ``Alarm`` made, no ``sleep_until`` called. (The schedds of
one actor share one loop and one Advertise as one core, ``schedd/host.py``.)
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from mockpool.config.knobs import KNOBS

SERVICES = Path(__file__).resolve().parents[2] / "services"
SHELLS = sorted(
    [
        *SERVICES.glob("*/service.py"),
        *SERVICES.glob("*/service_*.py"),  # a shell's parts (the schedd's calls, qmgmt)
        SERVICES / "daemon.py",
        SERVICES / "pump.py",
        SERVICES / "pool" / "host.py",
    ]
)
GETTERS = frozenset(("get_int", "get_float", "get_bool", "get_str", "get_list", "get_expr")) | {
    "get_size_mb",
    "get_size_kb",
}
AD_READS = frozenset(("eval", "get_value", "lookup", "matches", "evaluate", "symmetric_match"))
# (file, what is read): reads that decide nothing
ALLOWED = {
    # a job ad that cannot be encoded is named in the log line that reports it
    ("schedd/service.py", "ClusterId"),
    ("schedd/service.py", "ProcId"),
    # DaemonContext.locate: the address in a daemon's ad, the collector's answer to "where"
    ("daemon.py", "MyAddress"),
}


def rule_sites(path: Path, root: Path = SERVICES) -> list[str]:
    """Where ``path`` reads a knob, names one, or looks into a ClassAd (not allowed)."""
    rel = path.relative_to(root).as_posix()
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            attr = node.func.attr
            if attr in GETTERS:
                out.append(f"{rel}:{node.lineno}: reads a knob ({attr})")
            elif attr in AD_READS:
                first = node.args[0] if node.args else None
                what = first.value if isinstance(first, ast.Constant) else ast.unparse(node)
                if (rel, what) not in ALLOWED:
                    out.append(f"{rel}:{node.lineno}: looks into an ad ({attr} {what!r})")
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and node.value.isupper()
            and node.value in KNOBS
        ):
            out.append(f"{rel}:{node.lineno}: names the knob {node.value}")
    return sorted(out, key=lambda site: int(site.split(":")[1]))


@pytest.mark.parametrize("path", SHELLS, ids=lambda p: p.relative_to(SERVICES).as_posix())
def test_a_shell_reads_no_knob_and_decides_nothing_on_an_ad(path: Path) -> None:
    assert rule_sites(path) == []


def loop_sites(path: Path, root: Path = SERVICES) -> list[str]:
    """Where ``path`` loops, sleeps or waits on its own rather than on the pump."""
    rel = path.relative_to(root).as_posix()
    tree = ast.parse(path.read_text(), str(path))
    out = []
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.AsyncFunctionDef):
            continue
        for node in ast.walk(fn):
            if isinstance(node, ast.While):
                out.append(f"{rel}:{node.lineno}: a loop of its own ({fn.name})")
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            if name in ("Alarm", "sleep_until"):
                out.append(f"{rel}:{node.lineno}: waits on its own ({name})")
    return sorted(out, key=lambda site: int(site.split(":")[1]))


@pytest.mark.parametrize(
    "path",
    sorted([*SERVICES.glob("*/service.py"), *SERVICES.glob("*/service_*.py")]),
    ids=lambda p: p.relative_to(SERVICES).as_posix(),
)
def test_a_daemon_shell_runs_on_the_pump(path: Path) -> None:
    assert loop_sites(path) == []


def test_the_shells_are_found() -> None:
    names = {p.relative_to(SERVICES).as_posix() for p in SHELLS}
    assert {
        "collector/service.py",
        "negotiator/service.py",
        "schedd/service.py",
        "schedd/service_calls.py",
        "startd/service.py",
        "daemon.py",
        "pool/host.py",
    } <= names


def written(root: Path, rel: str, text: str) -> Path:
    """A shell of ``text`` at ``root/rel`` (what the checkers read)."""
    path = root / rel
    path.parent.mkdir(parents=True)
    path.write_text(text)
    return path


def test_the_loop_checker_finds_a_loop_and_a_wait(tmp_path: Path) -> None:
    shell = written(
        tmp_path,
        "startd/service.py",
        "async def run(core, clock):\n"
        "    alarm = Alarm(clock)\n"
        "    while True:\n"
        "        await clock.sleep_until(core.next_wakeup())\n"
        "def f():\n"
        "    while True:\n"
        "        return 1\n",
    )
    assert loop_sites(shell, tmp_path) == [
        "startd/service.py:2: waits on its own (Alarm)",
        "startd/service.py:3: a loop of its own (run)",
        "startd/service.py:4: waits on its own (sleep_until)",
    ]


def test_the_checker_finds_each_kind_of_rule(tmp_path: Path) -> None:
    shell = written(
        tmp_path,
        "schedd/service.py",
        "def f(cfg, ad):\n"
        "    every = cfg.get_float('SCHEDD_INTERVAL')\n"
        "    name = 'NEGOTIATOR_INTERVAL'\n"
        "    if ad.eval('JobStatus') == 2:\n"
        "        return ad.get_value('ClusterId', '?')\n",
    )
    assert rule_sites(shell, tmp_path) == [
        "schedd/service.py:2: reads a knob (get_float)",
        "schedd/service.py:2: names the knob SCHEDD_INTERVAL",
        "schedd/service.py:3: names the knob NEGOTIATOR_INTERVAL",
        "schedd/service.py:4: looks into an ad (eval 'JobStatus')",
    ]
