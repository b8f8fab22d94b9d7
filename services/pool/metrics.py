"""Prometheus metrics of a pool, live or virtual (``mockpool_`` names; docs/metrics.md).

A scrape asks the pool for its daemons' status (counters each daemon keeps anyway) and
the collector for slots, submitter and accounting ads, and turns them into metric
families; nothing is counted twice and nothing runs between scrapes. A live pool serves
them over HTTP on ``[pool] metrics_port`` (or ``--metrics-port``; on the spec's host:
loopback unless it says otherwise); every run also writes them, as Prometheus' text
format, to ``metrics.prom`` in its output folder.

One label scheme: ``daemon`` is a daemon's own name (``schedd1``, ``exec0001``,
``negotiator``, ``collector``), never the Ray actor that hosts it. Times in pool seconds
are named ``_pool_seconds``; pool time and the time scale are gauges of their own, so a
``rate()`` over real-time scrapes of a counter is per real second, and
``rate(x) / mockpool_time_scale`` is per pool second. With ``[pool] metrics_htcondor``
the names HTCondor sites graph come too (:mod:`.metrics_htcondor`).
"""

from __future__ import annotations

import platform
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
)
from prometheus_client.registry import Collector

from ..jobstates import STATUS_NAMES

__all__ = ["JOB_STATES", "MetricsSnapshot", "PoolMetrics", "build_info", "exposition", "shape"]

# HTCondor's JobStatus codes and names (condor_q's); one label value each, always present
JOB_STATES = STATUS_NAMES
# what a submitter ad counts, by its attribute
_SUBMITTER_STATES = (("IdleJobs", "Idle"), ("RunningJobs", "Running"), ("HeldJobs", "Held"))


@dataclass
class MetricsSnapshot:
    """What one scrape reads from a pool."""

    hosts: list[dict[str, Any]] = field(default_factory=list)  # DaemonHost.status()
    slot_states: Counter[str] = field(default_factory=Counter)  # Machine ads by State
    submitters: list[dict[str, Any]] = field(default_factory=list)  # Name, IdleJobs, ...
    accounting: list[dict[str, Any]] = field(default_factory=list)  # Accounting ads
    now: float = 0.0  # pool time, pool seconds since the pool started
    time_scale: float = 0.0  # pool seconds per real second (0: virtual time)
    start_date: float = 0.0  # Unix time of pool time 0
    # for the HTCondor names (read only when they are asked for)
    slots: list[dict[str, Any]] = field(default_factory=list)  # Machine ads, a few attrs
    negotiator_ads: list[dict[str, Any]] = field(default_factory=list)
    schedd_ads: list[dict[str, Any]] = field(default_factory=list)


class PoolMetrics(Collector):
    """A Prometheus collector over ``read()``, called at each scrape."""

    def __init__(self, read: Callable[[], MetricsSnapshot], *, htcondor: bool = False) -> None:
        self._read = read
        self._htcondor = htcondor

    def collect(self) -> Iterator[Any]:
        snap = self._read()
        out = families(snap)
        if self._htcondor:
            from .metrics_htcondor import htcondor_families

            out += htcondor_families(snap)
        return iter(out)


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "none"


def build_info() -> dict[str, str]:
    """The versions a run was made with (``mockpool_build_info``'s labels)."""
    return {
        "version": _version("mockpool"),
        "python": platform.python_version(),
        "ray": _version("ray"),
        "grpc": _version("grpcio"),
    }


def _num(v: Any) -> float:
    """An ad's number (UNDEFINED, missing or not a number: 0)."""
    if isinstance(v, bool) or not isinstance(v, int | float):
        return 0.0
    return float(v)


def _pool_families(snap: MetricsSnapshot) -> list[Any]:
    info = build_info()
    build = GaugeMetricFamily(
        "mockpool_build_info", "Versions this pool runs (value 1)", labels=list(info)
    )
    build.add_metric(list(info.values()), 1.0)
    now = GaugeMetricFamily(
        "mockpool_time_pool_seconds", "Pool time: pool seconds since the pool started"
    )
    now.add_metric([], snap.now)
    scale = GaugeMetricFamily(
        "mockpool_time_scale", "Pool seconds per real second (0: virtual time)"
    )
    scale.add_metric([], snap.time_scale)
    start = GaugeMetricFamily(
        "mockpool_start_time_seconds", "Unix time of pool time 0 (ads' dates count from it)"
    )
    start.add_metric([], snap.start_date)
    return [build, now, scale, start]


def _accountant_families(snap: MetricsSnapshot) -> list[Any]:
    sub = ["daemon", "submitter", "group"]
    grp = ["daemon", "group"]

    def gauge(name: str, doc: str, labels: list[str]) -> GaugeMetricFamily:
        return GaugeMetricFamily(name, doc, labels=labels)

    a = {
        "prio": gauge("mockpool_accountant_priority", "Real user priority", sub),
        "eprio": gauge(
            "mockpool_accountant_effective_priority",
            "Effective priority (real priority x factor; smaller is better)",
            sub,
        ),
        "factor": gauge("mockpool_accountant_priority_factor", "Priority factor", sub),
        "used": gauge("mockpool_accountant_resources_used", "Slots the submitter holds", sub),
        "wused": gauge(
            "mockpool_accountant_weighted_resources_used",
            "Weighted resources (SlotWeight) the submitter holds",
            sub,
        ),
        "usage": gauge(
            "mockpool_accountant_usage_pool_seconds",
            "Accumulated usage: weighted resources x pool seconds",
            sub,
        ),
    }
    g = {
        "quota": gauge("mockpool_group_quota", "A group's quota this cycle (EffectiveQuota)", grp),
        "config": gauge("mockpool_group_config_quota", "A group's configured quota", grp),
        "subtree": gauge("mockpool_group_subtree_quota", "A group's quota with its subgroups", grp),
        "requested": gauge("mockpool_group_requested", "Resources a group's jobs asked for", grp),
        "used": gauge("mockpool_group_resources_used", "Slots a group's submitters hold", grp),
        "wused": gauge(
            "mockpool_group_weighted_resources_used", "Weighted resources a group holds", grp
        ),
        "usage": gauge(
            "mockpool_group_usage_pool_seconds",
            "A group's accumulated usage: weighted resources x pool seconds",
            grp,
        ),
        "eprio": gauge("mockpool_group_effective_priority", "A group's effective priority", grp),
    }
    for ad in snap.accounting:
        daemon = str(ad.get("NegotiatorName") or "negotiator")
        name = str(ad.get("Name", ""))
        eprio, factor = _num(ad.get("Priority")), _num(ad.get("PriorityFactor"))
        if ad.get("IsAccountingGroup"):
            labels = [daemon, name]
            g["quota"].add_metric(labels, _num(ad.get("EffectiveQuota")))
            g["config"].add_metric(labels, _num(ad.get("ConfigQuota")))
            g["subtree"].add_metric(labels, _num(ad.get("SubtreeQuota")))
            g["requested"].add_metric(labels, _num(ad.get("Requested")))
            g["used"].add_metric(labels, _num(ad.get("ResourcesUsed")))
            g["wused"].add_metric(labels, _num(ad.get("WeightedResourcesUsed")))
            g["usage"].add_metric(labels, _num(ad.get("AccumulatedUsage")))
            g["eprio"].add_metric(labels, eprio)
            continue
        labels = [daemon, name, str(ad.get("AccountingGroup") or "<none>")]
        a["prio"].add_metric(labels, eprio / factor if factor > 0 else 0.0)
        a["eprio"].add_metric(labels, eprio)
        a["factor"].add_metric(labels, factor)
        a["used"].add_metric(labels, _num(ad.get("ResourcesUsed")))
        a["wused"].add_metric(labels, _num(ad.get("WeightedResourcesUsed")))
        a["usage"].add_metric(labels, _num(ad.get("AccumulatedUsage")))
    return [*a.values(), *g.values()]


def families(snap: MetricsSnapshot) -> list[Any]:
    d = ["daemon"]
    cycles = CounterMetricFamily("mockpool_negotiation_cycles", "Negotiation cycles run", labels=d)
    matches = CounterMetricFamily(
        "mockpool_negotiation_matches", "Matches the negotiator made", labels=d
    )
    cycle_s = HistogramMetricFamily(
        "mockpool_negotiation_cycle_duration_pool_seconds",
        "Negotiation cycle durations, pool seconds (real time x time scale)",
        labels=d,
    )
    rejections = CounterMetricFamily(
        "mockpool_rejections", "Rejections the negotiator sent a schedd", labels=d
    )
    jobs = GaugeMetricFamily(
        "mockpool_jobs", "Jobs in a schedd's queue, by JobStatus", labels=["daemon", "state"]
    )
    left = CounterMetricFamily(
        "mockpool_jobs_left_queue",
        "Jobs that left a schedd's queue for its history, by JobStatus (Completed, Removed)",
        labels=["daemon", "state"],
    )
    claims = GaugeMetricFamily("mockpool_claims", "Claims a schedd holds", labels=d)
    keepalives = CounterMetricFamily(
        "mockpool_keepalives", "Keepalive messages a schedd sent", labels=d
    )
    expiries = CounterMetricFamily(
        "mockpool_lease_expiries", "Claim leases that ran out at a startd", labels=d
    )
    exits = CounterMetricFamily("mockpool_job_exits", "Jobs that ended on a startd", labels=d)
    evicted = CounterMetricFamily(
        "mockpool_jobs_evicted", "Jobs a startd evicted (preempted or killed)", labels=d
    )
    lag = GaugeMetricFamily(
        "mockpool_clock_lag_pool_seconds",
        "Worst lateness of a daemon's timers, pool seconds (the actor's loop it shares)",
        labels=d,
    )
    slots = GaugeMetricFamily("mockpool_slots", "Slots by State", labels=["state"])
    ads = GaugeMetricFamily(
        "mockpool_collector_ads", "Ads the collector holds, by type", labels=["daemon", "type"]
    )
    submitter = GaugeMetricFamily(
        "mockpool_submitter_jobs", "A submitter's jobs by state", labels=["submitter", "state"]
    )
    for h in snap.hosts:
        if h.get("lag"):
            for name in h.get("daemons") or []:
                lag.add_metric([name], float(h["lag"].get("max", 0.0)))
        services = h.get("services", {})
        coll = services.get("CollectorService")
        if coll:
            for ad_type, n in sorted(coll.get("ads", {}).items()):  # its name is its address
                ads.add_metric(["collector", ad_type], float(n))
        neg = services.get("NegotiatorService")
        if neg:
            name = str(neg.get("name", "negotiator"))
            cycles.add_metric([name], float(neg.get("cycles", 0)))
            matches.add_metric([name], float(neg.get("matches", 0)))
            hist = neg.get("durations") or {"buckets": [[float("inf"), 0]], "sum": 0.0}
            cycle_s.add_metric(
                [name],
                [(_le(le), float(n)) for le, n in hist["buckets"]],
                float(hist["sum"]),
            )
        sd = services.get("ScheddService")
        if sd:
            for sname, core in sorted(sd.get("schedds", {}).items()):
                by_status = core.get("by_status") or {}
                for code, state in JOB_STATES.items():
                    jobs.add_metric([sname, state], float(by_status.get(code, 0)))
                gone = core.get("left_queue") or {}
                for code in (4, 3):  # Completed, Removed
                    left.add_metric([sname, JOB_STATES[code]], float(gone.get(code, 0)))
                claims.add_metric([sname], float(core.get("claims", 0)))
                rejections.add_metric([sname], float(core.get("rejections", 0)))
                keepalives.add_metric([sname], float(core.get("keepalives", 0)))
        st = services.get("StartdService")
        if st:
            for machine, c in sorted((st.get("by_machine") or {}).items()):
                if c.get("leases_expired"):
                    expiries.add_metric([machine], float(c["leases_expired"]))
                if c.get("job_exits"):
                    exits.add_metric([machine], float(c["job_exits"]))
                if c.get("jobs_evicted"):
                    evicted.add_metric([machine], float(c["jobs_evicted"]))
    for state, n in sorted(snap.slot_states.items()):
        slots.add_metric([state], float(n))
    for ad in snap.submitters:
        for key, state in _SUBMITTER_STATES:
            submitter.add_metric([str(ad.get("Name", "")), state], _num(ad.get(key)))
    return [
        *_pool_families(snap),
        cycles,
        matches,
        cycle_s,
        rejections,
        jobs,
        left,
        claims,
        keepalives,
        expiries,
        exits,
        evicted,
        lag,
        slots,
        ads,
        submitter,
        *_accountant_families(snap),
    ]


def _le(bound: float) -> str:
    return "+Inf" if bound == float("inf") else repr(float(bound))


def exposition(snap: MetricsSnapshot, *, htcondor: bool = False) -> bytes:
    """The Prometheus text format of one snapshot (what ``metrics.prom`` holds)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(PoolMetrics(lambda: snap, htcondor=htcondor))
    return generate_latest(registry)


_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+)$")
_VERSIONS = re.compile(r'(version|python|ray|grpc)="[^"]*"')


def shape(text: str) -> str:
    """An exposition's names, types, help and labels with every value blanked (and the
    versions of ``mockpool_build_info``): what the golden files under
    tests/data/golden/metrics/ hold, and what a dashboard depends on."""
    out = []
    for line in text.splitlines():
        m = _SAMPLE.match(line)
        if m is None:
            out.append(line)
            continue
        labels = m.group(2) or ""
        if m.group(1) == "mockpool_build_info":
            labels = _VERSIONS.sub(r'\1="*"', labels)
        out.append(f"{m.group(1)}{labels} _")
    return "\n".join(out) + "\n"
