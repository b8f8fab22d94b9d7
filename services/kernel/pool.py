"""A pool spec on the simulation kernel: every daemon core of the pool in this process,
stepped directly (no asyncio, no gRPC, no protobuf).

The start follows the live launcher's order, which is HTCondor's: the collector first;
then the startds and schedds (they advertise at once); the workload due at time 0 goes
into the schedds' queues; only then the negotiator starts, so that its first cycle sees
the pool and the queues as the spec describes them. Later workload items and fault
steps are entries on the kernel's heap at their times.

What the driver reads (jobs, history, ads, the NegotiatorLog) it reads from the cores
directly: a driver's call takes no pool time, as a virtual pool's never did.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from .. import gctune
from ..durable import SimulatedDisk
from ..pool.faults import Fault, apply_step, plan_steps
from ..pool.layout import ActorPlan, actor_plans, find_actor, own_negotiator
from ..pool.specmodel import PoolSpec, RemoveItem, SubmitItem
from ..pool.virtual import VIRTUAL_EPOCH
from ..principals import Principal, Role, daemon_identity
from .faults import ActorHandle, KernelClient, run_now
from .kernel import Actor, Kernel, Node

__all__ = ["KernelPool"]

# how long the start may wait for the schedds' first ads to count their queued jobs
STARTUP_HORIZON = 600.0
ADMIN = Principal(Role.ADMIN)
FIRST_PORT = 9618  # the addresses its actors get: 127.0.0.1:9618, :9619, ... (HTCondor's port)


@dataclass
class _Daemons:
    """The cores of one actor, by daemon name (lower case), and whether it runs."""

    plan: ActorPlan
    actor: Actor
    nodes: dict[str, Node] = field(default_factory=dict)
    alive: bool = True
    down_since: float = 0.0
    down: dict[str, float] = field(default_factory=dict)  # daemons down alone -> since
    handle: Any = None  # what a fault step calls (faults.ActorHandle)


class KernelPool:
    """A pool spec run on the kernel. ``start()``, then ``run(...)``; read the cores."""

    def __init__(self, spec: PoolSpec) -> None:
        if spec.clock != "virtual":
            raise ValueError('the kernel runs virtual pools: give the spec clock = "virtual"')
        self.spec = spec
        self.kernel = Kernel(latency=spec.latency)
        self.disk = SimulatedDisk()
        self.log_base = VIRTUAL_EPOCH  # the date of pool time 0
        self.ad_epoch = int(VIRTUAL_EPOCH)
        self.plans = actor_plans(spec)
        self.actors: dict[str, _Daemons] = {}
        self.collector_address = ""
        self.submitted: list[tuple[SubmitItem, int, int]] = []
        self.workload_errors: list[str] = []
        self._pending = 0  # workload items not yet fed
        self.negotiator: Any = None
        self.negotiator_log: list[str] = []  # its lines, as they were written
        self._ports = itertools.count(FIRST_PORT + len(self.plans))  # a restart's new port
        self.client = KernelClient(self)

    # ------------------------------------------------------------------ start

    def start(self) -> None:
        # (as run: many ads built, nearly all freed by count)
        previous = gctune.paced(gctune.VIRTUAL_THRESHOLDS)
        try:
            self._start()
        finally:
            gctune.restore(previous)

    def _start(self) -> None:
        from . import daemons

        spec = self.spec
        for i, plan in enumerate(self.plans):
            address = f"{spec.host}:{FIRST_PORT + i}"
            actor = self.kernel.actor(plan.name, address, seed=spec.seed)
            d = self.actors[plan.name] = _Daemons(plan, actor)
            d.handle = ActorHandle(self, d)
        central = self.actors["central"]
        self.collector_address = central.actor.address
        self._builder = builder = daemons.Builder(self)
        builder.collector(central)
        for d in self.actors.values():
            if d.plan.role in ("startd", "schedd"):
                self._build(d)
        self.kernel.run_until(0.0)  # every ad in: the collector knows the pool
        timeline = spec.timeline()
        for item in timeline:
            if item.at <= 0 and isinstance(item, SubmitItem):
                self._submit(item)
        for item in timeline:
            if item.at <= 0 and isinstance(item, RemoveItem):
                self._remove(item)
        # the negotiator starts once the collector's Submitter ads count the queued jobs
        # (the schedds advertise SCHEDD_MIN_INTERVAL after a change), as the launcher waits
        queued = sum(n for _, _, n in self.submitted)
        if queued:
            self.kernel.run(STARTUP_HORIZON, done=lambda: self._submitters_count() >= queued)
        neg = self.actors["negotiator" if own_negotiator(spec) else "central"]
        builder.negotiator(neg)
        later = [item for item in timeline if item.at > 0]
        self._pending = len(later)
        for item in later:
            self.kernel.call_at(item.at, self._feeder(item))
        for at, f, begins in plan_steps(spec.faults):
            self.kernel.call_at(at, partial(self._fault_step, f, begins))

    def _build(self, d: _Daemons, now: float = 0.0) -> None:
        """The cores of a startd or schedd actor (again, after a restart)."""
        if d.plan.role == "startd":
            self._builder.startds(d, self.spec.startds[d.plan.group].config, now)
        else:
            self._builder.schedds(d, now)

    def _feeder(self, item: SubmitItem | RemoveItem) -> Callable[[], None]:
        def feed() -> None:
            self._pending -= 1
            if isinstance(item, RemoveItem):
                self._remove(item)
            else:
                self._submit(item)

        return feed

    # ------------------------------------------------------------------ reading

    @property
    def collector(self) -> Any:
        return self.actors["central"].nodes["collector"].core

    def ads(self, ad_type: str, constraint: str = "") -> list[Any]:
        """The collector's ads of ``ad_type`` (as a Query by the pool's administrator)."""
        records = self.collector.query(ad_type, constraint or None, ADMIN, self.kernel.now)
        return [r.ad for r in records]

    def _submitters_count(self) -> int:
        return sum(
            int(ad.get_value("IdleJobs", 0) or 0) + int(ad.get_value("HeldJobs", 0) or 0)
            for ad in self.ads("Submitter")
        )

    # ------------------------------------------------------------------ workload

    def schedd_node(self, name: str) -> Node:
        for d in self.actors.values():
            node = d.nodes.get(name.lower())
            if node is not None and node.kind == "schedd":
                return node
        raise KeyError(f"no schedd named {name!r}")

    def _reachable(self, node: Node) -> Node:
        """``node`` if a call from outside the pool reaches it now; else the error a live
        driver's call ends with (a crashed schedd refuses it; a paused one never answers)."""
        if not node.alive:
            raise ConnectionError("UNAVAILABLE: the schedd is down")
        if node.actor.faults.paused:
            raise TimeoutError("Deadline Exceeded: the schedd is not answering (paused)")
        return node

    def _submit(self, item: SubmitItem) -> None:
        from . import daemons

        try:
            node = self._reachable(self.schedd_node(item.schedd))
            cluster, n = daemons.submit(self.kernel, node, item)
            self.submitted.append((item, cluster, n))
        except Exception as e:  # the pool keeps running; the summary reports it
            self.workload_errors.append(f"submit at {item.at:g} to {item.schedd}: {e}")

    def _remove(self, item: RemoveItem) -> None:
        from . import daemons

        try:
            node = self._reachable(self.schedd_node(item.schedd))
            problems = daemons.remove(self.kernel, node, item)
        except Exception as e:
            problems = [str(e)]
        if problems:
            self.workload_errors.append(
                f"remove at {item.at:g} ({item.source}): {'; '.join(problems)}"
            )

    # ------------------------------------------------------------------ running

    def jobs_in_queue(self) -> int:
        from . import daemons

        return sum(
            daemons.jobs_in_queue(node)
            for d in self.actors.values()
            for node in d.nodes.values()
            if node.kind == "schedd"
        )

    def work_done(self) -> bool:
        """Every workload item fed and every job gone from the queues."""
        return self._pending == 0 and self.jobs_in_queue() == 0

    def run(
        self,
        duration: float,
        *,
        until_done: bool = False,
        step: float = 1.0,
        progress: Callable[[float, float], None] | None = None,
    ) -> None:
        """Let pool time run to ``duration``, or (``until_done``) until the work is done,
        looked at after every ``step`` pool seconds in which something happened;
        ``progress(now, duration)`` after each step."""
        # a pool builds and drops ads by the hundred thousand: the collector's pace for
        # a pool's processes while it runs (gctune), the caller's put back after
        previous = gctune.paced(gctune.VIRTUAL_THRESHOLDS)
        try:
            self._run(duration, until_done, step, progress)
        finally:
            gctune.restore(previous)

    def _run(
        self,
        duration: float,
        until_done: bool,
        step: float,
        progress: Callable[[float, float], None] | None,
    ) -> None:
        k = self.kernel
        while k.now < duration:
            if progress is not None:
                progress(k.now, duration)
            before = len(k.events)
            nxt = k.next_time()
            target = min(duration, k.now + step)
            if nxt is None:
                k.run_until(duration)
                break
            if nxt > target:  # nothing happens before then: go straight to the next step
                target = min(duration, k.now + step * math.ceil((nxt - k.now) / step))
            k.run_until(target)
            if until_done and len(k.events) > before and self.work_done():
                break

    def down_daemons(self) -> list[str]:
        """The daemons down now (crashed and not restarted), by name."""
        out: list[str] = []
        for d in self.actors.values():
            if not d.alive:
                out += d.plan.daemons
            else:
                names = {n.lower(): n for n in d.plan.daemons}
                out += [names.get(n, n) for n in d.down]
        return sorted(out)

    def collect(self, out: str | Path | None = None, real_seconds: float = 0.0) -> dict[str, Any]:
        """The run's summary (and its output folder, written to ``out`` if given)."""
        from .outputs import collect

        return collect(self, Path(out) if out is not None else None, real_seconds)

    # ------------------------------------------------------------------ faults

    def _fault_step(self, f: Fault, begins: bool) -> None:
        run_now(apply_step(self, f, begins))  # type: ignore[arg-type]

    def emit(self, kind: str, daemon: str = "master", **fields: Any) -> None:
        self.kernel.record([(daemon, kind, fields)])

    def actor(self, target: str) -> _Daemons:
        plan = find_actor(self.plans, target)
        if plan is None:
            raise KeyError(f"no daemon or actor named {target!r}")
        return self.actors[plan.name]

    def crash_scope(self, target: str) -> list[str]:
        """The daemons a crash of ``target`` takes down."""
        d = self.actor(target)
        name = self._alone(d, target)
        return [name] if name is not None else list(d.plan.daemons)

    @staticmethod
    def _alone(d: _Daemons, target: str) -> str | None:
        """The daemon of ``d`` that ``target`` names, when a fault on it acts on it alone
        (it shares its actor with others); None: the fault acts on the whole actor."""
        if d.plan.role not in ("schedd", "startd") or len(d.plan.daemons) < 2:
            return None
        return next((n for n in d.plan.daemons if n.lower() == target.lower()), None)

    async def crash(self, target: str, cause: str = "fault") -> _Daemons:
        """``target`` dies at once, as kill -9: a schedd or machine named alone in a
        shared actor alone, else its whole actor (its memory lost, its disk kept)."""
        d = self.actor(target)
        now = self.kernel.now
        if not d.alive:
            return d
        name = self._alone(d, target)
        if name is not None:
            if name.lower() not in d.down:
                self._crash_one(d, name)
                d.down[name.lower()] = now
                self.emit("daemon_died", actor=d.plan.name, daemons=[name], cause=cause[:200])
            return d
        self.kernel.crash_actor(d.actor)
        d.alive, d.down_since = False, now
        self.emit("daemon_died", actor=d.plan.name, daemons=list(d.plan.daemons), cause=cause[:200])
        return d

    def _crash_one(self, d: _Daemons, name: str) -> None:
        node = d.nodes[name.lower()]
        if node.kind == "startd":  # one machine of a startd actor: the others run on
            node.core.crash(name)  # type: ignore[attr-defined]
        else:
            self.kernel.crash(node)

    async def restart(self, target: str, cause: str = "fault") -> _Daemons:
        """``target`` again (crashed first if it runs): a schedd from its queue, a startd
        with new claim ids, the central manager on its old address with its accountant;
        any other actor at a new address."""
        d = self.actor(target)
        now = self.kernel.now
        name = self._alone(d, target) if d.alive else None
        if name is not None:
            if name.lower() not in d.down:
                await self.crash(name, cause)
            self._restart_one(d, name, now)
            since = d.down.pop(name.lower())
            self.emit(
                "daemon_restarted",
                actor=d.plan.name,
                daemons=[name],
                address=d.actor.address,
                down=round(now - since, 3),
                cause=cause,
            )
            return d
        if d.alive:
            await self.crash(d.plan.name, cause)
        if d.plan.role == "central":
            address = d.actor.address
        else:
            address = f"{self.spec.host}:{next(self._ports)}"
        self.kernel.readdress(d.actor, address)
        if d.plan.role == "central":
            self._builder.collector(d, now)
            if "negotiator" in d.nodes:
                self._builder.negotiator(d, now)
        elif d.plan.role == "negotiator":
            self._builder.negotiator(d, now)
        else:
            self._build(d, now)
        d.alive = True
        d.down.clear()
        self.emit(
            "daemon_restarted",
            actor=d.plan.name,
            daemons=list(d.plan.daemons),
            address=address,
            down=round(now - d.down_since, 3),
            cause=cause,
        )
        return d

    def _restart_one(self, d: _Daemons, name: str, now: float) -> None:
        node = d.nodes[name.lower()]
        if node.kind == "startd":
            host = node.core
            host.restart(name, d.actor.address, now, self.rng)  # type: ignore[attr-defined]
            self.kernel.started(node, host.flush(now))  # type: ignore[attr-defined]
        else:
            self._builder.schedd(d, name, now)

    # ------------------------------------------------------------------ identities

    @staticmethod
    def principal(kind: str, name: str) -> Principal:
        if kind == "negotiator":
            return Principal(Role.NEGOTIATOR, "negotiator")
        if kind == "collector":
            return Principal(Role.DAEMON, "collector")
        return Principal(Role.DAEMON, daemon_identity(kind, name))

    def rng(self, name: str) -> random.Random:
        """A daemon's own seeded generator (claim ids' secrets in virtual time)."""
        return random.Random(f"{self.spec.seed}:{name}")
