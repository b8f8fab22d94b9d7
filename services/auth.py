"""The pool's tokens: who may call a daemon, and in which role.

A pool has one secret (``make_secret``), written owner-only to a file that the launcher
hands to every actor. Callers present a *token* minted from that secret: an HTCondor
IDTOKEN (``cedar/idtokens.py``), a JWT signed HS256 with the key HTCondor derives from a
POOL signing key whose content is the secret, issued by the pool's trust domain, its role
carried as ``condor:/LEVEL`` scopes (``ROLE_LEVELS``). So the same token authenticates a
gRPC call here and an HTCondor client (``tokens.d``) to the pool's CEDAR listeners, and
a real HTCondor daemon given the pool's signing key file accepts it. Any daemon holding
the secret can check a token and learn who presents it (a :class:`Principal`: role and
identity) without a token database; a random ``jti`` makes every token distinct.

Identities: a SUBMIT token names its user (it submits as that user and manages only that
user's jobs); a daemon's token names the daemon (``schedd/<name>``, ``startd/<actor>``,
``negotiator``), so a startd can tell which schedd holds a claim; READ and ADMIN tokens
may name whoever they were made for (for logs).

On the wire a token travels as gRPC metadata ``authorization: Bearer <token>``.
``TokenAuthInterceptor`` refuses calls without a valid token (UNAUTHENTICATED) and calls
whose role the method does not allow (PERMISSION_DENIED); ``bearer_interceptors``
add the header on the client side.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import logging
import os
import re
import secrets
import stat
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import grpc
import grpc.aio

from .poolsecret import MIN_SECRET_CHARS as _MIN_SECRET_CHARS
from .principals import Principal, Role, daemon_identity
from .schedd.owners import submit_owner  # the schedd's rule, on a request's principal

if TYPE_CHECKING:
    from .cedar import idtokens

__all__ = [
    "ALL_ROLES",
    "ANONYMOUS_SUBJECT",
    "AUTH_METADATA_KEY",
    "ROLE_LEVELS",
    "InvalidToken",
    "Principal",
    "Role",
    "TokenAuthInterceptor",
    "bearer_interceptors",
    "bearer_metadata",
    "caller",
    "current_principal",
    "current_role",
    "daemon_identity",
    "make_secret",
    "make_token",
    "read_token",
    "submit_owner",
    "token_identity",
    "token_principal",
    "verify_token",
    "write_token",
]

log = logging.getLogger(__name__)

AUTH_METADATA_KEY = "authorization"  # gRPC metadata keys are lower case
_BEARER = "bearer "
# An identity is a user or daemon name: no ':' (the token's separator), no spaces.
_IDENTITY = re.compile(r"[A-Za-z0-9_.@/+-]{0,128}")


ALL_ROLES: frozenset[Role] = frozenset(Role)

# The HTCondor authorization levels (``condor:/LEVEL`` scopes) each role's token carries:
# what the role may do on HTCondor's wire. A token's role is read back from its levels,
# highest first (``_role_of``), so these sets must stay distinct in their highest level.
ROLE_LEVELS: dict[Role, tuple[str, ...]] = {
    Role.READ: ("READ",),
    Role.SUBMIT: ("READ", "WRITE"),
    # the pool's administrator holds every level, as over gRPC (levels.py's ROLE_LEVELS)
    Role.ADMIN: ("READ", "WRITE", "ADMINISTRATOR", "NEGOTIATOR", "DAEMON"),
    Role.DAEMON: ("READ", "WRITE", "DAEMON"),
    # the negotiator also advertises its own ad (as the collector's Advertise admits it)
    Role.NEGOTIATOR: ("READ", "DAEMON", "NEGOTIATOR"),
}
_ROLE_BY_LEVEL = (
    ("ADMINISTRATOR", Role.ADMIN),
    ("NEGOTIATOR", Role.NEGOTIATOR),
    ("DAEMON", Role.DAEMON),
    ("WRITE", Role.SUBMIT),
    ("READ", Role.READ),
)
# HTCondor wants a subject in every token; a token minted for no one names this one,
# which no identity may take (``check_identity``), and reads back as naming no one.
ANONYMOUS_SUBJECT = "anonymous@mockpool"


class InvalidToken(ValueError):
    """A token that is malformed, names no known role, or was not signed by this pool."""


def check_identity(identity: str) -> str:
    """``identity`` if it can be carried in a token; else ValueError saying why."""
    if not _IDENTITY.fullmatch(identity):
        raise ValueError(
            f"identity {identity!r} must be at most 128 letters, digits or '_.@/+-' (no ':' or spaces)"
        )
    if identity == ANONYMOUS_SUBJECT:
        raise ValueError(f"identity {identity!r} is reserved for tokens that name no one")
    return identity


# ---------------------------------------------------------------------------- minting


def make_secret() -> str:
    """A fresh pool secret: 256 random bits, URL-safe text (43 characters)."""
    return secrets.token_urlsafe(32)


def _check_secret(secret: str) -> bytes:
    if len(secret) < _MIN_SECRET_CHARS:
        raise ValueError(
            f"pool secret is too short ({len(secret)} characters, need >= "
            f"{_MIN_SECRET_CHARS}); make one with make_secret()"
        )
    return secret.encode()


def _idtokens() -> Any:
    # Imported on first use: the cedar package imports this module (Principal, Role).
    from .cedar import idtokens

    return idtokens


@functools.lru_cache(maxsize=16)
def pool_key(secret: str) -> tuple[bytes, str]:
    """The pool's token key material (what HTCondor reads from a POOL signing key file
    holding the secret: ``idtokens.write_signing_key``) and its trust domain (the issuer
    of its tokens, the TrustDomain its CEDAR listeners advertise)."""
    raw = _check_secret(secret)
    material = raw + raw  # HTCondor doubles the POOL key (store_cred.cpp)
    return material, _idtokens().trust_domain(material)


def make_token(
    secret: str,
    role: Role | str = Role.DAEMON,
    identity: str = "",
    *,
    lifetime: float | None = None,
    now: float | None = None,
) -> str:
    """Mint an IDTOKEN for ``role`` naming ``identity``, signed with the pool ``secret``;
    it expires ``lifetime`` seconds after ``now`` (default: never, wall clock).

    A SUBMIT token must name its user: it acts as that user and no other.
    """
    role = Role(role)
    check_identity(identity)
    if role is Role.SUBMIT and not identity:
        raise ValueError("a submit token must name its user")
    material, issuer = pool_key(secret)
    return _idtokens().mint(
        material,
        subject=identity or ANONYMOUS_SUBJECT,
        issuer=issuer,
        levels=ROLE_LEVELS[role],
        now=time.time() if now is None else now,
        lifetime=lifetime,
    )


def _role_of(tok: idtokens.IdToken) -> Role:
    levels = set(tok.levels)
    if not levels:
        # No bounding set: HTCondor leaves it to the ALLOW lists, as for FS users; the
        # pool key's own identity (a client holding the signing key file) is the pool's.
        return Role.ADMIN if tok.subject == _idtokens().PASSWORD_IDENTITY else Role.SUBMIT
    for level, role in _ROLE_BY_LEVEL:
        if level in levels:
            return role
    raise InvalidToken(
        "token grants none of READ, WRITE, ADMINISTRATOR, DAEMON, NEGOTIATOR "
        f"(its scopes: {' '.join(tok.scopes)})"
    )


def token_principal(tok: idtokens.IdToken) -> Principal:
    """Who a verified token speaks for: the role its scopes give, its subject's name."""
    role = _role_of(tok)
    name = "" if tok.subject == ANONYMOUS_SUBJECT else tok.subject
    if role is Role.SUBMIT and not name:
        raise InvalidToken("submit token names no user")
    return Principal(role, name)


@functools.lru_cache(maxsize=256)
def token_identity(token: str) -> str:
    """The identity ``token`` names, read WITHOUT checking its signature ("" for none, or
    for what is not a token): for routing a call (host faults' peer rules), never for
    deciding what it may do, which ``verify_token`` does."""
    try:
        subject = _idtokens().decode(token).subject
    except ValueError:
        return ""
    return "" if subject == ANONYMOUS_SUBJECT else subject


def verify_token(secret: str, token: str, *, now: float | None = None) -> Principal:
    """Return who the token speaks for, or raise ``InvalidToken`` saying what is wrong
    (malformed, signed with another key, expired at ``now``: default the wall clock)."""
    material, _ = pool_key(secret)
    tokens = _idtokens()
    try:
        # Constant-time signature check before any claim is read: a forger learns nothing.
        tok = tokens.verify(token, material, now=time.time() if now is None else now)
    except tokens.TokenError as e:
        raise InvalidToken(str(e)) from None
    return token_principal(tok)


# ---------------------------------------------------------------------------- files


def write_token(path: str | os.PathLike[str], token: str) -> None:
    """Write ``token`` (or the pool secret) to ``path``, mode 0600, atomically.

    The file is created owner-only under a temporary name in the same directory and
    renamed into place, so no reader ever sees it partly written or with wider
    permissions, and an existing file (or a symlink planted there) is replaced, not
    written through.
    """
    if not token or any(c.isspace() for c in token):
        raise ValueError("token must be non-empty and contain no whitespace")
    path = Path(path)
    # mkstemp opens with O_EXCL and mode 0600 (before umask): never wider than owner-only.
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o600)  # exactly 0600 even if the umask stripped owner bits
        with os.fdopen(fd, "w", encoding="ascii") as f:
            f.write(token + "\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    # Make the rename durable too.
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def read_token(path: str | os.PathLike[str]) -> str:
    """Read a token file written by ``write_token``.

    Refuses a file that group or others may read or write (as ssh does with keys): a
    secret that was exposed is no longer a secret.
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, encoding="ascii") as f:
        mode = stat.S_IMODE(os.fstat(f.fileno()).st_mode)
        if mode & 0o077:
            raise PermissionError(
                f"token file {os.fspath(path)!r} has mode {mode:#o}; it must be readable "
                f"by its owner only (chmod 600)"
            )
        token = f.read().strip()
    if not token:
        raise ValueError(f"token file {os.fspath(path)!r} is empty")
    return token


# ---------------------------------------------------------------------------- server side

_current: contextvars.ContextVar[Principal | None] = contextvars.ContextVar(
    "mockpool_auth_principal", default=None
)


def current_principal() -> Principal | None:
    """Who called the RPC being handled (None outside an RPC).

    Set by ``TokenAuthInterceptor``; grpc.aio runs interceptors and the handler in one
    contextvars.Context, so a handler may use this for finer checks (own jobs only).
    """
    return _current.get()


@contextlib.contextmanager
def acting_as(principal: Principal | None) -> Iterator[None]:
    """Handle a request as ``principal`` (what the interceptor sets for gRPC): another
    wire (CEDAR) calls a servicer method inside this."""
    token = _current.set(principal)
    try:
        yield
    finally:
        _current.reset(token)


def caller() -> Principal:
    """``current_principal()``, failing closed: a handler reached without the interceptor
    (only possible in-process) is treated as a READ caller."""
    return _current.get() or Principal(Role.READ)


def current_role() -> Role | None:
    """The role of the caller of the RPC being handled (None outside an RPC)."""
    p = _current.get()
    return None if p is None else p.role


def _deny_handler(
    handler: grpc.RpcMethodHandler | None, code: grpc.StatusCode, message: str
) -> grpc.RpcMethodHandler:
    """A handler of the same RPC kind as ``handler`` that aborts with ``code``."""

    async def abort(_request: Any, context: grpc.aio.ServicerContext) -> None:
        await context.abort(code, message)

    # Mirror the kind so the server drives the call as the client expects; an unknown
    # method gets unary-unary (an unauthenticated caller learns nothing about methods).
    if handler is not None and handler.request_streaming and handler.response_streaming:
        return grpc.stream_stream_rpc_method_handler(abort)
    if handler is not None and handler.request_streaming:
        return grpc.stream_unary_rpc_method_handler(abort)
    if handler is not None and handler.response_streaming:
        return grpc.unary_stream_rpc_method_handler(abort)
    return grpc.unary_unary_rpc_method_handler(abort)


_VERIFIED_KEPT = 4096  # distinct good tokens remembered per server


class TokenAuthInterceptor(grpc.aio.ServerInterceptor):
    """Refuse any call that lacks a valid pool token, or whose role the method forbids.

    ``method_roles`` maps full method names (``/mockpool.v1.Schedd/Submit``) to the roles
    allowed to call them; methods not listed admit ``default_roles``.
    """

    def __init__(
        self,
        secret: str,
        *,
        method_roles: Mapping[str, Iterable[Role | str]] | None = None,
        default_roles: Iterable[Role | str] = ALL_ROLES,
    ) -> None:
        _check_secret(secret)
        self._secret = secret
        self._method_roles = {
            method: frozenset(Role(r) for r in roles)
            for method, roles in (method_roles or {}).items()
        }
        self._default_roles = frozenset(Role(r) for r in default_roles)
        # Tokens that verified, with their expiry: a pool's callers send a handful, each
        # on every call (a forged one is never kept: it does not verify).
        self._verified: dict[str, tuple[Principal, int | None]] = {}

    def _authenticate(self, metadata: Iterable[tuple[str, Any]] | None) -> Principal:
        values = [v for k, v in (metadata or ()) if k == AUTH_METADATA_KEY]
        if not values:
            raise InvalidToken("missing pool token: send metadata 'authorization: Bearer <token>'")
        if len(values) > 1:
            raise InvalidToken("more than one 'authorization' metadata entry")
        value = values[0]
        if isinstance(value, bytes):
            value = value.decode("ascii", "replace")
        if not value.lower().startswith(_BEARER):
            raise InvalidToken("'authorization' metadata must read 'Bearer <token>'")
        token = value[len(_BEARER) :].strip()
        kept = self._verified.get(token)
        if kept is not None and (kept[1] is None or time.time() <= kept[1]):
            return kept[0]
        principal = verify_token(self._secret, token)  # an expired one raises here
        if len(self._verified) < _VERIFIED_KEPT:
            self._verified[token] = (principal, _idtokens().decode(token).expires_at)
        return principal

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        method = handler_call_details.method
        try:
            principal = self._authenticate(handler_call_details.invocation_metadata)
        except InvalidToken as exc:
            log.debug("refused %s: %s", method, exc)
            handler = await continuation(handler_call_details)
            return _deny_handler(handler, grpc.StatusCode.UNAUTHENTICATED, str(exc))
        role = principal.role
        allowed = self._method_roles.get(method, self._default_roles)
        if role not in allowed:
            log.debug("refused %s: role %s not allowed", method, role)
            handler = await continuation(handler_call_details)
            names = ", ".join(sorted(r.value for r in allowed)) or "none"
            return _deny_handler(
                handler,
                grpc.StatusCode.PERMISSION_DENIED,
                f"role {role.value!r} may not call {method} (allowed: {names})",
            )
        _current.set(principal)
        return await continuation(handler_call_details)


# ---------------------------------------------------------------------------- client side


def bearer_metadata(token: str) -> tuple[tuple[str, str]]:
    """Per-call metadata carrying ``token``, for callers not using a token channel."""
    return ((AUTH_METADATA_KEY, f"Bearer {token}"),)


class _Bearer:
    # grpc.aio's channel files each interceptor under the FIRST client-interceptor kind it
    # subclasses (an if/elif chain), so one class implementing all four kinds would only
    # ever see unary-unary calls. Hence one small class per kind, sharing this base.
    def __init__(self, token: str) -> None:
        self._entry = bearer_metadata(token)[0]

    def _details(self, details: grpc.aio.ClientCallDetails) -> grpc.aio.ClientCallDetails:
        metadata = grpc.aio.Metadata(*(details.metadata or ()))
        if AUTH_METADATA_KEY in metadata:  # an explicit per-call token wins
            return details
        metadata.add(*self._entry)
        return details._replace(metadata=metadata)


class _BearerUnaryUnary(_Bearer, grpc.aio.UnaryUnaryClientInterceptor):
    async def intercept_unary_unary(self, continuation, client_call_details, request):  # type: ignore[no-untyped-def]
        return await continuation(self._details(client_call_details), request)


class _BearerUnaryStream(_Bearer, grpc.aio.UnaryStreamClientInterceptor):
    async def intercept_unary_stream(self, continuation, client_call_details, request):  # type: ignore[no-untyped-def]
        return await continuation(self._details(client_call_details), request)


class _BearerStreamUnary(_Bearer, grpc.aio.StreamUnaryClientInterceptor):
    async def intercept_stream_unary(self, continuation, client_call_details, request_iterator):  # type: ignore[no-untyped-def]
        return await continuation(self._details(client_call_details), request_iterator)


class _BearerStreamStream(_Bearer, grpc.aio.StreamStreamClientInterceptor):
    async def intercept_stream_stream(self, continuation, client_call_details, request_iterator):  # type: ignore[no-untyped-def]
        return await continuation(self._details(client_call_details), request_iterator)


def bearer_interceptors(token: str) -> list[grpc.aio.ClientInterceptor]:
    """Client interceptors adding ``authorization: Bearer <token>`` to calls of every kind.

    Pass all of them to ``grpc.aio.insecure_channel(..., interceptors=...)``. A call that
    already carries an ``authorization`` entry keeps it (a tool acting in another role).
    """
    return [
        _BearerUnaryUnary(token),
        _BearerUnaryStream(token),
        _BearerStreamUnary(token),
        _BearerStreamStream(token),
    ]
