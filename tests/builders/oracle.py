"""HTCondor's own ClassAd library (``classad2``) as an oracle: the conformance tests'
shared helpers.

Each conformance module is skipped (``require_oracle``) when the ``htcondor`` wheel
(``htcondor2`` + ``classad2``) is not installed. ``htcondor2`` is imported *before*
``classad2``: that import switches the library to the semantics HTCondor's daemons use
(old-ClassAd scoping, where a bare name not found in MY is looked up in TARGET, and the
compatibility functions such as ``stringListMember``), which is what mockpool reproduces.

Helpers (``from builders.oracle import ...``):

- :func:`to_oracle_ad` / :func:`from_oracle_ad`: a mockpool ClassAd as a classad2 ClassAd
  and back; :func:`to_oracle_value` / :func:`from_oracle_value` for values.
- :func:`make_ads`: build the same ad on both sides from ``{name: expression text}``.
- :func:`oracle_parse`: a classad2 ExprTree, or None when the oracle cannot parse the text.
- :func:`oracle_eval` / :func:`ours_eval`: evaluate text on either side; exceptions are
  returned as :class:`Raised` so that tests can report them as disagreements.
- :func:`same_value`: does our value equal the oracle's (types included)?
- :func:`describe`: a short, stable text form of a value on either side, for messages.
"""

from __future__ import annotations

import math
import os
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase

from mockpool.classad import (
    ERROR,
    UNDEFINED,
    ClassAd,
    Expr,
    evaluate,
    parse_expr,
    unparse,
)
from mockpool.classad.tree import Literal

# htcondor2 first: importing it switches classad2 to the daemons' semantics. The import
# is guarded here and every test module calls require_oracle() before anything else.
try:
    import classad2
    import htcondor2
except ImportError as _exc:  # no wheel for this platform
    htcondor2 = classad2 = None
    _MISSING = str(_exc)
else:
    _MISSING = ""


def require_oracle() -> None:
    """Skip the calling test module when HTCondor's classad2 cannot be imported."""
    pytest.importorskip("htcondor2", exc_type=ImportError, reason=_MISSING or None)
    pytest.importorskip("classad2", exc_type=ImportError, reason=_MISSING or None)


# Hypothesis settings shared by the folder: repeatable (derandomize) and no deadline.
# Shrinking is off by default so that a disagreement costs seconds, not minutes, in CI;
# set MOCKPOOL_CONFORMANCE_SHRINK=1 to get minimal failing examples.
_PHASES = [Phase.explicit, Phase.reuse, Phase.generate, Phase.target]
if os.environ.get("MOCKPOOL_CONFORMANCE_SHRINK"):
    _PHASES.append(Phase.shrink)
HYPOTHESIS_SETTINGS: dict[str, Any] = dict(
    derandomize=True,
    deadline=None,
    database=None,
    phases=_PHASES,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)

OracleAd = getattr(classad2, "ClassAd", None)
OracleExpr = getattr(classad2, "ExprTree", None)
OracleValue = getattr(classad2, "Value", None)  # an IntEnum: test it before int!

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
MAX_DEPTH = 4  # how deep nested lists/ads are compared


class Raised:
    """An exception raised by one side while evaluating (always a disagreement)."""

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    def __repr__(self) -> str:
        return f"raised {type(self.exc).__name__}: {str(self.exc)[:200]}"


# ---------------------------------------------------------------- conversions
def to_oracle_value(v: Any) -> Any:
    """A mockpool value (or Expr) as something classad2 can store."""
    if v is UNDEFINED:
        return OracleValue.Undefined
    if v is ERROR:
        return OracleValue.Error
    if isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, ClassAd):
        return to_oracle_ad(v)
    if isinstance(v, list):
        return [to_oracle_value(x) for x in v]
    if isinstance(v, Literal):
        return to_oracle_value(v.value)
    # any other expression goes through its text
    return OracleExpr(unparse(v))


def to_oracle_ad(ad: ClassAd) -> Any:
    """A mockpool ClassAd as a classad2 ClassAd (literals stay literals)."""
    out = OracleAd()
    for name in ad:
        expr = ad[name]
        if isinstance(expr, Literal):
            out[name] = to_oracle_value(expr.value)
        else:
            out[name] = OracleExpr(unparse(expr))
    return out


def from_oracle_value(v: Any) -> Any:
    """A classad2 value as a mockpool value (ExprTree list items become Exprs)."""
    if isinstance(v, OracleValue):
        return UNDEFINED if v == OracleValue.Undefined else ERROR
    if isinstance(v, OracleAd):
        return from_oracle_ad(v)
    if isinstance(v, OracleExpr):
        return parse_expr(str(v))
    if isinstance(v, list):
        return [from_oracle_value(x) for x in v]
    return v


def from_oracle_ad(ad: Any) -> ClassAd:
    """A classad2 ClassAd as a mockpool ClassAd: literal values are taken as values (the
    oracle prints reals with only 16 digits), other expressions through their text."""
    out = ClassAd()
    for name in ad:
        value = ad[name]
        if isinstance(value, OracleExpr):
            out[name] = parse_expr(str(value))
        else:
            out[name] = from_oracle_value(value)
    return out


def make_ads(spec: dict[str, str]) -> tuple[ClassAd, Any]:
    """The same ad on both sides from ``{name: expression text}`` (parsed independently)."""
    ours = ClassAd()
    oracle = OracleAd()
    for name, text in spec.items():
        ours[name] = parse_expr(text)
        oracle[name] = OracleExpr(text)
    return ours, oracle


# ---------------------------------------------------------------- evaluation
def oracle_parse(text: str) -> Any | None:
    """The oracle's tree for `text`, or None when it cannot parse it."""
    try:
        return OracleExpr(text)
    except Exception:
        return None


def oracle_parses_all(*specs: dict[str, str]) -> bool:
    """Can the oracle parse every expression text of these ad specs?"""
    return all(oracle_parse(t) is not None for spec in specs for t in spec.values())


def oracle_eval(text: str, my2: Any = None, target2: Any = None) -> Any:
    """classad2's value of `text` (MY = my2, TARGET = target2); Raised on an exception."""
    try:
        tree = OracleExpr(text)
    except Exception as exc:
        return Raised(exc)
    try:
        return tree.eval(my2, target2)
    except Exception as exc:
        return Raised(exc)


def ours_eval(text: str, my: ClassAd | None = None, target: ClassAd | None = None) -> Any:
    """mockpool's value of `text`; Raised on an exception (RecursionError included)."""
    try:
        return evaluate(text, my, target)
    except Exception as exc:
        return Raised(exc)


# ---------------------------------------------------------------- comparison
def _is_undefined2(v: Any) -> bool:
    return isinstance(v, OracleValue) and v == OracleValue.Undefined


def _is_error2(v: Any) -> bool:
    return isinstance(v, OracleValue) and v == OracleValue.Error


def _same_scalar(ours: Any, oracle: Any) -> bool:
    if isinstance(oracle, OracleValue):
        return (ours is UNDEFINED and _is_undefined2(oracle)) or (
            ours is ERROR and _is_error2(oracle)
        )
    if ours is UNDEFINED or ours is ERROR:
        return False
    if type(ours) is not type(oracle):  # bool vs int vs float vs str
        return False
    if isinstance(ours, float):
        if math.isnan(ours) or math.isnan(oracle):
            return math.isnan(ours) and math.isnan(oracle)
        return ours == oracle and math.copysign(1.0, ours) == math.copysign(1.0, oracle)
    return ours == oracle


def same_value(ours: Any, oracle: Any, _depth: int = 0) -> bool:
    """True when our value is the oracle's value.

    UNDEFINED/ERROR must meet classad2.Value.Undefined/Error; bool, int, float and str must
    have the same Python type; floats compare exactly (signed zeros too), NaN equals NaN.
    Lists compare item by item; an oracle list item that is an unevaluated ExprTree is
    compared with our item when ours is an Expr of the same text, or is skipped when it is
    a value (use :func:`resolve_oracle` first to evaluate such items in place).  ClassAds
    compare by attribute names (case-insensitively) and each attribute evaluated in its ad.
    """
    if isinstance(ours, Raised) or isinstance(oracle, Raised):
        return False
    if _depth > MAX_DEPTH:
        return True
    if isinstance(oracle, list):
        if not isinstance(ours, list) or len(ours) != len(oracle):
            return False
        for a, b in zip(ours, oracle):
            if isinstance(b, OracleExpr):
                if isinstance(a, Expr):
                    try:
                        if parse_expr(str(b)) != a:
                            return False
                    except Exception:
                        return False
                continue
            if not same_value(a, b, _depth + 1):
                return False
        return True
    if isinstance(oracle, OracleAd):
        if not isinstance(ours, ClassAd):
            return False
        names2 = {k.lower(): k for k in oracle}
        names = {k.lower(): k for k in ours}
        if set(names) != set(names2):
            return False
        for low, k2 in names2.items():
            try:
                b = oracle.eval(k2)
            except Exception as exc:
                b = Raised(exc)
            try:
                a = ours.eval(names[low])
            except Exception as exc:
                a = Raised(exc)
            if isinstance(b, Raised) and isinstance(a, Raised):
                continue
            if not same_value(a, b, _depth + 1):
                return False
        return True
    if isinstance(ours, (list, ClassAd)):
        return False
    return _same_scalar(ours, oracle)


def resolve_oracle(value: Any, text: str, my2: Any, target2: Any, _depth: int = 0) -> Any:
    """The oracle's value with unevaluated list items replaced by their values.

    classad2 returns ``{1, 1 + 1}`` as ``[1, ExprTree('1 + 1')]``; item ``i`` is evaluated
    in its proper scope as ``(text)[i]``.
    """
    if not isinstance(value, list) or _depth > MAX_DEPTH:
        return value
    out = []
    for i, item in enumerate(value):
        sub = f"({text})[{i}]"
        if isinstance(item, OracleExpr):
            item = oracle_eval(sub, my2, target2)
        out.append(resolve_oracle(item, sub, my2, target2, _depth + 1))
    return out


def compare_text(
    text: str, my: ClassAd | None, target: ClassAd | None, my2: Any, target2: Any
) -> tuple[bool, Any, Any, str]:
    """Evaluate `text` on both sides; (agree, ours, oracle, where).

    Nested ads in results are compared attribute by attribute, each attribute evaluated as
    the selection ``(text).name`` on both sides so that scoping is the same; list items
    as ``(text)[i]``.  `where` describes the first difference ("" when they agree).
    """
    ours = ours_eval(text, my, target)
    return compare_value(ours, text, my, target, my2, target2)


def compare_value(
    ours: Any, text: str, my: ClassAd | None, target: ClassAd | None, my2: Any, target2: Any
) -> tuple[bool, Any, Any, str]:
    """Like :func:`compare_text`, for a value of `text` computed by other means (the kernel)."""
    oracle = resolve_oracle(oracle_eval(text, my2, target2), text, my2, target2)
    if isinstance(oracle, Raised):  # the oracle has no answer (binding error): no comparison
        return True, ours, oracle, ""
    where = _disagreement(text, ours, oracle, my, target, my2, target2, 0)
    return not where, ours, oracle, where


def _disagreement(text, ours, oracle, my, target, my2, target2, depth) -> str:
    here = f"{text}: ours {describe(ours)}, oracle {describe(oracle)}"
    if isinstance(oracle, Raised):
        return ""  # no oracle answer for this part
    if isinstance(ours, Raised):
        return here
    if depth > MAX_DEPTH:
        return ""
    if isinstance(oracle, OracleAd):
        if not isinstance(ours, ClassAd):
            return here
        names2 = {k.lower(): k for k in oracle}
        if set(names2) != {k.lower() for k in ours}:
            return here + " (attribute names differ)"
        for _low, k2 in sorted(names2.items()):
            if not _IDENT.match(k2):
                continue
            sub = f"({text}).{k2}"
            a = ours_eval(sub, my, target)
            b = resolve_oracle(oracle_eval(sub, my2, target2), sub, my2, target2)
            deeper = _disagreement(sub, a, b, my, target, my2, target2, depth + 1)
            if deeper:
                return deeper
        return ""
    if isinstance(oracle, list):
        if not isinstance(ours, list) or len(ours) != len(oracle):
            return here
        for i, (a, b) in enumerate(zip(ours, oracle)):
            deeper = _disagreement(f"({text})[{i}]", a, b, my, target, my2, target2, depth + 1)
            if deeper:
                return deeper
        return ""
    return "" if same_value(ours, oracle) else here


def same_ours(a: Any, b: Any, _depth: int = 0) -> bool:
    """Two mockpool values are the same value (types included; NaN equals NaN)."""
    if a is UNDEFINED or a is ERROR or b is UNDEFINED or b is ERROR:
        return a is b
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    if isinstance(a, list):
        return len(a) == len(b) and all(same_ours(x, y, _depth + 1) for x, y in zip(a, b))
    if isinstance(a, ClassAd):
        return a == b
    return a == b


def describe(v: Any, _depth: int = 0) -> str:
    """A short text form of a value from either side (for failure messages)."""
    if isinstance(v, Raised):
        return repr(v)
    if isinstance(v, OracleValue):
        return "undefined" if v == OracleValue.Undefined else "error"
    if v is UNDEFINED or v is ERROR:
        return repr(v)
    if isinstance(v, list):
        if _depth > MAX_DEPTH:
            return "{...}"
        return "{" + ", ".join(describe(x, _depth + 1) for x in v) + "}"
    if isinstance(v, OracleExpr):
        return f"<expr {v}>"
    if isinstance(v, (OracleAd, ClassAd)):
        return "<ad " + " ".join(str(v).split())[:200] + ">"
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return f"{type(v).__name__}:{v!r}"
    return f"{type(v).__name__}:{v!r}"
