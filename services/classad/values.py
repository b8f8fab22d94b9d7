"""ClassAd values as Python objects.

bool, int, float and str stand for themselves; lists are Python lists of values; a
nested ad is a :class:`~mockpool.classad.ad.ClassAd`. UNDEFINED and ERROR are the two
singletons below, distinct from None and from every other value.
"""

from __future__ import annotations

from typing import Any


class _Special:
    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return self._name

    __str__ = __repr__

    def __bool__(self) -> bool:  # refuse silent truthiness: callers must test identity
        raise TypeError(f"the ClassAd value {self._name} has no truth value; compare with `is`")

    def __reduce__(self) -> str:  # pickling (Ray) keeps the singleton
        return self._name.upper()


UNDEFINED = _Special("undefined")
ERROR = _Special("error")

Value = Any  # bool | int | float | str | list | ClassAd | UNDEFINED | ERROR

INT_MIN = -(2**63)
INT_MAX = 2**63 - 1


def wrap_int(v: int) -> int:
    """Wrap to a signed 64-bit integer, as HTCondor's C++ arithmetic does."""
    if INT_MIN <= v <= INT_MAX:
        return v
    return ((v - INT_MIN) % 2**64) + INT_MIN
