"""Generated workloads: job shapes from distributions, arrivals over pool time.

A ``[[workload]]`` table in the pool spec describes one submitter's stream of jobs::

    [[workload]]
    owner = "alice"
    accounting_group = "group_a"      # optional
    schedd = 0                        # index or name, as in [[submit]]
    jobs = 200                        # how many jobs the stream holds
    duration = { dist = "normal", mean = 90, sigma = 20 }    # pool seconds (or a number)
    arrival = { kind = "poisson", rate = 0.5 }               # jobs per pool second
    request_cpus = 1                  # a number or a distribution, as duration
    request_memory = { dist = "uniform", low = 256, high = 2048 }   # MB
    request_disk = 1048576            # KB

Distributions (``dist``): ``fixed`` (value), ``uniform`` (low, high), ``normal`` (mean,
sigma; cut at 0), ``exponential`` (mean), ``lognormal`` (mu, sigma of the log) and
``empirical`` (values: drawn uniformly with replacement). A bare number is ``fixed``.
Requests are rounded to whole units, at least 1.

Arrivals (``kind``): ``at_once`` (at), ``poisson`` (rate, start), ``bursts`` (every,
size, start: ``size`` jobs every ``every`` seconds) and ``daily`` (rate, amplitude in
[0, 1], period = 86400, peak = period / 2, start: Poisson whose rate follows
rate·(1 + amplitude·cos(2π(t - peak)/period))).

Everything here is pure: :func:`generate` takes the parsed workloads and a seed and
returns the jobs, so a live launcher and a virtual driver submit the same ones. Each
workload draws from its own stream of the pool seed, so adding a workload leaves the
others' jobs as they were.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

__all__ = [
    "ARRIVALS",
    "DISTRIBUTIONS",
    "Arrival",
    "Distribution",
    "GeneratedCluster",
    "Workload",
    "WorkloadError",
    "generate",
    "parse_arrival",
    "parse_distribution",
    "submit_description",
]


class WorkloadError(ValueError):
    """A distribution or arrival that cannot be drawn from; ``key`` says which parameter."""

    def __init__(self, key: str, problem: str) -> None:
        super().__init__(f"{key}: {problem}")
        self.key = key


# the parameters each distribution or arrival takes: required, then optional with defaults
DISTRIBUTIONS: dict[str, tuple[tuple[str, ...], dict[str, Any]]] = {
    "fixed": (("value",), {}),
    "uniform": (("low", "high"), {}),
    "normal": (("mean", "sigma"), {}),
    "exponential": (("mean",), {}),
    "lognormal": (("mu", "sigma"), {}),
    "empirical": (("values",), {}),
}
ARRIVALS: dict[str, tuple[tuple[str, ...], dict[str, Any]]] = {
    "at_once": ((), {"at": 0.0}),
    "poisson": (("rate",), {"start": 0.0}),
    "bursts": (("every", "size"), {"start": 0.0}),
    "daily": (("rate",), {"amplitude": 1.0, "period": 86400.0, "peak": None, "start": 0.0}),
}


def _number(key: str, v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise WorkloadError(key, f"must be a finite number, got {v!r}")
    return float(v)


def _params(
    key: str, table: Any, kinds: dict[str, tuple[tuple[str, ...], dict[str, Any]]], tag: str
) -> tuple[str, dict[str, Any]]:
    if not isinstance(table, dict):
        raise WorkloadError(
            key, f"must be a number or a table such as {{ {tag} = ... }}, got {table!r}"
        )
    kind = table.get(tag)
    if kind not in kinds:
        raise WorkloadError(
            f"{key}.{tag}", f"unknown {tag} {kind!r} (expected one of {', '.join(kinds)})"
        )
    required, optional = kinds[kind]
    for k in table:
        if k != tag and k not in required and k not in optional:
            allowed = ", ".join((*required, *optional)) or "nothing else"
            raise WorkloadError(f"{key}.{k}", f"unknown parameter for {kind} (expected {allowed})")
    for k in required:
        if k not in table:
            raise WorkloadError(f"{key}.{k}", f"{kind} needs {k}")
    return kind, {**optional, **{k: v for k, v in table.items() if k != tag}}


@dataclass(frozen=True)
class Distribution:
    kind: str
    params: tuple[tuple[str, Any], ...]

    def p(self, name: str) -> Any:
        return dict(self.params)[name]

    @property
    def mean(self) -> float:
        """The distribution's mean (before the cut at 0 of ``normal``)."""
        k = self.kind
        if k == "fixed":
            return self.p("value")
        if k == "uniform":
            return (self.p("low") + self.p("high")) / 2
        if k in ("normal", "exponential"):
            return self.p("mean")
        if k == "lognormal":
            return math.exp(self.p("mu") + self.p("sigma") ** 2 / 2)
        return float(np.mean(self.p("values")))

    def draw(self, rng: np.random.Generator, n: int) -> np.ndarray:
        k = self.kind
        if k == "fixed":
            return np.full(n, float(self.p("value")))
        if k == "uniform":
            return rng.uniform(self.p("low"), self.p("high"), n)
        if k == "normal":
            return np.maximum(0.0, rng.normal(self.p("mean"), self.p("sigma"), n))
        if k == "exponential":
            return rng.exponential(self.p("mean"), n)
        if k == "lognormal":
            return rng.lognormal(self.p("mu"), self.p("sigma"), n)
        values = np.asarray(self.p("values"), dtype=float)
        return values[rng.integers(0, len(values), n)]


def parse_distribution(key: str, value: Any, *, positive: bool = False) -> Distribution:
    """A distribution from its spec value; ``positive`` for requests (cpus, memory, disk)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = {"dist": "fixed", "value": value}
    kind, raw = _params(key, value, DISTRIBUTIONS, "dist")
    params: dict[str, Any] = {}
    for name, v in raw.items():
        if name == "values":
            if not isinstance(v, list) or not v:
                raise WorkloadError(
                    f"{key}.values", f"must be a non-empty list of numbers, got {v!r}"
                )
            params[name] = tuple(_number(f"{key}.values[{i}]", x) for i, x in enumerate(v))
            bad = [x for x in params[name] if x < 0]
            if bad:
                raise WorkloadError(f"{key}.values", f"must not be negative, got {bad[0]:g}")
        else:
            params[name] = _number(f"{key}.{name}", v)
    # impossible parameters: a negative duration or spread, an empty range
    for name in ("value", "low", "high", "mean"):
        if name in params and params[name] < 0:
            raise WorkloadError(f"{key}.{name}", f"must be >= 0, got {params[name]:g}")
    if "sigma" in params and params["sigma"] < 0:
        raise WorkloadError(f"{key}.sigma", f"must be >= 0, got {params['sigma']:g}")
    if kind == "uniform" and params["high"] < params["low"]:
        raise WorkloadError(
            f"{key}.high", f"must be >= low ({params['low']:g}), got {params['high']:g}"
        )
    if positive and kind == "fixed" and params["value"] <= 0:
        raise WorkloadError(f"{key}.value", f"must be > 0, got {params['value']:g}")
    return Distribution(kind, tuple(sorted(params.items())))


@dataclass(frozen=True)
class Arrival:
    kind: str
    params: tuple[tuple[str, Any], ...]

    def p(self, name: str) -> Any:
        return dict(self.params)[name]

    def times(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """Pool times of ``n`` arrivals, ascending."""
        k = self.kind
        if k == "at_once":
            return np.full(n, self.p("at"))
        start = self.p("start")
        if k == "poisson":
            return start + np.cumsum(rng.exponential(1.0 / self.p("rate"), n))
        if k == "bursts":
            size = int(self.p("size"))
            return start + self.p("every") * (np.arange(n) // size)
        # daily: thinning (Lewis & Shedler) of a Poisson stream at the peak rate
        rate, amp, period = self.p("rate"), self.p("amplitude"), self.p("period")
        peak = period / 2 if self.p("peak") is None else self.p("peak")
        top = rate * (1 + amp)
        out: list[float] = []
        t = start
        while len(out) < n:
            gaps = rng.exponential(1.0 / top, 2 * (n - len(out)) + 16)
            keep = rng.uniform(0, top, len(gaps))
            for gap, u in zip(gaps, keep, strict=True):
                t += gap
                if u <= rate * (1 + amp * math.cos(2 * math.pi * (t - peak) / period)):
                    out.append(t)
                    if len(out) == n:
                        break
        return np.asarray(out)


def parse_arrival(key: str, value: Any) -> Arrival:
    kind, raw = _params(key, value, ARRIVALS, "kind")
    params = {name: (None if v is None else _number(f"{key}.{name}", v)) for name, v in raw.items()}
    for name in ("rate", "every", "size", "period"):
        if name in params and params[name] <= 0:
            raise WorkloadError(f"{key}.{name}", f"must be > 0, got {params[name]:g}")
    for name in ("at", "start"):
        if name in params and params[name] < 0:
            raise WorkloadError(f"{key}.{name}", f"must be >= 0, got {params[name]:g}")
    if kind == "bursts" and params["size"] != int(params["size"]):
        raise WorkloadError(f"{key}.size", f"must be a whole number, got {params['size']:g}")
    if kind == "daily" and not 0 <= params["amplitude"] <= 1:
        raise WorkloadError(f"{key}.amplitude", f"must be in [0, 1], got {params['amplitude']:g}")
    return Arrival(kind, tuple(sorted(params.items())))


@dataclass(frozen=True)
class Workload:
    """One ``[[workload]]`` table, parsed."""

    name: str
    owner: str
    schedd: str
    jobs: int
    duration: Distribution
    arrival: Arrival
    request_cpus: Distribution
    request_memory: Distribution
    request_disk: Distribution
    accounting_group: str = ""


@dataclass(frozen=True)
class GeneratedCluster:
    """Jobs of one workload with the same arrival time and requests: one submit, one
    cluster, each job its own duration (as an HTCondor user queues a list of items)."""

    workload: str
    at: float
    schedd: str
    owner: str
    accounting_group: str
    durations: tuple[float, ...]  # pool seconds (MockDuration), one per job
    cpus: int
    memory: int  # MB
    disk: int  # KB

    @property
    def count(self) -> int:
        return len(self.durations)

    def form(self) -> GeneratedCluster:
        """This cluster cut to the jobs that give its submit description its form: the
        first, and the first of another duration (checking 20,000 jobs checks nothing
        that these two do not)."""
        first = self.durations[0]
        other = next((d for d in self.durations if d != first), None)
        return replace(self, durations=(first,) if other is None else (first, other))


def _requests(d: Distribution, rng: np.random.Generator, n: int) -> np.ndarray:
    return np.maximum(1, np.rint(d.draw(rng, n))).astype(int)


def generate(
    workloads: list[Workload], seed: int, *, max_per_cluster: int | None = None
) -> list[GeneratedCluster]:
    """The jobs of ``workloads`` for pool seed ``seed``, grouped into clusters, by time;
    a group larger than ``max_per_cluster`` (a schedd's MAX_JOBS_PER_SUBMISSION) is split."""
    streams = np.random.SeedSequence(seed).spawn(len(workloads))
    out: list[GeneratedCluster] = []
    for w, stream in zip(workloads, streams, strict=True):
        rng = np.random.default_rng(stream)
        times = np.round(w.arrival.times(rng, w.jobs), 3)
        durations = np.round(w.duration.draw(rng, w.jobs), 3)
        cpus = _requests(w.request_cpus, rng, w.jobs)
        memory = _requests(w.request_memory, rng, w.jobs)
        disk = _requests(w.request_disk, rng, w.jobs)
        shapes: dict[tuple[float, int, int, int], list[float]] = {}
        for at, dur, c, m, d in zip(
            times.tolist(),
            durations.tolist(),
            cpus.tolist(),
            memory.tolist(),
            disk.tolist(),
            strict=True,
        ):
            shapes.setdefault((at, c, m, d), []).append(dur)
        for (at, c, m, d), durs in shapes.items():
            size = max_per_cluster or len(durs)
            for first in range(0, len(durs), size):
                part = tuple(durs[first : first + size])
                out.append(
                    GeneratedCluster(
                        w.name, at, w.schedd, w.owner, w.accounting_group, part, c, m, d
                    )
                )
    out.sort(key=lambda g: g.at)  # stable: workloads keep their order at equal times
    return out


def _seconds(x: float) -> str:
    return np.format_float_positional(x, trim="-")


def submit_description(c: GeneratedCluster) -> str:
    """The submit description that queues cluster ``c``: ``queue N`` when its jobs last
    alike, else ``queue MockDurationItem from (...)``, one line a job."""
    alike = len(set(c.durations)) == 1
    lines = [
        "executable = /bin/sleep",
        f"arguments = {_seconds(c.durations[0]) if alike else '$(MockDurationItem)'}",
        f"request_cpus = {c.cpus}",
        f"request_memory = {c.memory}",
        f"request_disk = {c.disk}",
        f'+MockWorkload = "{c.workload}"',
    ]
    if c.accounting_group:
        lines.append(f"accounting_group = {c.accounting_group}")
    if alike:
        lines.append(f"queue {c.count}")
    else:
        lines += ["queue MockDurationItem from (", *map(_seconds, c.durations), ")"]
    return "\n".join(lines) + "\n"
