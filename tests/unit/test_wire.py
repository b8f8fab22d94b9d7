"""mockpool.wire: an ad the wire cannot carry is a WireError naming the attribute (never
protobuf's ValueError), and ``ads_to_pb`` can leave it out so the other ads still go."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mockpool.classad import ClassAd, parse_expr, unparse
from mockpool.classad.tree import Expr, Literal
from mockpool.v1 import classad_pb2 as pb
from mockpool.v1 import collector_pb2, schedd_pb2
from mockpool.wire import (
    PARTS,
    AdDecoder,
    PrefixDecoder,
    WireError,
    ad_from_bytes,
    ad_to_bytes,
    ad_to_pb,
    ads_from_pb,
    ads_to_pb,
    frame_field,
    frame_head,
    frame_parts,
    framed_batches,
    split_fields,
)


def test_int64_limits_travel_typed() -> None:
    msg = ad_to_pb(ClassAd(Lo=-(2**63), Hi=2**63 - 1))
    assert [a.literal.integer for a in msg.attributes] == [-(2**63), 2**63 - 1]


@pytest.mark.parametrize("value", [2**63, -(2**63) - 1, 10**300])
def test_an_integer_past_64_bits_is_a_wire_error(value: int) -> None:
    with pytest.raises(WireError, match=f"attribute RequestMemory: integer {value} does not fit"):
        ad_to_pb(ClassAd(A=1, RequestMemory=value))


def test_ads_to_pb_raises_without_skip_and_leaves_nothing_half_written() -> None:
    reply = schedd_pb2.JobQueryReply()
    with pytest.raises(WireError):
        ads_to_pb([ClassAd(A=1), ClassAd(A=2**64), ClassAd(A=3)], reply.jobs)
    assert len(reply.jobs) == 1


def test_ads_to_pb_skips_and_reports_a_bad_ad() -> None:
    reply = schedd_pb2.JobQueryReply()
    skipped: list[tuple[object, str]] = []
    ads = [ClassAd(ProcId=0), ClassAd(ProcId=1, X=2**64), ClassAd(ProcId=2)]
    ads_to_pb(ads, reply.jobs, lambda ad, exc: skipped.append((ad.get_value("ProcId"), str(exc))))
    assert [a.get_value("ProcId") for a in ads_from_pb(reply.jobs)] == [0, 2]
    assert skipped == [(1, "attribute X: integer 18446744073709551616 does not fit in 64 bits")]


# -- the encoder's entry cache and the decoder's walk ------------------------------------

_NAMES = st.sampled_from(["A", "a", "Memory", "Requirements", "X" * 130, "Cpus"])
_LITERALS = st.one_of(
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False),
    st.just(-0.0),
    st.text(max_size=300),
)
_EXPRS = st.one_of(
    _LITERALS.map(Literal),
    st.sampled_from(
        ['TARGET.Memory >= 1024 && Arch == "X86_64"', "{1, 2, [x = 1]}", "[a = 1; b = a]"]
    ).map(parse_expr),
)


def _reference_bytes(pairs: list[tuple[str, Expr]]) -> bytes:
    """What the field-by-field protobuf encoder writes for the same bindings."""
    msg = pb.ClassAd()
    for name, expr in pairs:
        attr = msg.attributes.add(name=name)
        if isinstance(expr, Literal) and not isinstance(expr.value, list | ClassAd):
            v = expr.value
            kind = {bool: "boolean", int: "integer", float: "real", str: "str"}[type(v)]
            setattr(attr.literal, kind, v)
        else:
            attr.expression = unparse(expr)
    return msg.SerializeToString()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_NAMES, _EXPRS), max_size=8))
def test_ads_cross_the_wire_as_the_plain_encoder_writes_them(pairs) -> None:
    ad = ClassAd.from_exprs(pairs)
    raw = ad_to_bytes(ad)
    assert raw == ad_to_bytes(ad) == _reference_bytes(list(ad.items()))  # cached or not
    back = ad_from_bytes(raw)
    assert [n for n, _ in back.items()] == [n for n, _ in ad.items()]
    assert [unparse(e) for _, e in back.items()] == [unparse(e) for _, e in ad.items()]


def test_a_cached_literal_keeps_its_type_and_sign() -> None:
    ads = [ClassAd(A=1), ClassAd(A=True), ClassAd(A=1.0), ClassAd(A=0.0), ClassAd(A=-0.0)]
    got = [ad_from_bytes(ad_to_bytes(ad)).get_value("A") for ad in ads + ads]
    assert [(type(v), v) for v in got] == [(type(v), v) for v in [1, True, 1.0, 0.0, -0.0] * 2]
    assert math.copysign(1, got[4]) == -1


def test_a_name_sent_twice_keeps_its_first_spelling_and_last_value() -> None:
    raw = _reference_bytes([("Memory", Literal(1)), ("MEMORY", Literal(2))])
    ad = ad_from_bytes(raw)
    assert list(ad.keys()) == ["Memory"] and ad.get_value("memory") == 2


def test_a_nested_ad_gets_its_parent() -> None:
    ad = ad_from_bytes(ad_to_bytes(ClassAd.from_exprs([("N", parse_expr("[a = 1; b = a]"))])))
    assert ad.lookup("N").ad.parent is ad


# -- the collector's decoder of ads with a repeating part ----------------------------------


def _same(a: ClassAd, b: ClassAd) -> bool:
    return [(n, unparse(e)) for n, e in a.items()] == [(n, unparse(e)) for n, e in b.items()]


def _slot_bytes(state: str, now: int) -> tuple[bytes, int]:
    head = ad_to_bytes(ClassAd(MyType="Machine", Name="slot1@n1", State=state, Cpus=1))
    return head + ad_to_bytes(ClassAd(MyCurrentTime=now, UpdateSequenceNumber=now)), len(head)


def test_the_repeating_part_is_decoded_once() -> None:
    dec = PrefixDecoder()
    for now in (10, 20, 30):
        raw, prefix = _slot_bytes("Unclaimed", now)
        ad = dec.decode(raw, prefix)
        assert _same(ad, ad_from_bytes(raw)) and ad.get_value("MyCurrentTime") == now
    raw, prefix = _slot_bytes("Claimed", 40)  # the slot changed: a new part
    assert dec.decode(raw, prefix).get_value("State") == "Claimed"
    assert (dec.hits, dec.misses) == (2, 2)


def test_a_full_decoder_drops_the_part_used_least_recently() -> None:
    """Three slots' parts in a decoder that keeps two: the third drops the part not
    used for longest, one at a time (never all at once), and what is kept still hits."""
    dec = PrefixDecoder(capacity=2)

    def slot(name: str, state: str = "Unclaimed") -> tuple[bytes, int]:
        head = ad_to_bytes(ClassAd(MyType="Machine", Name=name, State=state))
        return head + ad_to_bytes(ClassAd(MyCurrentTime=1)), len(head)

    a, b, c = slot("slot1@a"), slot("slot1@b"), slot("slot1@c")
    for raw, prefix in (a, b, a, c):  # a used after b: b is the least recent
        dec.decode(raw, prefix)
    assert (dec.hits, dec.misses, len(dec)) == (1, 3, 2)
    dec.decode(*a)  # kept
    dec.decode(*c)  # kept
    assert (dec.hits, dec.misses) == (3, 3)
    dec.decode(*b)  # dropped: decoded again, and a (least recent now) makes room
    assert (dec.hits, dec.misses, len(dec)) == (3, 4, 2)
    dec.decode(*c)
    assert dec.hits == 4


def test_ads_decoded_with_a_prefix_are_their_own() -> None:
    dec = PrefixDecoder()
    raw, prefix = _slot_bytes("Unclaimed", 10)
    first = dec.decode(raw, prefix)
    first["State"] = "Owner"
    assert dec.decode(raw, prefix).get_value("State") == "Unclaimed"


def test_a_name_in_both_parts_keeps_its_first_spelling_and_last_value() -> None:
    head = ad_to_bytes(ClassAd(Name="a", Memory=1))
    raw = head + ad_to_bytes(ClassAd(MEMORY=2))
    ad = PrefixDecoder().decode(raw, len(head))
    assert list(ad.keys()) == ["Name", "Memory"] and ad.get_value("memory") == 2


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_NAMES, _EXPRS), max_size=8), st.data())
def test_any_hint_decodes_what_the_plain_decoder_does(pairs, data) -> None:
    raw = _reference_bytes(pairs)
    boundaries = [len(_reference_bytes(pairs[:k])) for k in range(len(pairs) + 1)]
    prefix = data.draw(st.one_of(st.integers(-5, 2000), st.sampled_from([0, *boundaries])))
    dec = PrefixDecoder(capacity=2)
    for _ in range(3):  # a miss, then hits (or a full cache, its oldest part dropped)
        assert _same(dec.decode(raw, prefix), ad_from_bytes(raw))
        prefix = data.draw(st.sampled_from([prefix, 0, len(raw), prefix + 1]))


def test_the_negotiators_decoder_reuses_ads_and_decodes_only_what_changed() -> None:
    dec = AdDecoder()
    parts_hits = PARTS.hits
    rounds = [_slot_bytes("Unclaimed", now) for now in (10, 10, 20)]
    got = []
    for raw, prefix in rounds:
        [ad] = dec.decode([pb.ClassAd.FromString(raw)], [prefix])
        dec.end_round()
        got.append(ad)
    assert got[0] is got[1]  # the same bytes: the same ad
    assert got[2].get_value("MyCurrentTime") == 20 and _same(got[2], ad_from_bytes(rounds[2][0]))
    assert (dec.hits, dec.misses) == (1, 2) and PARTS.hits - parts_hits == 1


def test_the_decoder_gives_back_the_bytes_of_the_ads_it_made() -> None:
    dec = AdDecoder()
    raws = [_slot_bytes("Unclaimed", now)[0] for now in (10, 20)]
    first, second = dec.decode([pb.ClassAd.FromString(r) for r in raws])
    dec.end_round()
    assert dec.bytes_of(first) == raws[0] and dec.bytes_of(second) == raws[1]
    assert dec.bytes_of(first.copy()) is None  # only the very ad it made
    assert dec.bytes_of(ad_from_bytes(raws[0])) is None
    dec.decode([pb.ClassAd.FromString(raws[0])])  # the next round reads one of them
    dec.end_round()
    assert dec.bytes_of(first) == raws[0] and dec.bytes_of(second) is None


@pytest.mark.parametrize("size", [0, 1, 127, 128, 16_383, 16_384, 300_000])
def test_framed_ads_are_the_bytes_protobuf_writes(size: int) -> None:
    ad = ClassAd(Name="slot1@x", Blob="b" * size, Cpus=1)
    ad["Requirements"] = parse_expr("TARGET.Memory >= 1024")
    expected = schedd_pb2.Match(submitter="u@x", claim_id="c1")
    ad_to_pb(ad, expected.slot)
    fixed = schedd_pb2.Match(submitter="u@x", claim_id="c1").SerializeToString()
    built = fixed + frame_field(
        schedd_pb2.Match.DESCRIPTOR.fields_by_name["slot"].number, ad_to_bytes(ad)
    )
    assert built == expected.SerializeToString()
    request = schedd_pb2.MatchesRequest(schedd_name="s", cycle=3)
    request.matches.add().CopyFrom(expected)
    request.matches.add().CopyFrom(expected)
    head = schedd_pb2.MatchesRequest(schedd_name="s", cycle=3).SerializeToString()
    field = schedd_pb2.MatchesRequest.DESCRIPTOR.fields_by_name["matches"].number
    assert head + 2 * frame_field(field, built) == request.SerializeToString()
    assert (
        schedd_pb2.MatchesRequest.FromString(head + frame_field(field, built)).matches[0]
        == expected
    )


@settings(max_examples=100, deadline=None)
@given(
    slots=st.lists(st.binary(max_size=300), max_size=8),
    private=st.lists(st.binary(max_size=40), max_size=4),
    now=st.floats(allow_nan=False),
    prefixes=st.lists(st.integers(0, 2**32 - 1), max_size=8),
)
def test_split_fields_reads_what_protobuf_parses(
    slots: list[bytes], private: list[bytes], now: float, prefixes: list[int]
) -> None:
    # any bytes stand for an ad here: the splitter does not look inside them
    head = collector_pb2.SnapshotReply(now=now, slot_stable_prefix=prefixes).SerializeToString()
    raw = b"".join(frame_field(1, s) for s in slots)
    raw = head + raw + b"".join(frame_field(2, p) for p in private)  # fields in any order
    found, rest = split_fields(raw, frozenset({1, 2}))
    assert found == {1: slots, 2: private}
    back = collector_pb2.SnapshotReply.FromString(rest)
    assert back.now == now
    assert list(back.slot_stable_prefix) == prefixes


@pytest.mark.parametrize(
    "raw", [b"\x0a\x05ab", b"\x0b", b"\x0a\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"]
)
def test_split_fields_refuses_what_is_not_a_message(raw: bytes) -> None:
    with pytest.raises(WireError, match="not a protobuf message"):
        split_fields(raw, frozenset({1}))


def test_split_fields_keeps_other_fields_of_every_wire_type() -> None:
    varint, fixed32 = b"\x48\x96\x01", b"\x55\x01\x02\x03\x04"  # field 9 = 150; field 10
    raw = varint + frame_field(1, b"x") + fixed32 + frame_field(3, b"yz")
    assert split_fields(raw, frozenset({1})) == (
        {1: [b"x"]},
        varint + fixed32 + frame_field(3, b"yz"),
    )


def test_framed_pieces_join_to_the_framed_fields() -> None:
    """Lengths either side of a varint byte (127/128, 16383/16384), empty, repeated."""
    payloads = [b"", b"x" * 127, b"y" * 128, b"z" * 16383, b"w" * 16384, b"x" * 127]
    want = b"".join(frame_field(5, p) for p in payloads)
    assert b"".join(frame_parts(5, payloads)) == want
    assert b"".join(frame_head(5, len(p)) + p for p in payloads) == want
    ad = ClassAd(Name="slot1@a", Cpus=4)
    msg = collector_pb2.QueryReply.FromString(b"".join(frame_parts(1, [ad_to_bytes(ad)])))
    assert ads_from_pb(msg.ads)[0].eval("Cpus") == 4


def test_framed_batches_frame_each_entry_from_its_parts_and_keep_to_the_limit() -> None:
    matches = [schedd_pb2.Match(slot_name=f"slot{i}@x", claim_id="c" * 40) for i in range(7)]
    # an entry in two parts, as the negotiator puts a match together: its fields, its slot
    entries = [(m.SerializeToString()[:5], m.SerializeToString()[5:]) for m in matches]
    one = len(schedd_pb2.MatchesRequest(matches=matches[:1]).SerializeToString())
    batches = list(framed_batches(4, entries, 3 * one))  # MatchesRequest.matches
    assert [n for n, _ in batches] == [3, 3, 1]
    got = [
        m
        for _, parts in batches
        for m in schedd_pb2.MatchesRequest.FromString(b"".join(parts)).matches
    ]
    assert got == matches
    assert all(len(b"".join(parts)) <= 3 * one for _, parts in batches)
    assert [n for n, _ in framed_batches(4, entries, 1)] == [1] * 7  # an entry alone if larger
    assert list(framed_batches(4, [], 10)) == []
