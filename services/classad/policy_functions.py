"""The ClassAd functions real policies use beyond the core set: version comparisons,
string-list set tests, evaluation in nested ads (the GPU idiom), and time formatting.

Registered into the function table (:mod:`.fnregistry`) on import; the rules follow HTCondor's
fnCall.cpp and compat_classad.cpp (noted per function where they surprise).
"""

from __future__ import annotations

import time as _time
from typing import Any

from .ad import ClassAd
from .convert import to_string
from .fnregistry import ev, fn, split_list, strict, tokens
from .operators import fold
from .tree import AttrRef, Expr, ListExpr, Select
from .values import ERROR, UNDEFINED


# -- versions ---------------------------------------------------------------------------
def _signed(b: int) -> int:
    """A byte as x86's signed char, which natural_cmp subtracts."""
    return b - 256 if b >= 128 else b


def _isdigit(b: int) -> bool:
    return 48 <= b <= 57


def natural_cmp(a: str, b: str) -> int:
    """HTCondor's natural_cmp (strverscmp-like): digit runs compare as numbers, a run
    with more leading zeros sorts first. Returns the same integer HTCondor does (it is
    what versionCmp yields), not just its sign."""
    s1, s2 = a.encode() + b"\0", b.encode() + b"\0"
    i = 0
    while s1[i] and s1[i] == s2[i]:
        i += 1
    if s1[i] == s2[i]:
        return 0
    n = i  # start of the digit run that leads up to the mismatch (same in both)
    while n > 0 and _isdigit(s1[n - 1]):
        n -= 1
    if n == i and (not _isdigit(s1[i]) or not _isdigit(s2[i])):
        return _signed(s1[i]) - _signed(s2[i])
    z1 = n
    while s1[z1] == 48:
        z1 += 1
    z2 = n
    while s2[z2] == 48:
        z2 += 1
    if z1 > n and not _isdigit(s1[z1]):  # a lone final zero is the number 0, not a leading zero
        z1 -= 1
    if z2 > n and not _isdigit(s2[z2]):
        z2 -= 1
    if z1 - n != z2 - n:
        return (z2 - n) - (z1 - n)
    if z1 > n:
        return _signed(s1[i]) - _signed(s2[i])
    e1 = z1
    while _isdigit(s1[e1]):
        e1 += 1
    e2 = z2
    while _isdigit(s2[e2]):
        e2 += 1
    if e1 != e2:
        return e1 - e2
    return _signed(s1[i]) - _signed(s2[i])


def _version_text(v: Any) -> str | None:
    """convertValueToStringValue for the version functions: numbers, booleans, lists and
    ads become their text; UNDEFINED and ERROR do not convert."""
    if v is UNDEFINED or v is ERROR:
        return None
    s = to_string(v)
    return s if type(s) is str else None


_VERSION_TESTS = {
    "versionle": lambda r: r <= 0,
    "versionlt": lambda r: r < 0,
    "versionge": lambda r: r >= 0,
    "versiongt": lambda r: r > 0,
    "versioneq": lambda r: r == 0,
}


@fn("versionCmp", "versionLE", "versionLT", "versionGE", "versionGT", "versionEQ")
def _version_cmp(args, scope, ctx, name):
    if len(args) != 2:
        return ERROR
    left, right = strict(args, scope, ctx)
    if left is UNDEFINED or right is UNDEFINED:  # HTCondor: UNDEFINED, not ERROR
        return UNDEFINED
    sl, sr = _version_text(left), _version_text(right)
    if sl is None or sr is None:
        return ERROR
    r = natural_cmp(sl, sr)
    return r if name == "versioncmp" else _VERSION_TESTS[name](r)


@fn("version_in_range")
def _version_in_range(args, scope, ctx, name):
    if len(args) != 3:
        return ERROR
    test, lo, hi = strict(args, scope, ctx)
    if lo is UNDEFINED or hi is UNDEFINED:  # only the bounds: an UNDEFINED test is ERROR
        return UNDEFINED
    st, slo, shi = _version_text(test), _version_text(lo), _version_text(hi)
    if st is None or slo is None or shi is None:
        return ERROR
    return natural_cmp(slo, st) <= 0 and natural_cmp(st, shi) <= 0


# -- string lists as sets ---------------------------------------------------------------
def _raw_items(s: str, delims: str) -> list[str]:
    """fnCall.cpp's split_string_list: split on any delimiter, drop empty items, no trim;
    an empty delimiter set means " ,"."""
    return split_list(s, delims or " ,")


@fn("stringListsIntersect")
def _sl_intersect(args, scope, ctx, name):
    if len(args) not in (2, 3):
        return ERROR
    vals = strict(args, scope, ctx)
    if any(v is ERROR for v in vals):
        return ERROR
    if any(v is UNDEFINED for v in vals):  # an UNDEFINED delimiter too (unlike the Member tests)
        return UNDEFINED
    delims = ""
    if len(vals) == 3:
        if type(vals[2]) is not str:
            return ERROR
        delims = vals[2]
    a, b = vals[0], vals[1]
    if type(a) is not str or type(b) is not str:
        return ERROR
    other = set(_raw_items(b, delims))
    return any(x in other for x in _raw_items(a, delims))


@fn("stringListSubsetMatch", "stringListISubsetMatch")
def _sl_subset(args, scope, ctx, name):
    """True when every item of the first list is in the second. As compat_classad.cpp:
    an UNDEFINED list reads as empty (both UNDEFINED is UNDEFINED), the empty list is a
    subset of anything, items are trimmed, the default delimiters are ", \\t\\r\\n"."""
    if len(args) not in (2, 3):
        return ERROR
    vals = strict(args, scope, ctx)
    delims = ", \t\r\n"
    for i, v in enumerate(vals):
        if v is UNDEFINED:
            continue
        if type(v) is not str:
            return ERROR
        if i == 2:
            delims = v
    sub, sup = vals[0], vals[1]
    if sub is UNDEFINED and sup is UNDEFINED:
        return UNDEFINED
    sub = "" if sub is UNDEFINED else sub
    sup = "" if sup is UNDEFINED else sup
    if not sub:
        return True
    items = tokens(sub, delims)
    if not items:  # text that holds only delimiters: HTCondor's loop never says yes
        return False
    have = set(tokens(sup, delims))
    if name == "stringlistisubsetmatch":
        have = {fold(x) for x in have}
        return all(fold(x) in have for x in items)
    return all(x in have for x in items)


# -- evaluation in nested ads -------------------------------------------------------------
def _deref(ref: Expr, scope: ClassAd | None, ctx: Any) -> Expr | None:
    """The expression an attribute reference names, found as the evaluator would find it
    (the ad, its enclosing ads, then TARGET; `MY.x`/`TARGET.x` in that ad)."""
    if type(ref) is AttrRef and not ref.absolute:
        ad = scope
        while ad is not None:
            e = ad.lookup(ref.name)
            if e is not None:
                return e
            ad = ctx.parent_of(ad)
        tgt = ctx.target_of(scope)
        return tgt.lookup(ref.name) if tgt is not None else None
    if type(ref) is Select:
        base = ev(ref.base, scope, ctx)
        ad = base if isinstance(base, ClassAd) else None
        while ad is not None:
            e = ad.lookup(ref.name)
            if e is not None:
                return e
            ad = ctx.parent_of(ad)
    return None


def _in_context(expr: Expr, item: Any, scope: ClassAd | None, ctx: Any) -> Any:
    """evaluateInContext: `expr` with a listed ad as its scope."""
    if item is UNDEFINED:
        return UNDEFINED
    if not isinstance(item, ClassAd):
        return ERROR
    if item.parent is None and scope is not None and item is not scope:
        ctx.parents.setdefault(id(item), scope)  # a nested ad reached by name sees its holder
    # In a match, HTCondor gives the nested ad the alternate scope of the side holding it:
    # a GPU ad in the slot sees the job (RequireGPUs = Capability >= GPUsMinCapability).
    holder = ctx.parent_of(item)
    alternate = ctx.target_of(holder) if holder is not None else None
    if alternate is None or id(item) in ctx.alternates:
        return ev(expr, item, ctx)
    ctx.alternates[id(item)] = alternate
    try:
        return ev(expr, item, ctx)
    finally:
        del ctx.alternates[id(item)]


@fn("evalInEachContext", "countMatches")
def _eval_in_each(args, scope, ctx, name):
    """evalInEachContext(expr, ads) is the list of expr evaluated in each ad; countMatches
    counts those that are true. An attribute reference as expr names the expression to
    evaluate (`countMatches(MY.RequireGPUs, AvailableGPUs)`), or else is itself evaluated."""
    if len(args) != 2:
        return ERROR
    expr, nal = args
    if type(expr) in (AttrRef, Select):
        expr = _deref(expr, scope, ctx) or expr
    if type(nal) is ListExpr:
        items = [ev(x, scope, ctx) for x in nal.items]
    else:
        lst = ev(nal, scope, ctx)
        if lst is UNDEFINED:  # countMatches counts nothing rather than propagate it
            return UNDEFINED if name == "evalineachcontext" else 0
        if not isinstance(lst, list):
            return ERROR
        items = lst
    ctx.budget.charge(len(items), "list items")
    results = [_in_context(expr, it, scope, ctx) for it in items]
    if name == "evalineachcontext":
        return results
    # IsBooleanValueEquiv: true, or a nonzero number; UNDEFINED and ERROR do not count
    return sum(1 for r in results if r is True or (type(r) in (int, float) and r != 0))


# -- time -----------------------------------------------------------------------------------
def _now(ctx: Any) -> int:
    return ctx.time()  # the caller's date: the evaluator has no clock


@fn("currentTime")
def _current_time(args, scope, ctx, name):
    # HTCondor gives an absolute-time value; we have no time type, so the seconds
    # (which is what comparisons and arithmetic on it use, at offset 0).
    if args:
        return ERROR
    return _now(ctx)


def _split_utc(t: int) -> ClassAd:
    g = _time.gmtime(t)
    return ClassAd(
        {
            "Type": "AbsoluteTime",
            "Year": g.tm_year,
            "Month": g.tm_mon,
            "Day": g.tm_mday,
            "Hours": g.tm_hour,
            "Minutes": g.tm_min,
            "Seconds": g.tm_sec,
            "Offset": 0,
        }
    )


_GMTIME_MAX = 253402300799  # 9999-12-31T23:59:59: beyond it gmtime and strftime disagree


def _epoch(v: Any) -> int | None:
    if type(v) is int and -_GMTIME_MAX <= v <= _GMTIME_MAX:
        return v
    return None


@fn("splitTime")
def _split_time(args, scope, ctx, name):
    """An integer is seconds since the epoch, split as an absolute time in UTC (the pool
    has no time zone: HTCondor uses the daemon's zone, which in our tests is UTC)."""
    if len(args) != 1:
        return ERROR
    v = ev(args[0], scope, ctx)
    if v is UNDEFINED:
        return UNDEFINED
    t = _epoch(v)
    return ERROR if t is None else _split_utc(t)


@fn("formatTime")
def _format_time(args, scope, ctx, name):
    if len(args) > 2:
        return ERROR
    if not args:
        return _time.strftime("%c", _time.gmtime(_now(ctx)))
    vals = strict(args, scope, ctx)
    t = _epoch(vals[0])
    if t is None:
        return ERROR
    fmt = "%c"
    if len(vals) == 2:
        if type(vals[1]) is not str:
            return ERROR
        fmt = vals[1]
    try:
        return _time.strftime(fmt, _time.gmtime(t))
    except ValueError:
        return ERROR


@fn("debug")
def _debug(args, scope, ctx, name):
    # HTCondor logs the evaluation; the value is the argument's
    if len(args) != 1:
        return ERROR
    return ev(args[0], scope, ctx)
