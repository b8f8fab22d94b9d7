"""The slot ads a negotiator holds between cycles, merged with a snapshot delta."""

from __future__ import annotations

import pytest

from mockpool.classad import ClassAd
from mockpool.negotiator.held_ads import HeldSlotAds, SnapshotPart, StaleSnapshot


def ad(name: str, **attrs: object) -> ClassAd:
    out = ClassAd(Name=name)
    out.update(attrs)
    return out


def held_with_three() -> tuple[HeldSlotAds, list[ClassAd]]:
    held = HeldSlotAds()
    slots = [ad("s1", Cpus=1), ad("s2", Cpus=2), ad("s3", Cpus=3)]
    private = [ad("s1", Capability="c1"), ad("s3", Capability="c3")]
    got = held.merge(
        "e1", 5, False, SnapshotPart(slots, ["s1", "s2", "s3"]), SnapshotPart(private, ["s1", "s3"])
    )
    assert got == (slots, private) and held.since() == ("e1", 5)
    return held, slots


def test_a_delta_is_the_ads_held_with_the_ones_carried_in_their_places() -> None:
    held, (s1, s2, s3) = held_with_three()
    new_s2, s4 = ad("s2", Cpus=20), ad("s4", Cpus=4)
    slots, private = held.merge(
        "e1",
        9,
        True,
        SnapshotPart([new_s2, s4], ["s1", "s2", "s4"], [1, 2]),
        SnapshotPart([], ["s1"], []),
    )
    assert slots[0] is s1 and slots[1] is new_s2 and slots[2] is s4  # s3 went
    assert [p.eval("Capability") for p in private] == ["c1"]
    assert held.since() == ("e1", 9)
    # the next delta builds on this one: s4 is held now, s3 is not
    again, _ = held.merge("e1", 9, True, SnapshotPart([], ["s4", "s1"], []), SnapshotPart([], []))
    assert again[0] is s4 and again[1] is s1
    assert s3 not in again and s2 not in again


def test_a_delta_in_the_same_order_names_the_ads_as_the_held_ones() -> None:
    held, (s1, _, s3) = held_with_three()
    new_s2 = ad("s2", Cpus=20)
    slots, private = held.merge(
        "e1", 9, True, SnapshotPart([new_s2], [], [1]), SnapshotPart([], [], []), same_order=True
    )
    assert slots == [s1, new_s2, s3] and slots[1] is new_s2
    assert [p.eval("Capability") for p in private] == ["c1", "c3"] and held.since() == ("e1", 9)
    # a position past the held names does not fit
    with pytest.raises(StaleSnapshot, match="position 3 outside the 3 named"):
        held.merge("e1", 10, True, SnapshotPart([ad("s9")], [], [3]), SnapshotPart([], []), True)


@pytest.mark.parametrize(
    ("part", "message"),
    [
        (SnapshotPart([], ["s1", "s9"], []), "'s9' is named but not held"),
        (SnapshotPart([ad("s1")], ["s1"], [3]), "position 3 outside the 1 named"),
        (SnapshotPart([ad("s1")], ["s1"], []), "1 slot ads for 0 positions"),
    ],
)
def test_a_delta_that_does_not_fit_is_stale_and_nothing_stays_held(
    part: SnapshotPart, message: str
) -> None:
    held, _ = held_with_three()
    with pytest.raises(StaleSnapshot, match=message):
        held.merge("e1", 9, True, part, SnapshotPart([], []))
    assert held.since() is None


def test_a_whole_snapshot_without_names_is_used_and_not_held() -> None:
    held, _ = held_with_three()
    slots = [ad("s1"), ad("s2")]
    got, private = held.merge("e2", 3, False, SnapshotPart(slots, []), SnapshotPart([], []))
    assert got == slots and private == [] and held.since() is None
