"""A pool's CEDAR listeners as HTCondor's own clients meet them: found through the
condor_config the pool writes, silent while their daemon is paused, back on the same
address after the central manager restarts.

The clients run in subprocesses: ``htcondor2`` keeps one configuration and one session
cache per process, and each test here wants its own.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.live

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "examples" / "htcondor_tool.py"
SPEC = """
[pool]
time_scale = 60

[[startds]]
name = "exec{:04d}"
count = 2
config = '''
NUM_CPUS = 2
MEMORY = 4096
'''

[[schedds]]
count = 1
"""
QUERY = """
import htcondor2
ads = htcondor2.Schedd().query(projection=["ClusterId", "ProcId"])
print(len(ads), "jobs")
"""


@pytest.fixture(scope="module")
def pool(ray_session: None) -> Iterator[Any]:
    from mockpool import Pool

    with Pool(SPEC) as p:
        # +MockDuration: a job attribute (without the + it is only a submit variable, the
        # jobs have no duration and every activation is refused)
        p.submit("executable = /bin/sleep\n+MockDuration = 6000\nqueue 3", owner="alice")
        yield p


def _client_env(pool: Any, folder: Path) -> dict[str, str]:
    config = pool.write_condor_config(folder)
    return {**os.environ, "CONDOR_CONFIG": str(config)}


def test_htcondor2_finds_every_daemon_through_the_pools_condor_config(
    pool: Any, tmp_path: Path
) -> None:
    assert pool.wait(lambda: len(pool.all_jobs("JobStatus == 2")) == 3, timeout=60)
    env = _client_env(pool, tmp_path)
    text = (tmp_path / "condor_config").read_text()
    assert f"COLLECTOR_HOST = {pool.cedar_address()}\n" in text
    run = subprocess.run(
        [sys.executable, str(TOOL)], env=env, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].startswith("collector: 2 machines, "), lines
    assert lines[1].startswith("schedd: 3 jobs ("), lines
    # (the negotiator's priorities, with real content: test_cedar_collector_live.py)


def test_every_daemon_ad_leads_with_its_cedar_address(pool: Any) -> None:
    from mockpool.claimid import cedar_address, from_sinful

    (schedd,) = pool.ads("Scheduler")
    (collector,) = pool.ads("Collector")
    (negotiator,) = pool.ads("Negotiator")
    assert cedar_address(str(schedd.get_value("MyAddress"))) == pool.cedar_address("schedd1")
    assert cedar_address(str(collector.get_value("MyAddress"))) == pool.cedar_address()
    assert cedar_address(str(negotiator.get_value("MyAddress"))) == pool.cedar_address()
    # the pool's own daemons still reach each other over gRPC
    assert from_sinful(str(collector.get_value("MyAddress"))) == pool.collector_address


def _schedd_commands(pool: Any) -> int:
    for st in pool.status():
        if "schedd1" in st.get("cedar", {}):
            return int(st["cedar"]["schedd1"]["commands"])
    raise AssertionError("no schedd1 listener in the pool's status")


def test_a_paused_schedd_answers_htcondor_clients_only_when_it_resumes(
    pool: Any, tmp_path: Path
) -> None:
    env = _client_env(pool, tmp_path)
    before = _schedd_commands(pool)
    paused_at = pool.now
    pool.fault("pause", "schedd1", duration=900)  # 15 real seconds at 60x
    proc = subprocess.Popen(
        [sys.executable, "-c", QUERY], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        # the query reached the schedd's listener: its command waits at the pause
        assert pool.wait(lambda: _schedd_commands(pool) > before, timeout=60)
        assert proc.poll() is None
        out, err = proc.communicate(timeout=60)
        answered_at = pool.now
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert answered_at >= paused_at + 900  # when the pause ended, not before
    assert out.decode().strip() == "3 jobs"


def test_the_collector_comes_back_on_its_cedar_address_after_a_restart(
    pool: Any, tmp_path: Path
) -> None:
    address = pool.cedar_address()
    env = _client_env(pool, tmp_path)
    pool.restart("central")
    assert pool.cedar_address() == address
    script = (
        "import htcondor2\n"
        "ads = htcondor2.Collector().query(htcondor2.AdType.Schedd, projection=['Name'])\n"
        "print(sorted(ad['Name'] for ad in ads))\n"
    )

    def schedd_listed() -> bool:
        run = subprocess.run(
            [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60
        )
        return run.returncode == 0 and run.stdout.strip() == "['schedd1']"

    # the old condor_config still reaches it, once the schedd has advertised again
    assert pool.wait(schedd_listed, timeout=60, poll=0.5)
