"""Encryption and integrity as HTCondor 9+ negotiates them: ECDH, HKDF, AES-256-GCM.

What HTCondor does, and where (github htcondor/htcondor, V25):

- **Key exchange.** A client asking for a new session puts an ephemeral P-256 public key
  in its DC_AUTHENTICATE ad (``ECDHPublicKey``: ``i2d_PublicKey``'s point, base64); the
  server answers with its own in the response ad (condor_secman.cpp
  ``GenerateKeyExchange``, ``EncodePubkey``; daemon_command.cpp). After authentication
  each side derives ``key = HKDF-SHA256(ikm=ECDH shared x-coordinate, salt="htcondor",
  info="keygen", L=32)`` (``SecMan::FinishKeyExchange`` -> ``Condor_Crypt_Base::hkdf``).
- **Which crypto.** When the session authenticates and AES is the first common crypto
  method, encryption and integrity are both on (``ReconcileSecurityPolicyAds``): AES-GCM
  does both, and no separate MAC is used (``set_MD_mode(MD_OFF)`` for AES).
- **Packets** (condor_crypt_aesgcm.cpp). Each direction has a random 16-byte base IV and
  a packet counter from 0. Packet *n*'s IV is the base IV with its first 4 bytes, read as
  a big-endian integer, plus *n* (mod 2**32). The first packet each way sends the base IV
  in the clear before its ciphertext; every packet ends with the 16-byte GCM tag, so a
  payload of *p* bytes travels as ``p + 16`` (``p + 32`` the first time). What a packet
  authenticates besides its payload (the header; the handshake digests on the first) is
  the packet layer's business (framing.py's ``PacketCodec``).
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Callable

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from .idtokens import hkdf_sha256

__all__ = [
    "IV_SIZE",
    "KEY_LENGTH",
    "TAG_SIZE",
    "AesCrypto",
    "AesGcmCipher",
    "EcdhExchange",
    "counter_iv",
    "decode_public_key",
    "encode_public_key",
    "session_key",
]

IV_SIZE = 16
TAG_SIZE = 16
KEY_LENGTH = 32  # SEC_SESSION_KEY_LENGTH_V9
_MAX_COUNTER = 0xFFFFFFFF  # "Hit max number of packets per connection"
_CURVE = ec.SECP256R1()  # NID_X9_62_prime256v1
_MAX_KEY_TEXT = 1024  # a P-256 point is 88 characters of base64


def session_key(shared_secret: bytes, length: int = KEY_LENGTH) -> bytes:
    """``Condor_Crypt_Base::hkdf``: the session key from the ECDH shared secret."""
    return hkdf_sha256(shared_secret, salt=b"htcondor", info=b"keygen", length=length)


def encode_public_key(key: ec.EllipticCurvePublicKey) -> str:
    """``ECDHPublicKey``'s text: the uncompressed point (``i2d_PublicKey``), base64."""
    point = key.public_bytes(Encoding.X962, PublicFormat.UncompressedPoint)
    return base64.b64encode(point).decode("ascii")


def decode_public_key(text: str) -> ec.EllipticCurvePublicKey:
    """The peer's P-256 public key from its ``ECDHPublicKey``; ValueError saying why not."""
    if len(text) > _MAX_KEY_TEXT:
        raise ValueError(f"ECDHPublicKey is {len(text)} characters long; a P-256 key is 88")
    try:
        point = base64.b64decode("".join(text.split()), validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("ECDHPublicKey is not base64") from None
    try:
        return ec.EllipticCurvePublicKey.from_encoded_point(_CURVE, point)
    except ValueError:
        raise ValueError(
            f"ECDHPublicKey is not a point on P-256 ({len(point)} bytes, "
            f"starting {point[:1].hex() or 'empty'})"
        ) from None


class EcdhExchange:
    """The server's side of one exchange: our ephemeral key, the client's public key."""

    def __init__(self, peer_public_key: str, private_key: ec.EllipticCurvePrivateKey | None = None):
        self._peer = decode_public_key(peer_public_key)
        self._private = private_key or ec.generate_private_key(_CURVE)
        self.public_key = encode_public_key(self._private.public_key())

    def derive(self, length: int = KEY_LENGTH) -> bytes:
        """The session key (``FinishKeyExchange``)."""
        return session_key(self._private.exchange(ec.ECDH(), self._peer), length)


def counter_iv(base: bytes, counter: int) -> bytes:
    """Packet ``counter``'s IV: ``base`` with its first 4 bytes plus ``counter`` (mod 2**32)."""
    first = (int.from_bytes(base[:4], "big") + counter) & 0xFFFFFFFF
    return first.to_bytes(4, "big") + base[4:IV_SIZE]


class AesGcmCipher:
    """One connection's AES-256-GCM packet cipher (framing.py's ``FrameCipher``): an IV and
    a counter for each direction, as ``StreamCryptoState`` keeps them."""

    def __init__(self, key: bytes, *, random: Callable[[int], bytes] = os.urandom) -> None:
        if len(key) != KEY_LENGTH:
            raise ValueError(f"an AES-GCM session key is {KEY_LENGTH} bytes, not {len(key)}")
        self._key = key  # kept: a connection handed to another process takes it along
        self._aead = AESGCM(key)
        self._iv_enc = random(IV_SIZE)  # initState: RAND_bytes
        self._ctr_enc = 0
        self._iv_dec = b""  # the peer's, from its first packet
        self._ctr_dec = 0

    def export_state(self) -> tuple[bytes, bytes, int, bytes, int]:
        """Everything the connection's next packets depend on (the key, each direction's
        IV and counter), for a process that carries the connection on."""
        return (self._key, self._iv_enc, self._ctr_enc, self._iv_dec, self._ctr_dec)

    @classmethod
    def from_state(cls, state: tuple[bytes, bytes, int, bytes, int]) -> AesGcmCipher:
        """The cipher :meth:`export_state` described, as it was."""
        key, iv_enc, ctr_enc, iv_dec, ctr_dec = state
        cipher = cls(key, random=lambda n: iv_enc)
        cipher._ctr_enc, cipher._iv_dec, cipher._ctr_dec = ctr_enc, iv_dec, ctr_dec
        return cipher

    def ciphertext_size(self, plaintext_size: int) -> int:
        return plaintext_size + TAG_SIZE + (IV_SIZE if self._ctr_enc == 0 else 0)

    def seal(self, aad: bytes, plaintext: bytes) -> bytes:
        if self._ctr_enc == _MAX_COUNTER:
            raise ValueError("hit the maximum number of packets per connection")
        iv = counter_iv(self._iv_enc, self._ctr_enc)
        sealed = self._aead.encrypt(iv, plaintext, aad)  # ciphertext, then the tag
        prefix = self._iv_enc if self._ctr_enc == 0 else b""
        self._ctr_enc += 1
        return prefix + sealed

    def open(self, aad: bytes, ciphertext: bytes) -> bytes:
        if self._ctr_dec == _MAX_COUNTER:
            raise ValueError("hit the maximum number of packets per connection")
        first = self._ctr_dec == 0
        need = TAG_SIZE + (IV_SIZE if first else 0)
        if len(ciphertext) < need:
            raise ValueError(f"packet of {len(ciphertext)} bytes is too small (at least {need})")
        base = ciphertext[:IV_SIZE] if first else self._iv_dec
        body = ciphertext[IV_SIZE:] if first else ciphertext
        try:
            plain = self._aead.decrypt(counter_iv(base, self._ctr_dec), body, aad)
        except InvalidTag:
            raise ValueError(
                f"packet {self._ctr_dec} failed AES-GCM authentication (wrong key, or "
                "altered in transit)"
            ) from None
        self._iv_dec = base  # only after success, as HTCondor touches state
        self._ctr_dec += 1
        return plain


class AesCrypto:
    """security.py's ``CryptoProvider`` for AES (the only method HTCondor 25 negotiates
    by default that is not deprecated; BLOWFISH and 3DES are not offered)."""

    methods: tuple[str, ...] = ("AES",)

    def begin(self, peer_public_key: str) -> EcdhExchange:
        return EcdhExchange(peer_public_key)

    def key_length(self, method: str) -> int:
        if method != "AES":
            raise ValueError(f"crypto method {method!r} is not supported (only AES)")
        return KEY_LENGTH

    def cipher(self, method: str, key: bytes) -> AesGcmCipher:
        self.key_length(method)
        return AesGcmCipher(key)
