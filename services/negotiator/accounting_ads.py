"""The negotiator's Accounting ads (matchmaker.cpp forwardAccountingData /
forwardGroupAccounting): one per submitter the accountant knows and one per accounting
group, with HTCondor's attribute names. Pure: the accountant keeps pool seconds; the ads'
dates (LastUpdate, BeginUsageTime, LastUsageTime) are Unix times counted from ``epoch``,
the date of pool time 0, and 0 for never (as HTCondor's)."""

from __future__ import annotations

from ..classad import ClassAd
from .accountant import Accountant
from .groups import ROOT, Group, GroupTree

__all__ = ["accounting_ads"]


def _usage(ad: ClassAd, acct: Accountant, name: str, epoch: int) -> None:
    rec = acct.records.get(name)
    ad["Priority"] = acct.eup(name)
    ad["PriorityFactor"] = acct.factor(name)
    ad["ResourcesUsed"] = rec.resources_count if rec else 0
    ad["WeightedResourcesUsed"] = rec.resources_used if rec else 0.0
    used = rec.accumulated_usage if rec else 0.0
    ad["AccumulatedUsage"] = used
    ad["WeightedAccumulatedUsage"] = used
    begin = rec.begin_usage_time if rec else None
    last = rec.last_usage_time if rec else None
    ad["BeginUsageTime"] = epoch + int(begin) if begin is not None else 0
    ad["LastUsageTime"] = epoch + int(last) if last is not None else 0


def accounting_ads(
    acct: Accountant, tree: GroupTree | None, negotiator: str, epoch: int = 0
) -> list[ClassAd]:
    """Submitter ads first (by name), then the groups breadth first from ``<none>``."""
    acct = acct.copy()  # reading a factor may fix it (HTCondor's read-with-write)
    last = epoch + int(acct.last_update) if acct.last_update is not None else 0
    out: list[ClassAd] = []

    def base(name: str, is_group: bool, group: str) -> ClassAd:
        ad = ClassAd()
        ad["MyType"] = "Accounting"
        ad["Name"] = name
        ad["NegotiatorName"] = negotiator
        ad["IsAccountingGroup"] = is_group
        ad["AccountingGroup"] = group
        ad["LastUpdate"] = last
        ad["Ceiling"] = -1
        ad["Floor"] = 0
        _usage(ad, acct, name, epoch)
        return ad

    for name in sorted(acct.records):
        if acct.is_group(name):
            continue
        out.append(base(name, False, acct.group_of(name)))
    groups = tree.groups if tree is not None else [Group(ROOT, accept_surplus=True)]
    for g in groups:
        ad = base(g.name, True, g.parent.name if g.parent is not None else g.name)
        ad["EffectiveQuota"] = g.quota
        ad["ConfigQuota"] = g.config_quota
        ad["SubtreeQuota"] = g.subtree_quota
        ad["GroupSortKey"] = g.sort_key
        ad["SurplusPolicy"] = (
            "regroup" if g.autoregroup else ("byquota" if g.accept_surplus else "no")
        )
        ad["Requested"] = g.currently_requested
        out.append(ad)
    return out
