"""The chaos generator (services/pool/chaos/) and the campaign's pure parts: a seed
draws one spec, the same on every call, that the spec loader accepts; the failure
signatures group runs by their bug, not by their seed's numbers."""

from __future__ import annotations

import pytest

from mockpool.pool.chaos import draw
from mockpool.pool.chaos_campaign import SeedResult, parse_seeds
from mockpool.pool.spec import parse_spec

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]


def test_a_seed_draws_the_same_spec_every_time_and_seeds_differ() -> None:
    assert draw(7).text == draw(7).text and draw(7).features == draw(7).features
    assert len({draw(s).text for s in range(20)}) == 20


@pytest.mark.parametrize("seed", range(0, 60))
def test_a_drawn_spec_is_virtual_short_and_loads(seed: int) -> None:
    chaos = draw(seed)
    data = tomllib.loads(chaos.text)
    assert data["pool"]["clock"] == "virtual" and data["pool"]["seed"] == seed
    assert 1500 <= data["pool"]["duration"] <= 3000
    assert 1 <= sum(g["count"] for g in data["startds"]) <= 30
    assert all(1 <= int(g["config"].split()[2]) <= 8 for g in data["startds"])  # NUM_CPUS
    assert 1 <= data["schedds"][0]["count"] <= 3 and 1 <= len(data["workload"]) <= 3
    spec = parse_spec(chaos.text, f"<chaos {seed}>")  # refused: a SpecError naming why
    assert spec.clock == "virtual"


def test_the_draws_hold_every_kind_of_fault_and_job_policy() -> None:
    """Over 200 seeds every fault kind acts on schedds, machines and the central
    manager, crashes stay down, and every job policy is drawn."""
    seen = set().union(*(draw(s).features for s in range(200)))
    for role in ("schedd", "startd", "central"):
        for kind in ("crash", "crash_stays_down", "restart", "pause", "partition", "drop"):
            assert f"{kind}:{role}" in seen
        assert f"delay:{role}" in seen and f"skew:{role}" in seen
    policies = ("periodic_hold", "periodic_release", "periodic_remove", "on_exit_remove")
    policies += ("on_exit_hold", "max_retries", "allowed_job_duration", "hold")
    assert {f"policy_{p}" for p in policies} <= seen
    assert {"random_plan", "latency", "schedds_share_actor", "fault_on_shared_schedd"} <= seen
    assert {"static", "static_split", "pslot", "pslot_consumption", "group_quotas"} <= seen


def test_a_bad_seed_is_refused() -> None:
    with pytest.raises(ValueError, match="whole number >= 0"):
        draw(-1)


def test_seed_ranges() -> None:
    assert parse_seeds("0-3,7, 2,10-10") == [0, 1, 2, 3, 7, 10]
    for bad in ("", "3-1", "a", "1-", "-2"):
        with pytest.raises(ValueError, match="bad seed range"):
            parse_seeds(bad)


def test_a_failure_signature_leaves_out_the_seeds_own_numbers_and_names() -> None:
    a = SeedResult(
        4,
        1,
        2.0,
        ("events.jsonl", "summary.json", "ads"),
        (),
        "mockpool.pool.client.PoolError: no schedd named 'schedd1' (known: schedd2)",
        "client.py:_schedd",
    )
    b = SeedResult(
        9,
        1,
        3.0,
        ("events.jsonl", "summary.json", "ads"),
        (),
        "mockpool.pool.client.PoolError: no schedd named 'schedd3' (known: schedd1, schedd2)",
        "client.py:_schedd",
    )
    assert not a.ok and a.check == "no output"
    assert a.signature.startswith("exit 1: mockpool.pool.client.PoolError: no schedd named '_'")
    assert a.signature == b.signature
    assert a.signature.endswith("(known: scheddN) [client.py:_schedd]")
    clean = SeedResult(5, 0, 1.0)
    assert clean.ok and clean.check == "clean" and clean.signature == ""
    bad = SeedResult(6, 0, 1.0, violations=("job_lost", "lease_late"), symptom="job_lost: ...")
    assert bad.signature == "check: job_lost, lease_late"
    assert SeedResult(7, None, 120.0).signature == "timeout (the run hung)"
