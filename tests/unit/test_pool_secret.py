"""The pool secret from a Kubernetes secret volume (its ``..data`` symlink chain, built
here in tmp_path as the kubelet lays it out), from the environment, and the attacks the
checks are for: a symlink leading out of the volume, files or folders others may write,
an entry another user owns. mockpool's own token files stay strict (no symlink, 0600)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from mockpool.auth import make_secret, read_token, write_token
from mockpool.pool.spec import parse_spec
from mockpool.pool.specmodel import SpecError
from mockpool.poolsecret import (
    SecretError,
    check_file,
    pool_secret,
    read_secret_file,
)

ROOT = os.geteuid() == 0
# a kubelet's file: root:fsGroup 0440; a non-root test run can only make its own, 0400
FILE_MODE = 0o440 if ROOT else 0o400
STAMP = "..2026_11_28_08_00_00.123456789"


def _volume(tmp_path: Path, secret: str, *, mode: int = FILE_MODE) -> Path:
    """The layout of a mounted secret volume with one key, ``secret``."""
    vol = tmp_path / "etc-mockpool"
    (vol / STAMP).mkdir(parents=True)
    vol.chmod(0o1777)  # a secret volume is a tmpfs, world-writable and sticky
    (vol / STAMP / "secret").write_text(secret)
    (vol / STAMP / "secret").chmod(mode)
    (vol / "..data").symlink_to(STAMP)
    (vol / "secret").symlink_to("..data/secret")
    return vol


def _spec(secret_file: Path | str) -> str:
    return f'[pool]\nhost = "routable"\nsecret_file = "{secret_file}"\n'


def test_a_secret_volume_file_is_read_through_its_symlinks(tmp_path: Path) -> None:
    secret = make_secret()
    vol = _volume(tmp_path, secret + "\n")
    assert read_secret_file(vol / "secret") == secret
    # the spec that failed with "[Errno 40] Too many levels of symbolic links"
    spec = parse_spec(_spec(vol / "secret"), "<t>")
    assert spec.secret_file == str(vol / "secret")
    assert pool_secret(spec.secret_file, env={}) == secret


def test_an_updated_secret_volume_is_read_anew(tmp_path: Path) -> None:
    vol = _volume(tmp_path, make_secret())
    new = make_secret()
    (vol / "..2026_11_28_09_00_00.1").mkdir()
    (vol / "..2026_11_28_09_00_00.1" / "secret").write_text(new)
    (vol / "..2026_11_28_09_00_00.1" / "secret").chmod(FILE_MODE)
    (vol / "..data_tmp").symlink_to("..2026_11_28_09_00_00.1")
    os.replace(vol / "..data_tmp", vol / "..data")  # the kubelet's atomic swap
    assert read_secret_file(vol / "secret") == new


def test_mockpools_own_token_files_still_refuse_symlinks(tmp_path: Path) -> None:
    vol = _volume(tmp_path, make_secret(), mode=0o600)
    with pytest.raises(OSError, match="symbolic links"):
        read_token(vol / "secret")
    plain = tmp_path / "token"
    write_token(plain, make_secret())
    plain.chmod(0o640)
    with pytest.raises(PermissionError, match="chmod 600"):
        read_token(plain)


@pytest.mark.parametrize(
    "target",
    ["../outside/secret", "..data/../../outside/secret", "{outside}/secret"],
)
def test_a_symlink_leading_out_of_the_volume_is_refused(tmp_path: Path, target: str) -> None:
    vol = _volume(tmp_path, make_secret())
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text(make_secret())
    (outside / "secret").chmod(0o600)
    (vol / "secret").unlink()
    (vol / "secret").symlink_to(target.format(outside=outside))
    with pytest.raises(SecretError, match="leads out of"):
        read_secret_file(vol / "secret")
    with pytest.raises(SpecError, match=r"secret_file: .*leads out of"):
        parse_spec(_spec(vol / "secret"), "<t>")


def test_a_data_link_swapped_out_of_the_volume_is_refused(tmp_path: Path) -> None:
    vol = _volume(tmp_path, make_secret())
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "secret").write_text(make_secret())
    (vol / "..data").unlink()
    (vol / "..data").symlink_to(elsewhere)
    with pytest.raises(SecretError, match=r"\.\.data -> .*elsewhere leads out of"):
        read_secret_file(vol / "secret")


def test_a_symlink_loop_is_refused(tmp_path: Path) -> None:
    vol = _volume(tmp_path, make_secret())
    (vol / "secret").unlink()
    (vol / "secret").symlink_to("loop")
    (vol / "loop").symlink_to("secret")
    with pytest.raises(SecretError, match="more than 40 symlinks"):
        read_secret_file(vol / "secret")


@pytest.mark.parametrize("mode", [0o666, 0o604, 0o620, 0o644])
def test_a_secret_others_may_read_or_anyone_write_is_refused(tmp_path: Path, mode: int) -> None:
    vol = _volume(tmp_path, make_secret(), mode=mode)
    with pytest.raises(SecretError, match=f"mode {mode:#o}"):
        read_secret_file(vol / "secret")


def test_a_folder_others_may_write_on_the_way_is_refused(tmp_path: Path) -> None:
    vol = _volume(tmp_path, make_secret())
    (vol / STAMP).chmod(0o777)  # not sticky: anyone could swap the file inside
    with pytest.raises(SecretError, match=r"folder others may write to \(mode 0o777"):
        read_secret_file(vol / "secret")


@pytest.mark.skipif(not ROOT, reason="giving a file to another user needs root")
def test_an_entry_another_user_owns_is_refused(tmp_path: Path) -> None:
    vol = _volume(tmp_path, make_secret())
    os.lchown(vol / "..data", 12345, -1)  # a stranger's symlink could point anywhere
    with pytest.raises(SecretError, match=r"\.\.data belongs to uid 12345"):
        read_secret_file(vol / "secret")
    os.lchown(vol / "..data", 0, -1)
    os.chown(vol / STAMP / "secret", 12345, 0)
    with pytest.raises(SecretError, match="belongs to uid 12345"):
        read_secret_file(vol / "secret")


def _st(mode: int, uid: int, gid: int) -> os.stat_result:
    return os.stat_result((stat.S_IFREG | mode, 1, 1, 1, uid, gid, 44, 0, 0, 0))


@pytest.mark.parametrize(
    ("mode", "owner", "group", "problem"),
    [
        (0o440, 0, 1000, None),  # root:fsGroup, a non-root pod in fsGroup 1000
        (0o640, 0, 1000, None),  # defaultMode 0600 with fsGroup
        (0o400, 1000, 1000, None),  # the process's own file
        (0o600, 1000, 1000, None),
        (0o440, 0, 2000, "its group may read it"),  # a group this process is not in
        (0o640, 1000, 1000, "its group may read it"),  # our own file: owner-only, as today
        (0o460, 0, 1000, "its group may write it"),
        (0o444, 0, 1000, "others may use it"),
        (0o400, 1001, 1000, "belongs to uid 1001"),
    ],
)
def test_ownership_decides_who_may_read_the_secret(
    mode: int, owner: int, group: int, problem: str | None
) -> None:
    """A non-root pod: uid 1000, fsGroup 1000 (the kubelet chowns the volume's files to
    root:fsGroup and adds group read)."""
    st = _st(mode, owner, group)
    if problem is None:
        check_file("secret", st, 1000, frozenset({1000}))
    else:
        with pytest.raises(SecretError, match=problem):
            check_file("secret", st, 1000, frozenset({1000}))


def test_the_secret_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = make_secret()
    assert pool_secret("", env={"MOCKPOOL_SECRET": secret}) == secret
    vol = _volume(tmp_path, secret)
    assert pool_secret("", env={"MOCKPOOL_SECRET_FILE": str(vol / "secret")}) == secret
    assert pool_secret("", env={}) is None
    with pytest.raises(ValueError, match=r"\$MOCKPOOL_SECRET: not a pool secret"):
        pool_secret("", env={"MOCKPOOL_SECRET": "short"})
    # a pool beyond loopback may take its secret from the environment instead of a file
    monkeypatch.setenv("MOCKPOOL_SECRET", secret)
    assert parse_spec('[pool]\nhost = "routable"\n', "<t>").host == "routable"
    monkeypatch.setenv("MOCKPOOL_SECRET", "short")
    with pytest.raises(SpecError, match=r"<t>:2: \[pool\] host: .*not a pool secret"):
        parse_spec('[pool]\nhost = "routable"\n', "<t>")
