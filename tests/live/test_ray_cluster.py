"""A pool on a 3-node Ray cluster on this machine (in a process of its own: see
ray_cluster_run.py): its actors land on different nodes, the central manager on the head
as the spec asks, and a worker node removed mid-run behaves as crashed daemons: their
claims are given up, the jobs run elsewhere, and none is lost or run twice."""

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
    assert found["startds_lost"] >= 1
    assert found["completed"] and found["jobs"] == 10
    assert found["violations"] == []
    assert found["died"] and found["requeued"] >= 1
