"""BindingCache: what a binding makes is made once, and only for an equal binding."""

from __future__ import annotations

from mockpool.classad import ClassAd, parse_expr
from mockpool.classad.bindings import BindingCache
from mockpool.classad.textio import format_ad, format_old_lines
from mockpool.classad.tree import Expr, Literal


class Counting:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Expr]] = []

    def __call__(self, name: str, e: Expr) -> tuple[str, object]:
        self.calls.append((name, e))
        return name, e.value if isinstance(e, Literal) else id(e)


def test_literals_are_kept_apart_by_type_and_sign() -> None:
    make = Counting()
    cache = BindingCache(make)
    values = [True, 1, 1.0, 0.0, -0.0, "1"]
    first = cache.of(("A", Literal(v)) for v in values)
    assert len(make.calls) == 6
    again = cache.of(("A", Literal(v)) for v in values)  # equal literals, new objects
    assert again == first and len(make.calls) == 6
    assert [type(v) for _n, v in again] == [bool, int, float, float, float, str]
    assert str(again[4][1]) == "-0.0"


def test_names_are_kept_apart_by_spelling() -> None:
    make = Counting()
    cache = BindingCache(make)
    assert cache.of([("Cpus", Literal(1)), ("CPUS", Literal(1))]) == [("Cpus", 1), ("CPUS", 1)]


def test_trees_are_kept_by_identity() -> None:
    make = Counting()
    cache = BindingCache(make)
    tree = parse_expr("TARGET.Memory >= 1024")
    twin = parse_expr("TARGET.Memory >= 1024")
    cache.of([("Requirements", tree), ("Requirements", tree)])
    assert len(make.calls) == 1
    cache.of([("Requirements", twin)])
    assert len(make.calls) == 2


def test_long_strings_are_made_each_time_and_the_cache_is_bounded() -> None:
    make = Counting()
    cache = BindingCache(make, limit=3)
    long = "x" * 1000
    cache.of([("S", Literal(long)), ("S", Literal(long))])
    assert len(make.calls) == 2 and len(cache) == 0
    cache.of(("N", Literal(k)) for k in range(5))
    assert len(cache) == 5  # cleared at the start of the next call
    cache.of([("N", Literal(0))])
    assert len(cache) == 1 and len(make.calls) == 8


def test_old_syntax_text_is_the_same_made_or_kept() -> None:
    ad = ClassAd(A=0.0, B=-0.0, C=True, D=1, E="a\\b", F=1e300)
    ad["R"] = parse_expr('TARGET.Memory >= 1024 && Owner == "x"')
    text = format_ad(ad, "old", sort=True)
    assert format_ad(ad, "old", sort=True) == text
    assert text == (
        "A = 0.0\nB = -0.0\nC = true\nD = 1\n"
        'E = "a\\b"\nF = 1E+300\nR = TARGET.Memory >= 1024 && Owner == "x"\n'
    )


def test_old_lines_of_bindings_are_the_lines_of_an_ad_of_them() -> None:
    """``format_old_lines`` of a selection of an ad's bindings writes what ``format_ad``
    writes of an ad holding just those: in the ad's order, or sorted by name ignoring
    case (names equal but for case keep their order)."""
    ad = ClassAd.from_exprs(
        [
            ("b", parse_expr("1.5")),
            ("Cmd", parse_expr('"/bin/sleep"')),
            ("a", parse_expr("B + 1")),
            ("ClaimId", parse_expr('"secret"')),
            ("A2", parse_expr("{1, 2}")),
        ]
    )
    public = [p for p in ad.pairs() if p[0] != "ClaimId"]
    alone = ClassAd.from_exprs(public)
    assert format_old_lines(public) == format_ad(alone)
    assert format_old_lines(public, sort=True) == format_ad(alone, sort=True)
    assert format_old_lines(public, sort=True).splitlines() == [
        "a = B + 1",
        "A2 = { 1, 2 }",
        "b = 1.5",
        'Cmd = "/bin/sleep"',
    ]
