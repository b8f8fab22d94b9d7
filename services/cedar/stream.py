"""CEDAR's ``Stream`` encoding of values inside one message (stream.cpp).

- Integers of every C type travel as 8 bytes, big-endian, two's complement
  (``Stream::put(long long)``); reading into an ``int`` keeps the low 32 bits.
- A double travels as two integers: ``frac = (int)(frexp(d) * 2147483647)`` and the
  exponent (``Stream::put(double)``), so it keeps 31 bits of mantissa.
- A string is its bytes and a NUL. On an encrypted stream it is preceded by its length
  (NUL included) as an integer (``Stream::put(char const*)`` when ``get_encryption()``);
  a lone ``\\xff`` byte is a NULL string, read as "".
- A ClassAd is adwire.py's business (``put_ad`` / ``get_ad`` here delegate).

:class:`Builder` collects values and renders them when the socket sends, because only
then is it known whether the stream is encrypted; :class:`Message` reads one received
message. Text is UTF-8; bytes that are not UTF-8 survive as the lone surrogates the
ClassAd lexer keeps them as.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from .adwire import EncodedAd, encode_ad, read_ad
from .encoding import StreamError, encode_int, encode_string

if TYPE_CHECKING:
    from ..classad import ClassAd

__all__ = ["Builder", "Message", "StreamError", "WireString"]

FRAC_CONST = 2147483647
MAX_ENCRYPTED_STRING = 10_000_000  # get_string_ptr refuses a longer length
_INT64 = struct.Struct(">q")
_NULL_STRING = 0xFF


def _frexp_parts(value: float) -> tuple[int, int]:
    frac, exp = math.frexp(value)
    return int(frac * FRAC_CONST), exp  # C's (int) cast truncates toward zero


class WireString(bytes):
    """A string's bytes with its NUL: rendered with a length prefix on an encrypted
    stream (a ``bytes`` subclass so a plain render is one join)."""

    __slots__ = ()


class Builder:
    """Values for one outgoing message, in order; rendered by the socket when sent."""

    __slots__ = ("_parts", "_size")

    def __init__(self) -> None:
        self._parts: list[Any] = []  # bytes, WireString or EncodedAd
        self._size = 0  # plain size, for flushing large replies in pieces

    def __len__(self) -> int:
        return self._size

    def put_int(self, value: int) -> Builder:
        self._parts.append(encode_int(value))
        self._size += 8
        return self

    def put_string(self, text: str) -> Builder:
        data = WireString(encode_string(text))
        self._parts.append(data)
        self._size += len(data)
        return self

    def put_float(self, value: float) -> Builder:
        if not math.isfinite(value):  # frexp's result is unspecified; C sends garbage
            raise ValueError(f"cannot send the float {value!r}")
        frac, exp = _frexp_parts(value)
        return self.put_int(frac).put_int(exp)

    def put_bytes(self, data: bytes) -> Builder:
        """Raw bytes, as ``put_bytes`` (no length, no NUL)."""
        self._parts.append(bytes(data))
        self._size += len(data)
        return self

    def put_ad(
        self,
        ad: ClassAd,
        projection: Iterable[str] | None = None,
        *,
        private: bool = False,
    ) -> Builder:
        """An ad as ``putClassAd`` sends it (adwire.py): private attributes left out
        unless ``private``; with ``projection``, only those attributes (and the ones
        their expressions use)."""
        return self.put_encoded_ad(encode_ad(ad, projection, private=private))

    def put_encoded_ad(self, encoded: EncodedAd) -> Builder:
        """An ad already encoded (a collector keeps each ad's encoding until it changes)."""
        self._parts.append(encoded)
        self._size += encoded.plain_size
        return self

    def take(self) -> Builder:
        """A builder holding everything put so far, leaving this one empty (for sending
        a large reply in pieces while building goes on)."""
        out = Builder()
        out._parts, out._size = self._parts, self._size
        self._parts, self._size = [], 0
        return out

    def build(self, *, encrypted: bool = False) -> bytes:
        """The message's bytes on a plain or an encrypted stream."""
        if not encrypted:
            return b"".join([p if isinstance(p, bytes) else p.plain for p in self._parts])
        out = []
        for p in self._parts:
            if type(p) is WireString:
                out.append(encode_int(len(p)))
                out.append(p)
            elif isinstance(p, bytes):
                out.append(p)
            else:
                out.append(p.encrypted)
        return b"".join(out)


class Message:
    """One received message: values read in order; ``StreamError`` names what was
    expected and the offset where the message ran short or went wrong."""

    __slots__ = ("_data", "_pos", "encrypted")

    def __init__(self, data: bytes, *, encrypted: bool = False) -> None:
        self._data = data
        self._pos = 0
        self.encrypted = encrypted

    def __repr__(self) -> str:
        return f"Message({len(self._data)} bytes, at {self._pos})"

    @property
    def offset(self) -> int:
        return self._pos

    @property
    def remaining(self) -> int:
        return len(self._data) - self._pos

    def at_end(self) -> bool:
        return self._pos >= len(self._data)

    def expect_end(self, what: str = "message") -> None:
        """Fail as HTCondor's ``end_of_message`` does when bytes were left unread."""
        if not self.at_end():
            raise StreamError(f"{what}: {self.remaining} untouched bytes at offset {self._pos}")

    def get_bytes(self, n: int, what: str = "bytes") -> bytes:
        if n < 0 or self._pos + n > len(self._data):
            raise StreamError(
                f"expected {what} ({n} bytes) at offset {self._pos}, "
                f"message has {self.remaining} left"
            )
        out = self._data[self._pos : self._pos + n]
        self._pos += n
        return out

    def get_int64(self, what: str = "an integer") -> int:
        (value,) = _INT64.unpack(self.get_bytes(8, what))
        return value

    def get_int(self, what: str = "an integer") -> int:
        """An ``int``: the low 32 bits of the 8 sent, as C's cast keeps them."""
        value = self.get_int64(what) & 0xFFFFFFFF
        return value - 2**32 if value >= 2**31 else value

    def get_float(self, what: str = "a float") -> float:
        frac = self.get_int(what)
        exp = self.get_int(what)
        try:
            return math.ldexp(frac / FRAC_CONST, exp)
        except OverflowError:
            return math.copysign(math.inf, frac)

    def get_string(self, what: str = "a string") -> str:
        return self._get_string_bytes(what).decode("utf-8", "surrogateescape")

    def _get_string_bytes(self, what: str) -> bytes:
        data, pos = self._data, self._pos
        if self.encrypted:
            start = pos
            n = self.get_int(f"{what}'s length")
            if not 0 < n <= MAX_ENCRYPTED_STRING:
                raise StreamError(f"{what} at offset {start} has an invalid length {n}")
            raw = self.get_bytes(n, what)
            if raw[0] == _NULL_STRING:
                return b""
            cut = raw.find(b"\0")
            return raw if cut < 0 else raw[:cut]
        if pos >= len(data):
            raise StreamError(f"expected {what} at offset {pos}, message has ended")
        if data[pos] == _NULL_STRING:
            self._pos = pos + 1
            return b""
        end = data.find(b"\0", pos)
        if end < 0:
            raise StreamError(f"{what} at offset {pos} has no terminating NUL")
        self._pos = end + 1
        return data[pos:end]

    def get_ad(self, *, what: str = "an ad", max_attributes: int = 1_000_000) -> ClassAd:
        """An ad as ``getClassAd`` reads it (adwire.py)."""
        return read_ad(self, what=what, max_attributes=max_attributes)
