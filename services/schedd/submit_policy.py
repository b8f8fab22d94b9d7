"""A job's scheduling and policy attributes from its submit description: Rank, JobPrio
and JobLeaseDuration; the accounting group and nice_user (and which owner and accounting
names are valid); concurrency limits; ``hold = true``; and the policy expressions
(periodic_*, on_exit_*, allowed durations) with the retries folded into OnExitRemove.

A mixin of :class:`.submit._Submit`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ..classad import ClassAdSyntaxError, parse_expr
from ..classad.refs import references
from ..classad.tree import Cond
from ..config.constexpr import evaluate_constant
from ..jobstates import HOLD_CODE_SUBMITTED_ON_HOLD
from .submit_values import BOOL_WORDS, OUT_OF_RANGE, fits, quote

if TYPE_CHECKING:
    from .submit import _Submit

_LIMIT_SEP = re.compile(r"[,\s]+")
_ATTR_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

DEFAULT_LEASE = "2400"
NICE_USER_GROUP = "nice-user"

_NAME_OK = re.compile(r"[^\s\"'\\,]+\Z")

# the policy commands that become an expression of the same meaning
_POLICY_COMMANDS = (
    ("periodic_hold", "PeriodicHold"),
    ("periodic_hold_reason", "PeriodicHoldReason"),
    ("periodic_hold_subcode", "PeriodicHoldSubCode"),
    ("periodic_release", "PeriodicRelease"),
    ("periodic_remove", "PeriodicRemove"),
    ("periodic_vacate", "PeriodicVacate"),
    ("on_exit_hold", "OnExitHold"),
    ("on_exit_hold_reason", "OnExitHoldReason"),
    ("on_exit_hold_subcode", "OnExitHoldSubCode"),
    ("on_exit_remove", "OnExitRemove"),
    ("allowed_job_duration", "AllowedJobDuration"),
    ("allowed_execute_duration", "AllowedExecuteDuration"),
)
DEFAULT_JOB_MAX_RETRIES = 2  # condor_submit's DEFAULT_JOB_MAX_RETRIES

_NO_RECONNECT = {"local", "scheduler", "grid"}  # universes whose jobs get no JobLeaseDuration


def _or_operand(text: str) -> str:
    """``text`` as an operand of ``||``: in parentheses when it is a ``?:``."""
    return f"({text})" if isinstance(parse_expr(text), Cond) else text


class JobPolicyCommands:
    """Preferences, accounting, limits, hold and policy (mixed into ``_Submit``)."""

    def integer(self: _Submit, found: tuple[str, int, str]) -> int:
        try:
            value = evaluate_constant(found[2])
        except ValueError:
            value = None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.bad(found, "expected an integer")
        if not fits(value):
            raise self.bad(found, OUT_OF_RANGE)
        return int(value)

    def preferences(self: _Submit, _: int) -> dict[str, str]:
        """Rank, JobPrio and JobLeaseDuration."""
        rank = self.command("rank", "preferences")
        prio = self.command("priority", "prio")
        attrs = {
            "Rank": self.check_expr(rank) if rank and rank[2] else "0.0",
            "JobPrio": str(self.integer(prio)) if prio and prio[2] else "0",
        }
        universe = self.command("universe")
        name = universe[2].lower() if universe and universe[2] else "vanilla"
        if name not in _NO_RECONNECT:  # HTCondor's universeCanReconnect (and grid)
            attrs["JobLeaseDuration"] = DEFAULT_LEASE
        lease = self.command("job_lease_duration")
        if lease and lease[2]:
            text = self.check_expr(lease)
            if re.fullmatch(r"\d+", text) and 0 < int(text) < 20:
                self.warn(f"{self.source}:{lease[1]}: JobLeaseDuration under 20 s; using 20")
                text = "20"
            attrs["JobLeaseDuration"] = text
        return attrs

    def accounting(self: _Submit, _: int) -> dict[str, str]:
        """AcctGroup, AcctGroupUser, AccountingGroup, and nice_user's attributes."""
        attrs: dict[str, str] = {}
        group = self.command("accounting_group")
        user = self.command("accounting_group_user")
        nice = self.command("nice_user")
        group_name = group[2] if group and group[2] else None
        if nice and nice[2]:
            word = nice[2].lower()
            if word not in ("true", "false", "yes", "no", "1", "0"):
                raise self.bad(nice, "expected True or False")
            if word in ("true", "yes", "1"):
                attrs["MaxJobRetirementTime"] = "0"
                if group_name is None:
                    group_name = NICE_USER_GROUP
                elif group_name != NICE_USER_GROUP:
                    self.warn(
                        f"{self.source}:{nice[1]}: nice_user conflicts with accounting_group "
                        "and is ignored for accounting"
                    )
        user_name = user[2] if user and user[2] else None
        if group_name is None and user_name is None:
            return attrs
        for found in (group, user):
            if found and found[2] and not _NAME_OK.match(found[2]):
                raise self.bad(found, "not a valid accounting name")
        user_name = user_name or self.owner
        attrs["AcctGroupUser"] = quote(user_name)
        if group_name is not None:
            attrs["AcctGroup"] = quote(group_name)
            attrs["AccountingGroup"] = quote(f"{group_name}.{user_name}")
        else:
            attrs["AccountingGroup"] = quote(user_name)
        return attrs

    def limits(self: _Submit, _: int) -> dict[str, str]:
        """ConcurrencyLimits from concurrency_limits or concurrency_limits_expr."""
        names = self.command("concurrency_limits")
        expr = self.command("concurrency_limits_expr")
        if names and names[2]:
            if expr and expr[2]:
                raise self.bad(
                    names, "concurrency_limits and concurrency_limits_expr can't be used together"
                )
            items = [x for x in _LIMIT_SEP.split(names[2].lower()) if x]
            for item in items:
                if not valid_limit(item):
                    raise self.bad(
                        names, f"invalid concurrency limit {item!r} (expected name[.sub][:count])"
                    )
            return {"ConcurrencyLimits": quote(",".join(sorted(items)))} if items else {}
        if expr and expr[2]:
            return {"ConcurrencyLimits": self.check_expr(expr)}
        return {}

    def hold(self: _Submit, _: int) -> dict[str, str]:
        """``hold = true``: queued held, with condor_submit's code and reason."""
        found = self.command("hold")
        if not found or not found[2]:
            return {}
        held = BOOL_WORDS.get(found[2].lower())
        if held is None:
            raise self.bad(found, "expected True or False")
        if not held:
            return {}
        return {
            "JobStatus": "5",
            "HoldReasonCode": str(HOLD_CODE_SUBMITTED_ON_HOLD),
            "HoldReason": quote("submitted on hold at user's request"),
        }

    def policy(self: _Submit, _: int) -> dict[str, str]:
        """The job policy expressions (condor_submit's SetPeriodicExpressions and
        SetJobRetries): periodic_hold / _release / _remove / _vacate, on_exit_hold,
        on_exit_remove, their reasons and subcodes, the allowed durations, and the
        retries max_retries, success_exit_code and retry_until fold into OnExitRemove."""
        attrs: dict[str, str] = {}
        for name, attr in _POLICY_COMMANDS:
            found = self.command(name, attr)
            if found and found[2]:
                attrs[attr] = self.check_expr(found)
        retries = self.command("max_retries", "JobMaxRetries")
        success = self.command("success_exit_code", "JobSuccessExitCode")
        until = self.command("retry_until")
        if not any(f and f[2] for f in (retries, success, until)):
            return attrs
        attrs.setdefault("OnExitHold", "false")
        attrs["JobMaxRetries"] = str(
            self.integer(retries) if retries and retries[2] else DEFAULT_JOB_MAX_RETRIES
        )
        code_check = "0"
        if success and success[2]:
            attrs["JobSuccessExitCode"] = str(self.integer(success))
            code_check = "JobSuccessExitCode"
        if until and until[2]:
            code_check += " || " + self.retry_until(until)
        remove = f"NumJobCompletions > JobMaxRetries || ExitCode =?= {code_check}"
        if "OnExitRemove" in attrs:
            remove += " || " + _or_operand(attrs["OnExitRemove"])
        attrs["OnExitRemove"] = remove
        return attrs

    def retry_until(self: _Submit, found: tuple[str, int, str]) -> str:
        """An exit code that ends the retries (``ExitCode =?= N``) or an expression."""
        text = found[2]
        try:
            tree = parse_expr(text)
        except ClassAdSyntaxError:
            raise self.bad(found, "must be an integer or boolean expression") from None
        if not any(references(tree)):
            try:
                value = evaluate_constant(text)
            except ValueError:
                value = None
            if isinstance(value, int) and not isinstance(value, bool):
                if not -(2**31) <= value < 2**31:
                    raise self.bad(found, "must be an integer or boolean expression")
                return f"ExitCode =?= {value}"
        return _or_operand(text)


def valid_owner(name: str) -> bool:
    """Whether ``name`` can own jobs (no blanks, quotes, backslashes or commas)."""
    return bool(name) and bool(_NAME_OK.match(name))


def valid_limit(item: str) -> bool:
    """HTCondor's ParseConcurrencyLimit: ``name[.sub][:count]``, the names valid attribute
    names (the count is read with strtod, so anything after the colon passes)."""
    name = item.partition(":")[0]
    head, dot, sub = name.partition(".")
    return bool(_ATTR_NAME.fullmatch(head)) and (not dot or bool(_ATTR_NAME.fullmatch(sub)))
