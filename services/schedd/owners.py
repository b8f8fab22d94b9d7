"""Who may do what to a schedd's jobs: rules the schedd applies to the principal a request
carries (its token's role and name), finer than the role table of the RPCs.

- A SUBMIT token submits as the user it names (a tool's owner must agree); ADMIN submits
  as the owner it asks for (or its own name). Other roles do not submit.
- A SUBMIT token acts on (removes, holds, edits) its own user's jobs only; ADMIN is the
  queue's superuser.
- A job event log (``log =``) is written by the schedd as the user it runs as (HTCondor's
  writes as the job's owner), so only that user's token or an admin's may name one.

"""

from __future__ import annotations

from ..principals import Principal, Role

__all__ = ["acting_user", "log_refusal", "submit_owner"]


def submit_owner(principal: Principal, requested: str) -> str:
    """The Owner of jobs submitted by ``principal``: a SUBMIT token submits only as the user
    it names (the tool's owner, if given, must agree); ADMIN submits as ``requested`` (or
    as the admin token's own name).
    PermissionError says why not."""
    if principal.role is Role.SUBMIT:
        if requested and requested != principal.name:
            raise PermissionError(
                f"a token for user {principal.name!r} may not submit jobs as {requested!r}"
            )
        return principal.name
    if principal.role is Role.ADMIN:
        return requested or principal.name
    raise PermissionError(f"role {principal.role.value!r} may not submit jobs")


def acting_user(principal: Principal) -> str | None:
    """The user whose jobs only ``principal`` may act on (None: any job, as ADMIN)."""
    return principal.name if principal.role is Role.SUBMIT else None


def log_refusal(principal: Principal, pool_user: str) -> str | None:
    """Why this caller's jobs may not keep a job event log (None: they may): the schedd
    runs as ``pool_user`` and writes logs only for that user or an admin token."""
    if principal.role is Role.ADMIN or principal.name == pool_user:
        return None
    return (
        f"this pool's schedd runs as {pool_user!r} and writes job event logs only for that "
        f"user or an admin token, not for {principal.name!r}"
    )
