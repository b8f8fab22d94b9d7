"""Fixtures for live tests: one local Ray instance for the whole session."""

from __future__ import annotations

import os
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

# Must be set before grpc is first imported (grpc reads it at import). With gRPC's fork
# handlers on, a process that has used gRPC and then forks (ray.init spawning the raylet
# and GCS through subprocess with a preexec_fn) sees ~1% of children abort (SIGABRT)
# before exec; ray.init then times out waiting for a raylet that died unseen. We always
# exec after fork and never use a channel across fork, which is what disabling is for.
_GRPC_IMPORTED_TOO_EARLY = "grpc" in sys.modules and "GRPC_ENABLE_FORK_SUPPORT" not in os.environ
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "0")

RAY_NUM_CPUS = 2  # pinned: tests must not depend on the machine's core count


def _proc_table() -> dict[int, tuple[int, str, str]]:
    """pid -> (ppid, command name, command line) for living (non-zombie) processes."""
    table: dict[int, tuple[int, str, str]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # exited while we looked
            continue
        # Format: "pid (comm) state ppid ..."; comm may contain spaces and parentheses.
        comm = stat[stat.index("(") + 1 : stat.rindex(")")]
        state, ppid = stat[stat.rindex(")") + 2 :].split()[:2]
        if state != "Z":
            table[int(entry.name)] = (int(ppid), comm, cmdline)
    return table


def _ray_processes(root: int, session_dir: str) -> dict[int, str]:
    """Descendants of ``root``, plus any process naming ``session_dir`` (orphans whose
    parent died are re-parented away from us and would escape a descendants-only scan)."""
    table = _proc_table()
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found: dict[int, str] = {}
    stack = [root]
    while stack:
        for child in children.get(stack.pop(), []):
            found[child] = table[child][1]
            stack.append(child)
    if session_dir:
        found.update({p: c for p, (_, c, cmd) in table.items() if session_dir in cmd})
    found.pop(os.getpid(), None)
    return found


@pytest.fixture(scope="session")
def ray_session() -> Iterator[None]:
    """Start a local Ray (2 CPUs, no dashboard, worker logs not forwarded) once per session.

    On teardown, shut Ray down and fail if any process Ray started is still alive.
    """
    ray = pytest.importorskip("ray")
    if _GRPC_IMPORTED_TOO_EARLY:
        warnings.warn(
            "grpc was imported before tests/live/conftest.py set GRPC_ENABLE_FORK_SUPPORT=0; "
            "ray.init may fail intermittently (set it in the environment or a root conftest)",
            stacklevel=1,
        )
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # no network calls from tests
    have_proc = Path("/proc/self/stat").exists()
    before = set(_ray_processes(os.getpid(), "")) if have_proc else set()
    # address="local": always a fresh instance of our own, never a cluster someone else
    # started with `ray start` (which ray.init() would otherwise join, and which
    # ray.shutdown() must not be the one to stop).
    context = ray.init(
        address="local", num_cpus=RAY_NUM_CPUS, include_dashboard=False, log_to_driver=False
    )
    session_dir = context.address_info.get("session_dir", "")
    try:
        yield
    finally:
        ray.shutdown()
    if not have_proc:
        return
    deadline = time.monotonic() + 10.0
    while True:
        leaked = {
            p: n for p, n in _ray_processes(os.getpid(), session_dir).items() if p not in before
        }
        if not leaked or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert not leaked, f"processes left running after ray.shutdown(): {leaked}"


@pytest.fixture(scope="session")
def mockpool_ray(ray_session: None) -> Iterator[None]:
    """The mockpool pytest plugin's Ray fixture, sharing this suite's one Ray session."""
    yield
