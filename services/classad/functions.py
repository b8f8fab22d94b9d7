"""Built-in ClassAd functions, with HTCondor's argument rules.

Each function gets its argument *trees* so that lazy ones (ifThenElse) evaluate only
what they need; `strict` evaluates them all. A wrong argument count or type gives ERROR;
an unknown function name gives ERROR. Names are case-insensitive.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from . import policy_functions  # noqa: F401  (registers versionCmp, countMatches, ...)
from .ad import ClassAd
from .budget import STRING_BYTES_PER_STEP
from .convert import c_trunc_to_int, to_int, to_real, to_string
from .errors import ClassAdSyntaxError
from .fnregistry import TABLE, ev, fn, split_list, strict, tokens
from .operators import arith, compare, fold, identical, truth
from .parser import parse_expr
from .pcre import Regex, RegexError, compile_regex
from .pcre import search as pcre_search
from .pcre import substitute as pcre_substitute
from .tree import AttrRef, Call, Expr, unparse
from .values import ERROR, INT_MIN, UNDEFINED, wrap_int


def call(node: Call, scope: Any, ctx: Any) -> Any:
    f = TABLE.get(node.name.lower())
    if f is None:
        return ERROR
    r = f(node.args, scope, ctx, node.name.lower())  # type: ignore[call-arg]
    # what a function builds costs its size (this also bounds the memory it may take)
    t = type(r)
    if t is str:
        if len(r) >= STRING_BYTES_PER_STEP:
            ctx.budget.charge(len(r) // STRING_BYTES_PER_STEP, "string bytes")
    elif t is list:
        ctx.budget.charge(len(r), "list items")
    return r


def _is_int(v: Any) -> bool:
    return type(v) is int


def _is_num(v: Any) -> bool:
    return type(v) is int or type(v) is float


# -- control and type predicates ------------------------------------------------
@fn("ifThenElse")
def _if_then_else(args, scope, ctx, name):
    if len(args) != 3:
        return ERROR
    c = ev(args[0], scope, ctx)
    if c is UNDEFINED:
        return UNDEFINED
    c = truth(c)
    if c is ERROR:
        return ERROR
    return ev(args[1] if c else args[2], scope, ctx)


_PREDICATES: dict[str, Callable[[Any], bool]] = {
    "isundefined": lambda v: v is UNDEFINED,
    "iserror": lambda v: v is ERROR,
    "isstring": lambda v: type(v) is str,
    "isinteger": lambda v: type(v) is int,
    "isreal": lambda v: type(v) is float,
    "isboolean": lambda v: type(v) is bool,
    "islist": lambda v: isinstance(v, list),
    "isclassad": lambda v: isinstance(v, ClassAd),
}


@fn(*_PREDICATES)
def _is_type(args, scope, ctx, name):
    if len(args) != 1:
        return ERROR
    return _PREDICATES[name](ev(args[0], scope, ctx))


# -- conversions ------------------------------------------------------------------
def _convert(args, scope, ctx, conv) -> Any:
    if len(args) != 1:
        return ERROR
    v = ev(args[0], scope, ctx)
    if v is UNDEFINED or v is ERROR:
        return v
    r = conv(v)
    return ERROR if r is None else r


@fn("int")
def _int(args, scope, ctx, name):
    return _convert(args, scope, ctx, to_int)


@fn("real")
def _real(args, scope, ctx, name):
    return _convert(args, scope, ctx, to_real)


@fn("string")
def _string(args, scope, ctx, name):
    if len(args) != 1:
        return ERROR
    return to_string(ev(args[0], scope, ctx))


@fn("bool")
def _bool(args, scope, ctx, name):
    if len(args) != 1:
        return ERROR
    v = ev(args[0], scope, ctx)
    if v is UNDEFINED or v is ERROR:
        return v
    t = type(v)
    if t is bool:
        return v
    if t is int or t is float:
        return v != 0
    if t is str:
        low = v.lower()
        if low == "true":
            return True
        if low == "false":
            return False
        return UNDEFINED
    return ERROR


# -- mathematics ------------------------------------------------------------------
@fn("floor", "ceiling", "ceil", "round")
def _round(args, scope, ctx, name):
    if len(args) != 1:
        return ERROR
    v = ev(args[0], scope, ctx)
    if type(v) is int:
        return v
    r = to_real(v)
    if r is None:
        return ERROR
    if math.isnan(r) or math.isinf(r):
        return INT_MIN
    if name == "floor":
        return c_trunc_to_int(float(math.floor(r)))
    if name == "round":
        return c_trunc_to_int(float(round(r)))  # Python's round is rint: half to even
    return c_trunc_to_int(float(math.ceil(r)))


@fn("pow")
def _pow(args, scope, ctx, name):
    if len(args) != 2:
        return ERROR
    a, b = strict(args, scope, ctx)
    if _is_int(a) and _is_int(b) and b >= 0:
        try:
            r = math.pow(float(a), float(b))
        except OverflowError:
            r = math.inf
        return c_trunc_to_int(r + 0.5)  # HTCondor rounds by adding 0.5, then truncates
    x, y = to_real(a), to_real(b)
    if x is None or y is None:
        return ERROR
    try:
        return math.pow(x, y)
    except ZeroDivisionError:
        return math.inf
    except (OverflowError, ValueError):
        if x < 0 and not float(y).is_integer():
            return math.nan
        return math.inf


@fn("quantize")
def _quantize(args, scope, ctx, name):
    if len(args) != 2:
        return ERROR
    a, b = strict(args, scope, ctx)
    rval = to_real(a)
    if rval is None:
        return ERROR
    if isinstance(b, list):
        base: Any = 0.0  # an empty list means: do not quantize
        for item in b:
            rb = to_real(item)
            if rb is None:
                return ERROR
            base = item
            if rb >= rval:
                return item
        b = base
        rbase = to_real(b) or 0.0
    else:
        rb = to_real(b)
        if rb is None:
            return ERROR
        rbase = rb
    if type(b) is int:
        if b == 0:
            return a
        if type(a) is int:
            num = a + b - 1
            q = abs(num) // abs(b)
            q = q if (num < 0) == (b < 0) else -q
            return wrap_int(q * b)
        return math.ceil(rval / b) * float(b)
    if -1e-8 <= rbase <= 1e-8:
        return a
    return math.ceil(rval / rbase) * rbase


@fn("random")
def _random_fn(args, scope, ctx, name):
    if len(args) > 1:
        return ERROR
    v = ev(args[0], scope, ctx) if args else 1.0
    if type(v) is int:
        return ctx.random_source().randrange(v) if v > 0 else ERROR
    if type(v) is float:
        return v * ctx.random_source().random()
    return ERROR


@fn("time")
def _time_fn(args, scope, ctx, name):
    if args:
        return ERROR
    return ctx.time()


# -- lists ----------------------------------------------------------------------------
@fn("size")
def _size(args, scope, ctx, name):
    if len(args) != 1:
        return ERROR
    v = ev(args[0], scope, ctx)
    if v is UNDEFINED:
        return UNDEFINED
    if isinstance(v, str):
        return len(v.encode())  # HTCondor strings are bytes
    if isinstance(v, (list, ClassAd)):
        return len(v)
    return ERROR


@fn("sum", "avg")
def _sum_avg(args, scope, ctx, name):
    if len(args) != 1:
        return ERROR
    lst = ev(args[0], scope, ctx)
    if lst is UNDEFINED:
        return UNDEFINED
    if not isinstance(lst, list):
        return ERROR
    acc: Any = None
    n = 0
    for v in lst:
        if v is UNDEFINED:
            continue
        if not (_is_num(v) or type(v) is bool):
            return ERROR
        acc = v if acc is None else arith("+", acc, v)
        n += 1
    if name == "sum":
        return 0 if acc is None else acc
    if n == 0:
        return 0
    return arith("/", acc, float(n))


@fn("min", "max")
def _min_max(args, scope, ctx, name):
    if len(args) != 1:
        return ERROR
    lst = ev(args[0], scope, ctx)
    if lst is UNDEFINED:
        return UNDEFINED
    if not isinstance(lst, list):
        return ERROR
    best: Any = None
    any_real = False
    op = "<" if name == "min" else ">"
    counted = 0
    for v in lst:
        if v is UNDEFINED:
            continue
        if not (_is_num(v) or type(v) is bool):
            return ERROR
        counted += 1
        any_real = any_real or type(v) is float
        if best is None or compare(op, v, best) is True:
            best = v
    if best is None:
        return UNDEFINED
    if counted == 1:
        return best  # a single element comes back as it is (min({true}) is true)
    return float(best) if any_real else int(best)


@fn("member", "identicalMember")
def _member(args, scope, ctx, name):
    if len(args) != 2:
        return ERROR
    x, lst = strict(args, scope, ctx)
    if lst is UNDEFINED:  # checked first: member(error, undefined) is undefined
        return UNDEFINED
    if lst is ERROR or (x is ERROR and name == "member"):
        return ERROR
    if isinstance(x, (list, ClassAd)):
        return ERROR
    if x is UNDEFINED and name == "member":
        return UNDEFINED
    if not isinstance(lst, list):
        return ERROR
    if name == "member":
        return any(compare("==", x, v) is True for v in lst)
    return any(identical(x, v) is True for v in lst)


@fn("anyCompare", "allCompare")
def _list_compare(args, scope, ctx, name):
    if len(args) != 3:
        return ERROR
    op, lst, x = strict(args, scope, ctx)
    ops = {
        "<": "<",
        "<=": "<=",
        "!=": "!=",
        "==": "==",
        ">": ">",
        ">=": ">=",
        "is": "=?=",
        "isnt": "=!=",
        "=?=": "=?=",
        "=!=": "=!=",
    }
    if type(op) is not str or op.lower() not in ops or not isinstance(lst, list):
        return ERROR
    o = ops[op.lower()]
    want_all = name == "allcompare"
    for v in lst:
        if o == "=?=":
            r = identical(v, x)
        elif o == "=!=":
            r = identical(v, x)
            r = r if r is ERROR else not r
        else:
            r = compare(o, v, x)
        if want_all and r is not True:
            return False
        if not want_all and r is True:
            return True
    return want_all


# -- strings ------------------------------------------------------------------------------
@fn("strcat")
def _strcat(args, scope, ctx, name):
    out: list[str] = []
    for a in args:
        s = to_string(ev(a, scope, ctx))
        if s is UNDEFINED or s is ERROR:
            return s
        out.append(s)
    _charge_join(ctx, out, "")
    return "".join(out)


def _charge_join(ctx: Any, parts: list[str], sep: str) -> None:
    # charged before the string is built, so an oversized one is never allocated
    size = sum(map(len, parts)) + len(sep) * max(0, len(parts) - 1)
    ctx.budget.charge(size // STRING_BYTES_PER_STEP, "string bytes")


@fn("join")
def _join(args, scope, ctx, name):
    vals = strict(args, scope, ctx)
    if not vals:
        return ERROR
    if len(vals) == 1:
        if not isinstance(vals[0], list):
            return ERROR
        sep, items = "", vals[0]
    else:
        sep = to_string(vals[0])
        if sep is UNDEFINED or sep is ERROR:
            return sep
        items = vals[1] if len(vals) == 2 and isinstance(vals[1], list) else vals[1:]
    out = []
    for v in items:
        if v is UNDEFINED:
            continue
        s = to_string(v)
        if s is ERROR:
            return ERROR
        out.append(s)
    _charge_join(ctx, out, sep)
    return sep.join(out)


@fn("toUpper", "toLower")
def _change_case(args, scope, ctx, name):
    if len(args) != 1:
        return ERROR
    s = to_string(ev(args[0], scope, ctx))
    if s is UNDEFINED or s is ERROR:
        return s
    if name == "toupper":
        return s.upper() if s.isascii() else "".join(c.upper() if c.isascii() else c for c in s)
    return fold(s)


@fn("substr")
def _substr(args, scope, ctx, name):
    if len(args) not in (2, 3):
        return ERROR
    vals = strict(args, scope, ctx)
    if any(v is ERROR for v in vals):
        return ERROR
    if any(v is UNDEFINED for v in vals):
        return UNDEFINED
    s, off = vals[0], vals[1]
    if type(s) is not str or type(off) is not int:
        return ERROR
    n = len(s)
    start = off if off >= 0 else n + off
    start = min(max(start, 0), n)
    if len(vals) == 3:
        ln = vals[2]
        if type(ln) is not int:
            return ERROR
        end = start + ln if ln >= 0 else n + ln
        end = min(max(end, start), n)
    else:
        end = n
    return s[start:end]


@fn("strcmp", "stricmp")
def _strcmp(args, scope, ctx, name):
    if len(args) != 2:
        return ERROR
    a, b = strict(args, scope, ctx)
    if a is UNDEFINED or b is UNDEFINED:  # checked first: strcmp(undefined, error) is undefined
        return UNDEFINED
    if a is ERROR or b is ERROR:
        return ERROR
    a, b = to_string(a), to_string(b)
    if a is ERROR or b is ERROR:
        return ERROR
    if name == "stricmp":
        a, b = fold(a), fold(b)
    ab, bb = a.encode(), b.encode()
    return (ab > bb) - (ab < bb)


# -- string lists --------------------------------------------------------------------
def _string_list_args(args, scope, ctx):
    """Evaluate (list, [delims]) for the stringList size and arithmetic functions; returns
    (values, delims) or ERROR (an UNDEFINED delimiter is ERROR for these, as HTCondor)."""
    if len(args) not in (1, 2):
        return ERROR
    vals = strict(args, scope, ctx)
    delims = " ,"
    if len(vals) == 2:
        d = vals[-1]
        if type(d) is not str:
            return ERROR
        delims = d
    return vals, delims


@fn("stringListMember", "stringListIMember")
def _sl_member(args, scope, ctx, name):
    """As compat_classad.cpp: any argument that is neither a string nor UNDEFINED is ERROR;
    both UNDEFINED is UNDEFINED, one reads as ""; the default delimiters are ", \\t\\r\\n"."""
    if len(args) not in (2, 3):
        return ERROR
    vals = strict(args, scope, ctx)
    if any(v is not UNDEFINED and type(v) is not str for v in vals):
        return ERROR
    x, lst = vals[0], vals[1]
    if x is UNDEFINED and lst is UNDEFINED:
        return UNDEFINED
    delims = vals[2] if len(vals) == 3 and vals[2] is not UNDEFINED else ", \t\r\n"
    x = "" if x is UNDEFINED else x
    items = tokens("" if lst is UNDEFINED else lst, delims)
    if name == "stringlistimember":
        fx = fold(x)
        return any(fold(i) == fx for i in items)
    return x in items


@fn("stringListSize")
def _sl_size(args, scope, ctx, name):
    r = _string_list_args(args, scope, ctx)
    if not isinstance(r, tuple):
        return r
    (lst, *_), delims = r
    if type(lst) is not str:
        return ERROR
    return len(tokens(lst, delims))


def _parse_number_token(tok: str) -> int | float | None:
    t = tok.strip()
    try:
        return int(t)
    except ValueError:
        pass
    try:
        return float(t)
    except ValueError:
        return None


@fn("stringListSum", "stringListAvg", "stringListMin", "stringListMax")
def _sl_math(args, scope, ctx, name):
    r = _string_list_args(args, scope, ctx)
    if not isinstance(r, tuple):
        return r
    (lst, *_), delims = r
    if type(lst) is not str:
        return ERROR
    nums = []
    for tok in tokens(lst, delims):
        v = _parse_number_token(tok)
        if v is None:
            return ERROR
        nums.append(v)
    all_int = all(type(v) is int for v in nums)
    if name in ("stringlistmin", "stringlistmax"):
        if not nums:
            return UNDEFINED
        v = min(nums) if name == "stringlistmin" else max(nums)
        return v if all_int else float(v)
    if not nums:
        return 0.0
    total = sum(nums) if all_int else math.fsum(float(v) for v in nums)
    if name == "stringlistsum":
        return total
    if all_int:
        return arith("/", total, len(nums))
    return total / len(nums)


@fn("split")
def _split(args, scope, ctx, name):
    r = _string_list_args(args, scope, ctx)
    if not isinstance(r, tuple):
        return r
    (s, *_), delims = r
    if s is UNDEFINED:
        return UNDEFINED
    if type(s) is not str:
        return ERROR
    return split_list(s, delims)


@fn("splitUserName", "splitSlotName")
def _split_name(args, scope, ctx, name):
    if len(args) != 1:
        return ERROR
    s = ev(args[0], scope, ctx)
    if type(s) is not str:
        return ERROR
    if "@" in s:
        a, b = s.split("@", 1)
        return [a, b]
    return [s, ""] if name == "splitusername" else ["", s]


# -- regular expressions -------------------------------------------------------------
def _regex(pattern: str, options: str) -> Regex | None:
    try:
        return compile_regex(pattern, options)
    except RegexError:
        return None


def _regex_args(args, scope, ctx, fixed: int):
    if len(args) not in (fixed, fixed + 1):
        return ERROR
    vals = strict(args, scope, ctx)
    if any(v is ERROR for v in vals):
        return ERROR
    if any(v is UNDEFINED for v in vals):
        return UNDEFINED
    options = ""
    if len(vals) == fixed + 1:
        if type(vals[-1]) is not str:
            return ERROR
        options = vals[-1]
    if any(type(v) is not str for v in vals[:fixed]):
        return ERROR
    rx = _regex(vals[0], options)
    if rx is None:
        return ERROR
    return rx, vals, options


@fn("regexp")
def _regexp(args, scope, ctx, name):
    r = _regex_args(args, scope, ctx, 2)
    if not isinstance(r, tuple):
        return r
    rx, vals, _ = r
    try:
        return pcre_search(rx, vals[1], _regex_charge(ctx))
    except RegexError:
        return ERROR  # over PCRE2's match limit, as HTCondor


@fn("regexps", "replace", "replaceAll")
def _regexps(args, scope, ctx, name):
    r = _regex_args(args, scope, ctx, 3)
    if not isinstance(r, tuple):
        return r
    rx, vals, options = r
    if name == "replace":
        options += "f"
    elif name == "replaceall":
        options += "fg"
    budget = ctx.budget
    try:
        return pcre_substitute(
            rx,
            vals[1],
            vals[2],
            "f" in options,
            "g" in options,
            _regex_charge(ctx),
            lambda n: budget.charge(n // STRING_BYTES_PER_STEP, "string bytes"),
        )
    except RegexError:
        return ERROR


def _regex_charge(ctx: Any) -> Callable[[int], None]:
    budget = ctx.budget
    return lambda n: budget.charge(n, "regular expression")


@fn("regexpMember")
def _regexp_member(args, scope, ctx, name):
    if len(args) not in (2, 3):
        return ERROR
    vals = strict(args, scope, ctx)
    if any(v is ERROR for v in vals):
        return ERROR
    if any(v is UNDEFINED for v in vals):
        return UNDEFINED
    pattern, lst = vals[0], vals[1]
    options = vals[2] if len(vals) == 3 else ""
    if type(pattern) is not str or not isinstance(lst, list) or type(options) is not str:
        return ERROR
    # As HTCondor: an element that fails to match (bad pattern, over the match limit) is
    # no match; an UNDEFINED element makes a miss UNDEFINED; any other non-string is ERROR.
    rx = _regex(pattern, options)
    charge = _regex_charge(ctx)
    maybe = False
    for v in lst:
        if v is UNDEFINED:
            maybe = True
            continue
        if type(v) is not str:
            return ERROR
        if rx is None:
            continue
        try:
            if pcre_search(rx, v, charge):
                return True
        except RegexError:
            continue
    return UNDEFINED if maybe else False


@fn("stringList_regexpMember")
def _sl_regexp_member(args, scope, ctx, name):
    # HTCondor's compat layer (condor_utils/compat_classad.cpp): every argument must be a
    # string (UNDEFINED too is ERROR), option letters in either case, a bad pattern is
    # ERROR, a failed match (over the limit) no match, and an empty list UNDEFINED.
    if not 2 <= len(args) <= 4:
        return ERROR
    vals = strict(args, scope, ctx)
    if any(type(v) is not str for v in vals):
        return ERROR
    pattern, lst = vals[0], vals[1]
    delims = vals[2] if len(vals) >= 3 else ", "
    rx = _regex(pattern, vals[3].lower() if len(vals) == 4 else "")
    if rx is None:
        return ERROR
    items = tokens(lst, delims)
    if not items:
        return UNDEFINED
    charge = _regex_charge(ctx)
    for item in items:
        try:
            if pcre_search(rx, item, charge):
                return True
        except RegexError:
            continue
    return False


# -- evaluation of text ------------------------------------------------------------
@lru_cache(maxsize=1024)
def _parse_cached(text: str) -> Expr | None:
    try:
        return parse_expr(text)
    except ClassAdSyntaxError:
        return None


@fn("eval")
def _eval(args, scope, ctx, name):
    if len(args) != 1:
        return ERROR
    s = to_string(ev(args[0], scope, ctx))
    if type(s) is not str:
        return ERROR
    ctx.budget.charge(len(s), "parsing eval() text")  # parsing costs about a step a character
    e = _parse_cached(s)
    if e is None:
        return ERROR
    return ev(e, scope, ctx)


@fn("unparse")
def _unparse_fn(args, scope, ctx, name):
    if len(args) != 1:
        return ERROR
    a = args[0]
    if isinstance(a, AttrRef) and scope is not None:
        e = scope.lookup(a.name)
        if e is None:
            t = ctx.target_of(scope)
            e = t.lookup(a.name) if t is not None else None
        return unparse(e, condor=True) if e is not None else "undefined"
    return unparse(a, condor=True)


@fn("interval")
def _interval(args, scope, ctx, name):
    if len(args) != 1:
        return ERROR
    secs = to_int(ev(args[0], scope, ctx))
    if secs is None:
        return ERROR
    days, rem = int(secs / 86400), secs - int(secs / 86400) * 86400
    hours, rem = int(rem / 3600), rem - int(rem / 3600) * 3600
    mins, s = int(rem / 60), rem - int(rem / 60) * 60
    if days:
        return f"{days}+{abs(hours):02d}:{abs(mins):02d}:{abs(s):02d}"
    if hours:
        return f"{hours}:{abs(mins):02d}:{abs(s):02d}"
    if mins:
        return f"{mins}:{abs(s):02d}"
    return f"{s}"
