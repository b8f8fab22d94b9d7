"""Generated workloads: distributions, arrivals, seeding, clusters and bad parameters."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from mockpool.classad import ClassAd, parse_expr
from mockpool.pool.spec import parse_spec
from mockpool.pool.specmodel import SpecError
from mockpool.pool.workload import (
    Workload,
    WorkloadError,
    generate,
    parse_arrival,
    parse_distribution,
    submit_description,
)
from mockpool.schedd.submit import parse_submit


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def workload(
    name: str = "w",
    *,
    jobs: int = 10,
    duration: object = 60,
    arrival: object = None,
    cpus: object = 1,
    owner: str = "alice",
    group: str = "",
) -> Workload:
    return Workload(
        name,
        owner,
        "schedd1",
        jobs,
        parse_distribution("duration", duration),
        parse_arrival("arrival", arrival or {"kind": "at_once"}),
        parse_distribution("request_cpus", cpus, positive=True),
        parse_distribution("request_memory", 128, positive=True),
        parse_distribution("request_disk", 1024, positive=True),
        group,
    )


# ------------------------------------------------------------------ distributions


@pytest.mark.parametrize(
    ("table", "mean"),
    [
        (90, 90.0),
        ({"dist": "fixed", "value": 30}, 30.0),
        ({"dist": "uniform", "low": 10, "high": 30}, 20.0),
        ({"dist": "normal", "mean": 90, "sigma": 10}, 90.0),
        ({"dist": "exponential", "mean": 50}, 50.0),
        ({"dist": "lognormal", "mu": 0, "sigma": 1}, math.exp(0.5)),  # e^(μ + σ²/2)
        ({"dist": "empirical", "values": [10, 20, 60]}, 30.0),
    ],
)
def test_each_distribution_has_its_mean_and_samples_near_it(table: object, mean: float) -> None:
    d = parse_distribution("duration", table)
    assert d.mean == pytest.approx(mean)
    sample = d.draw(rng(7), 20000)
    assert (sample >= 0).all()
    assert float(sample.mean()) == pytest.approx(mean, rel=0.03)


def test_fixed_is_exact_and_empirical_draws_only_its_values() -> None:
    assert parse_distribution("d", 42).draw(rng(), 5).tolist() == [42.0] * 5
    values = set(
        parse_distribution("d", {"dist": "empirical", "values": [5, 7]}).draw(rng(), 100).tolist()
    )
    assert values == {5.0, 7.0}


def test_uniform_stays_in_its_range_and_normal_is_cut_at_zero() -> None:
    u = parse_distribution("d", {"dist": "uniform", "low": 10, "high": 12}).draw(rng(), 1000)
    assert u.min() >= 10 and u.max() <= 12
    n = parse_distribution("d", {"dist": "normal", "mean": 0, "sigma": 10}).draw(rng(), 1000)
    assert n.min() == 0.0 and (n > 0).any()  # no negative durations
    assert (
        parse_distribution("d", {"dist": "normal", "mean": 90, "sigma": 0}).draw(rng(), 3).tolist()
        == [90.0] * 3
    )


@pytest.mark.parametrize(
    ("table", "key", "problem"),
    [
        (-5, "duration.value", "must be >= 0"),
        ({"dist": "normal", "mean": 90, "sigma": -1}, "duration.sigma", "must be >= 0"),
        ({"dist": "lognormal", "mu": 1, "sigma": -0.5}, "duration.sigma", "must be >= 0"),
        ({"dist": "normal", "mean": -1, "sigma": 1}, "duration.mean", "must be >= 0"),
        ({"dist": "gamma", "k": 2}, "duration.dist", "unknown dist 'gamma'"),
        ({"mean": 3}, "duration.dist", "unknown dist None"),
        ({"dist": "uniform", "low": 30, "high": 10}, "duration.high", "must be >= low"),
        ({"dist": "uniform", "low": 1}, "duration.high", "uniform needs high"),
        ({"dist": "exponential", "mean": 5, "rate": 2}, "duration.rate", "unknown parameter"),
        ({"dist": "empirical", "values": []}, "duration.values", "non-empty list"),
        ({"dist": "empirical", "values": [1, -2]}, "duration.values", "must not be negative"),
        ({"dist": "fixed", "value": "ten"}, "duration.value", "finite number"),
        ({"dist": "fixed", "value": float("nan")}, "duration.value", "finite number"),
        ("ten", "duration", "must be a number or a table"),
    ],
)
def test_impossible_distributions_are_refused(table: object, key: str, problem: str) -> None:
    with pytest.raises(WorkloadError, match=problem) as e:
        parse_distribution("duration", table)
    assert e.value.key == key


def test_a_request_must_be_positive() -> None:
    with pytest.raises(WorkloadError, match="must be > 0"):
        parse_distribution("request_cpus", 0, positive=True)
    # drawn requests are whole and at least 1
    d = parse_distribution("request_cpus", {"dist": "uniform", "low": 0, "high": 3}, positive=True)
    cpus = {
        c.cpus
        for c in generate([workload(jobs=200, cpus={"dist": "uniform", "low": 0, "high": 3})], 1)
    }
    assert d.kind == "uniform" and cpus <= {1, 2, 3} and len(cpus) == 3


# ------------------------------------------------------------------ arrivals


def test_at_once_and_bursts_by_hand() -> None:
    assert parse_arrival("a", {"kind": "at_once", "at": 30}).times(rng(), 3).tolist() == [30.0] * 3
    bursts = parse_arrival("a", {"kind": "bursts", "every": 60, "size": 4, "start": 10})
    assert bursts.times(rng(), 10).tolist() == [10.0] * 4 + [70.0] * 4 + [130.0] * 2


def test_poisson_gaps_have_mean_one_over_rate() -> None:
    t = parse_arrival("a", {"kind": "poisson", "rate": 0.5, "start": 100}).times(rng(3), 20000)
    assert t[0] > 100 and (np.diff(t) > 0).all()
    assert float(np.diff(t).mean()) == pytest.approx(2.0, rel=0.03)


def test_daily_cycle_is_busiest_at_its_peak() -> None:
    a = parse_arrival(
        "a", {"kind": "daily", "rate": 0.01, "amplitude": 1, "period": 86400, "peak": 43200}
    )
    t = a.times(rng(5), 5000) % 86400
    near_peak = ((t > 43200 - 7200) & (t < 43200 + 7200)).sum()
    near_trough = ((t < 7200) | (t > 86400 - 7200)).sum()
    # rate ∝ 1 + cos: about 1.97 at the peak's ±2 h and about 0.03 at the trough's
    assert near_peak > 20 * near_trough
    # amplitude 0 is a plain Poisson stream at the mean rate
    flat = parse_arrival("a", {"kind": "daily", "rate": 0.5, "amplitude": 0}).times(rng(5), 20000)
    assert float(np.diff(flat).mean()) == pytest.approx(2.0, rel=0.03)


@pytest.mark.parametrize(
    ("table", "key", "problem"),
    [
        ({"kind": "poisson", "rate": 0}, "arrival.rate", "must be > 0"),
        ({"kind": "poisson", "rate": -1}, "arrival.rate", "must be > 0"),
        ({"kind": "poisson"}, "arrival.rate", "poisson needs rate"),
        ({"kind": "bursts", "every": 60, "size": 1.5}, "arrival.size", "whole number"),
        ({"kind": "bursts", "every": 0, "size": 2}, "arrival.every", "must be > 0"),
        ({"kind": "daily", "rate": 1, "amplitude": 2}, "arrival.amplitude", r"must be in \[0, 1\]"),
        ({"kind": "at_once", "at": -1}, "arrival.at", "must be >= 0"),
        ({"kind": "trickle"}, "arrival.kind", "unknown kind 'trickle'"),
    ],
)
def test_impossible_arrivals_are_refused(table: object, key: str, problem: str) -> None:
    with pytest.raises(WorkloadError, match=problem) as e:
        parse_arrival("arrival", table)
    assert e.value.key == key


# ------------------------------------------------------------------ generation


def test_the_same_seed_gives_the_same_jobs_and_another_seed_others() -> None:
    ws = [
        workload(
            jobs=50,
            duration={"dist": "exponential", "mean": 60},
            arrival={"kind": "poisson", "rate": 1},
        )
    ]
    assert generate(ws, 11) == generate(ws, 11)
    assert generate(ws, 11) != generate(ws, 12)


def test_adding_a_workload_leaves_the_others_jobs_alone() -> None:
    a = workload("a", duration={"dist": "normal", "mean": 60, "sigma": 5})
    b = workload("b", owner="bob", duration={"dist": "uniform", "low": 1, "high": 9})
    only_a = generate([a], 4)
    both = generate([a, b], 4)
    assert [c for c in both if c.workload == "a"] == only_a


def test_equal_jobs_that_arrive_together_are_one_cluster() -> None:
    clusters = generate(
        [workload(jobs=10, duration=60, arrival={"kind": "bursts", "every": 30, "size": 4})], 0
    )
    assert [(c.at, c.count, set(c.durations)) for c in clusters] == [
        (0.0, 4, {60.0}),
        (30.0, 4, {60.0}),
        (60.0, 2, {60.0}),
    ]
    # jobs that differ in duration alone are one cluster, a duration a job
    (varied,) = generate([workload(jobs=5, duration={"dist": "uniform", "low": 10, "high": 20})], 0)
    assert varied.count == 5 and len(set(varied.durations)) == 5
    other_cpus = generate([workload(jobs=6, cpus={"dist": "empirical", "values": [1, 2]})], 0)
    assert sorted(c.cpus for c in other_cpus) == [1, 2]  # other requests: other clusters


def test_a_cluster_larger_than_a_submission_may_be_is_split() -> None:
    clusters = generate([workload(jobs=7, duration=60)], 0, max_per_cluster=3)
    assert [c.count for c in clusters] == [3, 3, 1]
    spec = parse_spec(
        SPEC.replace("[[startds]]", "[config]\nMAX_JOBS_PER_SUBMISSION = 3\n\n[[startds]]"),
        "p.toml",
    )
    assert [
        i.description.rsplit("queue ", 1)[1].strip() for i in spec.submits if i.owner == "bob"
    ] == ["3", "1"]


def test_clusters_come_in_time_order_across_workloads() -> None:
    ws = [
        workload("a", jobs=3, arrival={"kind": "poisson", "rate": 0.1}),
        workload("b", jobs=3, arrival={"kind": "poisson", "rate": 0.1}, owner="bob"),
    ]
    times = [c.at for c in generate(ws, 2)]
    assert times == sorted(times) and len(times) == 6


def test_the_submit_description_queues_the_cluster() -> None:
    (c,) = generate([workload(jobs=3, duration=90.5, cpus=2, group="group_a")], 0)
    procs = parse_submit(submit_description(c), "<gen>", owner="alice", validate=parse_expr).procs
    assert len(procs) == 3
    ad = ClassAd()
    for k, v in procs[0].items():
        ad[k] = parse_expr(v)
    ad = {
        k: ad.eval(k)
        for k in (
            "MockDuration",
            "RequestCpus",
            "RequestMemory",
            "RequestDisk",
            "AcctGroup",
            "AccountingGroup",
            "MockWorkload",
        )
    }
    assert ad["MockDuration"] == 90.5
    assert (ad["RequestCpus"], ad["RequestMemory"], ad["RequestDisk"]) == (2, 128, 1024)
    assert ad["AcctGroup"] == "group_a" and ad["AccountingGroup"] == "group_a.alice"
    assert ad["MockWorkload"] == "w"


def test_jobs_of_one_cluster_that_last_differently_are_queued_from_a_list() -> None:
    (c,) = generate([workload(jobs=3, duration={"dist": "uniform", "low": 10, "high": 20})], 5)
    text = submit_description(c)
    assert "queue MockDurationItem from (" in text
    procs = parse_submit(text, "<gen>", owner="alice", validate=parse_expr).procs
    got = []
    for p in procs:
        ad = ClassAd()
        for k, v in p.items():
            ad[k] = parse_expr(v)
        got.append(ad.eval("MockDuration"))
    assert got == list(c.durations) and len(set(got)) == 3


def test_a_clusters_form_is_its_first_job_and_its_first_of_another_duration() -> None:
    """What the spec checks for a workload: the same description but for its items."""
    (c,) = generate([workload(jobs=3, duration=90.5)], 0)
    assert c.form().durations == (90.5,) and "queue 1\n" in submit_description(c.form())
    mixed = replace(c, durations=(5.0, 5.0, 7.5, 5.0, 9.0))
    assert mixed.form().durations == (5.0, 7.5)
    cut, whole = submit_description(mixed.form()), submit_description(mixed)
    assert cut.split("queue ")[0] == whole.split("queue ")[0]
    assert cut.endswith("queue MockDurationItem from (\n5\n7.5\n)\n")


# ------------------------------------------------------------------ the spec


SPEC = """\
[pool]
seed = 3

[[startds]]
count = 1

[[schedds]]
count = 2

[[workload]]
name = "short"
owner = "alice"
accounting_group = "group_a"
schedd = "schedd2"
jobs = 6
duration = { dist = "normal", mean = 90, sigma = 20 }
arrival = { kind = "bursts", every = 60, size = 3 }

[[workload]]
owner = "bob"
jobs = 4
duration = 100
"""


def test_spec_workloads_become_submit_items_in_time_order() -> None:
    spec = parse_spec(SPEC, "pool.toml")
    assert [w.name for w in spec.workloads] == ["short", "workload2"]
    items = spec.submits
    assert [i.at for i in items] == sorted(i.at for i in items)
    bob = [i for i in items if i.owner == "bob"]
    assert len(bob) == 1 and bob[0].schedd == "schedd1" and "queue 4" in bob[0].description
    alice = [i for i in items if i.owner == "alice"]
    assert {i.schedd for i in alice} == {"schedd2"} and {i.at for i in alice} == {0.0, 60.0}
    assert all(i.source == "pool.toml:10" for i in alice)
    assert parse_spec(SPEC, "pool.toml").submits == items  # seeded


@pytest.mark.parametrize(
    ("old", "new", "where"),
    [
        (
            "sigma = 20 }",
            "sigma = -20 }",
            "pool.toml:16: [[workload]] #1 duration: duration.sigma: must be >= 0",
        ),
        (
            "duration = 100",
            "duration = -100",
            "pool.toml:22: [[workload]] #2 duration: duration.value",
        ),
        (
            'dist = "normal"',
            'dist = "weibull"',
            "pool.toml:16: [[workload]] #1 duration: duration.dist: unknown",
        ),
        (
            'kind = "bursts", every = 60, size = 3',
            'kind = "poisson", rate = 0',
            "pool.toml:17: [[workload]] #1 arrival: arrival.rate: must be > 0",
        ),
        ("jobs = 4", "jobs = 0", "pool.toml:21: [[workload]] #2 jobs: must be >= 1"),
        ('owner = "bob"', 'owner = ""', "pool.toml:20: [[workload]] #2 owner: must be a name"),
        (
            'schedd = "schedd2"',
            'schedd = "nope"',
            "pool.toml:14: [[workload]] #1 schedd: no schedd named",
        ),
        (
            "duration = 100",
            "durations = 100",
            "pool.toml:22: [[workload]] #2 durations: unknown key",
        ),
        (
            'owner = "bob"',
            'owner = "bob"\nname = "short"',
            "[[workload]] #2 name: 'short' is used twice",
        ),
    ],
)
def test_bad_workloads_are_refused_at_load_with_line_and_key(
    old: str, new: str, where: str
) -> None:
    with pytest.raises(SpecError) as e:
        parse_spec(SPEC.replace(old, new), "pool.toml")
    assert where in str(e.value)


def test_a_workload_without_duration_is_refused() -> None:
    with pytest.raises(SpecError, match=r"pool.toml:19: \[\[workload\]\] #2: needs duration"):
        parse_spec(SPEC.replace("duration = 100\n", ""), "pool.toml")


def test_the_workload_example_loads() -> None:
    from mockpool.pool.spec import load_spec

    spec = load_spec(Path(__file__).resolve().parents[2] / "examples" / "workload.toml")
    assert [w.name for w in spec.workloads] == ["batch", "stream"]
    queued = sum(int(i.description.rsplit("queue ", 1)[1]) for i in spec.submits)
    assert queued == 24 + 20
    assert {i.owner for i in spec.submits} == {"alice", "bob"}
