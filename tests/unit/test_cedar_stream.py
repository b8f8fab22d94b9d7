"""Stream's encoding of values, bytes worked out by hand from stream.cpp."""

from __future__ import annotations

import pytest

from mockpool.cedar.encoding import StreamError
from mockpool.cedar.stream import Builder, Message


def test_integers_are_eight_bytes_big_endian_twos_complement() -> None:
    assert Builder().put_int(5).build() == bytes([0, 0, 0, 0, 0, 0, 0, 5])
    assert Builder().put_int(-1).build() == bytes([0xFF] * 8)
    assert Builder().put_int(-2).build() == bytes([0xFF] * 7 + [0xFE])
    # an unsigned long long past 2**63 travels as its bits
    assert Builder().put_int(2**63).build() == bytes([0x80] + [0] * 7)
    with pytest.raises(ValueError, match="does not fit in 64 bits"):
        Builder().put_int(2**64)


def test_reading_an_int_keeps_the_low_32_bits_as_cs_cast() -> None:
    msg = Message(bytes([0, 0, 0, 1, 0, 0, 0, 2]) + bytes([0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF]))
    assert msg.get_int() == 2
    assert msg.get_int() == -1
    assert Message(bytes([0x80] + [0] * 7)).get_int64() == -(2**63)


def test_strings_end_with_nul_and_carry_their_length_when_encrypted() -> None:
    b = Builder().put_string("ab").put_string("")
    assert b.build() == b"ab\0\0"
    assert b.build(encrypted=True) == bytes([0] * 7 + [3]) + b"ab\0" + bytes([0] * 7 + [1]) + b"\0"
    assert Message(b"ab\0\0").get_string() == "ab"
    enc = Message(bytes([0] * 7 + [3]) + b"ab\0", encrypted=True)
    assert enc.get_string() == "ab" and enc.at_end()


def test_a_lone_0xff_is_a_null_string() -> None:
    msg = Message(b"\xffx\0")
    assert msg.get_string() == ""
    assert msg.get_string() == "x"


def test_text_is_utf8_and_bytes_that_are_not_survive() -> None:
    assert Builder().put_string("é").build() == b"\xc3\xa9\0"
    raw = Message(b"a\xfe\0").get_string()  # not UTF-8: a lone surrogate, as the lexer keeps it
    assert Builder().put_string(raw).build() == b"a\xfe\0"


def test_a_string_holding_nul_is_refused_not_cut() -> None:
    with pytest.raises(ValueError, match="holds a NUL byte"):
        Builder().put_string("a\0b")


def test_doubles_travel_as_a_31_bit_fraction_and_an_exponent() -> None:
    # frexp(-0.75) = (-0.75, 0); (int)(-0.75 * 2147483647) = -1610612735 = 0xA0000001 low word
    b = Builder().put_float(-0.75).build()
    assert b == bytes([0xFF] * 4 + [0xA0, 0, 0, 1]) + bytes(8)
    # frexp(1.0) = (0.5, 1): frac 1073741823; reading gives 2 * 1073741823 / 2147483647
    one = Builder().put_float(1.0).build()
    assert one == bytes([0, 0, 0, 0, 0x3F, 0xFF, 0xFF, 0xFF]) + bytes([0] * 7 + [1])
    assert Message(one).get_float() == 2 * 1073741823 / 2147483647
    assert Message(b).get_float() == -1610612735 / 2147483647


def test_a_short_or_broken_message_names_what_and_where() -> None:
    with pytest.raises(
        StreamError, match=r"expected the count \(8 bytes\) at offset 0, message has 3 left"
    ):
        Message(b"abc").get_int("the count")
    with pytest.raises(StreamError, match="a name at offset 2 has no terminating NUL"):
        msg = Message(b"x\0yz")
        msg.get_string()
        msg.get_string("a name")
    bad = Message(bytes([0xFF] * 8) + b"x", encrypted=True)
    with pytest.raises(StreamError, match="a string at offset 0 has an invalid length -1"):
        bad.get_string()
    with pytest.raises(StreamError, match="reply: 1 untouched bytes at offset 0"):
        Message(b"z").expect_end("reply")


def test_a_builder_hands_over_what_it_holds() -> None:
    b = Builder().put_int(1)
    first = b.take()
    b.put_string("z")
    assert len(first) == 8 and first.build() == bytes([0] * 7 + [1])
    assert b.build() == b"z\0"
