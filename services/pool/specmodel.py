"""A parsed pool spec's records (PoolSpec, its machine and schedd groups, submit and
remove items, trace summaries, SpecError) and the keys each of its tables accepts, with
the bounds on what one table may ask for. ``spec.py`` parses a spec into them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..config import ConfigDict
from ..schedd.submit import SubmitInputs
from .faults import Fault
from .virtual import CycleCost
from .workload import Workload


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


POOL_KEYS = {
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

STARTD_KEYS = {"name", "count", "machines_per_actor", "config", "config_file"}
SCHEDD_KEYS = {"name", "count", "per_actor"}
SUBMIT_KEYS = {"at", "schedd", "owner", "description", "file"}
WORKLOAD_KEYS = {
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
TRACE_KEYS = {
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
IMPORT_KEYS = {"status", "queue", "duration", "machines_per_actor", "schedd"}
TOP_KEYS = {
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
NAME_PATTERN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*")
ACCOUNTANT_KEYS = {"factor", "priority"}
