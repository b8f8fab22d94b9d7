"""Preemption in the negotiator: which Claimed slots a request may take, and why not.

HTCondor's rules (matchmaker.cpp ``matchmakingAlgorithm``, ``calculateRanks``,
``addRemoteUserPrios``, ``trimStartdAds_PreemptionLogic``):

- With NEGOTIATOR_CONSIDER_PREEMPTION (default True) Claimed slots stay candidates, except
  those whose job still has retirement time (``RetirementTimeRemaining > 0``) unless
  NEGOTIATOR_CONSIDER_EARLY_PREEMPTION; without it every Claimed slot is trimmed.
- The slot's remote user is the first of PreemptingAccountingGroup, PreemptingUser,
  AccountingGroup, RemoteUser it has. Before matching, the slot gets ``RemoteUserPrio``
  (the remote user's EUP, as a float) and ``RemoteUserResourcesInUse``; the request gets
  ``SubmitterUserPrio`` (and the old ``SubmittorPrio``) and ``SubmitterUserResourcesInUse``.
- A Claimed slot that matches: ``MY.Rank > MY.CurrentRank`` is rank preemption; else, a
  remote user other than the submitter is priority preemption if PREEMPTION_REQUIREMENTS
  (when set) is true -- otherwise a "PREEMPTION_REQUIREMENTS == False" rejection is counted
  -- and ``MY.Rank >= MY.CurrentRank``; else the slot is skipped.
- Candidates sort on (pre-job rank, job Rank, post-job rank, state, PREEMPTION_RANK), each
  larger first, with no preemption (2) over rank (1) over priority (0).
- A request that finds nothing is rejected with the first reason that applies:
  "concurrency limit reached", "PREEMPTION_REQUIREMENTS == False", "insufficient
  priority", "submitter limit exceeded", else "no match found". (HTCondor never counts
  "insufficient priority" any more; it stays for the order.)
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..classad import ERROR, UNDEFINED, ClassAd, ClassAdSyntaxError, evaluate, parse_expr
from ..classad import vector as V
from ..classad.kernel import CompiledExpr, KernelStats, SlotTable, literal_keys
from ..classad.tree import Expr
from ..config import ConfigDict

__all__ = [
    "NO_PREEMPTION",
    "PRIO_PREEMPTION",
    "RANK_PREEMPTION",
    "Diagnosis",
    "Preemption",
    "check_negotiator_config",
    "preempted_user_key",
    "preempting_line",
    "preemption_policy",
    "remote_user",
    "with_submitter_attrs",
]

PRIO_PREEMPTION, RANK_PREEMPTION, NO_PREEMPTION = 0, 1, 2  # HTCondor's PreemptState
_REMOTE_USER_ATTRS = (
    "PreemptingAccountingGroup",
    "PreemptingUser",
    "AccountingGroup",
    "RemoteUser",
)
_RANK_ABOVE = "MY.Rank > MY.CurrentRank"
_RANK_AT_LEAST = "MY.Rank >= MY.CurrentRank"


def _probe_ads() -> tuple[ClassAd, ClassAd]:
    """A Claimed slot and a request with every attribute the policies usually read."""
    slot, job = ClassAd(), ClassAd()
    for k, v in {
        "MyType": "Machine",
        "Name": "slot1@probe",
        "State": "Claimed",
        "Activity": "Busy",
        "Cpus": 1,
        "Memory": 1024,
        "Disk": 1024,
        "Rank": 0.0,
        "CurrentRank": 0.0,
        "RemoteUser": "u@probe",
        "RemoteOwner": "u@probe",
        "AccountingGroup": "u@probe",
        "RemoteUserPrio": 1.0,
        "RemoteUserResourcesInUse": 1.0,
        "TotalJobRuntime": 0,
        "SlotWeight": 1,
    }.items():
        slot[k] = v
    for k, v in {
        "MyType": "Job",
        "Owner": "v",
        "User": "v@probe",
        "RequestCpus": 1,
        "RequestMemory": 1024,
        "RequestDisk": 1024,
        "SubmitterUserPrio": 1.0,
        "SubmittorPrio": 1.0,
        "SubmitterUserResourcesInUse": 0.0,
        "JobPrio": 0,
    }.items():
        job[k] = v
    return slot, job


def _type_check(name: str, want: str):
    """A validator for ``ConfigDict.get_expr``: parses, then evaluates on probe ads and
    refuses a value that can never be a ``want`` ("boolean" or "number")."""

    def check(text: str) -> None:
        try:
            expr = parse_expr(text)
        except ClassAdSyntaxError as exc:
            raise ValueError(f"not a ClassAd expression: {exc}") from None
        slot, job = _probe_ads()
        v = evaluate(expr, slot, job, now=0, rng=random.Random(0))  # a type check: any date
        if v is UNDEFINED or isinstance(v, bool | int | float):
            return
        shown = "ERROR" if v is ERROR else repr(v)
        raise ValueError(f"{name} must be a {want} expression, but it evaluates to {shown}")

    return check


def preemption_policy(config: ConfigDict, name: str) -> Expr | None:
    """PREEMPTION_REQUIREMENTS or PREEMPTION_RANK, parsed and type-checked; None if unset.

    A bad value raises ConfigError naming the file, line and knob."""
    want = "boolean" if name == "PREEMPTION_REQUIREMENTS" else "number"
    text = config.get_expr(name, validate=_type_check(name, want))
    return parse_expr(text) if text else None


def check_negotiator_config(config: ConfigDict) -> None:
    """What the negotiator would refuse at its start, checked before a pool starts."""
    cfg = config.for_subsystem("NEGOTIATOR")
    for knob in ("PREEMPTION_REQUIREMENTS", "PREEMPTION_RANK"):
        preemption_policy(cfg, knob)
    for knob in ("NEGOTIATOR_CONSIDER_PREEMPTION", "NEGOTIATOR_CONSIDER_EARLY_PREEMPTION"):
        cfg.get_bool(knob, True)


def remote_user(
    ad: ClassAd, now: float | None = None, rng: random.Random | None = None
) -> str | None:
    """Who a Claimed slot would preempt (HTCondor's lookup order)."""
    for attr in _REMOTE_USER_ATTRS:
        v = ad.eval(attr, now=now, rng=rng)
        if isinstance(v, str):
            return v
    return None


def preempted_user_key(table: SlotTable, rows: np.ndarray) -> np.ndarray:
    """Key columns (one row per slot) that set the Claimed slots ``rows`` apart from every
    other slot and, among themselves, are equal where ``remote_user`` reads the same
    values (an expression is a key of its own): Claimed slots form classes only with
    slots that would preempt the same user."""
    out = np.zeros((table.n, 2 * len(_REMOTE_USER_ATTRS) + 1), dtype=np.int64)
    out[rows, -1] = 1
    for k, name in enumerate(_REMOTE_USER_ATTRS):
        out[rows, 2 * k], out[rows, 2 * k + 1] = literal_keys(table.column(name), rows)
    return out


# what with_submitter_attrs adds to a request
SUBMITTER_ATTRS = ("SubmittorPrio", "SubmitterUserPrio", "SubmitterUserResourcesInUse")


def with_submitter_attrs(job: ClassAd, eup: float, in_use: float) -> ClassAd:
    """A copy of the request with the submitter's ephemeral attributes, as HTCondor's
    negotiator inserts them before matching."""
    out = job.copy()
    out["SubmittorPrio"] = float(eup)
    out["SubmitterUserPrio"] = float(eup)
    out["SubmitterUserResourcesInUse"] = float(in_use)
    return out


@dataclass
class Diagnosis:
    """Why candidates fell out for one request (HTCondor's rejPreemptFor* counters)."""

    preempt_for_policy: int = 0  # PREEMPTION_REQUIREMENTS was not true
    preempt_for_rank: int = 0  # startd Rank below CurrentRank
    preempt_for_prio: int = 0
    submitter_limit: int = 0
    concurrency_limit: int = 0

    def reason(self) -> str:
        if self.concurrency_limit:
            return "concurrency limit reached"
        if self.preempt_for_policy:
            return "PREEMPTION_REQUIREMENTS == False"
        if self.preempt_for_prio:
            return "insufficient priority"
        if self.submitter_limit:
            return "submitter limit exceeded"
        return "no match found"


def _truth(v: V.Vec) -> np.ndarray:
    return V.truth(v).is_true()


class Preemption:
    """One cycle's view of the Claimed candidates: who runs there, at what priority."""

    def __init__(
        self,
        ads: Sequence[ClassAd],
        rows: np.ndarray,
        requirements: Expr | None,
        rank: Expr | None,
        stats: KernelStats,
        *,
        now: float | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.rows = rows  # Claimed rows that are candidates
        # the date time() reads in the cycle's expressions, and what random() draws from
        self.now, self.rng = now, rng
        n = len(ads)
        self.remote: np.ndarray = np.full(n, None, dtype=object)
        for r in np.flatnonzero(rows):
            self.remote[r] = remote_user(ads[r], now, rng)
        self.kstats = stats
        self.rank_above = CompiledExpr(_RANK_ABOVE)
        self.rank_at_least = CompiledExpr(_RANK_AT_LEAST)
        self.requirements = CompiledExpr(requirements) if requirements is not None else None
        self.rank = CompiledExpr(rank) if rank is not None else None

    def prio_inputs(self) -> dict[str, list[int]]:
        """Rows per remote user (for RemoteUserPrio and RemoteUserResourcesInUse)."""
        out: dict[str, list[int]] = {}
        for r in np.flatnonzero(self.rows):
            user = self.remote[r]
            if user is not None:
                out.setdefault(user, []).append(int(r))
        return out

    def classify(
        self, table: SlotTable, job: ClassAd, rows: np.ndarray, submitter: str, diag: Diagnosis
    ) -> tuple[np.ndarray, np.ndarray]:
        """(allowed, state) of each matched class row in ``rows``; counts rejections in
        diag.

        Unclaimed rows pass as NO_PREEMPTION; Claimed ones as rank or priority preemption,
        or fall out."""
        n = len(rows)
        state = np.full(n, NO_PREEMPTION, dtype=np.int8)
        claimed = self.rows[rows]
        if not claimed.any():
            return np.ones(n, dtype=bool), state
        at = np.flatnonzero(claimed)
        crows = rows[at]
        now, rng, stats = self.now, self.rng, self.kstats
        allowed = ~claimed
        above = _truth(
            self.rank_above.eval(table, job, "target", stats=stats, rows=crows, now=now, rng=rng)
        )
        state[at[above]] = RANK_PREEMPTION
        allowed[at[above]] = True
        rest = ~above
        remote = self.remote[crows]
        has_user = np.array([u is not None for u in remote], dtype=bool)
        other = rest & has_user & (remote != submitter)
        if other.any():
            ok = other
            if self.requirements is not None:
                ok = other & _truth(
                    self.requirements.eval(
                        table, job, "target", stats=stats, rows=crows, now=now, rng=rng
                    )
                )
                diag.preempt_for_policy += int((other & ~ok).sum())
            ranked = ok & _truth(
                self.rank_at_least.eval(
                    table, job, "target", stats=stats, rows=crows, now=now, rng=rng
                )
            )
            diag.preempt_for_rank += int((ok & ~ranked).sum())
            state[at[ranked]] = PRIO_PREEMPTION
            allowed[at[ranked]] = True
        return allowed, state


def preempting_line(
    remote: str,
    remote_prio: float,
    old_rank: float,
    slot: str,
    submitter: str,
    prio: float,
    new_rank: float,
) -> str:
    """HTCondor's NegotiatorLog line before a preempting match."""
    return (
        f"      Preempting {remote} (user prio={remote_prio:.2f}, startd rank={old_rank:.2f}) on {slot} "
        f"for {submitter} (user prio={prio:.2f}, startd rank={new_rank:.2f})"
    )
