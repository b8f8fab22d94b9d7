"""Appending to users' job event logs: the schedd shell's only writes to paths a user
names (``log =``).

HTCondor's schedd writes a user log as the job's owner, so it can write only where the
owner can. A mock pool's daemons run as whoever started the pool, so what they append
to is narrowed instead: an absolute path (a relative one is relative to a folder the
schedd does not know), a regular file reached without a symbolic link at its end, and a
file that is new, empty or already a user log (its text starts as an event does), never
another of the pool owner's files. A refusal or an I/O error is returned, never raised:
a log that cannot be written must not stop the schedd.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Mapping

__all__ = ["append_user_logs"]

_EVENT_START = re.compile(rb"\d{3} \(\d+\.\d+\.\d+\) ")  # "000 (012.000.000) "
_FLAGS = os.O_RDWR | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
_FLAGS |= getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)


def _append(path: str, text: str) -> None:
    if not os.path.isabs(path):
        raise ValueError("not an absolute path (relative to a folder the schedd does not know)")
    try:
        fd = os.open(path, _FLAGS, 0o644)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise ValueError("a symbolic link: not followed") from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError("not a regular file")
        if info.st_size:
            head = os.pread(fd, 32, 0)
            if not _EVENT_START.match(head):
                raise ValueError("not a job event log: not appended to")
        data = text.encode("utf-8", "replace")
        while data:
            written = os.write(fd, data)
            data = data[written:]
    finally:
        os.close(fd)


def append_user_logs(texts: Mapping[str, str]) -> dict[str, str]:
    """Append each path's text; the paths that could not be written, with why."""
    errors: dict[str, str] = {}
    for path, text in texts.items():
        try:
            _append(path, text)
        except OSError as e:
            errors[path] = e.strerror or str(e)
        except ValueError as e:  # a NUL in the name, or a refusal above
            errors[path] = str(e)
    return errors
