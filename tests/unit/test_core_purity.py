"""The daemons' cores are pure: only the shells touch the network, Ray, asyncio or the wall clock.

A core takes ``now`` as an argument, so the live shell and a virtual-time driver can share
it and every HTCondor rule is testable in milliseconds (design: "a pure core and a thin
shell"). What a core calls runs inside it, so the modules the cores import (found by
walking their import statements: the ClassAd language, the configuration, claim ids ...)
are held to the same rules, and every evaluation a core makes passes the pool's ``now``
and its own seeded ``rng`` (the evaluator has no clock or randomness of its own).

These tests read syntax trees; they import nothing of what they check.
"""

from __future__ import annotations

import ast
import functools
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
    "date": {"today"},
}
# time's converters read the clock when given no time: at most this many arguments
CLOCK_WITHOUT_TIME = {"gmtime": 0, "localtime": 0, "ctime": 0, "asctime": 0, "strftime": 1}
# the OS's randomness (no seed can fix it): module -> functions (None: any)
OS_RANDOM: dict[str, set[str] | None] = {
    "secrets": None,
    "os": {"urandom", "getrandom"},
    "uuid": {"uuid1", "uuid4"},
}
# Places that may read the OS's randomness, with why no core run depends on it.
# (module path, what) -> why
ALLOWED = {
    ("claimid.py", "secrets.token_hex()"): "a live claim id's secret; the kernel gives "
    "every startd core a seeded rng (KernelPool.rng)",
    ("collector/store.py", "secrets.token_hex()"): "the store's incarnation (AdStore.epoch): "
    "compared for equality by the negotiator's snapshot deltas, never written to an output",
}
# The classad package's evaluation entry points, and the arguments each must be given in
# a core: the pool's date and the core's seeded generator.
EVAL_FUNCTIONS = {"evaluate", "matches", "match_vector", "evaluate_rows", "EvalContext"}
EVAL_METHODS = {"eval", "get_value", "string_values", "requirements_mask"}
EVAL_INPUTS = ("now", "rng")
EVAL_CONTEXT_POSITIONS = {"now": 2, "rng": 3}  # EvalContext(my, target, now, rng, ...)


@functools.cache
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), filename=str(path))


def _core_modules() -> list[Path]:
    return sorted(
        p
        for d in DAEMONS
        for p in (PACKAGE / d).glob("*.py")
        if p.name not in SHELLS and not p.name.startswith(SHELL_PARTS)
    )


def _type_checking_only(tree: ast.Module) -> set[int]:
    """ids of the nodes under ``if TYPE_CHECKING:`` (imports that never run)."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for inner in node.body:
                skip.update(id(n) for n in ast.walk(inner))
    return skip


def _module_file(parts: list[str]) -> Path | None:
    target = PACKAGE.joinpath(*parts)
    if target.with_suffix(".py").is_file():
        return target.with_suffix(".py")
    if (target / "__init__.py").is_file():
        return target / "__init__.py"
    return None


def _imported_files(path: Path) -> set[Path]:
    """The package's modules ``path`` imports (relative or ``mockpool.`` imports; the
    package's own ``__init__``, the public API a core reads ``__version__`` from, aside)."""
    tree = _tree(path)
    skip = _type_checking_only(tree)
    here = path.relative_to(PACKAGE).parent.parts
    found: set[Path | None] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(here[: len(here) - (node.level - 1)] if node.level > 1 else here)
            elif node.module and node.module.split(".")[0] == "mockpool":
                base = []
            else:
                continue
            mod = node.module.split(".") if node.module else []
            if not node.level:
                mod = mod[1:]
            names = [_module_file([*base, *mod, a.name]) for a in node.names]
            found.update(names)
            if mod and not all(names):  # names read from a module or package
                found.add(_module_file([*base, *mod]))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "mockpool" and len(parts) > 1:
                    found.add(_module_file(parts[1:]))
    return {p for p in found if p is not None and p != PACKAGE / "__init__.py"}


@functools.cache
def _reached_modules() -> list[Path]:
    """Every module of the package the cores import, directly or through one another."""
    cores = set(_core_modules())
    seen: set[Path] = set()
    todo = list(cores)
    while todo:
        for q in _imported_files(todo.pop()):
            if q not in seen and q not in cores:
                seen.add(q)
                todo.append(q)
    return sorted(seen)


def _aliases(tree: ast.Module) -> dict[str, str]:
    """Local name -> what it stands for: ``import random as _random`` -> "random",
    ``from datetime import datetime`` -> "datetime.datetime"."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                names[alias.asname or alias.name.split(".")[0]] = (
                    alias.name if alias.asname else alias.name.split(".")[0]
                )
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return names


def _dotted(node: ast.expr, names: dict[str, str]) -> str | None:
    """``a.b.c`` with ``a`` resolved through the module's imports, else None."""
    if isinstance(node, ast.Name):
        return names.get(node.id, node.id)
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value, names)
        return f"{base}.{node.attr}" if base is not None else None
    return None


def _violations(path: Path) -> list[str]:
    """What in ``path`` imports asyncio, grpc or ray, reads the wall clock, uses the
    ``random`` module's shared generator, or reads the OS's randomness."""
    return [f"line {line}: {what}" for line, what in _findings(path)]


def _findings(path: Path) -> list[tuple[int, str]]:
    tree = _tree(path)
    names = _aliases(tree)
    found: list[tuple[int, str]] = []
    bases: set[int] = set()  # names read an attribute of (``random.Random``)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in FORBIDDEN_MODULES:
                    found.append((node.lineno, f"import {alias.name}"))
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            root = node.module.split(".")[0]
            if root in FORBIDDEN_MODULES:
                found.append((node.lineno, f"from {node.module} import ..."))
            for alias in node.names:
                if alias.name in WALL_CLOCK.get(root, ()) or (
                    root == "random" and alias.name != "Random"
                ):
                    found.append((node.lineno, f"from {node.module} import {alias.name}"))
        elif isinstance(node, ast.Attribute):
            bases.add(id(node.value))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            what = _dotted(node.func, names)
            if what is None:
                continue
            module, _, fn = what.rpartition(".")
            short = module.rpartition(".")[2]
            if fn in WALL_CLOCK.get(short, ()) and module.split(".")[0] in ("time", "datetime"):
                found.append((node.lineno, f"{short}.{fn}()"))
            elif module == "time" and len(node.args) <= CLOCK_WITHOUT_TIME.get(fn, -1):
                found.append((node.lineno, f"time.{fn}() without a time"))
            elif module == "random" and fn != "Random":
                found.append((node.lineno, f"random.{fn}()"))
            elif module in OS_RANDOM and (OS_RANDOM[module] is None or fn in OS_RANDOM[module]):
                found.append((node.lineno, f"{module}.{fn}()"))
        elif (
            isinstance(node, ast.Name) and names.get(node.id) == "random" and id(node) not in bases
        ):
            # the module itself handed on as a generator (``rng or random``)
            found.append((node.lineno, f"the random module as a value ({node.id})"))
    return sorted(set(found))


def _unjustified(path: Path) -> list[str]:
    where = str(path.relative_to(PACKAGE))
    return [
        f"line {line}: {what}" for line, what in _findings(path) if (where, what) not in ALLOWED
    ]


@pytest.mark.parametrize("path", _core_modules(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_core_module_is_pure(path: Path) -> None:
    assert _unjustified(path) == [], f"{path.parent.name}/{path.name} is a core module"


@pytest.mark.parametrize("path", _reached_modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_what_the_cores_import_is_pure(path: Path) -> None:
    # a core runs what it imports: the same rules, but for the places ALLOWED names
    assert _unjustified(path) == [], f"{path.relative_to(PACKAGE)} is imported by a core"


def test_every_allowed_place_is_still_there() -> None:
    # an exception that no longer exists is removed, not left to excuse a new one
    for where, what in ALLOWED:
        found = {w for _, w in _findings(PACKAGE / where)}
        assert what in found, (where, what)


def test_the_walk_reaches_the_language_and_the_configuration() -> None:
    reached = {str(p.relative_to(PACKAGE)) for p in _reached_modules()}
    for name in (
        "classad/evaluate.py",
        "classad/functions.py",
        "classad/policy_functions.py",
        "classad/kernel/match.py",
        "config/configdict.py",
        "config/macros.py",
        "claimid.py",
        "wire.py",
    ):
        assert name in reached, name
    for shell in ("daemon.py", "rpc.py", "pool/api.py", "collector/service.py", "tooltime.py"):
        assert shell not in reached, shell


def _missing_inputs(path: Path) -> list[str]:
    """Each evaluation in ``path`` that is not given ``now`` and ``rng``: a call of one
    of the classad package's entry points (a name imported from it, or a method of
    EVAL_METHODS), unless a parameter of an enclosing function hides the name. A core
    may pass ``now=None, rng=None`` on purpose (condor_submit's reading of a literal):
    time() and random() then raise, they never read the wall clock."""
    tree = _tree(path)
    imported = {  # the entry points' local names: from ..classad(.x) import evaluate
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and "classad" in (node.module or "").split(".")
        for alias in node.names
        if alias.name in EVAL_FUNCTIONS
    }
    missing: list[str] = []

    def visit(node: ast.AST, hidden: frozenset[str]) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            a = node.args
            params = [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]
            hidden = hidden | {p.arg for p in params if p is not None}
            # and what the function defines itself (``def evaluate(rows): ...``)
            hidden |= {
                n.name if isinstance(n, ast.FunctionDef) else n.id
                for n in ast.walk(node)
                if (isinstance(n, ast.FunctionDef) and n is not node)
                or (isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))
            }
        if isinstance(node, ast.Call):
            f = node.func
            name = (
                f.id
                if isinstance(f, ast.Name) and f.id in imported and f.id not in hidden
                else f.attr
                if isinstance(f, ast.Attribute) and f.attr in EVAL_METHODS
                else None
            )
            if name is not None:
                given = {k.arg for k in node.keywords}
                if name == "EvalContext":
                    given |= {k for k, i in EVAL_CONTEXT_POSITIONS.items() if len(node.args) > i}
                lacks = [k for k in EVAL_INPUTS if k not in given]
                if lacks:
                    missing.append(
                        f"line {node.lineno}: {ast.unparse(node)[:80]} lacks {', '.join(lacks)}"
                    )
        for child in ast.iter_child_nodes(node):
            visit(child, hidden)

    visit(tree, frozenset())
    return missing


@pytest.mark.parametrize("path", _core_modules(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_core_evaluations_are_given_the_pool_time_and_a_seeded_rng(path: Path) -> None:
    # without them time() and random() in an ad raise (the evaluator has no clock)
    assert _missing_inputs(path) == [], f"{path.parent.name}/{path.name} is a core module"


def test_checker_finds_what_it_looks_for(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import asyncio\nfrom grpc import aio\nimport time\nfrom datetime import datetime\n"
        "from time import monotonic\nx = time.time()\ny = datetime.now()\n"
        "import random as _r\nimport secrets, os\nfrom random import choice\n"
        "a = _r.random()\nb = _r.Random(3)\nc: _r.Random | None = None\nd = c or _r\n"
        "e = time.gmtime()\nf = time.gmtime(5)\ng = time.strftime('%c')\n"
        "h = time.strftime('%c', f)\ni = secrets.token_hex(8)\nj = os.urandom(4)\n"
    )
    assert _violations(bad) == [
        "line 1: import asyncio",
        "line 2: from grpc import ...",
        "line 5: from time import monotonic",
        "line 6: time.time()",
        "line 7: datetime.now()",
        "line 10: from random import choice",
        "line 11: random.random()",
        "line 14: the random module as a value (_r)",
        "line 15: time.gmtime() without a time",
        "line 17: time.strftime() without a time",
        "line 19: secrets.token_hex()",
        "line 20: os.urandom()",
    ]


def test_call_checker_finds_what_it_looks_for(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        "from ..classad import evaluate, matches\n"
        "from ..classad.evaluate import EvalContext\n"
        "a = evaluate(e, ad, now=1.0)\n"
        "b = evaluate(e, ad, now=1.0, rng=r)\n"
        "c = ad.eval('Name')\n"
        "d = matches(j, s, rng=r, now=t)\n"
        "def f(evaluate):\n    return evaluate(x)\n"
        "def g():\n    def evaluate(r):\n        return r\n    return evaluate(x)\n"
        "g = EvalContext(None, None, t, r)\nh = EvalContext(None, None, t)\n"
        "i = compiled.requirements_mask(table, job, now=t)\n"
    )
    assert _missing_inputs(bad) == [
        "line 3: evaluate(e, ad, now=1.0) lacks rng",
        "line 5: ad.eval('Name') lacks now, rng",
        "line 14: EvalContext(None, None, t) lacks rng",
        "line 15: compiled.requirements_mask(table, job, now=t) lacks rng",
    ]


def test_every_daemon_has_core_modules() -> None:
    for d in DAEMONS:
        assert any(p.parent.name == d for p in _core_modules()), d
