"""What a cycle remembers of a request's answers, for the next request of the same shape.

Ten thousand autoclusters rarely hold ten thousand different jobs: most differ in their
owner, their group or an attribute no expression in play reads. Two requests whose job
ads hold the same value for every name the cycle's expressions can reach
(``referenced_attrs``) get the same answer from every slot that has not changed between
them: whether it matches, the job's Rank of it, the negotiator's pre- and post-job ranks,
and what the job would consume of a p-slot. A slot class never changes in a cycle, and a
p-slot *state* (``ClassView``) names what a p-slot holds, so an answer is remembered per
class row and per state, and a request evaluates only the rows no request of its shape
has seen. What depends on the submitter (preemption) is not remembered.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ..classad import ClassAd
from ..classad.tree import Expr, Literal, unparse
from .preemption import SUBMITTER_ATTRS

if TYPE_CHECKING:
    from .consumption import ConsumptionByKey

__all__ = ["AnswerMemo", "Answers", "CycleMemo", "ExprText"]


class ExprText:
    """Expression text, made once per tree (a request's trees are shared by its jobs,
    and by every request a schedd decoded from the same bytes)."""

    def __init__(self) -> None:
        self._text: dict[int, tuple[Expr, str]] = {}  # the tree is kept: its id stays its

    def __call__(self, e: Expr) -> str:
        hit = self._text.get(id(e))
        if hit is None or hit[0] is not e:
            hit = self._text[id(e)] = (e, unparse(e))
        return hit[1]


def _literal_key(v: object) -> object:
    # 1, 1.0 and true are equal in Python but not to a ClassAd; -0.0 and 0.0 differ too
    return (type(v).__name__, repr(v) if type(v) is float else v)


class Answers:
    """A request's answers on some rows: each a flag, numbers, and a consumption row."""

    __slots__ = ("cons", "matched", "post", "pre", "rank")

    def __init__(
        self,
        matched: np.ndarray,
        rank: np.ndarray,
        pre: np.ndarray,
        post: np.ndarray,
        cons: np.ndarray,
    ) -> None:
        self.matched = matched  # bool: both Requirements (and the p-slot's resources)
        self.rank = rank  # the job's Rank
        self.pre = pre  # NEGOTIATOR_PRE_JOB_RANK (meaningful where matched)
        self.post = post  # NEGOTIATOR_POST_JOB_RANK (likewise)
        self.cons = cons  # (rows, resources): what the job consumes of a p-slot; NaN else

    def take(self, rows: np.ndarray) -> Answers:
        return Answers(
            self.matched[rows], self.rank[rows], self.pre[rows], self.post[rows], self.cons[rows]
        )

    def _pack(self) -> np.ndarray:
        return np.column_stack((self.matched, self.rank, self.pre, self.post, self.cons))

    @classmethod
    def _unpack(cls, m: np.ndarray) -> Answers:
        return cls(m[:, 0] != 0, m[:, 1], m[:, 2], m[:, 3], m[:, 4:])


class _ShapeMemo:
    """One shape's answers by row key, in a growing matrix."""

    def __init__(self, width: int) -> None:
        self._at: dict[int, int] = {}
        self._m = np.empty((16, width))

    def get(self, keys: Sequence[int]) -> np.ndarray:
        at = self._at
        return np.fromiter((at.get(k, -1) for k in keys), np.int64, len(keys))

    def put(self, keys: Sequence[int], answers: Answers) -> None:
        m = answers._pack()
        n = len(self._at)
        if n + len(keys) > len(self._m):
            grown = np.empty((max(2 * len(self._m), n + len(keys)), self._m.shape[1]))
            grown[:n] = self._m[:n]
            self._m = grown
        self._m[n : n + len(keys)] = m
        for k, key in enumerate(keys):
            self._at[key] = n + k

    def take(self, ix: np.ndarray) -> Answers:
        return Answers._unpack(self._m[ix])


class AnswerMemo:
    """Answers by request shape (the values of ``names`` in the job ad), for a cycle."""

    def __init__(self, names: Sequence[str], resources: int) -> None:
        self._names = sorted(names)
        self._width = 4 + resources
        self._shapes: dict[tuple, _ShapeMemo] = {}
        self.text = ExprText()
        self._of_request: dict[int, tuple[ClassAd, tuple]] = {}
        self._reads_submitter = not {a.lower() for a in SUBMITTER_ATTRS}.isdisjoint(names)

    def shape(self, job: ClassAd) -> tuple:
        parts: list[object] = []
        for name in self._names:
            e = job.lookup(name)
            if e is None:
                parts.append(None)
            elif type(e) is Literal and not isinstance(e.value, ClassAd):
                parts.append(_literal_key(e.value))
            else:
                parts.append(self.text(e))
        return tuple(parts)

    def request_shape(self, request: ClassAd) -> tuple:
        """``shape(request)``, made once per request ad (a request is offered many
        times a cycle)."""
        hit = self._of_request.get(id(request))
        if hit is None or hit[0] is not request:
            hit = self._of_request[id(request)] = (request, self.shape(request))
        return hit[1]

    def offered_shape(self, request: ClassAd, eup: float, in_use: float) -> tuple:
        """The shape of ``with_submitter_attrs(request, eup, in_use)``: the request's
        own, and the submitter's figures where an expression in play reads them."""
        extra = (float(eup), float(in_use)) if self._reads_submitter else ()
        return self.request_shape(request) + extra

    def answer(
        self,
        shape: tuple,
        keys: np.ndarray,
        evaluate: Callable[[np.ndarray], tuple[Answers, np.ndarray] | None],
    ) -> Answers | None:
        """A request's answers, of ``shape``, on the rows ``keys``: remembered, or from
        ``evaluate(missing)`` (a bool mask of ``keys``), which returns them and which of
        them may be kept, or None (the request is then not answered here)."""
        memo = self._shapes.get(shape)
        if memo is None:
            memo = self._shapes[shape] = _ShapeMemo(self._width)
        klist = keys.tolist()
        ix = memo.get(klist)
        missing = ix < 0
        n_missing = int(missing.sum())
        if not n_missing:
            return memo.take(ix)
        got = evaluate(missing)
        if got is None:
            return None
        fresh, keep = got
        if keep.any():
            fresh_keys = np.asarray(klist)[missing]
            memo.put(fresh_keys[keep].tolist(), fresh.take(keep))
        if n_missing == len(klist):
            return fresh
        out = np.empty((len(klist), self._width))
        out[~missing] = memo._m[ix[~missing]]
        out[missing] = fresh._pack()
        return Answers._unpack(out)


@dataclass
class CycleMemo:
    """What one cycle remembers from request to request, in one place (the Kubernetes
    scheduler's CycleState): caches that make an answer come faster, never differ."""

    # the attribute names a request's evaluation reads, by the texts of its READS_KEY
    # attributes and by request ad
    reads_wide: set[tuple[str, ...]] = field(default_factory=set)
    reads: dict[int, tuple[ClassAd, tuple[str, ...]]] = field(default_factory=dict)
    # re-offer answers by (base, resources left), per request shape (a request's own
    # where the cycle keeps no shapes: see AnswerMemo); ``reoffered``: the current
    # request's, found at its first re-offer
    reoffered: dict[tuple[int, bytes], tuple] | None = None
    reoffered_by_shape: dict[tuple, dict[tuple[int, bytes], tuple]] = field(default_factory=dict)
    # a request's candidates in order, by its shape and the view's live classes and
    # states (see CandidateSearch._candidates_in)
    ordered: dict[tuple, tuple[np.ndarray, np.ndarray, ConsumptionByKey]] = field(
        default_factory=dict
    )
    safe: dict[int, tuple[Expr, bool]] = field(default_factory=dict)  # kleene_safe, per tree
