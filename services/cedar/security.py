"""A listener's security settings and the seams its pieces plug into.

- :class:`AuthMethod`: one authentication method's server side (FS and CLAIMTOBE here,
  IDTOKENS in ``auth_token.py``), run after the method handshake picks it.
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
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ..auth import Principal, Role
from .levels import Level

if TYPE_CHECKING:
    from ..classad import ClassAd
    from .framing import FrameCipher
    from .server import CedarSocket

__all__ = [
    "AuthContext",
    "AuthMethod",
    "AuthResult",
    "CryptoProvider",
    "KeyExchange",
    "SecurityConfig",
    "default_principal",
]

# HTCondor's method bits (condor_auth.h)
CAUTH_CLAIMTOBE = 2
CAUTH_FILESYSTEM = 4
CAUTH_TOKEN = 2048
UNAUTHENTICATED_USER = "unauthenticated@unmapped"


@dataclass(frozen=True)
class AuthContext:
    """What a method needs to know about the connection it authenticates."""

    config: SecurityConfig
    client_policy: ClassAd  # the client's DC_AUTHENTICATE ad
    local_address: tuple[str, int]  # our ip and port, as the client reached us
    peer_address: tuple[str, int]


@dataclass(frozen=True)
class AuthResult:
    """Who a method authenticated.

    ``principal`` is the pool identity when the method knows it (a token's scopes);
    otherwise the config's ``map_user`` decides from ``user``. ``limit`` narrows the
    levels (CLAIMTOBE: the command's; a token: its scopes); ``policy`` holds attributes
    to keep in the session's policy (``TokenCapabilities``, ``AuthToken*``).
    """

    user: str  # "alice@domain" as the session's User
    method: str  # "FS", "CLAIMTOBE", "IDTOKENS"
    authenticated_name: str = ""
    principal: Principal | None = None
    limit: frozenset[Level] | None = None
    scopes: tuple[str, ...] = ()
    policy: Mapping[str, Any] = field(default_factory=dict)


class AuthMethod(Protocol):
    """One authentication method, server side."""

    name: str  # as the session records it ("FS", "IDTOKENS")
    wire_name: str  # as the AuthMethods lists spell it ("FS", "TOKEN")
    bit: int  # its bit in the method handshake (CAUTH_*)

    def metadata(self) -> Mapping[str, Any]:
        """Attributes the server's policy ad carries for this method (``TrustDomain``,
        ``IssuerKeys``: ``UpdateAuthenticationMetadata``)."""
        ...

    async def authenticate(self, sock: CedarSocket, ctx: AuthContext) -> AuthResult | None:
        """Run the method's exchange after the handshake chose it; None if the peer
        failed it (the connection may go on to another method)."""
        ...


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
            from .auth_fs import FSAuth

            self.methods = (FSAuth(),)

    def authentication_for(self, level: Level) -> str:
        if self.unauthenticated_read and level in (Level.READ, Level.ALLOW):
            return "OPTIONAL"
        return self.authentication
