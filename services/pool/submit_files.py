"""A user's submit files, read on the user's side (condor_submit's half of a submit).

The schedd never opens a path a user names: the submitting tool (``mockpool submit``,
:meth:`PoolClient.submit`, a spec's ``[[submit]]`` workload) reads the submit description
and the item files of its ``queue ... from <file>`` statements here, and sends their text.
Only regular files are read (a FIFO or a device would block or never end), at most
``MAX_FILE_BYTES``, and they must be UTF-8 text; every problem is a ``SubmitFileError``
naming the file.
"""

from __future__ import annotations

import glob
import os
import stat
from collections.abc import Mapping
from pathlib import Path

from ..schedd.submit import SubmitInputs, submit_inputs

MAX_FILE_BYTES = 64 * 2**20  # an item list or description larger than this is a mistake

__all__ = ["MAX_FILE_BYTES", "SubmitFileError", "read_submit_inputs", "read_user_file"]


class SubmitFileError(ValueError):
    """A submit or item file that cannot be read; the message names it."""


def read_user_file(path: str | os.PathLike[str]) -> str:
    """The UTF-8 text of a regular file. Opened without blocking, so a FIFO is refused
    rather than waited on; a device, a folder or a file too large is refused too."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise SubmitFileError(f"cannot read {os.fspath(path)}: {e.strerror}") from None
    except ValueError as e:  # a NUL in the name
        raise SubmitFileError(f"cannot read {os.fspath(path)!r}: {e}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise SubmitFileError(f"cannot read {os.fspath(path)}: not a regular file")
    with os.fdopen(fd, "rb") as f:
        data = f.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise SubmitFileError(
            f"cannot read {os.fspath(path)}: larger than {MAX_FILE_BYTES >> 20} MiB"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise SubmitFileError(
            f"{os.fspath(path)}:{line}: not UTF-8 text (byte 0x{data[e.start]:02x} at offset "
            f"{e.start})"
        ) from None


def read_submit_inputs(
    description: str,
    source: str = "<submit>",
    *,
    base_dir: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> SubmitInputs:
    """The item files and ``queue ... matching`` names (relative paths from ``base_dir``,
    default the current folder) and
    ``$ENV`` values (from ``environ``, default this process's) a description names, and
    that folder (``iwd``: where the jobs' Iwd and relative log paths are).
    SubmitError (from the description's own parse) names the line."""
    base = Path(base_dir) if base_dir is not None else None

    def read(path: str) -> str:
        full = Path(path) if base is None or os.path.isabs(path) else base / path
        return read_user_file(full)

    def matching(pattern: str, mode: str) -> list[str]:
        root = base if base is not None and not os.path.isabs(pattern) else None
        hits = sorted(glob.glob(pattern, root_dir=root))
        # a folder is marked with a trailing slash, as glob(3)'s GLOB_MARK does
        full = [(h, ((root / h) if root is not None else Path(h)).is_dir()) for h in hits]
        marked = [(h.rstrip("/") + "/" if d else h, d) for h, d in full]
        if mode == "files":
            return [h for h, d in marked if not d]
        if mode == "dirs":
            return [h for h, d in marked if d]
        return [h for h, _ in marked]

    inputs = submit_inputs(
        description,
        source,
        read_item_file=read,
        environ=os.environ if environ is None else environ,
        glob=matching,
    )
    # condor_submit's Iwd: the folder it ran in (here the one relative paths are from)
    inputs.iwd = os.path.abspath(base if base is not None else os.getcwd())
    return inputs
