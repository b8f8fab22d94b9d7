"""A virtual pool whose expressions read time() and random() everywhere a core evaluates
them, run with the wall clock and the ``random`` module's shared generator watched.

The static half of this is tests/unit/test_core_purity.py: no core module (nor any
module a core imports) reads the wall clock or the shared generator itself, and each
evaluation a core makes is given the pool's date and the core's own seeded generator.
Here the pool runs: a read of ``time.time``, ``time.time_ns`` or a function of the
``random`` module with a core, the ClassAd language or the configuration on the stack
is recorded (and refused), and the run must have none. The same spec and seed give the
same bytes twice: the draws are the cores' own.
"""

from __future__ import annotations

import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import mockpool
from mockpool.pool.api import run_pool
from mockpool.pool.spec import parse_spec

PACKAGE = Path(mockpool.__file__).parent
DAEMONS = ("collector", "negotiator", "schedd", "startd")
PURE_PACKAGES = ("classad", "config")  # what every core calls

SPEC = """
[pool]
clock = "virtual"
duration = 400
seed = 7

[config]
NEGOTIATOR_INTERVAL = 30
UPDATE_INTERVAL = 30
PERIODIC_EXPR_INTERVAL = 20
START = "time() > 0 && random(3) < 3"
RANK = "random(10)"
SLOT_WEIGHT = "Cpus + random(1)"
NEGOTIATOR_PRE_JOB_RANK = "random()"
PREEMPTION_REQUIREMENTS = "time() > 0 && random() < 2"
SYSTEM_PERIODIC_HOLD = "time() < 0 || random() > 2"
GROUP_NAMES = "group_a"
GROUP_QUOTA_group_a = 2
GROUP_ACCEPT_SURPLUS = true
GROUP_SORT_EXPR = "ifThenElse(time() > 0, random(), 0)"

[[startds]]
count = 2
config = '''
NUM_CPUS = 2
'''

[[schedds]]
count = 1

[[submit]]
at = 0
owner = "alice"
description = '''
executable = /bin/sleep
arguments = 1
+MockDuration = 40 + random(20)
accounting_group = group_a
requirements = time() > 0 && random(2) < 2
rank = random()
+ConcurrencyLimits = ifThenElse(time() > 0 && random() >= 0, "", "x")
periodic_remove = (time() - QDate) > 100000 + random(5)
queue 6
'''
"""


def _pure(filename: str) -> bool:
    """A core module, or the ClassAd language or the configuration (what cores call)."""
    try:
        rel = Path(filename).resolve().relative_to(PACKAGE.resolve())
    except ValueError:
        return False
    if rel.parts[0] in PURE_PACKAGES:
        return True
    return (
        rel.parts[0] in DAEMONS
        and rel.name not in ("service.py", "actor.py")
        and not rel.name.startswith("service_")
    )


def _watched(name: str, real: Callable[..., Any], seen: list[str]) -> Callable[..., Any]:
    def watch(*args: Any, **kwargs: Any) -> Any:
        f = sys._getframe(1)
        while f is not None:
            if _pure(f.f_code.co_filename):
                where = f"{Path(f.f_code.co_filename).name}:{f.f_lineno}"
                seen.append(f"{name}() from {where}")
                raise AssertionError(f"{name}() read in a core's call ({where})")
            f = f.f_back
        return real(*args, **kwargs)

    return watch


def _run(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, Any], list[str]]:
    seen: list[str] = []
    with monkeypatch.context() as m:
        for name in ("time", "time_ns"):
            m.setattr(time, name, _watched(f"time.{name}", getattr(time, name), seen))
        shared = [
            n
            for n in dir(random)
            if not n.startswith("_")
            and getattr(getattr(random, n), "__self__", None) is random._inst  # type: ignore[attr-defined]
        ]
        assert {"random", "randrange", "choice", "shuffle"} <= set(shared)
        for name in shared:
            m.setattr(random, name, _watched(f"random.{name}", getattr(random, name), seen))
        summary = run_pool(parse_spec(SPEC, "purity.toml"), tmp)
    return summary, seen


def test_a_pool_full_of_time_and_random_reads_no_wall_clock_and_no_shared_generator(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    summary, seen = _run(tmp_path / "a", monkeypatch)
    assert seen == []
    # every job ran its drawn duration (40 to 59 s) and completed
    assert summary["jobs"]["Completed"] == 6, summary["jobs"]
    _run(tmp_path / "b", monkeypatch)
    for name in ("events.jsonl", "NegotiatorLog"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
