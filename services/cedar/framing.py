"""ReliSock's packets: how one CEDAR message travels on a TCP connection.

A message is one or more packets; each packet is a 5-byte header (a byte that is non-zero
on the message's last packet, then the payload's length as a 4-byte big-endian integer)
and its payload (reli_sock.cpp, ``SndMsg::snd_packet`` / ``RcvMsg::rcv_packet``). A
receiver refuses a header whose first byte is outside 0..10, a length of 0 or less, or a
length over 1 MiB; HTCondor sets no limit on a whole message, we do (``max_message``),
because we hold a message whole before a handler reads it.

Encryption (AES-GCM, HTCondor 9+) wraps each packet's payload once a session key is set:
the header then carries the ciphertext's length, and the first encrypted packet in each
direction authenticates, besides its header, SHA-256 digests of every packet (header and
payload) that went each way before encryption began: the security handshake cannot be
altered unseen. :class:`PacketCodec` keeps those digests; a :class:`FrameCipher` (helper
B's ``crypto.py``) does the sealing and opening.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Callable, Iterator
from typing import Any, Protocol

__all__ = [
    "HEADER_SIZE",
    "MAX_PACKET",
    "SEND_PACKET",
    "FrameCipher",
    "FramingError",
    "PacketCodec",
    "encode_header",
    "parse_header",
]

HEADER_SIZE = 5
MAX_PACKET = 1024 * 1024  # rcv_packet's max_packet_size
SEND_PACKET = 64 * 1024  # our packets' payload size (HTCondor sends 4 KiB buffers)
_MAX_END_BYTE = 10  # rcv_packet: "m_end < 0 || m_end > 10" is an unrecognized header
_DIGEST_LIMIT = 1024 * 1024  # bytes of pre-encryption traffic the handshake digests cover
_DIGEST_SIZE = 32  # SHA-256
_LENGTH = struct.Struct(">I")


class FramingError(ValueError):
    """A packet that HTCondor's ReliSock would refuse; the message says why."""


class FrameCipher(Protocol):
    """Seals and opens packet payloads once a session key is set (AES-GCM in HTCondor).

    ``aad`` is the data the packet authenticates besides its payload: the header alone,
    or for the first encrypted packet each way the two handshake digests then the header.
    Each direction keeps its own state (IV, packet counter), so one object serves both.
    """

    def ciphertext_size(self, plaintext_size: int) -> int:
        """The sealed size of a payload of ``plaintext_size`` bytes (the next one sent)."""
        ...

    def seal(self, aad: bytes, plaintext: bytes) -> bytes:
        """Encrypt the next outgoing payload; exactly ``ciphertext_size`` bytes."""
        ...

    def open(self, aad: bytes, ciphertext: bytes) -> bytes:
        """Decrypt the next incoming payload; raise ``ValueError`` if it does not verify."""
        ...


def encode_header(end: bool, length: int) -> bytes:
    """A packet header: the end-of-message flag byte and the big-endian length."""
    return (b"\x01" if end else b"\x00") + _LENGTH.pack(length)


def parse_header(header: bytes) -> tuple[bool, int]:
    """(end of message?, payload length) of a 5-byte header; ``FramingError`` for one
    that rcv_packet refuses, with its bytes in hex as HTCondor logs them."""
    if len(header) != HEADER_SIZE:
        raise FramingError(f"packet header is {len(header)} bytes, expected {HEADER_SIZE}")
    end = header[0]
    (length,) = _LENGTH.unpack_from(header, 1)
    if end > _MAX_END_BYTE:
        raise FramingError(f"incoming packet header unrecognized: {header.hex(' ')}")
    if length > MAX_PACKET:  # a signed int in HTCondor: >= 2**31 reads as negative
        if length >= 2**31:
            raise FramingError(
                f"incoming packet improperly sized (len={length - 2**32},end={end}): "
                f"{header.hex(' ')}"
            )
        raise FramingError(
            f"incoming packet is larger than 1MB limit (requested size {length}): {header.hex(' ')}"
        )
    if length == 0:
        raise FramingError(f"incoming packet improperly sized (len=0,end={end}): {header.hex(' ')}")
    return end != 0, length


class _Digest:
    """One direction's digest of the traffic before encryption, frozen at the first
    encrypted packet either way (reli_sock.cpp's m_send_md_ctx / m_recv_md_ctx)."""

    __slots__ = ("_hash", "bytes", "final")

    def __init__(self) -> None:
        self._hash: hashlib._Hash | None = None
        self.bytes = 0  # payload bytes that went this way
        self.final: bytes | None = None

    def add(self, header: bytes, payload: bytes) -> None:
        if self.final is not None or self.bytes >= _DIGEST_LIMIT:
            return
        if self._hash is None:
            self._hash = hashlib.sha256()
        self._hash.update(header)
        self._hash.update(payload)

    def freeze(self) -> bytes:
        if self.final is None:
            # no packet went this way: HTCondor puts zeros where the digest would be
            self.final = self._hash.digest() if self._hash is not None else bytes(_DIGEST_SIZE)
            self._hash = None
        return self.final


class PacketCodec:
    """One connection's packet layer: splits messages into packets, keeps the handshake
    digests, and applies the cipher once one is set. Pure: no I/O."""

    def __init__(self, *, packet_size: int = SEND_PACKET) -> None:
        if not 0 < packet_size <= MAX_PACKET - 64:  # room for the cipher's IV and tag
            raise ValueError(f"packet size {packet_size} out of range")
        self.packet_size = packet_size
        self._cipher: FrameCipher | None = None
        self._sent = _Digest()
        self._received = _Digest()
        self._first_sealed = True
        self._first_opened = True

    @property
    def encrypted(self) -> bool:
        """Whether payloads are encrypted (then strings carry their length: stream.py)."""
        return self._cipher is not None

    def set_cipher(self, cipher: FrameCipher) -> None:
        """Encrypt every packet from now on, both ways (AES-GCM is never turned off)."""
        self._cipher = cipher

    def export_state(self) -> tuple[Any, ...] | None:
        """What the connection's next packets depend on, for a process that carries it on
        (:meth:`restored`); None when its cipher cannot say. Once encrypted no packet goes
        in the clear again, so the handshake digests are final now."""
        cipher = self._cipher
        if cipher is None:
            return (self.packet_size, None)
        export = getattr(cipher, "export_state", None)
        if export is None:
            return None
        digests = (self._sent.freeze(), self._received.freeze())
        return (self.packet_size, export(), digests, self._first_sealed, self._first_opened)

    @classmethod
    def restored(
        cls, state: tuple[Any, ...], cipher_from: Callable[[Any], FrameCipher]
    ) -> PacketCodec:
        """The codec :meth:`export_state` described (``cipher_from`` makes its cipher)."""
        codec = cls(packet_size=state[0])
        if state[1] is None:
            return codec
        codec._cipher = cipher_from(state[1])
        codec._sent.final, codec._received.final = state[2]
        codec._first_sealed, codec._first_opened = state[3], state[4]
        return codec

    def _aad(self, header: bytes, first: bool, mine: _Digest, theirs: _Digest) -> bytes:
        if not first:
            return header
        return mine.freeze() + theirs.freeze() + header

    def encode(self, payload: bytes, *, end: bool = True) -> bytes:
        """The packets carrying ``payload``; the last one ends the message if ``end``.
        An empty payload makes no packet (HTCondor never sends an empty one)."""
        return b"".join(self.iter_encode(payload, end=end))

    def iter_encode(self, payload: bytes, *, end: bool = True) -> Iterator[bytes]:
        """``encode`` one packet at a time, so a writer can yield between them."""
        n = len(payload)
        size = self.packet_size
        view = memoryview(payload)
        for start in range(0, n, size):
            chunk = bytes(view[start : start + size])
            last = end and start + size >= n
            yield self._packet(chunk, last)

    def _packet(self, chunk: bytes, end: bool) -> bytes:
        cipher = self._cipher
        if cipher is None:
            header = encode_header(end, len(chunk))
            self._sent.add(header, chunk)
            self._sent.bytes += len(chunk)
            return header + chunk
        header = encode_header(end, cipher.ciphertext_size(len(chunk)))
        aad = self._aad(header, self._first_sealed, self._sent, self._received)
        self._first_sealed = False
        return header + cipher.seal(aad, chunk)

    def decode(self, header: bytes, body: bytes) -> bytes:
        """The payload of one received packet (``header`` already checked by
        ``parse_header``); ``FramingError`` if it does not decrypt."""
        cipher = self._cipher
        if cipher is None:
            self._received.add(header, body)
            self._received.bytes += len(body)
            return body
        aad = self._aad(header, self._first_opened, self._received, self._sent)
        self._first_opened = False
        try:
            return cipher.open(aad, body)
        except ValueError as exc:
            raise FramingError(f"failed to unwrap the packet: {exc}") from None
