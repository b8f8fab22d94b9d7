"""The pie: fair share among the submitters of one group, spun until nothing changes.

Follows matchmaker.cpp's ``negotiateWithGroup``, ``calculateNormalizationFactor``,
``calculatePieLeft``, ``calculateSubmitterLimit`` and ``SubmitterLimitPermits``:

- share_i = (max EUP / EUP_i) / sum_j (max EUP / EUP_j), each submitter name counted once
  (EUP is the accountant's effective priority, RUP x factor).
- The pie is min(untrimmed slot weight total, group quota);
  limit_i = max(0, share_i x pie - usage_i), with usage_i the submitter's weighted usage
  now (this cycle's matches included); pieLeft = the sum of the limits over the
  submitter entries (one per submitter and schedd).
- In a group, the limit for unclaimed slots is also capped by what the group has left:
  quota - group usage at the start of the spin (``submitterLimitUnclaimed``).
- Submitters go in order of EUP, then starvation usage / (usage + limit), sorted once,
  on the first spin. Each gets min(limit, pieLeft); a match is allowed while
  used + cost <= limit, or when the submitter has used nothing yet in this spin and its
  limit is > 0 (HTCondor's rule against crumbs: one match may round the limit up).
- A submitter that got all it asked for leaves the pie; one that hit its limit stays
  for the next spin. Spins repeat while pieLeft shrank or a submitter left, and slots and
  submitters remain.

Pure: negotiating with one submitter (matching) is the caller's callback.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Generic, Protocol, TypeVar

__all__ = [
    "DONE",
    "RESUME",
    "Limits",
    "Priorities",
    "SpinStats",
    "SubmitterLimits",
    "negotiate_with_group",
    "permits",
    "starvation",
]

DONE, RESUME = "done", "resume"  # HTCondor's MM_DONE / MM_RESUME
INT_MAX = 2**31 - 1
FLT_MAX = 3.4028234663852886e38
DBL_MIN = sys.float_info.min

T = TypeVar("T")


class Priorities(Protocol):
    def eup(self, name: str) -> float: ...
    def resources_used(self, name: str) -> float: ...


@dataclass(frozen=True)
class Limits:
    """One submitter's figures for one spin (calculateSubmitterLimit)."""

    limit: float
    limit_unclaimed: float
    usage: float
    share: float
    prio: float


@dataclass(frozen=True)
class SubmitterLimits:
    """What a submitter may take in one spin: ``limit`` (after the pieLeft cap) for claimed slots,
    ``limit_unclaimed`` for unclaimed ones; ``ignore_limit`` on the first spin when
    preemption is considered (past the limit only startd-rank preemption may match)."""

    limit: float
    limit_unclaimed: float
    ignore_limit: bool
    spin: int
    pie_left_small: bool = False  # a later spin with limit or pieLeft < the lightest slot: skip


@dataclass
class SpinStats:
    pies: int = 0
    pie_spins: int = 0


def starvation(usage: float, limit: float) -> float:
    allocated = usage + limit
    return usage / allocated if allocated > 0 else FLT_MAX


def permits(cost: float, used: float, allowed: float) -> bool:
    """SubmitterLimitPermits: within the limit, or the first match of the spin."""
    return used + cost <= allowed or (used <= 0 and allowed > 0)


def _normalization(names: Sequence[str], acct: Priorities) -> tuple[float, float]:
    mx = DBL_MIN
    for n in names:
        mx = max(mx, acct.eup(n))
    normal = 0.0
    for n in dict.fromkeys(names):
        normal += mx / acct.eup(n)
    return mx, normal


def submitter_limits(
    name: str,
    *,
    acct: Priorities,
    max_prio: float,
    normal: float,
    pie: float,
    group: str | None,
    group_quota: float,
    group_usage: float,
    consider_preemption: bool,
) -> Limits:
    prio = acct.eup(name)
    usage = acct.resources_used(name)
    share = max_prio / (prio * normal)
    limit = max(0.0, share * pie - usage)
    unclaimed = limit
    if group is not None:
        unclaimed = min(unclaimed, max(0.0, group_quota - group_usage))
    if not consider_preemption:
        limit = unclaimed
    return Limits(limit, unclaimed, usage, share, prio)


@dataclass
class _Entry(Generic[T]):
    item: T
    name: str
    idle: int
    starvation: float = FLT_MAX


def negotiate_with_group(
    items: Sequence[T],
    *,
    name: Callable[[T], str],
    idle: Callable[[T], int],
    acct: Priorities,
    negotiate: Callable[[T, SubmitterLimits], tuple[str, float]],
    slots_left: Callable[[], bool],
    untrimmed_weight: float,
    min_slot_weight: float,
    group: str | None = None,
    group_quota: float = INT_MAX,
    consider_preemption: bool = True,
    log: Callable[[str], None],
    on_spin: Callable[[int], None] | None = None,
    on_sorted: Callable[[list[T]], None] | None = None,
    stats: SpinStats | None = None,
    share_limited: set[str] | None = None,
) -> None:
    """negotiateWithGroup: spin the pie for ``items`` (submitter entries).

    ``negotiate(item, limits)`` negotiates with one entry and returns (DONE or RESUME, the
    weighted cost it matched); with ``limits.pie_left_small`` it must not match (HTCondor
    logs "skipped as pieLeft < minSlotWeight" and resumes next spin). ``acct`` must
    reflect each match (usage grows)."""
    stats = stats if stats is not None else SpinStats()
    stats.pies += 1
    entries = [_Entry(it, name(it), idle(it)) for it in items]
    spin = 0
    while True:
        spin += 1
        stats.pie_spins += 1
        ignore = spin == 1 and consider_preemption
        group_usage = acct.resources_used(group) if group is not None else 0.0
        if not ignore and group is not None and group_usage >= group_quota:
            log(f"Group {group} is using its quota {group_quota:g} - halting negotiation")
            break
        if not consider_preemption:
            entries = [e for e in entries if e.idle > 0]
        names = [e.name for e in entries]
        max_prio, normal = _normalization(names, acct)
        pie = min(untrimmed_weight, group_quota)

        limits = partial(
            submitter_limits,
            acct=acct,
            max_prio=max_prio,
            normal=normal,
            pie=pie,
            group=group,
            group_quota=group_quota,
            group_usage=group_usage,
            consider_preemption=consider_preemption,
        )

        pie_left = 0.0
        for e in entries:
            lim = limits(e.name)
            e.starvation = starvation(lim.usage, lim.limit)
            pie_left += lim.limit
        if not consider_preemption and pie_left <= 0:
            log(
                f"Halting negotiation: no slots available to match (preemption disabled,"
                f"{int(slots_left())} trimmed slots,pieLeft={pie_left:.3f})"
            )
            break
        if spin == 1:
            # Python's sort is stable: equal submitters keep the caller's order.
            entries.sort(key=lambda e: (acct.eup(e.name), e.starvation))
            if on_sorted is not None:
                on_sorted([e.item for e in entries])
        if on_spin is not None:
            on_spin(spin)
        pie_left_orig, count_orig = pie_left, len(entries)
        kept: list[_Entry[T]] = []
        for k, e in enumerate(entries):
            if not ignore and group is not None and acct.resources_used(group) >= group_quota:
                kept.extend(entries[k:])
                break
            lim = limits(e.name)
            limit = min(lim.limit, pie_left)
            if e.idle <= 0:
                result = DONE
            else:
                small = (limit < min_slot_weight or pie_left < min_slot_weight) and spin > 1
                result, used = negotiate(
                    e.item, SubmitterLimits(limit, lim.limit_unclaimed, ignore, spin, small)
                )
                pie_left -= used
            if result == RESUME:
                if share_limited is not None:
                    share_limited.add(e.name)
                kept.append(e)
        entries = kept
        if not (
            (pie_left < pie_left_orig or len(entries) < count_orig) and entries and slots_left()
        ):
            break
    log(f" negotiateWithGroup resources used submitterAds length {len(entries)} ")
