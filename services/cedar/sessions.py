"""The server's security sessions: what a client may resume on a later connection
without authenticating again (daemon_command.cpp's ``session_cache``).

A session is made when a new connection negotiates one (``NewSession = "YES"``) and its
command is authorized. It lasts its ``SessionDuration`` plus 20 seconds of slop
(``SEC_SESSION_DURATION_SLOP``), and its lease (``SessionLease``, plus the same slop)
ends it early when it goes unused that long; each resumption renews the lease. Time is
passed in, so the rules are tested without a clock.
"""

from __future__ import annotations

import itertools
import os
import socket
from collections import OrderedDict
from dataclasses import dataclass, field

from ..auth import Principal
from ..classad import ClassAd
from .levels import Level

__all__ = ["Session", "SessionCache"]

SLOP = 20  # SEC_SESSION_DURATION_SLOP


@dataclass
class Session:
    """One cached session: its policy ad and who it speaks for."""

    sid: str
    policy: ClassAd
    user: str  # "" when the peer did not authenticate
    method: str  # the authentication method used ("" for none)
    principal: Principal | None
    limit: frozenset[Level] | None
    key: bytes | None
    crypto_method: str
    expires: float
    lease: float  # 0: no lease
    last_used: float
    scopes: tuple[str, ...] = field(default_factory=tuple)

    def alive(self, now: float) -> bool:
        if now > self.expires:
            return False
        return not (self.lease and now > self.last_used + self.lease)


class SessionCache:
    """Sessions by id, at most ``limit`` of them (the least recently used go first)."""

    def __init__(self, *, limit: int = 100_000, host: str | None = None) -> None:
        self._sessions: OrderedDict[str, Session] = OrderedDict()
        self._limit = limit
        self._host = host or socket.gethostname()
        self._counter = itertools.count(1)

    def __len__(self) -> int:
        return len(self._sessions)

    def new_id(self, now: float) -> str:
        """``host:pid:time:counter``, as DaemonCore names sessions."""
        return f"{self._host}:{os.getpid()}:{int(now)}:{next(self._counter)}"

    def add(self, session: Session, *, duration: int, lease: int, now: float) -> None:
        session.expires = now + duration + SLOP
        session.lease = lease + SLOP if lease else 0
        session.last_used = now
        self._sessions[session.sid] = session
        self._sessions.move_to_end(session.sid)
        while len(self._sessions) > self._limit:
            self._sessions.popitem(last=False)

    def resume(self, sid: str, now: float) -> Session | None:
        """The live session ``sid`` with its lease renewed, or None (expired ones go)."""
        session = self._sessions.get(sid)
        if session is None:
            return None
        if not session.alive(now):
            del self._sessions[sid]
            return None
        session.last_used = now
        self._sessions.move_to_end(sid)
        return session

    def drop(self, sid: str) -> None:
        self._sessions.pop(sid, None)
