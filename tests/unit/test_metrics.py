"""Prometheus metrics from a pool's status: names, labels, units, counters as _total.

The names, types and labels of every family are golden-tested in
tests/virtual/test_metrics_golden.py; here, the values, worked out by hand."""

from __future__ import annotations

import math
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from mockpool.negotiator.durations import DurationHistogram
from mockpool.pool.metrics import JOB_STATES, MetricsSnapshot, exposition, shape

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]
GOLDEN = Path(__file__).resolve().parents[1] / "data" / "golden" / "metrics"


def _durations(*values: float) -> dict[str, Any]:
    h = DurationHistogram()
    for v in values:
        h.observe(v)
    return h.to_dict()


HOSTS: list[dict[str, Any]] = [
    {
        "role": "central",
        "identity": "negotiator",
        "daemons": ["collector", "negotiator"],
        "lag": {"wakeups": 10, "mean": 0.1, "max": 2.5},
        "services": {
            "CollectorService": {"name": "127.0.0.1", "ads": {"Machine": 3}},
            "NegotiatorService": {
                "name": "negotiator",
                "cycles": 7,
                "matches": 42,
                "last": {"duration": 0.75},
                "durations": _durations(0.75, 1.0, 4.0, 2000.0),
            },
        },
    },
    {
        "role": "schedd",
        "identity": "schedd/schedd1",
        "daemons": ["schedd1"],
        "lag": {"wakeups": 3, "mean": 0.0, "max": 0.0},
        "services": {
            "ScheddService": {
                "schedds": {
                    "schedd1": {
                        "idle": 4,
                        "running": 2,
                        "held": 1,
                        "removed": 0,
                        "claims": 2,
                        "by_status": {1: 4, 2: 2, 3: 0, 5: 1},
                        "left_queue": {4: 30, 3: 3},
                        "rejections": 5,
                        "keepalives": 9,
                    }
                },
                "stats": {"rejections": 5, "keepalives": 9},
            }
        },
    },
    {
        "role": "startd",
        "identity": "startd/startd0_0",
        "daemons": ["exec0001", "exec0002"],
        "lag": {"wakeups": 3, "mean": 0.1, "max": 0.5},
        "services": {
            "StartdService": {
                "leases_expired": 1,
                "job_exits": 30,
                "by_machine": {
                    "exec0001": {"job_exits": 20},
                    "exec0002": {"job_exits": 10, "leases_expired": 1, "jobs_evicted": 2},
                },
            }
        },
    },
]


def _acct(name: str, group: str, prio: float, **kw: Any) -> dict[str, Any]:
    return {
        "Name": name,
        "NegotiatorName": "negotiator",
        "IsAccountingGroup": "@" not in name,
        "AccountingGroup": group,
        "Priority": prio,
        "PriorityFactor": 1000.0,
        **kw,
    }


@pytest.fixture
def metrics_snapshot() -> MetricsSnapshot:
    """One scrape of a small pool, every family's input filled in."""
    return MetricsSnapshot(
        hosts=HOSTS,
        slot_states=Counter({"Claimed": 2, "Unclaimed": 1}),
        submitters=[{"Name": "alice@pool", "IdleJobs": 4, "RunningJobs": 2, "HeldJobs": None}],
        accounting=[
            _acct("alice@pool", "<none>", 500.0, ResourcesUsed=0, AccumulatedUsage=0.0),
            _acct(
                "group_a.bob@pool",
                "group_a",
                1500.0,
                ResourcesUsed=3,
                WeightedResourcesUsed=6.0,
                AccumulatedUsage=7200.0,
            ),
            _acct("<none>", "<none>", 500.0, EffectiveQuota=4.0, SubtreeQuota=8.0),
            _acct(
                "group_a",
                "<none>",
                1500.0,
                EffectiveQuota=4.0,
                ConfigQuota=0.5,
                SubtreeQuota=4.0,
                Requested=10.0,
                ResourcesUsed=3,
                WeightedResourcesUsed=6.0,
                AccumulatedUsage=7200.0,
            ),
        ],
        now=1200.0,
        time_scale=60.0,
        start_date=1_767_225_600.0,
        slots=[
            {"State": "Claimed", "Activity": "Busy", "Cpus": 4, "Memory": 1024},
            {"State": "Claimed", "Activity": "Idle", "Cpus": 1, "Memory": 1024},
            {"State": "Unclaimed", "Activity": "Idle", "Cpus": 3, "Memory": 4096},
        ],
        negotiator_ads=[
            {
                "Name": "negotiator",
                "Machine": "cm",
                "LastNegotiationCycleDuration0": 0.75,
                "LastNegotiationCycleMatches0": 6,
                "LastNegotiationCycleSubmittersFailed0": "",
                "UpdateInterval": 300,
            }
        ],
        schedd_ads=[
            {
                "Name": "schedd1",
                "Machine": "submit",
                "TotalIdleJobs": 4,
                "TotalRunningJobs": 2,
                "TotalHeldJobs": 1,
                "TotalRemovedJobs": 0,
                "TotalJobAds": 7,
            }
        ],
    )


def _samples(snap: MetricsSnapshot, *, htcondor: bool = False) -> Samples:
    text = exposition(snap, htcondor=htcondor).decode()
    out: Samples = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def test_every_metric_says_what_it_counts(metrics_snapshot: MetricsSnapshot) -> None:
    got = _samples(metrics_snapshot)
    d = "daemon"
    assert got[("mockpool_time_pool_seconds", ())] == 1200.0
    assert got[("mockpool_time_scale", ())] == 60.0
    assert got[("mockpool_start_time_seconds", ())] == 1_767_225_600
    assert got[("mockpool_negotiation_cycles_total", ((d, "negotiator"),))] == 7
    assert got[("mockpool_negotiation_matches_total", ((d, "negotiator"),))] == 42
    # the schedd's figures are labelled with its own name, never its actor's
    assert got[("mockpool_rejections_total", ((d, "schedd1"),))] == 5
    assert got[("mockpool_keepalives_total", ((d, "schedd1"),))] == 9
    assert got[("mockpool_jobs", ((d, "schedd1"), ("state", "Held")))] == 1
    assert got[("mockpool_jobs", ((d, "schedd1"), ("state", "Running")))] == 2
    assert got[("mockpool_jobs", ((d, "schedd1"), ("state", "Suspended")))] == 0
    assert got[("mockpool_jobs_left_queue_total", ((d, "schedd1"), ("state", "Completed")))] == 30
    assert got[("mockpool_jobs_left_queue_total", ((d, "schedd1"), ("state", "Removed")))] == 3
    assert got[("mockpool_claims", ((d, "schedd1"),))] == 2
    # a startd's figures are its machine's
    assert got[("mockpool_lease_expiries_total", ((d, "exec0002"),))] == 1
    assert got[("mockpool_job_exits_total", ((d, "exec0001"),))] == 20
    assert got[("mockpool_job_exits_total", ((d, "exec0002"),))] == 10
    assert got[("mockpool_jobs_evicted_total", ((d, "exec0002"),))] == 2
    assert ("mockpool_lease_expiries_total", ((d, "exec0001"),)) not in got  # none yet
    # the actor's loop lag, for each daemon it hosts
    assert got[("mockpool_clock_lag_pool_seconds", ((d, "negotiator"),))] == 2.5
    assert got[("mockpool_clock_lag_pool_seconds", ((d, "collector"),))] == 2.5
    assert got[("mockpool_clock_lag_pool_seconds", ((d, "exec0001"),))] == 0.5
    assert got[("mockpool_slots", (("state", "Claimed"),))] == 2
    assert got[("mockpool_collector_ads", ((d, "collector"), ("type", "Machine")))] == 3
    sub = ("submitter", "alice@pool")
    assert got[("mockpool_submitter_jobs", (("state", "Idle"), sub))] == 4
    assert got[("mockpool_submitter_jobs", (("state", "Held"), sub))] == 0  # UNDEFINED


def test_every_job_state_is_a_label_value(metrics_snapshot: MetricsSnapshot) -> None:
    got = _samples(metrics_snapshot)
    states = {dict(labels)["state"] for name, labels in got if name == "mockpool_jobs"}
    assert states == set(JOB_STATES.values())
    assert {"Idle", "Running", "Removed", "Completed", "Held"} <= states


def test_the_accountant_per_submitter_and_group(metrics_snapshot: MetricsSnapshot) -> None:
    got = _samples(metrics_snapshot)
    bob = (("daemon", "negotiator"), ("group", "group_a"), ("submitter", "group_a.bob@pool"))
    # the Accounting ad's Priority is the effective one: real = 1500 / 1000
    assert got[("mockpool_accountant_effective_priority", bob)] == 1500.0
    assert got[("mockpool_accountant_priority", bob)] == 1.5
    assert got[("mockpool_accountant_priority_factor", bob)] == 1000.0
    assert got[("mockpool_accountant_resources_used", bob)] == 3
    assert got[("mockpool_accountant_weighted_resources_used", bob)] == 6.0
    assert got[("mockpool_accountant_usage_pool_seconds", bob)] == 7200.0
    alice = (("daemon", "negotiator"), ("group", "<none>"), ("submitter", "alice@pool"))
    assert got[("mockpool_accountant_priority", alice)] == 0.5
    g = (("daemon", "negotiator"), ("group", "group_a"))
    assert got[("mockpool_group_quota", g)] == 4.0
    assert got[("mockpool_group_config_quota", g)] == 0.5
    assert got[("mockpool_group_subtree_quota", g)] == 4.0
    assert got[("mockpool_group_requested", g)] == 10.0
    assert got[("mockpool_group_resources_used", g)] == 3
    assert got[("mockpool_group_usage_pool_seconds", g)] == 7200.0
    # a group's record is no submitter's
    names = {dict(lbl).get("submitter") for n, lbl in got if n.startswith("mockpool_accountant_")}
    assert names == {"alice@pool", "group_a.bob@pool"}


def test_cycle_durations_are_a_histogram(metrics_snapshot: MetricsSnapshot) -> None:
    got = _samples(metrics_snapshot)
    d = ("daemon", "negotiator")
    name = "mockpool_negotiation_cycle_duration_pool_seconds"
    assert got[(f"{name}_bucket", (d, ("le", "0.5")))] == 0
    assert got[(f"{name}_bucket", (d, ("le", "1.0")))] == 2  # 0.75 and 1.0 (le is <=)
    assert got[(f"{name}_bucket", (d, ("le", "5.0")))] == 3  # and 4.0
    assert got[(f"{name}_bucket", (d, ("le", "+Inf")))] == 4  # and 2000.0
    assert got[(f"{name}_count", (d,))] == 4
    assert got[(f"{name}_sum", (d,))] == 2005.75


def test_the_histogram_counts_each_cycle_into_its_bucket() -> None:
    h = DurationHistogram((1.0, 10.0))
    for v in (0.0, 1.0, 1.5, 10.0, 11.0, 50.0):
        h.observe(v)
    d = h.to_dict()
    # le=1: 0.0 and 1.0; le=10: and 1.5, 10.0; +Inf: and 11, 50
    assert d["buckets"] == [[1.0, 2], [10.0, 4], [math.inf, 6]]
    assert d["count"] == 6 and d["sum"] == 73.5
    with pytest.raises(ValueError, match="increase strictly"):
        DurationHistogram((5.0, 1.0))


def test_build_info_names_the_versions(metrics_snapshot: MetricsSnapshot) -> None:
    got = _samples(metrics_snapshot)
    [(name, labels)] = [k for k in got if k[0] == "mockpool_build_info"]
    assert got[(name, labels)] == 1.0
    assert {k for k, _ in labels} == {"version", "python", "ray", "grpc"}
    assert all(v for _, v in labels)


def test_htcondor_names_are_opt_in(metrics_snapshot: MetricsSnapshot) -> None:
    assert not any(n.startswith("htcondor_") for n, _ in _samples(metrics_snapshot))
    got = _samples(metrics_snapshot, htcondor=True)
    assert got[("htcondor_pool_machines_total", ())] == 3
    assert got[("htcondor_pool_machines_state", (("state", "Claimed"),))] == 2
    assert got[("htcondor_pool_cpus_total", ())] == 8  # 4 + 1 + 3 (a p-slot's are what is left)
    assert got[("htcondor_pool_cpus_used", ())] == 4  # the Busy slot's
    assert got[("htcondor_pool_memory_mb_total", ())] == 6144
    assert got[("htcondor_pool_memory_mb_used", ())] == 1024
    assert got[("htcondor_pool_schedds_total", ())] == 1
    assert got[("htcondor_pool_jobs_total", ())] == 7  # idle 4 + running 2 + held 1
    neg = (("daemon", "negotiator"), ("machine", "cm"), ("type", "Negotiator"))
    assert got[("htcondor_lastnegotiationcycleduration0", neg)] == 0.75
    assert got[("htcondor_lastnegotiationcyclematches0", neg)] == 6
    assert ("htcondor_lastnegotiationcyclesubmittersfailed0", neg) not in got  # a string
    sd = (("daemon", "schedd1"), ("machine", "submit"), ("type", "Scheduler"))
    assert got[("htcondor_totalidlejobs", sd)] == 4


def test_names_follow_prometheus_conventions(metrics_snapshot: MetricsSnapshot) -> None:
    for name, _labels in _samples(metrics_snapshot):
        assert name.startswith("mockpool_")
        assert not name.endswith("_created")  # no creation-time samples for snapshots
        # a time in pool seconds says so; only real Unix dates end in plain _seconds
        if name.endswith("_seconds"):
            assert name.endswith("_pool_seconds") or name == "mockpool_start_time_seconds"


def test_a_pool_with_its_collector_down_still_has_its_daemons(
    metrics_snapshot: MetricsSnapshot,
) -> None:
    snap = MetricsSnapshot(hosts=metrics_snapshot.hosts)
    got = _samples(snap, htcondor=True)
    assert got[("mockpool_negotiation_cycles_total", (("daemon", "negotiator"),))] == 7
    assert got[("htcondor_pool_machines_total", ())] == 0


def test_golden_names_types_and_labels(metrics_snapshot: MetricsSnapshot) -> None:
    """Every family, its type and labels (values blanked): a change of any of them is a
    change of what dashboards read. MOCKPOOL_UPDATE_GOLDEN=1 rewrites the file."""
    got = shape(exposition(metrics_snapshot, htcondor=True).decode())
    path = GOLDEN / "snapshot.prom"
    if os.environ.get("MOCKPOOL_UPDATE_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(got)
    assert got == path.read_text()
