"""How the kernel pool makes each daemon's core and starts it, and how its driver calls
a schedd (a submit, a removal): what a live actor's services do at ``serve()`` and
``run()``, less the network.

Every core gets what the live one gets: its configuration, the pool's date of time 0,
its address (a sinful string in its ads), the collector's address, and a seeded
generator of its own; its durable state lives on the pool's simulated disk (the
schedds' queues, the accountant), where a simulated crash keeps it.
"""

from __future__ import annotations

import getpass
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..claimid import sinful
from ..collector.collector import Collector
from ..negotiator.driver import NegotiatorDriver
from ..negotiator.negotiator import Negotiator
from ..principals import Principal, Role
from ..schedd.driver import ScheddDriver
from ..schedd.logfiles import append_user_logs
from ..schedd.schedd import Schedd
from ..startd.core import StartdCore

if TYPE_CHECKING:
    from ..config import ConfigDict
    from ..contract import Event
    from ..pool.specmodel import RemoveItem, SubmitItem
    from .kernel import Kernel, Node
    from .pool import KernelPool, _Daemons

__all__ = ["Builder", "jobs_in_queue", "remove", "submit"]

log = logging.getLogger(__name__)

DRIVER = Principal(Role.ADMIN)  # the pool's driver acts as its administrator


class Builder:
    """Makes the cores of a :class:`KernelPool`'s actors at pool time ``now``."""

    def __init__(self, pool: KernelPool) -> None:
        self.pool = pool
        self.kernel = pool.kernel

    def _node(self, d: _Daemons, kind: str, name: str, core: object) -> Node:
        """Put ``core`` in the kernel as daemon ``name`` of ``d`` (in the place of the
        crashed one of that name, when restarted)."""
        node = d.nodes.get(name.lower())
        if node is not None:
            self.kernel.replace(node, core)  # type: ignore[arg-type]
            return node
        principal = self.pool.principal(kind, name)
        node = self.kernel.add(d.actor, kind, name, core, principal)  # type: ignore[arg-type]
        d.nodes[name.lower()] = node
        return node

    def collector(self, d: _Daemons, now: float = 0.0) -> Node:
        pool = self.pool
        core = Collector(pool.spec.config, ad_epoch=pool.ad_epoch)
        node = self._node(d, "collector", "collector", core)
        self.kernel.started(node, core.start(now, pool.spec.host, sinful(d.actor.address)))
        return node

    def negotiator(self, d: _Daemons, now: float = 0.0) -> Node:
        pool = self.pool
        spec = pool.spec
        core = Negotiator(
            "negotiator",
            spec.config.for_subsystem("NEGOTIATOR"),
            pool.disk.files("central"),
            log_base_wall=pool.log_base,
            priorities={k: dict(v) for k, v in spec.priorities.items()},
        )
        cost = spec.cycle_cost
        driver = NegotiatorDriver(
            core,
            collector_address=pool.collector_address,
            address=sinful(d.actor.address),
            machine=spec.host,
            # a cycle priced by its CPU time (time dilation) is the one thing measured
            cpu_timer=time.process_time if cost.cpu_factor else None,
            cycle_charge=None if cost.free else cost.charge,
            columns=False,  # the collector's records are handed over as they are
        )
        node = self._node(d, "negotiator", "negotiator", driver)
        node.after = self._negotiator_log(core)
        self.kernel.started(node, driver.start(now))
        pool.negotiator = driver
        return node

    def startds(self, d: _Daemons, config: ConfigDict, now: float = 0.0) -> Node:
        pool = self.pool
        machines = [(name, config) for name in d.plan.daemons]
        host = StartdCore(machines, ad_epoch=pool.ad_epoch, config=pool.spec.config)
        node = self._node(d, "startd", d.plan.name, host)
        for name in d.plan.daemons:  # each machine answers to its own name too
            d.nodes[name.lower()] = node
        ready = host.start(d.actor.address, now, pool.rng, pool.collector_address)
        self.kernel.started(node, ready)
        return node

    def schedd(self, d: _Daemons, name: str, now: float = 0.0) -> Node:
        pool = self.pool
        queue = pool.disk.job_queue(f"schedd/{name}.sqlite", birth=now)
        core = Schedd(name, queue, pool.spec.config, now, ad_epoch=pool.ad_epoch)
        core.address = sinful(d.actor.address)
        driver = ScheddDriver(
            core,
            now,
            address=d.actor.address,
            collector_address=pool.collector_address,
            pool_user=getpass.getuser(),  # the schedd runs as whoever runs the pool
        )
        node = self._node(d, "schedd", name, driver)
        node.after = self._user_logs(driver)
        ready = driver.after_call(now, changed=False).extend(driver.start(now))
        self.kernel.started(node, ready)
        return node

    def _negotiator_log(self, core: Negotiator) -> Callable[[], list[Event]]:
        """After each call into the negotiator: its NegotiatorLog lines, kept in order."""
        lines = self.pool.negotiator_log

        def after() -> list[Event]:
            lines.extend(core.drain_log())
            return []

        return after

    def _user_logs(self, driver: ScheddDriver) -> Callable[[], list[Event]]:
        """After each call into a schedd: its job event logs (``log =``) appended to
        their files, one write per file; a log that cannot be written is said once per
        file (``user_log_failed``) and the schedd goes on, as the live shell does. The
        schedd's notes (its log lines) go to this process's log."""
        refused: set[str] = set()

        def after() -> list[Event]:
            for level, text in driver.notes:
                log.log(level, "%s", text)
            driver.notes.clear()
            texts, jobs = driver.take_user_logs()
            if not texts:
                return []
            out: list[Event] = []
            for path, error in append_user_logs(texts).items():
                driver.stats["user_log_failures"] += 1
                if path not in refused:
                    refused.add(path)
                    fields = {"job": jobs[path], "path": path, "error": error}
                    out.append((driver.name, "user_log_failed", fields))
            return out

        return after

    def schedds(self, d: _Daemons, now: float = 0.0) -> None:
        for name in d.plan.daemons:
            self.schedd(d, name, now)


def submit(kernel: Kernel, node: Node, item: SubmitItem) -> tuple[int, int]:
    """Queue a workload item at ``node``'s schedd now, as the pool's administrator (the
    launcher's token): (cluster, jobs)."""
    driver: ScheddDriver = node.core  # type: ignore[assignment]
    now = kernel.now + node.actor.faults.skew
    inputs = item.inputs
    (cluster, n), ready = driver.submit(
        now,
        DRIVER,
        item.description,
        item.source,
        item.owner,
        item_files=inputs.item_files,
        env=inputs.env,
        iwd=inputs.iwd,
    )
    kernel.started(node, ready)
    return cluster, n


def remove(kernel: Kernel, node: Node, item: RemoveItem) -> list[str]:
    """condor_rm -constraint at ``node``'s schedd now: the problems, if any."""
    driver: ScheddDriver = node.core  # type: ignore[assignment]
    now = kernel.now + node.actor.faults.skew
    results, ready = driver.act(now, DRIVER, "remove", [], item.constraint, item.reason, "")
    kernel.started(node, ready)
    return [f"{r.job_id}: {r.error}" for r in results if not r.ok]


def jobs_in_queue(node: Node) -> int:
    driver: ScheddDriver = node.core  # type: ignore[assignment]
    return len(driver.core.jobs)
