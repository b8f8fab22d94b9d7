"""Authorization levels (HTCondor's ``DCpermission``) and which the pool's roles hold.

A command is registered at one level; a peer may run it if it holds that level. Holding
a level implies others (condor_perms.cpp's ``aImpliedNext``: ADMINISTRATOR -> WRITE ->
READ, DAEMON -> WRITE, NEGOTIATOR -> READ), and a session's ``ValidCommands`` lists the
commands of the level and of every level it implies (``GetCommandsInAuthLevel``).

The pool's roles (``mockpool.auth.Role``, the same table as gRPC's) map onto levels in
:data:`ROLE_LEVELS`, the one place this is decided; an authentication method may narrow
it further (a token's scopes, CLAIMTOBE's ``LimitAuthorization``).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable

from ..auth import Principal, Role

__all__ = ["ROLE_LEVELS", "Level", "implied", "levels_of", "permits"]


class Level(enum.Enum):
    """HTCondor's ``DCpermission`` names (``PermString``)."""

    ALLOW = "ALLOW"
    READ = "READ"
    WRITE = "WRITE"
    NEGOTIATOR = "NEGOTIATOR"
    ADMINISTRATOR = "ADMINISTRATOR"
    DAEMON = "DAEMON"

    def __str__(self) -> str:
        return self.value


_IMPLIED_NEXT: dict[Level, Level | None] = {
    Level.ALLOW: None,
    Level.READ: None,
    Level.WRITE: Level.READ,
    Level.NEGOTIATOR: Level.READ,
    Level.ADMINISTRATOR: Level.WRITE,
    Level.DAEMON: Level.WRITE,
}


def implied(level: Level) -> list[Level]:
    """``level`` and every level it implies, in HTCondor's order."""
    out = []
    cur: Level | None = level
    while cur is not None:
        out.append(cur)
        cur = _IMPLIED_NEXT[cur]
    return out


def closure(levels: Iterable[Level]) -> frozenset[Level]:
    """``levels`` with everything they imply (and ALLOW, which everyone holds)."""
    out = {Level.ALLOW}
    for level in levels:
        out.update(implied(level))
    return frozenset(out)


# What each role grants (closed under implication). The pool's own user (ADMIN) holds
# every level, as the condor user does in a real pool's ALLOW_* lists.
ROLE_LEVELS: dict[Role, frozenset[Level]] = {
    Role.READ: closure([Level.READ]),
    Role.SUBMIT: closure([Level.WRITE]),
    Role.ADMIN: closure(Level),
    Role.DAEMON: closure([Level.DAEMON]),
    Role.NEGOTIATOR: closure([Level.NEGOTIATOR, Level.DAEMON]),
}


def levels_of(
    principal: Principal | None, limit: Iterable[Level] | None = None
) -> frozenset[Level]:
    """The levels ``principal`` holds (only ALLOW for nobody), cut to ``limit`` and what
    it implies when the authentication method set one."""
    held = ROLE_LEVELS[principal.role] if principal is not None else closure(())
    if limit is None:
        return held
    return held & closure(limit)


def permits(
    principal: Principal | None, level: Level, limit: Iterable[Level] | None = None
) -> bool:
    """May ``principal`` run a command registered at ``level``?"""
    return level is Level.ALLOW or level in levels_of(principal, limit)
