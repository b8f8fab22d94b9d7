"""Whether a partitionable slot can hold a job: HTCondor's ``WithinResourceLimits``.

HTCondor's startd advertises a partitionable slot's Requirements as ``START &&
(WithinResourceLimits)`` (Reqexp.cpp ``publish_requirements``); without a consumption
policy, and with STARTD_JOB_HAS_REQUEST_ATTRS false (the default), WithinResourceLimits
is (``climit_simple``)::

    MY.Cpus > 0 && TARGET.RequestCpus <= MY.Cpus && MY.Memory > 0 &&
    TARGET.RequestMemory <= MY.Memory && MY.Disk > 0 && TARGET.RequestDisk <= MY.Disk

with ``&& (TARGET.Request<Res> is UNDEFINED || MY.<Res> >= TARGET.Request<Res>)`` for
each custom resource of the slot (GPUs, MACHINE_RESOURCE_<name>). So the negotiator never
matches a p-slot the job does not fit, whatever the job's own Requirements say (condor_submit
leaves ``TARGET.Cpus >= RequestCpus`` out for a one-cpu job): a used-up p-slot
(``Cpus = 0``), which NEGOTIATOR_PRE_JOB_RANK ranks first, is not matched again and again
only for the startd to refuse it.

mockpool's startd advertises START alone as a slot's Requirements, so the negotiator adds
the clause itself, to the p-slots it matches whole (no consumption policy: a p-slot with
one is held to its consumption instead, ``cp_sufficient_assets``). Known difference:
HTCondor 23 and later give static and dynamic slots the clause too; here they have none
(a job's own Requirements hold it to their resources, as condor_submit writes them).
"""

from __future__ import annotations

import random

import numpy as np

from ..classad import ClassAd, parse_expr
from ..classad.budget import Budget
from ..classad.kernel import CompiledExpr, KernelStats, SlotTable
from ..classad.tree import Expr

__all__ = ["PslotFit", "within_resource_limits"]

_STANDARD = ("cpus", "memory", "disk", "swap")
_MACHINE_RESOURCES = CompiledExpr("MY.MachineResources")


def within_resource_limits(custom: tuple[str, ...] = ()) -> str:
    """HTCondor's WithinResourceLimits text for a p-slot with these custom resources."""
    text = " && ".join(
        f"MY.{r} > 0 && TARGET.Request{r} <= MY.{r}" for r in ("Cpus", "Memory", "Disk")
    )
    for r in custom:
        text += f" && (TARGET.Request{r} is UNDEFINED || MY.{r} >= TARGET.Request{r})"
    return text


def _custom(machine_resources: object) -> tuple[str, ...]:
    """The custom resources a MachineResources value lists, in its order."""
    if not isinstance(machine_resources, str):
        return ()
    names = machine_resources.replace(",", " ").split()
    return tuple(n for n in names if n.lower() not in _STANDARD)


class PslotFit:
    """The cycle's p-slots that are matched whole, and their WithinResourceLimits: one
    expression per set of custom resources (slots without a resource have no clause
    for it, as in HTCondor)."""

    def __init__(self, groups: list[tuple[np.ndarray, CompiledExpr]]) -> None:
        self._groups = groups  # (bool per snapshot row: a p-slot held to it, its clause)

    @classmethod
    def of(
        cls,
        table: SlotTable,
        rows: np.ndarray,
        *,
        stats: KernelStats,
        now: float,
        rng: random.Random | None = None,
    ) -> PslotFit | None:
        """The clause for the snapshot ``rows`` (a bool mask), None when there are none."""
        at = np.flatnonzero(rows)
        if not len(at):
            return None
        mres = _MACHINE_RESOURCES.eval(
            table, None, "target", stats=stats, now=now, rows=at, rng=rng
        )
        by_set: dict[tuple[str, ...], list[int]] = {}
        custom: dict[str | None, tuple[str, ...]] = {}  # slots of a type share one value
        for r, value in zip(at.tolist(), mres.to_values(table.pool), strict=True):
            text = value if isinstance(value, str) else None
            key = custom.get(text)
            if key is None:
                key = custom[text] = _custom(text)
            by_set.setdefault(key, []).append(r)
        groups = []
        for names, members in by_set.items():
            mask = np.zeros(len(rows), dtype=bool)
            mask[members] = True
            groups.append((mask, CompiledExpr(parse_expr(within_resource_limits(names)))))
        return cls(groups)

    @property
    def exprs(self) -> list[Expr]:
        """The clauses, for the cycle's reach (the names they read key the slot classes
        and the request shapes)."""
        return [ce.expr for _, ce in self._groups]

    def holds(
        self,
        table: SlotTable,
        reps: np.ndarray,
        at: np.ndarray,
        job: ClassAd,
        *,
        stats: KernelStats,
        now: float,
        budget: Budget,
        rng: random.Random | None = None,
    ) -> np.ndarray:
        """Whether ``job`` fits each of the rows ``at`` of ``table`` (whose snapshot rows
        are ``reps[at]``); rows not held to the clause fit."""
        out = np.ones(len(at), dtype=bool)
        snap = reps[at]
        for mask, ce in self._groups:
            sel = np.flatnonzero(mask[snap])
            if len(sel):
                out[sel] = ce.requirements_mask(
                    table,
                    job,
                    "target",
                    stats=stats,
                    now=now,
                    rng=rng,
                    budget=budget,
                    rows=at[sel],
                )
        return out
