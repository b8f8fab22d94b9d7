"""The negotiator's own ad (MyType Negotiator), without its cycle statistics."""

from __future__ import annotations

from ..claimid import sinful
from ..classad import ClassAd
from ..condor_version import CONDOR_PLATFORM, CONDOR_VERSION

__all__ = ["negotiator_ad"]


def negotiator_ad(
    name: str,
    address: str,
    *,
    start_time: int,
    now: float,
    update_interval: float,
    machine: str = "",
    duty_cycle: float = 0.0,
) -> ClassAd:
    """The Negotiator ad without its cycle statistics (``StatsHistory.publish`` adds them);
    ``machine``: its host; ``duty_cycle``: its loop's RecentDaemonCoreDutyCycle, which
    HTCondor's tools read as the daemon's health."""
    ad = ClassAd()
    ad["MyType"] = "Negotiator"
    ad["Name"] = name
    ad["Machine"] = machine or name.rpartition("@")[2]
    ad["NegotiatorName"] = name
    ad["CondorVersion"] = CONDOR_VERSION
    ad["CondorPlatform"] = CONDOR_PLATFORM
    ad["MyAddress"] = ad["NegotiatorIpAddr"] = sinful(address) if address else ""
    ad["DaemonStartTime"] = start_time
    ad["MyCurrentTime"] = int(now)
    ad["UpdateInterval"] = int(update_interval)
    ad["RecentDaemonCoreDutyCycle"] = float(duty_cycle)
    return ad
