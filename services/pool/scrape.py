"""What one Prometheus scrape reads from a running pool: every actor's status, its slots
by State, the submitter and Accounting ads (and, for HTCondor's metric names, the slots'
resources and the negotiator's and schedds' own ads)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from .metrics import MetricsSnapshot

__all__ = ["ACCOUNTING", "scrape"]

# the Accounting ad attributes the metrics read (negotiator/accounting_ads.py)
ACCOUNTING = (
    "Name",
    "NegotiatorName",
    "IsAccountingGroup",
    "AccountingGroup",
    "Priority",
    "PriorityFactor",
    "ResourcesUsed",
    "WeightedResourcesUsed",
    "AccumulatedUsage",
    "EffectiveQuota",
    "ConfigQuota",
    "SubtreeQuota",
    "Requested",
)


def _plain(ad: Any) -> dict[str, Any]:
    """An ad's evaluated attributes (UNDEFINED ones left out)."""
    return {k: v for k in ad if (v := ad.get_value(k)) is not None}


async def scrape(
    client: Any,
    hosts: list[dict[str, Any]],
    *,
    now: float,
    time_scale: float,
    start_date: float,
    htcondor: bool = False,
) -> MetricsSnapshot:
    """The snapshot, read through ``client`` (the pool's collector) beside ``hosts`` (every
    actor's status); ``time_scale`` 0 for a virtual pool."""
    slot_attrs = ["State", "Activity", "Cpus", "Memory"] if htcondor else ["State"]
    slots = await client.query("Machine", projection=slot_attrs)
    sub_attrs = ["Name", "IdleJobs", "RunningJobs", "HeldJobs"]
    subs = await client.query("Submitter", projection=sub_attrs)
    accounting = await client.query("Accounting", projection=list(ACCOUNTING))
    snap = MetricsSnapshot(
        hosts=hosts,
        slot_states=Counter(str(a.get_value("State", "Unknown")) for a in slots),
        submitters=[{k: a.get_value(k) for k in sub_attrs} for a in subs],
        accounting=[{k: a.get_value(k) for k in ACCOUNTING} for a in accounting],
        now=now,
        time_scale=time_scale,
        start_date=start_date,
    )
    if htcondor:
        snap.slots = [{k: a.get_value(k) for k in slot_attrs} for a in slots]
        snap.negotiator_ads = [_plain(a) for a in await client.query("Negotiator")]
        snap.schedd_ads = [_plain(a) for a in await client.query("Scheduler")]
    return snap
