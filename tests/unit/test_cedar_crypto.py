"""cedar/crypto.py: ECDH, the session key and AES-GCM packets, worked out by hand.

AES-GCM itself is OpenSSL's (through ``cryptography``, as HTCondor's is OpenSSL's); what
is HTCondor's own and checked here is around it: the P-256 point encoding, the HKDF
labels, the IV arithmetic, what the first packet carries, and the framing with
framing.py's digests.
"""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from mockpool.cedar import crypto
from mockpool.cedar.framing import HEADER_SIZE, PacketCodec, parse_header

# P-256's generator (SEC 2, 2.4.2): the public key of the private key 1
GX = bytes.fromhex("6b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c296")
GY = bytes.fromhex("4fe342e2fe1a7f9b8ee7eb4a7c0f9e162bce33576b315ececbb6406837bf51f5")
KEY = bytes(range(32))
IV = bytes(range(16))


def hkdf_by_hand(ikm: bytes, salt: bytes, info: bytes) -> bytes:
    prk = hmac.new(salt, ikm, hashlib.sha256).digest()
    return hmac.new(prk, info + b"\x01", hashlib.sha256).digest()


def private(d: int) -> ec.EllipticCurvePrivateKey:
    return ec.derive_private_key(d, ec.SECP256R1())


# ---------------------------------------------------------------------------- key exchange


def test_public_key_is_the_uncompressed_point_in_base64() -> None:
    text = crypto.encode_public_key(private(1).public_key())
    assert base64.b64decode(text) == b"\x04" + GX + GY
    assert (
        text
        == "BGsX0fLhLEJH+Lzm5WOkQPJ3A32BLeszoPShOUXYmMKWT+NC4v4af5uO5+tKfA+eFivOM1drMV7Oy7ZAaDe/UfU="
    )


def test_session_key_is_hkdf_keygen_of_the_shared_x() -> None:
    # our key 1, the peer's key 1: the shared point is 1*G, its x-coordinate is GX
    peer = crypto.encode_public_key(private(1).public_key())
    exchange = crypto.EcdhExchange(peer, private_key=private(1))
    expected = hkdf_by_hand(GX, b"htcondor", b"keygen")  # Condor_Crypt_Base::hkdf
    assert exchange.derive() == crypto.session_key(GX) == expected
    assert expected.hex() == "940fdabb6c563d036e8238508ecbdec2b38bed1656a3bf1dfa4c9fc8ae8b6b81"


def test_both_sides_derive_the_same_key() -> None:
    client = private(12345)
    server = crypto.EcdhExchange(crypto.encode_public_key(client.public_key()))
    from_client = crypto.session_key(
        client.exchange(ec.ECDH(), crypto.decode_public_key(server.public_key))
    )
    assert server.derive() == from_client and len(from_client) == crypto.KEY_LENGTH


def test_a_compressed_point_is_read_too() -> None:
    # o2i_ECPublicKey takes either form; G's y is odd (…f5), so its prefix is 03
    key = crypto.decode_public_key(base64.b64encode(b"\x03" + GX).decode())
    assert key.public_numbers().y == int.from_bytes(GY, "big")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not base64!", "not base64"),
        (
            base64.b64encode(b"\x04" + GX).decode(),
            r"not a point on P-256 \(33 bytes, starting 04\)",
        ),
        (base64.b64encode(b"\x04" + GX + bytes(32)).decode(), "not a point on P-256"),
        ("", r"not a point on P-256 \(0 bytes, starting empty\)"),
        ("A" * 2000, "2000 characters long"),
    ],
)
def test_bad_public_keys_are_refused(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        crypto.EcdhExchange(text)


# ---------------------------------------------------------------------------- AES-GCM


def test_iv_counter_adds_to_the_first_four_bytes_big_endian() -> None:
    base = bytes.fromhex("fffffffe") + bytes(range(4, 16))
    assert crypto.counter_iv(base, 0) == base
    assert crypto.counter_iv(base, 1)[:4] == bytes.fromhex("ffffffff")
    assert crypto.counter_iv(base, 2)[:4] == bytes.fromhex("00000000")  # mod 2**32
    assert crypto.counter_iv(base, 2)[4:] == base[4:]
    assert crypto.counter_iv(IV, 0x01000000)[:4] == bytes.fromhex("01010203")


def test_sealed_packets_as_condor_crypt_aesgcm() -> None:
    cipher = crypto.AesGcmCipher(KEY, random=lambda n: IV)
    aes = AESGCM(KEY)
    # first packet: the base IV in the clear, then ciphertext and tag under IV + 0
    assert cipher.ciphertext_size(5) == 5 + 16 + 16
    first = cipher.seal(b"aad-1", b"hello")
    assert first[:16] == IV and first[16:] == aes.encrypt(IV, b"hello", b"aad-1")
    # later packets: no IV, under IV + n
    assert cipher.ciphertext_size(5) == 5 + 16
    second = cipher.seal(b"aad-2", b"hello")
    assert second == aes.encrypt(bytes.fromhex("00010204") + IV[4:], b"hello", b"aad-2")
    hdr = b"\x01\x00\x00\x00\x15"  # a header's 5 bytes, as the packet layer passes them
    third = cipher.seal(hdr, b"hello")
    assert third == aes.encrypt(bytes.fromhex("00010205") + IV[4:], b"hello", hdr)
    assert third.hex() == "b522dfc4a4977c6ec655bc4185b9c1399fa1c6ab78"


def test_the_peer_opens_what_was_sealed_in_order() -> None:
    sender = crypto.AesGcmCipher(KEY)
    receiver = crypto.AesGcmCipher(KEY)
    packets = [sender.seal(b"h%d" % i, b"payload %d" % i) for i in range(3)]
    assert [receiver.open(b"h%d" % i, p) for i, p in enumerate(packets)] == [
        b"payload 0",
        b"payload 1",
        b"payload 2",
    ]


def test_reordered_altered_or_foreign_packets_fail() -> None:
    sender = crypto.AesGcmCipher(KEY)
    first, second = sender.seal(b"a", b"one"), sender.seal(b"a", b"two")
    opened = crypto.AesGcmCipher(KEY)
    opened.open(b"a", first)
    with pytest.raises(ValueError, match="packet 1 failed AES-GCM authentication"):
        opened.open(b"b", second)  # other authenticated data (a header changed)
    replay = crypto.AesGcmCipher(KEY)
    replay.open(b"a", first)
    with pytest.raises(ValueError, match="failed AES-GCM"):
        replay.open(b"a", first[16:])  # packet 0 again, as packet 1
    with pytest.raises(ValueError, match="packet 0 failed"):
        crypto.AesGcmCipher(bytes(32)).open(b"a", first)  # another session's key
    flipped = bytes([first[20] ^ 1])
    with pytest.raises(ValueError, match="failed"):
        crypto.AesGcmCipher(KEY).open(b"a", first[:20] + flipped + first[21:])


def test_short_packets_are_refused_before_reading() -> None:
    with pytest.raises(ValueError, match="31 bytes is too small \\(at least 32\\)"):
        crypto.AesGcmCipher(KEY).open(b"", bytes(31))  # first: IV + tag at least
    cipher = crypto.AesGcmCipher(KEY)
    cipher.open(b"", crypto.AesGcmCipher(KEY).seal(b"", b"x"))
    with pytest.raises(ValueError, match="15 bytes is too small \\(at least 16\\)"):
        cipher.open(b"", bytes(15))


def test_counter_limit() -> None:
    cipher = crypto.AesGcmCipher(KEY)
    cipher._ctr_enc = 0xFFFFFFFF
    with pytest.raises(ValueError, match="maximum number of packets"):
        cipher.seal(b"", b"x")


def test_provider() -> None:
    provider = crypto.AesCrypto()
    assert provider.methods == ("AES",) and provider.key_length("AES") == 32
    with pytest.raises(ValueError, match="'BLOWFISH' is not supported"):
        provider.cipher("BLOWFISH", KEY)
    with pytest.raises(ValueError, match="32 bytes, not 24"):
        provider.cipher("AES", bytes(24))


# ---------------------------------------------------------------------------- with the packets


def _deliver(wire: bytes, codec: PacketCodec) -> list[bytes]:
    out, pos = [], 0
    while pos < len(wire):
        header = wire[pos : pos + HEADER_SIZE]
        _, n = parse_header(header)
        out.append(codec.decode(header, wire[pos + HEADER_SIZE : pos + HEADER_SIZE + n]))
        pos += HEADER_SIZE + n
    return out


def test_encrypted_traffic_through_two_packet_codecs() -> None:
    # A handshake in the clear, then both sides switch to the session key: each side's
    # first sealed packet authenticates both digests, so both must have seen the same bytes.
    server, client = PacketCodec(packet_size=8), PacketCodec(packet_size=8)
    assert _deliver(client.encode(b"DC_AUTHENTICATE"), server) == [b"DC_AUTHE", b"NTICATE"]
    assert _deliver(server.encode(b"policy"), client) == [b"policy"]
    server.set_cipher(crypto.AesGcmCipher(KEY))
    client.set_cipher(crypto.AesGcmCipher(KEY))
    wire = server.encode(b"post-auth info ad")
    assert len(wire) == 3 * HEADER_SIZE + 17 + 16 + 3 * 16  # IV once, a tag a packet
    assert b"".join(_deliver(wire, client)) == b"post-auth info ad"
    assert b"".join(_deliver(client.encode(b"command"), server)) == b"command"


def test_a_tampered_handshake_is_caught_at_the_first_encrypted_packet() -> None:
    server, client = PacketCodec(), PacketCodec()
    _deliver(client.encode(b"client hello"), server)
    server.encode(b"server reply")  # lost, or altered: the client saw something else
    _deliver(PacketCodec().encode(b"forged reply"), client)
    server.set_cipher(crypto.AesGcmCipher(KEY))
    client.set_cipher(crypto.AesGcmCipher(KEY))
    with pytest.raises(ValueError, match="failed AES-GCM authentication"):
        _deliver(server.encode(b"post-auth"), client)
