"""Fixtures for live tests: one local Ray instance for the whole session."""

from __future__ import annotations

import contextlib
import ipaddress
import os
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

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
    one Ray instance for the session, as without xdist, while the other worker runs the
    tests that need no Ray. The live tests go first (in their own order): the longest
    share starts at once instead of after a worker's turn at the others."""
    here = Path(__file__).resolve().parent
    live = [item for item in items if here in Path(str(item.path)).resolve().parents]
    for item in live:
        item.add_marker(pytest.mark.xdist_group("live"))
    chosen = set(map(id, live))
    items[:] = live + [item for item in items if id(item) not in chosen]


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


# ---------------------------------------------------------------------------- hostile clients
# Builders for tests that attack a live pool over its wire and CLI (test_abuse.py): raw
# bytes to any method with any token, a queue dump to compare, a liveness probe, and the
# CLI run in-process against the pool. They import grpc and mockpool lazily: this file
# must set GRPC_ENABLE_FORK_SUPPORT before grpc is first imported.

# One small machine, one schedd; NEGOTIATOR_INTERVAL short so cycles run during the tests.
QUIET_POOL_SPEC = """
[pool]
time_scale = 20

[config]
NEGOTIATOR_INTERVAL = 20

[[startds]]
count = 1
config = "NUM_CPUS = 2\\nMEMORY = 2048"

[[schedds]]
count = 1
"""

# Jobs that stay as they are: they match no slot, and one cluster is held.
QUIET_JOBS = (
    ("alice", "executable = /bin/sleep\narguments = 60\nrequirements = false\nqueue 3"),
    ("bob", "executable = /bin/sleep\narguments = 60\nrequirements = false\nqueue 1"),
)

# Each service's full method names and the address key of the actor that serves it.
SERVICE_HOSTS = {
    "mockpool.v1.Collector": "collector",
    "mockpool.v1.Negotiator": "collector",
    "mockpool.v1.Schedd": "schedd",
    "mockpool.v1.Startd": "startd",
}

# What every negotiation cycle writes on a job it could not match (as HTCondor's schedd
# does): the pool's own bookkeeping, not something an attack changed.
CYCLE_ATTRIBUTES = frozenset({"lastrejmatchreason", "lastrejmatchtime"})

# A liveness probe's deadline (real seconds): a daemon busy past it is not answering.
PROBE_DEADLINE = 1.0


@dataclass
class WireReply:
    code: Any  # grpc.StatusCode
    details: str
    reply: bytes


@dataclass
class QuietPool:
    """A running pool whose queue does not change by itself, with its endpoints."""

    pool: Any  # mockpool.Pool
    secret: str
    addresses: dict[str, str]  # "collector", "schedd", "startd" -> host:port
    schedd_name: str
    home: Path  # a folder like `mockpool up`'s (pool.json, tokens/) for the CLI
    _channels: dict[str, Any] = field(default_factory=dict)

    def token(self, role: str = "admin", identity: str | None = None) -> str:
        """A token of ``role``; a submit token names alice (the quiet jobs' main owner)
        unless ``identity`` says otherwise."""
        from mockpool import auth

        if identity is None:
            identity = "alice" if role == "submit" else ""
        return auth.make_token(self.secret, role, identity)

    def _channel(self, address: str) -> Any:
        import grpc

        from mockpool import rpc

        if address not in self._channels:
            size = rpc.MAX_MESSAGE_BYTES
            self._channels[address] = grpc.insecure_channel(
                address,
                options=[
                    ("grpc.max_receive_message_length", size),
                    ("grpc.max_send_message_length", size),
                ],
            )
        return self._channels[address]

    def call(
        self,
        method: str,
        raw: bytes,
        *,
        token: str | None = None,
        role: str = "admin",
        timeout: float = 30.0,
        metadata: Any = None,
    ) -> WireReply:
        """Send ``raw`` bytes to ``method`` (``/mockpool.v1.Schedd/Submit``) with a token of
        ``role`` (or ``token``; ``token=""`` sends none) and return how it was answered."""
        import grpc

        from mockpool import auth

        service = method.split("/")[1]
        address = self.addresses[SERVICE_HOSTS[service]]
        if metadata is None:
            token = self.token(role) if token is None else token
            metadata = auth.bearer_metadata(token) if token else ()
        stub = self._channel(address).unary_unary(method)
        try:
            reply = stub(raw, timeout=timeout, metadata=metadata)
        except grpc.RpcError as e:
            return WireReply(e.code(), e.details() or "", b"")
        return WireReply(grpc.StatusCode.OK, "", reply)

    def queue_dump(self) -> list[str]:
        """Every job ad in the schedd's queue, as sorted ClassAd text (less the attributes
        negotiation cycles rewrite, CYCLE_ATTRIBUTES)."""
        from mockpool.classad.unparse import unparse_ad
        from mockpool.v1 import schedd_pb2
        from mockpool.wire import ads_from_pb

        got = self.call(
            "/mockpool.v1.Schedd/QueryJobs",
            schedd_pb2.JobQueryRequest(schedd_name=self.schedd_name).SerializeToString(),
            role="read",
            timeout=10.0,
        )
        assert got.code.name == "OK", f"the queue could not be read: {got.code} {got.details}"
        reply = schedd_pb2.JobQueryReply.FromString(got.reply)
        for job in reply.jobs:
            kept = [a for a in job.attributes if a.name.lower() not in CYCLE_ATTRIBUTES]
            del job.attributes[:]
            job.attributes.extend(kept)
        return sorted(unparse_ad(ad) for ad in ads_from_pb(reply.jobs))

    def assert_alive(self) -> None:
        """`q` and `status` each answer within PROBE_DEADLINE (one call each, no retry)."""
        from mockpool.v1 import collector_pb2, schedd_pb2

        q = self.call(
            "/mockpool.v1.Schedd/QueryJobs",
            schedd_pb2.JobQueryRequest(schedd_name=self.schedd_name).SerializeToString(),
            role="read",
            timeout=PROBE_DEADLINE,
        )
        assert q.code.name == "OK", f"q did not answer: {q.code} {q.details}"
        status = self.call(
            "/mockpool.v1.Collector/Query",
            collector_pb2.QueryRequest(ad_type="Machine").SerializeToString(),
            role="read",
            timeout=PROBE_DEADLINE,
        )
        assert status.code.name == "OK", f"status did not answer: {status.code} {status.details}"

    def cli(self, *args: str) -> tuple[int, str, str]:
        """Run ``mockpool ARGS --pool HOME`` in this process: (exit status, stdout, stderr)."""
        return run_cli(self.home, *args)

    def close(self) -> None:
        for ch in self._channels.values():
            ch.close()
        self._channels.clear()


def run_cli(home: Path, *args: str) -> tuple[int, str, str]:
    """Run ``mockpool ARGS --pool HOME`` in this process: (exit status, stdout, stderr)."""
    import io

    from mockpool.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main([*args, "--pool", str(home)])
        except SystemExit as e:  # the tools exit with a message on refusal
            rc = e.code if isinstance(e.code, int) else 1
            if not isinstance(e.code, int) and e.code is not None:
                print(e.code, file=sys.stderr)
    return rc, out.getvalue(), err.getvalue()


def run_htcondor(code: str, condor_config: Path, *args: str, timeout: float = 120.0) -> Any:
    """Run ``code`` with HTCondor's own ``htcondor2`` bindings in a child process whose
    ``CONDOR_CONFIG`` is ``condor_config`` (a child: the bindings keep process-wide
    security sessions and config); ``code`` sets ``result``, returned through JSON.
    ``args`` are the child's ``sys.argv[1:]``."""
    import json
    import subprocess

    script = (
        f"import htcondor2, classad2, json, sys\n{code}\nprint(json.dumps(result, default=str))\n"
    )
    env = {**os.environ, "CONDOR_CONFIG": str(condor_config)}
    proc = subprocess.run(
        [sys.executable, "-c", script, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, f"htcondor2 client failed:\n{proc.stderr[-3000:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


def condor_config_for(pool: Any, folder: Path, tokens: dict[str, str] | None = None) -> Path:
    """``pool``'s client config in ``folder`` (``pool.write_condor_config``), with each of
    ``tokens`` (file name -> token) in its ``tokens.d``; with tokens, the client
    authenticates by IDTOKENS only (not as the user running the tests, by FS)."""
    from mockpool.auth import write_token

    path = pool.write_condor_config(folder)
    for name, token in (tokens or {}).items():
        write_token(folder / "tokens.d" / name, token)
    if tokens:
        with path.open("a") as f:
            f.write("SEC_CLIENT_AUTHENTICATION_METHODS = IDTOKENS\n")
    return path


def point_cli_at(pool: Any, home: Path) -> Any:
    """Leave in ``home`` what `mockpool up` leaves for the tools (pool.json, the tokens:
    the submit one is alice's), pointing at ``pool``; its schedd's ad."""
    import json

    from mockpool.auth import Role, make_token, write_token
    from mockpool.ownerfiles import private_dir
    from mockpool.pool.serve import token_path

    (schedd_ad,) = pool.ads("Scheduler")
    private_dir(home / "tokens")
    write_token(token_path(home, Role.ADMIN), pool.token)
    write_token(token_path(home, Role.READ), make_token(pool.secret, Role.READ))
    write_token(token_path(home, Role.SUBMIT), make_token(pool.secret, Role.SUBMIT, "alice"))
    info = {
        "pid": os.getpid(),
        "collector": pool.collector_address,
        "schedds": [str(schedd_ad.get_value("Name"))],
        "time_scale": pool.spec.time_scale,
        "epoch_wall": pool.epoch_wall,
        "log_base_wall": pool.log_base_wall,
    }
    (home / "pool.json").write_text(json.dumps(info))
    return schedd_ad


def _quiet_setup(pool: Any, home: Path) -> QuietPool:
    """Queue QUIET_JOBS (holding bob's) and point a pool.json folder at ``pool``."""
    from mockpool.claimid import from_sinful

    for owner, description in QUIET_JOBS:
        pool.submit(description, owner=owner)
    (held,) = pool.act("hold", ["2.0"], reason="abuse tests")
    assert held.ok, held.error
    slot = pool.slots()[0]
    schedd_ad = point_cli_at(pool, home)
    schedd_name = str(schedd_ad.get_value("Name"))
    return QuietPool(
        pool=pool,
        secret=pool.secret,  # to mint tokens of every role, as a daemon would
        addresses={
            "collector": pool.collector_address,
            "schedd": from_sinful(str(schedd_ad.get_value("MyAddress"))),
            "startd": from_sinful(str(slot.get_value("MyAddress"))),
        },
        schedd_name=schedd_name,
        home=home,
    )


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
