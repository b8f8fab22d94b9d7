"""The chaos campaign on a fixed set of seeds: each seed's random pool, workload and fault
plan (services/pool/chaos.py) run by the campaign's own code (``run_seed``: ``mockpool run
SPEC --clock virtual`` in a child process, then the checker of ``mockpool check``). Every
run exits 0, writes its output folder and checks clean. By hand, on hundreds of seeds:
``python -m mockpool.pool.chaos --seeds 0-199`` (failing seeds are kept for replay)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mockpool.pool.chaos import POLICIES, draw
from mockpool.pool.chaos_campaign import OUTPUTS, run_seed

# Chosen (from seeds 0-199) to cover together every fault kind on schedds, machines and
# the central manager, crashes that stay down, every job policy and slot layout; what
# each adds:
SEEDS = {
    16: "the central manager crashed for good; a pause of a schedd sharing its actor",
    52: "a skewed central manager; restarts; a random plan; static slots split in parts",
    94: "a schedd crashed for good while another shares its actor; retries, policies",
    121: "restarts of the central manager, a schedd and a startd; group quotas",
    135: "a startd's clock 120 s ahead; calls between a schedd and central dropped",
    153: "a startd actor crashed for good; delays; holds, on_exit_hold, on_exit_remove",
    169: "the negotiator in an actor of its own; partition, drop, pauses; latency",
    171: "a 900 s partition of the collector from a machine; crash of the collector",
    192: "drops, delays and a pause on central; allowed_job_duration, periodic_hold",
}
TIMEOUT = 600  # real seconds: only a hung run comes near it (a run takes a few)

REQUIRED = {
    f"{kind}:{role}"
    for role in ("schedd", "startd", "central")
    for kind in ("crash", "restart", "pause", "partition", "drop", "delay", "skew")
} | {
    "crash_stays_down:schedd",
    "crash_stays_down:startd",
    "crash_stays_down:central",
    "fault_on_shared_schedd",
    "fault_on_actor",
    "random_plan",
    "latency",
    "own_negotiator",
    "static",
    "static_split",
    "pslot",
    "pslot_consumption",
    "group_quotas",
    "until_done",
    "worklife_zero",
    "system_periodic",
    *(f"policy_{p}" for p in POLICIES),
}


def test_the_fixed_seeds_cover_the_features_of_a_campaign() -> None:
    covered = set().union(*(draw(s).features for s in SEEDS))
    assert REQUIRED - covered == set()


@pytest.mark.slow
@pytest.mark.parametrize("seed", sorted(SEEDS))
def test_a_chaos_seed_runs_to_its_end_writes_its_output_and_checks_clean(
    seed: int, tmp_path: Path
) -> None:
    result = run_seed(seed, tmp_path, timeout=TIMEOUT)
    log = (tmp_path / "run.log").read_text()[-3000:]
    replay = f"replay: python -m mockpool.pool.chaos --seeds {seed}"
    assert result.rc == 0, f"seed {seed}: {result.signature}\n{replay}\n{log}"
    assert result.missing == (), f"seed {seed}: no {', '.join(result.missing)}\n{replay}"
    assert all((tmp_path / "out" / name).exists() for name in OUTPUTS)
    check = (tmp_path / "check.txt").read_text()
    assert result.violations == () and result.ok, f"seed {seed}:\n{check}\n{replay}"
