"""Run by tests/live/test_ray_cluster.py in a process of its own (a Ray driver joins one
cluster only): a 3-node Ray cluster on this machine (ray.cluster_utils.Cluster), a pool
spread over it, and a worker node removed mid-run; then the examples by the CLI. Prints
one JSON line of findings (a sweep over a cluster: test_ray_start_two_nodes.py)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from pathlib import Path

from ray.cluster_utils import Cluster

from mockpool import Pool
from mockpool.auth import make_secret, write_token
from mockpool.pool.check import check, check_dir
from mockpool.pool.client import PoolError
from mockpool.pool.spec import parse_spec

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

SPEC = """
[pool]
time_scale = 40
host = "routable"
secret_file = "{secret}"
restarts = 2
metrics_port = {metrics_port}

[placement]
central = "head"

[config]
NEGOTIATOR_INTERVAL = 20
UPDATE_INTERVAL = 30
SCHEDD_INTERVAL = 30
CLASSAD_LIFETIME = 90
CONSUMPTION_POLICY = true

[[startds]]
count = 6
machines_per_actor = 1
config = "NUM_CPUS = 2"

[[schedds]]
count = 1

[[submit]]
at = 0
owner = "alice"
description = '''
executable = /bin/sleep
arguments = 300
job_lease_duration = 120
queue 10
'''
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("", 0))
        return int(s.getsockname()[1])


def finished(pool: Pool) -> bool:
    """All 10 jobs in history (False while a schedd is coming back on another node)."""
    try:
        return len(pool.jobs(history=True)) == 10
    except PoolError:
        return False


def main(folder: str) -> int:
    secret = Path(folder) / "secret"
    write_token(secret, make_secret())
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    workers = [cluster.add_node(num_cpus=1) for _ in range(2)]
    cluster.wait_for_nodes()
    out: dict[str, object] = {}
    try:
        spec = parse_spec(SPEC.format(secret=secret, metrics_port=_free_port()), "<cluster>")
        with Pool(spec, address=cluster.address) as pool:
            # served on the node's own address, as the daemons are (host = "routable")
            with urllib.request.urlopen(pool.metrics_url, timeout=60) as reply:
                out["metrics_served"] = b"mockpool_" in reply.read()
            out["metrics_url"] = pool.metrics_url
            status = pool.status()
            nodes = {st["identity"]: st["node"] for st in status}
            out["nodes"] = len(set(nodes.values()))
            out["central_on_head"] = nodes["negotiator"] == cluster.head_node.node_id
            assert pool.wait(lambda: len(pool.jobs("JobStatus == 2")) == 10, timeout=180)
            # the worker node with the most startd actors goes away
            per_node = Counter(n for ident, n in nodes.items() if ident.startswith("startd/"))
            victim = max(workers, key=lambda w: per_node.get(w.node_id, 0))
            out["startds_lost"] = per_node.get(victim.node_id, 0)
            pool.drain()  # what the daemons logged so far (their logs would survive them)
            cluster.remove_node(victim)
            removed_at = pool.now
            done = pool.wait(lambda: finished(pool), timeout=300)
            out["completed"] = done
            events = pool.events
            queue, history = pool.jobs(), pool.jobs(history=True)
            report = check(list(enumerate(events, 1)), queue, history, pool.slots())
            out["violations"] = [str(v) for v in report.violations]
            out["died"] = sorted(e["actor"] for e in events if e["kind"] == "daemon_died")
            out["requeued"] = sum(
                1 for e in events if e["kind"] in ("reconnect_failed", "claim_lost")
            )
            out["removed_at"] = removed_at
            out["jobs"] = len(queue) + len(history)
        out.update(_examples_on(cluster.address, Path(folder)))
    finally:
        cluster.shutdown()
    print(json.dumps(out))
    return 0


def _cli(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, MOCKPOOL_HOME=str(home))
    return subprocess.run(
        [sys.executable, "-m", "mockpool.cli.main", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def _examples_on(address: str, folder: Path) -> dict[str, object]:
    """The mixed example, run by `mockpool run --address` and checked; then the pslot
    example on four startd actors held up by `mockpool up --address` (startds packed) and
    read with the tools from this node."""
    found: dict[str, object] = {}
    out = folder / "mixed"
    run = _cli(
        "run",
        str(EXAMPLES / "mixed.toml"),
        "--address",
        address,
        "--out",
        str(out),
        "--duration",
        "400",  # some 200 jobs have completed by then
        home=folder / "home",
    )
    found["run_rc"] = run.returncode
    found["run_err"] = run.stderr[-1500:] if run.returncode else ""
    if run.returncode == 0:
        report = check_dir(out)
        found["mixed_violations"] = [str(v) for v in report.violations]
        found["mixed_completed"] = json.loads((out / "summary.json").read_text())["jobs"].get(
            "Completed", 0
        )
    packed = folder / "packed.toml"
    text = (
        (EXAMPLES / "pslot.toml")
        .read_text()
        .replace("count = 1\n", "count = 4\nmachines_per_actor = 1\n", 1)
    )
    packed.write_text(text + '\n[placement]\nstartds = "pack"\n')
    home = folder / "home"
    up = _cli("up", str(packed), "--address", address, home=home)
    found["up_rc"] = up.returncode
    found["up_err"] = up.stderr[-1500:] if up.returncode else ""
    if up.returncode == 0:
        try:
            found["status_has_slots"] = "exec0004" in _cli("status", home=home).stdout
            found["q_has_jobs"] = "Total for query" in _cli("q", home=home).stdout
            daemons = _cli("daemons", home=home).stdout
            found["daemons_up"] = sum(1 for line in daemons.splitlines()[1:] if " up " in line)
        finally:
            found["down_rc"] = _cli("down", home=home).returncode
    return found


if __name__ == "__main__":
    time.sleep(0)
    sys.exit(main(sys.argv[1]))
