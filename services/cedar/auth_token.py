"""IDTOKENS authentication, server side (condor_auth_passwd.cpp, version 2: ``TOKEN``).

The client never sends its token's signature: it proves it knows it. Both sides derive
AKEP2's keys K and K' from the signature, and the server, holding the signing key,
recomputes the signature from the ``header.payload`` the client sends:

1. Client: status, its name A (the token's ``sub``), ``header.payload``, a random
   256-byte Ra.
2. Server: refuses a token that does not decode, names a key it lacks, or fails
   ``analyze_token`` (expired, too old, no issuer, jti or subject); else it signs
   ``header.payload`` with that key (``idtokens.sign``) and derives
   ``K = HKDF-SHA256(ikm=signature, salt=SEED_KA + header.payload, info="master ka")`` and
   ``K' = HKDF(signature, SEED_KB + header.payload, "master kb")`` (32 bytes each;
   ``setup_shared_keys``; the seeds are 256 bytes fixed in ``setup_seed``). It answers
   status, A, its own name B, Ra, a random Rb and ``T = HMAC-SHA1(K, "A B" NUL Ra Rb)``
   (``calculate_hkt``). A client whose token was signed with another key computes
   another T and gives up.
3. Client: status, A, Rb, ``HMAC-SHA1(K, A NUL Rb)`` (``calculate_hk``); the server
   checks A, Rb and the MAC, and that A is the token's subject.

Strings are counted (an int, then the NUL-terminated text), random values are raw bytes
after their length. A failure the server finds at step 2 is sent as an error status, so
both sides go on to the next method; one found at step 3 is not told (HTCondor's client
then waits on a reply that never comes). The session key ``set_session_key`` derives
(``HKDF(Rb, salt="session key", info="htcondor")``) only wraps a key the server sends
when the client made no ECDH exchange, which HTCondor 25's clients always make.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..auth import InvalidToken, Principal, pool_key, token_principal
from . import idtokens
from .authmethod import CAUTH_TOKEN, AuthContext, AuthResult
from .levels import Level
from .stream import Builder, Message

if TYPE_CHECKING:
    from .server import CedarSocket

__all__ = ["SEED_KA", "SEED_KB", "TokenAuth", "TokenExchange", "derive_k"]

log = logging.getLogger(__name__)

KEY_LEN = 256  # AUTH_PW_KEY_LEN: Ra and Rb
MAX_NAME = 1024  # AUTH_PW_MAX_NAME_LEN: the client reads A and B into buffers this size
MAX_MAC = 64  # EVP_MAX_MD_SIZE
A_OK, ERROR = 0, -1  # AUTH_PW_A_OK, AUTH_PW_ERROR
SERVER_NAME = "condor@password"  # CONDOR_PASSWORD_FQU: what fetchLogin gives a server

# setup_seed's fixed 256-byte keys (condor_auth_passwd.cpp), protocol constants.
SEED_KA = bytes.fromhex(
    "3e4a502047d5f4e5dc7c69bb5210cbb6167add8084f7dd9ef3ad2cca71d283dd114a4fbb7b1ee90adfa862c4"
    "4304de5473a3172f735c2cbb6e775b5d40d39face873182523f9252b623be0d4b167a3a8040cacfee9ee3da0"
    "2c0abbf4d9d8b11f89004c943923ce5d9508bb3f04bc66a3fa20a13a416c5e6f4e0d3187d45fc78335c5e485"
    "db2c5a3717970cc26e7b6b9d1965b47a67df77a31f22f08a6c0ba57097a21a9ca7c60424f72739ab5cb915a4"
    "185bd109828e35e42108ab851c08a3dffde0e3b06f3d3938cdad6df6ef9a6f6dc2cb74f0228512eb7a3d6823"
    "010684b015c12ac3014c4f9f938e384dad1e3bd745ff8c141fd70b465ba8af5d1b98b4b1"
)
SEED_KB = bytes.fromhex(
    "010026ad75dfc6c190a5a266b0d1b5d860f7cfa38467205501cd460d4a88d473fa52e0b3e9141e33c97d851e"
    "ee2dd33632f3886768ef010ec8dfdd668ade92d5c34308bb243895d84ed785e27268cc5ee7560de49828fab7"
    "66c2ad8c0b2c0afb435c382db5d2ff36a8aead5820470a9ad45d79856f5e2ece894bd2507929dcf26f7d09f0"
    "028f1ac4d971f4820c5f54717e9dcdabeb215f61655dead4b72c3d3b5f66fa4b30b85888d62facd4129c1304"
    "919f69ad6d8c2c43d9ce5cdb31d4580352c7362b8d80b7ef1bba5d676660a944764502f91d1d3c54910c088b"
    "ccb72b11948a5e1a1dcd04369c17d298804c216e7a2690b8c0e970363300d092df24fb8c"
)


def derive_k(signature: bytes, signing_input: str) -> bytes:
    """K, the key of both MACs: HKDF(signature, SEED_KA + header.payload, "master ka")."""
    salt = SEED_KA + signing_input.encode("ascii")
    return idtokens.hkdf_sha256(signature, salt=salt, info=b"master ka")


def _mac(k: bytes, data: bytes) -> bytes:
    return hmac.new(k, data, hashlib.sha1).digest()  # Condor_Auth_Passwd::hmac: SHA-1


@dataclass(frozen=True)
class ClientHello:
    """Message 1: the client's status, name, ``header.payload`` and Ra."""

    status: int
    name: str
    token: str
    ra: bytes

    @classmethod
    def read(cls, msg: Message) -> ClientHello:
        status = msg.get_int("IDTOKENS client status")
        msg.get_int("IDTOKENS client name length")
        name = msg.get_string("IDTOKENS client name")
        token = msg.get_string("IDTOKENS token")
        ra = msg.get_bytes(_length(msg, KEY_LEN, "Ra"), "IDTOKENS Ra")
        msg.expect_end("IDTOKENS client message 1")
        return cls(status, name, token, ra)


@dataclass(frozen=True)
class ClientProof:
    """Message 3: the client's status, name, the server's Rb and the MAC over them."""

    status: int
    name: str
    rb: bytes
    mac: bytes

    @classmethod
    def read(cls, msg: Message) -> ClientProof:
        status = msg.get_int("IDTOKENS client status")
        msg.get_int("IDTOKENS client name length")
        name = msg.get_string("IDTOKENS client name")
        rb = msg.get_bytes(_length(msg, KEY_LEN, "Rb"), "IDTOKENS Rb")
        mac = msg.get_bytes(_length(msg, MAX_MAC, "hk"), "IDTOKENS hk")
        msg.expect_end("IDTOKENS client message 2")
        return cls(status, name, rb, mac)


def _length(msg: Message, most: int, what: str) -> int:
    at = msg.offset
    n = msg.get_int(f"IDTOKENS {what} length")
    if not 0 <= n <= most:
        raise idtokens.TokenError(f"IDTOKENS {what} length {n} at offset {at} is not 0..{most}")
    return n


class TokenExchange:
    """One run of the protocol on the server, without I/O: built from message 1, it
    holds the reply (``reply()``), then judges message 3 (``finish``)."""

    def __init__(
        self,
        hello: ClientHello,
        keys: Mapping[str, bytes],
        *,
        now: float,
        max_age: float | None = None,
        principal_of: Callable[[idtokens.IdToken], Principal] = token_principal,
        random: Callable[[int], bytes] = os.urandom,
        server_name: str = SERVER_NAME,
    ) -> None:
        self.hello = hello
        self.server_name = server_name
        self.token: idtokens.IdToken | None = None
        self.principal: Principal | None = None
        self.error = ""  # why the server refuses, "" while it does not
        self._k = b""
        self._rb = b""
        if hello.status != A_OK:
            self.error = "the client reported an error (it has no usable token)"
            return
        if len(hello.ra) != KEY_LEN:
            self.error = f"bad length on Ra: {len(hello.ra)}"
            return
        try:
            tok = idtokens.decode(hello.token)
            if not tok.key_id:
                raise idtokens.TokenError("token names no key id (kid)")
            if tok.key_id not in keys:
                raise idtokens.TokenError(f"token names key {tok.key_id!r}, which we lack")
            idtokens.check_claims(tok, now=now, max_age=max_age)
            signature = idtokens.sign(
                tok.signing_input, tok.algorithm, idtokens.jwt_key(keys[tok.key_id])
            )
            # Known before the proof, so refused with an error status both sides see
            # (HTCondor compares the name only at the end).
            if hello.name != (tok.subject or tok.jti):
                raise idtokens.TokenError(
                    f"client ID ({hello.name}) and the token's subject ({tok.subject}) differ"
                )
            self.principal = principal_of(tok)
        except (idtokens.TokenError, InvalidToken) as exc:
            self.error = str(exc)
            return
        self.token = tok
        self._k = derive_k(signature, tok.signing_input)
        self._rb = random(KEY_LEN)

    def reply(self) -> Builder:
        """Message 2 (``server_send``): T over both names and both random values, or an
        error status and empty fields."""
        out = Builder()
        if self.error:  # A, B empty; Ra, Rb, T of length 0
            out.put_int(ERROR).put_int(0).put_string("").put_int(0).put_string("")
            return out.put_int(0).put_int(0).put_int(0)
        a, b = self.hello.name, self.server_name
        t = _mac(self._k, f"{a} {b}".encode() + b"\0" + self.hello.ra + self._rb)
        out.put_int(A_OK).put_int(len(a.encode())).put_string(a)
        out.put_int(len(b.encode())).put_string(b)
        out.put_int(KEY_LEN).put_bytes(self.hello.ra).put_int(KEY_LEN).put_bytes(self._rb)
        return out.put_int(len(t)).put_bytes(t)

    def finish(self, proof: ClientProof) -> idtokens.IdToken | None:
        """The token, if message 3 proves the client knows its signature and it is the
        token's subject; else None, with ``error`` saying why."""
        if self.error or self.token is None:
            return None
        a = self.hello.name
        if proof.status != A_OK:
            self.error = "the client found our reply wrong (its token was signed with another key)"
        elif proof.name != a or proof.rb != self._rb or len(proof.rb) != KEY_LEN:
            self.error = "the client's second message does not match the first"
        elif not hmac.compare_digest(proof.mac, _mac(self._k, a.encode() + b"\0" + self._rb)):
            self.error = "the client's proof does not match its token"
        return None if self.error else self.token


def _limit(tok: idtokens.IdToken) -> frozenset[Level] | None:
    """The levels a token bounds its holder to (HTCondor's ``LimitAuthorization``)."""
    bound = idtokens.bounding_set(tok.levels)
    if bound is None:
        return None
    known = {level.value for level in Level}
    return frozenset(Level(name) for name in bound if name in known)


def token_policy(tok: idtokens.IdToken) -> dict[str, Any]:
    """What ``analyze_token`` adds to the session's policy ad."""
    policy: dict[str, Any] = {}
    if tok.levels:
        policy["LimitAuthorization"] = ",".join(tok.levels)
    if tok.scopes:
        policy["AuthTokenScopes"] = ",".join(tok.scopes)
    policy["AuthTokenSubject"] = tok.subject
    policy["AuthTokenIssuer"] = tok.issuer
    policy["AuthTokenId"] = tok.jti
    if tok.expires_at:
        policy["TokenExpirationTime"] = tok.expires_at
    return policy


class TokenAuth:
    """The IDTOKENS method (``CAUTH_TOKEN``) for a listener holding the pool's keys."""

    name = "IDTOKENS"
    wire_name = "TOKEN"
    bit = CAUTH_TOKEN

    def __init__(
        self,
        keys: Mapping[str, bytes],
        *,
        trust_domain: str,
        clock: Callable[[], float] = time.time,
        max_age: float | None = None,
        principal_of: Callable[[idtokens.IdToken], Principal] = token_principal,
    ) -> None:
        if not keys:
            raise ValueError("IDTOKENS needs at least one signing key")
        self.keys = dict(keys)
        self.trust_domain = trust_domain
        self.clock = clock  # a token's times are the wall clock's, not the pool's
        self.max_age = max_age  # SEC_TOKEN_MAX_AGE
        self.principal_of = principal_of

    @classmethod
    def for_pool(cls, secret: str, **kwargs: Any) -> TokenAuth:
        """The method for a pool whose tokens ``auth.make_token(secret, ...)`` mints."""
        material, domain = pool_key(secret)
        return cls({idtokens.POOL_KEY_ID: material}, trust_domain=domain, **kwargs)

    def metadata(self) -> Mapping[str, Any]:
        # UpdateAuthenticationMetadata: a client picks the token whose issuer and key are
        # these; the key names as getCachedIssuerKeyNames joins them.
        return {"TrustDomain": self.trust_domain, "IssuerKeys": ", ".join(sorted(self.keys))}

    async def authenticate(self, sock: CedarSocket, ctx: AuthContext) -> AuthResult | None:
        hello = ClientHello.read(await sock.recv())
        exchange = TokenExchange(
            hello,
            self.keys,
            now=self.clock(),
            max_age=self.max_age,
            principal_of=self.principal_of,
        )
        await sock.send(exchange.reply())
        tok = exchange.finish(ClientProof.read(await sock.recv()))
        if tok is None or exchange.principal is None:
            log.info("IDTOKENS authentication of %s failed: %s", sock.peer_text, exchange.error)
            return None
        subject = tok.subject or tok.jti
        user = subject if "@" in subject else f"{subject}@{ctx.config.uid_domain}"
        return AuthResult(
            user=user,
            method=self.name,
            authenticated_name=subject,
            principal=exchange.principal,
            limit=_limit(tok),
            scopes=tok.scopes,
            policy=token_policy(tok),
        )
