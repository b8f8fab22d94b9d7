"""Sizes with unit suffixes: ``2GB``, ``512 M``, ``1.5G``, ``4096``.

The rule is HTCondor's ``parse_int64_bytes`` (condor_utils/metric_units.cpp), shared by
``request_memory``/``request_disk`` in submit files: a non-negative number, optionally with a
fraction, then optionally ``K``, ``M``, ``G`` or ``T`` (any case, optionally followed by
``B``), meaning 2^10, 2^20, 2^30, 2^40 bytes. With no suffix the number is already in the
caller's unit. The result is in the caller's unit, rounded up.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

KIB = 1024
MIB = 1024 * 1024

_SIZE = re.compile(r"\s*(\d+(?:\.\d*)?)\s*(?:([kKmMgGtT])[bB]?)?\s*$")
_MULT = {"k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}


def parse_size(text: str, unit_bytes: int) -> int | None:
    """``text`` in units of ``unit_bytes`` (``MIB`` for memory, ``KIB`` for disk), or None.

    ``parse_size("2GB", MIB) == 2048``, ``parse_size("1G", KIB) == 1048576``,
    ``parse_size("512", MIB) == 512``, ``parse_size("1500K", MIB) == 2`` (rounded up).
    """
    m = _SIZE.match(text)
    if not m:
        return None
    number = Fraction(m.group(1))
    if m.group(2) is None:
        return math.ceil(number)
    return math.ceil(number * _MULT[m.group(2).lower()] / unit_bytes)
