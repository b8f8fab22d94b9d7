"""Builders for tests that attack a live pool over its wire and its CLI (test_abuse.py and
the CEDAR and CLI live tests): raw bytes to any method with any token, a queue dump to
compare, a liveness probe, the CLI run in-process, HTCondor's htcondor2 in a child process.
They import grpc and mockpool lazily: tests/live/conftest.py must set
GRPC_ENABLE_FORK_SUPPORT before grpc is first imported."""

from __future__ import annotations

import contextlib
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
        from mockpool.classad.tree import unparse_ad
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
