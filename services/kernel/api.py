"""The Python API's :class:`~mockpool.pool.api.Pool` in virtual time, on the simulation
kernel: every daemon core in this process, stepped directly.

``Pool(spec)`` with ``clock = "virtual"`` makes one of these. Pool time stands still
between the caller's calls and moves only as far as ``sleep_until``, ``wait`` or ``run``
let it. A call from the caller (submit, a query, an act) reaches its daemon's core at
once and takes no pool time, as a virtual pool's calls from outside never did; it goes
through the same core calls a live servicer makes, and is refused with the same
:class:`PoolError` codes (a daemon that is down refuses it, a paused one never answers).
"""

from __future__ import annotations

import itertools
import os
import tempfile
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import grpc

from .. import gctune
from ..auth import Role, make_secret, make_token
from ..classad import ClassAd
from ..collector.collector import refusal_code
from ..collector.store import CollectorError, matching, projection_keys
from ..contract import Peer, Undeliverable
from ..messages import NegotiatorUserPrio
from ..pool.apibase import PoolBase, spec_from
from ..pool.client import ActResult, PoolError
from ..pool.faults import check_plan, parse_fault, plan_steps
from ..pool.metrics import MetricsSnapshot
from ..pool.progress import load_progress
from ..pool.scrape import scrape
from ..pool.specmodel import PoolSpec
from ..pool.submit_files import SubmitFileError, read_submit_inputs
from ..pool.virtual import CLOCKS
from ..poolsecret import pool_secret
from ..schedd.queue import QueueError
from ..schedd.records import CostlyConstraint, ScheddError
from ..schedd.submit import SubmitError
from ..v1 import collector_pb2 as cpb
from ..wire import ads_from_pb, frame_parts
from .daemons import DRIVER
from .faults import run_now
from .kernel import Node
from .pool import KernelPool

__all__ = ["KernelApiPool"]

_CALLER = Peer("", DRIVER)  # the caller: the pool's administrator, from outside the pool


def _refused(code: str, text: str) -> PoolError:
    return PoolError(text, getattr(grpc.StatusCode, code, grpc.StatusCode.UNKNOWN))


class _Client:
    """Collector queries from outside the pool (a metrics scrape, a fault plan's targets),
    answered as the pool's own ``ads`` answers them: projected, refused with PoolError."""

    def __init__(self, pool: KernelApiPool) -> None:
        self._pool = pool

    async def query(
        self, ad_type: str, constraint: str = "", projection: Sequence[str] = ()
    ) -> list[ClassAd]:
        return self._pool.ads(ad_type, constraint, projection)


class KernelApiPool(PoolBase):
    """A virtual pool on the kernel, with the Python API of a live one."""

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
        if address:
            raise ValueError("a virtual pool runs in this process: it takes no cluster address")
        self.kp = KernelPool(self.spec)
        self.kp.client = _Client(self)  # (a fault plan's queries go as a live driver's)
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        if state_dir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="mockpool-")
            state_dir = self._tmp.name
        self._state_dir = Path(state_dir)
        load_progress(self._state_dir, virtual=True)  # (refuses a live pool's folder)
        self._secret = pool_secret(self.spec.secret_file) or make_secret()
        self._token = make_token(self._secret, Role.ADMIN, "admin")
        self._taken = 0  # events handed out by take_events
        self._corr = itertools.count(1)
        self.local_ray = None
        self.address = ""
        self.metrics_url = ""
        self._running = False
        self._gc_before: tuple[int, int, int] | None = None

    # ------------------------------------------------------------------ lifecycle
    @property
    def virtual(self) -> bool:
        return True

    def start(self) -> KernelApiPool:
        self.kp.start()
        # every daemon in this process: pace the collector while the pool lives
        self._gc_before = gctune.paced(gctune.VIRTUAL_THRESHOLDS)
        self._running = True
        return self

    def stop(self) -> list[dict[str, Any]]:
        status = self.status() if self._running else []
        self._running = False
        if self._gc_before is not None:
            gctune.restore(self._gc_before)
            self._gc_before = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None
        return status

    def run_for(
        self,
        duration: float,
        *,
        until_done: bool = False,
        step: float = 1.0,
        progress: Callable[[float, float], None] | None = None,
    ) -> None:
        self.kp.run(duration, until_done=until_done, step=step, progress=progress)
        if progress is not None:
            progress(self.now, duration)

    # ------------------------------------------------------------------ faults
    def fault(self, kind: str, target: str = "", **keys: Any) -> None:
        table = {"at": self.now, "kind": kind, "target": target, **keys}
        if not table.get("target"):
            table.pop("target", None)
        plan = check_plan(parse_fault(table, "Pool.fault"), self.kp.plans)
        for at, f, begins in plan_steps(plan):
            self.kp.kernel.call_at(at, lambda f=f, b=begins: self.kp._fault_step(f, b))
        self.kp.kernel.run_until(self.now)  # what is due now happens before the call returns

    def serve_master(self) -> str:
        raise PoolError("a virtual pool has no master service: use Pool.fault and Pool.crash")

    def crash(self, target: str) -> None:
        self._known(target)
        run_now(self.kp.crash(target, cause="Pool.crash"))

    def restart(self, target: str) -> None:
        self._known(target)
        run_now(self.kp.restart(target, cause="Pool.restart"))

    def _known(self, target: str) -> None:
        try:
            self.kp.actor(target)
        except KeyError:
            names = ", ".join(sorted(d for p in self.kp.plans for d in p.daemons))
            raise KeyError(f"no daemon or actor {target!r} in this pool (it has {names})") from None

    # ------------------------------------------------------------------ time
    @property
    def now(self) -> float:
        return self.kp.kernel.now

    def sleep_until(self, t: float) -> None:
        if t > self.kp.kernel.now:
            self.kp.kernel.run_until(t)

    # ------------------------------------------------------------------ the schedds
    def _schedd(self, name: str) -> Node:
        """Schedd ``name`` (the first by name if ""), if a call reaches it now."""
        names = self.spec.schedd_names
        if not name:
            if not names:
                raise PoolError("no schedd has advertised itself to the collector yet")
            name = sorted(names)[0]
        try:
            node = self.kp.schedd_node(name)
        except KeyError:
            known = ", ".join(sorted(names))
            raise PoolError(
                f"no schedd named {name!r} (known: {known})", grpc.StatusCode.NOT_FOUND
            ) from None
        if not node.alive or not self.kp.actor(node.name).alive:
            raise PoolError(f"schedd {node.name} is down", grpc.StatusCode.UNAVAILABLE)
        if node.actor.faults.paused:
            raise PoolError(
                f"schedd {node.name} is not answering (paused)", grpc.StatusCode.DEADLINE_EXCEEDED
            )
        return node

    def _at(self, node: Node) -> float:
        return self.kp.kernel.now + node.actor.faults.skew  # the core's own clock

    def submit(
        self,
        description: str,
        *,
        owner: str = "mockpool",
        schedd: str = "",
        source: str = "<submit>",
    ) -> tuple[int, int]:
        try:
            inputs = read_submit_inputs(description, source)
        except (SubmitError, SubmitFileError) as e:
            raise PoolError(str(e), grpc.StatusCode.INVALID_ARGUMENT) from None
        node = self._schedd(schedd)
        try:
            (cluster, n), ready = node.core.submit(  # type: ignore[attr-defined]
                self._at(node),
                DRIVER,
                description,
                source,
                owner,
                item_files=inputs.item_files,
                env=inputs.env,
                iwd=inputs.iwd,
            )
        except PermissionError as e:
            raise PoolError(str(e), grpc.StatusCode.PERMISSION_DENIED) from None
        except QueueError as e:
            raise PoolError(f"job not queued: {e}", grpc.StatusCode.INTERNAL) from None
        except (ValueError, ArithmeticError) as e:  # SubmitError, and what its checks let by
            raise PoolError(str(e), grpc.StatusCode.INVALID_ARGUMENT) from None
        self.kp.kernel.started(node, ready)
        return cluster, n

    def jobs(
        self,
        constraint: str = "",
        projection: Sequence[str] = (),
        *,
        schedd: str = "",
        history: bool = False,
    ) -> list[ClassAd]:
        node = self._schedd(schedd)
        driver: Any = node.core
        now = self._at(node)
        try:
            if history:  # read from its database: the caller's own ads
                ads = driver.core.history(constraint, list(projection), 0, now=now)
            else:
                ads = [
                    a.copy() for a in driver.core.query(constraint, list(projection), 0, now=now)
                ]
        except CostlyConstraint as e:
            raise PoolError(str(e), grpc.StatusCode.RESOURCE_EXHAUSTED) from None
        except ScheddError as e:
            raise PoolError(str(e), grpc.StatusCode.INVALID_ARGUMENT) from None
        except QueueError as e:
            raise PoolError(str(e), grpc.StatusCode.INTERNAL) from None
        self.kp.kernel.started(node, driver.after_call(now, changed=False))
        return ads

    def act(
        self,
        action: str,
        job_ids: Sequence[str] = (),
        *,
        constraint: str = "",
        reason: str = "",
        schedd: str = "",
    ) -> list[ActResult]:
        node = self._schedd(schedd)
        try:
            results, ready = node.core.act(  # type: ignore[attr-defined]
                self._at(node), DRIVER, action, list(job_ids), constraint, reason, ""
            )
        except CostlyConstraint as e:
            raise PoolError(str(e), grpc.StatusCode.RESOURCE_EXHAUSTED) from None
        except ScheddError as e:
            raise PoolError(str(e), grpc.StatusCode.INVALID_ARGUMENT) from None
        self.kp.kernel.started(node, ready)
        return [ActResult(r.job_id, r.ok, r.error) for r in results]

    # ------------------------------------------------------------------ central manager
    def ads(
        self, ad_type: str = "Machine", constraint: str = "", projection: Sequence[str] = ()
    ) -> list[ClassAd]:
        central = self.kp.actors["central"]
        if not central.alive:
            raise PoolError("the collector is down", grpc.StatusCode.UNAVAILABLE)
        if central.actor.faults.paused:
            raise PoolError("the collector is not answering", grpc.StatusCode.DEADLINE_EXCEEDED)
        core = self.kp.collector
        try:
            records = core.candidates(ad_type, DRIVER, typed=True)
            selected = matching(records, constraint, core.date(self.now))
        except CollectorError as e:
            raise _refused(refusal_code(e), str(e)) from None
        # as a live reply carries them: projected, then read back
        keep = projection_keys(projection)
        reply = cpb.QueryReply.FromString(
            b"".join(frame_parts(1, [r.projected_wire(keep) for r in selected]))
        )
        return ads_from_pb(reply.ads)

    def userprio(self, action: str = "", name: str = "", value: float = 0.0) -> list[ClassAd]:
        driver = self.kp.negotiator
        d = self.kp.actors["negotiator" if "negotiator" in self.kp.actors else "central"]
        if driver is None or not d.alive or "negotiator" not in d.nodes:
            raise PoolError("the negotiator is down", grpc.StatusCode.UNAVAILABLE)
        node = d.nodes["negotiator"]
        msg = NegotiatorUserPrio(f"api:{next(self._corr)}", action, name, value)
        ready = driver.deliver(msg, _CALLER, self._at(node))
        self.kp.kernel.started(node, ready)
        answer = ready.sends[0].msg
        if isinstance(answer, Undeliverable):
            raise _refused(answer.code, answer.detail)
        return [ad.copy() for ad in answer.ads]

    def down_daemons(self) -> list[str]:
        return self.kp.down_daemons()

    # ------------------------------------------------------------------ what happened
    def status(self) -> list[dict[str, Any]]:
        """Each running actor's status, as a live actor reports it (less the process's
        own figures: every actor here is this process)."""
        out = []
        for d in self.kp.actors.values():
            if not d.alive:
                continue
            services: dict[str, Any] = {}
            schedds: dict[str, Any] = {}
            # (a startd actor's core is in ``nodes`` under each machine's name too)
            for node in {id(n): n for n in d.nodes.values()}.values():
                if not node.alive:
                    continue
                core: Any = node.core
                if node.kind == "collector":
                    services["CollectorService"] = core.status()
                elif node.kind == "negotiator":
                    services["NegotiatorService"] = core.core.status(d.actor.address)
                elif node.kind == "startd":
                    services["StartdService"] = core.status()
                elif node.kind == "schedd":
                    schedds[core.name] = core.status()
            if schedds:
                total: Counter[str] = Counter()
                for node in d.nodes.values():
                    if node.kind == "schedd" and node.alive:
                        total.update(node.core.stats)  # type: ignore[attr-defined]
                services["ScheddService"] = {"schedds": schedds, "stats": dict(total)}
            out.append(
                {
                    "role": d.plan.role,
                    "identity": d.plan.name,
                    "daemons": list(d.plan.daemons),
                    "address": d.actor.address,
                    "lag": {"wakeups": 0, "mean": 0.0, "max": 0.0},  # every core on time
                    "services": services,
                    "cedar": {},
                }
            )
        return out

    def metrics(self) -> MetricsSnapshot:
        return run_now(
            scrape(
                self.kp.client,
                self.status(),
                now=self.now,
                time_scale=0.0,
                start_date=self.kp.log_base,
                htcondor=self.spec.metrics_htcondor,
            )
        )

    def drain(self) -> None:
        """(Events are kept as they happen: nothing to gather.)"""

    @property
    def events(self) -> list[dict[str, Any]]:
        # in time order: a fact found late (a paused startd's, on waking) carries its own t
        return sorted(self.kp.kernel.events, key=lambda e: e["t"])

    def take_events(self) -> list[dict[str, Any]]:
        events = self.kp.kernel.events
        out = events[self._taken :]
        self._taken = len(events)
        return out

    @property
    def negotiator_log_lines(self) -> list[str]:
        return list(self.kp.negotiator_log)

    # ------------------------------------------------------------------ identity
    @property
    def epoch_wall(self) -> float:
        return 0.0

    @property
    def log_base_wall(self) -> float:
        return self.kp.log_base

    @property
    def token(self) -> str:
        return self._token

    @property
    def secret(self) -> str:
        return self._secret

    def make_token(self, role: Role | str, identity: str = "") -> str:
        return make_token(self._secret, role, identity)

    @property
    def collector_address(self) -> str:
        return self.kp.collector_address

    def cedar_address(self, daemon: str = "") -> str:
        return ""  # a virtual pool has no listeners

    @property
    def state_dir(self) -> Path:
        return self._state_dir

    @property
    def client(self) -> Any:
        raise PoolError("a virtual pool has no network client: call the Pool's methods")

    # ------------------------------------------------------------------ a whole run
    def collect(
        self,
        out: str | Path | None = None,
        real_seconds: float = 0.0,
        events: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """The run's summary, its output folder written to ``out`` if given. (Every event
        stays in the kernel: ``events``, those the caller took, are among them.)"""
        from ..pool.metrics import exposition

        folder = Path(out) if out is not None else None
        summary = self.kp.collect(folder, real_seconds)
        if folder is not None:
            try:
                snap = self.metrics()
            except PoolError:  # the collector is down: the actors' own figures alone
                snap = MetricsSnapshot(hosts=self.status(), slot_states=Counter(), submitters=[])
            (folder / "metrics.prom").write_bytes(
                exposition(snap, htcondor=self.spec.metrics_htcondor)
            )
        return summary
