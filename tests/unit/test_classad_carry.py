"""ColumnCarry.per_row: what one negotiation cycle's table reads again of the last one's."""

from __future__ import annotations

from mockpool.classad import ClassAd, parse_expr
from mockpool.classad.kernel import ColumnCarry


def _ads(*names: str) -> list[ClassAd]:
    return [ClassAd({"Name": n, "State": "Unclaimed"}) for n in names]


class _Reader:
    """A per-row read that records which ads it was asked about."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def __call__(self, ad: ClassAd) -> str:
        name = ad.eval("Name")
        self.seen.append(name)
        return name


def _two_tables(first: list[ClassAd], second: list[ClassAd], **kw) -> tuple[list, list, _Reader]:
    carry = ColumnCarry()
    carry.begin(first)
    before = carry.per_row("Name", first, _Reader(), **kw)
    carry.begin(second)
    reader = _Reader()
    return before, carry.per_row("Name", second, reader, **kw), reader


def test_every_ad_replaced_but_sharing_its_literal_is_not_read_again() -> None:
    # a startd's periodic round: every slot's ad is new (new clocks), its Name binding shared
    first = _ads("slot1@a", "slot2@a", "slot3@a")
    second = [ad.copy() for ad in first]
    for ad in second:
        ad["MyCurrentTime"] = 1_700_000_300
    before, after, reader = _two_tables(first, second, reads=("name",))
    assert reader.seen == []
    assert after is before  # the very list: what was made from it is kept too
    assert after == ["slot1@a", "slot2@a", "slot3@a"]


def test_a_replaced_ad_with_a_new_literal_is_read_again_alone() -> None:
    first = _ads("slot1@a", "slot2@a", "slot3@a")
    second = [ad.copy() for ad in first]
    second[2]["Name"] = "slot3@b"  # a new binding (an equal one would not be the same object)
    before, after, reader = _two_tables(first, second, reads=("name",))
    assert reader.seen == ["slot3@b"]
    assert after == ["slot1@a", "slot2@a", "slot3@b"]
    assert before == ["slot1@a", "slot2@a", "slot3@a"]  # the last table's list is not changed


def test_a_shared_expression_is_read_again() -> None:
    # the same tree may read otherwise in a new ad: only literals are taken as read
    first = [ClassAd({"Name": parse_expr('strcat("slot", Id)'), "Id": 1})]
    second = [first[0].copy()]
    second[0]["Id"] = 2
    _before, after, reader = _two_tables(first, second, reads=("name",))
    assert reader.seen == ["slot2"]
    assert after == ["slot2"]


def test_a_name_missing_from_both_ads_reads_as_before() -> None:
    first = [ClassAd({"State": "Unclaimed"})]
    second = [first[0].copy()]
    second[0]["State"] = "Claimed"

    def read(ad: ClassAd) -> object:
        calls.append(ad)
        return ad.lookup("Name")

    calls: list[ClassAd] = []
    carry = ColumnCarry()
    carry.begin(first)
    carry.per_row("Name", first, read, reads=("name",))
    carry.begin(second)
    assert carry.per_row("Name", second, read, reads=("name",)) == [None]
    assert calls == [first[0]]  # the second table's ad was not read


def test_without_the_names_read_every_ad_replaced_is_read() -> None:
    # more than PATCH_FRACTION of the ads replaced: a read with no names reads them all
    first = _ads("slot1@a", "slot2@a")
    second = [ad.copy() for ad in first]
    _before, after, reader = _two_tables(first, second)
    assert reader.seen == ["slot1@a", "slot2@a"]
    assert after == ["slot1@a", "slot2@a"]
