"""Prometheus metrics of a pool, live or virtual (``mockpool_`` names, base units).

A scrape asks the pool for its daemons' status (counters each daemon keeps anyway) and
the collector for slot states and submitter ads, and turns them into metric families;
nothing is counted twice and nothing runs between scrapes. A live pool serves them over
HTTP on ``[pool] metrics_port`` (on the spec's host: loopback unless it says otherwise);
every run also writes them, as Prometheus' text format, to ``metrics.prom`` in its output
folder.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

__all__ = ["PoolMetrics", "MetricsSnapshot", "exposition"]


@dataclass
class MetricsSnapshot:
    """What one scrape reads from a pool."""

    hosts: list[dict[str, Any]] = field(default_factory=list)  # DaemonHost.status()
    slot_states: Counter[str] = field(default_factory=Counter)  # Machine ads by State
    submitters: list[dict[str, Any]] = field(default_factory=list)  # Name, IdleJobs, ...


def _actor(h: dict[str, Any]) -> str:
    return str(h.get("identity") or f"{h.get('role', '?')}@{h.get('address', '')}")


class PoolMetrics(Collector):
    """A Prometheus collector over ``read()``, called at each scrape."""

    def __init__(self, read: Callable[[], MetricsSnapshot]) -> None:
        self._read = read

    def collect(self) -> Iterator[Any]:
        return iter(families(self._read()))


def families(snap: MetricsSnapshot) -> list[Any]:
    cycles = CounterMetricFamily(
        "mockpool_negotiation_cycles", "Negotiation cycles run", labels=["daemon"]
    )
    matches = CounterMetricFamily(
        "mockpool_negotiation_matches", "Matches the negotiator made", labels=["daemon"]
    )
    cycle_s = GaugeMetricFamily(
        "mockpool_negotiation_cycle_seconds",
        "Duration of the last negotiation cycle, pool seconds",
        labels=["daemon"],
    )
    rejections = CounterMetricFamily(
        "mockpool_rejections", "Rejections the schedds were told of", labels=["daemon"]
    )
    jobs = GaugeMetricFamily("mockpool_jobs", "Jobs in the queue", labels=["daemon", "state"])
    claims = GaugeMetricFamily("mockpool_claims", "Claims a schedd holds", labels=["daemon"])
    keepalives = CounterMetricFamily(
        "mockpool_keepalives", "Keepalive messages a schedd actor sent", labels=["daemon"]
    )
    expiries = CounterMetricFamily(
        "mockpool_lease_expiries", "Claim leases that ran out at a startd", labels=["daemon"]
    )
    exits = CounterMetricFamily("mockpool_job_exits", "Jobs that ended", labels=["daemon"])
    lag = GaugeMetricFamily(
        "mockpool_clock_lag_seconds",
        "Worst lateness of an actor's timers, pool seconds",
        labels=["daemon"],
    )
    slots = GaugeMetricFamily("mockpool_slots", "Slots by State", labels=["state"])
    ads = GaugeMetricFamily(
        "mockpool_collector_ads", "Ads the collector holds, by type", labels=["daemon", "type"]
    )
    submitter = GaugeMetricFamily(
        "mockpool_submitter_jobs", "A submitter's jobs by state", labels=["submitter", "state"]
    )
    for h in snap.hosts:
        actor = _actor(h)
        if h.get("lag"):
            lag.add_metric([actor], float(h["lag"].get("max", 0.0)))
        services = h.get("services", {})
        coll = services.get("CollectorService")
        if coll:
            for ad_type, n in sorted(coll.get("ads", {}).items()):
                ads.add_metric(["collector", ad_type], float(n))
        neg = services.get("NegotiatorService")
        if neg:
            name = str(neg.get("name", "negotiator"))
            cycles.add_metric([name], float(neg.get("cycles", 0)))
            matches.add_metric([name], float(neg.get("matches", 0)))
            last = neg.get("last") or {}
            cycle_s.add_metric([name], float(last.get("duration", 0.0)))
        sd = services.get("ScheddService")
        if sd:
            stats = sd.get("stats", {})
            rejections.add_metric([actor], float(stats.get("rejections", 0)))
            keepalives.add_metric([actor], float(stats.get("keepalives", 0)))
            for sname, core in sd.get("schedds", {}).items():
                for state in ("idle", "running", "held", "removed"):
                    jobs.add_metric([sname, state], float(core.get(state, 0)))
                claims.add_metric([sname], float(core.get("claims", 0)))
        st = services.get("StartdService")
        if st:
            expiries.add_metric([actor], float(st.get("leases_expired", 0)))
            exits.add_metric([actor], float(st.get("job_exits", 0)))
    for state, n in sorted(snap.slot_states.items()):
        slots.add_metric([state], float(n))
    for ad in snap.submitters:
        for key, state in (("IdleJobs", "idle"), ("RunningJobs", "running"), ("HeldJobs", "held")):
            submitter.add_metric([str(ad.get("Name", "")), state], float(ad.get(key) or 0))
    return [
        cycles,
        matches,
        cycle_s,
        rejections,
        jobs,
        claims,
        keepalives,
        expiries,
        exits,
        lag,
        slots,
        ads,
        submitter,
    ]


def exposition(snap: MetricsSnapshot) -> bytes:
    """The Prometheus text format of one snapshot (what ``metrics.prom`` holds)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(PoolMetrics(lambda: snap))
    return generate_latest(registry)
