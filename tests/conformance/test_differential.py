"""Differential tests: random expressions and ads, mockpool against classad2.

Expressions are generated as text from a grammar (strategies.py) and evaluated by both
libraries with randomly generated flat MY and TARGET ads.  Text the oracle cannot parse is
skipped.  The symmetric match is compared with ``classad2.ClassAd.symmetricMatch``.
"""

from __future__ import annotations

import re

import pytest
from builders.oracle import (
    HYPOTHESIS_SETTINGS,
    compare_text,
    make_ads,
    oracle_parse,
    oracle_parses_all,
    require_oracle,
)
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from mockpool.classad import ClassAdSyntaxError, matches, parse_expr

from .strategies import expressions, flat_ads, match_ads

pytestmark = pytest.mark.oracle
require_oracle()  # skips this module without HTCondor's classad2

SETTINGS = HYPOTHESIS_SETTINGS


_WIDE_SUBSCRIPT = re.compile(r"\[\s*-?\d{10,}\s*\]")  # a subscript past 32 bits


def check_expression(text: str, my_spec: dict, target_spec: dict) -> None:
    if oracle_parse(text) is None or not oracle_parses_all(my_spec, target_spec):
        return  # the oracle cannot parse it: not a comparison
    try:
        parse_expr(text)
    except ClassAdSyntaxError as exc:
        pytest.fail(f"{text!r}: classad2 parses it, mockpool raises {exc}")
    my, my2 = make_ads(my_spec)
    target, target2 = make_ads(target_spec)
    agree, _, _, where = compare_text(text, my, target, my2, target2)
    # Known difference: HTCondor's lists are lazy, so a nested ad whose list refers to its
    # own attribute ([a = {MY.a}].a) unfolds without end there; ours evaluates list items
    # eagerly and stops at the cycle with UNDEFINED.
    assume(agree or "<expr " not in str(where))
    # Known difference (test_corpus.py's xfails): HTCondor indexes a list with the low 32
    # bits of the subscript ({1, 2.5}[4611686018427387904] is 1 there); ours is an error.
    assume(agree or not _WIDE_SUBSCRIPT.search(text))
    assert agree, f"{text!r}\n  MY={my_spec}\n  TARGET={target_spec}\n  differs at {where}"


@settings(max_examples=1500, **SETTINGS)
@given(text=expressions(max_leaves=8), my_spec=flat_ads(), target_spec=flat_ads())
def test_expression_agrees(text, my_spec, target_spec):
    check_expression(text, my_spec, target_spec)


@settings(max_examples=400, **SETTINGS)
@given(text=expressions(max_leaves=25), my_spec=flat_ads(), target_spec=flat_ads())
def test_big_expression_agrees(text, my_spec, target_spec):
    check_expression(text, my_spec, target_spec)


@settings(max_examples=300, **SETTINGS)
@given(my_spec=flat_ads(), target_spec=flat_ads(), data=st.data())
def test_attribute_values_agree(my_spec, target_spec, data):
    """Every attribute of MY and TARGET, by bare name and through MY./TARGET."""
    names = sorted({*my_spec, *target_spec, "Nope"})
    name = data.draw(st.sampled_from(names))
    for text in (name, f"MY.{name}", f"TARGET.{name}", name.lower()):
        check_expression(text, my_spec, target_spec)


@settings(max_examples=800, **SETTINGS)
@given(job_spec=match_ads(), slot_spec=match_ads())
def test_symmetric_match_agrees(job_spec, slot_spec):
    if not oracle_parses_all(job_spec, slot_spec):
        return
    job, job2 = make_ads(job_spec)
    slot, slot2 = make_ads(slot_spec)
    expected = job2.symmetricMatch(slot2)
    got = matches(job, slot)
    assert type(got) is bool, f"matches() returned {got!r}"
    assert got == expected, (
        f"matches: ours {got}, oracle {expected}\n  JOB={job_spec}\n  SLOT={slot_spec}"
    )
    # and the other way round
    assert matches(slot, job) == slot2.symmetricMatch(job2)
