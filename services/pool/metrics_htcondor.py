"""The metric names HTCondor sites already graph, for a mock pool (opt-in:
``[pool] metrics_htcondor = true`` or ``--metrics-htcondor``).

Two conventions, both of golang-htcondor's ``metricsd`` (the Prometheus successor of
``condor_gangliad``; docs/metrics.md has the mapping):

- pool totals, ``htcondor_pool_*``: slot ads counted and summed (Cpus, Memory; "used"
  is what Busy slots hold), schedds and jobs;
- one family per numeric ad attribute, ``htcondor_<attribute in lower case>``, labelled
  ``daemon`` (the ad's Name), ``machine`` and ``type`` (its MyType), as a gangliad metric
  definition would publish it: here every ``LastNegotiationCycle*`` attribute of the
  Negotiator ad and the Scheduler ad's job totals.

Values are the ads' own: a duration is pool seconds, as every time in a mock pool's ads.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from prometheus_client.core import GaugeMetricFamily

if TYPE_CHECKING:
    from .metrics import MetricsSnapshot

__all__ = ["SCHEDULER_ATTRIBUTES", "htcondor_families"]

# the Scheduler ad's numbers published under their gangliad-style names
SCHEDULER_ATTRIBUTES = (
    "TotalIdleJobs",
    "TotalRunningJobs",
    "TotalHeldJobs",
    "TotalRemovedJobs",
    "TotalJobAds",
)
_LABELS = ["daemon", "machine", "type"]
_BAD = re.compile(r"[^a-z0-9_:]")


def _number(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    return float(v)


def _attr_name(attr: str) -> str:
    return "htcondor_" + _BAD.sub("_", attr.lower())


def _pool(snap: MetricsSnapshot) -> list[Any]:
    def gauge(name: str, doc: str, value: float) -> GaugeMetricFamily:
        g = GaugeMetricFamily(name, doc)
        g.add_metric([], value)
        return g

    states: dict[str, int] = {}
    cpus = cpus_used = memory = memory_used = 0.0
    for ad in snap.slots:
        state = str(ad.get("State") or "Unknown")
        states[state] = states.get(state, 0) + 1
        c, m = _number(ad.get("Cpus")) or 0.0, _number(ad.get("Memory")) or 0.0
        cpus += c
        memory += m
        if ad.get("Activity") == "Busy":
            cpus_used += c
            memory_used += m
    by_state = GaugeMetricFamily(
        "htcondor_pool_machines_state", "Slot ads by State", labels=["state"]
    )
    for state, n in sorted(states.items()):
        by_state.add_metric([state], float(n))
    jobs = sum(
        _number(ad.get(a)) or 0.0
        for ad in snap.schedd_ads
        for a in ("TotalIdleJobs", "TotalRunningJobs", "TotalHeldJobs")
    )
    return [
        gauge("htcondor_pool_machines_total", "Slot ads in the collector", float(len(snap.slots))),
        by_state,
        gauge("htcondor_pool_cpus_total", "Cpus of every slot ad", cpus),
        gauge("htcondor_pool_cpus_used", "Cpus of Busy slots", cpus_used),
        gauge("htcondor_pool_memory_mb_total", "Memory (MB) of every slot ad", memory),
        gauge("htcondor_pool_memory_mb_used", "Memory (MB) of Busy slots", memory_used),
        gauge("htcondor_pool_schedds_total", "Scheduler ads", float(len(snap.schedd_ads))),
        gauge("htcondor_pool_jobs_total", "Idle, running and held jobs of every schedd", jobs),
    ]


def _per_attribute(snap: MetricsSnapshot) -> list[Any]:
    found: dict[str, GaugeMetricFamily] = {}

    def add(ad: dict[str, Any], attr: str, ad_type: str) -> None:
        value = _number(ad.get(attr))
        if value is None:
            return
        name = _attr_name(attr)
        fam = found.get(name)
        if fam is None:
            fam = found[name] = GaugeMetricFamily(
                name, f"The {ad_type} ad's {attr}", labels=_LABELS
            )
        labels = [str(ad.get("Name", "")), str(ad.get("Machine", "")), ad_type]
        fam.add_metric(labels, value)

    for ad in snap.negotiator_ads:
        for attr in sorted(a for a in ad if a.startswith("LastNegotiationCycle")):
            add(ad, attr, "Negotiator")
    for ad in snap.schedd_ads:
        for attr in SCHEDULER_ATTRIBUTES:
            add(ad, attr, "Scheduler")
    return [found[n] for n in sorted(found)]


def htcondor_families(snap: MetricsSnapshot) -> list[Any]:
    return _pool(snap) + _per_attribute(snap)
