"""The pool spec: a TOML file that says the topology, the workload and the time scale.

```toml
[pool]
time_scale = 60          # pool seconds per real second
duration = 3600          # pool seconds to run (``mockpool run``)
seed = 1
host = "127.0.0.1"       # where servers listen (loopback unless you say otherwise;
                         # "routable": each node's own address, on a Ray cluster)
secret_file = ""         # the pool secret (`mockpool token secret --out F`); required
                         # when host is not loopback
clock = "live"           # or "virtual": every daemon in one process, time jumps ahead
until_done = false       # stop when every job of the workload has left the queue
latency = 0.0            # virtual: pool seconds a message takes each way
cycle_cost = "zero"      # virtual: or { per_slot = s, per_match = s } or { cpu_factor = f }
metrics_port = 0         # live: serve Prometheus metrics on host:port (0: off)
metrics_htcondor = false # metrics: also the htcondor_* names sites graph (docs/metrics.md)
cedar = true             # live: HTCondor's own clients reach the pool over CEDAR
restarts = 0             # Ray restarts a crashed actor this often (as condor_master would)

[config]                 # HTCondor knobs, as in a condor_config
file = "condor_config"   # optional: read first, then the text block, then single knobs
text = '''
use POLICY : ALWAYS_RUN_JOBS
GROUP_QUOTA_group_physics.hep = 15
'''                      # HTCondor config as it is (dotted names, True/False, use, $EVAL)
NEGOTIATOR_INTERVAL = 60

[[startds]]              # a family of identical machines
name = "exec{:04d}"      # machine names: a str.format pattern over 1..count
count = 500
machines_per_actor = 250
config = '''
NUM_CPUS = 16
'''                       # or config_file = "startd.conf" (relative to the spec), or a
                         # [startds.config] table with file, text and single knobs

[[schedds]]
count = 2                # names schedd1, schedd2 (or name = "sub{}")
per_actor = 2

[accountant."alice@mockpool"]   # optional: the accountant's starting state, per
factor = 500                     # submitter (user@domain) or group (group_physics):
priority = 10                    # priority factor (>= 1) and real priority (RUP, >= 0.5)

[[workload]]             # generated jobs: distributions and arrivals (see workload.py)
owner = "bob"
jobs = 100
duration = { dist = "normal", mean = 90, sigma = 20 }
arrival = { kind = "poisson", rate = 0.1 }

[[trace]]                # a recorded job history replayed (see trace.py)
file = "history.json"    # condor_history -json, -long text, or SWF (.swf)
compress = 2.0           # submit times divided by this
on_error = "skip"        # or "refuse": a bad trace line stops the load

[placement]              # where actors go (on a Ray cluster, Ray's SPREAD by default)
central = "head"         # or "any": the central manager's actors on the head node
startds = "pack"         # or "spread": startd actors packed by a placement group
negotiator = "own"       # or "central" (default): the negotiator in an actor of its own,
                         # reading columnar snapshots from the collector over gRPC

[[faults]]               # a fault plan (see faults.py): crash, restart, pause,
kind = "crash"           # partition, drop, delay, skew, or kind = "random"
target = "schedd1"       # a daemon or actor name (or constraint = "...")
at = 600                 # pool seconds
duration = 120           # a crash with a duration comes back after it

[[submit]]               # submitted at pool time `at` to schedd index `schedd`
at = 0
schedd = 0
owner = "alice"
description = '''
executable = /bin/sleep
arguments = 60
queue 15
'''                       # or file = "job.sub"
```

Loading validates everything a run would trip over later: config knobs (HTCondor syntax),
the negotiator's policy knobs (group quotas: GROUP_NAMES, GROUP_QUOTA_<g>,
GROUP_QUOTA_DYNAMIC_<g>, GROUP_SORT_EXPR, ...), slot layouts and every submit description.
``[[workload]]`` tables are drawn from the pool seed at load and become submit items
like ``[[submit]]`` ones (one per cluster of equal jobs arriving together); an impossible
distribution or arrival is refused with the line and the key.
``[[trace]]`` tables are read at load too: their jobs become submit items (each job tagged
``MockTrace`` and ``MockTraceJob``) and their removed jobs :class:`RemoveItem` s in
``removals``; a bad trace line names the trace file and its line, and is refused or (with
``on_error = "skip"``) left out and listed in ``traces``.
The ``[accountant]`` table only seeds a negotiator that has no saved state yet. An error
names the file, the line and the problem. Config and submit text written inline keeps the spec file's line numbers.
Submit files and the item files of ``queue ... from <file>`` are read here, relative to the
spec's folder, and sent with each submit (a schedd reads no user's files).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

from ..config import (
    ConfigError,
)
from ..poolsecret import ENV_SECRET, ENV_SECRET_FILE, pool_secret, read_secret_file
from .spec_daemons import DaemonTables
from .spec_jobs import JobTables
from .specmodel import LOOPBACK_HOSTS, POOL_KEYS, TOP_KEYS, PoolSpec, SpecError
from .tomlplaces import SpecLines
from .virtual import CLOCKS, parse_cycle_cost

__all__ = [
    "load_spec",
    "parse_spec",
]


# ------------------------------------------------------------------ parsing


def load_spec(
    path: str | os.PathLike[str],
    *,
    seed: int | None = None,
    workload: Mapping[str, str] | None = None,
) -> PoolSpec:
    """The spec in ``path``; ``seed`` replaces its ``[pool] seed`` (workloads are drawn
    from it as the spec is read), and ``workload`` sets ``NAME.KEY[.SUBKEY]`` of its
    ``[[workload]]`` tables to TOML values (``{"batch.duration.sigma": "20"}``)."""
    p = Path(path)
    try:
        text = p.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise SpecError(f"{path}: cannot read: {getattr(e, 'strerror', None) or e}") from None
    return parse_spec(text, os.fspath(path), base_dir=p.parent, seed=seed, workload=workload)


def _set_workload(data: dict[str, Any], path: str, value: str, source: str) -> None:
    """Set ``NAME.KEY[.SUBKEY...]`` of the ``[[workload]]`` named NAME to a TOML value."""
    name, _, rest = path.partition(".")
    keys = rest.split(".") if rest else []
    tables = data.get("workload", [])
    table = (
        next((t for t in tables if isinstance(t, dict) and t.get("name") == name), None)
        if isinstance(tables, list)
        else None
    )
    if table is None or not keys or not all(keys):
        names = (
            [t.get("name") for t in tables if isinstance(t, dict)]
            if isinstance(tables, list)
            else []
        )
        raise SpecError(
            f"{source}: workload.{path}: expected workload.NAME.KEY with NAME one of "
            f"{', '.join(map(str, names)) or '(no [[workload]] tables)'}"
        )
    try:
        parsed = tomllib.loads(f"v = {value}")["v"]
    except tomllib.TOMLDecodeError:
        parsed = value  # a bare word: a string
    node = table
    for i, key in enumerate(keys[:-1]):
        child = node.get(key)
        if not isinstance(child, dict):
            where = ".".join([name, *keys[: i + 1]])
            raise SpecError(f"{source}: workload.{path}: workload.{where} is not a table")
        node = child
    node[keys[-1]] = parsed


def _toml_line(exc: tomllib.TOMLDecodeError) -> str:
    m = re.search(r"\(at line (\d+), column (\d+)\)", str(exc))
    msg = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(exc))
    return f"{m.group(1)}: {msg} (column {m.group(2)})" if m else f"1: {msg}"


def parse_spec(
    text: str,
    source: str = "<spec>",
    *,
    base_dir: Path | None = None,
    seed: int | None = None,
    workload: Mapping[str, str] | None = None,
) -> PoolSpec:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise SpecError(f"{source}:{_toml_line(e)}") from None
    for path, value in (workload or {}).items():
        _set_workload(data, path, value, source)
    if seed is not None:
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise SpecError(f"{source}: seed must be a whole number >= 0, got {seed!r}")
        pool = data.setdefault("pool", {})
        if isinstance(pool, dict):
            pool["seed"] = seed
    return SpecBuilder(text, source, base_dir or Path.cwd()).build(data)


class SpecBuilder(DaemonTables, JobTables):
    def __init__(self, text: str, source: str, base_dir: Path) -> None:
        self.lines = SpecLines(text)
        self.source = source
        self.base_dir = base_dir

    def fail(
        self, table: str | None, index: int | None, key: str | None, problem: str
    ) -> SpecError:
        if key:
            line = self.lines.key(table, index, key)
        else:
            line = self.lines.table_start(table, index) if table else 0
        where = (
            f"[[{table}]] #{index + 1}" if index is not None else (f"[{table}]" if table else "")
        )
        what = f"{where} {key}" if key and where else (key or where)
        return SpecError(f"{self.source}:{line or 1}: {what}: {problem}".replace(": : ", ": "))

    def _at(self, table: str, index: int | None) -> str:
        """``file:line`` of a table of the spec."""
        return f"{self.source}:{self.lines.table_start(table, index) or 1}"

    def _num(
        self,
        tbl: dict[str, Any],
        table: str,
        index: int | None,
        key: str,
        default: Any,
        kind: type,
        minimum: float,
        strict: bool = False,
        maximum: float | None = None,
    ) -> Any:
        v = tbl.get(key, default)
        ok_types = (int,) if kind is int else (int, float)
        if (
            isinstance(v, bool)
            or not isinstance(v, ok_types)
            or v in (math.inf, -math.inf)
            or v != v
        ):
            raise self.fail(
                table,
                index,
                key,
                f"must be a {'whole' if kind is int else 'finite'} number, got {v!r}",
            )
        if v < minimum or (strict and v == minimum):
            rel = ">" if strict else ">="
            raise self.fail(table, index, key, f"must be {rel} {minimum}, got {v!r}")
        if maximum is not None and v > maximum:
            raise self.fail(table, index, key, f"must be <= {maximum:,}, got {v!r}")
        return kind(v)

    def _unknown(
        self, tbl: dict[str, Any], allowed: set[str], table: str, index: int | None
    ) -> None:
        for k in tbl:
            if k not in allowed:
                raise self.fail(
                    table, index, k, f"unknown key (expected one of {', '.join(sorted(allowed))})"
                )

    def _list(self, data: dict[str, Any], name: str) -> list[dict[str, Any]]:
        v = data.get(name, [])
        if isinstance(v, dict):
            v = [v]
        if not isinstance(v, list) or not all(isinstance(x, dict) for x in v):
            raise self.fail(None, None, name, "must be an array of tables ([[" + name + "]])")
        return v

    def build(self, data: dict[str, Any]) -> PoolSpec:
        for k in data:
            if k not in TOP_KEYS:
                raise self.fail(
                    None, None, k, f"unknown table (expected {', '.join(sorted(TOP_KEYS))})"
                )
        spec = PoolSpec(source=self.source)
        pool = data.get("pool", {})
        if not isinstance(pool, dict):
            raise self.fail(None, None, "pool", "must be a table")
        self._unknown(pool, POOL_KEYS, "pool", None)
        spec.time_scale = self._num(pool, "pool", None, "time_scale", 60.0, float, 0, strict=True)
        spec.duration = self._num(pool, "pool", None, "duration", 3600.0, float, 0, strict=True)
        spec.seed = self._num(pool, "pool", None, "seed", 0, int, 0, maximum=2**63 - 1)
        host = pool.get("host", "127.0.0.1")
        if not isinstance(host, str) or not host:
            raise self.fail("pool", None, "host", f"must be a host name or address, got {host!r}")
        spec.host = host
        secret_file = pool.get("secret_file", "")
        if not isinstance(secret_file, str):
            raise self.fail("pool", None, "secret_file", "must be a path")
        if secret_file:
            path = self.base_dir / secret_file
            try:
                read_secret_file(path)
            except (OSError, ValueError) as e:
                raise self.fail("pool", None, "secret_file", f"{path}: {e}") from None
            spec.secret_file = str(path)
        try:
            from_env = not spec.secret_file and pool_secret("") is not None
        except (OSError, ValueError) as e:
            raise self.fail(
                "pool", None, "host", f"${ENV_SECRET_FILE}/${ENV_SECRET}: {e}"
            ) from None
        if host not in LOOPBACK_HOSTS and not spec.secret_file and not from_env:
            raise self.fail(
                "pool",
                None,
                "host",
                f"{host!r} is not loopback: a pool reachable from other machines needs "
                "secret_file (a 0600 file holding the pool secret: `mockpool token secret "
                "--out FILE`; or $MOCKPOOL_SECRET_FILE or $MOCKPOOL_SECRET), so that every "
                "call still needs the pool's token",
            )
        spec.clock = pool.get("clock", "live")
        if spec.clock not in CLOCKS:
            raise self.fail(
                "pool", None, "clock", f"must be one of {', '.join(CLOCKS)}, got {spec.clock!r}"
            )
        spec.latency = self._num(pool, "pool", None, "latency", 0.0, float, 0)
        try:
            spec.cycle_cost = parse_cycle_cost(pool.get("cycle_cost", "zero"))
        except ValueError as exc:
            raise self.fail("pool", None, "cycle_cost", str(exc)) from None
        spec.until_done = pool.get("until_done", False)
        if not isinstance(spec.until_done, bool):
            raise self.fail(
                "pool", None, "until_done", f"must be true or false, got {spec.until_done!r}"
            )
        spec.metrics_port = self._num(pool, "pool", None, "metrics_port", 0, int, 0)
        spec.metrics_htcondor = pool.get("metrics_htcondor", False)
        if not isinstance(spec.metrics_htcondor, bool):
            raise self.fail(
                "pool",
                None,
                "metrics_htcondor",
                f"must be true or false, got {spec.metrics_htcondor!r}",
            )
        spec.cedar = pool.get("cedar", True)
        if not isinstance(spec.cedar, bool):
            raise self.fail("pool", None, "cedar", f"must be true or false, got {spec.cedar!r}")
        spec.restarts = self._num(pool, "pool", None, "restarts", 0, int, 0)
        if spec.metrics_port > 65535:
            raise self.fail(
                "pool", None, "metrics_port", f"must be a port number, got {spec.metrics_port}"
            )
        spec.config = self._config(data.get("config", {}), spec.seed)
        self._negotiator_config(spec.config)
        if spec.cedar:
            from .cedar_knobs import CedarError, check_knobs

            try:
                check_knobs(spec.config)
            except (CedarError, ConfigError) as exc:  # a bad value, or one that fails to expand
                raise self.fail("config", None, None, str(exc)) from None
        spec.priorities = self._accountant(data.get("accountant", {}))
        spec.startds = [
            self._startds(t, i, spec.config) for i, t in enumerate(self._list(data, "startds"))
        ]
        imported = data.get("import")
        if imported is not None:
            spec.startds.extend(self._import_machines(imported, spec.config))
        names = [n for g in spec.startds for n in g.names]
        if len(set(n.lower() for n in names)) != len(names):
            dup = next(n for n in names if sum(m.lower() == n.lower() for m in names) > 1)
            raise self.fail("startds", None, None, f"machine name {dup!r} is used twice")
        groups = self._list(data, "schedds") or [{"count": 1}]
        taken: set[str] = set()
        for i, t in enumerate(groups):
            spec.schedds.append(self._schedds(t, i, taken, len(groups)))
        for i, t in enumerate(self._list(data, "submit")):
            spec.submits.append(self._submit(t, i, spec))
        spec.workloads = [
            self._workload(t, i, spec) for i, t in enumerate(self._list(data, "workload"))
        ]
        names = [w.name for w in spec.workloads]
        if len(set(names)) != len(names):
            dup = next(n for n in names if names.count(n) > 1)
            raise self.fail(
                "workload",
                len(names) - 1 - names[::-1].index(dup),
                "name",
                f"{dup!r} is used twice",
            )
        spec.submits.extend(self._generated(spec))
        if imported is not None:
            spec.submits.extend(self._import_jobs(imported, spec))
        taken_names = set(names)
        for i, t in enumerate(self._list(data, "trace")):
            self._trace(t, i, spec, taken_names)
        spec.submits.sort(key=lambda s: s.at)
        spec.removals.sort(key=lambda r: r.at)
        # the placement first: it says which actors a fault's daemons are in
        spec.placement = self._placement(data.get("placement", {}))
        spec.faults = self._faults(data, spec)
        return spec
