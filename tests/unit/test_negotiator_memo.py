"""The cycle's memory of a request's answers (.memo): shapes and rows."""

from __future__ import annotations

import numpy as np

from mockpool.classad import ClassAd, parse_expr
from mockpool.negotiator.memo import AnswerMemo, Answers


def _answers(rows: int, first: float = 0.0) -> Answers:
    """Distinct answers per row: rank ``first``, ``first + 1``, ...; one resource."""
    ranks = first + np.arange(rows, dtype=float)
    return Answers(
        np.ones(rows, dtype=bool), ranks, ranks + 10, ranks + 20, ranks.reshape(-1, 1) + 30
    )


def test_a_shape_is_the_values_of_the_names_in_play_typed_as_a_classad_types_them() -> None:
    memo = AnswerMemo(["requestmemory", "requirements"], 1)
    base = ClassAd(RequestMemory=1, Requirements=parse_expr("TARGET.Memory >= RequestMemory"))
    same = ClassAd(RequestMemory=1, Owner="bob")  # Owner is not in play
    same["Requirements"] = parse_expr("TARGET.Memory >= RequestMemory")
    assert memo.shape(base) == memo.shape(same)
    for other in (1.0, True, "1", -0.0):
        ad = base.copy()
        ad["RequestMemory"] = other
        assert memo.shape(ad) != memo.shape(base), other
    zero, negative = base.copy(), base.copy()
    zero["RequestMemory"], negative["RequestMemory"] = 0.0, -0.0
    assert memo.shape(zero) != memo.shape(negative)
    missing = ClassAd(Requirements=parse_expr("TARGET.Memory >= RequestMemory"))
    assert memo.shape(missing) != memo.shape(base)
    texts = base.copy()
    texts["Requirements"] = parse_expr("TARGET.Memory > RequestMemory")
    assert memo.shape(texts) != memo.shape(base)


def test_only_the_rows_not_seen_for_the_shape_are_evaluated() -> None:
    memo = AnswerMemo(["requestmemory"], 1)
    job = ClassAd(RequestMemory=1)
    asked: list[list[int]] = []

    def evaluate_from(keys: list[int], first: float, keep: bool = True):  # type: ignore[no-untyped-def]
        def evaluate(missing: np.ndarray) -> tuple[Answers, np.ndarray]:
            asked.append([k for k, m in zip(keys, missing.tolist(), strict=True) if m])
            n = int(missing.sum())
            return _answers(n, first), np.full(n, keep)

        return evaluate

    got = memo.answer(memo.shape(job), np.array([5, 7]), evaluate_from([5, 7], 0.0))
    assert got is not None and got.rank.tolist() == [0.0, 1.0]
    # 7 remembered (rank 1), 9 evaluated now (the first of this batch: 100)
    got = memo.answer(memo.shape(job), np.array([9, 7]), evaluate_from([9, 7], 100.0))
    assert got is not None
    assert got.rank.tolist() == [100.0, 1.0]
    assert got.pre.tolist() == [110.0, 11.0]
    assert got.cons[:, 0].tolist() == [130.0, 31.0]
    assert asked == [[5, 7], [9]]
    # answers that may not be kept are used once and evaluated again next time
    memo.answer(memo.shape(job), np.array([11]), evaluate_from([11], 0.0, keep=False))
    memo.answer(memo.shape(job), np.array([11]), evaluate_from([11], 0.0))
    assert asked[-2:] == [[11], [11]]
    # another shape remembers nothing of this one's
    other = ClassAd(RequestMemory=2)
    memo.answer(memo.shape(other), np.array([5]), evaluate_from([5], 0.0))
    assert asked[-1] == [5]
    # a request that cannot be answered here (None) leaves nothing behind
    assert memo.answer(memo.shape(job), np.array([13]), lambda missing: None) is None
    memo.answer(memo.shape(job), np.array([13]), evaluate_from([13], 0.0))
    assert asked[-1] == [13]


def test_answers_stay_right_as_the_memory_grows() -> None:
    memo = AnswerMemo([], 1)
    job = ClassAd()
    for batch in range(5):  # 5 x 13 rows, past the first allocations
        keys = np.arange(13) + 13 * batch
        memo.answer(
            memo.shape(job),
            keys,
            lambda missing, b=batch: (_answers(13, 100.0 * b), np.ones(13, dtype=bool)),
        )
    keys = np.array([64, 0, 27])
    got = memo.answer(memo.shape(job), keys, lambda missing: None)  # all remembered: not called
    assert got is not None
    assert got.rank.tolist() == [400.0 + 12, 0.0, 200.0 + 1]


def test_only_the_answers_that_may_be_kept_are_remembered() -> None:
    """Rows 1 and 3 of four may be kept: a second request evaluates rows 0 and 2 again."""
    memo = AnswerMemo([], 1)
    job = ClassAd()
    keys = np.array([10, 11, 12, 13])
    first = memo.answer(
        memo.shape(job), keys, lambda m: (_answers(4), np.array([False, True, False, True]))
    )
    assert first is not None and first.rank.tolist() == [0.0, 1.0, 2.0, 3.0]
    asked = []

    def again(missing: np.ndarray) -> tuple[Answers, np.ndarray]:
        asked.append(keys[missing].tolist())
        return _answers(int(missing.sum()), 50.0), np.zeros(int(missing.sum()), dtype=bool)

    got = memo.answer(memo.shape(job), keys, again)
    assert asked == [[10, 12]]
    assert got is not None and got.rank.tolist() == [50.0, 1.0, 51.0, 3.0]
