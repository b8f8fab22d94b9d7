"""A Ray cluster made by hand, as deploy/README.md tells: two `ray start` on this machine,
each with resources of its own, Ray's token auth on (RAY_AUTH_MODE=token and the token
file on both), and `mockpool sweep --address` running its points as Ray tasks on both
nodes. Each `ray start --block` stays in the foreground and stops its node when ended."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = [pytest.mark.live, pytest.mark.slow]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
NODES_ALIVE = """
import ray, sys
ray.init(address=sys.argv[1], log_to_driver=False, configure_logging=False)
print(sorted(n["NodeID"] for n in ray.nodes() if n["Alive"]))
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)  # `ray start --block` then stops its node
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture
def two_nodes(tmp_path: Path) -> Iterator[tuple[str, dict[str, str]]]:
    """(GCS address, environment) of a head and a worker node started by `ray start`."""
    token = tmp_path / "ray_token"
    token.write_text(secrets.token_hex(32))
    token.chmod(0o600)
    env = dict(
        os.environ,
        RAY_AUTH_MODE="token",
        RAY_AUTH_TOKEN_PATH=str(token),
        RAY_USAGE_STATS_ENABLED="0",
    )
    port = _free_port()
    address = f"127.0.0.1:{port}"
    ray = str(Path(sys.executable).with_name("ray"))
    # the nodes take the machine's outward address, as on a real cluster (loopback only
    # would turn multi-node off); Ray's token guards every call
    common = ["--num-cpus", "1", "--block"]
    # a short folder: Ray's socket paths must fit in 107 characters
    temp = tempfile.mkdtemp(prefix="mockpool-ray-")
    head_args = ["--head", "--port", str(port), "--include-dashboard", "false", "--temp-dir", temp]
    head = subprocess.Popen(
        [ray, "start", *head_args, "--resources", '{"head_node": 1}', *common],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    worker: subprocess.Popen[str] | None = None
    try:
        worker = subprocess.Popen(
            [ray, "start", "--address", address, "--resources", '{"worker_node": 1}', *common],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        deadline = time.monotonic() + 120
        alive: list[str] = []
        while time.monotonic() < deadline:
            probe = subprocess.run(
                [sys.executable, "-c", NODES_ALIVE, address],
                capture_output=True,
                text=True,
                env=env,
                timeout=60,
            )
            if probe.returncode == 0 and probe.stdout.strip():
                alive = json.loads(probe.stdout.strip().splitlines()[-1].replace("'", '"'))
                if len(alive) == 2:
                    break
            time.sleep(1)
        assert len(alive) == 2, f"the worker node did not join: {alive}"
        yield address, env
    finally:
        if worker is not None:
            _stop(worker)
        _stop(head)
        shutil.rmtree(temp, ignore_errors=True)


def test_a_sweep_runs_its_points_on_both_nodes_of_a_hand_made_cluster(
    two_nodes: tuple[str, dict[str, str]], tmp_path: Path
) -> None:
    address, env = two_nodes
    out = tmp_path / "sweep"
    argv = ["sweep", str(EXAMPLES / "pslot.toml"), "--set", "NEGOTIATOR_INTERVAL=30,60"]
    argv += ["--seeds", "2", "--address", address, "--out", str(out)]
    done = subprocess.run(
        [sys.executable, "-m", "mockpool.cli.main", *argv],
        capture_output=True,
        text=True,
        env=dict(env, MOCKPOOL_HOME=str(tmp_path / "home")),
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    points = sorted((out / "points").iterdir())
    assert len(points) == 4
    ran_on = {json.loads((p / "node.json").read_text())["node_id"] for p in points}
    assert len(ran_on) == 2, f"every point ran on one node: {ran_on}"
    table = json.loads((out / "sweep.json").read_text())["table"]
    assert {row["NEGOTIATOR_INTERVAL"] for row in table} == {"30", "60"}
