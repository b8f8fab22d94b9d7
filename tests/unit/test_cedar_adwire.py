"""ClassAds on the wire as classad_oldnew.cpp puts and gets them; bytes by hand."""

from __future__ import annotations

import pytest

from mockpool.cedar.adwire import _fast_binding, encode_ad, read_pod_ad, split_line
from mockpool.cedar.encoding import StreamError
from mockpool.cedar.stream import Builder, Message
from mockpool.classad import ClassAd, parse_ad, parse_expr


def n(i: int) -> bytes:
    return i.to_bytes(8, "big", signed=True)


def ad_abc() -> ClassAd:
    ad = ClassAd()
    ad["A"] = 1
    ad["B"] = 'x"y'
    ad["C"] = parse_expr("A + 1")
    ad["ClaimId"] = "secret"
    return ad


def test_an_ad_is_a_count_its_lines_and_two_empty_type_strings() -> None:
    wire = Builder().put_ad(ad_abc()).build()
    # old syntax: only '"' is escaped in a string; the private ClaimId is left out
    assert wire == n(3) + b"A = 1\0" + b'B = "x\\"y"\0' + b"C = A + 1\0" + b"\0\0"


def test_private_attributes_go_only_when_asked() -> None:
    ad = ad_abc()
    ad["_condor_privThing"] = 1
    ad["Capability"] = "c"
    assert len(encode_ad(ad)) == 3
    assert len(encode_ad(ad, private=True)) == 6


def test_on_an_encrypted_stream_every_string_carries_its_length() -> None:
    wire = Builder().put_ad(ad_abc()).build(encrypted=True)
    lines = [b"A = 1\0", b'B = "x\\"y"\0', b"C = A + 1\0"]
    assert wire == n(3) + b"".join(n(len(x)) + x for x in lines) + (n(1) + b"\0") * 2


def test_a_projection_sends_its_names_sorted_and_what_they_use() -> None:
    ad = ad_abc()
    ad["D"] = parse_expr("C * 2")
    # D uses C, which uses A: all three, ordered ignoring case, projected names as given
    assert encode_ad(ad, ["d"]).lines == [b"A = 1\0", b"C = A + 1\0", b"d = C * 2\0"]
    # a name the ad lacks is not sent and not counted; private ones stay out
    assert Builder().put_ad(ad, ["Missing", "B", "ClaimId"]).build() == (
        n(1) + b'B = "x\\"y"\0' + b"\0\0"
    )
    # an empty projection is the whole ad (the collector passes no whitelist then)
    assert len(encode_ad(ad, [])) == 4


def test_reals_are_written_as_percent_16g_with_a_point() -> None:
    ad = ClassAd()
    ad["R"] = 1e20
    ad["S"] = 3.0
    ad["T"] = 0.1
    assert encode_ad(ad).lines == [b"R = 1E+20\0", b"S = 3.0\0", b"T = 0.1\0"]


def test_reading_splits_at_the_first_equals_and_parses_old_syntax() -> None:
    data = (
        n(3)
        + b"  Foo = 3\0"
        + b'Bar="a\\"b"\0'
        + b"ZKM\0"  # SECRET_MARKER: the next string holds the line
        + b"Key = Foo + 1\0"
        + b"Machine\0\0"  # the old MyType / TargetType strings are ignored
    )
    msg = Message(data)
    ad = msg.get_ad()
    assert msg.at_end()
    assert ad.eval("Foo") == 3 and ad.eval("Bar") == 'a"b' and ad.eval("Key") == 4
    assert "MyType" not in ad


def test_split_line_is_split_long_form_attr_value() -> None:
    assert split_line("\t Name  =  x = y") == ("Name", "x = y")
    assert split_line("no equals") is None
    assert split_line(" = 3") is None


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (n(-1), "invalid attribute count -1"),
        (n(2) + b"A = 1\0", r"expected an ad's attribute line 2 at offset 14"),
        (n(2) + b"A = 1\0B 2\0", r"attribute line 2: no 'Name = value' in 'B 2'"),
        (n(1) + b"A = (1\0\0\0", r"attribute line 1 \(A\)"),
    ],
)
def test_a_bad_ad_names_the_line(data: bytes, why: str) -> None:
    with pytest.raises(StreamError, match=why):
        Message(data).get_ad()


def test_ads_read_before_authentication_hold_literals_only() -> None:
    ok = Message(n(2) + b'A = "x"\0B = true\0\0\0')
    ad = read_pod_ad(ok)
    assert ad.eval("A") == "x" and ad.eval("B") is True
    for line in (b"A = 1 + 2", b"A = -5", b"A = B", b"A = {1}"):
        with pytest.raises(StreamError, match="not a literal"):
            read_pod_ad(Message(n(1) + line + b"\0\0\0"))
    with pytest.raises(StreamError, match="invalid attribute count 101"):
        read_pod_ad(Message(n(101)))


def test_an_ad_survives_the_round_trip() -> None:
    ad = ad_abc()
    ad["L"] = parse_expr('{ 1, "a" }')
    ad["N"] = parse_expr("[ x = 1; y = x ]")
    back = Message(Builder().put_ad(ad, private=True).build()).get_ad()
    assert back == ad


@pytest.mark.parametrize("rhs", ["5", "0", "1.5", "0.5e3", "3.", '"abc"', '"x"  ', "TRUE", "false"])
def test_plain_literals_read_without_the_parser_read_as_the_parser_reads_them(rhs: str) -> None:
    # getClassAdEx's fast path, giving what our parser gives (a signed number is a
    # unary minus to it, so those are left to it)
    fast = _fast_binding("A", rhs)
    assert fast is not None
    parsed = parse_ad(f"A = {rhs}")["A"]
    assert type(fast[1].value) is type(parsed.value) and fast[1].value == parsed.value
    assert str(fast[1]) == str(parsed)


@pytest.mark.parametrize(
    "rhs", ["-12", "007", "1e5", '"a\\"b"', '"x" y', "truex", "-", "A + 1", "(1)"]
)
def test_anything_else_goes_to_the_parser(rhs: str) -> None:
    assert _fast_binding("A", rhs) is None
