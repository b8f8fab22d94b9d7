"""Owner-only folders and files: the pool's secret, tokens, job queues and state.

Whatever holds a secret (the pool secret, tokens, claim ids in a job queue) lives in a
folder only its owner may enter (0700) and in files only its owner may read (0600),
created that way rather than narrowed afterwards.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

__all__ = ["private_dir", "private_file"]


def private_dir(path: str | os.PathLike[str]) -> Path:
    """Make ``path`` (and any missing parents) a folder only its owner may enter, 0700.

    Folders created here are 0700 from the start (no window with wider modes); an existing
    folder of ours with wider modes is narrowed to 0700, never widened.
    """
    path = Path(path)
    missing: list[Path] = []
    p = path
    while not p.exists():
        missing.append(p)
        p = p.parent
    for d in reversed(missing):
        with contextlib.suppress(FileExistsError):  # another process made it meanwhile
            d.mkdir(mode=0o700)
        os.chmod(d, 0o700)  # mkdir's mode is cut by the umask: exactly 0700
    if stat.S_IMODE(path.stat().st_mode) & 0o077:
        os.chmod(path, 0o700)
    return path


def private_file(path: str | os.PathLike[str]) -> Path:
    """Create ``path`` empty and 0600 if it does not exist (so that a program that opens it
    later, as SQLite does, finds it owner-only); narrow an existing file to 0600."""
    path = Path(path)
    fd = os.open(path, os.O_CREAT | os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        if stat.S_IMODE(os.fstat(fd).st_mode) != 0o600:
            os.fchmod(fd, 0o600)
    finally:
        os.close(fd)
    return path
