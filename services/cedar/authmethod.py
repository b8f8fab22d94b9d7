"""What an authentication method is to a listener: its bit in the method handshake, the
connection it is given, and who it says the peer is. FS, CLAIMTOBE and IDTOKENS implement
:class:`AuthMethod`; ``security.py`` offers them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ..auth import Principal
from .levels import Level

if TYPE_CHECKING:
    from ..classad import ClassAd
    from .security import SecurityConfig
    from .server import CedarSocket

__all__ = [
    "CAUTH_CLAIMTOBE",
    "CAUTH_FILESYSTEM",
    "CAUTH_TOKEN",
    "AuthContext",
    "AuthMethod",
    "AuthResult",
]

# HTCondor's method bits (condor_auth.h)
CAUTH_CLAIMTOBE = 2
CAUTH_FILESYSTEM = 4
CAUTH_TOKEN = 2048


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
