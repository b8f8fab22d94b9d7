"""The collector's own ad ("Collector"): who it is and the pool's totals, as HTCondor's
collector publishes them (``HostsTotal``, ``HostsClaimed``, ``RunningJobs``, ...)."""

from __future__ import annotations

from ..claimid import sinful
from ..classad import ClassAd
from ..condor_version import CONDOR_PLATFORM, CONDOR_VERSION
from .store import MACHINE, AdStore

__all__ = ["collector_ad", "pool_totals"]


def pool_totals(store: AdStore, now: float | None = None) -> dict[str, int]:
    """Slot ads by State (HTCondor counts a State by its first letter: C/U/O; the store
    keeps the counts as slot ads come and go) and the submitters' running and idle
    jobs (read at date ``now``)."""
    states = store.slot_states()
    machine_ads = store.counts().get(MACHINE, 0)
    total = machine_ads - states[None]
    claimed, unclaimed, owner = states["C"], states["U"], states["O"]
    running = idle = submitter_ads = 0
    for rec in store.records("Submitter"):
        submitter_ads += 1
        r = rec.ad.get_value("RunningJobs", now=now, rng=store.rng)
        i = rec.ad.get_value("IdleJobs", now=now, rng=store.rng)
        if type(r) is int and type(i) is int:
            running += r
            idle += i
    return {
        "HostsTotal": total,
        "HostsClaimed": claimed,
        "HostsUnclaimed": unclaimed,
        "HostsOwner": owner,
        "RunningJobs": running,
        "IdleJobs": idle,
        "MachineAds": machine_ads,
        "SubmitterAds": submitter_ads,
    }


def collector_ad(
    store: AdStore,
    *,
    name: str,
    address: str,
    start_time: int,
    sequence: int,
    update_interval: int,
    now: int = 0,
    machine: str = "",
    duty_cycle: float = 0.0,
) -> ClassAd:
    """The Collector ad with the store's current totals (``start_time`` and ``now``:
    dates; ``machine``: its host; ``duty_cycle``: its loop's RecentDaemonCoreDutyCycle,
    which HTCondor's tools read as the daemon's health)."""
    ad = ClassAd()
    ad["MyType"] = "Collector"
    ad["Name"] = name
    ad["Machine"] = machine or name.rpartition("@")[2]
    ad["CondorVersion"] = CONDOR_VERSION
    ad["CondorPlatform"] = CONDOR_PLATFORM
    if address:
        ad["MyAddress"] = sinful(address)
        ad["CollectorIpAddr"] = sinful(address)
    ad["DaemonStartTime"] = start_time
    ad["MyCurrentTime"] = now
    ad["UpdateSequenceNumber"] = sequence
    ad["RecentDaemonCoreDutyCycle"] = float(duty_cycle)
    if update_interval > 0:
        ad["UpdateInterval"] = 24 * update_interval  # as HTCondor's init_classad
    for attr, value in pool_totals(store, now).items():
        ad[attr] = value
    return ad
