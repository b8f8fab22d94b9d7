"""Slot classes: slots that look the same to every expression a cycle can evaluate.

A cycle evaluates each request against every candidate slot (Requirements both ways, the
job's Rank, NEGOTIATOR_PRE/POST_JOB_RANK, consumption policies, preemption policy). Two
slots whose ads hold the same value for every attribute any of those expressions can
reach give the same results, so the cycle evaluates one row per *class* and takes the
class's slots in snapshot order. Which attributes can be reached is a closure: start
from the names the cycle's own expressions use, add every name referenced by a slot's or
a job's expression for a name already reached, until nothing new comes. Names are taken
whatever their scope (MY, TARGET or bare), which can only split classes more.

Only unclaimed slots that are matched whole are grouped. A partitionable slot with a
consumption policy changes as it is split, and a Claimed slot carries its remote user's
priority, so each of those is a class of its own; the p-slots still share a *base* (the
class they would have with their resources left out), which keys the caches of their
per-state evaluations.

An expression that names attributes at run time (``eval``) or draws random numbers turns
classes off for the cycle: every slot is then its own class, which is exactly the
slot-by-slot cycle.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..classad import UNDEFINED, ClassAd, evaluate
from ..classad import vector as V
from ..classad.kernel import Column, KernelStats, SlotTable, literal_keys
from ..classad.refs import DynamicReference, every_name
from ..classad.tree import AttrRef, Binary, Expr, Literal, Paren, Select, Unary
from .preemption import Preemption

if TYPE_CHECKING:
    import random

__all__ = [
    "ClassTable",
    "ClassView",
    "SlotClasses",
    "WatchedAd",
    "WideTaint",
    "alike_answer",
    "job_reach",
    "referenced_attrs",
]


def _is_literal(e: Expr) -> bool:
    return type(e) is Literal and not isinstance(e.value, ClassAd)


def _job_exprs(jobs: Sequence[ClassAd], name: str) -> list[Expr]:
    """The jobs' expressions (not literals) bound to ``name``, each object once."""
    seen: set[int] = set()
    out: list[Expr] = []
    for e in ClassAd.lookups(jobs, name):
        if e is not None and not _is_literal(e) and id(e) not in seen:
            seen.add(id(e))
            out.append(e)
    return out


def job_reach(
    jobs: Sequence[ClassAd], roots: Iterable[Expr], names: Iterable[str]
) -> dict[str, list[Expr]]:
    """Every name ``roots`` and ``names`` reach through the jobs' expressions alone, by
    lower-case name, with the jobs' expressions it holds: what :func:`referenced_attrs`
    finds on the jobs' side, known before a slot column is read (so the slots' columns
    of those names are read in one pass). Raises DynamicReference as that returns None."""
    reached: dict[str, list[Expr]] = {}
    frontier: set[str] = {n.lower() for n in names}
    for e in roots:
        every_name(e, frontier)
    while frontier:
        name = frontier.pop()
        exprs = reached[name] = _job_exprs(jobs, name)
        for e in exprs:
            every_name(e, frontier)
        frontier -= reached.keys()
    return reached


def referenced_attrs(
    table: SlotTable,
    jobs: Iterable[ClassAd],
    roots: Iterable[Expr],
    names: Iterable[str],
    by_job: dict[str, list[Expr]] | None = None,
) -> dict[str, list[Expr]] | None:
    """Every attribute the cycle's expressions can reach from ``roots`` and ``names``,
    through the slots' and the jobs' expressions, by lower-case name, with the
    expressions (slots' and jobs') it holds; None when an expression refers to attributes
    only known at run time. ``by_job``: :func:`job_reach` of the same, when made."""
    jobs, roots = list(jobs), list(roots)
    reached: dict[str, list[Expr]] = {}
    frontier: set[str] = {n.lower() for n in names}
    try:
        if by_job is None:
            by_job = job_reach(jobs, roots, frontier)
        for e in roots:
            every_name(e, frontier)
        frontier |= by_job.keys()
        while frontier:
            # a wave of names: their columns read in one pass over the slots
            wave, frontier = frontier - reached.keys(), set()
            table.gather(wave)
            for name in wave:
                exprs: list[Expr] = [e for _rows, e in table.column(name).exprs]
                on_jobs = by_job.get(name)
                exprs += on_jobs if on_jobs is not None else _job_exprs(jobs, name)
                reached[name] = exprs
                for e in exprs:
                    every_name(e, frontier)
            frontier -= reached.keys()
    except DynamicReference:
        return None
    return reached


# Operators whose result's type follows from their operands' types alone (not from their
# values): comparisons, +, - and * (integers wrap), unary minus. / and % are not (x / 0
# is ERROR), nor are =?=, ?:, calls, conditionals and the logic operators.
_TYPED_BINARY = frozenset(("==", "!=", "<", "<=", ">", ">=", "+", "-", "*"))


def _typed(expr: Expr, tainted: set[str], logic: bool) -> bool:
    """Whether every reference in ``expr`` to a ``tainted`` name reaches the top only
    through type-preserving operators (and, when ``logic``, ``&&``/``||``/``!``)."""
    t = type(expr)
    if t is Literal or t is AttrRef:
        return True
    if t is Select and type(expr.base) is AttrRef and expr.base.name.lower() in ("my", "target"):
        return True
    if t is Paren:
        return _typed(expr.inner, tainted, logic)
    if t is Unary and (expr.op == "-" or (logic and expr.op == "!")):
        return _typed(expr.operand, tainted, logic and expr.op == "!")
    if t is Binary and (expr.op in _TYPED_BINARY or (logic and expr.op in ("&&", "||"))):
        inner = logic and expr.op in ("&&", "||")
        return _typed(expr.left, tainted, inner) and _typed(expr.right, tainted, inner)
    names: set[str] = set()
    every_name(expr, names)
    return not (names & tainted)


@dataclass(frozen=True)
class WideTaint:
    """Which names reach a wide name (``tainted``), and which of those may change type
    with the wide value (``untyped``): see ``kernel.kleene``."""

    tainted: frozenset[str]
    untyped: frozenset[str]

    @classmethod
    def of(cls, reached: dict[str, list[Expr]], wide: Iterable[str]) -> WideTaint:
        refs: dict[str, set[str]] = {}
        for name, exprs in reached.items():
            refs[name] = set()
            for e in exprs:
                every_name(e, refs[name])
        tainted = set(wide)
        grew = True
        while grew:
            more = {n for n, r in refs.items() if n not in tainted and r & tainted}
            tainted |= more
            grew = bool(more)
        untyped = {
            n for n in tainted if any(not _typed(e, tainted, False) for e in reached.get(n, ()))
        }
        grew = True
        while grew:
            more = {n for n in tainted - untyped if refs.get(n, set()) & untyped}
            untyped |= more
            grew = bool(more)
        return cls(frozenset(tainted), frozenset(untyped))

    def kleene_safe(self, requirements: Expr) -> bool:
        """Whether a job's Requirements may be evaluated per class in three-valued logic:
        logic over leaves that read wide names only through type-preserving operators
        and through names that do too."""
        names: set[str] = set()
        every_name(requirements, names)
        return not (names & self.untyped) and _typed(requirements, set(self.tainted), True)


class WatchedAd(ClassAd):
    """A view of a slot ad (sharing its attributes) that notes in ``read`` when an
    evaluation looks up one of the ``watch`` names."""

    __slots__ = ("read", "watch")

    read: bool
    watch: frozenset[str]

    @classmethod
    def of(cls, ad: ClassAd, watch: frozenset[str]) -> WatchedAd:
        view = cls.sharing(ad)
        view.watch = watch
        view.read = False
        return view

    def lookup(self, name: str) -> Expr | None:
        if name.lower() in self.watch:
            self.read = True
        return super().lookup(name)

    def __contains__(self, name: object) -> bool:
        if isinstance(name, str) and name.lower() in self.watch:
            self.read = True
        return super().__contains__(name)


Truth = bool | None | str  # true, false, undefined (None), or "E" (error, not a boolean)


def _truth(v: object) -> Truth:
    if v is True or v is False:
        return v
    if type(v) is int or type(v) is float:
        return v != 0
    return None if v is UNDEFINED else "E"


def _or(a: Truth, b: Truth) -> Truth:
    if a is True or a == "E":
        return a
    if a is False:
        return b
    return b if b is True or b == "E" else None


def _and(a: Truth, b: Truth) -> Truth:
    if a is False or a == "E":
        return a
    if a is True:
        return b
    return b if b is False or b == "E" else None


def alike_answer(
    requirements: Expr,
    job: ClassAd,
    slot: WatchedAd,
    taint: WideTaint,
    now: float | None,
    rng: random.Random | None = None,
) -> bool:
    """Whether a job's Requirements (checked ``taint.kleene_safe``) answer the same on
    every slot that holds the values of ``slot`` for every name but the wide ones, and
    values of the same types for those: the scalar twin of ``kernel.kleene``, for one
    slot standing for all its look-alikes."""

    def walk(node: Expr) -> tuple[Truth, bool]:
        t = type(node)
        if t is Paren:
            return walk(node.inner)
        if t is Unary and node.op == "!":
            v, u = walk(node.operand)
            return (not v if isinstance(v, bool) else v), u
        if t is Binary and node.op in ("&&", "||"):
            lv, lu = walk(node.left)
            decides = node.op == "||"
            if not lu and (lv is decides or lv == "E"):
                return lv, False
            rv, ru = walk(node.right)
            if node.op == "||":
                unknown = (ru or rv is not True) if lu else (lv is False or lv is None) and ru
                return _or(lv, rv), unknown
            unknown = (ru or rv is not False) if lu else (lv is True or lv is None) and ru
            return _and(lv, rv), unknown
        slot.read = False
        v = evaluate(node, job, slot, now=now, rng=rng)
        return _truth(v), slot.read and type(v) in (bool, int, float)

    _value, unknown = walk(requirements)
    return not unknown


def _typed_codes(table: SlotTable, name: str, rows: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """``codes`` (of ``rows``, from ``SlotTable.codes``) with each literal value replaced by its
    type; lists and ads keep their values, expressions their text."""
    tags = table.column(name).lit.tags().astype(np.int64)[rows]
    typed = np.where(tags == V.X, codes, -(2**41) - tags)
    return np.where(codes >= 0, typed, codes)


def _row_ids(key: np.ndarray) -> np.ndarray:
    """An id per row of ``key``, equal exactly where the rows are, numbered in the rows'
    lexicographic order (as ``np.unique(key, axis=0)`` numbers them), built a column at
    a time: sorting whole rows is many times slower. The columns are digits of one
    number (each its range, or its distinct values where the range is wide), numbered
    densely by one sort at the end (or whenever the number would pass 2**62)."""
    n = len(key)
    gid = np.zeros(n, dtype=np.int64)
    if not n:
        return gid
    span = 1  # gid < span
    for k in range(key.shape[1]):
        col = key[:, k]
        lo, hi = int(col.min()), int(col.max())
        if lo == hi:
            continue  # the same in every row: no digit
        if hi - lo < n:
            code, size = col - lo, hi - lo + 1
        else:
            distinct, code = np.unique(col, return_inverse=True)
            code, size = code.reshape(-1), len(distinct)
        if span * size >= 2**62:
            distinct, gid = np.unique(gid, return_inverse=True)
            gid, span = gid.reshape(-1), len(distinct)
        gid = gid * size + code
        span *= size
    _u, gid = np.unique(gid, return_inverse=True)
    return gid.reshape(-1)


@dataclass
class SlotClasses:
    """``of[row]``: the class of each candidate row (-1 for rows that are not);
    ``members[c]``: its rows in snapshot order; ``base[row]``: the p-slot base."""

    of: np.ndarray
    members: list[np.ndarray]
    base: np.ndarray
    wide: frozenset[str] = frozenset()  # names keyed by type among the grouped rows (build)
    # the base with the wide names keyed by type for p-slots too: p-slots alike but for
    # them (FileSystemDomain) share one where an answer provably does not read them
    base_wide: np.ndarray | None = None

    @property
    def reps(self) -> np.ndarray:
        return np.fromiter((int(m[0]) for m in self.members), dtype=np.int64, count=len(self))

    def __len__(self) -> int:
        return len(self.members)

    @classmethod
    def build(
        cls,
        table: SlotTable,
        candidates: np.ndarray,
        groupable: np.ndarray,
        split: np.ndarray,
        attrs: set[str] | None,
        resources: Sequence[str],
        wide_above: int | None = None,
        apart: np.ndarray | None = None,
    ) -> SlotClasses:
        """Classes of the ``candidates`` rows: ``groupable`` rows with equal values of
        every name in ``attrs`` (and equal rows of the key columns ``apart``, when
        given) share one; the others are classes of their own. The ``split`` rows
        (p-slots that are split) get a base that leaves out ``resources``. ``attrs``
        None: every row is its own class.

        ``wide_above``: a name with more distinct values than that among the grouped rows
        (FileSystemDomain, one per machine) is keyed by its type alone among them, and
        listed in ``wide``; a result that read it is good for a class only when
        three-valued evaluation decides it (``kernel.kleene``)."""
        n = table.n
        of = np.full(n, -1, dtype=np.int64)
        base = np.full(n, -1, dtype=np.int64)
        rows = np.flatnonzero(candidates)
        if attrs is None or not len(rows):
            of[rows] = np.arange(len(rows))
            return cls(of, [rows[k : k + 1] for k in range(len(rows))], base)
        res = {r.lower() for r in resources}
        # a name every row holds alike tells no rows apart (a resource still may: a
        # p-slot's base leaves it out)
        coded = [
            (name, code, lo, hi)
            for name in sorted(attrs)
            for code, lo, hi in [table.codes(table.column(name))]
            if lo < hi or name in res
        ]
        flag = len(coded)
        key = np.empty((n, flag + 1 + (0 if apart is None else apart.shape[1])), dtype=np.int64)
        wide: set[str] = set()
        grouped_rows = np.flatnonzero(groupable)
        for k, (name, code, lo, hi) in enumerate(coded):
            key[:, k] = code
            if name in res:  # a p-slot's base leaves its resources out, not their presence
                key[split, k] = np.where(key[split, k] == -1, -1, -3 - 2**40)
            if (
                wide_above is not None
                and len(grouped_rows) > wide_above
                # codes run from lo to hi: fewer than wide_above values need no sort
                and hi - lo + 1 > wide_above
                and len(np.unique(key[grouped_rows, k])) > wide_above
            ):
                # keyed by type alone: a class's slots agree on the name's type, which
                # three-valued evaluation relies on
                wide.add(name)
                key[grouped_rows, k] = _typed_codes(table, name, grouped_rows, key[grouped_rows, k])
        key[:, flag] = groupable.astype(np.int64) + 2 * split.astype(np.int64)
        if apart is not None:
            key[:, flag + 1 :] = apart
        gid = _row_ids(key[rows])
        base[rows] = gid
        base_wide = None
        if wide and split.any():
            split_rows = np.flatnonzero(split)
            for k, (name, *_) in enumerate(coded):
                if name in wide:
                    key[split_rows, k] = _typed_codes(table, name, split_rows, key[split_rows, k])
            base_wide = np.full(n, -1, dtype=np.int64)
            base_wide[rows] = _row_ids(key[rows])
        # grouped rows: one class per key (np.unique orders them, which the cycle does
        # not depend on); the other rows: a class each
        in_group = groupable[rows]
        grouped = rows[in_group]
        keys, inverse = np.unique(gid[in_group], return_inverse=True)
        inverse = inverse.reshape(-1)
        by_class = grouped[np.argsort(inverse, kind="stable")]
        sizes = np.bincount(inverse, minlength=len(keys))
        members = np.split(by_class, np.cumsum(sizes)[:-1]) if len(keys) else []
        singles = rows[~in_group]
        members += [singles[k : k + 1] for k in range(len(singles))]
        of[by_class] = np.repeat(np.arange(len(keys)), sizes)
        of[singles] = np.arange(len(keys), len(members))
        return cls(of, members, base, frozenset(wide), base_wide)


class ClassTable(SlotTable):
    """One representative ad per class. Its resource columns follow the cycle's
    deductions from p-slots; reading a ``wide`` column sets ``touched``."""

    def __init__(self, ads: Sequence[ClassAd], wide: frozenset[str] = frozenset()) -> None:
        super().__init__(ads, watch=wide)
        self._live: dict[str, Column] = {}

    def column(self, name: str) -> Column:
        col = self._live.get(name.lower())
        if col is None:
            return super().column(name)
        if col.name in self.watch:
            self.touched = True
        return col

    def set_numbers(self, name: str, rows: np.ndarray, values: np.ndarray) -> None:
        """Rows ``rows`` of attribute ``name`` now hold the literal numbers ``values``."""
        key = name.lower()
        base = self.column(key)
        n, lit = self.n, base.lit
        tags = lit.tags().copy()
        i = np.array(np.broadcast_to(lit.i if lit.i is not None else 0, (n,)), dtype=np.int64)
        f = np.array(np.broadcast_to(lit.f if lit.f is not None else 0.0, (n,)), dtype=np.float64)
        s = np.array(np.broadcast_to(lit.s if lit.s is not None else 0, (n,)), dtype=np.int64)
        o = None
        if lit.o is not None:
            o = np.empty(n, dtype=object)
            if isinstance(lit.o, np.ndarray) and lit.o.ndim == 1:
                o[:] = lit.o
            else:
                o.fill(lit.o)
        integral = values == np.floor(values)
        ri, rf = rows[integral], rows[~integral]
        tags[ri], i[ri] = V.I, values[integral].astype(np.int64)
        tags[rf], f[rf] = V.R, values[~integral]
        present = base.present.copy()
        present[rows] = True
        exprs = []
        for grows, e in base.exprs:
            keep = grows[~np.isin(grows, rows)]
            if len(keep):
                exprs.append((keep, e))
        vec = V.Vec(n, tags, i, f, s, o).simplify()
        vec.src = key
        self._live[key] = Column(key, present, vec, exprs)


class ClassView:
    """The cycle's slots as classes: the class table, which classes still have live
    rows, where each class's live rows start, and the preemption view of its Claimed
    classes (each one slot). Changes to p-slots wait in ``dirty`` until ``sync``.

    With ``pbase`` (a base per snapshot row: see ``SlotClasses``), p-slot classes of one
    base that hold the same resources now are in one *state*: they answer every
    expression alike, so a request is evaluated once per state (``representatives``).
    Most p-slots of a pool are untouched or used up at any time, so a cycle has a few
    states where it has thousands of p-slots."""

    def __init__(
        self,
        ads: Sequence[ClassAd],
        classes: SlotClasses,
        alive: np.ndarray,
        has_cp: np.ndarray,
        claimed: np.ndarray,
        preemption: tuple[Expr | None, Expr | None],
        stats: KernelStats,
        pbase: np.ndarray | None = None,
        owns: np.ndarray | None = None,
        resources: Sequence[str] = (),
        *,
        now: float | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.classes = classes
        self.reps = classes.reps
        self.table = ClassTable([ads[r] for r in self.reps], classes.wide)
        self.has_cp = has_cp[self.reps]
        self.alive = np.bincount(classes.of[alive], minlength=len(self.reps))
        self.starts = np.zeros(len(self.reps), dtype=np.int64)
        self.sizes = np.fromiter((len(m) for m in classes.members), np.int64, len(self.reps))
        self.preempt = Preemption(
            self.table.ads, claimed[self.reps], *preemption, stats, now=now, rng=rng
        )
        self.dirty: set[int] = set()
        self._reps: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None  # see representatives
        # p-slot states: an id per class row (-1: not a p-slot), from its base, which
        # resources it lists and the values (and types) its resource columns hold; each
        # state's live slot rows, in order
        self.state: np.ndarray | None = None
        self._members: list[list[int]] = []
        self._live_states: set[int] = set()
        grouped = self.has_cp if pbase is not None and owns is not None else None
        # the classes a request is evaluated on each as its own row: all but the
        # p-slots in states
        self._singly = (
            np.flatnonzero(~grouped) if grouped is not None else np.arange(len(self.reps))
        )
        if grouped is not None and grouped.any():
            assert pbase is not None and owns is not None
            self._pbase = pbase[self.reps]
            self._owns = owns[:, self.reps]
            self._resources = tuple(resources)
            self._state_ids: dict[bytes, int] = {}
            self.state = np.full(len(self.reps), -1, dtype=np.int64)
            self._restate(np.flatnonzero(grouped))
        # whether a class row keeps its values all cycle: every p-slot, which changes as
        # it is split, is in a state (named by what it holds), or there are none
        self.rows_fixed = self.state is not None or not self.has_cp.any()

    def _state_of(self, crows: np.ndarray) -> list[int]:
        t = self.table
        parts = [self._pbase[crows], *self._owns[:, crows].astype(np.int64)]
        for res in self._resources:  # an expression in a resource: a state of its own
            parts += literal_keys(t.column(res), crows)
        keys = np.ascontiguousarray(np.stack(parts, axis=1))
        ids = self._state_ids
        return [ids.setdefault(key.tobytes(), len(ids)) for key in keys]

    def _restate(self, crows: np.ndarray) -> None:
        """Give the class rows ``crows`` (p-slots) the states they hold now."""
        assert self.state is not None
        for c, sid in zip(crows.tolist(), self._state_of(crows), strict=True):
            old = int(self.state[c])
            if old == sid:
                continue
            self._reps = None
            if old >= 0 and self.alive[c] > 0:
                self._leave(c, old)
            self.state[c] = sid
            if self.alive[c] > 0:
                while sid >= len(self._members):
                    self._members.append([])
                bisect.insort(self._members[sid], int(self.reps[c]))
                self._live_states.add(sid)

    def _leave(self, c: int, sid: int) -> None:
        m = self._members[sid]
        del m[bisect.bisect_left(m, int(self.reps[c]))]
        if not m:
            self._live_states.discard(sid)

    def representatives(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The class rows to evaluate a request on: every live class but the p-slots in
        states, then one per live state; how many live classes each stands for; and
        the states (``-1 - state`` after the classes: see ``CandidateStream``). Kept
        until a class dies or a p-slot changes state."""
        if self._reps is not None:
            return self._reps
        singly = self._singly[self.alive[self._singly] > 0]
        if not self._live_states:
            self._reps = (singly, np.ones(len(singly), dtype=np.int64), singly)
            return self._reps
        states = sorted(self._live_states)
        members = self._members
        reps = self.classes.of[np.fromiter((members[s][0] for s in states), np.int64, len(states))]
        counts = np.fromiter((len(members[s]) for s in states), np.int64, len(states))
        entries = np.concatenate((singly, -1 - np.array(states, dtype=np.int64)))
        self._reps = (
            np.concatenate((singly, reps)),
            np.concatenate((np.ones(len(singly), dtype=np.int64), counts)),
            entries,
        )
        return self._reps

    def state_rows(self, sid: int) -> Iterator[int]:
        """The live slot rows of state ``sid``, in snapshot order, read as they are when
        each is asked for (a row may leave the state meanwhile)."""
        m = self._members[sid]
        last = -1
        while (i := bisect.bisect_right(m, last)) < len(m):
            last = m[i]
            yield last

    def row_keys(self, rows: np.ndarray) -> np.ndarray:
        """A key per class row that stays its meaning for the cycle: the row itself,
        or for a p-slot in a state, the state (after every class row)."""
        if self.state is None:
            return rows
        st = self.state[rows]
        return np.where(st >= 0, len(self.reps) + st, rows)

    def row_key(self, c: int) -> int:
        """``row_keys`` of one class row, without numpy."""
        sid = -1 if self.state is None else int(self.state[c])
        return len(self.reps) + sid if sid >= 0 else c

    def kill(self, row: int) -> None:
        c = int(self.classes.of[row])
        self.alive[c] -= 1
        if self.alive[c] == 0:
            self._reps = None
            if self.state is not None and self.state[c] >= 0:
                self._leave(c, int(self.state[c]))

    def kill_rows(self, rows: np.ndarray) -> None:
        """``kill`` of each of ``rows`` (live, distinct), at once."""
        cs = self.classes.of[rows]
        np.subtract.at(self.alive, cs, 1)
        dead = np.unique(cs[self.alive[cs] == 0])
        if not len(dead):
            return
        self._reps = None
        if self.state is not None:
            for c in dead[self.state[dead] >= 0].tolist():
                self._leave(c, int(self.state[c]))

    def sync(self, avail: np.ndarray, owns: np.ndarray, resources: Sequence[str]) -> None:
        """Bring the p-slot rows' resource columns (and states) up to date."""
        if not self.dirty:
            return
        rows = np.fromiter(sorted(self.dirty), dtype=np.int64)
        # a view made later in the cycle (``fine``) has no class for a row dead by then
        rows = rows[self.classes.of[rows] >= 0]
        for k, res in enumerate(resources):
            own = rows[owns[k, rows]]
            if len(own):
                self.table.set_numbers(res, self.classes.of[own], avail[k, own])
        self.dirty.clear()
        if self.state is not None:
            self._restate(self.classes.of[rows])
