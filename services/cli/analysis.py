"""Why a job does (not) run: condor_q -better-analyze's figures, computed with the kernel.

What HTCondor's condor_q computes (condor_q.V6/jobmatch.cpp ``doJobRunAnalysis`` and
``checkOffer``, condor_utils/expr_analyze.cpp ``AnalyzeRequirementsForEachTarget``):

- Each slot ad is counted once: rejected by the job's Requirements; else rejecting the
  job by its own Requirements (START); else, both matching, willing to run it when it
  has no RemoteUser, or already running one of the user's jobs, or serving another user.
- The job's Requirements are split into numbered steps in evaluation order (a leaf, the
  next leaf, then the ``&&`` of the two, ...), each counted over the slots. An ``&&``
  whose count equals one side's stands for that side and is not shown; a side that
  matches more slots than the ``&&`` is then pruned as irrelevant. A step without slot
  references is constant: "always" or "never".

Known difference: only ``&&`` is broken into steps (HTCondor also splits ``||``, ``!``
and ``?:``); any other sub-expression is one step.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..classad import UNDEFINED, ClassAd, evaluate, unparse
from ..classad.kernel import CompiledExpr, SlotTable
from ..classad.tree import AttrRef, Binary, Expr, Paren, Select, walk
from ..tooltime import TOOL_RNG, wall_now

__all__ = ["JobAnalysis", "Step", "analyze_job", "referenced_job_attributes"]


@dataclass(frozen=True)
class Step:
    """One line of the "reduces to these conditions" table."""

    index: int
    label: str
    matched: int | None  # slots matching; None for a constant step
    constant: bool | None = None  # a constant step's value (always / never)


@dataclass
class JobAnalysis:
    cluster: int
    proc: int
    steps: list[Step]
    total_slots: int = 0
    machines: int = 0
    rejected_by_job: int = 0  # fReqConstraint
    rejected_by_slots: int = 0  # fOffConstraint
    running_yours: int = 0
    serving_others: int = 0
    willing: int = 0
    job_matches_slot: int = 0
    both_match: int = 0
    job_attributes: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class _Node:
    expr: Expr
    left: int = -1  # && nodes: their operands' step numbers
    right: int = -1
    mask: np.ndarray | None = None
    constant: bool | None = None
    effective: int = -1
    dont_care: bool = False


def _strip(e: Expr) -> Expr:
    while isinstance(e, Paren):
        e = e.inner
    return e


def _is_and(e: Expr) -> bool:
    return isinstance(e, Binary) and e.op == "&&"


def _flatten(e: Expr, nodes: list[_Node]) -> int:
    """Number the && tree in evaluation order (left operand, right operand, the &&)."""
    e = _strip(e)
    if _is_and(e):
        assert isinstance(e, Binary)
        left = _flatten(e.left, nodes)
        right = _flatten(e.right, nodes)
        nodes.append(_Node(e, left, right))
    else:
        nodes.append(_Node(e))
    return len(nodes) - 1


def _targets_slot(e: Expr, job: ClassAd) -> bool:
    """Whether a sub-expression can depend on the slot (TARGET.x, or a bare name the job
    does not define)."""
    for node in walk(e):
        if (
            isinstance(node, Select)
            and isinstance(node.base, AttrRef)
            and node.base.name.lower() == "target"
        ):
            return True
        if (
            isinstance(node, AttrRef)
            and node.name.lower() not in ("my", "target")
            and job.lookup(node.name) is None
        ):
            return True
    return False


def referenced_job_attributes(job: ClassAd, expr: Expr) -> list[tuple[str, str]]:
    """(name, raw value text) of the job's own attributes ``expr`` refers to, sorted by
    name without case, as condor_q lists them under "defines the following attributes"."""
    names: dict[str, str] = {}
    for node in walk(expr):
        name = None
        if (
            isinstance(node, Select)
            and isinstance(node.base, AttrRef)
            and node.base.name.lower() == "my"
        ) or (isinstance(node, AttrRef) and node.name.lower() not in ("my", "target")):
            name = node.name
        if name is not None and name.lower() != "requirements":
            value = job.lookup(name)
            if value is not None:
                names.setdefault(name.lower(), f"{name} = {unparse(value)}")
    return [(k, names[k]) for k in sorted(names)]


def _truthy(v: object) -> bool:
    if isinstance(v, bool):
        return v
    return isinstance(v, int | float) and v != 0


def _steps(job: ClassAd, requirements: Expr, table: SlotTable, now: float | None) -> list[Step]:
    nodes: list[_Node] = []
    _flatten(requirements, nodes)
    count = {}
    for ix, node in enumerate(nodes):
        if node.left < 0 and not _targets_slot(node.expr, job):
            v = evaluate(node.expr, job, None, now=now, rng=TOOL_RNG)
            node.constant = v is not UNDEFINED and _truthy(v)
            continue
        if node.left >= 0:
            lc, rc = nodes[node.left], nodes[node.right]
            lm = _mask_of(lc, table.n)
            rm = _mask_of(rc, table.n)
            node.mask = lm & rm
            ca, cl, cr = int(node.mask.sum()), int(lm.sum()), int(rm.sum())
            if cl == ca:
                node.effective = _follow(nodes, node.left)
                if cr > ca:
                    rc.dont_care = True
            elif cr == ca:
                node.effective = _follow(nodes, node.right)
                if cl > ca:
                    lc.dont_care = True
            else:
                node.left, node.right = _follow(nodes, node.left), _follow(nodes, node.right)
        else:
            node.mask = CompiledExpr(node.expr).requirements_mask(
                table, job, "my", now=now, rng=TOOL_RNG
            )
        count[ix] = int(node.mask.sum())
    out = []
    for ix, node in enumerate(nodes):
        if node.effective >= 0 or node.dont_care:
            continue
        label = f"[{node.left}] && [{node.right}]" if node.left >= 0 else unparse(node.expr)
        if node.constant is not None:
            out.append(Step(ix, label, None, node.constant))
        else:
            out.append(Step(ix, label, count[ix]))
    return out


def _follow(nodes: list[_Node], ix: int) -> int:
    while nodes[ix].effective >= 0:
        ix = nodes[ix].effective
    return ix


def _mask_of(node: _Node, n: int) -> np.ndarray:
    if node.mask is not None:
        return node.mask
    return np.full(n, bool(node.constant))


def analyze_job(job: ClassAd, slots: Sequence[ClassAd], *, now: float | None = None) -> JobAnalysis:
    """condor_q -better-analyze's figures for ``job`` over the collector's slot ads."""
    now = wall_now(now)  # the pool's date when the caller knows it, else the wall clock
    cluster, proc = (
        job.eval("ClusterId", now=now, rng=TOOL_RNG),
        job.eval("ProcId", now=now, rng=TOOL_RNG),
    )
    out = JobAnalysis(
        cluster if isinstance(cluster, int) else 0, proc if isinstance(proc, int) else 0, []
    )
    requirements = job.lookup("Requirements")
    table = SlotTable(list(slots))
    n = table.n
    if requirements is not None:
        out.steps = _steps(job, requirements, table, now)
        out.job_attributes = referenced_job_attributes(job, requirements)
    out.total_slots = n
    if n == 0:
        return out
    machines = {ad.eval("Machine") for ad in slots}
    out.machines = len({m for m in machines if isinstance(m, str)})
    if requirements is not None:
        wants = CompiledExpr(requirements).requirements_mask(
            table, job, "my", now=now, rng=TOOL_RNG
        )
    else:
        wants = np.zeros(n, dtype=bool)
    takes = CompiledExpr(Select(AttrRef("MY"), "Requirements")).requirements_mask(
        table, job, "target", now=now, rng=TOOL_RNG
    )
    both = wants & takes
    out.rejected_by_job = int((~wants).sum())
    out.job_matches_slot = int(wants.sum())
    out.rejected_by_slots = int((wants & ~takes).sum())
    out.both_match = int(both.sum())
    user = job.eval("User")
    for r in np.flatnonzero(both):
        remote = slots[r].eval("RemoteUser")
        if not isinstance(remote, str):
            out.willing += 1
        elif remote == user:
            out.running_yours += 1
        else:
            out.serving_others += 1
    return out
