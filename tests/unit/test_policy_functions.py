"""The policy functions (versions, string-list sets, nested-ad evaluation, time), with
values worked out by hand from HTCondor's rules (fnCall.cpp, compat_classad.cpp)."""

from __future__ import annotations

import pytest

from mockpool.classad import ERROR, UNDEFINED, ClassAd, evaluate, parse_ad
from mockpool.classad.policy_functions import natural_cmp


@pytest.mark.parametrize(
    ("a", "b", "want"),
    [
        ("1.10", "1.10", 0),
        ("1.10", "1.9", 1),  # runs "10" and "9": two digits against one, 2 - 1
        ("1.9", "1.10", -1),
        ("8.9.11", "8.9.7", 1),  # "11" is longer than "7"
        ("23.10.2", "23.0.1", 1),  # "10" vs "0": the lone 0 is no leading zero, lengths 2 - 1
        ("1.01", "1.1", -1),  # one leading zero against none: more zeros sort first, 0 - 1
        ("001", "01", -1),  # two leading zeros against one
        ("a", "b", -1),  # no digits: 'a' - 'b'
        ("1.10a", "1.10b", -1),
        ("", "1", -49),  # '\0' - '1'
        ("x1", "x", 49),  # '1' - '\0'
    ],
)
def test_natural_cmp_by_hand(a: str, b: str, want: int) -> None:
    assert natural_cmp(a, b) == want


@pytest.mark.parametrize(
    ("expr", "want"),
    [
        ('versionCmp("1.10", "1.9")', 1),
        ('versionGE("8.9.11", "8.9.7")', True),
        ('versionGT("8.9.7", "8.9.11")', False),
        ('versionLE("10.0.0", "9.0.0")', False),
        ('versionLT("1.01", "1.1")', True),
        ('versionEQ("2.0", "2.0")', True),
        ('versionGE(2, "10")', False),  # 2 becomes "2"; "2" vs "10": one digit against two
        ("versionGE(undefined, 1)", UNDEFINED),
        ("versionGE(error, 1)", ERROR),
        ('versionGE("1")', ERROR),
        ('version_in_range("1.5", "1.2", "1.10")', True),  # 2 <= 5 <= 10
        ('version_in_range("1.11", "1.2", "1.10")', False),
        ('version_in_range("1.2", "1.2", "1.2")', True),
        ('version_in_range("1", undefined, "2")', UNDEFINED),
        ('version_in_range(undefined, "1", "2")', ERROR),  # only the bounds may be UNDEFINED
    ],
)
def test_version_functions(expr: str, want: object) -> None:
    got = evaluate(expr)
    assert type(got) is type(want) and (got is want or got == want)


@pytest.mark.parametrize(
    ("expr", "want"),
    [
        ('stringListsIntersect("a,b", " c b")', True),  # b is in both
        ('stringListsIntersect("a,b", "c d")', False),
        ('stringListsIntersect("a;b", "b", ";")', True),
        ('stringListsIntersect("a; b", "b", ";")', False),  # no trimming: " b" is not "b"
        ('stringListsIntersect("a", "a", "")', True),  # empty delimiters mean " ,"
        ('stringListsIntersect("a", "a", undefined)', UNDEFINED),
        ('stringListsIntersect(undefined, "a")', UNDEFINED),
        ('stringListsIntersect("a", 3)', ERROR),
        ('stringListsIntersect("", "a")', False),
        ('stringListSubsetMatch("a, b", "b,c,a")', True),
        ('stringListSubsetMatch("a, d", "b,c,a")', False),
        ('stringListSubsetMatch("", "b")', True),  # the empty list is a subset of anything
        ('stringListSubsetMatch(undefined, "b")', True),  # UNDEFINED reads as empty
        ('stringListSubsetMatch("a", undefined)', False),
        ("stringListSubsetMatch(undefined, undefined)", UNDEFINED),
        ('stringListSubsetMatch(" , ", "a")', False),  # only delimiters: no item says yes
        ('stringListSubsetMatch("A", "a")', False),
        ('stringListISubsetMatch("A, B", "b;a", ";, ")', True),
        ('stringListSubsetMatch("a", "a", 1)', ERROR),
    ],
)
def test_string_list_sets(expr: str, want: object) -> None:
    assert evaluate(expr) is want


def test_count_matches_gpus_idiom() -> None:
    # two GPUs of capability 7.5 and 8.0 and one of 6.1; the job wants capability > 7
    slot = parse_ad(
        "AvailableGPUs = { GPUs_g0, GPUs_g1, GPUs_g2 }\n"
        "GPUs_g0 = [ Capability = 7.5 ]\nGPUs_g1 = [ Capability = 8.0 ]\nGPUs_g2 = [ Capability = 6.1 ]\n"
        "Requirements = true\n"
    )
    job = parse_ad(
        "RequireGPUs = Capability > 7\nRequestGPUs = 2\n"
        "Requirements = countMatches(MY.RequireGPUs, TARGET.AvailableGPUs) >= RequestGPUs\n"
    )
    assert evaluate("countMatches(MY.RequireGPUs, TARGET.AvailableGPUs)", job, slot) == 2
    assert evaluate(job.lookup("Requirements"), job, slot) is True
    assert evaluate("evalInEachContext(MY.RequireGPUs, TARGET.AvailableGPUs)", job, slot) == [
        True,
        True,
        False,
    ]
    # an unknown name is itself the expression, so this projects each GPU's Capability
    assert evaluate("evalInEachContext(Capability, AvailableGPUs)", slot) == [7.5, 8.0, 6.1]
    assert evaluate("max(evalInEachContext(Capability, AvailableGPUs))", slot) == 8.0


@pytest.mark.parametrize(
    ("expr", "want"),
    [
        ("countMatches(x > 1, {[x = 1], [x = 2], [x = 3]})", 2),
        (
            'countMatches(x, {[x = 1], [x = 0], [x = 2.5], [x = "a"], [x = true]})',
            3,
        ),  # 1, 2.5, true
        ("countMatches(x, undefined)", 0),  # countMatches does not propagate UNDEFINED
        ("evalInEachContext(x, undefined)", UNDEFINED),
        ("countMatches(x, 5)", ERROR),
        ("countMatches(1)", ERROR),
        ("evalInEachContext(1, {})", []),
    ],
)
def test_count_matches_rules(expr: str, want: object) -> None:
    got = evaluate(expr)
    assert got is want if want is UNDEFINED or want is ERROR else got == want


def test_eval_in_each_context_keeps_undefined_and_error() -> None:
    got = evaluate("evalInEachContext(x > 1, {[x = 1], [x = 2], undefined, 3})")
    assert got[:2] == [False, True] and got[2] is UNDEFINED and got[3] is ERROR


def test_current_time_is_the_pool_time() -> None:
    assert evaluate("CurrentTime", now=1_000) == 1_000
    assert evaluate("currentTime()", now=1_000.9) == 1_000  # whole seconds, as time()
    assert evaluate("time() == CurrentTime && CurrentTime == currentTime()", now=77.5) is True
    assert (
        evaluate(
            "CurrentTime - EnteredCurrentStatus", ClassAd({"EnteredCurrentStatus": 400}), now=1_000
        )
        == 600
    )
    # an ad that defines CurrentTime keeps its own
    assert evaluate("CurrentTime", ClassAd({"CurrentTime": 5}), now=1_000) == 5
    # the alias stops at the ad: TARGET's CurrentTime is not consulted
    assert evaluate("CurrentTime", ClassAd(), ClassAd({"CurrentTime": 5}), now=1_000) == 1_000
    assert evaluate("currentTime(1)", now=1) is ERROR


@pytest.mark.parametrize(
    ("expr", "want"),
    [
        ("formatTime(0)", "Thu Jan  1 00:00:00 1970"),
        ('formatTime(86400 * 365, "%Y-%m-%d %H")', "1971-01-01 00"),  # 1970 has 365 days
        ('formatTime(3725, "%H:%M:%S")', "01:02:05"),  # 3725 = 3600 + 2*60 + 5
        ("formatTime(undefined)", ERROR),
        ("formatTime(1, 2)", ERROR),
        ('formatTime(1, "%H", 3)', ERROR),
    ],
)
def test_format_time(expr: str, want: object) -> None:
    got = evaluate(expr, now=0)
    assert got is want if want is ERROR else got == want


def test_format_time_without_arguments_uses_pool_time() -> None:
    assert evaluate("formatTime()", now=86_400 + 60) == "Fri Jan  2 00:01:00 1970"


def test_split_time() -> None:
    ad = evaluate("splitTime(3725)")
    fields = {
        k: evaluate(f"s.{k}", ClassAd({"s": ad}))
        for k in ("Type", "Year", "Month", "Day", "Hours", "Minutes", "Seconds", "Offset")
    }
    assert fields == {
        "Type": "AbsoluteTime",
        "Year": 1970,
        "Month": 1,
        "Day": 1,
        "Hours": 1,
        "Minutes": 2,
        "Seconds": 5,
        "Offset": 0,
    }
    assert evaluate("splitTime(undefined)") is UNDEFINED
    assert evaluate('splitTime("x")') is ERROR


def test_debug_returns_its_argument() -> None:
    assert evaluate("debug(1 + 1)") == 2
    assert evaluate("debug()") is ERROR


@pytest.mark.parametrize(
    ("expr", "want"),
    [
        ('stringListMember("a", "b\ta")', True),  # tabs and newlines delimit by default
        ('stringListMember("a", "b;a", ";")', True),
        ('stringListMember("a", "b\ta", undefined)', True),  # UNDEFINED delimiters: the default
        ("stringListMember(undefined, undefined)", UNDEFINED),
        ('stringListMember(undefined, "a, ")', False),  # UNDEFINED reads as "", which no item is
        ('stringListMember("a", undefined)', False),
        ("stringListMember(undefined, 3)", ERROR),  # neither string nor UNDEFINED
        ('stringListMember(error, "a")', ERROR),
        ('stringListMember("a", "a", 3)', ERROR),
        ('stringListIMember("A", " b , a ")', True),  # items are trimmed
        ('stringListMember("a")', ERROR),
    ],
)
def test_string_list_member_rules(expr: str, want: object) -> None:
    assert evaluate(expr) is want
