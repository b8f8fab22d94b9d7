"""Claim leases and the invariant checker on real Ray actors: a schedd killed under
running jobs loses its claims when their leases run out, and a busy run passes the checker."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mockpool import Pool
from mockpool.pool.check import INVARIANTS, check, check_dir
from mockpool.pool.spec import parse_spec

pytestmark = [pytest.mark.live, pytest.mark.slow]

WAIT = 180  # real seconds: the machine is shared, wait on conditions generously
LEASE = 60  # pool seconds; keepalives every min(ALIVE_INTERVAL 300, 60 / 3) = 20
INTERVAL = 20
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

# One machine with a 4-cpu partitionable slot, two long one-cpu jobs on dynamic slots.
SPEC = f"""
[pool]
time_scale = 20

[config]
NEGOTIATOR_INTERVAL = 20
UPDATE_INTERVAL = 30

[[startds]]
count = 1
config = "NUM_CPUS = 4\\nMEMORY = 4096"

[[schedds]]
count = 1

[[submit]]
at = 0
owner = "alice"
description = '''
executable = /bin/sleep
arguments = 100000
request_memory = 512
job_lease_duration = {LEASE}
queue 2
'''
"""


def _find(tree: object, key: str) -> int:
    """The sum of every ``key`` counter anywhere in an actor's status."""
    if isinstance(tree, dict):
        return sum(v if k == key and isinstance(v, int) else _find(v, key) for k, v in tree.items())
    return 0


def test_killed_schedd_loses_its_claims_when_the_leases_expire(ray_session: None) -> None:
    import ray

    with Pool(parse_spec(SPEC, "<test>")) as pool:
        assert pool.wait(lambda: len(pool.jobs("JobStatus == 2")) == 2, timeout=WAIT)
        # (the startd's update follows the claims by a second of pool time)
        assert pool.wait(lambda: len(pool.slots('SlotType == "Dynamic"')) == 2, timeout=WAIT)

        def keepalives() -> int:
            return sum(_find(st, "keepalives") for st in pool.status())

        # four keepalive rounds (every 20 s) span more than a lease: the claims live on
        assert pool.wait(lambda: keepalives() >= 4, timeout=WAIT)
        assert [e for e in pool.events if e["kind"] == "lease_expired"] == []
        assert len(pool.jobs("JobStatus == 2")) == 2
        (schedd,) = [a.handle for a in pool._live.actors() if a.plan.role == "schedd"]
        killed_at = pool.now
        ray.kill(schedd, no_restart=True)

        def merged() -> bool:
            slots = pool.slots()
            return [(s.eval("Name"), s.eval("Cpus"), s.eval("State")) for s in slots] == [
                ("slot1@exec0001", 4, "Unclaimed")
            ]

        assert pool.wait(merged, timeout=WAIT)
        events = pool.events
    expired = [e for e in events if e["kind"] == "lease_expired"]
    assert sorted(e["slot"] for e in expired) == ["slot1_1@exec0001", "slot1_2@exec0001"]
    for e in expired:
        assert e["message"] == "claim lease expired (condor_schedd gone?)"
        assert (e["schedd"], e["lease"], e["interval"], e["job"][:2]) == (
            "schedd1",
            LEASE,
            INTERVAL,
            "1.",
        )
        # last heard by the kill at the latest: over within lease + one keepalive interval
        assert e["last_heard"] <= killed_at + 1e-3
        assert killed_at < e["t"] <= killed_at + LEASE + INTERVAL
    # each claim ended once, by its lease: no release, no job exit
    claims = {e["claim"] for e in expired}
    ends = [e for e in events if e.get("claim") in claims and e["kind"] in ("release", "job_exit")]
    assert ends == []
    numbered = list(enumerate(events, 1))
    assert [v for v in check(numbered, [], [], []).violations if v.invariant == "lease_late"] == []


def test_mixed_example_run_passes_the_checker(
    ray_session: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from mockpool.cli.main import main

    assert (
        main(["run", str(EXAMPLES / "mixed.toml"), "--out", str(tmp_path), "--duration", "400"])
        == 0
    )
    printed = capsys.readouterr().out
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["matches"] > 0 and summary["jobs"]["Completed"] > 0
    report = check_dir(tmp_path)
    assert report.violations == []
    assert report.jobs == summary["jobs_submitted"]
    assert (
        f"Check: {len(INVARIANTS)} invariants hold over {report.events} events and {report.jobs} jobs"
        in printed
    )
