"""The ``htcondor`` command of HTCondor's wheel (``htcondor_cli``) against a live pool over
CEDAR, found through the pool's client config alone: ``htcondor job status`` for an idle,
a held and a running job, ``htcondor ap status`` (the schedd's health from its
RecentDaemonCoreDutyCycle) and ``htcondor cm status`` (the collector's and negotiator's)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from builders.live import QuietPool, condor_config_for

# the wheel installs the package; its `htcondor` script is this entry point
HTCONDOR = "import sys; from htcondor_cli.cli import main; sys.exit(main())"


@pytest.fixture(scope="module")
def pool(quiet_pool: QuietPool) -> QuietPool:
    """The quiet pool (alice's idle 1.0-1.2, bob's held 2.0) with carol's 3.0 running."""
    p = quiet_pool.pool
    p.submit(
        "executable = /bin/sleep\narguments = 100000\nrequest_memory = 128\nqueue", owner="carol"
    )

    def running() -> bool:
        return any(j.get_value("JobStatus") == 2 for j in p.jobs(constraint="ClusterId == 3"))

    assert p.wait(running), "carol's job never started"
    return quiet_pool


def htcondor(config: Path, *args: str) -> str:
    """``htcondor ARGS`` with CONDOR_CONFIG ``config``: what it printed (its log lines go
    to standard error). Fails unless it exits 0."""
    env = {**os.environ, "CONDOR_CONFIG": str(config)}
    proc = subprocess.run(
        [sys.executable, "-c", HTCONDOR, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, f"htcondor {' '.join(args)}: {proc.stderr}"
    return proc.stdout + proc.stderr


def test_job_status_of_an_idle_a_held_and_a_running_job(pool: QuietPool, tmp_path: Path) -> None:
    config = condor_config_for(pool.pool, tmp_path)
    idle = htcondor(config, "job", "status", "1.0")
    assert "Job 1.0 is currently idle." in idle
    assert "It requested 128.000 MB of memory." in idle  # condor_submit's default
    held = htcondor(config, "job", "status", "2")
    assert "Job 2 is currently held." in held
    assert 'It was held because "abuse tests".' in held
    assert "It has been held 1 time." in held
    running = htcondor(config, "job", "status", "3.0")
    assert "Job 3.0 is currently running." in running
    assert re.search(r"It started running .* ago\.", running)


def test_ap_and_cm_status_name_the_pools_daemons_and_their_health(
    pool: QuietPool, tmp_path: Path
) -> None:
    config = condor_config_for(pool.pool, tmp_path)
    ap = htcondor(config, "ap", "status").splitlines()
    assert re.fullmatch(r"Access Point +Health +DutyCycle", ap[0].strip())
    # the schedd's Machine, its health from RecentDaemonCoreDutyCycle, the duty cycle
    row = re.fullmatch(r"(\S+) +(Good|Decent|Poor|Bad) +(\d+\.?\d*(?:e[-+]?\d+)?)%", ap[1].strip())
    assert row is not None, ap
    assert row[1] == pool.schedd_name.rpartition("@")[2]
    assert 0.0 <= float(row[3]) <= 100.0
    cm = htcondor(config, "cm", "status").splitlines()
    assert re.fullmatch(r"Central Manager +Health", cm[0].strip())
    # the collector and the negotiator, one host (the central manager's actor)
    assert re.fullmatch(r"127\.0\.0\.1 +(Good|Decent|Poor|Bad)", cm[1].strip()), cm
