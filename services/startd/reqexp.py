"""A slot ad's Requirements and WithinResourceLimits, as HTCondor's startd publishes them
(``src/condor_startd.V6/Reqexp.cpp``).

- ``Start`` is the START expression; ``Requirements = START`` for a static slot and
  ``START && (WithinResourceLimits)`` for a partitionable or dynamic one.
- ``WithinResourceLimits`` (partitionable and dynamic slots only), with
  STARTD_JOB_HAS_REQUEST_ATTRS true (the default), is ``climit_simple``::

      (MY.Cpus > 0 && TARGET.RequestCpus <= MY.Cpus && MY.Memory > 0 &&
       TARGET.RequestMemory <= MY.Memory && MY.Disk > 0 && TARGET.RequestDisk <= MY.Disk)

  with ``&& (TARGET.Request<R> is UNDEFINED || MY.<R> >= ifThenElse(...))`` for each
  custom resource before the closing parenthesis. A slot with a consumption policy (a
  p-slot with one, or a d-slot carved from it) gets the consumption variant instead: for
  each asset (Cpus, Disk, Memory and the custom ones, in case-insensitive order)
  ``ifThenElse(TARGET._cp_orig_Request<R> isnt UNDEFINED, TARGET.Request<R> <= MY.<R>,
  MY.Consumption<R> <= MY.<R>)``.

The negotiator reads the slot's Requirements as it reads any expression; a p-slot matched
whole is held to the same clause by ``negotiator.fit`` (so a used-up p-slot is never
matched), and one with a consumption policy to its consumption, which the clause's
variant implies.
"""

from __future__ import annotations

import functools

from ..classad import parse_expr
from ..classad.tree import Expr

__all__ = ["requirements", "within_resource_limits"]

_STATIC = parse_expr("START")
_SPLIT = parse_expr("START && (WithinResourceLimits)")


def requirements(kind: str) -> Expr:
    """The Requirements of a slot of ``kind`` (Static, Partitionable or Dynamic): one
    shared tree per kind."""
    return _STATIC if kind == "Static" else _SPLIT


def _custom_clause(res: str) -> str:
    return (
        f"(TARGET.Request{res} is UNDEFINED || MY.{res} >= ifThenElse("
        f"TARGET._condor_Request{res} is UNDEFINED, TARGET.Request{res}, "
        f"TARGET._condor_Request{res}))"
    )


@functools.lru_cache(maxsize=256)
def within_resource_limits(custom: tuple[str, ...], consumption: bool) -> Expr:
    """WithinResourceLimits of a split slot with these custom resources (their names),
    with a consumption policy or without: one shared tree per kind of slot."""
    if consumption:
        assets = sorted({"Cpus", "Memory", "Disk", *custom}, key=str.lower)
        text = " && ".join(
            f"ifThenElse(TARGET._cp_orig_Request{r} isnt UNDEFINED, "
            f"TARGET.Request{r} <= MY.{r}, MY.Consumption{r} <= MY.{r})"
            for r in assets
        )
    else:
        text = " && ".join(
            f"MY.{r} > 0 && TARGET.Request{r} <= MY.{r}" for r in ("Cpus", "Memory", "Disk")
        )
        text += "".join(f" && {_custom_clause(r)}" for r in custom)
    return parse_expr(f"({text})")
