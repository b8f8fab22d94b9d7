"""Ad text: old syntax (`Name = expr` lines), new syntax (`[ ... ]`) and HTCondor's JSON."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from typing import Any

from .ad import ClassAd, to_expr
from .bindings import BindingCache
from .errors import ClassAdSyntaxError
from .oldstrings import new_to_old
from .parser import parse_expr
from .tree import AdExpr, Expr, ListExpr, Literal, Unary, format_name, unparse, unparse_ad
from .values import ERROR, UNDEFINED


def format_old_real(v: float) -> str:
    """Reals in old-syntax output as HTCondor prints them: %.16G, with `.0` if it looks integral."""
    if math.isnan(v):
        return 'real("NaN")'
    if math.isinf(v):
        return 'real("INF")' if v > 0 else 'real("-INF")'
    if v == 0.0:
        return "-0.0" if math.copysign(1.0, v) < 0 else "0.0"
    s = f"{v:.16G}"
    if not any(c in s for c in ".Ee"):
        s += ".0"
    return s


def _old_expr_text(e: Expr) -> str:
    if isinstance(e, Literal) and isinstance(e.value, float):
        return format_old_real(e.value)
    return new_to_old(unparse(e))


def _old_line(name: str, e: Expr) -> str:
    return f"{format_name(name)} = {_old_expr_text(e)}\n"


# A job history or a pool's slot ads print the same bindings over and over.
_OLD_LINES = BindingCache(_old_line)


def format_ad(ad: ClassAd, style: str = "old", sort: bool = False) -> str:
    """One ad as text: old syntax (one `Name = expr` a line) or new syntax."""
    if style == "new":
        if not sort:
            return unparse_ad(ad)
        names = sorted(ad, key=str.lower)
        return "[ " + "; ".join(f"{format_name(n)} = {unparse(ad[n])}" for n in names) + " ]"
    if style != "old":
        raise ValueError(f"unknown ad style {style!r}: expected 'old' or 'new'")
    return format_old_lines(ad.pairs(), sort)


def format_old_lines(bindings: Iterable[tuple[str, Expr]], sort: bool = False) -> str:
    """Bindings as old-syntax lines, ``Name = expr``, in name order (case ignored) when
    ``sort``: an ad's, or a selection of them, without making an ad of it."""
    pairs = list(bindings)
    if sort:
        pairs.sort(key=_name_lower)
    return "".join(_OLD_LINES.of(pairs))


def _name_lower(binding: tuple[str, Expr]) -> str:
    return binding[0].lower()


# -- JSON ------------------------------------------------------------------------------
# HTCondor writes literal values as JSON values, UNDEFINED as null, and any other
# expression as the string "/Expr(<text>)/".
_EXPR_PREFIX, _EXPR_SUFFIX = "/Expr(", ")/"


def _literal_json(e: Expr) -> tuple[bool, Any]:
    if isinstance(e, Literal):
        v = e.value
        if v is UNDEFINED:
            return True, None
        if v is ERROR or (isinstance(v, float) and not math.isfinite(v)):
            return False, None
        return True, v
    if isinstance(e, Unary) and e.op == "-" and isinstance(e.operand, Literal):
        v = e.operand.value
        if type(v) in (int, float):
            return True, -v
    if isinstance(e, ListExpr):
        out = []
        for item in e.items:
            ok, v = _literal_json(item)
            if not ok:
                return False, None
            out.append(v)
        return True, out
    if isinstance(e, AdExpr):
        return True, _ad_json(e.ad)
    return False, None


def _ad_json(ad: ClassAd) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in ad:
        e = ad[name]
        ok, v = _literal_json(e)
        out[name] = v if ok else f"{_EXPR_PREFIX}{unparse(e)}{_EXPR_SUFFIX}"
    return out


def ads_to_json(ads: ClassAd | Iterable[ClassAd], indent: int | None = 2) -> str:
    """HTCondor's JSON form: a list of objects (one object for a single ad)."""
    if isinstance(ads, ClassAd):
        return json.dumps(_ad_json(ads), indent=indent)
    return json.dumps([_ad_json(a) for a in ads], indent=indent)


def _json_value(v: Any, where: str) -> Any:
    if v is None:
        return Literal(UNDEFINED)
    if isinstance(v, str) and v.startswith(_EXPR_PREFIX) and v.endswith(_EXPR_SUFFIX):
        text = v[len(_EXPR_PREFIX) : -len(_EXPR_SUFFIX)]
        try:
            return parse_expr(text)
        except ClassAdSyntaxError as e:
            raise ClassAdSyntaxError(
                f"in {where}: {e.reason}", text, e.position, e.expected
            ) from None
    if isinstance(v, dict):
        return _json_ad(v, where)
    if isinstance(v, list):
        return ListExpr(tuple(_to_expr_json(x, where) for x in v))
    if isinstance(v, (bool, int, float, str)):
        return v
    raise ClassAdSyntaxError(
        f"unsupported JSON value in {where}", json.dumps(v), 0, "a ClassAd value"
    )


def _to_expr_json(v: Any, where: str) -> Expr:
    return to_expr(_json_value(v, where))


def _json_ad(obj: dict[str, Any], where: str = "ad") -> ClassAd:
    ad = ClassAd()
    for k, v in obj.items():
        ad[k] = _json_value(v, f"{where}.{k}")
    return ad


def ads_from_json(text: str) -> list[ClassAd]:
    """Ads from HTCondor's JSON form (one object or a list of objects)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ClassAdSyntaxError(f"malformed JSON: {e.msg}", text, e.pos, "JSON") from None
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list) or not all(isinstance(d, dict) for d in data):
        raise ClassAdSyntaxError(
            "JSON ads must be an object or a list of objects", text, 0, "{ or ["
        )
    return [_json_ad(d, f"ad {i}") for i, d in enumerate(data)]
