"""Prometheus metrics from a pool's status: names, labels, units, counters as _total."""

from __future__ import annotations

from collections import Counter

from prometheus_client.parser import text_string_to_metric_families

from mockpool.pool.metrics import MetricsSnapshot, exposition

HOSTS = [
    {
        "role": "central",
        "identity": "negotiator",
        "lag": {"wakeups": 10, "mean": 0.1, "max": 2.5},
        "services": {
            "CollectorService": {"ads": {"Machine": 3}},
            "NegotiatorService": {
                "name": "negotiator",
                "cycles": 7,
                "matches": 42,
                "last": {"duration": 0.75},
            },
        },
    },
    {
        "role": "schedd",
        "identity": "schedd/schedd1",
        "lag": {"wakeups": 3, "mean": 0.0, "max": 0.0},
        "services": {
            "ScheddService": {
                "schedds": {
                    "schedd1": {"idle": 4, "running": 2, "held": 1, "removed": 0, "claims": 2}
                },
                "stats": {"rejections": 5, "keepalives": 9},
            }
        },
    },
    {
        "role": "startd",
        "identity": "startd/startd0_0",
        "services": {"StartdService": {"leases_expired": 1, "job_exits": 30}},
    },
]


def _samples() -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    snap = MetricsSnapshot(
        hosts=HOSTS,
        slot_states=Counter({"Claimed": 2, "Unclaimed": 1}),
        submitters=[{"Name": "alice@pool", "IdleJobs": 4, "RunningJobs": 2, "HeldJobs": None}],
    )
    text = exposition(snap).decode()
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def test_every_metric_says_what_it_counts() -> None:
    got = _samples()
    d = "daemon"
    assert got[("mockpool_negotiation_cycles_total", ((d, "negotiator"),))] == 7
    assert got[("mockpool_negotiation_matches_total", ((d, "negotiator"),))] == 42
    assert got[("mockpool_negotiation_cycle_seconds", ((d, "negotiator"),))] == 0.75
    assert got[("mockpool_rejections_total", ((d, "schedd/schedd1"),))] == 5
    assert got[("mockpool_keepalives_total", ((d, "schedd/schedd1"),))] == 9
    assert got[("mockpool_jobs", ((d, "schedd1"), ("state", "held")))] == 1
    assert got[("mockpool_jobs", ((d, "schedd1"), ("state", "running")))] == 2
    assert got[("mockpool_claims", ((d, "schedd1"),))] == 2
    assert got[("mockpool_lease_expiries_total", ((d, "startd/startd0_0"),))] == 1
    assert got[("mockpool_job_exits_total", ((d, "startd/startd0_0"),))] == 30
    assert got[("mockpool_clock_lag_seconds", ((d, "negotiator"),))] == 2.5
    assert got[("mockpool_slots", (("state", "Claimed"),))] == 2
    assert got[("mockpool_collector_ads", ((d, "collector"), ("type", "Machine")))] == 3
    assert got[("mockpool_submitter_jobs", (("state", "idle"), ("submitter", "alice@pool")))] == 4
    assert got[("mockpool_submitter_jobs", (("state", "held"), ("submitter", "alice@pool")))] == 0


def test_names_follow_prometheus_conventions() -> None:
    for name, _labels in _samples():
        assert name.startswith("mockpool_")
        assert not name.endswith("_created")  # no creation-time samples for snapshots
