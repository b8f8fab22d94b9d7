"""Remembered evaluations (classad/evalmemo.py) give what a fresh evaluation gives."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from mockpool.classad import ClassAd, evaluate, parse_expr
from mockpool.classad.ad import shared_literal
from mockpool.classad.evalmemo import EvalMemo

NOW = 1_700_000_000


def _ad(**attrs: object) -> ClassAd:
    ad = ClassAd()
    for name, value in attrs.items():
        ad[name] = parse_expr(value) if isinstance(value, str) and value[:1] == "=" else value
    return ad


def _shared(ad: ClassAd) -> ClassAd:
    """``ad`` with its literals replaced by the shared ones (as slot ads bind them)."""
    out = ClassAd()
    for name, expr in ad.pairs():
        value = getattr(expr, "value", None)
        out[name] = shared_literal(value) if isinstance(value, (int, str, bool)) else expr
    return out


def test_equal_bindings_answer_from_memory() -> None:
    memo = EvalMemo()
    req = parse_expr('TARGET.Memory >= RequestMemory && TARGET.Arch == "X86_64"')
    job = _ad(RequestMemory=1024, Requirements=req)
    slot_a = _shared(_ad(Memory=2048, Arch="X86_64", Name="slot1@a"))
    slot_b = _shared(_ad(Memory=2048, Arch="X86_64", Name="slot2@b"))
    assert memo.evaluate(req, job, slot_a, now=NOW, rng=None) is True
    assert memo.evaluate(req, job, slot_b, now=NOW, rng=None) is True
    assert (memo.hits, memo.misses) == (1, 1)  # Name is not read: slot_b reads as slot_a


def test_a_changed_binding_is_evaluated_again() -> None:
    memo = EvalMemo()
    req = parse_expr("TARGET.Memory >= RequestMemory")
    job = _ad(RequestMemory=1024)
    slot = _shared(_ad(Memory=2048))
    assert memo.evaluate(req, job, slot, now=NOW, rng=None) is True
    slot["Memory"] = 512
    assert memo.evaluate(req, job, slot, now=NOW, rng=None) is False
    assert memo.hits == 0


def test_names_reached_through_the_ads_are_keyed() -> None:
    """Start reads Mem, which the slot binds to an expression of Cpus: a slot whose Cpus
    differ answers otherwise though Start and Mem are the same objects."""
    memo = EvalMemo()
    start = parse_expr("Mem > 2000")
    mem = parse_expr("Cpus * 1024")
    slot_a, slot_b = ClassAd(), ClassAd()
    for slot, cpus in ((slot_a, 2), (slot_b, 1)):
        slot["Start"] = start
        slot["Mem"] = mem
        slot["Cpus"] = shared_literal(cpus)
    job = _ad(Owner="alice")
    assert memo.evaluate(start, slot_a, job, now=NOW, rng=None) is True
    assert memo.evaluate(start, slot_b, job, now=NOW, rng=None) is False


def test_the_clock_and_the_generator_are_never_remembered() -> None:
    memo = EvalMemo()
    job, slot = _ad(), _ad()
    late = parse_expr("time() > 100")
    assert memo.evaluate(late, job, slot, now=50, rng=None) is False
    assert memo.evaluate(late, job, slot, now=150, rng=None) is True
    old_style = parse_expr("CurrentTime > 100")
    assert memo.evaluate(old_style, job, slot, now=50, rng=None) is False
    assert memo.evaluate(old_style, job, slot, now=150, rng=None) is True
    draw = parse_expr("random(1000)")
    rng = random.Random(1)
    first = memo.evaluate(draw, job, slot, now=NOW, rng=rng)
    second = memo.evaluate(draw, job, slot, now=NOW, rng=rng)
    expected = random.Random(1)
    assert (first, second) == (expected.randrange(1000), expected.randrange(1000))
    assert memo.hits == 0


def test_an_ad_as_a_value_is_never_remembered() -> None:
    """``MY =?= TARGET`` reads no attribute: its answer is the ads' identity."""
    memo = EvalMemo()
    same = parse_expr("MY =?= TARGET")
    a, b = _ad(X=1), _ad(X=1)
    assert memo.evaluate(same, a, a, now=NOW, rng=None) == evaluate(same, a, a, now=NOW)
    assert memo.evaluate(same, a, b, now=NOW, rng=None) == evaluate(same, a, b, now=NOW)
    assert memo.hits == 0


def test_an_expression_holding_a_nested_ad_is_never_remembered() -> None:
    memo = EvalMemo()
    nested = parse_expr("[a = TARGET.x].a")
    job = _ad()
    for x in (1, 2, 1):
        assert memo.evaluate(nested, job, _ad(x=x), now=NOW, rng=None) == x
    assert memo.hits == 0


def test_dynamic_references_are_never_remembered() -> None:
    memo = EvalMemo()
    dyn = parse_expr('eval(strcat("Mem", "ory")) > 1000')
    job = _ad()
    slot_a, slot_b = _shared(_ad(Memory=2048)), _shared(_ad(Memory=512))
    assert memo.evaluate(dyn, slot_a, job, now=NOW, rng=None) is True
    assert memo.evaluate(dyn, slot_b, job, now=NOW, rng=None) is False


def test_the_memory_is_bounded() -> None:
    memo = EvalMemo(limit=3)
    req = parse_expr("TARGET.Memory >= 1")
    job = _ad()
    for mem in range(10):
        assert memo.evaluate(req, job, _ad(Memory=mem), now=NOW, rng=None) is (mem >= 1)
        assert memo._size <= 3


_NAMES = ("A", "B", "C", "Memory")
_VALUES = st.sampled_from([0, 1, 2, "x", True, False, None])


def _exprs() -> st.SearchStrategy[str]:
    leaf = st.one_of(
        st.sampled_from(["A", "B", "C", "Memory", "MY.A", "TARGET.B", "TARGET.Memory"]),
        st.sampled_from(["1", "2", '"x"', "true", "undefined", "time()"]),
    )
    ops = ["+", "==", "=?=", "&&", "||", ">", "<="]
    return st.recursive(
        leaf,
        lambda inner: st.one_of(
            st.tuples(inner, st.sampled_from(ops), inner).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
            st.tuples(inner, inner, inner).map(lambda t: f"({t[0]} ? {t[1]} : {t[2]})"),
        ),
        max_leaves=6,
    )


def _ad_of(values: dict[str, object], exprs: dict[str, str]) -> ClassAd:
    ad = ClassAd()
    for name, v in values.items():
        if v is not None:
            ad[name] = shared_literal(v)  # type: ignore[arg-type]
    for name, text in exprs.items():
        ad[name] = _parsed(text)
    return ad


_PARSED: dict[str, object] = {}


def _parsed(text: str) -> object:
    """One tree per text, as the schedd's parse cache and the slot bindings share them."""
    if text not in _PARSED:
        _PARSED[text] = parse_expr(text)
    return _PARSED[text]


@settings(max_examples=300, deadline=None)
@given(
    expr=_exprs(),
    pairs=st.lists(
        st.tuples(
            st.dictionaries(st.sampled_from(_NAMES), _VALUES),
            st.dictionaries(st.sampled_from(_NAMES[:2]), _exprs(), max_size=1),
            st.dictionaries(st.sampled_from(_NAMES), _VALUES),
            st.sampled_from([0, 150]),
        ),
        min_size=1,
        max_size=6,
    ),
)
def test_remembered_answers_are_fresh_answers(expr: str, pairs: list) -> None:
    """Whatever the ads bind (values shared, expressions of other names, names missing)
    and whatever the time, a memo's answer is the evaluator's."""
    memo = EvalMemo()
    tree = _parsed(expr)
    for my_values, my_exprs, target_values, now in pairs * 2:
        my, target = _ad_of(my_values, my_exprs), _ad_of(target_values, {})
        got = memo.evaluate(tree, my, target, now=now, rng=None)  # type: ignore[arg-type]
        want = evaluate(tree, my, target, now=now)  # type: ignore[arg-type]
        assert repr(got) == repr(want), (expr, my_values, my_exprs, target_values, now)
