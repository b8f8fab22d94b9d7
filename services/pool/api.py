"""The Python API: start a pool, submit, query, wait, stop — in the shape of HTCondor's
own test harness (ornithology's ``Condor``), synchronous for scripts and tests.

```python
from mockpool import Pool

with Pool.from_spec("examples/pslot.toml") as pool:
    pool.submit("executable = /bin/sleep\\narguments = 60\\nqueue 15", owner="alice")
    pool.wait(lambda: len(pool.jobs("JobStatus == 4", history=True)) == 15, timeout=60)
    print(pool.negotiator_log.cycles[0].matches)
```

Ray is started (a local, embedded instance listening on loopback only; see
``localray``) when not already initialised, and shut down on ``stop()`` only if this pool
started it. The pool's own event loop runs on a
background thread; every method is safe to call from the thread that made the pool.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Callable, Coroutine, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from ..auth import Role
from ..classad import ClassAd
from .apibase import PoolBase, clock_of, spec_from
from .client import ActResult, PoolError
from .cluster import join_cluster
from .host import ROUTABLE
from .launcher import LivePool
from .localray import LocalRay, start_local_ray, stop_local_ray
from .measures import measure, write_series
from .metrics import MetricsSnapshot, PoolMetrics, exposition
from .report import AD_FILES, summarize, without_finished, write_output
from .spec import load_spec
from .spececho import echo_spec
from .specmodel import PoolSpec
from .virtual import CLOCKS

T = TypeVar("T")
log = logging.getLogger(__name__)

__all__ = ["Pool", "run_pool"]


class Pool(PoolBase):
    """A live pool on Ray. ``with Pool(spec) as pool: ...`` or ``start()``/``stop()``.

    A virtual one (``clock = "virtual"``) runs on the simulation kernel: ``Pool(spec)``
    gives a :class:`~mockpool.kernel.api.KernelApiPool`, which answers the same calls."""

    def __new__(
        cls,
        spec: PoolSpec | str | os.PathLike[str] | None = None,
        *,
        config: Mapping[str, Any] | str | None = None,
        **kw: Any,
    ) -> Any:
        if cls is Pool and clock_of(spec, kw) == "virtual":
            from ..kernel.api import KernelApiPool

            # (not a Pool: made here, whole; Python leaves its __init__ to it)
            return KernelApiPool(spec, config=config, **kw)
        return super().__new__(cls)

    def __init__(
        self,
        spec: PoolSpec | str | os.PathLike[str] | None = None,
        *,
        config: Mapping[str, Any] | str | None = None,
        state_dir: str | Path | None = None,
        address: str = "",
        **overrides: Any,
    ) -> None:
        self.spec = spec_from(spec, config, overrides)
        if self.spec.clock not in CLOCKS:
            raise ValueError(f"clock must be one of {', '.join(CLOCKS)}, got {self.spec.clock!r}")
        self._live = LivePool(self.spec, state_dir=state_dir)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="mockpool-pool", daemon=True
        )
        # The Ray this pool started (loopback only), None when Ray was already running.
        self.local_ray: LocalRay | None = None
        self.address = address  # a Ray cluster to run on ("" : a local Ray of its own)
        self._joined = False
        self._running = False
        self._metrics_server: Any = None
        self._master: Any = None  # the master's gRPC server, when served
        self.metrics_url = ""  # where a live pool serves its Prometheus metrics, if asked

    @classmethod
    def from_spec(cls, path: str | os.PathLike[str], **kw: Any) -> Pool:
        return cls(load_spec(path), **kw)

    def _run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    # ------------------------------------------------------------------ lifecycle
    virtual = False  # a live pool (virtual ones are KernelApiPools)

    def start(self) -> Pool:
        import ray

        if self.address:
            join_cluster(self.address)  # ClusterError, fast, if it cannot be reached
            self._joined = True
        elif not ray.is_initialized():
            self.local_ray = start_local_ray(
                max(2, os.cpu_count() or 2), log_to_driver=False, configure_logging=False
            )
        self._thread.start()
        try:
            self._run(self._live.start())
            if self.spec.metrics_port:
                self._serve_metrics(self.spec.metrics_port)
        except BaseException:
            self.stop()
            raise
        self._running = True
        return self

    def metrics(self) -> MetricsSnapshot:
        """What a Prometheus scrape of this pool reads now."""
        snap = self._live.metrics_snapshot(htcondor=self.spec.metrics_htcondor)
        return self._run(snap, timeout=60)

    def _serve_metrics(self, port: int) -> None:
        from prometheus_client import CollectorRegistry, start_http_server

        addr = self.spec.host
        if addr == ROUTABLE:  # on a Ray cluster: this node's address, as the daemons'
            import ray

            addr = ray.util.get_node_ip_address()
        registry = CollectorRegistry(auto_describe=False)
        registry.register(PoolMetrics(self.metrics, htcondor=self.spec.metrics_htcondor))
        try:
            server, _thread = start_http_server(port, addr=addr, registry=registry)
        except OSError as exc:
            raise RuntimeError(
                f"cannot serve metrics on {addr}:{port}: {exc.strerror or exc}"
            ) from None
        self._metrics_server = server
        host = f"[{addr}]" if ":" in addr else addr
        self.metrics_url = f"http://{host}:{server.server_port}/metrics"

    def stop(self) -> list[dict[str, Any]]:
        status: list[dict[str, Any]] = []
        if self._metrics_server is not None:
            self._metrics_server.shutdown()
            self._metrics_server.server_close()
            self._metrics_server = None
        if self._thread.is_alive():
            try:
                if self._master is not None:
                    self._run(self._master.stop(0.5), timeout=10)
                    self._master = None
                status = self._run(self._live.stop(), timeout=60)
            finally:
                self._loop.call_soon_threadsafe(self._loop.stop)
                self._thread.join(10)
        self._running = False
        if self.local_ray is not None:
            stop_local_ray(self.local_ray)
            self.local_ray = None
        if self._joined:  # leave the cluster running: this process only disconnects
            import ray

            ray.shutdown()
            self._joined = False
        return status

    # ------------------------------------------------------------------ faults
    def fault(self, kind: str, target: str = "", **keys: Any) -> None:
        """Inject a fault now (``duration`` and the rest as in a ``[[faults]]`` table;
        see faults.py): ``pool.fault("crash", "schedd1", duration=120)``. A plan that
        cannot run raises FaultError before anything is injected."""
        self._run(self._live.inject({"kind": kind, "target": target, **keys}, "Pool.fault"))

    def serve_master(self) -> str:
        """Serve the master service (``mockpool fault``, ``mockpool daemons``) beside the
        pool; its address. Stopped with the pool."""
        from .master import serve_master

        self._master, address = self._run(serve_master(self._live, self.spec.host))
        return address

    def crash(self, target: str) -> None:
        """Kill the actor of daemon ``target`` as kill -9 would; it stays down."""
        self._run(self._live.crash(target, cause="Pool.crash"))

    def restart(self, target: str) -> None:
        """Start the actor of daemon ``target`` again (crashing it first if it runs)."""
        self._run(self._live.restart(target, cause="Pool.restart"), timeout=120)

    # ------------------------------------------------------------------ time
    @property
    def now(self) -> float:
        """Pool time, in pool seconds since the pool started."""
        return self._live.now()

    def sleep_until(self, t: float) -> None:
        self._run(self._live.sleep_until(t))

    def run_for(
        self,
        duration: float,
        *,
        until_done: bool = False,
        step: float = 1.0,
        progress: Callable[[float, float], None] | None = None,
    ) -> None:
        """Let the pool run to pool time ``duration`` (or, ``until_done``, until every
        workload item is in and every job has left the queues, looked at every ``step``
        pool seconds); ``progress(now, duration)`` after each step."""
        self._run(self._live.run_for(duration, until_done=until_done, step=step, on_step=progress))

    # ------------------------------------------------------------------ talking to it
    @property
    def client(self) -> Any:
        assert self._live.client is not None, "the pool is not running"
        return self._live.client

    def submit(
        self,
        description: str,
        *,
        owner: str = "mockpool",
        schedd: str = "",
        source: str = "<submit>",
    ) -> tuple[int, int]:
        """Queue a submit description; returns (cluster id, number of jobs). The item files
        it names (``queue ... from <file>``) are read here, from the current folder."""
        return self._run(self.client.submit(description, owner=owner, schedd=schedd, source=source))

    def jobs(
        self,
        constraint: str = "",
        projection: Sequence[str] = (),
        *,
        schedd: str = "",
        history: bool = False,
    ) -> list[ClassAd]:
        return self._run(self.client.jobs(constraint, projection, schedd=schedd, history=history))[
            0
        ]

    def ads(
        self, ad_type: str = "Machine", constraint: str = "", projection: Sequence[str] = ()
    ) -> list[ClassAd]:
        return self._run(self.client.query(ad_type, constraint, projection))

    def userprio(self, action: str = "", name: str = "", value: float = 0.0) -> list[ClassAd]:
        """condor_userprio: the Accounting ads after ``action`` ("" reads; setfactor,
        setprio, resetusage, delete change submitter ``name``)."""
        ads, _now = self._run(self.client.userprio(action, name, value))
        return ads

    @property
    def state_dir(self) -> Path:
        """Where a live pool's daemons keep what survives a restart
        (``central/accountant.json``, the schedds' queues, ...); owner-only: the queues
        hold claim ids. A virtual pool keeps that on a simulated disk in memory."""
        return self._live.state_dir

    def act(
        self,
        action: str,
        job_ids: Sequence[str] = (),
        *,
        constraint: str = "",
        reason: str = "",
        schedd: str = "",
    ) -> list[ActResult]:
        return self._run(
            self.client.act(action, job_ids, constraint=constraint, reason=reason, schedd=schedd)
        )

    def status(self) -> list[dict[str, Any]]:
        return self._run(self._live.status())

    def down_daemons(self) -> list[str]:
        """The daemons down now (crashed and not restarted), by name."""
        return self._live.down_daemons()

    # ------------------------------------------------------------------ what happened
    def drain(self) -> None:
        self._run(self._live.drain())

    @property
    def events(self) -> list[dict[str, Any]]:
        self.drain()
        return self._live.events

    def take_events(self) -> list[dict[str, Any]]:
        """Events drained from the actors since the last take (oldest first per actor)."""
        self.drain()
        return self._live.take_events()

    @property
    def negotiator_log_lines(self) -> list[str]:
        return self._live.negotiator_log_lines

    @property
    def epoch_wall(self) -> float:
        """Wall-clock time (Unix seconds) of pool time 0."""
        return self._live.epoch_wall

    @property
    def log_base_wall(self) -> float:
        """The date the NegotiatorLog and tools print for pool time 0."""
        return self._live.log_base_wall

    @property
    def token(self) -> str:
        """An ADMIN token: the queue superuser (``submit(owner=...)`` submits as anyone)."""
        return self._live.token

    @property
    def secret(self) -> str:
        """The pool secret, from which every token is minted (keep it owner-only)."""
        return self._live.secret

    def make_token(self, role: Role | str, identity: str = "") -> str:
        """A token for this pool, e.g. ``make_token("submit", "alice")``: acts as alice."""
        return self._live.make_token(role, identity)

    @property
    def collector_address(self) -> str:
        return self._live.collector_address

    def cedar_address(self, daemon: str = "") -> str:
        """``host:port`` where HTCondor's own clients (``htcondor2``, the ``htcondor``
        tool) reach ``daemon`` (default: the collector); "" without CEDAR (a virtual
        pool, or ``[pool] cedar = false``)."""
        return self._live.cedar_address(daemon)

    def write_condor_config(self, folder: str | Path) -> Path:
        """Write a ``condor_config`` (and what it names) into ``folder`` with which
        HTCondor's clients reach this pool with no arguments: set ``CONDOR_CONFIG`` to
        the path returned. The first schedd is their "local" schedd."""
        from ..auth import pool_key
        from ..claimid import sinful
        from .condor_config import write_client_config

        collector = self.cedar_address()
        if not collector:
            raise PoolError("this pool has no CEDAR listeners (virtual, or [pool] cedar = false)")
        schedd = self.spec.schedd_names[0]
        grpc = self._live.actor(schedd).address
        return write_client_config(
            Path(folder),
            collector,
            sinful(grpc, self.cedar_address(schedd)),
            trust_domain=pool_key(self.secret)[1],
        )

    # ------------------------------------------------------------------ a whole run
    def collect(
        self,
        out: str | Path | None = None,
        real_seconds: float = 0.0,
        events: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """Gather final ads and jobs, compute the summary, write ``out`` if given.
        ``events``: the events already taken (``take_events``), which the pool no longer
        keeps; those drained since are added to them."""
        # The workload waits meanwhile: the queues read here and the count of submitted
        # jobs must agree (a submission in flight would be in one and not the other).
        lock = self._live.feed_lock
        self._run(lock.acquire())
        try:
            return self._collect(out, real_seconds, events)
        finally:
            self._loop.call_soon_threadsafe(lock.release)

    def _ads_or_none(self, ad_type: str) -> list[ClassAd] | None:
        """The collector's ads of a type; None when the collector cannot be reached."""
        try:
            return self.ads(ad_type)
        except PoolError as exc:
            log.warning("no %s ads: the collector did not answer: %s", ad_type, exc)
            return None

    def _schedd_jobs(self, name: str, down: set[str]) -> tuple[list[ClassAd], list[ClassAd]]:
        """Schedd ``name``'s queue and history: asked, or (down, or not answering) read
        from its queue file, with the events it stored that were not gathered."""
        if name.lower() not in down:
            # at its actor's address: the collector may be down while the schedd is not
            address = self._live.actor(name).address
            try:
                in_queue = self._run(self.client.jobs(schedd=name, address=address))[0]
                done = self._run(self.client.jobs(schedd=name, address=address, history=True))[0]
                return without_finished(in_queue, done), done
            except PoolError as exc:
                log.warning("schedd %s did not answer: reading its queue file (%s)", name, exc)
                down.add(name.lower())
        try:
            stored = self._live.read_dead_schedd(name)
        except (OSError, sqlite3.Error) as exc:
            self._live.workload_errors.append(f"schedd {name}: queue not read: {exc}")
            return [], []
        return stored.jobs, stored.history

    def _collect(
        self, out: str | Path | None, real_seconds: float, taken: list[dict[str, Any]] | None
    ) -> dict[str, Any]:
        """What is up is asked; a schedd that is down is read from its queue file; a
        central manager that is down leaves the ads it would have given empty."""
        now = self.now
        self.drain()
        down = {d.lower() for d in self._live.down_daemons()}
        queue, history = [], []
        for name in self.spec.schedd_names:
            q, h = self._schedd_jobs(name, down)
            queue += q
            history += h
        found = {k: self._ads_or_none(k) for k in AD_FILES.values()}
        if found["Machine"] is None:
            down.add("collector")
        slots = found["Machine"] or []
        negotiators = found["Negotiator"] or []
        status = self.status()
        down |= {d.lower() for d in self._live.down_daemons()}
        neg_status = next(
            (s for h in status for k, s in h["services"].items() if k == "NegotiatorService"), {}
        )
        summary = summarize(
            now=now,
            real_seconds=real_seconds or now / self.spec.time_scale,
            time_scale=self.spec.time_scale,
            slots=slots,
            jobs=queue + history,
            negotiator=negotiators[0] if negotiators else None,
            negotiator_status=neg_status,
            host_status=status,
            jobs_submitted=sum(n for _, _, n in self._live.submitted),
            workload_errors=self._live.workload_errors,
            machines=len(self.spec.machine_names),
            start_date=self.log_base_wall,
        )
        names = {d.lower(): d for a in self._live.actors() for d in a.plan.daemons}
        summary["down_at_end"] = sorted(names.get(d, d) for d in down)
        events = self.events if taken is None else [*taken, *self.take_events()]
        summary["spec"] = echo_spec(self.spec)
        m = measure(
            events,
            now=now,
            total_cpus=summary["total_cpus"],
            lag=summary["lag"],
            config=summary["spec"]["config"],
        )
        summary["measures"] = m.summary
        if out is not None:
            ads = {name: found[ad_type] or [] for name, ad_type in AD_FILES.items()}
            ads |= {"jobs": queue, "history": history}
            write_output(
                Path(out),
                events=events,
                negotiator_log=self._live.negotiator_log_lines,
                ads=ads,
                summary=summary,
            )
            write_series(Path(out), m)
            prom = exposition(self._metrics_or_hosts(), htcondor=self.spec.metrics_htcondor)
            (Path(out) / "metrics.prom").write_bytes(prom)
        return summary

    def _metrics_or_hosts(self) -> MetricsSnapshot:
        """The metrics; with the collector down, the actors' own figures alone."""
        try:
            return self.metrics()
        except PoolError:
            return MetricsSnapshot(hosts=self.status(), slot_states=Counter(), submitters=[])


def run_pool(
    spec: PoolSpec,
    out: str | Path | None = None,
    progress: Callable[[float, float], None] | None = None,
    address: str = "",
) -> dict[str, Any]:
    """Run ``spec`` for its duration (or until its work is done, if it says so); write
    ``out``; return the summary. ``progress(now, duration)`` is called every step."""
    with Pool(spec, address=address) as pool:
        t0 = time.monotonic()
        if pool.virtual:
            # Virtual steps cost nothing when nothing happens; small ones end an
            # until-done run within a pool second of its last job.
            step = 1.0 if spec.until_done else max(1.0, spec.duration / 500)
        else:
            step = max(1.0, spec.time_scale)  # about a real second
        pool.run_for(spec.duration, until_done=spec.until_done, step=step, progress=progress)
        return pool.collect(out, real_seconds=time.monotonic() - t0)
