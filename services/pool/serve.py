"""A long-lived pool (``mockpool up``): runs in its own process until ``mockpool down``.

``python -m mockpool.pool.serve SPEC --dir DIR`` starts the pool, then writes into DIR:

- ``token``: an ADMIN token for the pool (owner-only permissions), which the CLI sends;
- ``pool.json``: collector address, schedd names, time scale, epoch, this process' pid;
- ``NegotiatorLog`` and ``events.jsonl``, appended as the pool runs.

SIGTERM or SIGINT stops the pool cleanly and removes ``pool.json``. ``--duration`` (pool
seconds) stops it on its own.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
from pathlib import Path

from ..auth import write_token
from .api import Pool
from .spec import SpecError, load_spec

POOL_FILE = "pool.json"


def default_dir() -> Path:
    """Where ``up`` keeps the running pool's files: $MOCKPOOL_HOME or ~/.mockpool."""
    return Path(os.environ.get("MOCKPOOL_HOME") or Path.home() / ".mockpool")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m mockpool.pool.serve")
    ap.add_argument("spec")
    ap.add_argument("--dir", type=Path, default=default_dir())
    ap.add_argument("--duration", type=float, default=0.0, help="pool seconds to run (0: until stopped)")
    ns = ap.parse_args(argv)
    try:
        spec = load_spec(ns.spec)
    except SpecError as e:
        print(f"mockpool: {e}", file=sys.stderr)
        return 2
    d: Path = ns.dir
    d.mkdir(parents=True, exist_ok=True, mode=0o700)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    pool = Pool(spec)
    try:
        pool.start()
    except Exception as e:
        print(f"mockpool: the pool did not start: {e}", file=sys.stderr)
        pool.stop()
        return 1
    try:
        write_token(d / "token", pool.token)
        info = {
            "pid": os.getpid(),
            "collector": pool.collector_address,
            "schedds": spec.schedd_names,
            "time_scale": spec.time_scale,
            "epoch_wall": pool.epoch_wall,
            "log_base_wall": pool.log_base_wall,
            "spec": os.path.abspath(ns.spec),
        }
        tmp = d / (POOL_FILE + ".tmp")
        tmp.write_text(json.dumps(info, indent=2))
        tmp.replace(d / POOL_FILE)
        written = 0
        with (d / "events.jsonl").open("a") as events, (d / "NegotiatorLog").open("a") as neglog:
            while not stop.wait(0.5):
                pool.drain()
                lines = pool.negotiator_log_lines
                neglog.write("".join(line + "\n" for line in lines[written:]))
                written = len(lines)
                new = pool.take_events()
                events.writelines(json.dumps(e, separators=(",", ":")) + "\n" for e in new)
                neglog.flush()
                events.flush()
                if ns.duration and pool.now >= ns.duration:
                    break
    finally:
        (d / POOL_FILE).unlink(missing_ok=True)
        pool.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
