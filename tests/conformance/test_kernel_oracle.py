"""The numpy match kernel against the scalar evaluator and against classad2.

Tables of 1-50 generated slot ads mix value types per attribute across rows, leave
attributes out of some rows, and hold expressions (some referring to TARGET) in others.
For every row, ``evaluate_rows`` must give the scalar ``evaluate`` value and the oracle's;
``match_vector`` must give ``matches`` and classad2's ``symmetricMatch`` per slot, and the
job's Rank as a float.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from builders.oracle import (
    HYPOTHESIS_SETTINGS,
    OracleValue,
    Raised,
    compare_value,
    describe,
    make_ads,
    oracle_eval,
    oracle_parse,
    oracle_parses_all,
    require_oracle,
    same_ours,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from mockpool.classad import evaluate, matches
from mockpool.classad.kernel import SlotTable, evaluate_rows, match_vector

from .strategies import expressions, flat_ads, match_ads, tables

pytestmark = pytest.mark.oracle
require_oracle()  # skips this module without HTCondor's classad2

slot_tables = tables(match_ads(), max_rows=50)
kernel_expressions = expressions(max_leaves=8)


def _scalar(text: str, const, row, const_is: str) -> Any:
    try:
        if const_is == "my":
            return evaluate(text, const, row)
        return evaluate(text, row, const)
    except Exception as exc:
        return Raised(exc)


def _kernel_rows(text: str, table, const, const_is: str, n: int) -> list[Any]:
    values = evaluate_rows(text, table, const, const_is)
    assert isinstance(values, list) and len(values) == n, (
        f"evaluate_rows returned {type(values).__name__} of {len(values)} for {n} rows"
    )
    return values


@settings(max_examples=250, **HYPOTHESIS_SETTINGS)
@given(
    text=kernel_expressions,
    rows=tables(max_rows=50),
    const_spec=flat_ads(),
    const_is=st.sampled_from(["my", "target"]),
    as_table=st.booleans(),
)
def test_kernel_rows_equal_scalar(text, rows, const_spec, const_is, as_table):
    if not oracle_parses_all({"x": text}, const_spec, *rows):
        return  # keep to text both parsers read
    const = make_ads(const_spec)[0]
    row_ads = [make_ads(r)[0] for r in rows]
    table = SlotTable.from_ads(row_ads) if as_table else row_ads
    values = _kernel_rows(text, table, const, const_is, len(row_ads))
    for i, (row, got) in enumerate(zip(row_ads, values)):
        want = _scalar(text, const, row, const_is)
        if isinstance(want, Raised):
            continue  # a scalar crash is test_differential's business
        assert same_ours(got, want), (
            f"{text!r} (const_is={const_is}) row {i}: kernel {describe(got)}, "
            f"scalar {describe(want)}\n  CONST={const_spec}\n  ROW={rows[i]}"
        )


@settings(max_examples=150, **HYPOTHESIS_SETTINGS)
@given(
    text=kernel_expressions,
    rows=tables(max_rows=12),
    const_spec=flat_ads(),
    const_is=st.sampled_from(["my", "target"]),
)
def test_kernel_rows_equal_oracle(text, rows, const_spec, const_is):
    if oracle_parse(text) is None or not oracle_parses_all(const_spec, *rows):
        return
    const, const2 = make_ads(const_spec)
    pairs = [make_ads(r) for r in rows]
    values = _kernel_rows(text, [p[0] for p in pairs], const, const_is, len(pairs))
    for i, ((row, row2), got) in enumerate(zip(pairs, values)):
        if const_is == "my":
            agree, _, _, where = compare_value(got, text, const, row, const2, row2)
        else:
            agree, _, _, where = compare_value(got, text, row, const, row2, const2)
        if not agree and "<expr " in where:
            continue  # lazy-list known difference, see test_differential.check_expression
        assert agree, (
            f"{text!r} (const_is={const_is}) row {i}: kernel vs classad2 at {where}\n"
            f"  CONST={const_spec}\n  ROW={rows[i]}"
        )


def _oracle_rank(job2, slot2) -> float:
    """The job's Rank of a slot as the negotiator takes it: a number, else 0.0."""
    try:
        expr = job2.lookup("Rank")
    except KeyError:
        return 0.0
    try:
        v = expr.eval(job2, slot2)
    except Exception:
        return 0.0
    if isinstance(v, OracleValue) or not isinstance(v, (bool, int, float)):
        return 0.0
    return float(v)


@settings(max_examples=250, **HYPOTHESIS_SETTINGS)
@given(
    job_spec=match_ads(),
    rank=st.one_of(st.none(), expressions(max_leaves=4)),
    slot_specs=slot_tables,
    as_table=st.booleans(),
)
def test_match_vector_equals_matches_and_oracle(job_spec, rank, slot_specs, as_table):
    if rank is not None:
        job_spec = {**job_spec, "Rank": rank}
    if not oracle_parses_all(job_spec, *slot_specs):
        return
    job, job2 = make_ads(job_spec)
    pairs = [make_ads(s) for s in slot_specs]
    slots = [p[0] for p in pairs]
    result = match_vector(job, SlotTable.from_ads(slots) if as_table else slots)
    assert isinstance(result.matches, np.ndarray) and result.matches.dtype == np.bool_
    assert isinstance(result.rank, np.ndarray) and result.rank.dtype == np.float64
    assert result.matches.shape == result.rank.shape == (len(slots),)
    assert isinstance(result.fallbacks, int) and result.fallbacks >= 0
    for i, ((slot, slot2), spec) in enumerate(zip(pairs, slot_specs)):
        scalar = matches(job, slot)
        oracle = job2.symmetricMatch(slot2)
        context = f"\n  JOB={job_spec}\n  SLOT {i}={spec}"
        assert bool(result.matches[i]) == scalar, (
            f"match_vector {bool(result.matches[i])}, matches() {scalar}{context}"
        )
        assert scalar == oracle, f"matches() {scalar}, classad2 symmetricMatch {oracle}{context}"
        want = _oracle_rank(job2, slot2)
        got = float(result.rank[i])
        same = (math.isnan(got) and math.isnan(want)) or got == want
        if rank is not None:
            raw = oracle_eval(rank, job2, slot2)
            if isinstance(raw, list) or "<expr " in describe(raw):
                continue
        assert same, f"rank: kernel {got!r}, classad2 {want!r} (Rank = {rank!r}){context}"
