"""ReliSock packets, bytes worked out by hand from reli_sock.cpp (snd_packet/rcv_packet)."""

from __future__ import annotations

import hashlib
import re

import pytest

from mockpool.cedar.framing import (
    FramingError,
    PacketCodec,
    encode_header,
    parse_header,
)


def test_header_is_the_end_flag_then_a_big_endian_length() -> None:
    assert encode_header(True, 13) == bytes([1, 0, 0, 0, 13])
    assert encode_header(False, 0x010203) == bytes([0, 0, 1, 2, 3])
    assert parse_header(bytes([0, 0, 1, 2, 3])) == (False, 0x010203)
    # any end byte from 1 to 10 ends the message (rcv_packet: 0 <= m_end <= 10)
    assert parse_header(bytes([10, 0, 0, 0, 1])) == (True, 1)


@pytest.mark.parametrize(
    ("header", "why"),
    [
        (bytes([11, 0, 0, 0, 1]), "header unrecognized: 0b 00 00 00 01"),
        (bytes([0xFF, 0, 0, 0, 1]), "header unrecognized"),  # a signed char: -1
        (bytes([1, 0, 0, 0, 0]), "improperly sized (len=0,end=1)"),
        (bytes([1, 0, 0x10, 0, 1]), "larger than 1MB limit (requested size 1048577)"),
        (bytes([0, 0x80, 0, 0, 0]), "improperly sized (len=-2147483648,end=0)"),
        (bytes([1, 0, 0]), "packet header is 3 bytes"),
    ],
)
def test_headers_rcv_packet_refuses(header: bytes, why: str) -> None:
    with pytest.raises(FramingError, match=re.escape(why)):
        parse_header(header)


def test_exactly_one_mebibyte_is_allowed() -> None:
    assert parse_header(bytes([1, 0, 0x10, 0, 0])) == (True, 1024 * 1024)


def test_a_message_spans_packets_and_only_the_last_ends_it() -> None:
    codec = PacketCodec(packet_size=4)
    assert codec.encode(b"abcdefghij") == (
        bytes([0, 0, 0, 0, 4])
        + b"abcd"
        + bytes([0, 0, 0, 0, 4])
        + b"efgh"
        + bytes([1, 0, 0, 0, 2])
        + b"ij"
    )
    # a piece of a message still being built ends no packet; nothing makes no packet
    assert codec.encode(b"abcd", end=False) == bytes([0, 0, 0, 0, 4]) + b"abcd"
    assert codec.encode(b"") == b""


class RecordingCipher:
    """Seals by prefixing "S" and a 1-byte tag; records the data each packet authenticates."""

    def __init__(self) -> None:
        self.sealed: list[bytes] = []
        self.opened: list[bytes] = []

    def ciphertext_size(self, n: int) -> int:
        return n + 2

    def seal(self, aad: bytes, plaintext: bytes) -> bytes:
        self.sealed.append(aad)
        return b"S" + plaintext + b"T"

    def open(self, aad: bytes, ciphertext: bytes) -> bytes:
        self.opened.append(aad)
        if not (ciphertext.startswith(b"S") and ciphertext.endswith(b"T")):
            raise ValueError("tag mismatch")
        return ciphertext[1:-1]


def test_the_first_encrypted_packet_authenticates_digests_of_the_handshake() -> None:
    codec = PacketCodec()
    out1 = codec.encode(b"hello")  # sent in the clear: 01 00 00 00 05 hello
    assert out1 == bytes([1, 0, 0, 0, 5]) + b"hello"
    hdr_in = bytes([1, 0, 0, 0, 3])
    assert codec.decode(hdr_in, b"abc") == b"abc"  # received in the clear
    cipher = RecordingCipher()
    codec.set_cipher(cipher)
    sent_digest = hashlib.sha256(out1).digest()
    recv_digest = hashlib.sha256(hdr_in + b"abc").digest()
    # the header carries the ciphertext's length (5 + 2)
    assert codec.encode(b"12345") == bytes([1, 0, 0, 0, 7]) + b"S12345T"
    # sender: its send digest, then its receive digest, then the header
    assert cipher.sealed == [sent_digest + recv_digest + bytes([1, 0, 0, 0, 7])]
    assert codec.encode(b"x") == bytes([1, 0, 0, 0, 3]) + b"SxT"
    assert cipher.sealed[1] == bytes([1, 0, 0, 0, 3])  # later packets: the header alone
    # receiver: its receive digest first (the peer's send digest), then its send digest
    hdr = bytes([1, 0, 0, 0, 4])
    assert codec.decode(hdr, b"SokT") == b"ok"
    assert cipher.opened == [recv_digest + sent_digest + hdr]
    with pytest.raises(FramingError, match="failed to unwrap the packet: tag mismatch"):
        codec.decode(hdr, b"XokT")


def test_a_direction_that_carried_nothing_authenticates_zeros() -> None:
    codec = PacketCodec()
    codec.decode(bytes([1, 0, 0, 0, 1]), b"a")
    cipher = RecordingCipher()
    codec.set_cipher(cipher)
    codec.encode(b"b")
    assert cipher.sealed == [
        bytes(32) + hashlib.sha256(bytes([1, 0, 0, 0, 1]) + b"a").digest() + bytes([1, 0, 0, 0, 3])
    ]
