"""The server's side of ``DC_AUTHENTICATE`` (daemon_command.cpp, condor_secman.cpp,
authentication.cpp), ending in the peer a command handler is told about.

A connection opens with the integer ``DC_AUTHENTICATE`` and the client's policy ad
(read as ``getPODClassAd`` reads it: literals only). The ad names the real command.

New session (``NewSession = "YES"``):
1. reconcile the client's policy with ours for the command's level (secpolicy.py), and
   when the client sent an ECDH public key and a crypto method is common, answer with
   our own key (the key exchange is ``crypto.py``'s); send the merged policy back;
2. if authentication is YES: the method handshake (the client sends its methods as a
   bitmask, we answer the first of our list it has, 0 for none), the method's own
   exchange, again on failure; then ``exchangeKey``'s "no key follows" (an integer 0),
   since with ECDH the key is derived, never sent;
3. derive the key; with AES-GCM every packet is encrypted from here on, both ways;
4. authorize the command, and send the session ad (``User``, ``Sid``, ``ValidCommands``,
   ``ReturnCode`` AUTHORIZED, DENIED); keep the session if authorized.
Resumed session (``UseSession = "YES"``, ``Sid``): answer ``ReturnCode`` AUTHORIZED with a
fresh nonce (or SID_NOT_FOUND and close), turn on the session's key, authorize.

Anything wrong closes the connection with one log line, as DaemonCore does: the client
reports its own error. Differences: without a crypto provider we offer no crypto method
(HTCondor always has one); a client without an ECDH key gets no key (the pre-9 path of a
server-made key wrapped by the authentication method is not supported).
"""

from __future__ import annotations

import base64
import dataclasses
import logging
import os
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..auth import Principal, Role
from ..classad import ClassAd
from ..condor_version import CONDOR_VERSION
from .adwire import read_pod_ad
from .authmethod import AuthContext, AuthMethod, AuthResult
from .commands import DC_AUTHENTICATE, DC_SEC_QUERY
from .levels import Level, implied, permits
from .secpolicy import (
    FeatAct,
    feat_act,
    reconcile_policy,
    server_policy,
    session_duration,
    string_attr,
)
from .security import UNAUTHENTICATED_USER, KeyExchange, SecurityConfig
from .sessions import Session, SessionCache
from .stream import Builder, Message

if TYPE_CHECKING:
    from .server import CedarSocket

__all__ = ["HandshakeRefused", "Negotiated", "Peer", "SecurityManager"]

log = logging.getLogger(__name__)

_NONCE_BYTES = 33


class HandshakeRefused(Exception):
    """The connection ends here; the text is the one line the server logs."""


@dataclass(frozen=True)
class Peer:
    """Who is on the other end of a connection, once the handshake is done."""

    user: str  # "alice@example.org", or "unauthenticated@unmapped"
    method: str = ""  # "FS", "IDTOKENS", "CLAIMTOBE"; "" if none
    principal: Principal | None = None  # the pool identity it maps to
    scopes: tuple[str, ...] = ()  # a token's scopes
    limit: frozenset[Level] | None = None  # levels the method narrowed it to
    session_id: str = ""
    address: str = ""  # "ip:port"

    @property
    def authenticated(self) -> bool:
        return self.user != UNAUTHENTICATED_USER

    def permits(self, level: Level) -> bool:
        """May this peer run a command registered at ``level``?"""
        return permits(self.principal, level, self.limit)


@dataclass(frozen=True)
class Negotiated:
    """The handshake's outcome: which command to run and for whom."""

    command: int  # the real command (DC_AUTHENTICATE and DC_SEC_QUERY are special)
    auth_command: int  # the command whose level was checked
    peer: Peer
    authorized: bool


@dataclass
class _Auth:
    result: AuthResult | None = None
    tried: bool = False


@dataclass
class SecurityManager:
    """One listener's security: its config, command levels and session cache."""

    config: SecurityConfig
    level_of: Callable[[int], Level | None]  # a registered command's level, else None
    commands_at: Callable[[Level], Sequence[int]]  # commands of exactly this level
    clock: Callable[[], float]
    sessions: SessionCache = field(default_factory=SessionCache)
    counts: dict[str, int] = field(default_factory=lambda: {"new": 0, "resumed": 0})
    _policies: dict[Level, ClassAd] = field(default_factory=dict)

    # -- policy -----------------------------------------------------------------------
    def policy_for(self, level: Level) -> ClassAd:
        """Our side of the negotiation at ``level`` (kept: it only depends on config)."""
        ad = self._policies.get(level)
        if ad is None:
            cfg = self.config
            extra: dict[str, object] = {}
            for method in cfg.methods:
                extra.update(method.metadata())
            if cfg.trust_domain:
                extra["TrustDomain"] = cfg.trust_domain
            ad = server_policy(
                authentication=cfg.authentication_for(level),
                encryption=cfg.encryption,
                integrity=cfg.integrity,
                negotiation=cfg.negotiation,
                auth_methods=[m.wire_name for m in cfg.methods],
                crypto_methods=cfg.crypto.methods if cfg.crypto else (),
                subsystem=cfg.subsystem,
                pid=os.getpid(),
                session_duration=cfg.session_duration,
                session_lease=cfg.session_lease,
                extra=extra,
            )
            self._policies[level] = ad
        return ad

    def valid_commands(self, level: Level) -> str:
        """``GetCommandsInAuthLevel``: the commands a session at ``level`` may run."""
        return ",".join(str(c) for lv in implied(level) for c in self.commands_at(lv))

    # -- the exchange -------------------------------------------------------------------
    async def negotiate(self, sock: CedarSocket, first: Message) -> Negotiated:
        """Run DC_AUTHENTICATE on ``sock``, whose first message (``first``) has had its
        command integer read. ``HandshakeRefused`` to close the connection."""
        client = read_pod_ad(first, what="DC_AUTHENTICATE ad")
        first.expect_end("DC_AUTHENTICATE message")
        real = client.eval("Command")
        if type(real) is not int:
            raise HandshakeRefused("DC_AUTHENTICATE ad names no Command")
        auth_cmd = real
        if real in (DC_AUTHENTICATE, DC_SEC_QUERY):
            auth_cmd = client.eval("AuthCommand")
            if type(auth_cmd) is not int:
                raise HandshakeRefused(f"command {real} names no AuthCommand")
        level = self.level_of(auth_cmd)
        if level is None:
            raise HandshakeRefused(f"received command {auth_cmd}: UNREGISTERED COMMAND")
        if feat_act(client, "UseSession") is FeatAct.YES:
            return await self._resume(sock, client, real, auth_cmd, level)
        return await self._new(sock, client, real, auth_cmd, level)

    async def _resume(
        self, sock: CedarSocket, client: ClassAd, real: int, auth_cmd: int, level: Level
    ) -> Negotiated:
        sid = string_attr(client, "Sid")
        if sid is None:
            raise HandshakeRefused("resume request names no Sid")
        session = self.sessions.resume(sid, self.clock())
        wants_response = client.eval("ResumeResponse") is True
        if session is None:
            if wants_response:
                await sock.send(Builder().put_ad(_ad(ReturnCode="SID_NOT_FOUND")))
            raise HandshakeRefused(f"attempt to open invalid session {sid}")
        if wants_response:
            nonce = base64.b64encode(secrets.token_bytes(_NONCE_BYTES)).decode()
            reply = _ad(ReturnCode="AUTHORIZED", RemoteVersion=CONDOR_VERSION, Nonce=nonce)
            await sock.send(Builder().put_ad(reply))
        if session.key is not None and self.config.crypto is not None:
            sock.enable_cipher(self.config.crypto.cipher(session.crypto_method, session.key))
        self.counts["resumed"] += 1
        peer = Peer(
            user=session.user or UNAUTHENTICATED_USER,
            method=session.method,
            principal=session.principal,
            scopes=session.scopes,
            limit=session.limit,
            session_id=sid,
            address=sock.peer_text,
        )
        authorized = peer.permits(level)
        if not authorized:
            raise HandshakeRefused(
                f"PERMISSION DENIED to {peer.user} for command {auth_cmd} (level {level})"
            )
        return Negotiated(real, auth_cmd, peer, authorized)

    async def _new(
        self, sock: CedarSocket, client: ClassAd, real: int, auth_cmd: int, level: Level
    ) -> Negotiated:
        cfg = self.config
        policy = reconcile_policy(client, self.policy_for(level))
        if policy is None:
            raise HandshakeRefused(f"unable to reconcile security policy for command {auth_cmd}")
        policy["NegotiatedSession"] = True
        policy["RemoteVersion"] = CONDOR_VERSION
        will_auth = feat_act(policy, "Authentication")
        new_session = feat_act(client, "NewSession") is FeatAct.YES
        exchange: KeyExchange | None = None
        crypto_method = ""
        if new_session:
            peer_key = string_attr(client, "ECDHPublicKey") or ""
            common = (string_attr(policy, "CryptoMethods") or "").split(",")[0]
            if peer_key and common and cfg.crypto is not None:
                try:
                    exchange = cfg.crypto.begin(peer_key)
                except ValueError as exc:
                    raise HandshakeRefused(f"bad ECDH public key from client: {exc}") from None
                crypto_method = common
                policy["ECDHPublicKey"] = exchange.public_key
                policy["CryptoMethods"] = common
            else:
                for name in ("CryptoMethods", "CryptoMethodsList"):
                    if name in policy:
                        del policy[name]
        if feat_act(client, "Enact") is FeatAct.NO:
            await sock.send(Builder().put_ad(policy))
            if "ECDHPublicKey" in policy:
                del policy["ECDHPublicKey"]
        auth = _Auth()
        if will_auth is FeatAct.YES:
            auth.tried = True
            auth.result = await self._authenticate(sock, client, policy)
            if auth.result is None and policy.eval("AuthRequired") is not False:
                raise HandshakeRefused(f"required authentication of {sock.peer_text} failed")
        result = auth.result
        limit = None
        if result is not None:
            policy["AuthMethods"] = result.method
            if result.authenticated_name:
                policy["AuthenticatedName"] = result.authenticated_name
            limit = result.limit
            if result.method == "CLAIMTOBE":
                limit = frozenset(implied(level))
                policy["LimitAuthorization"] = ",".join(str(lv) for lv in implied(level))
            for name, value in result.policy.items():
                policy[name] = value
        key = None
        if exchange is not None and cfg.crypto is not None:
            key = exchange.derive(cfg.crypto.key_length(crypto_method))
            sock.enable_cipher(cfg.crypto.cipher(crypto_method, key))
        for feature in ("Encryption", "Integrity"):
            if feat_act(policy, feature) is FeatAct.YES and key is None:
                raise HandshakeRefused(f"{feature.lower()} was agreed but no key was exchanged")
        peer = self._peer(result, limit, sock)
        authorized = peer.permits(level)
        if new_session:
            sid = self.sessions.new_id(self.clock())
            peer = dataclasses.replace(peer, session_id=sid)
            reply = ClassAd()
            reply["User"] = peer.user
            if auth.tried:
                reply["TriedAuthentication"] = True
            reply["Sid"] = sid
            reply["ValidCommands"] = self.valid_commands(level)
            reply["ReturnCode"] = "AUTHORIZED" if authorized else "DENIED"
            await sock.send(Builder().put_ad(reply))
            if authorized:
                self._keep(sid, policy, peer, key, crypto_method, reply)
        if not authorized:
            raise HandshakeRefused(
                f"PERMISSION DENIED to {peer.user} for command {auth_cmd} (level {level})"
            )
        self.counts["new"] += 1
        return Negotiated(real, auth_cmd, peer, authorized)

    def _peer(
        self, result: AuthResult | None, limit: frozenset[Level] | None, sock: CedarSocket
    ) -> Peer:
        cfg = self.config
        if result is None:
            principal = Principal(Role.READ) if cfg.unauthenticated_read else None
            return Peer(user=UNAUTHENTICATED_USER, principal=principal, address=sock.peer_text)
        principal = result.principal or cfg.map_user(cfg, result.user, result.method)
        return Peer(
            user=result.user,
            method=result.method,
            principal=principal,
            scopes=result.scopes,
            limit=limit,
            address=sock.peer_text,
        )

    def _keep(
        self,
        sid: str,
        policy: ClassAd,
        peer: Peer,
        key: bytes | None,
        crypto_method: str,
        reply: ClassAd,
    ) -> None:
        for name in ("User", "Sid", "ValidCommands"):
            policy[name] = reply.eval(name)
        duration = session_duration(policy)
        lease = policy.eval("SessionLease")
        session = Session(
            sid=sid,
            policy=policy,
            user=peer.user if peer.authenticated else "",
            method=peer.method,
            principal=peer.principal,
            limit=peer.limit,
            key=key,
            crypto_method=crypto_method,
            expires=0.0,
            lease=0.0,
            last_used=0.0,
            scopes=peer.scopes,
        )
        self.sessions.add(
            session,
            duration=duration,
            lease=lease if type(lease) is int else 0,
            now=self.clock(),
        )

    async def _authenticate(
        self, sock: CedarSocket, client: ClassAd, policy: ClassAd
    ) -> AuthResult | None:
        """``Authentication::authenticate`` on the server: method handshakes until one
        method succeeds or the client runs out, then ``exchangeKey``'s empty answer."""
        names = (string_attr(policy, "AuthMethodsList") or "").replace(",", " ").split()
        ours: list[AuthMethod] = []
        by_bit = {m.bit: m for m in self.config.methods}
        for name in names:
            method = next(
                (m for m in self.config.methods if m.wire_name.upper() == _canon(name)), None
            )
            if method is not None and method not in ours:
                ours.append(method)
        if not ours:
            raise HandshakeRefused("no authentication method in common with the client")
        ctx = AuthContext(
            config=self.config,
            client_policy=client,
            local_address=sock.local_address,
            peer_address=sock.peer_address,
        )
        while True:
            msg = await sock.recv()
            offered = msg.get_int("client's authentication methods")
            msg.expect_end("authentication method handshake")
            chosen = next((m for m in ours if offered & m.bit), None)
            await sock.send(Builder().put_int(chosen.bit if chosen else 0))
            if chosen is None:
                log.info("authentication of %s: no method left in common", sock.peer_text)
                return None
            result = await by_bit[chosen.bit].authenticate(sock, ctx)
            if result is not None:
                await sock.send(Builder().put_int(0))  # exchangeKey: no key follows
                return result


def _canon(name: str) -> str:
    upper = name.upper()
    return "TOKEN" if upper in ("TOKEN", "TOKENS", "IDTOKEN", "IDTOKENS") else upper


def _ad(**attrs: object) -> ClassAd:
    ad = ClassAd()
    for name, value in attrs.items():
        ad[name] = value
    return ad
