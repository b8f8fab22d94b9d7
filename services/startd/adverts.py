"""The startd's ad cadence: when its machines' slot ads go to the collector, and which.

HTCondor's startd sends every slot's ads every UPDATE_INTERVAL (default 300), and the ads
of slots that changed one second after the first change asks for an update
(``ResMgr::rip_update_needed``), so a job's exit and the next job on its claim are one
update. Here: a full round at start and every UPDATE_INTERVAL after the previous full
one; a round of the changed machines ``UPDATE_DELAY`` after a change noticed while none
is due or on its way (full if the full round fell due meanwhile). One round is on its
way at a time; changes meanwhile go in the next, ``UPDATE_DELAY`` after its ack. A
round that fails is sent again, whole, ``RETRY_INTERVAL`` after it was made. Ads of
deleted dynamic slots are invalidated (once sent, the invalidations are forgotten; a
name in use again is not invalidated: its new ad replaces the old).

Which slots a round carries (only the changed ones in a round for changes) is decided
against what was last built for each slot, by the builder: :class:`RecordAds` makes the
collector's own records (the virtual kernel, an in-process collector); the live shell's
wire builder keeps the same decisions over a cache of encoded bytes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from ..classad import ClassAd
from ..classad.ad import shared_binding
from ..collector.collector import CollectorUpdate
from ..contract import Ready
from ..messages import CollectorAdvertise
from .slots import VOLATILE, VOLATILE_KINDS, Slot, private_ad, version_ad, volatile_values

if TYPE_CHECKING:
    from .machine import Machine

log = logging.getLogger(__name__)

__all__ = ["RETRY_INTERVAL", "UPDATE_DELAY", "AdBuilder", "AdCadence", "RecordAds", "to_send"]

RETRY_INTERVAL = 10.0  # pool seconds between retries to an unreachable peer
UPDATE_DELAY = 1.0  # pool seconds from a slot's change to the update that carries it

A = TypeVar("A")  # a slot's built ads: the records, or their bytes (the live codec)


class AdBuilder(Protocol):
    """Turns a round's machines into the updates of one CollectorAdvertise."""

    def build(
        self, machines: list[Machine], now: float, invalidated: list[str], *, only_changed: bool
    ) -> list[Any]: ...

    def forget(self, slot_name: str) -> None:
        """Build ``slot_name``'s ads again next time (not sent, or removed)."""
        ...


def to_send(
    machines: list[Machine],
    cache: dict[str, tuple[Slot, int, A, A]],
    build: Callable[[Machine, Slot, int], tuple[A, A]],
    *,
    only_changed: bool,
) -> Iterator[tuple[Slot, int, tuple[Slot, int, A, A]]]:
    """Each slot whose ads go in this update (``only_changed``: only those changed since
    ``cache`` last built them), with the update's sequence number (one per machine per
    round) and the slot's cached ads, built (``build``) when the slot changed."""
    for m in machines:
        seq = m.next_sequence()
        for slot in m.ordered_slots():
            cached = cache.get(slot.name)
            stale = cached is None or cached[0] is not slot or cached[1] != slot.version
            if only_changed and not stale:
                continue
            if stale:
                cached = cache[slot.name] = (slot, slot.version, *build(m, slot, seq))
            assert cached is not None
            yield slot, seq, cached


class RecordAds:
    """Updates as the collector's own records: no message is built or decoded. Each
    slot's ad is a new ad sharing the values of the slot's current one (built when the
    slot changed), with this update's clocks."""

    def __init__(self, ad_epoch: int) -> None:
        self.ad_epoch = ad_epoch
        # slot name -> (slot, its version built, its version_ad (clocks of some earlier
        # read), its private ad)
        self._built: dict[str, tuple[Slot, int, ClassAd, ClassAd]] = {}

    def forget(self, slot_name: str) -> None:
        self._built.pop(slot_name, None)

    def build(
        self, machines: list[Machine], now: float, invalidated: list[str], *, only_changed: bool
    ) -> list[CollectorUpdate]:
        out: list[CollectorUpdate] = []
        for slot_name in invalidated:
            for ad_type in ("Machine", "MachinePrivate"):
                key = ClassAd({"Name": slot_name})
                out.append(CollectorUpdate(len(out), ad_type, key, invalidate=True))

        def build(m: Machine, slot: Slot, seq: int) -> tuple[ClassAd, ClassAd]:
            # the slot's one build of its version, shared with its policy checks
            return version_ad(slot, m.info, now, seq), private_ad(slot, m.info)

        epoch = self.ad_epoch
        for slot, seq, (_, _, pub, priv) in to_send(
            machines, self._built, build, only_changed=only_changed
        ):
            # the slot's ad with this update's clocks (the base holds them in place), their
            # bindings shared by the slots that read alike (the time, the update's seq)
            clocks = map(
                shared_binding, VOLATILE, VOLATILE_KINDS, volatile_values(slot, now, seq, epoch)
            )
            out.append(CollectorUpdate(len(out), "Machine", ClassAd.from_exprs(clocks, pub)))
            out.append(CollectorUpdate(len(out), "MachinePrivate", priv.copy()))
        return out


@dataclass(slots=True)
class _Round:
    made: float  # the pool time it was made (a failed one is sent again 10 s on)
    full: bool
    names: list[str]  # the machines it carries
    machines: list[Machine]
    versions: list[int] = field(default_factory=list)  # each machine's, as its ads were built
    updates: list[Any] = field(default_factory=list)
    built: int = 0  # machines whose ads are in ``updates``
    corr: str = ""  # once sent


class AdCadence:
    """When the ads go, what a round carries, and what its ack or failure does."""

    def __init__(self, interval: float, builder: AdBuilder) -> None:
        self.interval = interval
        self.builder = builder
        self.next_full: float | None = None  # None: not started
        self._for_changes: float | None = None  # a round for changes is due then
        self._retry: float | None = None  # a failed round is sent again then
        self._building: _Round | None = None  # a round whose ads are being built
        self._flight: _Round | None = None
        self._rounds = 0
        # machines whose ads one tick builds (None: all; the live shell's fairness: a
        # round of 2,500 slots held its loop 0.2 s)
        self.per_tick: int | None = None
        self._invalidate: list[tuple[str, str]] = []  # (machine, slot name) to invalidate

    def start(self, now: float) -> None:
        self.next_full = now  # everything at start

    def due(self) -> float | None:
        """When the next round is due (None: not before a change, or an ack)."""
        if self._building is not None:
            return self._building.made  # the rest of its ads
        if self.next_full is None or self._flight is not None:
            return None
        if self._retry is not None:
            return self._retry
        if self._for_changes is not None:
            return self._for_changes
        return self.next_full

    def starting(self, now: float) -> bool:
        """Whether a tick at ``now`` begins a round."""
        due = self.due()
        return self._building is None and due is not None and due <= now

    def notice(self, now: float, changed: bool) -> None:
        """After a call into the core: a change with nothing due or on its way asks for
        a round ``UPDATE_DELAY`` on (what else changes meanwhile goes with it)."""
        if (
            changed
            and self.next_full is not None
            and now < self.next_full
            and self._flight is None
            and self._building is None
            and self._retry is None
            and self._for_changes is None
        ):
            self._for_changes = now + UPDATE_DELAY

    def round(
        self,
        now: float,
        machines: dict[str, Machine],
        changed: set[str],
        collector: str,
        stats: dict[str, int],
        ready: Ready,
    ) -> None:
        """The round due at ``now``: its CollectorAdvertise in ``ready`` (nothing when
        there is nothing to send), its ads built ``per_tick`` machines a tick."""
        r = self._building
        if r is None:
            r = self._building = self._begin(now, machines, changed)
        take = r.machines[r.built : None if self.per_tick is None else r.built + self.per_tick]
        # each machine's removed slots are taken as its ads are built: one removed after
        # the round began but before its machine's tick would otherwise be missing from
        # the round while the p-slot's ad, built later, already has its resources back
        # (the collector would hold both, over the p-slot's total, until the next round)
        gone = self.invalidated(take, machines, backlog=r.built == 0)
        r.versions += [m.version for m in take]
        r.updates += self.builder.build(take, r.made, gone, only_changed=not r.full)
        r.built += len(take)
        if r.built < len(r.machines):
            return  # the next machines' ads next tick
        self._building = None
        if not r.updates:
            return
        if not collector:  # nowhere to send them: as a failure (not counted)
            self._failed(r.made, r.names, changed)
            return
        self._rounds += 1
        stats["advertise_rounds"] += 1
        r.corr = f"ads:{self._rounds}"
        self._flight = r
        ready.send(collector, CollectorAdvertise(r.corr, r.updates))

    def _begin(self, now: float, machines: dict[str, Machine], changed: set[str]) -> _Round:
        assert self.next_full is not None
        full = now >= self.next_full
        names = list(machines) if full else sorted(changed)
        changed.clear()
        self._for_changes = self._retry = None
        if full:
            self.next_full = now + self.interval
        batch = [m for n in names if (m := machines.get(n)) is not None]
        return _Round(now, full, names, batch)

    def invalidated(
        self, batch: list[Machine], machines: dict[str, Machine], *, backlog: bool = True
    ) -> list[str]:
        """The names of the slots whose ads are to be invalidated: these machines'
        removed slots, and (``backlog``) those of rounds not yet acked."""
        fresh: list[tuple[str, str]] = []
        for m in batch:
            for slot_name in m.take_removed():
                fresh.append((m.name, slot_name))
                self.builder.forget(slot_name)
        self._invalidate += fresh
        names = []
        for machine_name, slot_name in self._invalidate if backlog else fresh:
            m = machines.get(machine_name)
            if m is not None and slot_name in m.slots:
                continue  # the name is in use again: its new ad replaces the old one
            names.append(slot_name)
        return names

    def acked(self, corr: str, errors: list[str], stats: dict[str, int]) -> None:
        """The collector took the round: its machines are clean as of when built."""
        r = self._flight
        if r is None or r.corr != corr:
            return  # not the round on its way (a stale answer)
        self._flight = None
        for line in errors:
            log.warning("collector refused an update: %s", line)
        stats["ads_sent"] += len(r.updates)
        self._invalidate.clear()
        for m, version in zip(r.machines, r.versions, strict=True):
            m.mark_clean(version)

    def failed(
        self, corr: str, detail: str, now: float, changed: set[str], stats: dict[str, int]
    ) -> None:
        """The round did not arrive: all of it again ``RETRY_INTERVAL`` after it was made
        (its ads built again: they are not in the collector)."""
        r = self._flight
        if r is None or r.corr != corr:
            return
        self._flight = None
        stats["advertise_failures"] += 1
        log.warning("startd: cannot advertise to the collector: %s", detail)
        for m in r.machines:
            for slot in m.ordered_slots():
                self.builder.forget(slot.name)
        self._failed(r.made, r.names, changed)

    def _failed(self, made: float, names: list[str], changed: set[str]) -> None:
        assert self.next_full is not None
        changed.update(names)
        self.next_full = min(self.next_full, made + RETRY_INTERVAL)
        self._retry = made + RETRY_INTERVAL
