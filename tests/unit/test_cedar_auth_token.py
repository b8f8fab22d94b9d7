"""cedar/auth_token.py: the IDTOKENS exchange, server side, against a client written
here from condor_auth_passwd.cpp's client half (fetchLogin, client_check_t_validity,
calculate_hk), with the keys worked out by hand."""

from __future__ import annotations

import hashlib
import hmac

import pytest

from mockpool import auth
from mockpool.auth import Principal, Role
from mockpool.cedar import auth_token, idtokens
from mockpool.cedar.auth_token import ClientHello, ClientProof, TokenExchange
from mockpool.cedar.encoding import StreamError
from mockpool.cedar.levels import Level
from mockpool.cedar.stream import Builder, Message

SECRET = "s" * 43
MATERIAL, DOMAIN = auth.pool_key(SECRET)
KEYS = {"POOL": MATERIAL}
NOW = 1_700_000_000.0
RA, RB = bytes(range(256)), bytes(255 - i for i in range(256))


def hkdf_by_hand(ikm: bytes, salt: bytes, info: bytes) -> bytes:
    prk = hmac.new(salt, ikm, hashlib.sha256).digest()
    return hmac.new(prk, info + b"\x01", hashlib.sha256).digest()


def wire(b: Builder) -> Message:
    return Message(b.build())


class Client:
    """HTCondor's client half, from a token file's line."""

    def __init__(self, token: str) -> None:
        tok = idtokens.decode(token)
        self.name, self.token, self.signature = tok.subject, tok.signing_input, tok.signature
        # fetchLogin: K = hkdf(signature, seed_ka + header.payload, "master ka")
        self.k = hkdf_by_hand(
            self.signature, auth_token.SEED_KA + self.token.encode(), b"master ka"
        )

    def hello(self) -> Message:
        a = self.name.encode()
        return wire(
            Builder()
            .put_int(0)
            .put_int(len(a))
            .put_string(self.name)
            .put_string(self.token)
            .put_int(256)
            .put_bytes(RA)
        )

    def proof(self, reply: Message) -> Message:
        """client_receive, client_check_t_validity, client_send_two."""
        status = reply.get_int()
        reply.get_int()
        a = reply.get_string()
        reply.get_int()
        b = reply.get_string()
        ra = reply.get_bytes(reply.get_int())
        rb = reply.get_bytes(reply.get_int())
        t = reply.get_bytes(reply.get_int())
        reply.expect_end()
        expected_t = hmac.new(self.k, f"{a} {b}".encode() + b"\0" + ra + rb, hashlib.sha1)
        ok = status == 0 and a == self.name and ra == RA and t == expected_t.digest()
        if not ok:  # nothing but the error status
            return wire(Builder().put_int(-1).put_int(0).put_string("").put_int(0).put_int(0))
        hk = hmac.new(self.k, self.name.encode() + b"\0" + rb, hashlib.sha1).digest()
        return wire(
            Builder()
            .put_int(0)
            .put_int(len(self.name))
            .put_string(self.name)
            .put_int(256)
            .put_bytes(rb)
            .put_int(len(hk))
            .put_bytes(hk)
        )


def run(token: str, **kwargs: object) -> tuple[TokenExchange, idtokens.IdToken | None]:
    client = Client(token)
    exchange = TokenExchange(
        ClientHello.read(client.hello()),
        KEYS,
        now=NOW,
        random=lambda n: RB,
        **kwargs,  # type: ignore[arg-type]
    )
    proof = client.proof(wire(exchange.reply()))
    return exchange, exchange.finish(ClientProof.read(proof))


def test_seeds_are_setup_seeds() -> None:
    # the 256 ka[i] / kb[i] assignments of condor_auth_passwd.cpp's setup_seed, hashed
    assert hashlib.sha256(auth_token.SEED_KA).hexdigest() == (
        "54029671f8b74888ae45fa5f5aa73755986b977fd44645dfe54d8fb646f69633"
    )
    assert hashlib.sha256(auth_token.SEED_KB).hexdigest() == (
        "73797fd3830629b39ede92d99b85097ae74e8eef6fb344fcbe73dc7095b7bf15"
    )
    assert auth_token.SEED_KA[:4] == bytes([62, 74, 80, 32])  # ka[0..3] = 62, 74, 80, 32
    assert auth_token.SEED_KB[-2:] == bytes([251, 140])  # kb[254], kb[255]


def test_a_pool_token_authenticates() -> None:
    token = auth.make_token(SECRET, Role.SUBMIT, "alice", now=NOW)
    exchange, tok = run(token)
    assert exchange.error == "" and tok is not None and tok.subject == "alice"
    assert exchange.principal == Principal(Role.SUBMIT, "alice")


def test_server_reply_is_worked_out_by_hand() -> None:
    token = auth.make_token(SECRET, Role.READ, "bob", now=NOW)
    tok = idtokens.decode(token)
    exchange = TokenExchange(
        ClientHello.read(Client(token).hello()), KEYS, now=NOW, random=lambda n: RB
    )
    reply = wire(exchange.reply())
    assert [reply.get_int(), reply.get_int(), reply.get_string()] == [0, 3, "bob"]
    assert [reply.get_int(), reply.get_string()] == [15, "condor@password"]
    assert reply.get_bytes(reply.get_int()) == RA and reply.get_bytes(reply.get_int()) == RB
    t = reply.get_bytes(reply.get_int())
    reply.expect_end()
    # the server re-signs header.payload with its key: the token's own signature
    jwt_key = hkdf_by_hand(MATERIAL, b"htcondor", b"master jwt")
    signature = hmac.new(jwt_key, tok.signing_input.encode(), hashlib.sha256).digest()
    assert signature == tok.signature
    k = hkdf_by_hand(signature, auth_token.SEED_KA + tok.signing_input.encode(), b"master ka")
    assert auth_token.derive_k(signature, tok.signing_input) == k
    assert t == hmac.new(k, b"bob condor@password\0" + RA + RB, hashlib.sha1).digest()


def test_a_token_signed_with_another_key_fails_at_the_clients_check() -> None:
    other = auth.make_token("o" * 43, Role.ADMIN, "mallory", now=NOW)
    exchange, tok = run(other)
    assert tok is None and "signed with another key" in exchange.error


@pytest.mark.parametrize(
    ("token", "message"),
    [
        (auth.make_token(SECRET, Role.READ, "a", now=NOW - 100, lifetime=50), "expired 50"),
        (
            idtokens.mint(MATERIAL, subject="a", issuer="td", now=NOW, key_id="AP"),
            "names key 'AP', which we lack",
        ),
    ],
    ids=["expired", "unknown-key"],  # the tokens' jti is random: ids must not name them
)
def test_refused_at_the_servers_first_check(token: str, message: str) -> None:
    exchange, tok = run(token)
    assert tok is None and message in exchange.error
    assert wire(exchange.reply()).get_int() == -1  # the client is told: both move on


def test_max_age() -> None:
    token = auth.make_token(SECRET, Role.READ, "a", now=NOW - 61)
    exchange, tok = run(token, max_age=60)
    assert tok is None and "61 seconds old" in exchange.error


def test_a_token_granting_no_role_is_refused_up_front() -> None:
    token = idtokens.mint(MATERIAL, subject="a", issuer="td", now=NOW, levels=["ALLOW"], jti="j")
    exchange, tok = run(token)
    assert tok is None and "grants none of" in exchange.error


def test_a_client_claiming_another_name_is_refused() -> None:
    token = auth.make_token(SECRET, Role.SUBMIT, "alice", now=NOW)
    client = Client(token)
    client.name = "bob"
    exchange = TokenExchange(ClientHello.read(client.hello()), KEYS, now=NOW)
    assert "client ID (bob) and the token's subject (alice) differ" in exchange.error


def test_a_forged_proof_is_refused() -> None:
    token = auth.make_token(SECRET, Role.SUBMIT, "alice", now=NOW)
    client = Client(token)
    exchange = TokenExchange(ClientHello.read(client.hello()), KEYS, now=NOW, random=lambda n: RB)
    client.proof(wire(exchange.reply()))
    bad = wire(
        Builder()
        .put_int(0)
        .put_int(5)
        .put_string("alice")
        .put_int(256)
        .put_bytes(RB)
        .put_int(20)
        .put_bytes(bytes(20))
    )
    assert exchange.finish(ClientProof.read(bad)) is None
    assert "proof does not match" in exchange.error


def test_a_client_without_a_token_says_so() -> None:
    hello = wire(Builder().put_int(-1).put_int(0).put_string("").put_string("").put_int(0))
    exchange = TokenExchange(ClientHello.read(hello), KEYS, now=NOW)
    assert "reported an error" in exchange.error
    reply = wire(exchange.reply())
    assert [reply.get_int() for _ in range(2)] == [-1, 0] and reply.get_string() == ""


def test_oversized_fields_are_refused() -> None:
    hello = wire(Builder().put_int(0).put_int(1).put_string("a").put_string("t").put_int(257))
    with pytest.raises(idtokens.TokenError, match="Ra length 257 at offset"):
        ClientHello.read(hello)
    with pytest.raises(StreamError):
        ClientHello.read(wire(Builder().put_int(0)))


def test_result_for_the_handshake() -> None:
    token = auth.make_token(SECRET, Role.ADMIN, "root@example.org", now=NOW, lifetime=10)
    tok = idtokens.decode(token)
    assert auth_token._limit(tok) == set(Level) - {Level.ALLOW}  # every level: ALLOW is implicit
    assert auth_token.token_policy(tok) == {
        "LimitAuthorization": "READ,WRITE,ADMINISTRATOR,NEGOTIATOR,DAEMON",
        "AuthTokenScopes": (
            "condor:/READ,condor:/WRITE,condor:/ADMINISTRATOR,condor:/NEGOTIATOR,condor:/DAEMON"
        ),
        "AuthTokenSubject": "root@example.org",
        "AuthTokenIssuer": DOMAIN,
        "AuthTokenId": tok.jti,
        "TokenExpirationTime": int(NOW) + 10,
    }
    method = auth_token.TokenAuth.for_pool(SECRET)
    assert method.metadata() == {"TrustDomain": DOMAIN, "IssuerKeys": "POOL"}
    assert (method.wire_name, method.bit) == ("TOKEN", 2048)
