"""condor_submit's command-line additions to a submit description: ``-a``/``-append``,
``-batch-name`` and ``-queue``, and the ``-terse`` summary line."""

from __future__ import annotations

import re
from collections.abc import Sequence

# A queue statement, as submit.py's parser recognises one ("queue", not "queue = x").
_QUEUE = re.compile(r"\s*queue(?![\w.])(?!\s*=)", re.IGNORECASE)


class SubmitFlagError(ValueError):
    pass


def apply_submit_flags(
    text: str,
    *,
    append: Sequence[str] = (),
    batch_name: str | None = None,
    queue: str | None = None,
) -> str:
    """The description condor_submit parses: the ``-append`` lines and ``-batch-name``
    (as ``batch_name = NAME``) in argument order, just before the first queue statement
    (condor_submit parses them after the lines up to it); ``-queue ARGS`` supplies the
    queue statement and is refused when the file has one, with condor_submit's words."""
    extra = list(append)
    if batch_name is not None:
        extra.append(f"batch_name = {batch_name}")
    lines = text.splitlines()
    at = next((i for i, line in enumerate(lines) if _QUEUE.match(line)), None)
    if queue is not None:
        if at is not None:
            raise SubmitFlagError("-queue argument conflicts with queue statement in submit file")
        return "\n".join([*lines, *extra, f"queue {queue}"]) + "\n"
    if at is None:
        return "\n".join([*lines, *extra]) + "\n"
    return "\n".join([*lines[:at], *extra, *lines[at:]]) + "\n"


def terse_line(cluster: int, n: int) -> str:
    """condor_submit -terse: the first and last job ids, "4.0 - 4.19"."""
    return f"{cluster}.0 - {cluster}.{max(n - 1, 0)}"
