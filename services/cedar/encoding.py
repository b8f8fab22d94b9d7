"""HTCondor's ``Stream`` encodings of its scalar values, and the error a message that
does not decode raises: what both the message I/O (``stream.py``) and the ad encoding
(``adwire.py``) are built on."""

from __future__ import annotations

import struct

__all__ = ["StreamError", "encode_int", "encode_string"]

_INT64 = struct.Struct(">q")


class StreamError(ValueError):
    """A message that does not hold what the reader expects; says what and where."""


def encode_int(value: int) -> bytes:
    """8 bytes, big-endian, two's complement (``Stream::put(long long)``)."""
    if not -(2**63) <= value < 2**64:
        raise ValueError(f"integer {value} does not fit in 64 bits")
    if value >= 2**63:  # an unsigned long long
        value -= 2**64
    return _INT64.pack(value)


def encode_string(text: str) -> bytes:
    """The string's UTF-8 bytes and its NUL; a string holding NUL cannot travel (C reads
    up to the first one), so it is refused rather than cut."""
    data = text.encode("utf-8", "surrogateescape")
    if b"\0" in data:
        raise ValueError(f"string {text[:40]!r} holds a NUL byte and cannot be sent")
    return data + b"\0"
