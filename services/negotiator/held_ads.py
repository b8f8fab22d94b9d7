"""The slot ads a negotiator holds from one cycle to the next.

The collector numbers its updates; a negotiator that kept the ads of its last snapshot
asks for the next one "since" it, and is sent every ad's Name in order but only the ads
updated since (see ``collector.store``). :class:`HeldSlotAds` puts the two together: the
snapshot the collector would have sent whole, from the ads it sent and the ones held.
Ads are immutable once decoded, so an ad held is the ad the collector still stores.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..classad import ClassAd

__all__ = ["HeldSlotAds", "SnapshotPart", "StaleSnapshot"]


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


class HeldSlotAds:
    """The slot and private ads of the last snapshot, by Name, and where it stood in the
    collector's numbering (epoch, seq)."""

    def __init__(self) -> None:
        self.epoch = ""
        self.seq = 0
        self._slots: dict[str, ClassAd] = {}
        self._private: dict[str, ClassAd] = {}

    def since(self) -> tuple[str, int] | None:
        """What to ask the next snapshot since (None: nothing held, ask for all)."""
        return (self.epoch, self.seq) if self.epoch else None

    def forget(self) -> None:
        self.epoch, self.seq = "", 0
        self._slots, self._private = {}, {}

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
        as the held ones are named (it carries no names)."""
        if delta and same_order:
            slots = SnapshotPart(slots.ads, list(self._slots), slots.rows)
            private = SnapshotPart(private.ads, list(self._private), private.rows)
        if not delta and (len(slots.order), len(private.order)) != (
            len(slots.ads),
            len(private.ads),
        ):
            self.forget()
            return list(slots.ads), list(private.ads)
        try:
            slot_ads, slot_map = _whole(self._slots, slots, delta, "slot")
            private_ads, private_map = _whole(self._private, private, delta, "private")
        except StaleSnapshot:
            self.forget()
            raise
        self.epoch, self.seq = epoch, seq
        self._slots, self._private = slot_map, private_map
        return slot_ads, private_ads


def _whole(
    held: dict[str, ClassAd], part: SnapshotPart, delta: bool, what: str
) -> tuple[list[ClassAd], dict[str, ClassAd]]:
    if not delta:
        ads = list(part.ads)
    else:
        n = len(part.order)
        if len(part.rows) != len(part.ads):
            raise StaleSnapshot(f"{len(part.ads)} {what} ads for {len(part.rows)} positions")
        got: list[ClassAd | None] = [held.get(name) for name in part.order]
        for k, ad in zip(part.rows, part.ads, strict=True):
            if not 0 <= k < n:
                raise StaleSnapshot(f"{what} ad position {k} outside the {n} named")
            got[k] = ad
        # (not ``None in got``: that would compare every ad with None)
        missing = next((k for k, ad in enumerate(got) if ad is None), None)
        if missing is not None:
            raise StaleSnapshot(f"the {what} ad {part.order[missing]!r} is named but not held")
        ads = got  # type: ignore[assignment]
    return ads, dict(zip(part.order, ads, strict=True))
