"""The pool secret a spec names: from a file (a Kubernetes secret volume too) or the
environment.

``[pool] secret_file`` may be a plain 0600 file (``mockpool token secret --out F``) or a
file of a mounted Kubernetes secret volume, which is a chain of symlinks that the kubelet
swaps atomically on update::

    /etc/mockpool/secret -> ..data/secret
    /etc/mockpool/..data -> ..2026_11_28_08_00_00.123456789
    /etc/mockpool/..2026_11_28_08_00_00.123456789/secret   (the file, root:fsGroup 0440)

So symlinks are followed, one hop at a time, but only while they stay inside the folder
the named file is in (the volume), and every entry on the way must belong to this
process's user or to root, as ssh checks a key's path: whoever else could write one of
them could swap the secret. The file itself must be owned by this user and readable by
nobody else (0600, 0400), or owned by root and readable by a group this process is in
(the pod's ``fsGroup``: 0440 or 0640); never group-writable, never readable by others.

Without ``secret_file``, ``MOCKPOOL_SECRET_FILE`` names such a file and
``MOCKPOOL_SECRET`` holds the secret itself (``env: valueFrom: secretKeyRef``).

The files mockpool makes itself (the ``up`` pool's secret and tokens) are still read by
``auth.read_token``, which follows no symlink and accepts 0600 only.
"""

from __future__ import annotations

import os
import stat
from collections import deque
from collections.abc import Mapping
from pathlib import Path

MIN_SECRET_CHARS = 32  # a pool secret's least length (the token key's entropy)


__all__ = ["ENV_SECRET", "ENV_SECRET_FILE", "SecretError", "pool_secret", "read_secret_file"]

ENV_SECRET = "MOCKPOOL_SECRET"
ENV_SECRET_FILE = "MOCKPOOL_SECRET_FILE"
MAX_HOPS = 40  # as Linux's own limit on symlinks in one lookup (ELOOP)


class SecretError(PermissionError):
    """The secret cannot be trusted or read; the message names the path and why."""


def check_entry(path: str, st: os.stat_result, uid: int, gids: frozenset[int]) -> None:
    """Refuse an entry on the way to the secret that someone else could change: it must
    belong to ``uid`` or root; a folder writable by others must be sticky (as /tmp and a
    secret volume's tmpfs are: nobody may swap an entry they do not own)."""
    if st.st_uid not in (uid, 0):
        raise SecretError(
            f"{path} belongs to uid {st.st_uid}, neither this process's user ({uid}) nor "
            "root: its owner could swap the secret"
        )
    mode = stat.S_IMODE(st.st_mode)
    if stat.S_ISDIR(st.st_mode) and mode & 0o022 and not mode & stat.S_ISVTX:
        raise SecretError(f"{path} is a folder others may write to (mode {mode:#o}, not sticky)")


def check_file(path: str, st: os.stat_result, uid: int, gids: frozenset[int]) -> None:
    """The secret file itself: a regular file only its owner may read, or (a Kubernetes
    secret with ``fsGroup``) a root-owned file that a group of this process may read."""
    check_entry(path, st, uid, gids)
    if not stat.S_ISREG(st.st_mode):
        raise SecretError(f"{path} is not a regular file")
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o007:
        raise SecretError(f"{path} has mode {mode:#o}: others may use it (chmod 600)")
    if mode & 0o020:
        raise SecretError(f"{path} has mode {mode:#o}: its group may write it (chmod 600)")
    if mode & 0o040 and not (st.st_uid == 0 and st.st_gid in gids):
        raise SecretError(
            f"{path} has mode {mode:#o}: its group may read it; only a root-owned file "
            "whose group is this process's (a Kubernetes fsGroup) may be group-readable "
            "(chmod 600)"
        )


def resolve_in_volume(path: str | os.PathLike[str], uid: int, gids: frozenset[int]) -> Path:
    """Follow ``path``'s symlinks one hop at a time, each entry checked, refusing any that
    leaves the folder ``path`` is in. Returns the file's real path (checked too)."""
    named = Path(os.path.abspath(path))
    root = Path(os.path.realpath(named.parent))
    check_entry(str(root), os.lstat(root), uid, gids)
    todo: deque[str] = deque([named.name])
    done: list[str] = []  # resolved components below root
    hops = 0
    while todo:
        part = todo.popleft()
        if part in ("", "."):
            continue
        if part == "..":
            if not done:
                raise SecretError(f"{named}: a symlink on the way leads out of {root}")
            done.pop()
            continue
        here = root.joinpath(*done, part)
        st = os.lstat(here)
        check_entry(str(here), st, uid, gids)
        if stat.S_ISLNK(st.st_mode):
            hops += 1
            if hops > MAX_HOPS:
                raise SecretError(f"{named}: more than {MAX_HOPS} symlinks (a loop?)")
            target = os.readlink(here)
            if os.path.isabs(target):
                inside = os.path.normpath(target)
                if os.path.commonpath([inside, str(root)]) != str(root):
                    raise SecretError(f"{named}: symlink {here} -> {target} leads out of {root}")
                done = []
                target = os.path.relpath(inside, root)
            todo.extendleft(reversed(target.split("/")))
            continue
        done.append(part)
    return root.joinpath(*done)


def read_secret_file(path: str | os.PathLike[str]) -> str:
    """The secret in ``path`` (a plain file or a secret volume's), after the checks above."""
    uid = os.geteuid()
    gids = frozenset([os.getegid(), *os.getgroups()])
    real = resolve_in_volume(path, uid, gids)
    st = os.lstat(real)
    check_file(
        f"{path} ({real})" if str(real) != os.path.abspath(path) else str(path), st, uid, gids
    )
    fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, encoding="ascii") as f:
        now = os.fstat(f.fileno())
        if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
            raise SecretError(f"{path}: the file changed while it was checked; try again")
        secret = f.read().strip()
    return _checked(secret, str(path))


def _checked(secret: str, where: str) -> str:
    if not secret:
        raise ValueError(f"{where} is empty")
    if len(secret) < MIN_SECRET_CHARS or any(c.isspace() for c in secret):
        raise ValueError(
            f"{where}: not a pool secret ({MIN_SECRET_CHARS}+ characters, no spaces; "
            "make one with `mockpool token secret --out FILE`)"
        )
    return secret


def pool_secret(secret_file: str, env: Mapping[str, str] | None = None) -> str | None:
    """The spec's ``secret_file``, else ``$MOCKPOOL_SECRET_FILE``, else ``$MOCKPOOL_SECRET``;
    None when none is given (a loopback pool then makes a secret of its own)."""
    env = os.environ if env is None else env
    if secret_file:
        return read_secret_file(secret_file)
    if env.get(ENV_SECRET_FILE):
        return read_secret_file(env[ENV_SECRET_FILE])
    if env.get(ENV_SECRET):
        return _checked(env[ENV_SECRET].strip(), f"${ENV_SECRET}")
    return None
