"""The numpy match kernel agrees with the scalar evaluator, row by row."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mockpool.classad import ERROR, UNDEFINED, ClassAd, evaluate, matches, parse_expr
from mockpool.classad.kernel import (
    ColumnCarry,
    CompiledExpr,
    KernelStats,
    SlotTable,
    Varying,
    evaluate_rows,
    match_vector,
    value_keys,
)
from mockpool.classad.vector import X


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and (a is b or a == b)


SLOTS = [
    ClassAd(
        Name="slot1@a",
        Memory=1024,
        Cpus=1,
        Arch="X86_64",
        Start=True,
        Requirements=parse_expr("START && TARGET.RequestMemory <= Memory"),
    ),
    ClassAd(
        Name="slot1@b",
        Memory=4096,
        Cpus=4,
        Arch="x86_64",
        Start=parse_expr('TARGET.Owner != "bob"'),
        Requirements=parse_expr("START"),
    ),
    ClassAd(
        Name="slot1@c",
        Memory=8192,
        Cpus=8,
        Arch="aarch64",
        Start=False,
        Requirements=parse_expr("START"),
    ),
    ClassAd(
        Name="slot1@d", Memory=parse_expr("Cpus * 2048"), Cpus=2, Arch="X86_64", Requirements=True
    ),
    ClassAd(Name="slot1@e", Cpus=16, Arch=UNDEFINED),  # no Memory, no Requirements
]
JOB = ClassAd(
    Owner="alice",
    RequestMemory=2048,
    RequestCpus=2,
    Requirements=parse_expr('Memory >= RequestMemory && Arch == "x86_64"'),
    Rank=parse_expr("Memory + Cpus"),
)


def test_match_vector_hand_worked():
    # job side: Memory >= 2048 and Arch x86_64 (case-insensitive) -> b (4096), d (2*2048)
    # slot side: b's START (Owner != "bob") true; d's Requirements true
    r = match_vector(JOB, SLOTS)
    assert list(r.matches) == [False, True, False, True, False]
    # Rank = Memory + Cpus: a 1025, b 4100, c 8200, d 4098, e undefined -> 0.0
    assert list(r.rank) == [1025.0, 4100.0, 8200.0, 4098.0, 0.0]
    assert r.fallbacks == 0
    assert list(r.matches) == [matches(JOB, s) for s in SLOTS]


def test_slot_expressions_grouped_by_text_use_the_job_as_target():
    bob = JOB.copy()
    bob["Owner"] = "bob"
    r = match_vector(bob, SLOTS)
    assert list(r.matches) == [False, False, False, True, False]  # b's START refuses bob


def test_three_valued_results_per_row():
    vals = evaluate_rows("Memory / (Cpus - 2)", SLOTS, JOB, "target")
    # a: 1024/-1, b: 4096/2, c: 8192/6, d: 4096/0 -> error, e: undefined Memory
    assert vals[:3] == [-1024, 2048, 1365]
    assert vals[3] is ERROR and vals[4] is UNDEFINED


def test_fallbacks_are_counted_not_silent():
    stats = KernelStats()
    table = SlotTable.from_ads(SLOTS)
    v = CompiledExpr("[a = Cpus].a + 1").eval(table, JOB, "target", stats=stats)
    assert v.to_values(table.pool) == [2, 5, 9, 3, 17]
    assert stats.fallbacks == 1 and stats.fallback_rows == 5
    assert not CompiledExpr("[a = Cpus].a").vectorized
    assert CompiledExpr('Cpus > 2 && stringListMember(Arch, "x86_64,aarch64")').vectorized


def test_policy_functions_run_in_the_kernel_and_nested_ad_ones_fall_back():
    for text in (
        'versionGE(Arch, "1.9")',
        'version_in_range(Arch, "1", "2")',
        'stringListsIntersect(Arch, "a")',
        'stringListSubsetMatch("a", Arch)',
        'versionCmp(Arch, "2")',
    ):
        assert CompiledExpr(text).vectorized, text
    # these evaluate an expression inside listed ads, and CurrentTime may be an ad's own
    assert not CompiledExpr("countMatches(x > 1, AvailableGPUs) > 0").vectorized
    assert not CompiledExpr("evalInEachContext(x, L)").vectorized
    assert not CompiledExpr("CurrentTime > 5").vectorized
    stats = KernelStats()
    table = SlotTable.from_ads(
        [ClassAd(L=parse_expr("{[x = 2], [x = 0]}")), ClassAd(CurrentTime=3)]
    )
    v = CompiledExpr("countMatches(x > 1, L) + CurrentTime").eval(
        table, JOB, "target", stats=stats, now=100
    )
    assert v.to_values(table.pool) == [101, 3]  # 1 + the pool time; 0 + the ad's own CurrentTime
    assert stats.fallbacks == 1


def test_requirements_mask_counts_numbers_as_true():
    table = SlotTable.from_ads(SLOTS)
    mask = CompiledExpr("Cpus - 1").requirements_mask(table, JOB, "target")
    assert list(mask) == [False, True, True, True, True]


# -- property: random tables, random expressions --------------------------------------
_VALUES = st.one_of(
    st.integers(-5, 5),
    st.sampled_from([0.0, 1.5, -2.5, 1e300]),
    st.booleans(),
    st.sampled_from(["a", "A", "b", "x86_64", "X86_64", "a,b", "", "1.10", "1.9", "8.9.11", " , "]),
    st.just(UNDEFINED),
    st.just(ERROR),
)
_ATTRS = ["A", "B", "C"]
_SLOT_EXPRS = ["A + 1", "TARGET.J * 2", "B", "ifThenElse(A > 0, B, TARGET.J)", "C ?: 7"]


@st.composite
def _slot_ads(draw):
    ads = []
    for _ in range(draw(st.integers(1, 12))):
        ad = ClassAd()
        for name in _ATTRS:
            kind = draw(st.integers(0, 5))
            if kind == 0:
                continue  # absent in this row
            if kind == 1:
                ad[name] = parse_expr(draw(st.sampled_from(_SLOT_EXPRS)))
            else:
                ad[name] = draw(_VALUES)
        ads.append(ad)
    return ads


_LEAVES = [
    "A",
    "B",
    "C",
    "J",
    "MY.A",
    "TARGET.A",
    "TARGET.J",
    "MY.J",
    "1",
    "2.5",
    '"a"',
    '"X86_64"',
    "undefined",
    "error",
    "true",
    "false",
    "0",
    "CurrentTime",
    '"2.0.1"',
]
_BINOPS = [
    "+",
    "-",
    "*",
    "/",
    "%",
    "==",
    "!=",
    "<",
    "<=",
    ">",
    ">=",
    "=?=",
    "=!=",
    "&&",
    "||",
    "&",
    "|",
    "^",
    "<<",
    ">>",
    ">>>",
]


@st.composite
def _exprs(draw, depth=0):
    if depth > 2 or draw(st.integers(0, 3)) == 0:
        return draw(st.sampled_from(_LEAVES))
    k = draw(st.integers(0, 6))
    a = draw(_exprs(depth + 1))
    b = draw(_exprs(depth + 1))
    if k <= 2:
        return f"({a} {draw(st.sampled_from(_BINOPS))} {b})"
    if k == 3:
        return f"({a} ? {b} : {draw(_exprs(depth + 1))})"
    if k == 4:
        return f"({a} ?: {b})"
    if k == 5:
        return f"{draw(st.sampled_from(['-', '!', '~']))}{a}"
    fn = draw(
        st.sampled_from(
            [
                "ifThenElse({a}, {b}, 3)",
                "isUndefined({a})",
                "int({a})",
                "strcat({a}, {b})",
                'stringListMember({a}, "a,b")',
                "floor({a})",
                "size({a})",
                "toUpper({a})",
                'stringListsIntersect({a}, "b, a")',
                "stringListSubsetMatch({a}, {b})",
                "stringListIMember({a}, {b})",
                'versionGE({a}, "1.9")',
                "versionCmp({a}, {b})",
                'version_in_range({a}, "1.2", {b})',
                "countMatches(A > 0, {{{a}, [A = 1]}})",
                'formatTime({a}, "%Y")',
            ]
        )
    )
    return fn.format(a=a, b=b)


@settings(
    max_examples=400,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(slots=_slot_ads(), text=_exprs(), job_j=_VALUES, const_is=st.sampled_from(["my", "target"]))
def test_kernel_agrees_with_scalar_evaluator(slots, text, job_j, const_is):
    job = ClassAd(J=job_j, A=3)
    got = evaluate_rows(text, slots, job, const_is, now=1_000_000)
    for k, slot in enumerate(slots):
        my, target = (job, slot) if const_is == "my" else (slot, job)
        want = evaluate(text, my, target, now=1_000_000)
        assert _same(got[k], want), (
            f"row {k}: {text} -> kernel {got[k]!r}, scalar {want!r}; slot {slot}"
        )


@pytest.mark.parametrize("n", [1, 1000])
def test_match_vector_agrees_on_a_larger_table(n):
    slots = [SLOTS[k % len(SLOTS)] for k in range(n)]
    r = match_vector(JOB, slots)
    assert np.array_equal(r.matches, np.array([matches(JOB, s) for s in slots]))


# -- three-valued Requirements over rows that stand for several slots --------------------
# Four rows, each a class of slots: rows 0, 1 and 3 stand for several slots that differ
# in FileSystemDomain (of one type, string), row 2 for one slot. The job's own domain is
# "a". A row's Requirements are undecided where a slot of its class could answer
# otherwise than the row's first slot.
_KLEENE_ROWS = [
    {"FileSystemDomain": "a", "HasFileTransfer": True, "Cpus": 1},
    {"FileSystemDomain": "b", "HasFileTransfer": False, "Cpus": 2},
    {"FileSystemDomain": "c", "HasFileTransfer": True, "Cpus": 1},
    {"FileSystemDomain": "d", "HasFileTransfer": False, "Cpus": 1},
]


@pytest.mark.parametrize(
    ("requirements", "matches_", "unknown"),
    [
        # condor_submit's clause: decided wherever HasFileTransfer is true
        (
            "(TARGET.FileSystemDomain == MY.FileSystemDomain) || TARGET.HasFileTransfer",
            [True, False, True, False],
            [False, True, False, True],
        ),
        # && is decided where the right side is false
        (
            "(TARGET.FileSystemDomain == MY.FileSystemDomain) && TARGET.HasFileTransfer",
            [True, False, False, False],
            [True, False, False, False],
        ),
        # both sides vary: row 0's first slot says true on the right, others may not
        (
            '(TARGET.FileSystemDomain == "q") || (TARGET.FileSystemDomain == "a")',
            [True, False, False, False],
            [True, True, False, True],
        ),
        # ! keeps a varying value varying; a true right side decides
        (
            '!(TARGET.FileSystemDomain == "a") || TARGET.Cpus > 1',
            [False, True, True, True],
            [True, False, False, True],
        ),
        # a string compared with an integer is ERROR for every slot: decided (no match)
        (
            "(TARGET.FileSystemDomain == 5) || TARGET.HasFileTransfer",
            [False, False, False, False],
            [False, False, False, False],
        ),
        # a leaf that does not read the varying name is exact
        ("TARGET.Cpus > 1", [False, True, False, False], [False, False, False, False]),
    ],
)
def test_requirements_in_three_valued_logic(
    requirements: str, matches_: list[bool], unknown: list[bool]
) -> None:
    ads = [ClassAd(Requirements=True, **row) for row in _KLEENE_ROWS]
    table = SlotTable(ads, watch=frozenset({"filesystemdomain"}))
    job = ClassAd(Requirements=parse_expr(requirements), FileSystemDomain="a")
    varies = Varying(np.array([True, True, False, True]), frozenset({"filesystemdomain"}))
    result = match_vector(job, table, varies=varies)
    assert result.unknown is not None
    assert result.unknown.tolist() == unknown
    assert result.matches.tolist() == matches_
    # each row's value is its first slot's, as the scalar evaluator gives it
    assert matches_ == [matches(job, ad) for ad in ads]
    assert not table.touched  # what Requirements read is accounted for in ``unknown``


# -- some rows of a table ----------------------------------------------------------------
@settings(max_examples=200, deadline=None, derandomize=True)
@given(
    slots=_slot_ads(),
    text=_exprs(),
    job_j=_VALUES,
    const_is=st.sampled_from(["my", "target"]),
    pick=st.lists(st.integers(0, 20), max_size=8),
)
def test_some_rows_get_what_the_whole_table_gives_them(slots, text, job_j, const_is, pick):
    """``rows``: the values of those rows, in their order, as the whole table's."""
    table = SlotTable(slots)
    rows = np.array(sorted({p % len(slots) for p in pick}), dtype=np.int64)
    job = ClassAd(J=job_j, A=3)
    whole = CompiledExpr(text).eval(table, job, const_is, now=1_000_000).to_values(table.pool)
    some = CompiledExpr(text).eval(table, job, const_is, now=1_000_000, rows=rows)
    got = some.to_values(table.pool)
    assert len(got) == len(rows)
    for k, r in enumerate(rows.tolist()):
        assert _same(got[k], whole[r]), f"row {r}: {text}"


def test_match_vector_on_some_rows() -> None:
    """The match and the job's Rank on rows 3, 0 and 4 of SLOTS, in that order, as on
    the whole table; with ``varies``, ``unknown`` is of those rows too."""
    ranked = JOB.copy()
    ranked["Rank"] = parse_expr("TARGET.Memory")
    whole = match_vector(ranked, SLOTS)
    rows = np.array([3, 0, 4])
    some = match_vector(ranked, SlotTable(SLOTS), rows=rows)
    assert some.matches.tolist() == whole.matches[rows].tolist()
    assert some.rank.tolist() == whole.rank[rows].tolist()
    ads = [ClassAd(Requirements=True, **row) for row in _KLEENE_ROWS]
    table = SlotTable(ads, watch=frozenset({"filesystemdomain"}))
    job = ClassAd(
        Requirements=parse_expr(
            "(TARGET.FileSystemDomain == MY.FileSystemDomain) || TARGET.HasFileTransfer"
        ),
        FileSystemDomain="a",
    )
    varies = Varying(np.array([True, True]), frozenset({"filesystemdomain"}))
    got = match_vector(job, table, varies=varies, rows=np.array([3, 2]))
    assert got.matches.tolist() == [False, True]
    assert got.unknown is not None and got.unknown.tolist() == [True, False]


@settings(max_examples=200, deadline=None, derandomize=True)
@given(slots=_slot_ads(), text=_exprs(), job_j=_VALUES, const_is=st.sampled_from(["my", "target"]))
def test_all_rows_read_at_once_are_what_each_row_reads(slots, text, job_j, const_is):
    """``to_values`` (a tag's rows at a time) gives each row's ``value_at``, its type too."""
    table = SlotTable(slots)
    v = CompiledExpr(text).eval(table, ClassAd(J=job_j, A=3), const_is, now=1_000_000)
    got = v.to_values(table.pool)
    assert len(got) == v.n
    for r in range(v.n):
        assert _same(got[r], v.value_at(r, table.pool)), f"row {r}: {text}"


def test_a_carried_column_is_reused_while_its_rows_hold_the_same_objects() -> None:
    carry = ColumnCarry()
    ads = [a.copy() for a in SLOTS]  # copies share their values' objects
    memory = SlotTable(ads, carry=carry).column("Memory")
    assert SlotTable([a.copy() for a in ads], carry=carry).column("Memory") is memory
    assert (carry.reused, carry.built) == (1, 1)
    changed = [a.copy() for a in ads]
    changed[1]["Memory"] = 512  # slot1@b's row now holds another object
    table = SlotTable(changed, carry=carry)
    assert table.column("Memory") is not memory and carry.built == 2
    got = CompiledExpr("Memory >= 1024").requirements_mask(table, None, "target")
    # a 1024, b now 512, c 8192, d 2048, e no Memory
    assert got.tolist() == [True, False, True, True, False]


def _evaluate_as_afresh(carried: SlotTable, ads: list[ClassAd], exprs: list[str]) -> None:
    """Every expression on a table built with a carry gives what a fresh table gives."""
    fresh = SlotTable(ads)
    for text in exprs:
        want = CompiledExpr(text).eval(fresh, JOB, "target")
        got = CompiledExpr(text).eval(carried, JOB, "target")
        for k in range(len(ads)):
            assert _same(got.value_at(k, carried.pool), want.value_at(k, fresh.pool)), (text, k)
    # and each column read is the column a fresh table builds, row by row
    for key, col in carried._cols.items():
        built = fresh.column(key)
        assert (col.present == built.present).all(), key
        assert (col.lit.tags() == built.lit.tags()).all(), key
        for k in range(len(ads)):
            got_v, want_v = col.lit.value_at(k, carried.pool), built.lit.value_at(k, fresh.pool)
            assert _same(got_v, want_v), (key, k)


def test_tables_built_with_a_carry_evaluate_as_tables_built_afresh() -> None:
    """Random edits between tables (values changed, rows added and removed, strings new
    to the pool): every expression gives what a table without a carry gives."""
    import random

    rng = random.Random(7)
    exprs = [
        'Memory >= 2048 && Arch == "x86_64"',
        "Cpus * 2 + Memory",
        'Arch < "b"',
        "Requirements",
        "isUndefined(Memory)",
    ]
    carry = ColumnCarry()
    ads = [a.copy() for a in SLOTS]
    for _round in range(30):
        ads = [a.copy() for a in ads]
        for _ in range(3):
            k = rng.randrange(len(ads))
            op = rng.random()
            if op < 0.4:
                ads[k]["Memory"] = rng.choice([512, 2048, 4096, 2048.0, "big"])
            elif op < 0.6:
                ads[k]["Arch"] = rng.choice(["x86_64", "X86_64", "aarch64", f"arch{_round}"])
            elif op < 0.8 and len(ads) > 1:
                del ads[k]
            else:
                ads.insert(k, rng.choice(SLOTS).copy())
        _evaluate_as_afresh(SlotTable(ads, carry=carry), ads, exprs)
    assert carry.reused > 0


def test_a_carried_column_is_patched_where_the_ads_were_replaced() -> None:
    """The same ad objects in the same places but a few: only those rows are read again;
    a column whose replaced rows hold the same values' objects is the same column."""
    carry = ColumnCarry()
    ads = [a.copy() for a in SLOTS * 2]
    first = SlotTable(ads, carry=carry)
    memory, arch = first.column("Memory"), first.column("Arch")
    again = ads.copy()
    again[1] = ads[1].copy()  # a new ad sharing its values' objects
    again[3] = ads[3].copy()
    again[3]["Memory"] = 1024
    table = SlotTable(again, carry=carry)
    assert carry.changed is not None and carry.changed.tolist() == [1, 3]
    assert table.column("Arch") is arch
    patched = table.column("Memory")
    assert patched is not memory and carry.patched == 1
    got = CompiledExpr("Memory >= 2048").requirements_mask(table, None, "target")
    # a 1024, b 4096, c 8192, d now 1024 (was Cpus * 2048), e no Memory; then the copies
    assert got.tolist() == [False, True, True, False, False, False, True, True, True, False]
    # a column the last table did not read is not patched from an older table's
    older = again.copy()
    older[0] = again[0].copy()
    older[0]["Memory"] = 9999
    SlotTable(older, carry=carry)  # reads nothing
    newest = older.copy()
    newest[2] = older[2].copy()
    latest = SlotTable(newest, carry=carry)
    got = CompiledExpr("Memory == 9999").requirements_mask(latest, None, "target")
    assert got.tolist() == [True] + [False] * 9


def test_patched_tables_evaluate_as_tables_built_afresh() -> None:
    """Random replacements of ads between tables (the others the same objects), now and
    then a row added or removed (the rows moved: built again): every expression gives
    what a table without a carry gives."""
    import random

    rng = random.Random(11)
    exprs = ['Memory >= 2048 && Arch == "x86_64"', "Cpus * 2 + Memory", "isUndefined(Memory)"]
    carry = ColumnCarry()
    ads = [a.copy() for a in SLOTS * 4]
    for _round in range(40):
        ads = ads.copy()
        for _ in range(rng.choice([1, 2])):
            k = rng.randrange(len(ads))
            op = rng.random()
            if op < 0.85:
                ads[k] = ads[k].copy()
                if rng.random() < 0.7:
                    ads[k]["Memory"] = rng.choice([512, 2048, 2048.0, "big", None, True])
                    if rng.random() < 0.2:  # missing
                        del ads[k]["Memory"]
                if rng.random() < 0.3:
                    ads[k]["Arch"] = rng.choice(["x86_64", "aarch64", f"arch{_round}"])
            elif op < 0.93 and len(ads) > 4:
                del ads[k]
            else:
                ads.insert(k, rng.choice(SLOTS).copy())
        _evaluate_as_afresh(SlotTable(ads, carry=carry), ads, exprs)
    assert carry.patched > 10 and carry.reused > 10


@settings(max_examples=150, deadline=None, derandomize=True)
@given(slots=_slot_ads())
def test_a_columns_distinct_values_are_those_of_a_sort_of_its_tagged_rows(slots) -> None:
    """``uniques``: the literal values of a column in the order of a sort of the rows'
    (type, value) keys, each row's index into them, and each value read at its first row."""

    table = SlotTable(slots)
    for name in _ATTRS:
        col = table.column(name)
        values, inverse = table.uniques(col)
        tags, payload = value_keys(col.lit)
        xmask = tags == X
        payload[xmask] = np.flatnonzero(xmask)
        _u, first, want = np.unique(
            np.stack([tags, payload], axis=1), axis=0, return_index=True, return_inverse=True
        )
        assert inverse.tolist() == want.reshape(-1).tolist()
        expect = [col.lit.value_at(int(r), table.pool) for r in first]
        assert [_same(a, b) for a, b in zip(values, expect, strict=True)] == [True] * len(expect)


def test_per_row_reads_are_read_again_only_where_the_ad_was_replaced() -> None:
    carry = ColumnCarry()
    ads = [a.copy() for a in SLOTS * 2]
    read: list[str] = []

    def name(ad: ClassAd) -> str:
        read.append(ad.eval("Name"))
        return ad.eval("Name")

    SlotTable(ads, carry=carry)
    assert carry.per_row("Name", ads, name) == [a.eval("Name") for a in ads]
    assert len(read) == 10
    again = ads.copy()
    again[7] = ads[7].copy()
    again[7]["Name"] = "slot9@z"
    SlotTable(again, carry=carry)
    read.clear()
    got = carry.per_row("Name", again, name)
    assert read == ["slot9@z"] and got[7] == "slot9@z" and got[6] == "slot1@b"
    moved = again[1:]  # every row moved: all read
    SlotTable(moved, carry=carry)
    read.clear()
    assert carry.per_row("Name", moved, name) == [a.eval("Name") for a in moved]
    assert len(read) == 9
    SlotTable(moved, carry=carry)  # a table that does not read Name
    SlotTable(moved, carry=carry)
    read.clear()
    carry.per_row("Name", moved, name)
    assert len(read) == 9  # not carried past a table that did not read it


def test_per_row_keeps_its_list_while_replaced_ads_read_as_before() -> None:
    """A replaced ad that reads as the one it replaced leaves the very list (and what
    ``derived`` made from it) as it was; one that reads otherwise gives a new list, and
    ``derived`` makes its value again. A value of another type is another value (1 and
    True are equal in Python, not as reads)."""
    carry = ColumnCarry()
    ads = [ClassAd(Name=f"s{k}", Cpus=1) for k in range(4)]
    made: list[int] = []

    def count(names: list) -> int:
        made.append(1)
        return len(names)

    SlotTable(ads, carry=carry)
    first = carry.per_row("Name", ads, lambda ad: ad.eval("Name"))
    assert carry.derived("n", (first,), lambda: count(first)) == 4 and len(made) == 1
    again = ads.copy()
    again[2] = ClassAd(Name="s2", Cpus=8)  # replaced, the same Name
    SlotTable(again, carry=carry)
    same = carry.per_row("Name", again, lambda ad: ad.eval("Name"))
    assert same is first
    assert carry.derived("n", (same,), lambda: count(same)) == 4 and len(made) == 1
    third = again.copy()
    third[1] = ClassAd(Name="t1")
    SlotTable(third, carry=carry)
    other = carry.per_row("Name", third, lambda ad: ad.eval("Name"))
    assert other is not first and other[1] == "t1" and first[1] == "s1"
    assert carry.derived("n", (other,), lambda: count(other)) == 4 and len(made) == 2
    SlotTable(third, carry=carry)
    ones = carry.per_row("Cpus", third, lambda ad: ad.eval("Cpus"))
    fourth = third.copy()
    fourth[0] = ClassAd(Name="s0", Cpus=True)
    SlotTable(fourth, carry=carry)
    got = carry.per_row("Cpus", fourth, lambda ad: ad.eval("Cpus"))
    assert got is not ones and type(got[0]) is bool and type(ones[0]) is int


def test_a_columns_codes_tell_rows_apart_by_value_and_are_kept_with_it() -> None:
    """Arch of five slots: "X86_64", "ARM", "X86_64", missing, and an expression. Rows 0
    and 2 share a code, row 1 has another (both 0 or more), the missing row -1, the
    expression (the column's first expression text) -2; least -2, greatest the larger of
    the two values' codes. The codes are kept with the column and cannot be changed."""
    ads = [ClassAd(Arch="X86_64"), ClassAd(Arch="ARM"), ClassAd(Arch="X86_64"), ClassAd()]
    ads.append(ClassAd())
    ads[4]["Arch"] = parse_expr('strcat("X86", "_64")')
    table = SlotTable(ads)
    col = table.column("Arch")
    code, lo, hi = table.codes(col)
    assert code[0] == code[2] and code[0] != code[1] and min(code[0], code[1]) >= 0
    assert (code[3], code[4], lo, hi) == (-1, -2, -2, max(code[0], code[1]))
    assert table.codes(col)[0] is code
    with pytest.raises(ValueError):
        code[0] = 5


def test_a_column_of_plain_values_is_patched_where_its_ads_were_replaced() -> None:
    """TotalJobRunTime of 40 slots, integers but one missing; round after round four
    slots' ads are replaced, holding a new runtime, a real, a string, a boolean or none
    at all: the carried column (its rows written in place, not sorted again) is the
    column a fresh table builds, row for row."""
    import random

    rng = random.Random(3)
    carry = ColumnCarry()
    ads = [ClassAd(Name=f"slot{k}", TotalJobRunTime=k * 10) for k in range(40)]
    del ads[5]["TotalJobRunTime"]
    for rnd in range(30):
        ads = ads.copy()
        for k in rng.sample(range(40), 4):
            ads[k] = ads[k].copy()
            value = rng.choice([rnd * 7 + k, 1.5, "x", True, None])
            if value is not None:
                ads[k]["TotalJobRunTime"] = value
            elif ads[k].lookup("TotalJobRunTime") is not None:
                del ads[k]["TotalJobRunTime"]
        carried = SlotTable(ads, carry=carry).column("TotalJobRunTime")
        fresh_table = SlotTable(ads)
        built = fresh_table.column("TotalJobRunTime")
        assert (carried.present == built.present).all(), rnd
        assert (carried.lit.tags() == built.lit.tags()).all(), rnd
        pool = carry.pool
        got = [carried.lit.value_at(k, pool) for k in range(40)]
        assert got == [built.lit.value_at(k, fresh_table.pool) for k in range(40)], rnd
    assert carry.patched == 29  # every table but the first


def test_literal_keys_tell_rows_apart_by_value_and_each_expression_row_by_itself() -> None:
    """Arch of five slots: "a", "b", "a", missing, an expression; keys of rows 4, 0, 2,
    3: rows 0 and 2 alike, the missing row's tag -1, the expression row's -2 - 4 = -6."""
    from mockpool.classad.kernel import literal_keys

    ads = [ClassAd(Arch="a"), ClassAd(Arch="b"), ClassAd(Arch="a"), ClassAd(), ClassAd()]
    ads[4]["Arch"] = parse_expr('strcat("a", "")')
    table = SlotTable(ads)
    tags, payload = literal_keys(table.column("Arch"), np.array([4, 0, 2, 3, 1]))
    assert (tags[1], payload[1]) == (tags[2], payload[2])
    assert (tags[1], payload[1]) != (tags[4], payload[4])
    assert (tags[0], tags[3]) == (-6, -1)


def _columns_agree(got: SlotTable, want: SlotTable, key: str) -> None:
    a, b = got.column(key), want.column(key)
    assert a.present.tolist() == b.present.tolist(), key
    assert a.lit.tags().tolist() == b.lit.tags().tolist(), key
    for k in range(len(got)):
        assert _same(a.lit.value_at(k, got.pool), b.lit.value_at(k, want.pool)), (key, k)
    assert [(rows.tolist(), e) for rows, e in a.exprs] == [
        (rows.tolist(), e) for rows, e in b.exprs
    ], key


@settings(max_examples=100, deadline=None, derandomize=True)
@given(slots=_slot_ads())
def test_columns_gathered_in_one_pass_are_the_columns_read_one_at_a_time(slots) -> None:
    """``gather`` reads many names' rows ad after ad: each column (a name no ad has, one
    asked twice, one built before included) and each row's object (``objects``) are
    what a table that reads one name at a time gives."""
    ahead, alone = SlotTable(slots), SlotTable(slots)
    ahead.column("B")  # built already: not read again
    ahead.gather([*_ATTRS, "a", "Missing", "Name"])
    for key in [*_ATTRS, "missing"]:
        _columns_agree(ahead, alone, key)
    assert ahead.objects("Name") == [ad.lookup("Name") for ad in slots]
    assert alone.objects("C") == [ad.lookup("C") for ad in slots]


def test_a_gather_leaves_a_carried_column_to_be_patched() -> None:
    """With a carry, a column the last table read is patched where ads were replaced,
    not read ahead with the others; ``objects`` are read again only where an ad was
    replaced, and give the new ad's."""
    carry = ColumnCarry()
    ads = [a.copy() for a in SLOTS * 2]
    first = SlotTable(ads, carry=carry)
    first.column("Memory")
    assert first.objects("Arch") == [ad.lookup("Arch") for ad in ads]
    again = ads.copy()
    again[3] = ads[3].copy()
    again[3]["Memory"] = 1024
    again[3]["Arch"] = "ppc64le"
    table = SlotTable(again, carry=carry)
    table.gather(["Memory", "Cpus", "Disk"])
    table.column("Memory")
    assert carry.patched == 1
    _columns_agree(table, SlotTable(again), "memory")
    _columns_agree(table, SlotTable(again), "cpus")
    arch = table.objects("Arch")
    assert all(a is ad.lookup("Arch") for a, ad in zip(arch, again, strict=True))
    assert arch[3].value == "ppc64le"
    # an equal value in another object is that object
    last = again.copy()
    last[5] = again[5].copy()
    last[5]["Arch"] = again[5]["Arch"].value
    assert last[5].lookup("Arch") is not again[5].lookup("Arch")
    arch = SlotTable(last, carry=carry).objects("Arch")
    assert all(a is ad.lookup("Arch") for a, ad in zip(arch, last, strict=True))
