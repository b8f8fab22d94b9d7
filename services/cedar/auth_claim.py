"""CLAIMTOBE authentication, server side (condor_auth_claim.cpp): the client names its
user and the server believes it. Only for pools whose spec allows it.

The client sends an integer 1 and ``user@domain`` (or 0 if it has no name); the server
takes the domain after the last ``@`` (``UID_DOMAIN`` when none) and answers 1. The
handshake then limits the session to the command's level and the levels it implies
(``LimitAuthorization``), as DaemonCore does for this method.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .authmethod import CAUTH_CLAIMTOBE, AuthContext, AuthResult
from .stream import Builder

if TYPE_CHECKING:
    from .server import CedarSocket

__all__ = ["ClaimToBeAuth"]


class ClaimToBeAuth:
    """The CLAIMTOBE method (``CAUTH_CLAIMTOBE``)."""

    name = "CLAIMTOBE"
    wire_name = "CLAIMTOBE"
    bit = CAUTH_CLAIMTOBE

    def metadata(self) -> Mapping[str, Any]:
        return {}

    async def authenticate(self, sock: CedarSocket, ctx: AuthContext) -> AuthResult | None:
        msg = await sock.recv()
        if msg.get_int("CLAIMTOBE flag") != 1:
            return None
        claimed = msg.get_string("CLAIMTOBE user")
        msg.expect_end("CLAIMTOBE claim")
        user, at, domain = claimed.rpartition("@")
        if not at:
            user, domain = claimed, ""
        domain = domain or ctx.config.uid_domain
        await sock.send(Builder().put_int(1))
        full = f"{user}@{domain}"
        return AuthResult(user=full, method=self.name, authenticated_name=full)
