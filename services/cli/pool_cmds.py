"""Pool commands: `run`, `up`, `down`, and the HTCondor tools that talk to an `up` pool
(`submit`, `q`, `analyze`, `status`, `rm`, `hold`, `release`, `history`) over gRPC, each
with the least role it needs: q, analyze, status and history a READ token; submit, rm, hold
and release a SUBMIT token that acts as its user (``--token FILE`` presents another one)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import getpass
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import grpc.aio

from .. import rpc
from ..auth import Role, read_token
from ..claimid import sinful
from ..clock import ScaledClock
from ..ownerfiles import private_dir
from ..pool import processes
from ..pool.client import PoolClient, PoolError
from ..pool.cluster import ClusterError, probe_address
from ..pool.faultkinds import FAULT_PARAMS, kinds_text, param_help
from ..pool.serve import (
    DOWN_FILE,
    OUT_DIR,
    POOL_FILE,
    default_dir,
    remove_pool_files,
    token_path,
)
from ..pool.spec import load_spec
from ..pool.specmodel import SpecError
from ..pool.submit_files import SubmitFileError, read_submit_inputs, read_user_file
from ..pool.virtual import CLOCKS, parse_dilation
from ..schedd.submit import SubmitError, SubmitInputs, parse_submit
from ..v1 import master_pb2, master_pb2_grpc
from . import analyze_layout, layouts
from .act_messages import act_lines
from .down_messages import daemon_down_message
from .run_cmds import cmd_check, cmd_report, cmd_run, cmd_sweep, fail

T = TypeVar("T")


def _dilation(text: str) -> float:
    try:
        return parse_dilation(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _port(text: str) -> int:
    """A --metrics-port: a TCP port number (0: off)."""
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"must be a port number 0..65535, got {text!r}")
    return port


def _metrics_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--metrics-port",
        type=_port,
        metavar="PORT",
        help="serve Prometheus metrics on the spec's host at PORT (overrides [pool] "
        "metrics_port; docs/metrics.md)",
    )
    p.add_argument(
        "--metrics-htcondor",
        action="store_true",
        help="the metrics also carry the htcondor_* names HTCondor exporters publish",
    )


# ------------------------------------------------------------------ up / down


def _pool_dir(ns: argparse.Namespace) -> Path:
    return Path(ns.pool) if getattr(ns, "pool", None) else default_dir()


def _pool_info(d: Path) -> dict[str, Any]:
    try:
        return json.loads((d / POOL_FILE).read_text())
    except FileNotFoundError:
        raise SystemExit(
            f"mockpool: no pool is up in {d} (start one with `mockpool up SPEC`)"
        ) from None


def _alive(pid: int) -> bool:
    """Is ``pid`` running? A zombie is not: an ``up`` of this same process leaves its
    pool process unreaped when it ends, and ``down`` must see it gone."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    with contextlib.suppress(ChildProcessError):  # not our child: as kill(0) said
        done, _status = os.waitpid(pid, os.WNOHANG)  # our child: reaped if it ended
        return done != pid
    return True


def cmd_up(ns: argparse.Namespace) -> int:
    d = _pool_dir(ns)
    try:
        load_spec(ns.spec)  # refuse a bad spec here, with its message, before forking
    except SpecError as e:
        return fail(str(e), 2)
    if (d / POOL_FILE).exists():
        info = json.loads((d / POOL_FILE).read_text())
        if _holder_alive(info):
            return fail(f"a pool is already up in {d} (pid {info['pid']}); `mockpool down` first")
        _clean_up_after(d, info)  # a pool whose holder died: its leftovers go first
    private_dir(d)
    log = (d / "serve.log").open("w")
    if ns.address:
        try:
            probe_address(ns.address)  # fail in seconds, here, not in the background
        except ClusterError as e:
            return fail(str(e), 1)
    cmd = [sys.executable, "-m", "mockpool.pool.serve", ns.spec, "--dir", str(d)]
    if ns.address:
        cmd += ["--address", ns.address]
    if ns.duration:
        cmd += ["--duration", str(ns.duration)]
    if ns.metrics_port is not None:
        cmd += ["--metrics-port", str(ns.metrics_port)]
    if ns.metrics_htcondor:
        cmd += ["--metrics-htcondor"]
    proc = subprocess.Popen(
        cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
    )
    deadline = time.monotonic() + ns.timeout
    while not (d / POOL_FILE).exists():
        if proc.poll() is not None:
            return fail(
                f"the pool exited while starting; see {d / 'serve.log'}:\n"
                + (d / "serve.log").read_text()[-2000:]
            )
        if time.monotonic() > deadline:
            proc.terminate()
            return fail(f"the pool did not start within {ns.timeout:g}s; see {d / 'serve.log'}")
        time.sleep(0.2)
    info = _pool_info(d)
    print(
        f"Pool up (pid {info['pid']}): collector at {info['collector']}, schedds {', '.join(info['schedds'])}"
    )
    if info.get("metrics"):
        print(f"Prometheus metrics at {info['metrics']}")
    if info.get("condor_config"):
        print("HTCondor's own clients (htcondor2, the htcondor tool) reach it with:")
        print(f"export CONDOR_CONFIG={info['condor_config']}")
    print(f"Pool files in {d}; stop it with `mockpool down`")
    return 0


def _holder(info: dict[str, Any]) -> processes.Recorded:
    """The `up` process of a pool.json (pid and start time: a reused pid is not it)."""
    return processes.Recorded(int(info.get("pid", 0)), int(info.get("pid_start") or -1), "serve")


def _holder_alive(info: dict[str, Any]) -> bool:
    if info.get("pid_start") is None:  # no /proc where it ran: the pid is all there is
        return _alive(int(info.get("pid", 0)))
    return _holder(info).alive()


def _clean_up_after(d: Path, info: dict[str, Any]) -> list[processes.Recorded]:
    """End what a pool whose holder is gone had started, by the processes it recorded and
    its own Ray folder (never another Ray), and remove its state, secret and tokens."""
    ended = processes.end(
        [processes.Recorded.from_json(r) for r in info.get("processes", [])],
        marker=(info.get("ray") or {}).get("temp_dir", ""),
    )
    remove_pool_files(d, info)
    return ended


def cmd_down(ns: argparse.Namespace) -> int:
    d = _pool_dir(ns)
    info = _pool_info(d)
    pid = int(info["pid"])
    crashed = not _holder_alive(info)
    out = Path(ns.out).resolve() if ns.out else d / OUT_DIR
    asked_at = time.time()
    if not crashed:
        if ns.out:  # where the pool process writes its output folder as it stops
            (d / DOWN_FILE).write_text(json.dumps({"out": str(out)}))
        os.kill(pid, signal.SIGTERM)  # it stops the pool and removes its files itself
        deadline = time.monotonic() + ns.timeout
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if _alive(pid):
            print(
                f"mockpool: pool process {pid} did not stop within {ns.timeout:g}s; killing it",
                file=sys.stderr,
            )
            with contextlib.suppress(ProcessLookupError):  # seen alive just now: it is ours
                os.kill(pid, signal.SIGKILL)
    # After a crash (or a holder that would not stop), and as a check after a clean stop.
    ended = _clean_up_after(d, info)
    if crashed:
        print(
            f"Pool process {pid} was gone; ended {len(ended)} process(es) it had started "
            f"and removed its files"
        )
    elif (out / "summary.json").exists() and (out / "summary.json").stat().st_mtime >= asked_at:
        print(f"Output written to {out}/ (mockpool check {out}; mockpool report {out})")
    print(f"Pool down (pid {pid})")
    return 0


# ------------------------------------------------------------------ tools


def _with_client(
    ns: argparse.Namespace, role: Role, body: Callable[[PoolClient, dict[str, Any]], Awaitable[T]]
) -> T:
    """Run ``body`` with a client presenting ``--token FILE`` or the pool's ``role`` token.
    ``-pool HOST:PORT`` names the collector, as HTCondor's tools' -pool does (the tokens
    then come from ``--token`` or $MOCKPOOL_HOME); ``-pool DIR`` an `up` pool's folder."""
    collector = _collector_arg(ns)
    d = default_dir() if collector else _pool_dir(ns)
    info = _tool_info(d, collector)
    path = Path(ns.token) if getattr(ns, "token", None) else token_path(d, role)
    try:
        token = read_token(path)
    except (OSError, ValueError) as e:
        raise SystemExit(f"mockpool: cannot read the {role.value} token {path}: {e}") from None

    client: PoolClient | None = None

    async def go() -> T:
        nonlocal client
        client = PoolClient(info["collector"], token)
        try:
            return await body(client, info)
        finally:
            await client.close()

    try:
        return asyncio.run(go())
    except PoolError as e:
        if e.code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
            schedd = client.last_schedd if client is not None else None
            raise SystemExit(daemon_down_message(str(e), info["collector"], schedd)) from None
        raise SystemExit(f"mockpool: {e}") from None


_HOST_PORT = re.compile(r"(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):[0-9]{1,5}\Z")


def _collector_arg(ns: argparse.Namespace) -> str:
    """The collector ``-pool`` names (``host:port``), or "" when it names a folder (an
    existing folder wins: ``-pool DIR`` was the only form before)."""
    value = getattr(ns, "pool", None) or ""
    if not value or Path(value).is_dir() or not _HOST_PORT.match(value):
        return ""
    return value


def _tool_info(d: Path, collector: str) -> dict[str, Any]:
    """What the tools read of a pool: its pool.json; for ``-pool HOST:PORT`` the
    collector given, and the dates of the pool at $MOCKPOOL_HOME when that is the same
    pool, else this machine's clock (a live pool's ads carry Unix dates)."""
    if not collector:
        return _pool_info(d)
    try:
        info: dict[str, Any] = json.loads((d / POOL_FILE).read_text())
    except (OSError, ValueError):
        info = {}
    if info.get("collector") != collector:
        info = {"collector": collector, "time_scale": 1.0, "epoch_wall": time.time()}
    return info


def _width(piped: int | None) -> int | None:
    """The terminal's width on a TTY; else what HTCondor's tool assumes when piped."""
    if sys.stdout.isatty():
        return shutil.get_terminal_size().columns
    return piped


def _pool_now(info: dict[str, Any]) -> float:
    return ScaledClock(float(info["time_scale"]), float(info["epoch_wall"])).now()


def cmd_submit(ns: argparse.Namespace) -> int:
    from .submit_flags import SubmitFlagError, apply_submit_flags, terse_line

    source = "<stdin>" if ns.file == "-" else ns.file
    try:  # the description and its item files are read here, never by the schedd
        text = sys.stdin.read() if ns.file == "-" else read_user_file(ns.file)
        text = apply_submit_flags(
            text, append=ns.append or (), batch_name=ns.batch_name, queue=ns.queue
        )
        inputs = read_submit_inputs(text, source)
    except SubmitFlagError as e:
        return fail(f"ERROR: {e}")
    except (SubmitFileError, SubmitError) as e:
        return fail(str(e))
    if ns.dry_run is not None or ns.dry_run_full_out is not None:
        return _dry_run(ns, text, inputs)

    async def body(c: PoolClient, info: dict[str, Any]) -> tuple[int, int]:
        # No --owner: the schedd takes the Owner from the SUBMIT token (its user).
        return await c.submit(
            text, owner=ns.owner or "", schedd=ns.name or "", source=source, inputs=inputs
        )

    cluster, n = _with_client(ns, Role.SUBMIT, body)
    if ns.terse:
        print(terse_line(cluster, n))
        return 0
    print("Submitting job(s)" + "." * n)
    print(f"{n} job(s) submitted to cluster {cluster}.")
    return 0


def _dry_run(ns: argparse.Namespace, text: str, inputs: SubmitInputs) -> int:
    """condor_submit -dry-run OUT: the job ads the description makes, built here with no
    pool (cluster 1, this machine's user, the default submit host), written to OUT
    (``-`` for stdout) as condor_submit's simulated queue writes them."""
    owner = ns.owner or getpass.getuser()
    try:
        result = parse_submit(
            text,
            "<stdin>" if ns.file == "-" else ns.file,
            owner=owner,
            qdate=int(time.time()),
            item_files=inputs.item_files,
            env=inputs.env,
        )
    except SubmitError as e:
        return fail(str(e))
    full = ns.dry_run_full_out is not None
    target = ns.dry_run_full_out if full else ns.dry_run
    out = layouts.format_dry_run(result.procs, full=full)
    n = len(result.procs)
    print("Dry-Run job(s)" + "." * n)
    if target == "-":
        sys.stdout.write(out)
    else:
        try:
            Path(target).write_text(out)
        except OSError as e:
            return fail(f"cannot write the -dry-run output {target}: {e.strerror}")
    print(f"{n} job(s) dry-run to cluster {result.cluster_id}.")
    return 0


def _base_wall(info: dict[str, Any]) -> float:
    """The date (Unix time) of pool time 0, the pool's start date: ads' dates count from it."""
    return float(info.get("log_base_wall") or info["epoch_wall"])


def _date_now(info: dict[str, Any]) -> float:
    """The date now as the pool's ads count it (time() in their expressions)."""
    return _base_wall(info) + _pool_now(info)


_JOB_ID = re.compile(r"([0-9]{1,18})(?:\.([0-9]{1,18}))?\Z")  # N or N.M, within 64 bits


def cmd_analyze(ns: argparse.Namespace) -> int:
    from .analysis import analyze_job

    m = re.fullmatch(r"(\d+)\.(\d+)", ns.job)
    if m is None:
        return fail(f"analyze: {ns.job!r} is not a job id (cluster.proc, e.g. 12.0)", 2)
    query = f"ClusterId == {int(m[1])} && ProcId == {int(m[2])}"

    async def body(c: PoolClient, info: dict[str, Any]) -> str | None:
        name, address = await c.schedd_address(ns.name or "")
        jobs, _ = await c.jobs(query, schedd=name)
        if not jobs:
            return None
        slots = await c.query("Machine", "")
        now = _date_now(info)
        return analyze_layout.format_better_analyze(
            jobs[0],
            analyze_job(jobs[0], slots, now=now),
            schedd_name=name,
            schedd_address=sinful(address),  # condor_q's header: <host:port>
            now_wall=now,
            width=_width(80),
        )

    text = _with_client(ns, Role.READ, body)
    if text is None:
        schedd = ns.name or "the pool's first schedd"
        return fail(f"analyze: job {int(m[1])}.{int(m[2])} is not in the queue of {schedd}")
    print(text, end="")
    return 0


_ACTION_WORDS = {
    "remove": ("marked for removal", "rm"),
    "hold": ("held", "hold"),
    "release": ("released", "release"),
}


def _cmd_act(action: str) -> Callable[[argparse.Namespace], int]:
    def run(ns: argparse.Namespace) -> int:
        if not ns.ids and not ns.constraint and not ns.all:
            return fail(f"{_ACTION_WORDS[action][1]}: give job ids, -constraint or -all", 2)
        for arg in ns.ids:
            if not _JOB_ID.match(arg):
                return fail(
                    f"{_ACTION_WORDS[action][1]}: {arg!r} is not a cluster or a job id (cluster.proc)",
                    2,
                )
        constraint = "true" if ns.all else (ns.constraint or "")

        async def body(c: PoolClient, info: dict[str, Any]) -> list[Any]:
            return await c.act(
                action,
                ns.ids,
                constraint=constraint,
                reason=ns.reason or "",
                owner=getpass.getuser(),
                schedd=ns.name or "",
            )

        results = _with_client(ns, Role.SUBMIT, body)
        out, err = act_lines(action, ns.ids, ns.constraint or "", ns.all, results)
        for line in out:
            print(line)
        for line in err:
            print(line, file=sys.stderr)
        bad = sum(1 for r in results if not r.ok)
        if not results:
            print(
                f"Couldn't find/{action} all jobs matching constraint {constraint}", file=sys.stderr
            )
            return 1
        return 1 if bad else 0

    return run


def _with_master(ns: argparse.Namespace, role: Role, body: Callable[[Any], Awaitable[T]]) -> T:
    """Run ``body`` with a stub of the `up` pool's master (the process holding it)."""
    d = _pool_dir(ns)
    info = _pool_info(d)
    path = Path(ns.token) if getattr(ns, "token", None) else token_path(d, role)
    try:
        token = read_token(path)
    except (OSError, ValueError) as e:
        raise SystemExit(f"mockpool: cannot read the {role.value} token {path}: {e}") from None
    if not info.get("master"):
        raise SystemExit(f"mockpool: the pool in {d} serves no master (an older `up`?)")

    async def go() -> T:
        channel = rpc.GRPC.channel(info["master"], token)
        try:
            return await body(master_pb2_grpc.MasterStub(channel))
        finally:
            await channel.close()

    try:
        return asyncio.run(go())
    except grpc.aio.AioRpcError as e:
        raise SystemExit(f"mockpool: {e.details() or e.code()}") from None


def cmd_fault(ns: argparse.Namespace) -> int:
    request = master_pb2.FaultRequest(
        kind=ns.kind, target=ns.target or "", constraint=ns.constraint or "", peer=ns.peer or ""
    )
    for key in ("duration", *FAULT_PARAMS):
        value = getattr(ns, key)
        if value is not None:
            setattr(request, key, value)

    async def body(stub: Any) -> str:
        reply = await rpc.call(stub.Fault, request, timeout=120.0)
        return str(reply.message)

    print(_with_master(ns, Role.ADMIN, body))
    return 0


def cmd_daemons(ns: argparse.Namespace) -> int:
    async def body(stub: Any) -> Any:
        return await rpc.call(stub.Daemons, master_pb2.DaemonsRequest(), timeout=30.0)

    reply = _with_master(ns, Role.READ, body)
    print(f"{'Actor':<14} {'Role':<10} {'State':<6} {'Pid':>8} {'Address':<22} Daemons")
    for a in reply.actors:
        down = set(a.down)  # crashed alone, the actor up
        daemons = ", ".join(f"{d} (down)" if d in down else d for d in a.daemons)
        state = "up" if a.alive else "down"
        print(f"{a.actor:<14} {a.role:<10} {state:<6} {a.pid:>8} {a.address:<22} {daemons}")
    return 0


def token_arg(p: argparse.ArgumentParser) -> None:
    """``--token FILE``, which every tool that talks to the pool takes."""
    p.add_argument(
        "--token",
        metavar="FILE",
        help="present this token (default: the pool's token for the least role needed)",
    )


POOL_HELP = (
    "the pool's central manager (HOST:PORT of its collector, as HTCondor's -pool), or an "
    "`up` pool's folder (default $MOCKPOOL_HOME or ~/.mockpool)"
)


def pool_arg(p: argparse.ArgumentParser) -> None:
    """``-pool``, ``-name SCHEDD`` and ``--token FILE`` of the tools that talk to a pool."""
    p.add_argument("-pool", "--pool", metavar="HOST:PORT|DIR", help=POOL_HELP)
    p.add_argument("-name", "--name", help="schedd name (default: the first schedd)")
    token_arg(p)


def add_pool_commands(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("run", help="run a pool spec for its duration and write a report")
    p.add_argument("spec")
    p.add_argument(
        "--address",
        help="run on this Ray cluster (host:port of its head, ray://host:port, or auto) "
        "instead of a local Ray of its own",
    )
    p.add_argument("--out", help="output folder (default mockpool-out/<spec name>)")
    p.add_argument("--duration", type=float, help="pool seconds to run (overrides the spec)")
    p.add_argument(
        "--time-scale", type=float, help="pool seconds per real second (overrides the spec)"
    )
    p.add_argument(
        "--report",
        action="store_true",
        help="also write report.html (plots) into the output folder",
    )
    p.add_argument(
        "--clock",
        choices=CLOCKS,
        help="live: Ray actors on a scaled wall clock (default); virtual: every daemon in "
        "this process, time jumping to the next thing that happens",
    )
    p.add_argument(
        "--until-done",
        action="store_true",
        help="stop once every job of the workload has left the queue",
    )
    p.add_argument(
        "--latency",
        type=_dilation,
        help="virtual: pool seconds a message takes each way (default 0)",
    )
    p.add_argument(
        "--time-dilation",
        type=_dilation,
        metavar="FACTOR",
        help="virtual: charge each negotiation cycle its CPU time x FACTOR in pool time",
    )
    _metrics_args(p)
    p.set_defaults(func=cmd_run)

    p = sub.add_parser(
        "sweep", help="run a spec over a grid of knob values and seeds; gather the measures"
    )
    p.add_argument("spec")
    p.add_argument(
        "--set",
        action="append",
        metavar="KNOB=V1,V2,...",
        help="a knob and the values to sweep (repeat for a grid)",
    )
    p.add_argument("--seeds", type=int, default=1, help="runs per combination (seed, seed+1, ...)")
    p.add_argument("--clock", choices=CLOCKS, default="virtual")
    p.add_argument("--out", help="output folder (default mockpool-out/sweep-<spec name>)")
    p.add_argument("--workers", type=int, help="parallel runs (default: the CPU count)")
    p.add_argument(
        "--address",
        help="run each point as a Ray task spread over this cluster's nodes (host:port, "
        "ray://host:port or auto) instead of in local processes",
    )
    p.add_argument("--duration", type=float, help="pool seconds per run (overrides the spec)")
    p.add_argument("--until-done", action="store_true", help="end each run when its queue is empty")
    p.set_defaults(func=cmd_sweep)

    p = sub.add_parser(
        "report", help="write report.html (measures and plots) for a run's output folder"
    )
    p.add_argument("dir", help="the output folder of `mockpool run`")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser(
        "fault",
        help=f"inject a fault into the `up` pool: {kinds_text()} a daemon (needs the ADMIN token)",
    )
    p.add_argument("kind", help=kinds_text())
    p.add_argument("target", nargs="?", help="a daemon (schedd1, exec0001, collector) or actor")
    p.add_argument("--constraint", help="instead of a target: daemons whose ads match")
    p.add_argument("--peer", help="partition, drop, delay: the daemon at the other end")
    p.add_argument("--duration", type=float, help="pool seconds (a crash: down this long)")
    for key in FAULT_PARAMS:  # each kind's own keys (faultkinds/)
        p.add_argument(f"--{key}", type=float, help=param_help(key))
    pool_arg(p)
    p.set_defaults(func=cmd_fault)
    p = sub.add_parser("daemons", help="the `up` pool's actors, their daemons and their state")
    pool_arg(p)
    p.set_defaults(func=cmd_daemons)
    p = sub.add_parser("check", help="check a run's output folder against the pool's invariants")
    p.add_argument("dir", help="a `mockpool run` output folder")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("up", help="start a long-lived pool in the background")
    p.add_argument("spec")
    p.add_argument("--pool", metavar="DIR")
    p.add_argument("--address", help="run on this Ray cluster (host:port, ray://host:port or auto)")
    p.add_argument(
        "--duration", type=float, default=0.0, help="stop by itself after this many pool seconds"
    )
    p.add_argument("--timeout", type=float, default=180.0, help="real seconds to wait for start")
    _metrics_args(p)
    p.set_defaults(func=cmd_up)

    p = sub.add_parser("down", help="stop the pool started by `up`; write its output folder")
    p.add_argument("--pool", metavar="DIR")
    p.add_argument("--out", help="output folder (default: out/ in the pool's folder)")
    p.add_argument("--timeout", type=float, default=60.0)
    p.set_defaults(func=cmd_down)

    p = sub.add_parser("submit", help="condor_submit: queue the jobs of a submit description")
    p.add_argument("file", help="the submit description ('-': standard input)")
    p.add_argument("-terse", "--terse", action="store_true", help="print only 'C.0 - C.N'")
    p.add_argument("-batch-name", "--batch-name", dest="batch_name", metavar="NAME")
    p.add_argument("-queue", "--queue", metavar="ARGS", help="the queue statement's arguments")
    p.add_argument(
        "-a",
        "-append",
        "--append",
        action="append",
        metavar="LINE",
        help="a submit line added before the queue statement (repeatable)",
    )
    g = p.add_mutually_exclusive_group()
    g.add_argument(
        "-dry-run",
        "--dry-run",
        metavar="OUT",
        dest="dry_run",
        help="queue nothing: write the job attributes to OUT ('-': stdout), as condor_submit",
    )
    g.add_argument(
        "-dry-run:full",
        "--dry-run:full",
        metavar="OUT",
        dest="dry_run_full_out",
        help="as -dry-run, writing each job's full ad (condor_submit -dry-run:full)",
    )
    p.add_argument(
        "--owner",
        help="submitting user (default: the token's user; only an admin token may name another)",
    )
    pool_arg(p)
    p.set_defaults(func=cmd_submit)

    p = sub.add_parser("analyze", help="condor_q -better-analyze: why a job does (not) run")
    p.add_argument("job", help="cluster.proc")
    pool_arg(p)
    p.set_defaults(func=cmd_analyze)

    for action, name in (("remove", "rm"), ("hold", "hold"), ("release", "release")):
        p = sub.add_parser(name, help=f"condor_{name}: {action} jobs")
        p.add_argument("ids", nargs="*", help="cluster or cluster.proc")
        p.add_argument("-constraint", "--constraint")
        p.add_argument("-all", "--all", action="store_true")
        p.add_argument("-reason", "--reason")
        pool_arg(p)
        p.set_defaults(func=_cmd_act(action))
