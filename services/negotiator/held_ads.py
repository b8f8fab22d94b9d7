"""The slot ads a negotiator holds from one cycle to the next.

The collector numbers its updates; a negotiator that kept the ads of its last snapshot
asks for the next one "since" it, and is sent every ad's Name in order but only the ads
updated since (see ``collector.store``). :class:`HeldSlotAds` puts the two together: the
snapshot the collector would have sent whole, from the ads it sent and the ones held.
Ads are immutable once decoded, so an ad held is the ad the collector still stores.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..classad import ClassAd

__all__ = ["HeldSlotAds", "SnapshotPart", "StaleSnapshot", "WireSnapshot"]


class StaleSnapshot(Exception):
    """A delta that does not fit what is held (an ad named but not held, a position out
    of range): ask again for the whole snapshot."""


@dataclass(frozen=True)
class SnapshotPart:
    """One kind of ad in a snapshot reply: the ads carried, every ad's Name in order, and
    (a delta) the positions of the carried ads in that order."""

    ads: Sequence[ClassAd]
    order: Sequence[str]
    rows: Sequence[int] = ()


@dataclass(frozen=True)
class WireSnapshot:
    """A snapshot reply as the live codec decoded it from the wire (the kernel hands the
    collector's ``CollectorSnapshot`` over instead). ``columns``: each slot column sent,
    by its name as sent, with the function that reads it over the snapshot's slot Names
    (raising ValueError, naming the slot at fault, when it does not hold together)."""

    epoch: str
    seq: int
    delta: bool
    slots: SnapshotPart
    private: SnapshotPart
    same_order: bool = False
    columns: Sequence[tuple[str, Callable[[Sequence[str]], Any]]] = ()


class HeldSlotAds:
    """The slot and private ads of the last snapshot, in order with their Names, and
    where it stood in the collector's numbering (epoch, seq)."""

    def __init__(self) -> None:
        self.epoch = ""
        self.seq = 0
        self._slots = _Held()
        self._private = _Held()

    def since(self) -> tuple[str, int] | None:
        """What to ask the next snapshot since (None: nothing held, ask for all)."""
        return (self.epoch, self.seq) if self.epoch else None

    def slot_names(self) -> Sequence[str]:
        """The Names of the slot ads the last merge gave, in order."""
        return self._slots.names

    def slots(self) -> Sequence[ClassAd]:
        """The slot ads the last merge gave, in order (what the last cycle saw)."""
        return self._slots.ads

    def forget(self) -> None:
        self.epoch, self.seq = "", 0
        self._slots, self._private = _Held(), _Held()

    def merge(
        self,
        epoch: str,
        seq: int,
        delta: bool,
        slots: SnapshotPart,
        private: SnapshotPart,
        same_order: bool = False,
    ) -> tuple[list[ClassAd], list[ClassAd]]:
        """The whole snapshot (slot ads, private ads) from a reply, held for the next.
        Raises :class:`StaleSnapshot`, holding nothing, when a delta does not fit. A whole
        snapshot whose names do not fit its ads (a collector that sends none) is used and
        not held: the next is asked for whole too. A delta ``same_order`` names its ads
        as the held ones are named (it carries no names): the held lists are patched at
        the rows it carries, whatever the number of ads held."""
        if not delta and (len(slots.order), len(private.order)) != (
            len(slots.ads),
            len(private.ads),
        ):
            self.forget()
            return list(slots.ads), list(private.ads)
        try:
            slot_held = self._slots.merged(slots, delta, same_order, "slot")
            private_held = self._private.merged(private, delta, same_order, "private")
        except StaleSnapshot:
            self.forget()
            raise
        self.epoch, self.seq = epoch, seq
        self._slots, self._private = slot_held, private_held
        return list(slot_held.ads), list(private_held.ads)


@dataclass(frozen=True)
class _Held:
    """One kind of ad held: its Names and ads, in the snapshot's order."""

    names: Sequence[str] = ()
    ads: Sequence[ClassAd] = ()

    def merged(self, part: SnapshotPart, delta: bool, same_order: bool, what: str) -> _Held:
        if not delta:
            return _Held(list(part.order), list(part.ads))
        if len(part.rows) != len(part.ads):
            raise StaleSnapshot(f"{len(part.ads)} {what} ads for {len(part.rows)} positions")
        if same_order:
            names, ads = self.names, list(self.ads)
        else:
            names = list(part.order)
            held = dict(zip(self.names, self.ads, strict=True))
            ads = [held.get(name) for name in names]  # type: ignore[misc]
        n = len(names)
        for k, ad in zip(part.rows, part.ads, strict=True):
            if not 0 <= k < n:
                raise StaleSnapshot(f"{what} ad position {k} outside the {n} named")
            ads[k] = ad
        if not same_order:
            # (not ``None in ads``: that would compare every ad with None)
            missing = next((k for k, ad in enumerate(ads) if ad is None), None)
            if missing is not None:
                raise StaleSnapshot(f"the {what} ad {names[missing]!r} is named but not held")
        return _Held(names, ads)
