"""mockpool.auth: tokens, token files and the server interceptor (no network)."""

from __future__ import annotations

import asyncio
import base64
import hmac
import os
import stat
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import grpc
import pytest

from mockpool import auth
from mockpool.auth import InvalidToken, Role
from mockpool.cedar import idtokens

SECRET = "s" * 43
OTHER_SECRET = "o" * 43


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def reminted(token: str, secret: str = SECRET, **claims: Any) -> str:
    """``token`` with ``claims`` changed, signed again with ``secret``'s key."""
    tok = idtokens.decode(token)
    material, _ = auth.pool_key(secret)
    new = {**tok.claims, **claims}
    return idtokens.mint(
        material,
        subject=new.pop("sub"),
        issuer=new.pop("iss"),
        now=new.pop("iat"),
        jti=new.pop("jti"),
        levels=[s.removeprefix("condor:/") for s in new.pop("scope", "").split()],
        extra_claims=new,
    )


def with_payload_of(token: str, other: str) -> str:
    """``token``'s header and signature around ``other``'s payload."""
    header, _, signature = token.split(".")
    return f"{header}.{other.split('.')[1]}.{signature}"


# ---------------------------------------------------------------- secrets and tokens


def test_secret_is_256_bits_and_fresh() -> None:
    a, b = auth.make_secret(), auth.make_secret()
    assert a != b
    assert len(base64.urlsafe_b64decode(a + "=")) == 32


@pytest.mark.parametrize("role", list(Role))
def test_token_round_trip(role: Role) -> None:
    token = auth.make_token(SECRET, role, "alice")
    tok = idtokens.decode(token)
    assert tok.subject == "alice" and tok.key_id == "POOL" and tok.algorithm == "HS256"
    assert tok.levels == auth.ROLE_LEVELS[role]
    assert tok.issuer == auth.pool_key(SECRET)[1] and len(tok.signature) == 32  # SHA-256
    assert auth.verify_token(SECRET, token) == auth.Principal(role, "alice")


def test_identity_cannot_be_changed_by_editing_the_token() -> None:
    alice = auth.make_token(SECRET, Role.SUBMIT, "alice")
    bob = auth.make_token(OTHER_SECRET, Role.SUBMIT, "bob")
    with pytest.raises(InvalidToken, match="not signed"):
        auth.verify_token(SECRET, with_payload_of(alice, bob))


def test_submit_token_must_name_its_user() -> None:
    with pytest.raises(ValueError, match="must name its user"):
        auth.make_token(SECRET, Role.SUBMIT)
    # ... and one that names none is refused even when correctly signed
    anonymous = auth.make_token(SECRET, Role.READ)
    submit = reminted(anonymous, scope="condor:/READ condor:/WRITE")
    with pytest.raises(InvalidToken, match="names no user"):
        auth.verify_token(SECRET, submit)


@pytest.mark.parametrize("bad", ["a:b", "al ice", "x" * 129, "tab\t", auth.ANONYMOUS_SUBJECT])
def test_identity_charset(bad: str) -> None:
    with pytest.raises(ValueError, match="identity"):
        auth.make_token(SECRET, Role.READ, bad)


def test_submit_owner_comes_from_the_token() -> None:
    alice = auth.Principal(Role.SUBMIT, "alice")
    assert auth.submit_owner(alice, "") == "alice"
    assert auth.submit_owner(alice, "alice") == "alice"
    with pytest.raises(PermissionError, match="user 'alice' may not submit jobs as 'bob'"):
        auth.submit_owner(alice, "bob")
    # the queue superuser submits as whoever it names
    assert auth.submit_owner(auth.Principal(Role.ADMIN, "admin"), "bob") == "bob"
    assert auth.submit_owner(auth.Principal(Role.ADMIN, "admin"), "") == "admin"
    with pytest.raises(PermissionError, match="'read' may not submit"):
        auth.submit_owner(auth.Principal(Role.READ), "bob")


def test_only_a_schedd_itself_or_admin_acts_for_its_claims() -> None:
    schedd1 = auth.Principal(Role.DAEMON, auth.daemon_identity("schedd", "schedd1"))
    assert schedd1.name == "schedd/schedd1"
    assert schedd1.acts_for_schedd("schedd1") and schedd1.acts_for_schedd("SCHEDD1")
    assert not schedd1.acts_for_schedd("schedd2")
    startd = auth.Principal(Role.DAEMON, "startd/startd0_0")
    assert not startd.acts_for_schedd("schedd1") and startd.is_daemon("startd")
    assert not schedd1.is_daemon("startd")
    # a NEGOTIATOR or SUBMIT token naming the schedd is not the schedd
    assert not auth.Principal(Role.NEGOTIATOR, "schedd/schedd1").acts_for_schedd("schedd1")
    assert not auth.Principal(Role.SUBMIT, "schedd/schedd1").acts_for_schedd("schedd1")
    assert auth.Principal(Role.ADMIN).acts_for_schedd("schedd1")


def test_tokens_are_distinct_and_role_accepts_text() -> None:
    assert auth.make_token(SECRET, "read") != auth.make_token(SECRET, "read")
    with pytest.raises(ValueError):
        auth.make_token(SECRET, "root")


def test_token_from_another_pool_is_refused() -> None:
    with pytest.raises(InvalidToken, match="not signed"):
        auth.verify_token(SECRET, auth.make_token(OTHER_SECRET, Role.ADMIN))


def test_role_cannot_be_raised_by_editing_the_token() -> None:
    read = auth.make_token(SECRET, Role.READ)
    admin = reminted(read, OTHER_SECRET, scope="condor:/ADMINISTRATOR")
    assert idtokens.decode(with_payload_of(read, admin)).levels == ("ADMINISTRATOR",)
    with pytest.raises(InvalidToken, match="not signed"):
        auth.verify_token(SECRET, with_payload_of(read, admin))


@pytest.mark.parametrize(
    "bad", ["", "read", "read:abc", "read::f00", "read:x::f00", "a:b:c:d:e", "::::", "read:n:mac"]
)
def test_malformed_tokens(bad: str) -> None:
    with pytest.raises(InvalidToken):
        auth.verify_token(SECRET, bad)


def test_signed_but_no_known_role() -> None:
    token = reminted(auth.make_token(SECRET, Role.READ), scope="condor:/ALLOW")
    with pytest.raises(InvalidToken, match=r"grants none of .* \(its scopes: condor:/ALLOW\)"):
        auth.verify_token(SECRET, token)


def test_token_expires() -> None:
    token = auth.make_token(SECRET, Role.READ, "alice", lifetime=60, now=1_000)
    assert idtokens.decode(token).expires_at == 1_060
    assert auth.verify_token(SECRET, token, now=1_060) == auth.Principal(Role.READ, "alice")
    with pytest.raises(InvalidToken, match="expired 1 seconds ago"):
        auth.verify_token(SECRET, token, now=1_061)


def test_mac_is_compared_in_constant_time(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[Any, Any]] = []
    real = hmac.compare_digest

    def spy(a: Any, b: Any) -> bool:
        seen.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", spy)
    token = auth.make_token(SECRET, Role.SUBMIT, "alice")
    auth.verify_token(SECRET, token)
    header, payload, signature = token.split(".")
    forged = ("B" if signature[0] == "A" else "A") + signature[1:]  # a whole sextet differs
    with pytest.raises(InvalidToken):
        auth.verify_token(SECRET, f"{header}.{payload}.{forged}")
    assert len(seen) == 2
    # Compared as bytes of equal length: no early exit on the first differing byte.
    assert all(isinstance(a, bytes) and len(a) == len(b) for a, b in seen)


def test_short_secret_is_refused() -> None:
    with pytest.raises(ValueError, match="too short"):
        auth.make_token("short", Role.READ)
    with pytest.raises(ValueError, match="too short"):
        auth.TokenAuthInterceptor("short")


# ---------------------------------------------------------------- token files


def test_write_token_is_owner_only_even_with_open_umask(tmp_path: Path) -> None:
    path = tmp_path / "pool.token"
    old = os.umask(0)  # the most permissive umask: the file must still be 0600
    try:
        auth.write_token(path, "tok")
    finally:
        os.umask(old)
    assert mode(path) == 0o600
    assert path.read_text() == "tok\n"
    assert auth.read_token(path) == "tok"
    assert [p.name for p in tmp_path.iterdir()] == ["pool.token"]  # no temp file left


def test_write_token_never_exposes_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # At the moment the file appears under its real name it is complete and 0600.
    path = tmp_path / "pool.token"
    real_replace = os.replace
    observed: list[tuple[int, str]] = []

    def spy(src: Any, dst: Any) -> None:
        observed.append((mode(Path(src)), Path(src).read_text()))
        assert not path.exists()
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", spy)
    auth.write_token(path, "secret-token")
    assert observed == [(0o600, "secret-token\n")]


def test_write_token_replaces_a_wide_file_and_a_symlink(tmp_path: Path) -> None:
    wide = tmp_path / "wide.token"
    wide.write_text("old\n")
    wide.chmod(0o644)
    auth.write_token(wide, "new")
    assert mode(wide) == 0o600 and auth.read_token(wide) == "new"

    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    link = tmp_path / "link.token"
    link.symlink_to(victim)
    auth.write_token(link, "new")
    assert not link.is_symlink() and mode(link) == 0o600
    assert victim.read_text() == "keep\n"


def test_write_token_failure_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(src: Any, dst: Any) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        auth.write_token(tmp_path / "pool.token", "tok")
    assert list(tmp_path.iterdir()) == []


def test_read_token_refuses_readable_or_empty_files(tmp_path: Path) -> None:
    path = tmp_path / "pool.token"
    path.write_text("tok\n")
    path.chmod(0o644)
    with pytest.raises(PermissionError, match="chmod 600"):
        auth.read_token(path)
    path.chmod(0o600)
    path.write_text("\n")
    with pytest.raises(ValueError, match="empty"):
        auth.read_token(path)


@pytest.mark.parametrize("bad", ["", "two words", "line\n"])
def test_write_token_refuses_whitespace(tmp_path: Path, bad: str) -> None:
    with pytest.raises(ValueError):
        auth.write_token(tmp_path / "t", bad)


# ---------------------------------------------------------------- interceptor, no network


class AbortCalled(Exception):
    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(code, details)
        self.code, self.details = code, details


class FakeContext:
    async def abort(self, code: grpc.StatusCode, details: str = "") -> None:
        raise AbortCalled(code, details)


REAL_HANDLER = grpc.unary_unary_rpc_method_handler(lambda req, ctx: req)
seen_principals: list[auth.Principal | None] = []  # what handlers saw, in call order


async def intercept(
    interceptor: auth.TokenAuthInterceptor,
    metadata: tuple[tuple[str, str], ...],
    method: str = "/t.S/M",
    handler: grpc.RpcMethodHandler | None = REAL_HANDLER,
) -> tuple[grpc.RpcMethodHandler, list[Role | None]]:
    roles_seen: list[Role | None] = []

    async def continuation(details: Any) -> grpc.RpcMethodHandler | None:
        roles_seen.append(auth.current_role())
        seen_principals.append(auth.current_principal())
        return handler

    details = SimpleNamespace(method=method, invocation_metadata=metadata)
    return await interceptor.intercept_service(continuation, details), roles_seen


async def denial(handler: grpc.RpcMethodHandler) -> AbortCalled:
    behaviour = handler.unary_unary or handler.unary_stream
    behaviour = behaviour or handler.stream_unary or handler.stream_stream
    with pytest.raises(AbortCalled) as info:
        await behaviour(b"", FakeContext())
    return info.value


async def test_interceptor_accepts_a_valid_token_and_exposes_the_role() -> None:
    icpt = auth.TokenAuthInterceptor(SECRET)
    md = auth.bearer_metadata(auth.make_token(SECRET, Role.SUBMIT, "alice"))
    handler, roles = await intercept(icpt, md)
    assert handler is REAL_HANDLER
    assert roles == [Role.SUBMIT]
    assert seen_principals[-1] == auth.Principal(Role.SUBMIT, "alice")
    # Scheme is case-insensitive (RFC 6750).
    md = (("authorization", "bearer " + auth.make_token(SECRET, Role.READ)),)
    assert (await intercept(icpt, md))[0] is REAL_HANDLER


async def test_a_token_that_verified_once_lets_no_altered_token_through() -> None:
    # The interceptor remembers tokens that verified; one changed in any part (its MAC,
    # its role, or signed with another secret) is checked afresh and refused.
    icpt = auth.TokenAuthInterceptor(SECRET)

    async def call(token: str) -> tuple[grpc.RpcMethodHandler, list[Role | None]]:
        # a task per call, as gRPC serves each: the caller's role stays in its call
        return await asyncio.create_task(intercept(icpt, auth.bearer_metadata(token)))

    good = auth.make_token(SECRET, Role.READ, "alice")
    for _ in range(2):
        handler, roles = await call(good)
        assert handler is REAL_HANDLER and roles == [Role.READ]
    header, payload, mac = good.split(".")
    flipped = ("B" if mac[0] == "A" else "A") + mac[1:]
    admin = reminted(good, auth.make_secret(), scope="condor:/ADMINISTRATOR")
    altered = [
        f"{header}.{payload}.{flipped}",
        with_payload_of(good, admin),
        auth.make_token(auth.make_secret(), Role.READ, "alice"),
    ]
    for token in altered:
        handler, roles = await call(token)
        assert roles == [None]
        assert (await denial(handler)).code == grpc.StatusCode.UNAUTHENTICATED


@pytest.mark.parametrize(
    ("metadata", "message"),
    [
        ((), "missing pool token"),
        ((("authorization", "Basic abc"),), "Bearer <token>"),
        ((("authorization", "Bearer nope"),), "malformed"),
        ((("authorization", "Bearer a"), ("authorization", "Bearer b")), "more than one"),
    ],
)
async def test_interceptor_refuses_missing_or_bad_tokens(
    metadata: tuple[tuple[str, str], ...], message: str
) -> None:
    handler, roles = await intercept(auth.TokenAuthInterceptor(SECRET), metadata)
    assert handler is not REAL_HANDLER and roles == [None]
    refused = await denial(handler)
    assert refused.code == grpc.StatusCode.UNAUTHENTICATED
    assert message in refused.details


async def test_interceptor_checks_the_role_per_method() -> None:
    icpt = auth.TokenAuthInterceptor(
        SECRET,
        method_roles={"/t.S/Fault": [Role.ADMIN]},
        default_roles=[Role.READ, Role.ADMIN],
    )
    read = auth.bearer_metadata(auth.make_token(SECRET, Role.READ))
    admin = auth.bearer_metadata(auth.make_token(SECRET, Role.ADMIN))
    daemon = auth.bearer_metadata(auth.make_token(SECRET, Role.DAEMON))

    assert (await intercept(icpt, admin, "/t.S/Fault"))[0] is REAL_HANDLER
    assert (await intercept(icpt, read, "/t.S/Other"))[0] is REAL_HANDLER
    for md, method in [(read, "/t.S/Fault"), (daemon, "/t.S/Other")]:
        refused = await denial((await intercept(icpt, md, method))[0])
        assert refused.code == grpc.StatusCode.PERMISSION_DENIED
        assert "may not call" in refused.details


async def test_denial_mirrors_the_rpc_kind() -> None:
    icpt = auth.TokenAuthInterceptor(SECRET)
    streaming = grpc.unary_stream_rpc_method_handler(lambda req, ctx: iter(()))
    handler, _ = await intercept(icpt, (), handler=streaming)
    assert handler.response_streaming and not handler.request_streaming
    unknown, _ = await intercept(icpt, (), handler=None)
    assert not unknown.response_streaming and not unknown.request_streaming
