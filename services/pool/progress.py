"""A live pool's progress file in its state folder: how far it ran, so that a pool started
again on the folder goes on from there (and a virtual pool refuses a used folder)."""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["PROGRESS_FILE", "load_progress", "save_progress"]

PROGRESS_FILE = "pool-progress.json"  # in the state folder: where a resumed pool goes on


def load_progress(state_dir: Path, *, virtual: bool) -> tuple[float, int, float]:
    """(pool time, timeline items fed, date of pool time 0) of the pool that last ran on
    ``state_dir`` (a live pool resumes there), else (0, 0, 0). A virtual pool's time starts
    at 0: on a folder a pool ran in before it is refused (its queues and accountant would be
    read at times before they were written, and its workload queued again)."""
    path = state_dir / PROGRESS_FILE
    if virtual:
        used = sorted(
            str(p.relative_to(state_dir))
            for p in (path, *state_dir.glob("schedd/*.sqlite"))
            if p.exists()
        )
        if used:
            raise ValueError(
                f"{state_dir}: a pool ran on this state folder before ({used[0]}); "
                "a virtual pool starts at pool time 0 and cannot go on from it: give it "
                "an empty folder (a live pool resumes one)"
            )
        return 0.0, 0, 0.0
    if not path.exists():
        return 0.0, 0, 0.0
    try:
        data = json.loads(path.read_text())
        return float(data["now"]), int(data["fed"]), float(data.get("base", 0))
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ValueError(f"{path}: not a pool's progress file ({e})") from None


def save_progress(state_dir: Path, now: float, fed: int, base: float) -> None:
    """Write the progress file atomically (a crash leaves the old one or the new one)."""
    path = state_dir / PROGRESS_FILE
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"now": round(now, 3), "fed": fed, "base": base}))
    tmp.replace(path)
