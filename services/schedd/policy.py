"""Job policy: what the periodic and on-exit expressions say to do with a job.

HTCondor's UserPolicy (user_job_policy.cpp), evaluated by the schedd for jobs that are
not running and by the shadow for those that are; mockpool has no shadow, so its schedd
does both. The rules, first to fire wins:

- a running job: AllowedJobDuration, then AllowedExecuteDuration (held, codes 46 and 47),
  then PeriodicVacate / SYSTEM_PERIODIC_VACATE (evicted, back to Idle; periodic only);
- TimerRemove, an epoch time already passed (removed);
- a job neither Held nor Completed: PeriodicHold, then SYSTEM_PERIODIC_HOLD (held);
- a Held job, unless held by its user or past SYSTEM_MAX_RELEASES holds: PeriodicRelease,
  then SYSTEM_PERIODIC_RELEASE (released);
- PeriodicRemove, then SYSTEM_PERIODIC_REMOVE (removed);
- at a job's exit only (after the rules above for a running job, where a remove that
  fires completes the job): OnExitHold (held), then OnExitRemove: false means the job
  stays in the queue (Idle again), anything else (absent, true, undefined) completes it.

An expression fires when it evaluates to a number (a boolean counts; a real is truncated,
so 0.5 does not fire) other than zero; undefined never fires. A Removed job has no
periodic policy. The reason, code and subcode are HTCondor's: the job's own
``<Attr>Reason`` / ``<Attr>SubCode`` (or the knob's ``_REASON`` / ``_SUBCODE``) when set,
else "The job attribute PeriodicHold expression '...' evaluated to TRUE".
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..classad import ClassAd, parse_expr, unparse
from ..classad.evaluate import evaluate
from ..classad.tree import Expr, Literal
from ..config import ConfigDict
from ..jobstates import (
    COMPLETED,
    HELD,
    HOLD_CODE_EXECUTE_DURATION,
    HOLD_CODE_JOB_DURATION,
    HOLD_CODE_JOB_POLICY,
    HOLD_CODE_SYSTEM_POLICY,
    HOLD_CODE_USER,
    REMOVED,
    RUNNING,
    SUSPENDED,
    VACATE_CODE_JOB_POLICY,
    VACATE_CODE_SYSTEM_POLICY,
)

if TYPE_CHECKING:
    from random import Random

__all__ = [
    "POLICY_ATTRS",
    "PolicyVerdict",
    "SystemPolicy",
    "at_exit",
    "has_policy",
    "periodic",
    "short_duration",
]


# the job attributes that can give a job a policy (with TimerRemove and the durations)
POLICY_ATTRS = frozenset(
    n.lower()
    for n in (
        "PeriodicHold",
        "PeriodicRelease",
        "PeriodicRemove",
        "PeriodicVacate",
        "TimerRemove",
        "AllowedJobDuration",
        "AllowedExecuteDuration",
    )
)


@dataclass(frozen=True)
class PolicyVerdict:
    """What to do: ``hold``, ``release``, ``remove``, ``vacate``, or at an exit
    ``requeue`` (OnExitRemove false) or ``complete``; with HTCondor's reason and codes."""

    action: str
    reason: str
    code: int = 0
    subcode: int = 0


@dataclass(frozen=True)
class SystemRule:
    """One SYSTEM_PERIODIC_* policy, parsed, with its _REASON and _SUBCODE expressions;
    ``knob`` is the policy's family (SYSTEM_PERIODIC_HOLD), ``text`` as written."""

    knob: str
    expr: Expr
    text: str
    reason: Expr | None = None
    subcode: Expr | None = None


@dataclass(frozen=True)
class SystemPolicy:
    """The schedd's SYSTEM_PERIODIC_HOLD / _RELEASE / _REMOVE / _VACATE policies, each
    family in HTCondor's order: those its ``_NAMES`` list names (SYSTEM_PERIODIC_HOLD_<n>,
    with SYSTEM_PERIODIC_HOLD_<n>_REASON and _SUBCODE), then the plain knob; and
    SYSTEM_MAX_RELEASES (None: no limit)."""

    hold: tuple[SystemRule, ...] = ()
    release: tuple[SystemRule, ...] = ()
    remove: tuple[SystemRule, ...] = ()
    vacate: tuple[SystemRule, ...] = ()
    max_releases: int | None = None

    @property
    def any(self) -> bool:
        return any((self.hold, self.release, self.remove, self.vacate))

    @classmethod
    def from_config(cls, config: ConfigDict) -> SystemPolicy:
        """A malformed expression raises ConfigError naming its knob and line (HTCondor
        ignores it with a warning in the schedd's log, where nobody looks)."""
        rules = {kind: _rules(config, f"SYSTEM_PERIODIC_{kind.upper()}") for kind in _KINDS}
        limit = config.get_int("SYSTEM_MAX_RELEASES")
        return cls(**rules, max_releases=None if limit == -1 else limit)

    def rules(self, kind: str) -> tuple[SystemRule, ...]:
        return getattr(self, kind)  # type: ignore[no-any-return]


_KINDS = ("hold", "release", "remove", "vacate")


def _rules(config: ConfigDict, family: str) -> tuple[SystemRule, ...]:
    names: list[str] = []
    for name in config.get_list(f"{family}_NAMES"):
        if name.upper() != "NAMES" and name.lower() not in {n.lower() for n in names}:
            names.append(name)
    found = (_rule(config, family, f"{family}_{n}") for n in names)
    return tuple(r for r in (*found, _rule(config, family, family)) if r is not None)


def _rule(config: ConfigDict, family: str, knob: str) -> SystemRule | None:
    text = config.get_expr(knob, validate=parse_expr).strip()
    if not text:
        return None
    expr = parse_expr(text)
    if _fires_never(expr):
        return None  # "false" or 0: HTCondor drops it
    extra: dict[str, Expr | None] = {}
    for part in ("reason", "subcode"):
        t = config.get_expr(f"{knob}_{part.upper()}", validate=parse_expr)
        extra[part] = parse_expr(t) if t.strip() else None
    return SystemRule(family, expr, text, **extra)


def _fires_never(expr: Expr) -> bool:
    """A literal zero or false (ExprTreeIsLiteralNumber): HTCondor drops the knob."""
    return isinstance(expr, Literal) and _number(expr.value) == 0


def _number(v: Any) -> int | None:
    """HTCondor's Value::IsNumber: booleans and integers as they are, reals truncated."""
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v == v and abs(v) != float("inf"):
        return int(v)
    return None


def _fires(expr: Expr, ad: ClassAd, now: float, rng: Random | None) -> bool:
    n = _number(evaluate(expr, ad, None, now=now, rng=rng))
    return n is not None and n != 0


def _job_rule(
    ad: ClassAd, attr: str, action: str, now: float, rng: Random | None
) -> PolicyVerdict | None:
    expr = ad.lookup(attr)
    if expr is None or not _fires(expr, ad, now, rng):
        return None
    reason = ad.eval(f"{attr}Reason", now=now, rng=rng)
    subcode = _number(ad.eval(f"{attr}SubCode", now=now, rng=rng)) or 0
    if not isinstance(reason, str) or not reason:
        reason = f"The job attribute {attr} expression '{unparse(expr)}' evaluated to TRUE"
    return PolicyVerdict(action, reason, HOLD_CODE_JOB_POLICY, subcode)


def _system_rule(
    ad: ClassAd, rules: tuple[SystemRule, ...], action: str, now: float, rng: Random | None
) -> PolicyVerdict | None:
    rule = next((r for r in rules if _fires(r.expr, ad, now, rng)), None)
    if rule is None:
        return None
    reason: Any = None
    subcode = 0
    if rule.subcode is not None:
        subcode = _number(evaluate(rule.subcode, ad, None, now=now, rng=rng)) or 0
    if rule.reason is not None:
        reason = evaluate(rule.reason, ad, None, now=now, rng=rng)
    if not isinstance(reason, str) or not reason:
        reason = f"The system macro {rule.knob} expression '{rule.text}' evaluated to TRUE"
    return PolicyVerdict(action, reason, HOLD_CODE_SYSTEM_POLICY, subcode)


def _either(
    ad: ClassAd, attr: str, system: SystemPolicy, kind: str, now: float, rng: Random | None
) -> PolicyVerdict | None:
    return _job_rule(ad, attr, kind, now, rng) or _system_rule(
        ad, system.rules(kind), kind, now, rng
    )


def short_duration(seconds: int) -> str:
    """HTCondor's format_time_short: ``[d+]hh:mm:ss`` without leading zero fields
    (90 -> "01:30", 3600 -> "1:00:00", 86400 -> "1+00:00:00")."""
    days, rest = divmod(max(0, seconds), 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    full = f"{days:3d}+{hours:02d}:{minutes:02d}:{secs:02d}"
    i = 0
    while i < len(full) and full[i] in " 0+":
        i += 1
    if i < len(full) and full[i] == ":":
        i += 1
    return full[i:]


def _duration_hold(ad: ClassAd, now: float, rng: Random | None) -> PolicyVerdict | None:
    # mockpool has no shadow: its birthday is the run's start (JobCurrentStartDate), as
    # is the start of execution (no input transfer takes time here)
    start = ad.eval("JobCurrentStartDate", now=now, rng=rng)
    if isinstance(start, bool) or not isinstance(start, int):
        return None
    for attr, code, what in (
        ("AllowedJobDuration", HOLD_CODE_JOB_DURATION, "job"),
        ("AllowedExecuteDuration", HOLD_CODE_EXECUTE_DURATION, "execute"),
    ):
        allowed = ad.eval(attr, now=now, rng=rng)
        if isinstance(allowed, bool) or not isinstance(allowed, int):
            continue
        elapsed = int(now) - start
        if elapsed >= allowed if what == "job" else elapsed > allowed:
            return PolicyVerdict(
                "hold",
                f"The job exceeded allowed {what} duration of {short_duration(allowed)}",
                code,
            )
    return None


def periodic(
    ad: ClassAd,
    status: int,
    now: float,
    system: SystemPolicy,
    *,
    at_exit: bool = False,
    rng: Random | None = None,
) -> PolicyVerdict | None:
    """The periodic policy's verdict on a job in ``status`` (None: it stays as it is).
    ``now`` is the date time() gives, ``rng`` the generator random() draws from (the
    schedd's own; without one, random() in a policy raises MissingEvalInput)."""
    if status == REMOVED:
        return None
    if status in (RUNNING, SUSPENDED):
        found = _duration_hold(ad, now, rng)
        if found is not None:
            return found
        if not at_exit:
            found = _either(ad, "PeriodicVacate", system, "vacate", now, rng)
            if found is not None:
                code = {
                    HOLD_CODE_JOB_POLICY: VACATE_CODE_JOB_POLICY,
                    HOLD_CODE_SYSTEM_POLICY: VACATE_CODE_SYSTEM_POLICY,
                }[found.code]
                return PolicyVerdict("vacate", found.reason, code, found.subcode)
    timer = ad.lookup("TimerRemove")
    if timer is not None:
        when = evaluate(timer, ad, None, now=now, rng=rng)
        if isinstance(when, int) and not isinstance(when, bool) and 0 <= when < now:
            reason = (
                f"The job attribute TimerRemove expression '{unparse(timer)}' evaluated to TRUE"
            )
            return PolicyVerdict("remove", reason, HOLD_CODE_JOB_POLICY)
    if status not in (HELD, COMPLETED):
        found = _either(ad, "PeriodicHold", system, "hold", now, rng)
        if found is not None:
            return found
    if status == HELD:
        code = _number(ad.eval("HoldReasonCode", now=now, rng=rng)) or 0
        holds = _number(ad.eval("NumHolds", now=now, rng=rng)) or 0
        limit = system.max_releases
        if code != HOLD_CODE_USER and (limit is None or holds < limit):
            found = _either(ad, "PeriodicRelease", system, "release", now, rng)
            if found is not None:
                return found
    return _either(ad, "PeriodicRemove", system, "remove", now, rng)


def at_exit(
    ad: ClassAd, now: float, system: SystemPolicy, *, rng: Random | None = None
) -> PolicyVerdict:
    """The verdict on a job that just exited (its ExitCode and NumJobCompletions set):
    the periodic policy as for a running job, then OnExitHold, then OnExitRemove."""
    found = periodic(ad, RUNNING, now, system, at_exit=True, rng=rng)
    if found is not None:  # the shadow's terminateJob: a remove that fires now completes it
        return found if found.action == "hold" else PolicyVerdict("complete", found.reason)
    found = _job_rule(ad, "OnExitHold", "hold", now, rng)
    if found is not None:
        return found
    expr = ad.lookup("OnExitRemove")
    if expr is not None and _number(evaluate(expr, ad, None, now=now, rng=rng)) == 0:
        reason = f"The job attribute OnExitRemove expression '{unparse(expr)}' evaluated to FALSE"
        return PolicyVerdict("requeue", reason)
    return PolicyVerdict("complete", "")


def has_policy(names: Iterable[str]) -> bool:
    """Whether attribute ``names`` (any case) include one that gives a periodic policy."""
    return any(n.lower() in POLICY_ATTRS for n in names)
