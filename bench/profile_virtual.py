"""Where a virtual run's time goes, attributed by module: the share of each phase's time
spent in each module's own code (self) and with the module anywhere on the stack
(inclusive), as percentages, top N.

The run is workload (a) of bench/virtual_run.py (machines of 8 one-cpu static slots,
one-cpu jobs of 60-1200 s all submitted at 0, NEGOTIATOR_INTERVAL 60, run to the end) at
the size given. Start-up is shown apart from the run: the imports (mockpool's, and what
it imports) and the spec's parsing; the run is ``run_pool``: the pool's start, its run,
its outputs.

    python bench/profile_virtual.py                               # (a): 500 machines, 20,000 jobs
    python bench/profile_virtual.py --machines 200 --jobs 8000 --top 25
    python bench/profile_virtual.py --tool cprofile --depth 2     # by package: mockpool.schedd, ...

Two profilers:
- py-spy (``--tool py-spy``, or ``auto`` when ``py-spy`` is on PATH; not a dependency of
  the project): samples a child process from outside; exact inclusive shares (a sample
  counts once for each module on its stack) and little overhead. Time in C code counts
  as its Python caller's: an SQLite statement is the self time of the module that runs it.
  Samples in no phase (the interpreter's start and exit) are shown on their own; a thread
  blocked on a lock or select (py-spy cannot always tell) is not counted.
- cProfile (``--tool cprofile``, the fallback that always works: the standard library):
  deterministic, with the overhead of a hook per call (the run takes two to three times
  as long, more so in code that makes many small calls). C functions are modules of
  their own (``sqlite3``, ``builtins``, ``_asyncio``, ...); a thread blocked on a lock,
  select or sleep (the caller waiting for the pool's loop thread) is not counted.
  cProfile keeps who called whom but no stacks, so inclusive shares are estimated: a
  function's time is shared among its callers' stacks by the time each call from them
  took (exact where a function has one caller).
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve()
PHASES = ("imports", "spec parsing", "run")
OUTSIDE = "interpreter start and exit"
CHILD_TIMES = "profile-virtual-times: "
Around = Callable[[str], AbstractContextManager[Any]]
Func = tuple[str, int, str]  # cProfile's: file, line, name


# ------------------------------------------------------------------ the phases


def phase_imports() -> Any:
    """Import mockpool and workload (a)'s builder; return the builder module."""
    import virtual_run  # bench/, beside this file

    import mockpool.pool.api  # noqa: F401 (the run's own imports)

    return virtual_run


def phase_spec_parsing(virtual_run: Any, machines: int, jobs: int, seed: int) -> Any:
    from mockpool.pool.spec import parse_spec

    return parse_spec(virtual_run.batch_spec(machines, jobs, seed), "<bench profile_virtual>")


def phase_run(spec: Any) -> dict[str, Any]:
    from mockpool.pool.api import run_pool

    with tempfile.TemporaryDirectory() as tmp:
        return run_pool(spec, Path(tmp) / "out")


PHASE_FUNCS = (phase_imports, phase_spec_parsing, phase_run)  # py-spy finds phases by them


@contextmanager
def timed(wall: dict[str, float], phase: str, around: Around) -> Iterator[None]:
    t0 = time.perf_counter()
    with around(phase):
        yield
    wall[phase] = time.perf_counter() - t0


def run_phases(
    machines: int, jobs: int, seed: int, around: Around = lambda _phase: nullcontext()
) -> tuple[dict[str, float], dict[str, Any]]:
    """Run the three phases in order: (wall seconds of each, the run's summary).
    ``around(phase)`` is a context manager entered around each (a profiler)."""
    wall: dict[str, float] = {}
    with timed(wall, "imports", around):
        virtual_run = phase_imports()
    with timed(wall, "spec parsing", around):
        spec = phase_spec_parsing(virtual_run, machines, jobs, seed)
    with timed(wall, "run", around):
        summary = phase_run(spec)
    return wall, summary


# ------------------------------------------------------------------ modules


def _search_path() -> list[Path]:
    roots = [Path(p).resolve() for p in sys.path if p and Path(p).is_dir()]
    return sorted(set(roots), key=lambda p: len(p.parts), reverse=True)


SEARCH_PATH = _search_path()


def module_of_file(filename: str) -> str:
    """The dotted module a source file is (``services/`` is ``mockpool``); ``<frozen x>``
    is ``x``; anything else unknown is shown as it is."""
    frozen = re.fullmatch(r"<frozen ([\w.]+)>", filename)
    if frozen:
        return frozen.group(1)
    if filename.startswith("<"):
        return filename
    path = Path(filename)
    if not path.is_absolute():
        return filename
    path = path.resolve()
    services = ROOT / "services"
    if path.is_relative_to(services):
        parts = ("mockpool", *path.relative_to(services).with_suffix("").parts)
    elif path.is_relative_to(ROOT / "bench"):
        parts = ("bench", path.stem)
    else:
        base = next((p for p in SEARCH_PATH if path.is_relative_to(p)), None)
        if base is None:
            return filename
        parts = path.relative_to(base).with_suffix("").parts
    if parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1]
    return ".".join(parts)


def module_of_builtin(name: str) -> str:
    """The module of a C function as cProfile names it (``<method 'execute' of
    'sqlite3.Cursor' objects>``: sqlite3; ``<built-in method _heapq.heappush>``: _heapq;
    a method of a builtin type: builtins)."""
    m = re.fullmatch(r"<built-in method ([\w.]+)\.\w+>", name) or re.fullmatch(
        r"<method '\w+' of '([\w.]+)\.\w+' objects>", name
    )
    return m.group(1) if m else "builtins"


def cut(module: str, depth: int) -> str:
    """``module`` cut to its first ``depth`` dotted parts (0: whole)."""
    return ".".join(module.split(".")[:depth]) if depth > 0 else module


# ------------------------------------------------------------------ attribution


class Shares:
    """One phase's time by module: self and inclusive, in the phase's unit (seconds of
    profiled time, or samples), and the phase's total in that unit."""

    def __init__(self) -> None:
        self.own: Counter[str] = Counter()
        self.inclusive: Counter[str] = Counter()
        self.total = 0.0
        self.waited = 0.0  # blocked on a lock, select or sleep: not counted

    def rows(self, top: int, key: str) -> list[tuple[str, float, float]]:
        """(module, inclusive %, self %) of the ``top`` modules with the most ``key``
        ("self" or "inclusive") time."""
        by = self.own if key == "self" else self.inclusive
        names = sorted(by, key=lambda m: (-by[m], m))[:top]
        scale = 100.0 / self.total if self.total else 0.0
        return [(m, min(100.0, self.inclusive[m] * scale), self.own[m] * scale) for m in names]


# C functions that block (a thread waiting for another, or for time): not time spent
WAITS = re.compile(
    r"<method 'acquire' of '_thread\.(?:lock|RLock)' objects>"
    r"|<method '(?:poll|select|control)' of 'select\.\w+' objects>"
    r"|<built-in method (?:time\.sleep|select\.select|select\.poll)>"
)


def from_cprofile(stats: pstats.Stats, depth: int) -> Shares:
    """Self: each function's own time, by its module. Inclusive: each function's own
    time, shared among the modules on the stack above it. cProfile keeps no stacks, only
    who called whom for how long, so "the chance a module is on the stack while f runs"
    is f's own module for sure, else its callers' chances weighed by the time each call
    from them took (exact where each function has one caller; a recursion adds nothing).
    Blocking waits (a lock, select, sleep) count as no time at all."""
    import numpy as np  # here: the imports phase is to count it, as mockpool's

    table: dict[Func, Any] = stats.stats  # type: ignore[attr-defined]

    def module(func: Func) -> str:
        filename, _, name = func
        return cut(module_of_builtin(name) if filename == "~" else module_of_file(filename), depth)

    mods = {f: module(f) for f in table}
    names = sorted(set(mods.values()))
    column = {m: i for i, m in enumerate(names)}
    chance: dict[Func, np.ndarray] = {}

    def chances(func: Func) -> np.ndarray:
        if func in chance:
            return chance[func]
        chance[func] = np.zeros(len(names))  # a way back to func, while it is worked out
        edges = [(c, e[3], e[1]) for c, e in table[func][4].items() if c in table]
        by_time = sum(ct for _, ct, _ in edges) > 0
        weights = np.array([ct if by_time else nc for _, ct, nc in edges], dtype=float)
        v = np.zeros(len(names))
        if weights.sum() > 0:
            for (caller, _, _), w in zip(edges, weights / weights.sum(), strict=True):
                v += w * chances(caller)
        v[column[mods[func]]] = 1.0
        chance[func] = v
        return v

    shares = Shares()
    inclusive = np.zeros(len(names))
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 50_000))  # as deep as the call graph goes
    try:
        for func, (_cc, _nc, tt, _ct, _callers) in table.items():
            if func[0] == "~" and WAITS.fullmatch(func[2]):
                shares.waited += tt
                continue
            shares.own[mods[func]] += tt
            shares.total += tt
            inclusive += tt * chances(func)
    finally:
        sys.setrecursionlimit(limit)
    shares.inclusive.update({m: float(inclusive[i]) for i, m in enumerate(names)})
    return shares


FRAME = re.compile(r"^(?P<func>.*) \((?P<file>[^()]*)\)$")


# Python frames in which a thread blocks (the C call below them is not sampled)
BLOCKING = re.compile(
    r"(?:Condition\.wait|Event\.wait|Semaphore\.acquire|Thread\.join"
    r"|Thread\._wait_for_tstate_lock) \(.*threading\.py\)|\w*Selector\.select \(.*selectors\.py\)"
)


def from_collapsed(lines: Iterable[str], depth: int) -> dict[str, Shares]:
    """py-spy's raw output (``frame;frame;... count`` a line, the root first; a frame is
    ``function (file)``) by phase: a stack belongs to the phase whose function of this
    file is on it; another thread's to the run (the pool's loop runs in one: only the run
    starts threads); the rest (the interpreter's start and exit) to OUTSIDE. A sample of
    a thread blocked in a wait (py-spy cannot always tell it is idle) is not counted."""
    markers = {f"{f.__name__} ({HERE})": p for f, p in zip(PHASE_FUNCS, PHASES, strict=True)}
    out = {p: Shares() for p in (*PHASES, OUTSIDE)}
    known: dict[str, str] = {}
    for line in lines:
        stack, _, count_text = line.rstrip("\n").rpartition(" ")
        if not count_text.isdigit():
            continue
        count = int(count_text)
        frames = stack.split(";") if stack else ["(no Python frame)"]
        phase = next((markers[f] for f in frames if f in markers), None)
        if phase is None:  # another thread's: only the run starts threads
            phase = "run" if frames[0].endswith("threading.py)") else OUTSIDE
        shares = out[phase]
        if BLOCKING.fullmatch(frames[-1]):
            shares.waited += count
            continue
        mods = []
        for frame in frames:
            if frame not in known:
                m = FRAME.match(frame)
                known[frame] = cut(module_of_file(m.group("file")) if m else frame, depth)
            mods.append(known[frame])
        shares.total += count
        shares.own[mods[-1]] += count
        for mod in set(mods):
            shares.inclusive[mod] += count
    return out


# ------------------------------------------------------------------ the two tools


def with_cprofile(ns: argparse.Namespace) -> tuple[dict[str, float], dict[str, Shares], Any]:
    """Each phase profiled in this thread and in every thread it starts (a virtual pool's
    loop runs in one), each thread by a profiler of its own (cProfile follows one)."""
    profiles: dict[str, list[cProfile.Profile]] = {p: [] for p in PHASES}

    @contextmanager
    def around(phase: str) -> Iterator[None]:
        found = profiles[phase]

        def in_new_thread(*_event: object) -> None:  # its first event: profile it from here
            prof = cProfile.Profile()
            found.append(prof)
            prof.enable()

        here = cProfile.Profile()
        found.append(here)
        threading.setprofile(in_new_thread)
        here.enable()
        try:
            yield
        finally:
            here.disable()
            threading.setprofile(None)  # type: ignore[arg-type]

    wall, summary = run_phases(ns.machines, ns.jobs, ns.seed, around)
    shares = {p: from_cprofile(pstats.Stats(*profiles[p]), ns.depth) for p in PHASES}
    return wall, shares, summary


def with_py_spy(
    ns: argparse.Namespace, py_spy: str
) -> tuple[dict[str, float], dict[str, Shares], Any]:
    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "stacks.txt"
        argv = [
            py_spy,
            "record",
            "--format",
            "raw",
            "--full-filenames",
            "--nolineno",
            "--rate",
            str(ns.rate),
            "--output",
            str(raw),
            "--",
            sys.executable,
            str(HERE),
            "--child",
            "--machines",
            str(ns.machines),
            "--jobs",
            str(ns.jobs),
            "--seed",
            str(ns.seed),
        ]
        proc = subprocess.run(argv, capture_output=True, text=True)
        said = [ln for ln in proc.stdout.splitlines() if ln.startswith(CHILD_TIMES)]
        if proc.returncode != 0 or not said or not raw.is_file():
            last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            raise RuntimeError(f"py-spy failed (exit {proc.returncode}): {last}")
        child = json.loads(said[-1].removeprefix(CHILD_TIMES))
        with raw.open() as f:
            shares = from_collapsed(f, ns.depth)
    return child["wall"], shares, child["summary"]


# ------------------------------------------------------------------ output


def print_table(title: str, shares: Shares, top: int, key: str) -> None:
    print(f"{title}: top {top} by {key}")
    print(f"  {'inclusive':>9} {'self':>6}  module")
    for mod, inc, own in shares.rows(top, key):
        print(f"  {inc:8.1f}% {own:5.1f}%  {mod}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--machines", type=int, default=500, help="machines of 8 one-cpu slots")
    ap.add_argument("--jobs", type=int, default=20_000, help="jobs submitted at 0")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--top", type=int, default=20, help="modules shown for the run")
    ap.add_argument("--startup-top", type=int, default=8, help="modules shown per start-up phase")
    ap.add_argument("--depth", type=int, default=0, help="cut module names to N parts")
    ap.add_argument("--tool", choices=("auto", "py-spy", "cprofile"), default="auto")
    ap.add_argument("--rate", type=int, default=250, help="py-spy: samples a second")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ns = ap.parse_args()

    if ns.child:  # under py-spy: run the phases, say how long each took
        wall, summary = run_phases(ns.machines, ns.jobs, ns.seed)
        kept = {k: summary[k] for k in ("jobs", "pool_seconds")}
        print(CHILD_TIMES + json.dumps({"wall": wall, "summary": kept}))
        return 0

    py_spy = shutil.which("py-spy") or shutil.which("py-spy", path=os.path.dirname(sys.executable))
    if ns.tool == "py-spy" and py_spy is None:
        sys.exit("py-spy is not on PATH (pip install py-spy), or run with --tool cprofile")
    use_py_spy = py_spy is not None and ns.tool != "cprofile"
    header = (
        f"profile of workload (a): {ns.machines} machines of 8 one-cpu slots, {ns.jobs} jobs, "
        f"seed {ns.seed}"
    )
    result = None
    if use_py_spy:
        assert py_spy is not None
        print(f"{header}; py-spy at {ns.rate} samples a second")
        try:
            result = with_py_spy(ns, py_spy)
        except RuntimeError as exc:  # no ptrace here, say: cProfile always works
            if ns.tool == "py-spy":
                sys.exit(str(exc))
            print(f"{exc}; profiling with cProfile instead")
            use_py_spy = False
    else:
        print(f"{header}; cProfile")
    if result is None:
        result = with_cprofile(ns)
    wall, shares, summary = result
    done = summary["jobs"].get("Completed", 0)
    print(
        f"wall seconds under the profiler: imports {wall['imports']:.2f}, spec parsing "
        f"{wall['spec parsing']:.2f}, run {wall['run']:.1f} "
        f"({done} jobs completed in {summary['pool_seconds']:.0f} pool seconds)"
    )

    def amount(x: float) -> str:
        return f"{x:.0f} samples" if use_py_spy else f"{x:.1f} profiled seconds"

    for phase in PHASES:
        s = shares[phase]
        top = ns.top if phase == "run" else ns.startup_top
        print()
        print_table(f"{phase} ({amount(s.total)})", s, top, "self")
        if phase == "run":
            print()
            print_table(f"{phase} ({amount(s.total)})", s, top, "inclusive")
    waited = sum(shares[p].waited for p in PHASES)
    if waited:
        print(f"\nblocked on a lock, select or sleep, not counted above: {amount(waited)}")
    if use_py_spy and shares[OUTSIDE].total:
        print(f"\n{OUTSIDE}: {shares[OUTSIDE].total:.0f} samples, in no phase above")
    return 0


if __name__ == "__main__":
    sys.exit(main())
