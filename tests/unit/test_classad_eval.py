"""Unit tests for ClassAd evaluation: operators, UNDEFINED/ERROR propagation, scoping,
selection and subscripts, matchmaking, and the expression parser.

Every expected value below was worked out by hand from HTCondor's semantics and then
checked against HTCondor's own library (classad2 after `import htcondor2`, i.e. the
daemons' old-ClassAd semantics). Where HTCondor's answer is surprising a comment says so.
These tests do not use the oracle at run time.
"""

from __future__ import annotations

import math

import pytest

from mockpool.classad import (
    ERROR,
    UNDEFINED,
    ClassAd,
    ClassAdSyntaxError,
    evaluate,
    matches,
    parse_expr,
    unparse,
)
from mockpool.classad.ad import literal_binding, shared_literal

U = UNDEFINED
E = ERROR
INT_MIN = -(2**63)
INT_MAX = 2**63 - 1


def same(actual, expected) -> bool:
    """Value equality that also insists on the type (int is not float is not bool)."""
    if expected is UNDEFINED or expected is ERROR:
        return actual is expected
    if actual is UNDEFINED or actual is ERROR:
        return False
    if type(actual) is not type(expected):
        return False
    if isinstance(expected, list):
        return len(actual) == len(expected) and all(same(a, e) for a, e in zip(actual, expected))
    if isinstance(expected, float):
        return math.isclose(actual, expected, rel_tol=1e-12, abs_tol=0.0) or actual == expected
    return actual == expected


def check(text, expected, my=None, target=None):
    actual = evaluate(text, my, target)
    assert same(actual, expected), f"{text!r} -> {actual!r}, expected {expected!r}"


def mk(**attrs: str) -> ClassAd:
    """An ad whose attribute values are given as expression texts."""
    return ClassAd({name: parse_expr(text) for name, text in attrs.items()})


# ---------------------------------------------------------------------------------------
# Arithmetic: int op int -> int; a real operand promotes to real; booleans count as 0/1.
# Integer / and % truncate toward zero (C); real % is ERROR; x/0 and x%0 are ERROR;
# integer results wrap around as signed 64-bit.
ARITHMETIC = [
    ("1 + 2", 3),
    ("1 + 2.0", 3.0),
    ("1.5 + 1.5", 3.0),
    ("10 - 2.5", 7.5),
    ("10 - 12", -2),
    ("3 * -2", -6),
    ("2.5 * 2", 5.0),
    ("7 / 2", 3),
    ("-7 / 2", -3),
    ("7 / -2", -3),
    ("-7 / -2", 3),
    ("7.0 / 2", 3.5),
    ("7 / 2.0", 3.5),
    ("-7.0 / 2", -3.5),
    ("6 / 3", 2),
    ("7 % 2", 1),
    ("-7 % 2", -1),
    ("7 % -2", 1),
    ("-7 % -2", -1),
    ("6 % 3", 0),
    ("7.5 % 2", E),  # real modulo is ERROR
    ("7 % 2.0", E),
    ("1 / 0", E),
    ("1 % 0", E),
    ("1.0 / 0", E),
    ("1 / 0.0", E),
    ("0 / 5", 0),
    ("true + 1", 2),  # booleans are numbers in arithmetic ...
    ("true + true", 2),
    ("false - 1", -1),
    ("true * 2.5", 2.5),
    ("10 / true", 10),
    ('"a" + 1', E),
    ('"1" + 1', E),
    ('"a" + "b"', E),
    ("{1} + 1", E),
    ("[a = 1] + 1", E),
    # int64 wrap-around
    ("9223372036854775807 + 1", INT_MIN),
    ("-9223372036854775807 - 2", INT_MAX),
    ("4611686018427387904 * 2", INT_MIN),
    ("9223372036854775807 * 2", -2),
    ("-9223372036854775807 - 1", INT_MIN),
    ("(-9223372036854775807 - 1) / -1", INT_MAX),  # HTCondor special-cases INT_MIN / -1
    ("(-9223372036854775807 - 1) % -1", 0),
]


@pytest.mark.parametrize("text, expected", ARITHMETIC)
def test_arithmetic(text, expected):
    check(text, expected)


# Unary operators. `-x`/`+x` need a number (`-true` is ERROR although `true + 1` is 2);
# `!` takes booleans and numbers (nonzero is true); `~` takes integers only.
UNARY = [
    ("-5", -5),
    ("-(-5)", 5),
    ("+5", 5),
    ("-2.5", -2.5),
    ("+2.5", 2.5),
    ("-0", 0),
    ("-true", E),  # surprising: unary minus rejects booleans
    ("+true", E),
    ('-"a"', E),
    ("-undefined", U),
    ("-error", E),
    ("-{1}", E),
    ("!true", False),
    ("!false", True),
    ("!!true", True),
    ("!1", False),
    ("!0", True),
    ("!1.5", False),
    ('!"a"', E),
    ("!undefined", U),
    ("!error", E),
    ("~5", -6),
    ("~0", -1),
    ("~-1", 0),
    ("~true", E),
    ("~1.5", E),
    ("~undefined", U),
    ("~error", E),
]


@pytest.mark.parametrize("text, expected", UNARY)
def test_unary(text, expected):
    check(text, expected)


# Comparisons < <= > >= == !=: numbers (and booleans, as 0/1) compare numerically,
# strings compare ignoring case, mismatched types are ERROR, lists and ads are ERROR,
# UNDEFINED operands give UNDEFINED, ERROR gives ERROR.
COMPARISON = [
    ("1 < 2", True),
    ("2 < 1", False),
    ("1 <= 1", True),
    ("2 <= 1", False),
    ("1.5 > 1", True),
    ("1 > 1.5", False),
    ("1 >= 1.0", True),
    ("0.5 >= 1", False),
    ("1 == 1.0", True),
    ("1 == 2", False),
    ("1 != 1.0", False),
    ("1 != 2", True),
    ('"abc" == "ABC"', True),
    ('"abc" != "ABC"', False),
    ('"abc" == "abd"', False),
    ('"abc" < "abd"', True),
    ('"B" > "a"', True),
    ('"a" < "B"', True),
    ('"abc" <= "ABC"', True),
    ('"" < "a"', True),
    ('"1" == 1', E),
    ('"a" < 1', E),
    ('1 != "1"', E),
    ("true == 1", True),
    ("true == 1.0", True),
    ("false == 0", True),
    ("true > 0", True),
    ("true < 2", True),
    ("true == false", False),
    ("true != false", True),
    ('true == "true"', E),
    ("undefined == 1", U),
    ("1 == undefined", U),
    ("undefined == undefined", U),
    ("undefined != undefined", U),
    ("undefined < 1", U),
    ("error == 1", E),
    ("1 < error", E),
    ("error == error", E),
    ("{1, 2} == {1, 2}", E),  # lists do not compare with ==
    ("[a = 1] == [a = 1]", E),
    ("{1} < {2}", E),
]


@pytest.mark.parametrize("text, expected", COMPARISON)
def test_comparison(text, expected):
    check(text, expected)


# Meta-comparisons =?= =!= is isnt: never UNDEFINED or ERROR for scalars; the types must
# match exactly (1 =?= 1.0 is false, true =?= 1 is false); strings compare with case.
# Keywords are case-insensitive. Lists and ads are ERROR even here (HTCondor).
META = [
    ("1 =?= 1", True),
    ("1 =?= 2", False),
    ("1 =?= 1.0", False),
    ("1 =!= 1.0", True),
    ("1.5 =?= 1.5", True),
    ("true =?= 1", False),
    ("true =?= true", True),
    ('"abc" =?= "abc"', True),
    ('"abc" =?= "ABC"', False),
    ('"abc" =!= "ABC"', True),
    ('"1" =?= 1', False),
    ("undefined =?= undefined", True),
    ("undefined =!= undefined", False),
    ("undefined =?= 1", False),
    ("1 =!= undefined", True),
    ("error =?= error", True),
    ("error =?= undefined", False),
    ("error =!= 1", True),
    ("undefined =?= false", False),
    ("1 is 1", True),
    ("1 is 1.0", False),
    ("1 isnt 2", True),
    ("1 isnt 1", False),
    ("undefined is undefined", True),
    ("undefined isnt undefined", False),
    ("1 IS 1", True),
    ("1 ISNT 1", False),
    ('"a" is "A"', False),
    ("{1} =?= {1}", E),  # surprising: no structural identity for lists
    ("[a = 1] =?= [a = 1]", E),
]


@pytest.mark.parametrize("text, expected", META)
def test_meta_comparison(text, expected):
    check(text, expected)


# Logical && and || are non-strict and short-circuit, left to right:
# false && anything is false; true || anything is true; UNDEFINED combines with a
# decisive right side (undefined && false is false, undefined || true is true);
# ERROR on the left is ERROR; a non-boolean, non-number operand is ERROR;
# numbers act as booleans (nonzero is true).
LOGICAL = [
    ("true && true", True),
    ("true && false", False),
    ("false && true", False),
    ("false || false", False),
    ("true || false", True),
    ("false || true", True),
    ("undefined && false", False),
    ("false && undefined", False),
    ("undefined && true", U),
    ("true && undefined", U),
    ("undefined && undefined", U),
    ("undefined || true", True),
    ("true || undefined", True),
    ("undefined || false", U),
    ("false || undefined", U),
    ("undefined || undefined", U),
    ("false && error", False),
    ("error && false", E),
    ("true && error", E),
    ("error && true", E),
    ("true || error", True),
    ("error || true", E),
    ("false || error", E),
    ("undefined && error", E),
    ("undefined || error", E),
    ("error && undefined", E),
    ('"x" && true', E),
    ('true && "x"', E),
    ('false && "x"', False),
    ('true || "x"', True),
    ('false || "x"', E),
    ('undefined && "x"', E),
    ("{1} && true", E),
    ("1 && 2", True),
    ("1 && 0", False),
    ("0 || 0", False),
    ("0.0 || 1.5", True),
    ("0 && error", False),
    ("2 || error", True),
    ("1 && true", True),
    ("false && 1/0", False),
    ("true || 1/0", True),
]


@pytest.mark.parametrize("text, expected", LOGICAL)
def test_logical(text, expected):
    check(text, expected)


# Conditional `c ? a : b` evaluates only the branch chosen; an UNDEFINED condition gives
# UNDEFINED, ERROR or a non-boolean non-number gives ERROR; numbers act as booleans.
# Elvis `a ?: b` is a unless a is UNDEFINED (an ERROR a stays ERROR).
CONDITIONAL = [
    ("true ? 1 : 2", 1),
    ("false ? 1 : 2", 2),
    ("undefined ? 1 : 2", U),
    ("error ? 1 : 2", E),
    ('"x" ? 1 : 2', E),
    ('1 ? "a" : "b"', "a"),
    ('0 ? "a" : "b"', "b"),
    ("0.0 ? 1 : 2", 2),
    ("2.5 ? 1 : 2", 1),
    ("true ? 1 : error", 1),
    ("false ? error : 2", 2),
    ("true ? 1 : 1/0", 1),
    ("true ? 1.5 : 2", 1.5),
    ("true ? false ? 1 : 2 : 3", 2),
    ("false ? 1 : true ? 2 : 3", 2),
    ("false ? 1 : false ? 2 : 3", 3),
    ("undefined ?: 2", 2),
    ("1 ?: 2", 1),
    ("false ?: 2", False),
    ("0 ?: 2", 0),
    ('"" ?: 2', ""),
    ("error ?: 2", E),
    ("undefined ?: undefined", U),
    ("undefined ?: undefined ?: 3", 3),
    ("nosuchattr ?: 5", 5),
]


@pytest.mark.parametrize("text, expected", CONDITIONAL)
def test_conditional(text, expected):
    check(text, expected)


# Bitwise & | ^ ~ << >> >>> on integers only (booleans and reals are ERROR).
# >> is arithmetic (sign-extending), >>> logical; the shift count is taken mod 64.
BITWISE = [
    ("6 & 3", 2),
    ("6 | 3", 7),
    ("6 ^ 3", 5),
    ("~6", -7),
    ("-1 & 255", 255),
    ("1 << 4", 16),
    ("256 >> 4", 16),
    ("-8 >> 1", -4),
    ("-1 >> 10", -1),
    # HTCondor sign-extends a negative value bit by bit: a negative count leaves it as it
    # is and 64 or more gives -1; a non-negative value's count is taken mod 64.
    ("-289 >> -1", -289),
    ("-7 >> -7", -7),
    ("-289 >> 64", -1),
    ("-289 >> 70", -1),
    ("289 >> -63", 144),
    ("-8 >>> 1", 9223372036854775804),  # logical shift of the 64-bit pattern
    ("-1 >>> 60", 15),
    ("8 >>> 1", 4),
    ("1 << 63", INT_MIN),
    ("1 << 64", 1),  # shift count mod 64
    ("1 << 65", 2),
    ("1 << -1", INT_MIN),  # -1 mod 64 = 63
    ("1.5 & 1", E),
    ("1 | 2.0", E),
    ("1 << 1.0", E),
    ("true & 1", E),
    ("true | false", E),  # surprising: no bitwise on booleans
    ('"a" ^ 1', E),
    ("6 & undefined", U),
    ("undefined << 1", U),
    ("6 | error", E),
]


@pytest.mark.parametrize("text, expected", BITWISE)
def test_bitwise(text, expected):
    check(text, expected)


# Precedence, loosest first: ?: , ||, &&, |, ^, &, (== != =?= =!= is isnt),
# (< <= > >=), (<< >> >>>), (+ -), (* / %), unary, then . [] ().
# Binary operators are left-associative; ?: is right-associative.
PRECEDENCE = [
    ("1 | 2 ^ 3 & 4", 3),  # 1 | (2 ^ (3 & 4))
    ("6 & 3 | 8", 10),
    ("1 ^ 3 | 4", 6),
    ("1 << 2 + 1", 8),
    ("1 + 2 << 1", 6),
    ("2 - 3 - 4", -5),
    ("3 - 2 + 1", 2),
    ("100 / 10 / 5", 2),
    ("2 * 3 % 4", 2),
    ("7 % 4 * 2", 6),
    ("2 + 3 * 4", 14),
    ("(2 + 3) * 4", 20),
    ("2 * -3", -6),
    ("-2 * 3", -6),
    ("~1 + 1", -1),
    ("8 >> 1 >> 1", 2),
    ("5 > 3 > 2", False),  # (5 > 3) > 2 -> true > 2 -> 1 > 2
    ("2 < 3 < 1", False),
    ("1 + 2 == 3", True),
    ("1 < 2 == true", True),
    ("2 < 1 == 1 > 2", True),  # (2 < 1) == (1 > 2)
    ("!true == false", True),
    ("true || false && false", True),
    ("(true || false) && false", False),
    ("!false && false", False),
    ("1 == 1 && 2 == 2", True),
    ("true || false ? 1 : 2", 1),
    ("1 ? 2 : 3 + 4", 2),
    ("false ? 2 : 3 + 4", 7),
    ("1 + 1 =?= 2", True),
    ("undefined =?= undefined && true", True),
    ("false && true || true", True),
]


@pytest.mark.parametrize("text, expected", PRECEDENCE)
def test_precedence(text, expected):
    check(text, expected)


# Strict operators propagate: ERROR wins over UNDEFINED (either side), then UNDEFINED
# wins over a type mismatch; operators never raise.
PROPAGATION = [
    ("undefined + 1", U),
    ("1 - undefined", U),
    ("undefined * 2.5", U),
    ("undefined / 0", U),
    ("undefined % 0", U),
    ("error + 1", E),
    ("1 * error", E),
    ("undefined + error", E),
    ("error + undefined", E),
    ("undefined == error", E),
    ("error < undefined", E),
    ('undefined + "a"', U),
    ('"a" - undefined', U),
    ("undefined + {1}", U),
    ("undefined & 1", U),
    ("undefined >>> 1", U),
    ("undefined <= 1", U),
    ("missing + 1", U),
    ("missing == missing", U),
    ("missing =?= undefined", True),
    ("(1/0) + undefined", E),
    ("(1/0) =?= error", True),
    ("-(1/0)", E),
    ("(missing + 1) * 2", U),
]


@pytest.mark.parametrize("text, expected", PROPAGATION)
def test_undefined_error_propagation(text, expected):
    check(text, expected)


# Attribute lookup: names are case-insensitive; a bare name is looked up in MY, then in
# TARGET (old-ClassAd scoping of HTCondor's daemons); MY.x and TARGET.x look only there;
# a missing attribute is UNDEFINED.
def _lookup_ads():
    return ClassAd({"A": 1, "Memory": 2048, "Name": "my"}), ClassAd({"A": 2, "B": 3, "Name": "t"})


LOOKUP = [
    ("A", 1),
    ("a", 1),
    ("memory", 2048),
    ("MEMORY", 2048),
    ("MY.memory", 2048),
    ("my.Memory", 2048),
    ("B", 3),  # not in MY: found in TARGET
    ("b", 3),
    ("TARGET.A", 2),
    ("target.a", 2),
    ("TARGET.B", 3),
    ("MY.B", U),
    ("C", U),
    ("TARGET.C", U),
    ("TARGET.Memory", U),
    ("Name", "my"),
    ("TARGET.Name", "t"),
    ("A + TARGET.A + B", 6),
    ("Memory >= 1024", True),
    ("MY.A == TARGET.A", False),
]


@pytest.mark.parametrize("text, expected", LOOKUP)
def test_attribute_lookup(text, expected):
    my, target = _lookup_ads()
    check(text, expected, my, target)


NO_ADS = [
    ("A", U),
    ("MY.A", U),
    ("TARGET.A", U),
    ("A + 1", U),
    ("isUndefined(TARGET.A)", True),
]


@pytest.mark.parametrize("text, expected", NO_ADS)
def test_lookup_without_ads(text, expected):
    check(text, expected)


def test_lookup_empty_my():
    check("Memory", 4096, ClassAd(), ClassAd({"Memory": 4096}))
    check("TARGET.Memory", 4096, ClassAd(), ClassAd({"Memory": 4096}))
    check("MY.Memory", U, ClassAd(), ClassAd({"Memory": 4096}))


def test_quoted_attribute_names():
    my = ClassAd({"a b": 5, "Memory": 10})
    check("'a b' + 1", 6, my)
    check("'Memory'", 10, my)
    check("MY.'a b'", 5, my)


# An attribute whose value is an expression is evaluated in the scope of the ad it is
# found in: reached through TARGET from the job, a slot attribute sees the slot as MY
# and the job as TARGET.
def _job():
    return mk(
        RequestMemory="1024",
        Owner='"job"',
        NeedFree="TARGET.Free",
        NeedFreeBare="Free",
        SlotVal="TARGET.Val",
        SlotOther="TARGET.Other",
        Double="RequestMemory * 2",
        Chain="Double + 1",
        Both="TARGET.Memory - MY.RequestMemory",
    )


def _slot():
    return mk(
        Memory="4096",
        Owner='"slot"',
        Free="Memory - TARGET.RequestMemory",
        FreeBare="Memory - RequestMemory",
        Val="Owner",
        Other="TARGET.Owner",
        UsesDouble="Double",
    )


SCOPED = [
    ("Double", 2048),
    ("Chain", 2049),
    ("NeedFree", 3072),
    ("NeedFreeBare", 3072),
    ("Free", 3072),  # bare name found in TARGET (the slot), evaluated there
    ("FreeBare", 3072),  # slot's RequestMemory missing: falls to its TARGET, the job
    ("TARGET.FreeBare", 3072),
    ("SlotVal", "slot"),  # Owner inside the slot's attribute is the slot's Owner
    ("SlotOther", "job"),  # TARGET inside the slot's attribute is the job
    ("TARGET.Val", "slot"),
    ("Val", "slot"),
    ("Owner", "job"),
    ("TARGET.Owner", "slot"),
    ("Both", 3072),
    ("TARGET.UsesDouble", 2048),  # slot -> its TARGET (the job) -> job's Double
]


@pytest.mark.parametrize("text, expected", SCOPED)
def test_expression_attributes_scope(text, expected):
    check(text, expected, _job(), _slot())


def test_scope_swaps_when_slot_is_my():
    check("Free", 3072, _slot(), _job())
    check("Val", "slot", _slot(), _job())
    check("TARGET.SlotOther", "job", _slot(), _job())


# Reference cycles never hang or raise. HTCondor does NOT give ERROR here: while an
# attribute is being evaluated, a reference back to it evaluates to UNDEFINED (checked
# against classad2), so `a = a + 1` is UNDEFINED, `a = a ?: 7` is 7 and
# `a = isUndefined(a)` is true.
CYCLES = [
    (dict(a="b", b="a"), "a", U),
    (dict(a="b", b="a"), "b", U),
    (dict(a="a + 1"), "a", U),
    (dict(a="a"), "a", U),
    (dict(a="MY.a"), "a", U),
    (dict(a="b + 1", b="c * 2", c="a"), "a", U),
    (dict(a="b + 1", b="c * 2", c="a"), "c", U),
    (dict(a="a + 1"), "isError(a)", False),
    (dict(a="a + 1"), "isUndefined(a)", True),
    (dict(a="a + 1"), "a =?= undefined", True),
    (dict(a="a + 1", b="a * 2"), "b", U),
    (dict(a="a + 1", b="2"), "b", 2),  # a cycle elsewhere does not poison other attributes
    (dict(a="a ?: 7"), "a", 7),  # the inner `a` is UNDEFINED, so ?: falls through
    (dict(a="isUndefined(a)"), "a", True),
    (dict(a="isUndefined(b)", b="a"), "a", True),
    (dict(a="isUndefined(b)", b="a"), "b", True),
    (dict(a="a && false"), "a", False),  # undefined && false is false
    (dict(a="false && a"), "a", False),  # short-circuit never reaches the cycle
    (dict(a="true || a"), "a", True),
    (dict(a="b", b="a", c="a =?= undefined"), "c", True),
]


@pytest.mark.parametrize("attrs, text, expected", CYCLES)
def test_reference_cycles(attrs, text, expected):
    check(text, expected, mk(**attrs))


def test_cycle_through_target():
    check("x", U, mk(x="TARGET.y"), mk(y="TARGET.x"))
    check("x", U, mk(x="y"), mk(y="x"))
    check("x + 1", U, mk(x="TARGET.y"), mk(y="TARGET.x"))


def test_long_chain_is_not_a_cycle():
    attrs = {f"a{i}": f"a{i + 1} + 1" for i in range(50)}
    attrs["a50"] = "0"
    check("a0", 50, mk(**attrs))


# Selection `a.b`: on a nested ad; on a list of ads it selects from each element;
# on UNDEFINED it is UNDEFINED; on any other value ERROR.
def _nested():
    return mk(
        a="[b = 1; c = [d = 2]; e = b + 10]",
        l="{[x = 1], [x = 2], [y = 3]}",
        v="7",
        n="[w = v + 1]",
        s='"str"',
    )


SELECTION = [
    ("a.b", 1),
    ("A.B", 1),
    ("a.c.d", 2),
    ("a.e", 11),
    ("a.z", U),
    ("a.c.z", U),
    ("a.z.d", U),
    ("l.x", [1, 2, U]),
    ("size(l.x)", 3),
    ("l[1].x", 2),
    ("n.w", 8),  # v is not in n: found in the enclosing ad
    ("[b = 5].b", 5),
    ("[b = 5; c = b + 1].c", 6),
    ("[b = [c = 3]].b.c", 3),
    ("missing.b", U),
    ("s.b", E),
    ("(1).b", E),
    ("isClassAd(a.c)", True),
    ("a.c.d + a.b", 3),
]


@pytest.mark.parametrize("text, expected", SELECTION)
def test_selection(text, expected):
    check(text, expected, _nested())


# Subscripts: lists by integer (0-based; out of range or a non-integer index is ERROR);
# ads by attribute-name string (case-insensitive, missing is UNDEFINED).
SUBSCRIPT = [
    ("{10, 20, 30}[0]", 10),
    ("{10, 20, 30}[2]", 30),
    ("{10, 20, 30}[3]", E),
    ("{10, 20, 30}[-1]", E),
    ("{}[0]", E),
    ("{10, 20}[1.0]", E),
    ("{10, 20}[true]", E),
    ('{10, 20}["a"]', E),
    ("{10, 20}[undefined]", U),
    ("{10, 20}[error]", E),
    ("{10, 20}[1 / 0]", E),
    ("{10, 20}[0 + 1]", 20),
    ("{{1, 2}, {3}}[0][1]", 2),
    ("{{1, 2}, {3}}[1][0]", 3),
    ('{"a", 2.5}[1]', 2.5),
    ('[a = 1]["a"]', 1),
    ('[a = 1]["A"]', 1),
    ('[a = 1]["b"]', U),
    ("[a = 1][0]", E),
    ("undefined[0]", U),
    ('"abc"[0]', E),
    ("5[0]", E),
    ("{1 + 1, 2 * 3}[1]", 6),
]


@pytest.mark.parametrize("text, expected", SUBSCRIPT)
def test_subscript(text, expected):
    check(text, expected)


def test_list_values():
    check("{}", [])
    check('{1, 2.5, "a", true}', [1, 2.5, "a", True])
    check("{1 + 1, undefined, error}", [2, U, E])
    check("{{1}, {}}", [[1], []])


def test_subscript_on_attributes():
    my = mk(L="{10, 20, 30}", I="1", Ad='[k = "v"]')
    check("L[I]", 20, my)
    check("L[I + 5]", E, my)
    check('Ad["K"]', "v", my)


# matches(job, slot): both Requirements must be true against the other ad.
def test_matches_symmetric():
    job = mk(RequestMemory="1024", Requirements="TARGET.Memory >= RequestMemory")
    slot = mk(Memory="2048", Requirements="TARGET.RequestMemory <= Memory")
    assert matches(job, slot) is True
    assert matches(slot, job) is True


MATCH_CASES = [
    # (job Requirements, slot Requirements, slot Memory, expected)
    ("TARGET.Memory >= 1024", "true", "2048", True),
    ("TARGET.Memory >= 1024", "true", "512", False),
    ("Memory >= 1024", "true", "2048", True),  # bare name found in the slot
    ("true", "TARGET.RequestMemory <= Memory", "2048", True),
    ("true", "TARGET.RequestMemory <= Memory", "512", False),
    ("true", "RequestMemory <= Memory", "2048", True),
    ("true", "false", "2048", False),
    ("undefined", "true", "2048", False),  # UNDEFINED Requirements: no match
    ("true", "undefined", "2048", False),
    ("TARGET.NoSuch > 1", "true", "2048", False),
    ("error", "true", "2048", False),
    ("true", "1/0 > 1", "2048", False),
    ('"yes"', "true", "2048", False),
    ("1", "true", "2048", True),  # a nonzero number is true in a boolean context
    ("2.5", "true", "2048", True),
    ("0", "true", "2048", False),
]


@pytest.mark.parametrize("job_req, slot_req, memory, expected", MATCH_CASES)
def test_matches(job_req, slot_req, memory, expected):
    job = mk(RequestMemory="1024", Requirements=job_req)
    slot = mk(Memory=memory, Requirements=slot_req)
    assert matches(job, slot) is expected


def test_matches_missing_requirements():
    slot = mk(Memory="2048", Requirements="true")
    assert matches(mk(RequestMemory="1024"), slot) is False
    assert matches(mk(Requirements="true"), mk(Memory="1")) is False


# Parser: literals.
LITERALS = [
    ("42", 42),
    ("0", 0),
    ("9223372036854775807", INT_MAX),
    ("1.5", 1.5),
    ("1.5e-2", 0.015),
    ("1.5E+2", 150.0),
    ("1e3", 1000.0),
    (".5", 0.5),
    ("0.0", 0.0),
    ('""', ""),
    ('"abc"', "abc"),
    (r'"a\tb"', "a\tb"),
    (r'"a\nb"', "a\nb"),
    (r'"\101"', "A"),  # octal escape
    (r'"a\"b"', 'a"b'),
    (r'"a\\b"', "a\\b"),
    (r'"it\'s"', "it's"),
    ("'quoted' =?= undefined", True),  # single quotes are an attribute name, not a string
    ("true", True),
    ("TRUE", True),
    ("tRuE", True),
    ("false", False),
    ("False", False),
    ("undefined", U),
    ("UNDEFINED", U),
    ("error", E),
    ("Error", E),
    ("  7  ", 7),
    ("(((3)))", 3),
]


@pytest.mark.parametrize("text, expected", LITERALS)
def test_literals(text, expected):
    check(text, expected)


# unparse(parse_expr(t)) parses back to an equal tree.
ROUND_TRIP = [
    "1",
    "-1",
    "1.5",
    "1.5e-2",
    ".5",
    "1e10",
    "1e-300",
    "0.1",
    "9223372036854775807",
    '""',
    '"abc"',
    r'"a\tb"',
    r'"a\"b"',
    r'"a\\b"',
    r'"\101"',
    r'"line\nbreak"',
    "true",
    "false",
    "undefined",
    "error",
    "a",
    "MY.a",
    "TARGET.Memory >= 1024",
    "a.b.c",
    "x[0]",
    "a.b[1].c",
    "{}",
    "{1, 2, {3}}",
    "[]",
    "[a = 1; b = a + 1]",
    "[a = [b = 1]].a.b",
    "f()",
    "f(1, 2)",
    'strcat("a", b, 1.5)',
    "ifThenElse(a, b, c)",
    "a ? b : c",
    "a ? b : c ? d : e",
    "(a ? b : c) ? d : e",
    "a ?: b",
    "!a && -b || ~c",
    "!(a && b)",
    "-a.b",
    "-(-1)",
    "(1 + 2) * 3",
    "1 + (2 * 3)",
    "1 + 2 * 3",
    "2 - 3 - 4",
    "2 - (3 - 4)",
    "(2 - 3) - 4",
    "a =?= b",
    "a =!= b",
    "a is b",
    "a isnt b",
    "x =?= undefined",
    "a == b && c != d",
    "a < b == c > d",
    "a <= b || c >= d",
    "1 << 2 >> 3 >>> 4",
    "a & b | c ^ d",
    "a % b / c * d",
    "'a b' + 1",
    "TARGET.Memory >= 1 ? 1 : 0",
    'TARGET.Arch == "X86_64" && TARGET.OpSys == "LINUX" && TARGET.Disk >= RequestDisk',
    "(TARGET.Memory >= RequestMemory) && (TARGET.Cpus >= RequestCpus)",
    "quantize(TARGET.RequestMemory, {128, 256})",
    'regexp("^a.*", Name, "i")',
]


@pytest.mark.parametrize("text", ROUND_TRIP)
def test_unparse_round_trip(text):
    tree = parse_expr(text)
    out = unparse(tree)
    assert isinstance(out, str)
    again = parse_expr(out)
    assert again == tree, f"{text!r} -> {out!r} parsed back differently"
    assert unparse(again) == out  # stable after one trip


def test_round_trip_keeps_value():
    for text in ["2 - (3 - 4)", "(2 + 3) * 4", r'"a\tb\"c"', "1.5e-2", "-7 / 2", "1 << 65"]:
        assert same(evaluate(unparse(parse_expr(text))), evaluate(text)), text


# Malformed text raises ClassAdSyntaxError with a 0-based .position in a sensible range
# (lo <= position <= hi): where the bad token starts or where the text ran out.
SYNTAX_ERRORS = [
    ("1 +", 2, 3),
    ("(1", 2, 2),
    ('"abc', 0, 4),
    ("a ==== b", 4, 5),
    ("f(1,", 4, 4),
    ("{1,2", 4, 4),
    ("[a=]", 3, 3),
    ("", 0, 0),
    (")", 0, 0),
    ("1 2", 2, 2),
    ("a.", 2, 2),
    ("1 +* 2", 3, 3),
    ("{1,,2}", 3, 3),
    ("a ? b", 5, 5),
    ("[a = 1", 6, 6),
    ("f(,)", 2, 2),
    ("1 + (2 * 3", 10, 10),
    ("a ! b", 2, 2),
]


@pytest.mark.parametrize("text, lo, hi", SYNTAX_ERRORS)
def test_syntax_errors(text, lo, hi):
    with pytest.raises(ClassAdSyntaxError) as info:
        parse_expr(text)
    pos = info.value.position
    assert isinstance(pos, int)
    assert 0 <= pos <= len(text)
    assert lo <= pos <= hi, f"{text!r}: position {pos}, expected {lo}..{hi}"


def test_syntax_error_line_and_column():
    with pytest.raises(ClassAdSyntaxError) as info:
        parse_expr("1 +\n  * 2")
    err = info.value
    assert err.position == 6
    assert err.line == 2
    assert err.column == 3


def test_evaluate_accepts_parsed_tree():
    tree = parse_expr("A * 2")
    check(tree, 6, ClassAd({"A": 3}))
    check(tree, U)


def test_an_ad_built_on_a_base_with_nested_ads_holds_copies_of_them() -> None:
    """ClassAd.from_exprs(pairs, base): the base's nested ads are copied for the new ad
    (a nested ad looks attributes up in the ad that holds it), the base is unchanged."""
    base = ClassAd(X=1)
    base["Inner"] = parse_expr("[a = 1; b = X]")
    ad = ClassAd.from_exprs([("X", parse_expr("2")), ("Y", parse_expr("3"))], base)
    assert evaluate(parse_expr("Inner.b"), ad) == 2  # its holder's X
    assert evaluate(parse_expr("Inner.b"), base) == 1
    assert ad.lookup("Inner") is not base.lookup("Inner") and ad.eval("Y") == 3
    assert list(base.keys()) == ["X", "Inner"]


def test_an_ad_built_from_tuples_shares_their_bindings_but_keeps_its_spelling() -> None:
    """ClassAd.from_exprs binds a tuple pair as it is (two ads share it), unless the base
    already spells the name otherwise: then the base's spelling stays, with the new
    value; a list pair is made a binding of its own."""
    cpus = ("Cpus", parse_expr("4"))
    a, b = ClassAd.from_exprs([cpus]), ClassAd.from_exprs([cpus])
    assert next(a.pairs()) is cpus and next(b.pairs()) is cpus
    respelled = ClassAd.from_exprs([("CPUS", parse_expr("8"))], a)
    assert list(respelled.pairs()) == [("Cpus", parse_expr("8"))] and a.eval("Cpus") == 4
    listed = ClassAd.from_exprs([["Memory", parse_expr("1")]])
    assert next(listed.pairs()) == ("Memory", parse_expr("1"))
    assert type(next(listed.pairs())) is tuple


def test_shared_bindings_keep_the_sign_of_zero() -> None:
    """0.0 and -0.0 are equal keys but not the same value: a binding of -0.0 keeps its
    sign after one of 0.0 was shared (and NaN stays NaN); 1 and True are two values."""
    zero, negative = literal_binding("Load", 0.0), literal_binding("Load", -0.0)
    assert str(zero[1].value) == "0.0" and str(negative[1].value) == "-0.0"
    assert str(shared_literal(0.0).value) == "0.0"
    assert str(shared_literal(-0.0).value) == "-0.0"
    assert literal_binding("Load", 2.0) is literal_binding("Load", 2.0)
    assert literal_binding("Load", 1) is not literal_binding("Load", True)
    nan = literal_binding("Load", float("nan"))[1].value
    assert nan != nan


def test_set_literals_is_assignment_of_plain_values() -> None:
    # the name keeps its first spelling, the value replaces the old one, a copy is apart
    ad = ClassAd()
    ad["Cpus"] = parse_expr("1 + 1")
    copy = ad.copy()
    copy.set_literals([("CPUS", 3), ("Memory", 512)])
    assert list(copy) == ["Cpus", "Memory"]
    assert copy.eval("cpus") == 3 and copy.eval("Memory") == 512
    assert ad.eval("Cpus") == 2 and "Memory" not in ad


def test_lookups_and_string_values_read_each_ad_as_lookup_and_eval_do() -> None:
    """In bulk, as one ad at a time: a literal read as it is, an expression evaluated
    with the ad as MY (and the target given), a missing name and a non-string value
    None; an ad of a subclass through its own lookup."""

    class Counting(ClassAd):
        looked: int = 0

        def lookup(self, name: str):
            Counting.looked += 1
            return super().lookup(name)

    target = ClassAd({"Site": "east"})
    counted = Counting()
    counted["Name"] = "counted"
    ads = [
        ClassAd({"Name": "slot1@a"}),
        ClassAd({"Name": 7}),
        ClassAd({"Cpus": 1}),
        ClassAd.from_exprs(
            [
                ("NAME", parse_expr('strcat("slot", Cpus, "@", TARGET.Site)')),
                ("Cpus", parse_expr("2")),
            ]
        ),
        counted,
    ]
    assert ClassAd.lookups(ads, "name") == [ad.lookup("Name") for ad in ads]
    assert Counting.looked == 2
    assert ClassAd.string_values(ads, "Name", target) == [
        "slot1@a",
        None,
        None,
        "slot2@east",
        "counted",
    ]
    assert ClassAd.string_values(ads, "Name") == ["slot1@a", None, None, None, "counted"]
