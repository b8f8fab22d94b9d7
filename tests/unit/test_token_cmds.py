"""`mockpool token create`: minted from the pool secret; owner-only output."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from mockpool import auth
from mockpool.auth import Principal, Role
from mockpool.cedar import idtokens
from mockpool.cli.main import main


@pytest.fixture
def pool_dir(tmp_path: Path) -> tuple[Path, str]:
    secret = auth.make_secret()
    auth.write_token(tmp_path / "secret", secret)
    return tmp_path, secret


def test_creates_a_submit_token_for_a_user_owner_only(
    pool_dir: tuple[Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    d, secret = pool_dir
    out = tmp_path / "alice.token"
    rc = main(
        [
            "token",
            "create",
            "--role",
            "submit",
            "--user",
            "alice",
            "--pool",
            str(d),
            "--out",
            str(out),
        ]
    )
    assert rc == 0
    assert "Wrote a submit token for alice" in capsys.readouterr().out
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o600
    assert auth.verify_token(secret, auth.read_token(out)) == Principal(Role.SUBMIT, "alice")


def test_prints_the_token_without_out(
    pool_dir: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    d, secret = pool_dir
    assert main(["token", "create", "--role", "read", "--pool", str(d)]) == 0
    assert auth.verify_token(secret, capsys.readouterr().out.strip()) == Principal(Role.READ)


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--role", "submit"], 2, "give --user NAME"),
        (["--role", "submit", "--user", "al:ice"], 2, "--user: identity 'al:ice'"),
    ],
)
def test_bad_requests_are_refused(
    pool_dir: tuple[Path, str],
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    code: int,
    message: str,
) -> None:
    assert main(["token", "create", *args, "--pool", str(pool_dir[0])]) == code
    assert message in capsys.readouterr().err


def test_daemon_roles_are_not_for_people(pool_dir: tuple[Path, str]) -> None:
    with pytest.raises(SystemExit):
        main(["token", "create", "--role", "daemon", "--pool", str(pool_dir[0])])


def test_needs_the_pool_secret(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["token", "create", "--role", "read", "--pool", str(tmp_path)]) == 1
    assert "no pool secret" in capsys.readouterr().err
    (tmp_path / "secret").write_text(auth.make_secret())
    os.chmod(tmp_path / "secret", 0o644)  # exposed: no longer a secret, refused
    assert main(["token", "create", "--role", "read", "--pool", str(tmp_path)]) == 1
    assert "only the pool's owner may mint tokens" in capsys.readouterr().err


def test_token_is_an_idtoken_with_a_lifetime(
    pool_dir: tuple[Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    d, secret = pool_dir
    out = tmp_path / "tokens.d" / "alice"
    out.parent.mkdir()
    args = ["token", "create", "--role", "submit", "--user", "alice", "--pool", str(d)]
    assert main([*args, "--lifetime", "3600", "--out", str(out)]) == 0
    # one token on one line, as HTCondor's clients read each file of SEC_TOKEN_DIRECTORY
    lines = out.read_text().splitlines()
    assert len(lines) == 1
    tok = idtokens.decode(lines[0])
    assert tok.expires_at == tok.issued_at + 3600  # type: ignore[operator]
    assert (tok.subject, tok.scopes) == ("alice", ("condor:/READ", "condor:/WRITE"))
    assert tok.issuer == auth.pool_key(secret)[1] and tok.key_id == "POOL"
    assert main([*args, "--lifetime", "0"]) == 2
    assert "--lifetime must be a positive number" in capsys.readouterr().err
