"""HTCondor IDTOKENS: the JWTs ``condor_token_create`` mints, minted and checked here.

An IDTOKEN is a compact JWS (``header.payload.signature``, base64url without padding)
signed HS256 with a key derived from a *signing key* that the pool's daemons hold. What
HTCondor does, and where (github htcondor/htcondor, V25):

- The pool's signing key file (``SEC_TOKEN_POOL_SIGNING_KEY_FILE``, key id ``POOL``) holds
  raw bytes XORed with ``DE AD BE EF`` repeated (secure_file.cpp ``simple_scramble``,
  written by ``write_binary_password_file``). Reading it, HTCondor unscrambles and, for the
  POOL key only, *doubles* it: the key material is ``content + content``
  (store_cred.cpp ``getTokenSigningKey``, "we will always double the pool key").
- The HS256 key is ``HKDF-SHA256(ikm=key material, salt="htcondor", info="master jwt",
  L=32)`` (condor_auth_passwd.cpp ``generate_token`` and ``setup_shared_keys``).
- The header is ``{"alg":"HS256","kid":"POOL"}``; the claims are ``iss`` (TRUST_DOMAIN),
  ``iat``, ``exp`` (only with a lifetime), ``jti`` (16 random bytes in hex), ``sub`` and
  ``scope`` (``condor:/READ condor:/WRITE``: each ``condor:/LEVEL`` bounds what the token
  may do). jwt-cpp writes JSON through picojson: keys sorted, no spaces, ``/`` escaped.
- A server accepts a token (``analyze_token``) that is not expired, not older than
  ``SEC_TOKEN_MAX_AGE`` when set, and names an issuer, a jti and a subject; its
  ``condor:/`` scopes become the connection's authorization bounding set, each level with
  those it implies (sock.cpp ``computeAuthorizationBoundingSet``, condor_perms.cpp
  ``aImpliedNext``: ADMINISTRATOR and DAEMON imply WRITE, which implies READ; NEGOTIATOR
  and CONFIG imply READ).

mockpool's pool secret (text) is the signing key file's *unscrambled* content, so
``write_signing_key`` makes a file a real HTCondor daemon reads as this pool's POOL key.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import os
import secrets
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

__all__ = [
    "LEVELS",
    "PASSWORD_IDENTITY",
    "POOL_KEY_ID",
    "IdToken",
    "TokenError",
    "bounding_set",
    "check_claims",
    "decode",
    "hkdf_sha256",
    "jwt_key",
    "mint",
    "pool_key_material",
    "read_signing_key",
    "scramble",
    "sign",
    "trust_domain",
    "verify",
    "write_signing_key",
]

POOL_KEY_ID = "POOL"  # the key id of SEC_TOKEN_POOL_SIGNING_KEY_FILE's key
# The identity a peer holding the pool key authenticates as (CONDOR_PASSWORD_FQU).
PASSWORD_IDENTITY = "condor@password"
# DCpermission levels a scope may name, and the levels each implies (condor_perms.cpp).
_IMPLIES: dict[str, str | None] = {
    "ALLOW": None,
    "READ": None,
    "WRITE": "READ",
    "NEGOTIATOR": "READ",
    "ADMINISTRATOR": "WRITE",
    "CONFIG": "READ",
    "DAEMON": "WRITE",
    "ADVERTISE_STARTD": "READ",
    "ADVERTISE_SCHEDD": "READ",
    "ADVERTISE_MASTER": "READ",
}
LEVELS: tuple[str, ...] = tuple(_IMPLIES)
_SCOPE_PREFIX = "condor:/"
_SCRAMBLE = b"\xde\xad\xbe\xef"
_HASHES = {"HS256": hashlib.sha256, "HS384": hashlib.sha384, "HS512": hashlib.sha512}
_MAX_TOKEN_CHARS = 16384  # a token is a few hundred characters; refuse a megabyte


class TokenError(ValueError):
    """A token that is malformed, expired, or not signed with the key at hand."""


# ---------------------------------------------------------------------------- keys


def scramble(data: bytes) -> bytes:
    """HTCondor's ``simple_scramble``: XOR with DE AD BE EF repeated (its own inverse)."""
    return bytes(b ^ _SCRAMBLE[i % 4] for i, b in enumerate(data))


def pool_key_material(file_content: bytes) -> bytes:
    """The key material HTCondor reads from a POOL signing key file: unscrambled, doubled."""
    if not file_content:
        raise TokenError("the signing key file is empty")
    plain = scramble(file_content)
    return plain + plain


def hkdf_sha256(ikm: bytes, *, salt: bytes, info: bytes, length: int = 32) -> bytes:
    """RFC 5869 HKDF with SHA-256 (HTCondor's ``Condor_Auth_Passwd::hkdf``)."""
    return HKDF(algorithm=hashes.SHA256(), length=length, salt=salt, info=info).derive(ikm)


def jwt_key(key_material: bytes) -> bytes:
    """The HMAC key tokens are signed with, from a signing key's material."""
    return hkdf_sha256(key_material, salt=b"htcondor", info=b"master jwt")


def trust_domain(key_material: bytes) -> str:
    """The issuer of this pool's tokens: stable for the pool's key, distinct between pools
    (a client picks the token whose issuer is the server's TrustDomain), and revealing
    nothing of the key (a hash of a key derived apart from the JWT key)."""
    tag = hkdf_sha256(key_material, salt=b"mockpool", info=b"trust domain", length=4)
    return f"mockpool-{tag.hex()}"


def write_signing_key(path: str | os.PathLike[str], secret: str) -> None:
    """Write ``secret`` as a POOL signing key file HTCondor reads (scrambled, no newline,
    mode 0600: ``read_secure_file`` refuses a file others may read), atomically."""
    raw = secret.encode()
    if not raw:
        raise ValueError("the pool secret is empty")
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(scramble(raw))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_signing_key(path: str | os.PathLike[str]) -> bytes:
    """The key material of a POOL signing key file (``write_signing_key``'s or HTCondor's)."""
    try:
        return pool_key_material(Path(path).read_bytes())
    except TokenError as e:
        raise TokenError(f"{os.fspath(path)}: {e}") from None


# ---------------------------------------------------------------------------- encoding


def _b64encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _b64decode(text: str, what: str) -> bytes:
    try:
        data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        raise TokenError(f"token {what} is not base64url text") from None
    # One encoding per value: no padding, no stray bits, no '+' or '/' (which the
    # decoder would take), so an edited token never verifies as the same token.
    if _b64encode(data) != text:
        raise TokenError(f"token {what} is not base64url text")
    return data


def _json(obj: Mapping[str, Any]) -> bytes:
    # As picojson writes it (jwt-cpp's JSON): sorted keys, no spaces, '/' escaped.
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text.replace("/", "\\/").encode()


def _object(segment: str, what: str) -> dict[str, Any]:
    try:
        value = json.loads(_b64decode(segment, what))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise TokenError(f"token {what} is not JSON") from None
    if not isinstance(value, dict):
        raise TokenError(f"token {what} is not a JSON object")
    return value


@dataclass(frozen=True)
class IdToken:
    """A decoded token: its header, claims, the text that was signed and the signature
    (empty when only ``header.payload`` was given, as a CEDAR client sends it)."""

    header: Mapping[str, Any]
    claims: Mapping[str, Any]
    signing_input: str
    signature: bytes

    @property
    def algorithm(self) -> str:
        return str(self.header.get("alg", ""))

    @property
    def key_id(self) -> str:
        return str(self.header.get("kid", ""))

    @property
    def subject(self) -> str:
        return _text_claim(self.claims, "sub")

    @property
    def issuer(self) -> str:
        return _text_claim(self.claims, "iss")

    @property
    def jti(self) -> str:
        return _text_claim(self.claims, "jti")

    @property
    def scopes(self) -> tuple[str, ...]:
        return tuple(_text_claim(self.claims, "scope").split())

    @property
    def levels(self) -> tuple[str, ...]:
        """The authorization levels its ``condor:/`` scopes name (HTCondor's
        ``LimitAuthorization``); empty: the token bounds nothing."""
        return tuple(s[len(_SCOPE_PREFIX) :] for s in self.scopes if s.startswith(_SCOPE_PREFIX))

    @property
    def expires_at(self) -> int | None:
        return _time_claim(self.claims, "exp")

    @property
    def issued_at(self) -> int | None:
        return _time_claim(self.claims, "iat")


def _text_claim(claims: Mapping[str, Any], name: str) -> str:
    value = claims.get(name, "")
    if not isinstance(value, str):
        raise TokenError(f"token claim {name!r} is not a string")
    return value


def _time_claim(claims: Mapping[str, Any], name: str) -> int | None:
    value = claims.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TokenError(f"token claim {name!r} is not a number of seconds")
    return int(value)


def decode(token: str) -> IdToken:
    """Parse ``header.payload.signature`` (or ``header.payload``) without checking it."""
    token = token.strip()
    if len(token) > _MAX_TOKEN_CHARS:
        raise TokenError(f"token is {len(token)} characters long (at most {_MAX_TOKEN_CHARS})")
    parts = token.split(".")
    if len(parts) not in (2, 3) or not (parts[0] and parts[1]):
        raise TokenError("token is malformed (expected header.payload.signature)")
    header = _object(parts[0], "header")
    claims = _object(parts[1], "payload")
    signature = _b64decode(parts[2], "signature") if len(parts) == 3 else b""
    return IdToken(header, claims, f"{parts[0]}.{parts[1]}", signature)


def sign(signing_input: str, algorithm: str, key: bytes) -> bytes:
    """The HMAC signature of ``header.payload`` (HS256, HS384 or HS512, as HTCondor's
    server accepts), keyed with ``jwt_key(...)``."""
    digest = _HASHES.get(algorithm)
    if digest is None:
        raise TokenError(f"token algorithm {algorithm!r} is not one of {', '.join(_HASHES)}")
    return hmac.new(key, signing_input.encode("ascii"), digest).digest()


def mint(
    key_material: bytes,
    *,
    subject: str,
    issuer: str,
    levels: Iterable[str] = (),
    now: float,
    lifetime: float | None = None,
    key_id: str = POOL_KEY_ID,
    jti: str | None = None,
    extra_claims: Mapping[str, Any] | None = None,
) -> str:
    """A token as ``condor_token_create -identity SUBJECT -authz LEVEL...`` makes it."""
    if not subject:
        raise ValueError("a token must name its subject")
    if not issuer or any(c in issuer for c in ", \t"):
        raise ValueError(f"issuer {issuer!r} must be non-empty, without spaces or commas")
    unknown = [lv for lv in levels if lv not in _IMPLIES]
    if unknown:
        raise ValueError(f"unknown authorization level(s) {', '.join(unknown)}")
    claims: dict[str, Any] = dict(extra_claims or {})
    claims.update(iss=issuer, iat=int(now), jti=jti or secrets.token_hex(16), sub=subject)
    if lifetime is not None:
        claims["exp"] = int(now + lifetime)
    scope = " ".join(_SCOPE_PREFIX + lv for lv in levels)
    if scope:
        claims["scope"] = scope
    signing_input = (
        f"{_b64encode(_json({'alg': 'HS256', 'kid': key_id}))}.{_b64encode(_json(claims))}"
    )
    return f"{signing_input}.{_b64encode(sign(signing_input, 'HS256', jwt_key(key_material)))}"


def check_claims(tok: IdToken, *, now: float, max_age: float | None = None) -> None:
    """HTCondor's ``analyze_token`` on a token whose signature holds: TokenError says why
    a server would refuse it."""
    expires = tok.expires_at
    if expires is not None and now - expires > 0:
        raise TokenError(f"token expired {int(now - expires)} seconds ago")
    issued = tok.issued_at
    if max_age is not None and max_age >= 0 and issued is not None and now - issued > max_age:
        raise TokenError(f"token is {int(now - issued)} seconds old (SEC_TOKEN_MAX_AGE {max_age})")
    if not tok.issuer:
        raise TokenError("token names no issuer")
    if not tok.jti:
        raise TokenError("token has no jti")
    if not tok.subject:
        raise TokenError("token names no subject")


def verify(
    token: str | IdToken,
    key_material: bytes | Mapping[str, bytes],
    *,
    now: float,
    max_age: float | None = None,
) -> IdToken:
    """The decoded token if it was signed with ``key_material`` (or, given a mapping of key
    ids to key material, with the key its ``kid`` names) and its claims pass."""
    tok = decode(token) if isinstance(token, str) else token
    if not tok.key_id:
        raise TokenError("token names no key id (kid)")
    if isinstance(key_material, Mapping):
        if tok.key_id not in key_material:
            raise TokenError(f"token was signed with key {tok.key_id!r}, which this pool lacks")
        key_material = key_material[tok.key_id]
    expected = sign(tok.signing_input, tok.algorithm, jwt_key(key_material))
    if not hmac.compare_digest(expected, tok.signature):
        raise TokenError("token was not signed with this pool's key")
    check_claims(tok, now=now, max_age=max_age)
    return tok


def bounding_set(levels: Iterable[str]) -> frozenset[str] | None:
    """The levels a token's scopes allow, each with those it implies; None when the token
    names no level (HTCondor then bounds nothing: ``ALL_PERMISSIONS``)."""
    out: set[str] = set()
    for level in levels:
        out.add(level)
        implied = _IMPLIES.get(level)
        while implied is not None:
            out.add(implied)
            implied = _IMPLIES.get(implied)
    return frozenset(out) if out else None
