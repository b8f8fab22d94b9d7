"""Launch a pool on Ray from a :class:`PoolSpec`, feed it its workload, gather its output.

Start order (pool time 0 is when every daemon is reachable):

1. the central manager actor (collector + negotiator) serves; its address is the
   collector's;
2. startd and schedd actors serve, all at once;
3. the clock starts everywhere with one epoch; startd and schedd loops start (they
   advertise at once); the launcher waits until the collector has every machine and
   schedd, submits the workload items due at time 0, and only then starts the
   negotiator, so its first cycle sees the pool and the queue as the spec describes them.

Events and NegotiatorLog lines stay in the actors until drained here, so a pool on a
multi-node Ray cluster needs no shared file system.

A spec with ``clock = "virtual"`` starts the same hosts in this process instead of as Ray
actors (:class:`LocalActor` is called the way an actor handle is), on the virtual clock of
the running loop (a ``VirtualEventLoop``), over an in-process network: the same daemons,
the same start order, the same outputs.
"""

from __future__ import annotations

import asyncio
import logging
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from .. import rpc
from ..auth import Role, daemon_identity, make_secret, make_token
from ..clock import Clock, ScaledClock
from ..inprocess import InProcessNetwork
from ..virtualtime import VirtualClock, VirtualEventLoop
from .client import PoolClient
from .host import DaemonHost
from .metrics import Snapshot as MetricsSnapshot
from .spec import PoolSpec, RemoveItem, SubmitItem
from .virtual import VIRTUAL_EPOCH

log = logging.getLogger(__name__)

STARTUP_TIMEOUT = 120.0  # real seconds for every daemon to advertise itself


def _chunks(items: list[Any], size: int) -> list[list[Any]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


class LocalActor:
    """A :class:`DaemonHost` in this process, called as a Ray actor handle is:
    ``await host.serve.remote(address)``."""

    def __init__(self, host: DaemonHost) -> None:
        self.host = host

    def __getattr__(self, name: str) -> SimpleNamespace:
        return SimpleNamespace(remote=getattr(self.host, name))


class LivePool:
    """An async handle on a running pool. Use from one event loop; ``await stop()``."""

    def __init__(self, spec: PoolSpec, *, state_dir: str | Path | None = None) -> None:
        self.spec = spec
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        if state_dir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="mockpool-")
            state_dir = self._tmp.name
        self.state_dir = Path(state_dir)
        self.secret = make_secret()
        self.token = make_token(self.secret, Role.ADMIN, "admin")
        self.clock: Clock | None = None  # the pool clock, from the moment pool time starts
        self.log_base_wall = 0.0
        self.collector_address = ""
        self.client: PoolClient | None = None
        self._central: Any = None
        self._hosts: list[Any] = []  # startd and schedd actors
        self._events: list[dict[str, Any]] = []
        self._log_lines: list[str] = []
        self._workload: asyncio.Task[None] | None = None
        self.submitted: list[tuple[SubmitItem, int, int]] = []
        self.workload_errors: list[str] = []
        self.final_status: list[dict[str, Any]] = []
        self.virtual = spec.clock == "virtual"
        self.network: InProcessNetwork | None = None
        self.vloop: VirtualEventLoop | None = None  # the loop whose time is pool time

    def make_token(self, role: Role | str, identity: str = "") -> str:
        """A token for this pool: ``make_token(Role.SUBMIT, "alice")`` acts as alice."""
        return make_token(self.secret, role, identity)

    # ------------------------------------------------------------------ time
    @property
    def time_scale(self) -> float:
        return self.spec.time_scale

    @property
    def epoch_wall(self) -> float:
        if self.virtual:
            return VIRTUAL_EPOCH
        return self.clock.epoch_wall if isinstance(self.clock, ScaledClock) else 0.0

    def now(self) -> float:
        """Pool time (seconds since pool time 0)."""
        return self.clock.now() if self.clock else 0.0

    async def sleep_until(self, t: float) -> None:
        """Let pool time run to ``t`` (a virtual pool runs no further until told)."""
        assert self.clock is not None, "the pool has not started"
        if self.vloop is not None:
            self.vloop.hold(t)
        await self.clock.sleep_until(t)

    def hold(self) -> None:
        """A virtual pool stands still from now until the next ``sleep_until``."""
        if self.vloop is not None:
            self.vloop.hold()

    def _actor_factory(self) -> Callable[..., Any]:
        """How a daemon host is made: a Ray actor, or (virtual) an object in this loop."""
        if not self.virtual:
            import ray

            return ray.remote(num_cpus=0, max_restarts=0)(DaemonHost).remote  # type: ignore[no-any-return]
        loop = asyncio.get_running_loop()
        if not isinstance(loop, VirtualEventLoop):
            raise RuntimeError("a virtual pool must run on a VirtualEventLoop")
        self.vloop = loop
        self.network = InProcessNetwork(self.spec.latency)
        self.clock = VirtualClock(loop)
        rpc.seed_jitter(self.spec.seed)
        cost = self.spec.cycle_cost
        local = {
            "transport": self.network,
            "clock": self.clock,
            "cycle_charge": None if cost.free else cost.charge,
        }
        return lambda *a, **kw: LocalActor(DaemonHost(*a, **kw, **local))

    # ------------------------------------------------------------------ start/stop
    async def start(self) -> None:
        spec = self.spec
        spawn = self._actor_factory()
        common = {"secret": self.secret, "host": spec.host, "seed": spec.seed}
        # The NegotiatorLog's dates: the real date at pool time 0 plus pool seconds (a
        # virtual run's fixed date, so that a replay writes the same bytes).
        log_base = VIRTUAL_EPOCH if self.virtual else time.time()
        self._central = spawn(
            "central",
            config=spec.config,
            state_dir=str(self.state_dir / "central"),
            log_base_wall=log_base,
            priorities={k: dict(v) for k, v in spec.priorities.items()},
            identity="negotiator",
            **common,
        )
        self.collector_address = await self._central.serve.remote()
        for gi, group in enumerate(spec.startds):
            machines = [(n, group.config) for n in group.names]
            for ci, chunk in enumerate(_chunks(machines, group.machines_per_actor)):
                self._hosts.append(
                    spawn(
                        "startd",
                        config=spec.config,
                        machines=chunk,
                        state_dir=str(self.state_dir / f"startd{gi}_{ci}"),
                        identity=daemon_identity("startd", f"startd{gi}_{ci}"),
                        **common,
                    )
                )
        for si, sgroup in enumerate(spec.schedds):
            for ci, names in enumerate(_chunks(list(sgroup.names), sgroup.per_actor)):
                # Each schedd signs its claim traffic as itself; the actor's own identity
                # (for ads and reschedules) names the actor.
                self._hosts.append(
                    spawn(
                        "schedd",
                        config=spec.config,
                        schedds=names,
                        state_dir=str(self.state_dir / "schedd"),
                        identity=daemon_identity(
                            "schedd", names[0] if len(names) == 1 else f"actor{si}_{ci}"
                        ),
                        **common,
                    )
                )
        await asyncio.gather(*(h.serve.remote(self.collector_address) for h in self._hosts))
        if not self.virtual:
            self.clock = ScaledClock.starting_now(spec.time_scale)
        self.log_base_wall = log_base
        await asyncio.gather(*(h.run.remote(spec.time_scale, self.epoch_wall) for h in self._hosts))
        await self._central.run.remote(spec.time_scale, self.epoch_wall, [0])  # collector only
        self.client = PoolClient(self.collector_address, self.token, transport=self.network)
        await self._wait_advertised()
        timeline = spec.timeline()
        for item in timeline:
            if item.at <= 0 and isinstance(item, SubmitItem):
                await self._submit(item)
        await self._wait_submitters(sum(n for _, _, n in self.submitted))
        for item in timeline:
            if item.at <= 0 and isinstance(item, RemoveItem):
                await self._remove(item)
        await self._central.run.remote(spec.time_scale, self.epoch_wall, [1])  # negotiator
        later = [s for s in timeline if s.at > 0]
        if later:
            self._workload = asyncio.create_task(self._feed(later))

    async def _wait_advertised(self) -> None:
        assert self.client is not None
        want_machines = {n.lower() for n in self.spec.machine_names}
        want_schedds = {n.lower() for n in self.spec.schedd_names}
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while True:
            slots = await self.client.query("Machine", projection=["Machine"])
            schedds = await self.client.query("Scheduler", projection=["Name"])
            have_m = {str(a.get_value("Machine", "")).lower() for a in slots}
            have_s = {str(a.get_value("Name", "")).lower() for a in schedds}
            if want_machines <= have_m and want_schedds <= have_s:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"pool did not come up in {STARTUP_TIMEOUT:.0f}s: "
                    f"{len(want_machines - have_m)} machines and {len(want_schedds - have_s)} schedds "
                    "have not advertised to the collector"
                )
            await asyncio.sleep(0.05)

    async def _wait_submitters(self, idle: int) -> None:
        """Wait until the collector's submitter ads show ``idle`` idle jobs, so that the
        first cycle sees the time-0 workload (schedds advertise on change, not at once)."""
        assert self.client is not None
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while idle and time.monotonic() < deadline:
            ads = await self.client.query("Submitter", projection=["IdleJobs"])
            if sum(int(a.get_value("IdleJobs", 0) or 0) for a in ads) >= idle:
                return
            await asyncio.sleep(0.05)

    async def _submit(self, item: SubmitItem) -> None:
        assert self.client is not None
        try:
            cluster, n = await self.client.submit(
                item.description,
                owner=item.owner,
                schedd=item.schedd,
                source=item.source,
                inputs=item.inputs,
            )
            self.submitted.append((item, cluster, n))
        except Exception as e:  # the pool keeps running; the summary reports it
            self.workload_errors.append(f"submit at {item.at:g} to {item.schedd}: {e}")
            log.warning("workload submit failed: %s", e)

    async def _remove(self, item: RemoveItem) -> None:
        """condor_rm -constraint for a trace's removed job (the summary reports failures)."""
        assert self.client is not None
        try:
            results = await self.client.act(
                "remove", constraint=item.constraint, schedd=item.schedd, reason=item.reason
            )
            problems = [f"{r.job_id}: {r.error}" for r in results if not r.ok]
        except Exception as e:
            problems = [str(e)]
        if problems:
            self.workload_errors.append(
                f"remove at {item.at:g} ({item.source}): {'; '.join(problems)}"
            )
            log.warning("workload removal failed: %s", problems)

    async def _feed(self, items: list[SubmitItem | RemoveItem]) -> None:
        assert self.clock is not None
        for item in items:
            # the pool clock itself: a virtual pool's horizon belongs to its driver
            await self.clock.sleep_until(item.at)
            if isinstance(item, RemoveItem):
                await self._remove(item)
            else:
                await self._submit(item)

    async def stop(self) -> list[dict[str, Any]]:
        if self.vloop is not None:
            self.vloop.release()  # stopping takes (virtual) time: let it pass
        if self._workload is not None:
            self._workload.cancel()
            await asyncio.gather(self._workload, return_exceptions=True)
        hosts = ([self._central] if self._central is not None else []) + self._hosts
        if hosts:
            try:
                await self.drain()
            except Exception:  # an actor died: stop the rest anyway
                log.exception("draining events at stop")
            results = await asyncio.gather(
                *(h.stop.remote() for h in hosts), return_exceptions=True
            )
            self.final_status = [r for r in results if isinstance(r, dict)]
            if not self.virtual:
                import ray

                for h in hosts:
                    ray.kill(h, no_restart=True)
        self._central, self._hosts = None, []
        if self.client is not None:
            await self.client.close()
            self.client = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None
        return self.final_status

    # ------------------------------------------------------------------ a whole run
    async def work_done(self) -> bool:
        """Every job of the spec's workload has been submitted and has left the queue."""
        if self._workload is not None and not self._workload.done():
            return False
        counts = await asyncio.gather(*(h.jobs_in_queue.remote() for h in self._hosts))
        return sum(counts) == 0

    async def run_for(
        self,
        duration: float,
        *,
        until_done: bool = False,
        step: float,
        on_step: Callable[[float, float], None] | None = None,
    ) -> None:
        """Let pool time run to ``duration`` in steps of ``step`` pool seconds (draining
        events each step), or until the work is done if ``until_done``. A virtual pool
        checks for the end after every step in which an event happened."""
        while (now := self.now()) < duration:
            if on_step is not None:
                on_step(now, duration)
            await self.sleep_until(min(duration, now + step))
            before = len(self._events)
            await self.drain()  # keep the actors' event buffers small
            happened = len(self._events) > before or not self.virtual
            if until_done and happened and await self.work_done():
                break
        if on_step is not None:
            on_step(self.now(), duration)

    # ------------------------------------------------------------------ observation
    async def metrics_snapshot(self) -> MetricsSnapshot:
        """What a metrics scrape reads: every actor's status, slots by State, submitters."""
        assert self.client is not None
        hosts = await self.status()
        slots = await self.client.query("Machine", projection=["State"])
        subs = await self.client.query(
            "Submitter", projection=["Name", "IdleJobs", "RunningJobs", "HeldJobs"]
        )
        return MetricsSnapshot(
            hosts=hosts,
            slot_states=Counter(str(a.get_value("State", "Unknown")) for a in slots),
            submitters=[
                {k: a.get_value(k) for k in ("Name", "IdleJobs", "RunningJobs", "HeldJobs")}
                for a in subs
            ],
        )

    async def drain(self) -> None:
        """Pull events and NegotiatorLog lines from every actor into this process."""
        hosts = [self._central, *self._hosts]
        batches = await asyncio.gather(
            *(h.drain_events.remote() for h in hosts), return_exceptions=True
        )
        for b in batches:
            if isinstance(b, BaseException):  # a dead actor's undrained events are lost
                log.warning("cannot drain events from an actor: %s", b)
                continue
            self._events.extend(b)
        self._log_lines.extend(await self._central.drain_log.remote())

    @property
    def events(self) -> list[dict[str, Any]]:
        return sorted(self._events, key=lambda e: e["t"])

    def take_events(self) -> list[dict[str, Any]]:
        """The events drained so far, handed over and forgotten here (for streaming)."""
        out, self._events = self._events, []
        return out

    @property
    def negotiator_log_lines(self) -> list[str]:
        return list(self._log_lines)

    async def status(self) -> list[dict[str, Any]]:
        return list(
            await asyncio.gather(*(h.status.remote() for h in [self._central, *self._hosts]))
        )
