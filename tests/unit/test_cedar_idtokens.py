"""cedar/idtokens.py: HTCondor IDTOKENS, with numbers worked out by hand.

Each derivation is recomputed here from its definition with hashlib/hmac alone (RFC 5869
HKDF is two HMACs for a 32-byte key), so the module is checked against the formula, not
against itself; the pinned strings are those recomputations' results.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import stat
from pathlib import Path

import pytest

from mockpool.cedar import idtokens
from mockpool.cedar.idtokens import TokenError

MATERIAL = b"abcabc"  # what a POOL key file holding b"abc" reads as (doubled)
NOW = 1_700_000_000


def hkdf_by_hand(ikm: bytes, salt: bytes, info: bytes) -> bytes:
    """RFC 5869 for L = 32 (one block): PRK = HMAC(salt, IKM); OKM = HMAC(PRK, info|01)."""
    prk = hmac.new(salt, ikm, hashlib.sha256).digest()
    return hmac.new(prk, info + b"\x01", hashlib.sha256).digest()


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def token(claims: dict[str, object], header: dict[str, object] | None = None) -> str:
    """A token signed with MATERIAL's key, built by hand."""
    head = b64(json.dumps(header or {"alg": "HS256", "kid": "POOL"}).encode())
    signing_input = f"{head}.{b64(json.dumps(claims).encode())}"
    key = hkdf_by_hand(MATERIAL, b"htcondor", b"master jwt")
    return f"{signing_input}.{b64(hmac.new(key, signing_input.encode(), hashlib.sha256).digest())}"


GOOD = {"iat": NOW, "iss": "td", "jti": "j1", "sub": "alice"}


# ---------------------------------------------------------------------------- keys


def test_scramble_is_xor_with_deadbeef() -> None:
    # 'a'^DE = 61^DE = BF, 'b'^AD = CF, 'c'^BE = DD, 'd'^EF = 8B, then again 'e'^DE = BB
    assert idtokens.scramble(b"abcde") == bytes.fromhex("bfcfdd8bbb")
    assert idtokens.scramble(idtokens.scramble(b"any bytes")) == b"any bytes"


def test_pool_key_file_is_unscrambled_and_doubled() -> None:
    assert idtokens.pool_key_material(bytes.fromhex("bfcfdd")) == b"abcabc"
    with pytest.raises(TokenError, match="empty"):
        idtokens.pool_key_material(b"")


def test_hkdf_is_rfc5869() -> None:
    # RFC 5869 appendix A.1 (SHA-256, test case 1)
    okm = idtokens.hkdf_sha256(
        bytes([0x0B] * 22), salt=bytes(range(13)), info=bytes(range(0xF0, 0xFA)), length=42
    )
    assert okm.hex() == (
        "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865"
    )


def test_jwt_key_is_hkdf_of_the_key_material() -> None:
    # condor_auth_passwd.cpp: hkdf(key, salt "htcondor", info "master jwt", 32 bytes)
    expected = hkdf_by_hand(MATERIAL, b"htcondor", b"master jwt")
    assert idtokens.jwt_key(MATERIAL) == expected
    assert expected.hex() == "fb9357a8a210c62b518f2bb9a474efd925dc1a12ea75b32fb0e9b6fb5b4945bf"


def test_trust_domain_is_stable_and_per_key() -> None:
    assert idtokens.trust_domain(MATERIAL) == "mockpool-77cc288e"
    assert idtokens.trust_domain(b"xyzxyz") != idtokens.trust_domain(MATERIAL)


def test_signing_key_file_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "POOL"
    idtokens.write_signing_key(path, "abc")
    assert path.read_bytes() == bytes.fromhex("bfcfdd")  # scrambled, no newline
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600  # read_secure_file wants owner-only
    assert idtokens.read_signing_key(path) == MATERIAL
    path.write_bytes(b"")
    with pytest.raises(TokenError, match=f"{path}: the signing key file is empty"):
        idtokens.read_signing_key(path)


# ---------------------------------------------------------------------------- minting


def test_mint_matches_condor_token_create() -> None:
    tok = idtokens.mint(
        MATERIAL,
        subject="alice",
        issuer="mockpool-test",
        levels=["READ", "WRITE"],
        now=NOW,
        jti="0" * 32,
    )
    header, payload, signature = tok.split(".")
    # The header every POOL token has (HTCondor's manual, admin-manual/security.rst)
    assert header == "eyJhbGciOiJIUzI1NiIsImtpZCI6IlBPT0wifQ"
    # picojson's form: keys sorted, no spaces, '/' escaped
    assert base64.urlsafe_b64decode(payload + "==") == (
        b'{"iat":1700000000,"iss":"mockpool-test","jti":"00000000000000000000000000000000",'
        b'"scope":"condor:\\/READ condor:\\/WRITE","sub":"alice"}'
    )
    key = hkdf_by_hand(MATERIAL, b"htcondor", b"master jwt")
    expected = hmac.new(key, f"{header}.{payload}".encode(), hashlib.sha256).digest()
    assert signature == b64(expected) == "5UJsj5eD-x0dE6d1TY3-oJMitrS9xRfoqPttSvxjVNc"
    got = idtokens.verify(tok, MATERIAL, now=NOW)
    assert got.scopes == ("condor:/READ", "condor:/WRITE") and got.levels == ("READ", "WRITE")
    assert (got.subject, got.issuer, got.key_id, got.expires_at) == (
        "alice",
        "mockpool-test",
        "POOL",
        None,
    )


def test_mint_with_lifetime_sets_exp_and_random_jti() -> None:
    a = idtokens.mint(MATERIAL, subject="a", issuer="td", now=NOW, lifetime=60)
    b = idtokens.mint(MATERIAL, subject="a", issuer="td", now=NOW, lifetime=60)
    ta, tb = idtokens.decode(a), idtokens.decode(b)
    assert ta.expires_at == NOW + 60 and ta.issued_at == NOW
    assert len(ta.jti) == 32 and ta.jti != tb.jti  # 16 random bytes in hex, as HTCondor's
    assert "scope" not in ta.claims  # no -authz: no bounding set


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"subject": ""}, "must name its subject"),
        ({"issuer": "a b"}, "without spaces or commas"),
        ({"issuer": ""}, "must be non-empty"),
        ({"levels": ["READ", "ROOT"]}, "unknown authorization level"),
    ],
)
def test_mint_refuses(kwargs: dict[str, object], message: str) -> None:
    args: dict[str, object] = {"subject": "a", "issuer": "td", "now": NOW, **kwargs}
    with pytest.raises(ValueError, match=message):
        idtokens.mint(MATERIAL, **args)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------- decoding


def test_decodes_the_token_in_htcondors_manual() -> None:
    # docs/admin-manual/security.rst, "Revoking Tokens" (its signature is shortened there)
    tok = idtokens.decode(
        "eyJhbGciOiJIUzI1NiIsImtpZCI6IlBPT0wifQ.eyJpYXQiOjE1ODg0NzQ3MTksImlzcyI6ImhjYy1icmlh"
        "bnRlc3Q3LnVubC5lZHUiLCJqdGkiOiJjNzYwYzJhZjE5M2ExZmQ0ZTQwYmM5YzUzYzk2ZWU3YyIsInN1YiI6"
        "ImJib2NrZWxtQGhjYy1icmlhbnRlc3Q3LnVubC5lZHUifQ"
    )
    assert (tok.algorithm, tok.key_id, tok.issued_at) == ("HS256", "POOL", 1588474719)
    assert (tok.subject, tok.issuer) == (
        "bbockelm@hcc-briantest7.unl.edu",
        "hcc-briantest7.unl.edu",
    )
    assert tok.jti == "c760c2af193a1fd4e40bc9c53c96ee7c" and tok.signature == b""
    assert tok.levels == () and idtokens.bounding_set(tok.levels) is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "malformed"),
        ("abc", "malformed"),
        ("a.b.c.d", "malformed"),
        (".eyJ9.", "malformed"),
        ("e30.e30.@@", "signature is not base64url"),
        ("e30=.e30", "header is not base64url"),  # padding: not the one encoding
        ("e30.e31", "payload is not base64url"),  # stray bits: not the one encoding
        (f"{b64(b'[1]')}.e30", "header is not a JSON object"),
        (f"e30.{b64(b'{x')}", "payload is not JSON"),
        ("e30." + "A" * 20_000, "at most 16384"),
    ],
)
def test_decode_errors_name_the_part(text: str, message: str) -> None:
    with pytest.raises(TokenError, match=message):
        idtokens.decode(text)


def test_claims_of_the_wrong_type_are_refused() -> None:
    with pytest.raises(TokenError, match="claim 'sub' is not a string"):
        _ = idtokens.decode(token({**GOOD, "sub": 7})).subject
    with pytest.raises(TokenError, match="claim 'exp' is not a number"):
        _ = idtokens.decode(token({**GOOD, "exp": "soon"})).expires_at


# ---------------------------------------------------------------------------- verifying


def test_a_hand_made_token_verifies() -> None:
    assert idtokens.verify(token(GOOD), MATERIAL, now=NOW).subject == "alice"
    # ... by key id, as a server holding several keys looks it up
    assert idtokens.verify(token(GOOD), {"POOL": MATERIAL}, now=NOW).jti == "j1"


def test_wrong_key_or_edited_token_is_refused() -> None:
    with pytest.raises(TokenError, match="not signed with this pool's key"):
        idtokens.verify(token(GOOD), b"xyzxyz", now=NOW)
    head, _, sig = token(GOOD).split(".")
    edited = f"{head}.{b64(json.dumps({**GOOD, 'sub': 'bob'}).encode())}.{sig}"
    with pytest.raises(TokenError, match="not signed"):
        idtokens.verify(edited, MATERIAL, now=NOW)
    with pytest.raises(TokenError, match="not signed"):  # no signature at all
        idtokens.verify(f"{head}.{_}", MATERIAL, now=NOW)


@pytest.mark.parametrize(
    ("header", "message"),
    [
        ({"alg": "HS256"}, "names no key id"),
        ({"alg": "HS256", "kid": "OTHER"}, "signed with key 'OTHER', which this pool lacks"),
        ({"alg": "none", "kid": "POOL"}, "algorithm 'none' is not one of HS256, HS384, HS512"),
        ({"alg": "RS256", "kid": "POOL"}, "algorithm 'RS256'"),
    ],
)
def test_header_is_checked(header: dict[str, object], message: str) -> None:
    with pytest.raises(TokenError, match=message):
        idtokens.verify(token(GOOD, header), {"POOL": MATERIAL}, now=NOW)


def test_hs384_and_hs512_as_htcondors_server_accepts() -> None:
    head = b64(json.dumps({"alg": "HS512", "kid": "POOL"}).encode())
    signing_input = f"{head}.{b64(json.dumps(GOOD).encode())}"
    key = hkdf_by_hand(MATERIAL, b"htcondor", b"master jwt")
    sig = hmac.new(key, signing_input.encode(), hashlib.sha512).digest()
    assert idtokens.verify(f"{signing_input}.{b64(sig)}", MATERIAL, now=NOW).algorithm == "HS512"


def test_expiry_as_analyze_token() -> None:
    # "expired_for = now - exp; if (expired_for > 0) reject": valid through exp itself
    tok = token({**GOOD, "exp": NOW + 10})
    assert idtokens.verify(tok, MATERIAL, now=NOW + 10).expires_at == NOW + 10
    with pytest.raises(TokenError, match="expired 1 seconds ago"):
        idtokens.verify(tok, MATERIAL, now=NOW + 11)


def test_max_age_as_sec_token_max_age() -> None:
    tok = token(GOOD)  # iat = NOW
    assert idtokens.verify(tok, MATERIAL, now=NOW + 100, max_age=100)
    with pytest.raises(TokenError, match="101 seconds old"):
        idtokens.verify(tok, MATERIAL, now=NOW + 101, max_age=100)
    assert idtokens.verify(tok, MATERIAL, now=NOW + 10**6, max_age=-1)  # -1: no limit


@pytest.mark.parametrize(
    ("missing", "message"),
    [("iss", "names no issuer"), ("jti", "has no jti"), ("sub", "names no subject")],
)
def test_required_claims(missing: str, message: str) -> None:
    claims = {k: v for k, v in GOOD.items() if k != missing}
    with pytest.raises(TokenError, match=message):
        idtokens.verify(token(claims), MATERIAL, now=NOW)


def test_bounding_set_adds_implied_levels() -> None:
    # condor_perms.cpp aImpliedNext: ADMINISTRATOR -> WRITE -> READ; DAEMON -> WRITE;
    # NEGOTIATOR -> READ
    assert idtokens.bounding_set(["ADMINISTRATOR"]) == {"ADMINISTRATOR", "WRITE", "READ"}
    assert idtokens.bounding_set(["DAEMON"]) == {"DAEMON", "WRITE", "READ"}
    assert idtokens.bounding_set(["NEGOTIATOR"]) == {"NEGOTIATOR", "READ"}
    assert idtokens.bounding_set(["READ"]) == {"READ"}
    assert idtokens.bounding_set([]) is None  # no scopes: nothing bounded
