"""A listener's security settings and the seams its pieces plug into.

- :class:`~.authmethod.AuthMethod` (``authmethod.py``): one authentication method's server
  side (FS in ``auth_fs.py``, CLAIMTOBE, IDTOKENS), run after the method handshake picks it.
- :class:`CryptoProvider`: the key exchange carried in the policy ads (ECDH public keys)
  and the packet cipher the derived key drives (``crypto.py``).
- :class:`SecurityConfig`: what the server asks for at each level, which methods it
  offers, and how an authenticated name maps to a pool :class:`~mockpool.auth.Principal`
  (FS user X -> SUBMIT named X; the pool's own user -> ADMIN, as the condor user).
"""

from __future__ import annotations

import functools
import getpass
import os
import socket
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from ..auth import Principal, Role
from .auth_fs import FSAuth
from .authmethod import AuthMethod
from .levels import Level

if TYPE_CHECKING:
    from .framing import FrameCipher

__all__ = [
    "CryptoProvider",
    "KeyExchange",
    "SecurityConfig",
    "default_principal",
]

UNAUTHENTICATED_USER = "unauthenticated@unmapped"


class KeyExchange(Protocol):
    """One side of an ECDH exchange begun for a new session."""

    public_key: str  # our ECDHPublicKey, as the policy ad carries it

    def derive(self, length: int) -> bytes:
        """The session key of ``length`` bytes (``FinishKeyExchange``)."""
        ...


class CryptoProvider(Protocol):
    """The crypto a listener offers: methods, key exchange, the packet cipher."""

    methods: tuple[str, ...]  # CryptoMethods we accept, preferred first ("AES",)

    def begin(self, peer_public_key: str) -> KeyExchange:
        """Start an exchange with the client's ``ECDHPublicKey``; ValueError if bad."""
        ...

    def key_length(self, method: str) -> int:
        """Session key length for ``method`` (32 for AES)."""
        ...

    def cipher(self, method: str, key: bytes) -> FrameCipher:
        """A fresh packet cipher (its own IVs and counters) for one connection."""
        ...


@functools.lru_cache(maxsize=1)
def _full_hostname() -> str:
    """UID_DOMAIN's default, $(FULL_HOSTNAME): looked up once (a DNS query may be slow)."""
    return socket.getfqdn()


def own_user() -> str:
    """Who runs this process (FS authenticates the pool's own user as its administrator)."""
    try:
        return getpass.getuser()
    except Exception:  # no name for our uid (a container): the uid itself
        return str(os.getuid())


def default_principal(config: SecurityConfig, user: str, method: str) -> Principal:
    """FS (and CLAIMTOBE) identities: the pool's own user administers the pool, anyone
    else submits as themselves."""
    name = user.split("@", 1)[0]
    if name == config.pool_user:
        return Principal(Role.ADMIN, name)
    return Principal(Role.SUBMIT, name)


@dataclass
class SecurityConfig:
    """A listener's security, as a real pool's SEC_* settings say it.

    ``methods`` are the authentication methods offered, preferred first (FS when none
    are given); ``subsystem`` names the daemon in its policy ad (COLLECTOR, SCHEDD, ...).
    ``authentication`` / ``encryption`` / ``integrity`` are REQUIRED, PREFERRED,
    OPTIONAL or NEVER for every level; ``unauthenticated_read`` relaxes authentication
    to OPTIONAL for READ (and ALLOW) commands and lets a peer that did not authenticate
    run them as a READ caller. Without a ``crypto`` provider the server offers no crypto
    method, and a client that requires encryption is refused at negotiation.
    """

    methods: tuple[AuthMethod, ...] = ()
    authentication: str = "REQUIRED"
    encryption: str = "OPTIONAL"
    integrity: str = "OPTIONAL"
    negotiation: str = "PREFERRED"
    unauthenticated_read: bool = False
    crypto: CryptoProvider | None = None
    pool_user: str = field(default_factory=own_user)
    uid_domain: str = field(default_factory=_full_hostname)
    fs_dir: str = field(default_factory=tempfile.gettempdir)  # FS_LOCAL_DIR
    trust_domain: str = ""
    session_duration: int = 86400  # a daemon's default SEC_*_SESSION_DURATION
    session_lease: int = 3600
    map_user: Callable[[SecurityConfig, str, str], Principal] = default_principal
    subsystem: str = "COLLECTOR"

    def __post_init__(self) -> None:
        if not self.methods:
            self.methods = (FSAuth(),)

    def authentication_for(self, level: Level) -> str:
        if self.unauthenticated_read and level in (Level.READ, Level.ALLOW):
            return "OPTIONAL"
        return self.authentication
