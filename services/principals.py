"""Who is asking: the pool's roles, a caller's principal, and a daemon's identity.

Pure (no gRPC): the cores read a message's principal for their own authorization rules
(an owner's jobs, a startd's exits), and the virtual kernel carries one on every message;
``auth.py`` mints and checks the tokens they come from.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = ["Principal", "Role", "daemon_identity"]


class Role(str, enum.Enum):
    """What a token's holder may do; which methods admit which roles is data."""

    READ = "read"  # query ads, queues, history
    SUBMIT = "submit"  # submit and manage one's own jobs
    ADMIN = "admin"  # administer the pool, inject faults
    DAEMON = "daemon"  # daemon-to-daemon traffic
    NEGOTIATOR = "negotiator"  # the negotiator: may read private ads (claim ids)

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Principal:
    """Who presented a token: its role and the identity it names ("" when it names none)."""

    role: Role
    name: str = ""

    def __str__(self) -> str:
        return f"{self.role.value} {self.name!r}" if self.name else self.role.value

    def acts_for_schedd(self, schedd_name: str) -> bool:
        """May this caller use claims that schedd ``schedd_name`` holds? (Its own daemon
        identity, or ADMIN.) Schedd names compare without case, as the pool routes them."""
        if self.role is Role.ADMIN:
            return True
        return (
            self.role is Role.DAEMON
            and self.name.lower() == daemon_identity("schedd", schedd_name).lower()
        )

    def is_daemon(self, kind: str) -> bool:
        """A DAEMON token naming a daemon of ``kind`` (``startd``, ``schedd``)."""
        return self.role is Role.DAEMON and self.name.startswith(kind + "/")


def daemon_identity(kind: str, name: str) -> str:
    """The identity a daemon's token carries: ``schedd/schedd1``, ``startd/startd0_0``."""
    return f"{kind}/{name}"
