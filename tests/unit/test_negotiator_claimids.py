"""PrivateAds.claims: each offered slot's unused claim ids, joined from its private ad by
Name (a plain slot's Capability; a consumption-policy p-slot's ClaimIdList)."""

from __future__ import annotations

import numpy as np

from mockpool.classad import ClassAd
from mockpool.negotiator.claimids import PrivateAds


def _private(name: str, **attrs: object) -> ClassAd:
    ad = ClassAd({"MyType": "MachinePrivate", "Name": name})
    ad.update(attrs)
    return ad


def _claims(names: list[str], private: list[ClassAd], offered: list[int], cp: list[bool]):
    ads = PrivateAds(private, None, now=0.0, rng=None)
    return ads.claims(names, np.array(offered, dtype=np.intp), np.array(cp, dtype=bool))


def test_offered_slots_with_a_capability_have_it_as_their_one_id() -> None:
    names = ["slot1@a", "slot2@a", "slot3@a", "slot4@a"]
    private = [
        _private("slot3@a", Capability="<a:1>#3"),
        _private("slot1@a", Capability="<a:1>#1"),
        _private("slot2@a"),  # no Capability: no claim id
        _private("slot4@a", Capability="<a:1>#4"),
    ]
    lists, rows = _claims(names, private, [0, 1, 2], [False] * 4)
    assert rows.tolist() == [0, 2]  # slot4 is not offered; slot2 has no id
    assert lists[0] == ["<a:1>#1"] and lists[2] == ["<a:1>#3"]
    assert lists[1] == [] and lists[3] == []  # not offered, or without an id


def test_a_matched_id_is_gone_for_the_rest_of_the_cycle() -> None:
    names = ["slot1@a", "slot2@a"]
    private = [_private("slot1@a", Capability="<a:1>#1"), _private("slot2@a", Capability="c2")]
    lists, _rows = _claims(names, private, [0, 1], [False, False])
    assert lists[1].pop(0) == "c2"  # as a match takes it
    assert lists[1] == []  # read again: the list it was taken from, not a new one
    assert lists[0] == ["<a:1>#1"]


def test_a_consumption_policy_pslot_offers_each_unused_id_of_its_list() -> None:
    names = ["slot1@a", "slot2@a", "slot3@a"]
    private = [
        _private("slot1@a", Capability="p1", ClaimIdList="p1 l1 l2", NumClaims=3),
        _private("slot2@a", ClaimIdList="", NumClaims=0),
        _private("slot3@a", Capability="s3"),  # a plain slot beside them
    ]
    lists, rows = _claims(names, private, [0, 1, 2], [True, True, False])
    assert rows.tolist() == [0, 2]  # slot2's list is empty, and it has no Capability
    assert lists[0] == ["p1", "l1", "l2"]
    assert lists[1] == []
    assert lists[2] == ["s3"]


def test_a_slot_without_a_private_ad_has_no_id() -> None:
    lists, rows = _claims(
        ["slot1@a", "slot2@a"], [_private("slot2@a", Capability="c2")], [0, 1], [False, False]
    )
    assert rows.tolist() == [1]
    assert lists[0] == [] and lists[1] == ["c2"]
