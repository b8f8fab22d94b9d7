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

import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..durable import SimulatedDisk
from ..pool.layout import ActorPlan, actor_plans, own_negotiator
from ..pool.spec import PoolSpec, RemoveItem, SubmitItem
from ..pool.virtual import VIRTUAL_EPOCH
from ..principals import Principal, Role, daemon_identity
from .kernel import Actor, Kernel, Node

__all__ = ["KernelPool"]

# how long the start may wait for the schedds' first ads to count their queued jobs
STARTUP_HORIZON = 600.0
ADMIN = Principal(Role.ADMIN)
FIRST_PORT = 9618  # the addresses its actors get: 127.0.0.1:9618, :9619, ... (HTCondor's port)


@dataclass
class _Daemons:
    """The cores of one actor, by daemon name (lower case)."""

    plan: ActorPlan
    actor: Actor
    nodes: dict[str, Node] = field(default_factory=dict)


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
        self._schedds: dict[str, Any] = {}  # lower-case schedd name -> its schedd core
        self.negotiator: Any = None

    # ------------------------------------------------------------------ start

    def start(self) -> None:
        from . import daemons

        spec = self.spec
        for i, plan in enumerate(self.plans):
            address = f"{spec.host}:{FIRST_PORT + i}"
            actor = self.kernel.actor(plan.name, address, seed=spec.seed)
            self.actors[plan.name] = _Daemons(plan, actor)
        central = self.actors["central"]
        self.collector_address = central.actor.address
        builder = daemons.Builder(self)
        builder.collector(central)
        for d in self.actors.values():
            if d.plan.role == "startd":
                builder.startds(d, spec.startds[d.plan.group].config)
            elif d.plan.role == "schedd":
                builder.schedds(d)
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

    def _submit(self, item: SubmitItem) -> None:
        from . import daemons

        try:
            node = self.schedd_node(item.schedd)
            cluster, n = daemons.submit(self.kernel, node, item)
            self.submitted.append((item, cluster, n))
        except Exception as e:  # the pool keeps running; the summary reports it
            self.workload_errors.append(f"submit at {item.at:g} to {item.schedd}: {e}")

    def _remove(self, item: RemoveItem) -> None:
        from . import daemons

        try:
            node = self.schedd_node(item.schedd)
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

    def run(self, duration: float, *, until_done: bool = False, step: float = 1.0) -> None:
        """Let pool time run to ``duration``, or (``until_done``) until the work is done,
        looked at after every ``step`` pool seconds in which something happened."""
        k = self.kernel
        while k.now < duration:
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
