"""HTCondor's own client against a CedarServer with IDTOKENS and AES-GCM: the pool's
tokens in a ``tokens.d`` folder authenticate ``htcondor2``, with encryption and
integrity REQUIRED on both sides, and HTCondor's refusals happen where HTCondor's would.
A client holding the pool's signing key file mints its own token (HTCondor's code, from
our key file) and our server accepts it: the key derivations agree with HTCondor's."""

from __future__ import annotations

import logging
import re
import time
from pathlib import Path

import pytest
from builders.htcondor import run_htcondor

from mockpool import auth
from mockpool.auth import Principal, Role
from mockpool.cedar import (
    Builder,
    CedarRequest,
    CedarServer,
    Command,
    Level,
    SecurityConfig,
    idtokens,
)
from mockpool.cedar.auth_token import TokenAuth
from mockpool.cedar.commands import QUERY_SCHEDD_ADS, QUERY_STARTD_ADS
from mockpool.cedar.crypto import AesCrypto
from mockpool.classad import ClassAd

SECRET = auth.make_secret()
MATERIAL, DOMAIN = auth.pool_key(SECRET)

CLIENT = """\
SEC_CLIENT_AUTHENTICATION_METHODS = IDTOKENS
SEC_DEFAULT_ENCRYPTION = REQUIRED
SEC_DEFAULT_INTEGRITY = REQUIRED
"""

# Each case its own SecurityContext: its own session, so each one authenticates.
QUERIES = """
c = htcondor2.Collector("127.0.0.1:{port}")
result = [[str(a.get("Name")) for a in c.query(htcondor2.AdType.Startd)] for _ in range(2)]
for token, kind in {cases!r}:
    c = htcondor2.Collector("127.0.0.1:{port}", security=htcondor2.SecurityContext(token))
    try:
        result.append([str(a.get("Name")) for a in c.query(getattr(htcondor2.AdType, kind))])
    except Exception as e:
        result.append(type(e).__name__)
"""


def server(seen: list[tuple[int, Principal | None, str, bool]]) -> CedarServer:
    """A collector answering one slot ad; QUERY_SCHEDD_ADS registered at WRITE here, to
    have a WRITE command htcondor2's query reaches."""

    async def handle(req: CedarRequest) -> None:
        (await req.sock.recv()).get_ad(what="query ad")
        seen.append((req.command, req.peer.principal, req.peer.method, req.sock.encrypted))
        ad = ClassAd()
        ad["MyType"] = "Machine"
        ad["Name"] = "slot1@exec"
        await req.sock.send(Builder().put_int(1).put_ad(ad).put_int(0))

    config = SecurityConfig(
        methods=(TokenAuth.for_pool(SECRET),),
        crypto=AesCrypto(),
        encryption="REQUIRED",
        integrity="REQUIRED",
    )
    commands = [
        Command(QUERY_STARTD_ADS, Level.READ, handle, "QUERY_STARTD_ADS"),
        Command(QUERY_SCHEDD_ADS, Level.WRITE, handle, "QUERY_SCHEDD_ADS"),
    ]
    return CedarServer(commands, config, name="collector")


def token_folder(folder: Path, token: str) -> Path:
    folder.mkdir(mode=0o700)
    auth.write_token(folder / "pool", token)  # one token a file, 0600, as HTCondor wants
    return folder


async def test_tokens_authenticate_htcondor2_and_refusals(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="mockpool.cedar")
    read = auth.make_token(SECRET, Role.READ, "alice")
    tokens = token_folder(tmp_path / "tokens.d", read)
    now = time.time()
    another_key = idtokens.mint(  # our issuer and key id, another pool's key
        auth.pool_key("o" * 43)[0], subject="alice", issuer=DOMAIN, levels=["READ"], now=now
    )
    expired = auth.make_token(SECRET, Role.READ, "alice", now=now - 100, lifetime=50)
    submit = auth.make_token(SECRET, Role.SUBMIT, "bob")
    cases = [
        (another_key, "Startd"),
        (expired, "Startd"),
        (read, "Schedd"),  # READ token, WRITE command
        (submit, "Schedd"),
        (read, "Startd"),  # still serving after the refusals
    ]
    seen: list[tuple[int, Principal | None, str, bool]] = []
    srv = server(seen)
    port = await srv.start()
    try:
        result = await run_htcondor(
            QUERIES.format(port=port, cases=cases),
            tmp_path,
            CLIENT + f"SEC_TOKEN_DIRECTORY = {tokens}\n",
        )
    finally:
        await srv.stop()
    refused = "HTCondorException"
    slot = ["slot1@exec"]
    assert result == [slot, slot, refused, refused, refused, slot, slot]
    alice, bob = Principal(Role.READ, "alice"), Principal(Role.SUBMIT, "bob")
    assert seen == [
        (QUERY_STARTD_ADS, alice, "IDTOKENS", True),  # from tokens.d, encrypted
        (QUERY_STARTD_ADS, alice, "IDTOKENS", True),  # its session resumed, encrypted
        (QUERY_SCHEDD_ADS, bob, "IDTOKENS", True),
        (QUERY_STARTD_ADS, alice, "IDTOKENS", True),
    ]
    assert srv.security.counts == {"new": 3, "resumed": 1}  # refused ones keep no session
    # why each was refused: the client's check of our reply, the server's analyze_token,
    # the command's level against the token's scopes
    logged = caplog.text
    assert "failed: the client found our reply wrong (its token was signed with another" in logged
    assert re.search(r"failed: token expired 5\d seconds ago", logged)  # 50 s, and the run's
    assert "PERMISSION DENIED to alice@" in logged and "(level WRITE)" in logged


async def test_a_client_with_the_signing_key_file_mints_a_token_we_accept(
    tmp_path: Path,
) -> None:
    # HTCondor's fetchLogin: no token, but the server's TrustDomain is ours and we can
    # read the POOL key: generate_token signs one as condor@password, from our file.
    idtokens.write_signing_key(tmp_path / "POOL", SECRET)
    (tmp_path / "no-tokens").mkdir(mode=0o700)  # not ~/.condor/tokens.d: none to find
    seen: list[tuple[int, Principal | None, str, bool]] = []
    srv = server(seen)
    port = await srv.start()
    try:
        result = await run_htcondor(
            f'result = [str(a.get("Name")) for a in htcondor2.Collector("127.0.0.1:{port}")'
            ".query(htcondor2.AdType.Startd)]",
            tmp_path,
            CLIENT
            + f"SEC_TOKEN_POOL_SIGNING_KEY_FILE = {tmp_path / 'POOL'}\n"
            + f"TRUST_DOMAIN = {DOMAIN}\n"
            + f"SEC_TOKEN_DIRECTORY = {tmp_path / 'no-tokens'}\n",
        )
    finally:
        await srv.stop()
    assert result == ["slot1@exec"]
    assert seen == [(QUERY_STARTD_ADS, Principal(Role.ADMIN, "condor@password"), "IDTOKENS", True)]
