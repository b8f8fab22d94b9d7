"""The evaluation step budget and PCRE2's match limit, with step counts worked by hand.

Costs (services/classad/budget.py, pcre.py): a literal is free; every other node is one
step (a chain ``a + b + c`` is one per operator); a list literal or a function's list result
costs one step more per item; a string result one step per 64 bytes (strcat/join charge it once
more before building it); a regular expression costs ``limit // 25`` for each match-limit
tier it is tried at (100, then 1,000, ... up to PCRE2's 10,000,000), and its subject's
length as a string's.
"""

from __future__ import annotations

import pytest

from mockpool.classad import ERROR, UNDEFINED, Budget, BudgetExceeded, ClassAd, evaluate, parse_expr
from mockpool.classad.kernel import CompiledExpr, SlotTable, match_vector, table_budget

POISON = 'regexp("(a+)+$", "' + "a" * 30 + '!")'
BELOW_LAST = 4 + 40 + 400 + 4_000 + 40_000  # the tiers up to 1,000,000 PCRE2 steps
ALL_TIERS = BELOW_LAST + 400_000  # and PCRE2's own limit, 10,000,000


def spent(
    text: str, my: ClassAd | None = None, target: ClassAd | None = None
) -> tuple[object, int]:
    b = Budget()
    value = evaluate(text, my, target, budget=b)
    return value, b.spent


def doubling(k: int) -> ClassAd:
    """a0 = 1; a_i = a_(i-1) + a_(i-1): evaluating a_k visits 2^k copies of a0."""
    ad = ClassAd(a0=1)
    for i in range(1, k + 1):
        ad[f"a{i}"] = parse_expr(f"a{i - 1} + a{i - 1}")
    return ad


# ------------------------------------------------------------------- scalar steps


def test_literals_are_free_and_each_operator_is_a_step() -> None:
    assert spent("42") == (42, 0)
    assert spent("1 + 2") == (3, 1)
    assert spent("1 + 2 * 3 - 4") == (3, 3)  # three operators
    # two operators and three references to literal attributes: 2 + 3
    assert spent("a + b + c", ClassAd(a=1, b=2, c=3)) == (6, 5)


def test_reference_chains_cost_what_they_visit() -> None:
    # T(k), the steps of `a_k`: 1 for the reference, then 1 for `+` and 2 T(k-1); T(0) = 1.
    # So T(k) = 3 * 2^k - 2: T(1) = 4, T(2) = 10, T(10) = 3070.
    assert spent("a1", doubling(1)) == (2, 4)
    assert spent("a2", doubling(2)) == (4, 10)
    assert spent("a10", doubling(10)) == (1024, 3070)
    b = Budget(9)
    with pytest.raises(BudgetExceeded):
        evaluate("a2", doubling(2), budget=b)


def test_exponential_references_stop_at_the_budget() -> None:
    ad = doubling(60)  # 2^60 additions: would never finish
    with pytest.raises(BudgetExceeded) as exc:
        evaluate("a60", ad, budget=Budget(100_000))
    assert exc.value.limit == 100_000 and "100,000 steps" in str(exc.value)
    assert evaluate("a60", ad) is ERROR  # without a budget of its own: the default, then ERROR


def test_lists_and_strings_cost_their_size() -> None:
    assert spent("{1, 2, 3}") == ([1, 2, 3], 1 + 3)  # the node, three items
    assert spent('split("a b c")') == (["a", "b", "c"], 1 + 3)  # the call, three items
    s64 = "x" * 64
    # the call, 192 bytes charged before building (3) and again as the result (3)
    assert spent(f'strcat("{s64}", "{s64}", "{s64}")') == ("x" * 192, 1 + 3 + 3)
    # short strings cost nothing beyond the call
    assert spent('strcat("a", "b")') == ("ab", 1)


def test_string_growth_is_stopped_before_it_is_built() -> None:
    # s_k = strcat(s_(k-1), s_(k-1)) from 64 KB doubles to 2^40 * 64 KB: refused long before
    ad = ClassAd(s0="x" * 65536)
    for i in range(1, 41):
        ad[f"s{i}"] = parse_expr(f"strcat(s{i - 1}, s{i - 1})")
    with pytest.raises(BudgetExceeded) as exc:
        evaluate("size(s40)", ad, budget=Budget())
    assert exc.value.what == "string bytes"
    # join of a long list with a long separator is charged before the join runs
    ad = ClassAd(sep="y" * 100_000, items=parse_expr('split(strcat(s0, ""), "")'))
    ad["items"] = parse_expr("{" + ", ".join(['"a"'] * 1000) + "}")
    with pytest.raises(BudgetExceeded):
        evaluate("join(sep, items)", ad, budget=Budget(500_000))  # 1000 * 100 KB = 100 MB


def test_eval_of_text_costs_a_step_per_character() -> None:
    # eval(): the call, the strcat call, 10 characters parsed, then the two `+`
    assert spent('eval(strcat("1 + 2 + 3", " "))') == (6, 1 + 1 + 10 + 2)


# ------------------------------------------------------------------- regular expressions


def test_an_ordinary_regexp_costs_its_first_tier() -> None:
    assert spent('regexp("^slot[0-9]+@", "slot12@host")') == (True, 1 + 4)
    assert spent('regexp("z", "abc")') == (False, 1 + 4)


def test_catastrophic_regexp_is_error_at_pcre2s_match_limit() -> None:
    # (a+)+$ against 30 a's and a '!' backtracks 2^30 ways: PCRE2 gives up at 10,000,000
    # (MATCHLIMIT), which HTCondor's classad library makes ERROR; every tier was tried.
    b = Budget(1_000_000)
    assert evaluate(POISON, budget=b) is ERROR and b.spent == 1 + ALL_TIERS
    # the default budget (200,000) stops it before the last tier runs: ERROR all the same
    with pytest.raises(BudgetExceeded) as exc:
        evaluate(POISON, budget=Budget())
    assert exc.value.what == "regular expression"
    assert evaluate(POISON) is ERROR


def test_regexp_member_treats_a_failed_match_as_no_match() -> None:
    # HTCondor: an element whose match errors is a miss; UNDEFINED elements make a miss UNDEFINED
    pattern = '"(a+)+$"'
    target = '"' + "a" * 30 + '!"'
    big = Budget(2_000_000)  # room for PCRE2's own limit, twice
    assert evaluate(f"regexpMember({pattern}, {{{target}}})", budget=big) is False
    assert evaluate(f'regexpMember({pattern}, {{{target}, "aaa"}})', budget=big) is True
    assert evaluate(f"regexpMember({pattern}, {{{target}}})") is ERROR  # the default budget
    assert evaluate('regexpMember("a", {"b", undefined})') is UNDEFINED
    assert evaluate('regexpMember("a", {"a", undefined})') is True
    assert evaluate('regexpMember("a", {"b", 1})') is ERROR
    assert evaluate('regexpMember("[", {"a"})') is False  # a bad pattern matches nothing


def test_replacement_output_is_charged_as_it_grows() -> None:
    ad = ClassAd(s="x" * 10_000, r="y" * 10_000)
    with pytest.raises(BudgetExceeded) as exc:
        evaluate('replaceAll(".", s, r)', ad, budget=Budget())  # would be 100 MB
    assert exc.value.what in ("string bytes", "regular expression")


@pytest.mark.parametrize(
    ("text", "want"),
    [
        # PCRE2 on bytes, no UTF mode: "." is one byte of the two in "é"
        ('regexp("^.$", "é")', False),
        ('regexp("^..$", "é")', True),
        # HTCondor's options: i, m, s, x anywhere in the string; unknown letters ignored
        ('regexp("A", "abc", "iq")', True),
        ('regexp("^b", "a\\nb", "m")', True),
        ('regexp("a.b", "a\\nb", "s")', True),
        ('regexp("a b # comment", "ab", "x")', True),
        # PCRE syntax Python's re lacks, or reads differently
        ('regexp("[[:digit:]]+", "abc123")', True),
        ('regexp("\\\\x{41}", "A")', True),
        ('regexp("\\\\u0041", "A")', ERROR),  # PCRE2 refuses \\u unless ALT_BSUX
        ('regexp("a++b", "aab")', True),
        ('regexp("(?<n>a)\\\\k<n>", "aa")', True),
        ('regexp("\\\\Qa.b\\\\E", "axb")', False),
        # replacement: \\N is a group; unset groups are empty; a group past the last that
        # took part is ERROR; a backslash before anything else stays
        ('regexps("(a)(b)?(c)", "ac", "[\\\\2]")', "[]"),
        ('regexps("(a)(b)?", "a", "[\\\\2]")', ERROR),
        ('regexps("a", "a", "\\\\n")', "\\n"),
        ('regexps("a", "banana", "<\\\\0>", "g")', "<a><a><a>"),
        ('replaceAll("a", "banana", "<\\\\0>")', "b<a>n<a>n<a>"),
        ('replace("x*", "ab", "-")', "-ab"),
        # HTCondor's global replace steps past the end after an empty match there: ERROR
        ('replaceAll("x*", "ab", "-")', ERROR),
        ('replaceAll("", "ab", "-")', ERROR),
    ],
)
def test_pcre2_semantics_as_htcondor(text: str, want: object) -> None:
    assert evaluate(text) == want if want is not ERROR else evaluate(text) is ERROR


# ------------------------------------------------------------------- the match kernel


def slots(n: int) -> SlotTable:
    return SlotTable.from_ads(
        [ClassAd(Name=f"slot{i}@host", Memory=1024 * i, Requirements=True) for i in range(n)]
    )


def test_a_vectorised_node_costs_a_step_per_64_rows() -> None:
    b = Budget()
    CompiledExpr("Memory > 1").eval(slots(10), None, "target", budget=b)
    assert b.spent == 2  # `>` and the reference, 1 + 10 // 64 each
    b = Budget()
    CompiledExpr("Memory > 1").eval(slots(200), None, "target", budget=b)
    assert b.spent == 2 * (1 + 200 // 64)


def test_match_vector_stops_a_poison_job() -> None:
    job = ClassAd(
        Requirements=parse_expr('regexp("(a+)+$", strcat("' + "a" * 30 + '", TARGET.Name, "!"))')
    )
    table = slots(50)  # a distinct subject per slot: 50 full-limit matches without a budget
    with pytest.raises(BudgetExceeded):
        match_vector(job, table, budget=table_budget(table.n))
    mr = match_vector(job, table)  # no budget of its own: nothing matches
    assert not mr.matches.any()
    good = ClassAd(Requirements=parse_expr("TARGET.Memory >= 2048"))
    assert match_vector(good, table, budget=table_budget(table.n)).matches.sum() == 48


def test_table_budget_grows_with_the_rows() -> None:
    assert table_budget(0).limit == 200_000
    assert table_budget(1000).limit == 200_000 + 100 * 1000


def test_string_list_regexp_member_as_htcondors_compat_layer() -> None:
    # every argument a string (UNDEFINED is ERROR), items trimmed, letters in either case,
    # an empty list UNDEFINED, a match over PCRE2's limit no match
    assert evaluate('stringList_regexpMember("^ab$", "xx, ab", ",")') is True
    assert evaluate('stringList_regexpMember("A", "xx, ab", ",", "I")') is True
    assert evaluate('stringList_regexpMember("a", " , ")') is UNDEFINED
    assert evaluate('stringList_regexpMember("a", undefined)') is ERROR
    assert evaluate('stringList_regexpMember("[", "a")') is ERROR
    poison = f'stringList_regexpMember("(a+)+$", "{"a" * 30}!, b")'
    assert evaluate(poison, budget=Budget(1_000_000)) is False
    assert evaluate(poison) is ERROR  # the default budget stops it first


def test_a_long_subject_costs_its_length() -> None:
    # the call, the reference to s, 6,400 bytes of subject (100), the first tier (4)
    ad = ClassAd(s="x" * 6400)
    b = Budget()
    assert evaluate('regexp("^x+$", s)', ad, budget=b) is True
    assert b.spent == 1 + 1 + 100 + 4
