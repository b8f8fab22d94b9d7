"""Fixtures for live tests: one local Ray instance for the whole session."""

from __future__ import annotations

import contextlib
import ipaddress
import os
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from builders.live import QUIET_POOL_SPEC, QuietPool, _quiet_setup

if TYPE_CHECKING:  # imported late: grpc must not load before the line below runs
    from mockpool.pool.localray import LocalRay

# Must be set before grpc is first imported (grpc reads it at import). With gRPC's fork
# handlers on, a process that has used gRPC and then forks (ray.init spawning the raylet
# and GCS through subprocess with a preexec_fn) sees ~1% of children abort (SIGABRT)
# before exec; ray.init then times out waiting for a raylet that died unseen. We always
# exec after fork and never use a channel across fork, which is what disabling is for.
_GRPC_IMPORTED_TOO_EARLY = "grpc" in sys.modules and "GRPC_ENABLE_FORK_SUPPORT" not in os.environ
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "0")

RAY_NUM_CPUS = 2  # pinned: tests must not depend on the machine's core count


Listener = tuple[int, str, "ipaddress.IPv4Address | ipaddress.IPv6Address", int, bool]


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist (``-n 2 --dist loadgroup``) every live test goes to one worker:
    one Ray instance for the session, as without xdist, while the other worker runs all
    the tests that need no Ray (a group of their own: none waits behind the live ones,
    which take longest), at the lowest CPU priority (``tests/conftest.py``). The live
    tests go first (in their own order): the longest share starts at once. (The live
    tests that start pools of their own stay on this worker: run beside the session's
    live pools, their actors took those pools' CPU, and the tests that compare a live
    pool's timing with virtual time failed.)"""
    here = Path(__file__).resolve().parent
    live = [item for item in items if here in Path(str(item.path)).resolve().parents]
    for item in live:
        item.add_marker(pytest.mark.xdist_group("live"))
    chosen = set(map(id, live))
    others = [item for item in items if id(item) not in chosen]
    if live:  # (alone, the others are spread over both workers as usual)
        for item in others:
            item.add_marker(pytest.mark.xdist_group("no-ray"))
    items[:] = live + others


def _listening_sockets(pids: set[int]) -> list[Listener]:
    """(pid, command name, address, port, is loopback) of every TCP socket ``pids`` listen
    on, from /proc/net/tcp{,6} and each process' open files (no ss or psutil needed)."""
    listening: dict[str, tuple[ipaddress.IPv4Address | ipaddress.IPv6Address, int]] = {}
    for table in ("tcp", "tcp6"):
        try:
            lines = Path(f"/proc/net/{table}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] != "0A":  # TCP_LISTEN
                continue
            hex_ip, hex_port = fields[1].split(":")
            raw = bytes.fromhex(hex_ip)
            # the kernel prints each 32-bit word of the address in host (little-endian) order
            raw = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
            listening[fields[9]] = (ipaddress.ip_address(raw), int(hex_port, 16))
    found: list[Listener] = []
    for pid in pids:
        try:
            comm = Path(f"/proc/{pid}/comm").read_text().strip()
            fds = list(Path(f"/proc/{pid}/fd").iterdir())
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:[") and (inode := target[8:-1]) in listening:
                ip, port = listening[inode]
                mapped = getattr(ip, "ipv4_mapped", None)  # ::ffff:127.0.0.1 is loopback too
                loopback = ip.is_loopback or (mapped is not None and mapped.is_loopback)
                found.append((pid, comm, ip, port, loopback))
    return found


@pytest.fixture(scope="session")
def listeners() -> Callable[[set[int]], list[Listener]]:
    """``listeners(pids)``: the TCP sockets those processes listen on (Linux /proc)."""
    if not Path("/proc/net/tcp").exists():
        pytest.skip("needs Linux /proc")
    return _listening_sockets


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
def ray_session() -> Iterator[LocalRay]:
    """Start a local Ray (2 CPUs, loopback only, no dashboard, worker logs not forwarded)
    once per session.

    On teardown, shut Ray down and fail if any process Ray started is still alive.
    """
    pytest.importorskip("ray")
    from mockpool.pool.localray import start_local_ray, stop_local_ray

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
    # Loopback only, in an owner-only folder, as every local pool's Ray.
    local = start_local_ray(RAY_NUM_CPUS, log_to_driver=False)
    session_dir = local.session_dir
    try:
        yield local
    finally:
        stop_local_ray(local)
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
def mockpool_ray(ray_session: LocalRay) -> Iterator[None]:
    """The mockpool pytest plugin's Ray fixture, sharing this suite's one Ray session."""
    yield


@pytest.fixture(scope="module")
def quiet_pool(ray_session: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[QuietPool]:
    """A module's pool with a queue that stays put: three idle jobs that match nothing
    (alice) and one held job (bob); the CLI points at it through a pool.json folder."""
    from mockpool import Pool

    with Pool(QUIET_POOL_SPEC) as pool:
        quiet = _quiet_setup(pool, tmp_path_factory.mktemp("quiet-pool"))
        try:
            yield quiet
        finally:
            quiet.close()


@pytest.fixture
def disposable_pool(
    ray_session: None, tmp_path: Path
) -> Iterator[Callable[[], contextlib.AbstractContextManager[QuietPool]]]:
    """Makes a quiet pool for one attack that may hang or poison its daemons: on exit its
    actors are killed first, so a daemon stuck on the attack cannot hold up the stop."""
    import ray

    from mockpool import Pool

    @contextlib.contextmanager
    def make() -> Iterator[QuietPool]:
        pool = Pool(QUIET_POOL_SPEC).start()
        quiet = None
        try:
            quiet = _quiet_setup(pool, tmp_path)
            yield quiet
        finally:
            if quiet is not None:
                quiet.close()
            live = pool._live  # the pool's actors, to kill without waiting on them
            for actor in live.actors():
                ray.kill(actor.handle, no_restart=True)
            pool.stop()

    yield make
