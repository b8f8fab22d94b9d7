"""mockpool.pool.localray without starting Ray: Ray's token file is made owner-only."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from mockpool.pool import localray


def mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture
def token_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("RAY_AUTH_TOKEN", "RAY_AUTH_MODE"):
        monkeypatch.delenv(name, raising=False)
    path = tmp_path / "dot-ray" / "auth_token"
    monkeypatch.setenv("RAY_AUTH_TOKEN_PATH", str(path))
    return path


def test_a_missing_token_is_created_owner_only(token_path: Path) -> None:
    old = os.umask(0)  # even with the most permissive umask
    try:
        localray.private_ray_token()
    finally:
        os.umask(old)
    assert mode(token_path) == 0o600 and mode(token_path.parent) == 0o700
    text = token_path.read_text()
    assert len(text) == 64 and int(text, 16) >= 0  # Ray's format: 256 bits in hex


def test_an_existing_token_is_kept_and_narrowed(token_path: Path) -> None:
    token_path.parent.mkdir()
    token_path.write_text("ab" * 32)
    os.chmod(token_path, 0o644)  # as Ray writes it under a 022 umask
    localray.private_ray_token()
    assert mode(token_path) == 0o600 and token_path.read_text() == "ab" * 32


def test_no_file_when_the_token_is_in_the_environment_or_auth_is_off(
    token_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    assert localray.ray_auth_token_path() is None
    monkeypatch.delenv("RAY_AUTH_MODE")
    monkeypatch.setenv("RAY_AUTH_TOKEN", "x" * 64)
    localray.private_ray_token()
    assert not token_path.exists()
