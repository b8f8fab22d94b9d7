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
import string
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

from ..classad import parse_expr
from ..config import (
    ConfigDict,
    ConfigError,
    load_config,
    parse_config,
    read_local_config,
)
from ..config.knobs import check_knobs as check_knob_table
from ..negotiator.cadence import Cadence, CadenceError
from ..negotiator.cycleinput import CycleConfig, NegotiatorInputError
from ..negotiator.groups import GroupConfig, GroupConfigError
from ..negotiator.preemption import check_negotiator_config
from ..poolsecret import ENV_SECRET, ENV_SECRET_FILE, pool_secret, read_secret_file
from ..schedd.cadence import AdCadence, AdCadenceError
from ..schedd.schedd import ScheddKnobs
from ..schedd.submit import SubmitError, SubmitInputs, parse_submit
from ..schedd.submit_policy import valid_owner
from ..startd.layout import machine_layout
from ..startd.machine import Machine
from .faults import Fault, FaultError, check_plan, parse_fault
from .importer import ImportedMachine, ImportError_, read_jobs, read_machines
from .layout import actor_plans
from .submit_files import SubmitFileError, read_submit_inputs, read_user_file
from .tomlplaces import SpecLines
from .trace import (
    FORMATS,
    ON_ERROR,
    TraceError,
    read_trace,
    remove_constraint,
    replay,
    submit_clusters,
)
from .virtual import CLOCKS, CycleCost, parse_cycle_cost
from .workload import (
    Workload,
    WorkloadError,
    generate,
    parse_arrival,
    parse_distribution,
    submit_description,
)

__all__ = [
    "MachineGroup",
    "PoolSpec",
    "RemoveItem",
    "ScheddGroup",
    "SpecError",
    "SubmitItem",
    "TraceSummary",
    "load_spec",
    "parse_spec",
]


class SpecError(ValueError):
    """A pool spec that cannot be run: ``file:line: problem``."""


@dataclass(frozen=True)
class MachineGroup:
    names: tuple[str, ...]
    machines_per_actor: int
    config: ConfigDict  # pool config with the group's knobs on top


@dataclass(frozen=True)
class ScheddGroup:
    names: tuple[str, ...]
    per_actor: int


@dataclass(frozen=True)
class SubmitItem:
    at: float
    schedd: str  # schedd name
    owner: str
    description: str
    source: str  # for error messages: the spec (or submit file) it came from
    # item files and $ENV values, read when the spec is loaded (on the user's side)
    inputs: SubmitInputs = field(default_factory=SubmitInputs)


@dataclass(frozen=True)
class RemoveItem:
    """A removal (condor_rm -constraint) at pool time ``at``: a trace's removed job."""

    at: float
    schedd: str  # schedd name
    constraint: str  # selects the job(s) to remove
    reason: str  # RemoveReason
    source: str  # for error messages: the trace file and line


@dataclass(frozen=True)
class TraceSummary:
    """A ``[[trace]]`` as loaded: what it replays and what ``on_error = "skip"`` left out."""

    name: str
    file: str
    jobs: int
    removals: int
    skipped: tuple[str, ...]  # one message (file:line: problem) per job left out

    def describe(self, shown: int = 10) -> str:
        """What ``mockpool run`` says about the trace: jobs, removals, what was skipped."""
        text = f"Trace {self.name} ({self.file}): {self.jobs} jobs, {self.removals} removals"
        if self.skipped:
            text += f"; {len(self.skipped)} skipped:"
            text += "".join(f"\n  {m}" for m in self.skipped[:shown])
            if len(self.skipped) > shown:
                text += f"\n  ... and {len(self.skipped) - shown} more"
        return text


@dataclass
class PoolSpec:
    source: str
    time_scale: float = 60.0
    duration: float = 3600.0
    seed: int = 0
    host: str = "127.0.0.1"
    config: ConfigDict = field(default_factory=ConfigDict)
    startds: list[MachineGroup] = field(default_factory=list)
    schedds: list[ScheddGroup] = field(default_factory=list)
    submits: list[SubmitItem] = field(default_factory=list)
    priorities: dict[str, dict[str, float]] = field(default_factory=dict)  # [accountant."name"]
    workloads: list[Workload] = field(default_factory=list)  # [[workload]], also in submits
    traces: list[TraceSummary] = field(default_factory=list)  # [[trace]], also in submits
    removals: list[RemoveItem] = field(default_factory=list)  # traces' removals, by time
    clock: str = "live"  # "live" (Ray actors, gRPC, scaled wall clock) or "virtual"
    latency: float = 0.0  # virtual runs: pool seconds a message takes each way
    cycle_cost: CycleCost = field(default_factory=CycleCost)  # virtual runs: see virtual.py
    until_done: bool = False  # stop once every job of the workload has left the queue
    metrics_port: int = 0  # a live pool serves Prometheus metrics here (0: not at all)
    metrics_htcondor: bool = False  # the metrics include HTCondor exporters' names too
    cedar: bool = True  # live: collector, negotiator and schedds listen on CEDAR too
    faults: list[Fault] = field(default_factory=list)  # [[faults]], names resolved to actors
    restarts: int = 0  # Ray restarts a dead actor this many times (0: it stays down)
    secret_file: str = ""  # the pool secret, from a file (required beyond loopback)
    placement: dict[str, str] = field(default_factory=dict)  # [placement] on a Ray cluster

    def timeline(self) -> list[SubmitItem | RemoveItem]:
        """Submits and removals in the order to send them: by time, submits first at
        equal times (a removal may name a job submitted at the same instant)."""
        items: list[SubmitItem | RemoveItem] = [*self.submits, *self.removals]
        return sorted(items, key=lambda x: (x.at, isinstance(x, RemoveItem)))

    @property
    def schedd_names(self) -> list[str]:
        return [n for g in self.schedds for n in g.names]

    @property
    def machine_names(self) -> list[str]:
        return [n for g in self.startds for n in g.names]


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


def check_knobs(config: ConfigDict, source: str) -> None:
    """The negotiator's and the schedd's knobs, checked before a pool starts so a bad one
    stops it there (SpecError with the knob's file and line, else ``source``)."""
    neg = config.for_subsystem("NEGOTIATOR")
    try:
        GroupConfig.from_config(neg)
        CycleConfig.from_config(neg)
        Cadence.from_config(neg)
        schedd = config.for_subsystem("SCHEDD")
        AdCadence.from_config(schedd, 0.0)
        ScheddKnobs.from_config(schedd)
    except (GroupConfigError, AdCadenceError) as e:
        raise SpecError(f"{_knob_place(config, e.knob, source)}: {e}") from None
    except NegotiatorInputError as e:
        if e.knob is None:  # the message says where
            raise SpecError(_placed(str(e), source)) from None
        raise SpecError(f"{_knob_place(config, e.knob, source)}: {e}") from None
    except ConfigError as e:  # it names the knob's file and line
        raise SpecError(_placed(str(e), source)) from None
    except CadenceError as e:  # "NEGOTIATOR_INTERVAL must be ...": the knob comes first
        raise SpecError(f"{_knob_place(config, str(e).split(' ', 1)[0], source)}: {e}") from None
    try:  # then every knob of the table those daemons read (the startds': per group)
        check_knob_table(config, ("collector", "negotiator", "schedd"))
    except ConfigError as e:
        raise SpecError(_placed(str(e), source)) from None


MAX_NAME = 255  # characters in a daemon's name


def _format_names(pattern: str, count: int) -> tuple[str, ...]:
    """``pattern.format(n)`` for n from 1 to ``count``. ValueError (or IndexError, KeyError)
    for a bad pattern, and for one whose names could be huge: a field wider than 99
    characters or a width read from the number itself (``{0:{0}}``) would only exhaust
    memory."""
    if len(pattern) > MAX_NAME:
        raise ValueError(f"longer than {MAX_NAME} characters")
    for _, _, spec, _ in string.Formatter().parse(pattern):
        if spec and ("{" in spec or re.search(r"\d{3,}", spec)):
            raise ValueError(f"the field format {spec!r} is too wide")
    return tuple(pattern.format(n) for n in range(1, count + 1))


def _knob_place(config: ConfigDict, name: str | None, fallback: str) -> str:
    """``file:line`` of the knob the configuration set that gives ``name`` its value."""
    knob = config.blame(name) if name else None
    return knob.where if knob is not None else fallback


_PLACE = re.compile(r"\S+?:\d+\b")


def _placed(message: str, where: str) -> str:
    """``message`` as it is when it starts with its place (``file:line``), else after
    ``where`` (for checks that know the knob but not where it was set)."""
    return message if _PLACE.match(message) else f"{where}: {message}"


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
    return _Builder(text, source, base_dir or Path.cwd()).build(data)


_POOL_KEYS = {
    "time_scale",
    "duration",
    "seed",
    "host",
    "name",
    "clock",
    "latency",
    "cycle_cost",
    "until_done",
    "metrics_port",
    "metrics_htcondor",
    "cedar",
    "restarts",
    "secret_file",
}
# Bounds on what one table may ask for: far past what a host can run (100,000 slots is
# the scale this is built for), short of a number that would only exhaust memory.
MAX_MACHINES = 1_000_000
MAX_WORKLOAD_JOBS = 10_000_000
MAX_SCHEDDS = 10_000

_STARTD_KEYS = {"name", "count", "machines_per_actor", "config", "config_file"}
_SCHEDD_KEYS = {"name", "count", "per_actor"}
_SUBMIT_KEYS = {"at", "schedd", "owner", "description", "file"}
_WORKLOAD_KEYS = {
    "name",
    "owner",
    "accounting_group",
    "schedd",
    "jobs",
    "duration",
    "arrival",
    "request_cpus",
    "request_memory",
    "request_disk",
}
_TRACE_KEYS = {
    "name",
    "file",
    "format",
    "schedd",
    "compress",
    "shift",
    "limit",
    "removals",
    "on_error",
}
_IMPORT_KEYS = {"status", "queue", "duration", "machines_per_actor", "schedd"}
_TOP_KEYS = {
    "import",
    "pool",
    "config",
    "startds",
    "schedds",
    "submit",
    "workload",
    "trace",
    "accountant",
    "faults",
    "placement",
}
LOOPBACK_HOSTS = ("127.0.0.1", "::1", "localhost")
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*")
_ACCOUNTANT_KEYS = {"factor", "priority"}


class _Builder:
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
            if k not in _TOP_KEYS:
                raise self.fail(
                    None, None, k, f"unknown table (expected {', '.join(sorted(_TOP_KEYS))})"
                )
        spec = PoolSpec(source=self.source)
        pool = data.get("pool", {})
        if not isinstance(pool, dict):
            raise self.fail(None, None, "pool", "must be a table")
        self._unknown(pool, _POOL_KEYS, "pool", None)
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

    def _placement(self, tbl: Any) -> dict[str, str]:
        """``[placement]``: ``central = "any" | "head"``, ``startds = "spread" | "pack"``
        (on a Ray cluster; Ray's SPREAD by default), ``negotiator = "central" | "own"``."""
        if not isinstance(tbl, dict):
            raise self.fail(None, None, "placement", "must be a table")
        allowed = {
            "central": ("any", "head"),
            "startds": ("spread", "pack"),
            "negotiator": ("central", "own"),
        }
        self._unknown(tbl, set(allowed), "placement", None)
        for key, value in tbl.items():
            if value not in allowed[key]:
                raise self.fail(
                    "placement",
                    None,
                    key,
                    f"must be one of {', '.join(allowed[key])}, got {value!r}",
                )
        return dict(tbl)

    def _faults(self, data: dict[str, Any], spec: PoolSpec) -> list[Fault]:
        """``[[faults]]``: checked against the pool's daemons before anything starts."""
        faults: list[Fault] = []
        for i, t in enumerate(self._list(data, "faults")):
            where = f"{self.source}:{self.lines.table_start('faults', i) or 1}: [[faults]] #{i + 1}"
            try:
                faults.extend(parse_fault(t, where))
            except FaultError as e:
                raise SpecError(str(e)) from None
        try:
            return check_plan(faults, actor_plans(spec))
        except FaultError as e:
            raise SpecError(str(e)) from None

    def _config(self, tbl: Any, seed: int) -> ConfigDict:
        if not isinstance(tbl, dict):
            raise self.fail(None, None, "config", "must be a table of HTCondor knobs")
        try:
            config = self._config_table(tbl, ConfigDict(seed=seed), "config", None)
            check_negotiator_config(config)
            config.get_int("MAX_JOBS_PER_SUBMISSION")  # read at submits
        except ConfigError as e:
            where = f"{self.source}:{self.lines.table_start('config', None) or 1}: [config]"
            raise SpecError(_placed(str(e), where)) from None
        return config

    def _config_table(
        self, tbl: dict[str, Any], base: ConfigDict, table: str, index: int | None
    ) -> ConfigDict:
        """``file`` first, then the ``text`` block (HTCondor config as it is), then single
        knobs, each on top of the one before."""
        if "file" in tbl:
            path = tbl["file"]
            if not isinstance(path, str):
                raise self.fail(table, index, "file", "must be a path")
            base = load_config(self.base_dir / path, base)
        if "text" in tbl:
            text = tbl["text"]
            if not isinstance(text, str):
                raise self.fail(table, index, "text", "must be a string of HTCondor config lines")
            prefix = "\n" * self.lines.value_start(table, index, "text")
            before = base
            base = read_local_config(
                parse_config(prefix + text, self.source, base), self.base_dir, before=before
            )
        lines: list[str] = []
        for k, v in tbl.items():
            if k in ("file", "text"):
                continue
            if isinstance(v, bool):
                v = "True" if v else "False"
            elif isinstance(v, list):
                v = ", ".join(str(x) for x in v)
            elif isinstance(v, dict):
                raise self.fail(
                    table,
                    index,
                    k,
                    "is a table: a TOML key with a dot makes one; "
                    "put dotted knob names in the text = '''...''' block",
                )
            elif not isinstance(v, (int, float, str)):
                raise self.fail(table, index, k, f"must be a string, number or boolean, got {v!r}")
            line = self.lines.key(table, index, k)
            if line and line <= len(lines):  # knobs sharing a line: { A = 1, B = 2 }
                base = parse_config("\n".join(lines), self.source, base)
                lines = []
            # One knob per physical line at its own line number, so ConfigError points there.
            lines.extend([""] * max(0, line - 1 - len(lines)))
            lines.append(f"{k} = {v}".replace("\n", " "))
        return parse_config("\n".join(lines), self.source, base)

    def _negotiator_config(self, config: ConfigDict) -> None:
        check_knobs(config, f"{self.source}:{self.lines.table_start('config', None) or 1}")

    def _accountant_line(self, name: str, key: str | None) -> int:
        path = ("accountant", name, *((key,) if key else ()))
        return self.lines.path(*path) or 1

    def _accountant(self, tbl: Any) -> dict[str, dict[str, float]]:
        if not isinstance(tbl, dict):
            raise self.fail(None, None, "accountant", 'must be tables: [accountant."user@domain"]')
        out: dict[str, dict[str, float]] = {}
        for name, values in tbl.items():

            def bad(key: str | None, problem: str, name: str = name) -> SpecError:
                return SpecError(
                    f"{self.source}:{self._accountant_line(name, key)}: "
                    f'[accountant."{name}"]{" " + key if key else ""}: {problem}'
                )

            if not isinstance(values, dict):
                raise bad(None, "must be a table with factor and/or priority")
            for k, v in values.items():
                if k not in _ACCOUNTANT_KEYS:
                    raise bad(
                        k, f"unknown key (expected one of {', '.join(sorted(_ACCOUNTANT_KEYS))})"
                    )
                if isinstance(v, bool) or not isinstance(v, (int, float)):
                    raise bad(k, f"must be a number, got {v!r}")
            if "factor" in values and not values["factor"] >= 1:
                raise bad("factor", f"must be >= 1, got {values['factor']!r}")
            if "priority" in values and not values["priority"] >= 0.5:
                raise bad("priority", f"must be >= 0.5, got {values['priority']!r}")
            out[name] = {k: float(v) for k, v in values.items()}
        return out

    def _inline(self, table: str, index: int, key: str, text: str) -> str:
        return "\n" * self.lines.value_start(table, index, key) + text

    def _startds(self, t: dict[str, Any], i: int, pool_cfg: ConfigDict) -> MachineGroup:
        self._unknown(t, _STARTD_KEYS, "startds", i)
        count = self._num(t, "startds", i, "count", 1, int, 1, maximum=MAX_MACHINES)
        per_actor = self._num(t, "startds", i, "machines_per_actor", min(count, 1000), int, 1)
        pattern = t.get("name", "exec{:04d}" if i == 0 else f"exec{i}_{{:04d}}")
        if not isinstance(pattern, str):
            raise self.fail("startds", i, "name", "must be a string pattern such as 'exec{:04d}'")
        try:
            names = _format_names(pattern, count)
        except (IndexError, KeyError, ValueError) as e:
            raise self.fail("startds", i, "name", f"bad name pattern {pattern!r}: {e}") from None
        if count > 1 and len(set(names)) != count:
            raise self.fail(
                "startds",
                i,
                "name",
                f"pattern {pattern!r} gives every machine the same name; use {{}}",
            )
        bad = next((n for n in names if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.\-]*", n)), None)
        if bad is not None:
            raise self.fail("startds", i, "name", f"{bad!r} is not a valid machine name")
        cfg = pool_cfg
        try:
            if "config_file" in t:
                if not isinstance(t["config_file"], str):
                    raise self.fail("startds", i, "config_file", "must be a path")
                cfg = load_config(self.base_dir / t["config_file"], cfg)
            if isinstance(t.get("config"), dict):
                cfg = self._config_table(t["config"], cfg, "startds.config", i)
            elif "config" in t:
                if not isinstance(t["config"], str):
                    raise self.fail(
                        "startds", i, "config", "must be a string of HTCondor config lines"
                    )
                cfg = parse_config(
                    self._inline("startds", i, "config", t["config"]), self.source, cfg
                )
            machine_layout(cfg, names[0])  # the startd's own view: refuses what does not fit
            check_knob_table(cfg, ("startd",))
            for knob in ("START", "RANK", "SLOT_WEIGHT"):
                if cfg.is_defined(knob):
                    cfg.get_expr(knob)
            # the startd's own checks: slot policies, SLOT_WEIGHT and consumption types
            Machine(names[0], cfg, "127.0.0.1:0", 0, 0.0).check_policies()
        except ConfigError as e:
            where = (
                f"{self.source}:{self.lines.table_start('startds', i) or 1}: [[startds]] #{i + 1}"
            )
            raise SpecError(_placed(str(e), where)) from None
        return MachineGroup(names, per_actor, cfg)

    def _schedds(self, t: dict[str, Any], i: int, taken: set[str], groups: int) -> ScheddGroup:
        self._unknown(t, _SCHEDD_KEYS, "schedds", i)
        count = self._num(t, "schedds", i, "count", 1, int, 1, maximum=MAX_SCHEDDS)
        per_actor = self._num(t, "schedds", i, "per_actor", count, int, 1)
        pattern = t.get("name", "schedd{}" if groups == 1 else f"schedd{i + 1}_{{}}")
        if not isinstance(pattern, str):
            raise self.fail("schedds", i, "name", "must be a string pattern such as 'schedd{}'")
        try:
            names = _format_names(pattern, count)
        except (IndexError, KeyError, ValueError) as e:
            raise self.fail("schedds", i, "name", f"bad name pattern {pattern!r}: {e}") from None
        for n in names:
            if n.lower() in taken or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.@\-]*", n):
                raise self.fail("schedds", i, "name", f"schedd name {n!r} is invalid or used twice")
            taken.add(n.lower())
        return ScheddGroup(names, per_actor)

    def _schedd(self, t: dict[str, Any], table: str, i: int, spec: PoolSpec) -> str:
        schedds = spec.schedd_names
        which = t.get("schedd", 0)
        if isinstance(which, bool) or not isinstance(which, (int, str)):
            raise self.fail(table, i, "schedd", "must be a schedd index or name")
        if isinstance(which, int):
            if not 0 <= which < len(schedds):
                raise self.fail(
                    table, i, "schedd", f"index {which} out of range (0..{len(schedds) - 1})"
                )
            return schedds[which]
        match = [n for n in schedds if n.lower() == which.lower()]
        if not match:
            raise self.fail(table, i, "schedd", f"no schedd named {which!r}")
        return match[0]

    def _workload(self, t: dict[str, Any], i: int, spec: PoolSpec) -> Workload:
        self._unknown(t, _WORKLOAD_KEYS, "workload", i)
        schedd = self._schedd(t, "workload", i, spec)
        names: dict[str, str] = {}
        for key, default in (("owner", ""), ("accounting_group", ""), ("name", f"workload{i + 1}")):
            v = t.get(key, default)
            if not isinstance(v, str) or ((v or key == "owner") and not _NAME.fullmatch(v)):
                raise self.fail(
                    "workload", i, key, f"must be a name (letters, digits, _ . -), got {v!r}"
                )
            names[key] = v
        jobs = self._num(t, "workload", i, "jobs", 1, int, 1, maximum=MAX_WORKLOAD_JOBS)
        if "duration" not in t:
            raise self.fail("workload", i, None, "needs duration (pool seconds, or a distribution)")
        try:
            return Workload(
                names["name"],
                names["owner"],
                schedd,
                jobs,
                duration=parse_distribution("duration", t["duration"]),
                arrival=parse_arrival("arrival", t.get("arrival", {"kind": "at_once"})),
                request_cpus=parse_distribution(
                    "request_cpus", t.get("request_cpus", 1), positive=True
                ),
                request_memory=parse_distribution(
                    "request_memory", t.get("request_memory", 128), positive=True
                ),
                request_disk=parse_distribution(
                    "request_disk", t.get("request_disk", 1024), positive=True
                ),
                accounting_group=names["accounting_group"],
            )
        except WorkloadError as e:
            raise self.fail("workload", i, e.key.split(".")[0], str(e)) from None

    def _generated(self, spec: PoolSpec) -> list[SubmitItem]:
        """The workloads' jobs as submit items (one per cluster), checked like [[submit]]."""
        out: list[SubmitItem] = []
        checked: set[str] = set()
        limit = spec.config.get_int("MAX_JOBS_PER_SUBMISSION")
        for c in generate(spec.workloads, spec.seed, max_per_cluster=limit):
            i = next(k for k, w in enumerate(spec.workloads) if w.name == c.workload)
            source = f"{self.source}:{self.lines.table_start('workload', i) or 1}"
            if c.workload not in checked:  # every cluster of a workload has the same form
                checked.add(c.workload)
                try:
                    parse_submit(
                        submit_description(c.form()), source, owner=c.owner, validate=parse_expr
                    )
                except SubmitError as e:
                    raise SpecError(f"{source}: [[workload]] #{i + 1}: {e}") from None
            out.append(SubmitItem(c.at, c.schedd, c.owner, submit_description(c), source))
        return out

    def _import_text(self, t: dict[str, Any], key: str) -> tuple[str, str] | None:
        path = t.get(key)
        if path is None:
            return None
        if not isinstance(path, str) or not path:
            raise self.fail("import", None, key, "must be a path")
        try:
            return read_user_file(self.base_dir / path), path
        except SubmitFileError as e:
            raise self.fail("import", None, key, str(e)) from None

    def _import_machines(self, t: Any, pool_cfg: ConfigDict) -> list[MachineGroup]:
        """[import] status: the machines of a condor_status -long dump, in families of
        machines whose configurations came out the same (see importer.py)."""
        if not isinstance(t, dict):
            raise self.fail(None, None, "import", "must be a table")
        self._unknown(t, _IMPORT_KEYS, "import", None)
        found = self._import_text(t, "status")
        if found is None:
            return []
        text, path = found
        per_actor = self._num(t, "import", None, "machines_per_actor", 100, int, 1)
        try:
            machines = read_machines(text, path)
        except ImportError_ as e:
            raise SpecError(f"{e} ([import] at {self._at('import', None)})") from None
        families: dict[str, list[ImportedMachine]] = {}
        for m in machines:
            if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.\-]*", m.name):
                raise SpecError(f"{path}:{m.line}: {m.name!r} is not a valid machine name")
            families.setdefault(m.config, []).append(m)
        groups = []
        for config, members in families.items():
            first = members[0]
            try:
                cfg = parse_config(config, f"{path}:{first.line} (machine {first.name})", pool_cfg)
                Machine(first.name, cfg, "127.0.0.1:0", 0, 0.0).check_policies()
            except ConfigError as e:
                raise SpecError(f"{e} ([import] at {self._at('import', None)})") from None
            groups.append(MachineGroup(tuple(m.name for m in members), per_actor, cfg))
        return groups

    def _import_jobs(self, t: dict[str, Any], spec: PoolSpec) -> list[SubmitItem]:
        """[import] queue: the idle, running and held jobs of a condor_q -long dump,
        queued again at time 0."""
        found = self._import_text(t, "queue")
        if found is None:
            return []
        text, path = found
        duration = self._num(t, "import", None, "duration", 3600.0, float, 0, strict=True)
        schedd = self._schedd(t, "import", None, spec)
        try:
            jobs = read_jobs(text, path, duration=duration)
        except ImportError_ as e:
            raise SpecError(f"{e} ([import] at {self._at('import', None)})") from None
        items = []
        for job in jobs:
            source = f"{path}:{job.line}"
            try:
                parse_submit(job.description, source, owner=job.owner, validate=parse_expr)
            except SubmitError as e:
                raise SpecError(f"{source}: [import]: {e}") from None
            items.append(SubmitItem(0.0, schedd, job.owner, job.description, source))
        return items

    def _trace(self, t: dict[str, Any], i: int, spec: PoolSpec, taken: set[str]) -> None:
        """A [[trace]]: its jobs as submit items, its removed jobs as removals."""
        self._unknown(t, _TRACE_KEYS, "trace", i)
        name = t.get("name", f"trace{i + 1}")
        if not isinstance(name, str) or not _NAME.fullmatch(name) or name in taken:
            raise self.fail(
                "trace",
                i,
                "name",
                f"must be a name not used twice (letters, digits, _ . -), got {name!r}",
            )
        taken.add(name)
        path = t.get("file")
        if not isinstance(path, str) or not path:
            raise self.fail("trace", i, "file" if "file" in t else None, "needs file (a path)")
        fmt = t.get("format")
        if fmt is not None and fmt not in FORMATS:
            raise self.fail(
                "trace", i, "format", f"must be one of {', '.join(FORMATS)}, got {fmt!r}"
            )
        on_error = t.get("on_error", "refuse")
        if on_error not in ON_ERROR:
            raise self.fail(
                "trace", i, "on_error", f"must be one of {', '.join(ON_ERROR)}, got {on_error!r}"
            )
        removals = t.get("removals", True)
        if not isinstance(removals, bool):
            raise self.fail("trace", i, "removals", f"must be true or false, got {removals!r}")
        compress = self._num(t, "trace", i, "compress", 1.0, float, 0, strict=True)
        shift = self._num(t, "trace", i, "shift", 0.0, float, 0)
        limit = self._num(t, "trace", i, "limit", 0, int, 0)
        schedd = self._schedd(t, "trace", i, spec)
        try:
            read = read_trace(self.base_dir / path, fmt, on_error=on_error, source=path)
        except TraceError as e:
            raise SpecError(f"{e} ([[trace]] #{i + 1} at {self._at('trace', i)})") from None
        jobs = replay(read.records, compress=compress, shift=shift, limit=limit, removals=removals)
        limit_per = spec.config.get_int("MAX_JOBS_PER_SUBMISSION")
        checked: set[str] = set()
        for c in submit_clusters(jobs, name, max_per_cluster=limit_per):
            source = f"{path}:{c.line}"
            if c.owner not in checked:  # clusters differ in numbers only, owners in names
                checked.add(c.owner)
                try:
                    parse_submit(c.description, source, owner=c.owner, validate=parse_expr)
                except SubmitError as e:
                    raise SpecError(f"{source}: [[trace]] #{i + 1}: {e}") from None
            spec.submits.append(SubmitItem(c.at, schedd, c.owner, c.description, source))
        removed = [j for j in jobs if j.remove_at is not None]
        spec.removals.extend(
            RemoveItem(
                j.remove_at,
                schedd,
                remove_constraint(name, j.job_id),
                f"trace {name}: job {j.job_id} was removed",
                f"{path}:{j.line}",
            )
            for j in removed
            if j.remove_at is not None
        )
        spec.traces.append(TraceSummary(name, path, len(jobs), len(removed), tuple(read.skipped)))

    def _submit(self, t: dict[str, Any], i: int, spec: PoolSpec) -> SubmitItem:
        self._unknown(t, _SUBMIT_KEYS, "submit", i)
        at = self._num(t, "submit", i, "at", 0.0, float, 0)
        schedd = self._schedd(t, "submit", i, spec)
        owner = t.get("owner", "")
        if not isinstance(owner, str) or not valid_owner(owner):
            raise self.fail(
                "submit", i, "owner", f"must name the submitting user (no blanks), got {owner!r}"
            )
        if ("description" in t) == ("file" in t):
            raise self.fail("submit", i, None, "needs exactly one of description or file")
        if "file" in t:
            path = self.base_dir / str(t["file"])
            try:
                text, source = read_user_file(path), str(t["file"])
            except SubmitFileError as e:
                raise self.fail("submit", i, "file", str(e)) from None
        else:
            if not isinstance(t["description"], str):
                raise self.fail("submit", i, "description", "must be a submit description string")
            text, source = self._inline("submit", i, "description", t["description"]), self.source
        try:
            inputs = read_submit_inputs(text, source, base_dir=self.base_dir)
            parse_submit(
                text,
                source,
                owner=owner,
                validate=parse_expr,
                item_files=inputs.item_files,
                env=inputs.env,
                max_jobs=spec.config.get_int("MAX_JOBS_PER_SUBMISSION"),
            )
        except (SubmitError, SubmitFileError) as e:
            raise SpecError(str(e)) from None
        return SubmitItem(at, schedd, owner, text, source, inputs)
