"""Numeric and boolean knobs read as HTCondor's ``param_integer``, ``param_double`` and
``param_boolean`` read them (condor_config.cpp, ``string_is_long_param`` and friends).

A literal is read first; anything else is evaluated as a ClassAd expression with no ad:

- an integer or real knob takes a number (a real truncated for an integer) or a boolean
  (``true`` is 1, ``2 > 1`` is 1); a value that evaluates to UNDEFINED (an attribute
  reference such as ``Foo``) is not an error there: the daemon logs "is undefined, using
  default value" and uses the knob's default, so :class:`Undefined` is raised for the
  caller to do the same; any other value (a string, ERROR, text that does not parse,
  ``45s``) is refused, as a daemon stops on it;
- a boolean knob takes ``true``/``false``/``1``/``0`` (any case) or an expression that gives
  a boolean or a number (non-zero is true); ``yes``, ``no``, ``t``, ``f`` and UNDEFINED are
  refused (a daemon stops: "not a valid boolean").
"""

from __future__ import annotations

import math
import re

from .constexpr import evaluate_constant

_INT = re.compile(r"[+-]?\d+\Z")
_FLOAT = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\Z")


class Undefined(ValueError):
    """The knob's value evaluates to UNDEFINED: HTCondor uses the knob's default."""


def _evaluate(text: str) -> object:
    """``text`` as a constant expression, else as a ClassAd expression with no ad."""
    try:
        return evaluate_constant(text)
    except ValueError:
        pass
    from ..classad import ClassAdSyntaxError, evaluate, parse_expr
    from ..classad.values import UNDEFINED

    try:
        # a knob's value has no clock and no generator: time() or random() is refused
        value = evaluate(parse_expr(text), now=None, rng=None)
    except (ClassAdSyntaxError, ValueError) as e:
        raise ValueError(f"{text!r} does not parse ({e})") from None
    if value is UNDEFINED:
        raise Undefined(text)
    return value


def _number(text: str) -> int | float:
    if text.lower().lstrip("+-") in ("inf", "infinity", "nan"):
        # Python's text for a pool spec's non-finite TOML float: refused, where HTCondor
        # would read the word as an attribute reference (UNDEFINED, so the default)
        raise ValueError("not a finite number")
    value = _evaluate(text)
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int | float):
        return value
    raise ValueError(f"{text!r} is not a number")


def parse_int(text: str) -> int:
    text = text.strip()
    if _INT.match(text):
        return int(text)
    value = _number(text)
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("not a finite number")  # 1e309: no integer to truncate it to
    return int(value)  # a real truncates, as HTCondor's EvalInteger does


def parse_float(text: str) -> float:
    text = text.strip()
    if _FLOAT.match(text):
        return float(text)
    return float(_number(text))


def parse_bool(text: str) -> bool:
    word = text.strip().lower()
    if word in ("true", "1"):
        return True
    if word in ("false", "0"):
        return False
    try:
        value = _evaluate(word)
    except Undefined:
        raise ValueError(f"{text!r} is undefined") from None
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return value != 0
    raise ValueError(f"{text!r} is not a boolean")
