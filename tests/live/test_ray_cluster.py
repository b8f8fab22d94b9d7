"""A pool on a 3-node Ray cluster on this machine (in a process of its own: see
ray_cluster_run.py): its actors land on different nodes, the central manager on the head
as the spec asks, and a worker node removed mid-run behaves as crashed daemons: their
claims are given up, the jobs run elsewhere, and none is lost or run twice. Then the
mixed example runs there by `mockpool run --address` and passes the invariant checker,
and `mockpool up --address` holds it (startds packed) for `status`, `q` and `daemons`.
(A sweep over a cluster: test_ray_start_two_nodes.py.)"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.live, pytest.mark.slow]


def test_a_pool_spreads_over_a_ray_cluster_and_survives_losing_a_node(tmp_path: Path) -> None:
    script = Path(__file__).with_name("ray_cluster_run.py")
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=580,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["nodes"] >= 2 and found["central_on_head"]
    assert found["metrics_served"], found["metrics_url"]  # on the node's address
    assert found["startds_lost"] >= 1
    assert found["completed"] and found["jobs"] == 10
    assert found["violations"] == []
    assert found["died"] and found["requeued"] >= 1
    # the mixed example on the cluster, by `mockpool run --address`: the checker passes
    assert found["run_rc"] == 0, found["run_err"]
    assert found["mixed_violations"] == [] and found["mixed_completed"] > 0
    # `mockpool up --address` (startds packed by a placement group), read from this node
    assert found["up_rc"] == 0, found["up_err"]
    assert found["status_has_slots"] and found["q_has_jobs"]
    assert found["daemons_up"] >= 4 and found["down_rc"] == 0
