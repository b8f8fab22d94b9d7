"""Value conversions HTCondor's functions share: to string, to real, to integer."""

from __future__ import annotations

import math
import re
from typing import Any

from .tree import format_real_value, format_value_condor
from .values import ERROR, INT_MIN, UNDEFINED

# What C's strtod accepts as a prefix: hex floats, decimals with exponent, inf, nan.
_STRTOD = re.compile(
    r"\s*([+-]?)(0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)(?:[pP][+-]?\d+)?"
    r"|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf(?:inity)?|nan)",
    re.IGNORECASE,
)


def strtod_prefix(s: str) -> float | None:
    """The number C's strtod reads from the start of `s`, or None when it reads nothing."""
    m = _STRTOD.match(s)
    if not m:
        return None
    sign, body = m.group(1), m.group(2)
    low = body.lower()
    if low.startswith("0x"):
        if "p" not in low:
            body += "p0"
        v = float.fromhex(body)
    else:
        v = float(body)
    return -v if sign == "-" else v


def c_trunc_to_int(x: float) -> int:
    """(long long)x on x86-64: out of range and NaN give the minimum integer."""
    if math.isnan(x) or x >= 2.0**63 or x < -(2.0**63):
        return INT_MIN
    return int(x)


def to_string(v: Any) -> Any:
    """Convert a value to a string as convertValueToStringValue does; UNDEFINED/ERROR pass."""
    if v is UNDEFINED or v is ERROR:
        return v
    t = type(v)
    if t is str:
        return v
    if t is bool:
        return "true" if v else "false"
    if t is int:
        return str(v)
    if t is float:
        return format_real_value(v)
    return format_value_condor(v)


def to_real(v: Any) -> float | None:
    """A value as a real, or None where HTCondor's conversion fails."""
    t = type(v)
    if t is float:
        return v
    if t is int or t is bool:
        return float(v)
    if t is str:
        return strtod_prefix(v)
    return None


def to_int(v: Any) -> int | None:
    t = type(v)
    if t is int:
        return v
    if t is bool:
        return int(v)
    if t is float:
        return c_trunc_to_int(v)
    if t is str:
        r = strtod_prefix(v)
        return None if r is None else c_trunc_to_int(r)
    return None
