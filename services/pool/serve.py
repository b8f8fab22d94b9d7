"""A long-lived pool (``mockpool up``): runs in its own process until ``mockpool down``.

``python -m mockpool.pool.serve SPEC --dir DIR`` starts the pool, then writes into DIR
(a 0700 folder; every secret in it 0600):

- ``secret``: the pool secret, from which ``mockpool token create`` mints more tokens;
- ``tokens/admin``, ``tokens/read``, ``tokens/submit``: tokens for the least role each
  tool needs (the SUBMIT token names the user who ran ``up``);
- ``state/``: the daemons' state (the schedds' job queues, which hold claim ids);
- ``pool.json``: collector address, the master's address (``mockpool fault``), schedd
  names, time scale, epoch, this process' pid,
  and what ``down`` needs to clean up after a crash of this process: the processes the
  pool started (pid and start time), Ray's folder and the state folder;
- ``condor_config`` (with ``tokens.d/`` and ``.schedd_address``): with ``CONDOR_CONFIG``
  set to it, HTCondor's own clients (``htcondor2``, the ``htcondor`` tool) reach the pool;
- ``NegotiatorLog`` and ``events.jsonl``, appended as the pool runs;
- at the stop, ``out/`` (or the folder ``mockpool down --out`` names in ``down.json``):
  the output folder a ``mockpool run`` writes, for ``mockpool check`` and ``report``.

SIGTERM or SIGINT stops the pool cleanly, writes the output folder and removes
``pool.json``, the secret, the tokens and the state. ``--duration`` (pool seconds) stops it on its own. One daemon's death does
not stop it: the death is an event (``daemon_died``) and the other daemons run on, until
``mockpool fault restart NAME`` brings it back.
"""

from __future__ import annotations

import argparse
import contextlib
import getpass
import json
import os
import shutil
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

from ..auth import Role, write_token
from ..ownerfiles import private_dir
from . import processes
from .api import Pool
from .condor_config import CONFIG_FILE, SCHEDD_ADDRESS_FILE, TOKEN_DIR
from .report import event_line
from .spec import load_spec
from .specmodel import SpecError

POOL_FILE = "pool.json"
SECRET_FILE = "secret"
TOKENS_DIR = "tokens"
STATE_DIR = "state"
OUT_DIR = "out"  # the output folder written at the stop, unless down.json names another
DOWN_FILE = "down.json"  # what `mockpool down` asks of the stop: {"out": folder}
TOOL_ROLES = (Role.READ, Role.SUBMIT, Role.ADMIN)  # tokens/<role> written by `up`


def token_path(d: Path, role: Role | str) -> Path:
    """Where ``up`` puts its token for ``role`` (read, submit, admin)."""
    return d / TOKENS_DIR / Role(role).value


def remove_pool_files(d: Path, info: dict[str, Any]) -> None:
    """Remove what a pool left in ``d`` (and its Ray folder): state, secret, tokens,
    pool.json. Logs and events stay for the user to read."""
    for folder in (info.get("state_dir"), (info.get("ray") or {}).get("temp_dir")):
        if folder:
            shutil.rmtree(folder, ignore_errors=True)
    shutil.rmtree(d / TOKENS_DIR, ignore_errors=True)
    # its condor_config would name addresses no one listens on; tokens.d stays if the
    # user saved tokens there (valid again if the pool comes back with its secret_file)
    with contextlib.suppress(OSError):
        (d / TOKEN_DIR).rmdir()
    for name in (SECRET_FILE, POOL_FILE, CONFIG_FILE, SCHEDD_ADDRESS_FILE):
        (d / name).unlink(missing_ok=True)


def _write_tokens(d: Path, pool: Pool) -> None:
    write_token(d / SECRET_FILE, pool.secret)
    private_dir(d / TOKENS_DIR)
    user = getpass.getuser()
    for role in TOOL_ROLES:
        token = pool.token if role is Role.ADMIN else pool.make_token(role, user)
        write_token(token_path(d, role), token)


def default_dir() -> Path:
    """Where ``up`` keeps the running pool's files: $MOCKPOOL_HOME or ~/.mockpool."""
    return Path(os.environ.get("MOCKPOOL_HOME") or Path.home() / ".mockpool")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m mockpool.pool.serve")
    ap.add_argument("spec")
    ap.add_argument("--dir", type=Path, default=default_dir())
    ap.add_argument(
        "--duration", type=float, default=0.0, help="pool seconds to run (0: until stopped)"
    )
    ap.add_argument("--address", default="", help="a Ray cluster to run on")
    ap.add_argument("--metrics-port", type=int, help="serve Prometheus metrics here")
    ap.add_argument("--metrics-htcondor", action="store_true", help="and the htcondor_* names")
    ns = ap.parse_args(argv)
    try:
        spec = load_spec(ns.spec)
    except SpecError as e:
        print(f"mockpool: {e}", file=sys.stderr)
        return 2
    if ns.metrics_port is not None:
        spec.metrics_port = ns.metrics_port
    spec.metrics_htcondor = spec.metrics_htcondor or ns.metrics_htcondor
    d: Path = private_dir(ns.dir)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    state = d / STATE_DIR
    pool = Pool(spec, state_dir=state, address=ns.address)
    info: dict[str, Any] = {"state_dir": str(state)}
    try:
        pool.start()
    except Exception as e:
        print(f"mockpool: the pool did not start: {e}", file=sys.stderr)
        pool.stop()
        remove_pool_files(d, info)
        return 1
    # again: starting Ray put its own handlers in place, which end the process at once
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    try:
        _write_tokens(d, pool)
        # HTCondor's own clients find the pool through it (CONDOR_CONFIG)
        condor_config = str(pool.write_condor_config(d)) if pool.cedar_address() else ""
        ray_dir = pool.local_ray
        info |= {
            "pid": os.getpid(),
            "pid_start": processes.start_time(os.getpid()),  # the pid alone may be reused
            "collector": pool.collector_address,
            "schedds": spec.schedd_names,
            "time_scale": spec.time_scale,
            "epoch_wall": pool.epoch_wall,
            "log_base_wall": pool.log_base_wall,
            "metrics": pool.metrics_url,
            "condor_config": condor_config,
            "master": pool.serve_master(),  # mockpool fault / daemons talk to this process
            "spec": os.path.abspath(ns.spec),
            "ray": {"temp_dir": ray_dir.temp_dir, "session_dir": ray_dir.session_dir}
            if ray_dir
            else None,
            # What `down` ends if this process dies without stopping them.
            "processes": [r.to_json() for r in processes.record(os.getpid())],
        }
        tmp = d / (POOL_FILE + ".tmp")
        tmp.write_text(json.dumps(info, indent=2))
        tmp.replace(d / POOL_FILE)
        written = 0
        started = time.monotonic()
        seen: list[dict[str, Any]] = []  # every event of this run, for the output folder
        with (d / "events.jsonl").open("a") as events, (d / "NegotiatorLog").open("a") as neglog:
            while True:
                stopping = stop.wait(0.5) or bool(ns.duration and pool.now >= ns.duration)
                pool.drain()
                lines = pool.negotiator_log_lines
                neglog.write("".join(line + "\n" for line in lines[written:]))
                written = len(lines)
                new = pool.take_events()
                seen += new
                events.writelines(map(event_line, new))
                neglog.flush()
                events.flush()
                if stopping:
                    break
        _write_output(pool, d, seen, time.monotonic() - started)
    finally:
        (d / POOL_FILE).unlink(missing_ok=True)
        (d / DOWN_FILE).unlink(missing_ok=True)
        pool.stop()
        remove_pool_files(d, info)
    return 0


def _write_output(pool: Pool, d: Path, events: list[dict[str, Any]], real: float) -> None:
    """The output folder of a run (events, NegotiatorLog, ads, summary, series, metrics)
    for the pool as it stands: where ``down.json`` says, else ``DIR/out``. A failure is
    reported and the pool still stops."""
    out = d / OUT_DIR
    try:
        asked = json.loads((d / DOWN_FILE).read_text())
        out = Path(asked["out"])
    except FileNotFoundError:
        pass
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(
            f"mockpool: {d / DOWN_FILE}: not a down request ({e}); writing {out}", file=sys.stderr
        )
    try:
        pool.collect(out, real_seconds=real, events=events)
    except Exception as e:  # the stop must go on: the pool's actors are still to end
        print(f"mockpool: could not write the output folder {out}: {e}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
