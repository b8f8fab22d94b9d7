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

A virtual pool (``clock = "virtual"``) does not come here: the simulation kernel steps
the same cores (``kernel/``).
"""

from __future__ import annotations

import asyncio
import logging
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..auth import Role, daemon_identity, make_secret, make_token
from ..cedar.security import own_user
from ..claimid import from_sinful
from ..clock import Clock, ScaledClock
from ..daemon import within
from ..poolsecret import pool_secret
from ..schedd.stored import StoredQueue, read_stored_queue
from .client import PoolClient
from .cluster import pack_group, placement_options
from .faults import check_plan, parse_fault, run_plan
from .host import DaemonHost
from .layout import ActorPlan, actor_plans, find_actor, own_negotiator
from .metrics import MetricsSnapshot
from .progress import load_progress, save_progress
from .scrape import scrape
from .specmodel import PoolSpec, RemoveItem, SubmitItem

log = logging.getLogger(__name__)

STARTUP_TIMEOUT = 120.0  # real seconds for every daemon to advertise itself
HOST_STOP_TIMEOUT = 20.0  # real seconds a live actor has to stop before it is killed


WATCH_EVERY = 0.5  # real seconds between looks at every actor
# Events (or NegotiatorLog lines) an actor hands over a call: the reply is pickled on
# the actor's loop (a 10,000-slot cycle's 20,000 events take 13 ms of an idle core).
DRAIN_BATCH = 2_000


async def _drained(method: Any) -> list[Any]:
    """Everything an actor's ``drain_*`` method holds, taken DRAIN_BATCH at a time."""
    out: list[Any] = []
    while True:
        batch = await method.remote(DRAIN_BATCH)
        out += batch
        if len(batch) < DRAIN_BATCH:
            return out


@dataclass
class _Actor:
    """One daemon host of the pool: its plan, how it was made, and whether it runs."""

    plan: ActorPlan
    args: dict[str, Any]
    handle: Any
    address: str = ""
    cedar: dict[str, str] = field(default_factory=dict)  # DaemonHost.cedar_addresses
    alive: bool = True
    restarting: bool = False
    down_since: float = 0.0
    # which life of the actor this is: a call that fails after a restart says nothing
    # about the new life (one death is one death)
    incarnation: int = 0
    # daemons of the running actor that crashed alone: lower-case name -> down since
    down: dict[str, float] = field(default_factory=dict)


class LivePool:
    """An async handle on a running pool. Use from one event loop; ``await stop()``."""

    def __init__(self, spec: PoolSpec, *, state_dir: str | Path | None = None) -> None:
        self.spec = spec
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        if state_dir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="mockpool-")
            state_dir = self._tmp.name
        self.state_dir = Path(state_dir)
        # a pool beyond loopback shares the secret its spec names with every node
        self.secret = pool_secret(spec.secret_file) or make_secret()
        self.token = make_token(self.secret, Role.ADMIN, "admin")
        self.clock: Clock | None = None  # the pool clock, from the moment pool time starts
        self.log_base_wall = 0.0
        self.collector_address = ""
        self.client: PoolClient | None = None
        self._central: Any = None
        self._actors: dict[str, _Actor] = {}  # by actor name (layout.py), central first
        self._monitor: asyncio.Task[None] | None = None
        self._faults: asyncio.Task[None] | None = None
        self._spawn: Callable[..., Any] | None = None
        self._injected: set[asyncio.Task[None]] = set()  # faults injected while running
        self._events: list[dict[str, Any]] = []
        # per schedd (lower-case name): the number of the last of its stored events
        # gathered here; a crash keeps the rest in its queue file, read back from there
        self._event_marks: dict[str, int] = {}
        self._log_lines: list[str] = []
        self._workload: asyncio.Task[None] | None = None
        # Held by the workload feeder for each item it feeds, and by whoever needs the
        # queues and the count of submitted jobs to agree (a run's summary).
        self.feed_lock = asyncio.Lock()
        self.submitted: list[tuple[SubmitItem, int, int]] = []
        self.workload_errors: list[str] = []
        self.final_status: list[dict[str, Any]] = []
        if spec.clock != "live":
            raise ValueError("LivePool runs live pools; a virtual one runs on the kernel")
        self._resumed_at, self._fed, self._resumed_base = load_progress(
            self.state_dir, virtual=False
        )

    def make_token(self, role: Role | str, identity: str = "") -> str:
        """A token for this pool: ``make_token(Role.SUBMIT, "alice")`` acts as alice."""
        return make_token(self.secret, role, identity)

    # ------------------------------------------------------------------ time
    @property
    def time_scale(self) -> float:
        return self.spec.time_scale

    @property
    def epoch_wall(self) -> float:
        return self.clock.epoch_wall if isinstance(self.clock, ScaledClock) else 0.0

    def now(self) -> float:
        """Pool time (seconds since pool time 0)."""
        return self.clock.now() if self.clock else 0.0

    async def sleep_until(self, t: float) -> None:
        """Wait until pool time ``t``."""
        assert self.clock is not None, "the pool has not started"
        await self.clock.sleep_until(t)

    def _actor_factory(self) -> Callable[..., Any]:
        """How a daemon host is made: a Ray actor placed as the spec says."""
        import ray

        actor = ray.remote(num_cpus=0, max_restarts=self.spec.restarts)(DaemonHost)
        placement = self.spec.placement
        startds = [p for p in actor_plans(self.spec) if p.role == "startd"]
        group = pack_group(len(startds)) if placement.get("startds") == "pack" else None
        index = {p.name: i for i, p in enumerate(startds)}

        def spawn(role: str, **kw: Any) -> Any:
            i = index.get(str(kw.get("identity", "")).partition("/")[2], 0)
            return actor.options(**placement_options(placement, role, i, group)).remote(role, **kw)

        return spawn

    # ------------------------------------------------------------------ start/stop
    def _host_args(self, plan: ActorPlan, log_base: float) -> dict[str, Any]:
        """What a host is made with: the same again when it is restarted."""
        spec = self.spec
        # every daemon's ads date from the same day (log_base: the date of pool time 0)
        common = {
            "secret": self.secret,
            "host": spec.host,
            "seed": spec.seed,
            "log_base_wall": log_base,
        }
        if spec.cedar and plan.role != "startd":
            common |= {"cedar": True, "pool_user": own_user()}
        if plan.role in ("central", "negotiator"):
            args = {
                "config": spec.config,
                "state_dir": str(self.state_dir / "central"),  # the accountant's
                "priorities": {k: dict(v) for k, v in spec.priorities.items()},
                "identity": "negotiator",
                **common,
            }
            if plan.role == "central":
                args["with_negotiator"] = not own_negotiator(spec)
            return args
        if plan.role == "startd":
            group = spec.startds[plan.group]
            return {
                "config": spec.config,
                "machines": [(n, group.config) for n in plan.daemons],
                "state_dir": str(self.state_dir / plan.name),
                "identity": daemon_identity("startd", plan.name),
                **common,
            }
        # Each schedd signs its claim traffic as itself; the actor's own identity (for ads
        # and reschedules) names the actor.
        return {
            "config": spec.config,
            "schedds": list(plan.daemons),
            "state_dir": str(self.state_dir / "schedd"),
            "identity": daemon_identity("schedd", plan.name),
            **common,
        }

    async def start(self) -> None:
        spec = self.spec
        spawn = self._spawn = self._actor_factory()
        # The date of pool time 0, a whole second: ads' dates (QDate, ...) and the
        # NegotiatorLog's are it plus pool seconds; a resumed pool keeps the date it began on.
        log_base = float(self._resumed_base or int(time.time()))
        self.log_base_wall = log_base
        for plan in actor_plans(spec):
            args = self._host_args(plan, log_base)
            self._actors[plan.name] = _Actor(plan, args, spawn(plan.role, **args))
        central = self._actors["central"]
        self._central = central.handle
        self.collector_address = central.address = await self._central.serve.remote()
        others = [a for a in self._actors.values() if a.plan.role != "central"]
        addresses = await asyncio.gather(
            *(a.handle.serve.remote(self.collector_address) for a in others)
        )
        for a, address in zip(others, addresses, strict=True):
            a.address = address
        if self.spec.cedar:
            for a in self._actors.values():
                if a.plan.role != "startd":
                    a.cedar = await a.handle.cedar_addresses.remote()
        for a in others:
            if a.plan.role == "schedd":
                self._event_marks.update(await a.handle.event_marks.remote())
        # pool time goes on from where a pool on this state folder stopped
        self.clock = ScaledClock.starting_now(
            spec.time_scale, delay=-self._resumed_at / spec.time_scale
        )
        # every daemon but the negotiator (an actor of its own waits as the central's does)
        await asyncio.gather(
            *(
                a.handle.run.remote(spec.time_scale, self.epoch_wall)
                for a in others
                if a.plan.role != "negotiator"
            )
        )
        await self._central.run.remote(spec.time_scale, self.epoch_wall, [0])  # collector only
        self.client = PoolClient(self.collector_address, self.token)
        await self._wait_advertised()
        # A resumed pool's workload went in before (up to what it had fed): not twice.
        timeline = spec.timeline()[self._fed :]
        for item in timeline:
            if item.at <= 0 and isinstance(item, SubmitItem):
                await self._submit(item)
        await self._wait_submitters(sum(n for _, _, n in self.submitted))
        for item in timeline:
            if item.at <= 0 and isinstance(item, RemoveItem):
                await self._remove(item)
        self._fed += sum(1 for item in timeline if item.at <= 0)
        self._save_progress()
        negotiator = self._actors.get("negotiator")
        if negotiator is not None:
            await negotiator.handle.run.remote(spec.time_scale, self.epoch_wall)
        else:
            await self._central.run.remote(spec.time_scale, self.epoch_wall, [1])  # negotiator
        later = [s for s in timeline if s.at > 0]
        if later:
            self._workload = asyncio.create_task(self._feed(later))
        self._monitor = asyncio.create_task(self._watch())
        if spec.faults:
            self._faults = asyncio.create_task(run_plan(self, spec.faults))

    async def _wait_advertised(self) -> None:
        assert self.client is not None
        want_machines = {n.lower() for n in self.spec.machine_names}
        want_schedds = {n.lower() for n in self.spec.schedd_names}
        deadline = time.monotonic() + STARTUP_TIMEOUT
        pause = 0.05
        while True:
            # a machine's slots advertise together: its first slot stands for it (a
            # 100,000-slot pool is then asked for 6,250 ads a poll, not 100,000)
            slots = await self.client.query("Machine", "SlotID == 1", projection=["Machine"])
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
            await asyncio.sleep(pause)
            pause = min(2 * pause, 0.2)

    async def _wait_readvertised(self, a: _Actor) -> None:
        """Until the collector has a restarted actor's daemons at their new address (so
        that whoever looks them up by name finds them there)."""
        assert self.client is not None
        ad_type, attr = ("Machine", "Machine") if a.plan.role == "startd" else ("Scheduler", "Name")
        want = {d.lower() for d in a.plan.daemons}
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while time.monotonic() < deadline:
            ads = await self.client.query(ad_type, projection=[attr, "MyAddress"])
            there = {
                str(ad.get_value(attr, "")).lower()
                for ad in ads
                if from_sinful(str(ad.get_value("MyAddress", ""))) == a.address
            }
            if want <= there:
                return
            await asyncio.sleep(0.05)
        log.warning("%s restarted but has not advertised its new address", a.plan.name)

    async def _wait_submitters(self, queued: int) -> None:
        """Wait until the collector's submitter ads count ``queued`` jobs (idle or held:
        a description may queue its jobs held), so that the first cycle sees the time-0
        workload (schedds advertise on change, not at once)."""
        assert self.client is not None
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while queued and time.monotonic() < deadline:
            ads = await self.client.query("Submitter", projection=["IdleJobs", "HeldJobs"])
            seen = sum(
                int(a.get_value("IdleJobs", 0) or 0) + int(a.get_value("HeldJobs", 0) or 0)
                for a in ads
            )
            if seen >= queued:
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
                address=self._schedd_address(item.schedd),
                inputs=item.inputs,
            )
            self.submitted.append((item, cluster, n))
        except Exception as e:  # the pool keeps running; the summary reports it
            self.workload_errors.append(f"submit at {item.at:g} to {item.schedd}: {e}")
            log.warning("workload submit failed: %s", e)

    def _schedd_address(self, name: str) -> str:
        """Where the workload reaches schedd ``name``: its actor's address (the pool
        knows it; the collector may be down or not yet refilled after a restart)."""
        return self.actor(name).address if name else ""

    async def _remove(self, item: RemoveItem) -> None:
        """condor_rm -constraint for a trace's removed job (the summary reports failures)."""
        assert self.client is not None
        try:
            results = await self.client.act(
                "remove",
                constraint=item.constraint,
                schedd=item.schedd,
                reason=item.reason,
                address=self._schedd_address(item.schedd),
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
            await self.clock.sleep_until(item.at)
            async with self.feed_lock:  # not while a summary counts what was submitted
                if isinstance(item, RemoveItem):
                    await self._remove(item)
                else:
                    await self._submit(item)
                self._fed += 1
                self._save_progress()

    def _save_progress(self) -> None:
        if self._tmp is not None or self.clock is None:
            return
        save_progress(self.state_dir, self.now(), self._fed, self.log_base_wall)

    async def stop(self) -> list[dict[str, Any]]:
        for task in (self._workload, self._monitor, self._faults, *self._injected):
            if task is not None:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        hosts = [a.handle for a in self._actors.values() if a.alive]
        if hosts:
            try:
                await self.drain()
            except Exception:  # an actor died: stop the rest anyway
                log.exception("draining events at stop")
            # the central manager first: no negotiation cycle runs while the rest stop
            central = [
                a.handle
                for a in self._actors.values()
                if a.alive and a.plan.role in ("central", "negotiator")
            ]
            results = await asyncio.gather(
                *(self._stop_host(h) for h in central), return_exceptions=True
            )
            results += await asyncio.gather(
                *(self._stop_host(h) for h in hosts if h not in central), return_exceptions=True
            )
            self.final_status = [r for r in results if isinstance(r, dict)]
            import ray

            for a in self._actors.values():
                ray.kill(a.handle, no_restart=True)
        self._central, self._actors = None, {}
        if self.client is not None:
            await self.client.close()
            self.client = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None
        return self.final_status

    async def _stop_host(self, handle: Any) -> dict[str, Any]:
        """An actor's final status as it stops; a live actor that does not answer within
        HOST_STOP_TIMEOUT is left to ``ray.kill`` (a pool's stop never hangs on one)."""
        try:
            return await within(handle.stop.remote(), HOST_STOP_TIMEOUT)
        except TimeoutError:
            log.warning("an actor did not stop within %g s: killed", HOST_STOP_TIMEOUT)
            raise

    # ------------------------------------------------------------------ a whole run
    async def work_done(self) -> bool:
        """Every job of the spec's workload has been submitted and has left the queue."""
        if self._workload is not None and not self._workload.done():
            return False
        schedds = [a for a in self._actors.values() if a.plan.role == "schedd"]
        if any(not a.alive or a.down for a in schedds):
            return False  # a schedd that is down still holds its jobs
        counts = await asyncio.gather(*(a.handle.jobs_in_queue.remote() for a in schedds))
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
        events each step), or until the work is done if ``until_done``."""
        while (now := self.now()) < duration:
            if on_step is not None:
                on_step(now, duration)
            await self.sleep_until(min(duration, now + step))
            await self.drain()  # keep the actors' event buffers small
            if until_done and await self.work_done():
                break
        if on_step is not None:
            on_step(self.now(), duration)

    # ------------------------------------------------------------------ observation
    async def metrics_snapshot(self, *, htcondor: bool = False) -> MetricsSnapshot:
        """What a metrics scrape reads now (:func:`.scrape.scrape`)."""
        assert self.client is not None
        # the actors' counters are read at some moment of the gather: its middle is the
        # pool time that fits them best (read after, a loaded pool's counters would lag it)
        before = self.now()
        hosts = await self.status()
        return await scrape(
            self.client,
            hosts,
            now=(before + self.now()) / 2,
            time_scale=self.spec.time_scale,
            start_date=self.log_base_wall,
            htcondor=htcondor,
        )

    async def drain(self) -> None:
        """Pull events and NegotiatorLog lines from every actor into this process."""
        live = [(a, a.incarnation) for a in self._actors.values() if a.alive]
        batches = await asyncio.gather(
            *(_drained(a.handle.drain_events) for a, _ in live), return_exceptions=True
        )
        for (a, life), b in zip(live, batches, strict=True):
            if isinstance(b, BaseException):  # its schedds' stored events are read later
                self._died(a, b, life)
                continue
            self._take(b)
        self._save_progress()
        negotiator = self._actors.get("negotiator") or self._actors.get("central")
        if negotiator is not None and negotiator.alive:
            life = negotiator.incarnation
            try:
                self._log_lines.extend(await _drained(negotiator.handle.drain_log))
            except Exception as e:
                self._died(negotiator, e, life)

    def _take(self, events: list[dict[str, Any]]) -> None:
        """Keep drained events; a schedd's stored ones say how far its file was read."""
        marks = self._event_marks
        for e in events:
            seq = e.pop("_seq", None)
            if seq is not None:
                key = str(e.get("daemon", "")).lower()
                marks[key] = max(seq, marks.get(key, 0))
            self._events.append(e)

    def schedd_file(self, name: str) -> Path:
        """Where schedd ``name`` keeps its queue (see ``_host_args``)."""
        return self.state_dir / "schedd" / f"{name}.sqlite"

    def read_dead_schedd(self, name: str) -> StoredQueue:
        """A schedd that is down: its queue and history from its queue file, and the events
        it committed that were not gathered (taken into this pool's events)."""
        after = self._event_marks.get(name.lower(), 0)
        stored = read_stored_queue(self.schedd_file(name), name, after)
        self._take(stored.events)
        return stored

    def down_daemons(self) -> list[str]:
        """The daemons that are down now (alone, or with their actor)."""
        return sorted(
            d
            for a in self._actors.values()
            for d in a.plan.daemons
            if not a.alive or d.lower() in a.down
        )

    def crash_scope(self, target: str) -> list[str]:
        """The daemons a crash of ``target`` takes down."""
        a = self.actor(target)
        name = self._alone(a, target)
        return [name] if name is not None else list(a.plan.daemons)

    def _alone(self, a: _Actor, target: str) -> str | None:
        """The daemon of ``a`` that ``target`` names, when a fault on it acts on it alone
        (it shares its actor with others); None: the fault acts on the whole actor."""
        if a.plan.role not in ("schedd", "startd") or len(a.plan.daemons) < 2:
            return None
        return next((d for d in a.plan.daemons if d.lower() == target.lower()), None)

    async def _crash_alone(self, a: _Actor, name: str, cause: str) -> None:
        if name.lower() in a.down:
            return
        try:  # what it logged before it died is kept, as a crashed daemon's log file is
            self._take(await within(a.handle.drain_events.remote(), 10))
        except Exception as e:
            log.warning("cannot drain %s's events before the crash: %s", a.plan.name, e)
        await a.handle.crash_daemon.remote(name)
        a.down[name.lower()] = self.now()
        log.warning("daemon %s of actor %s died: %s", name, a.plan.name, cause)
        self.emit("daemon_died", actor=a.plan.name, daemons=[name], cause=cause[:200])

    async def _restart_alone(self, a: _Actor, name: str, cause: str) -> None:
        if name.lower() not in a.down:
            await self._crash_alone(a, name, cause)
        self._take(await a.handle.restart_daemon.remote(name, dict(self._event_marks)))
        since = a.down.pop(name.lower())
        self.emit(
            "daemon_restarted",
            actor=a.plan.name,
            daemons=[name],
            address=a.address,
            down=round(self.now() - since, 3),
            cause=cause,
        )

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
        """Every live actor's status (a dead one's is left out)."""
        live = [(a, a.incarnation) for a in self._actors.values() if a.alive]
        got = await asyncio.gather(
            *(a.handle.status.remote() for a, _ in live), return_exceptions=True
        )
        out = []
        for (a, life), st in zip(live, got, strict=True):
            if isinstance(st, BaseException):
                self._died(a, st, life)
            else:
                out.append(st)
        return out

    # ------------------------------------------------------------------ deaths, restarts
    def emit(self, kind: str, daemon: str = "master", **fields: Any) -> None:
        """An event the pool's master owns (deaths, restarts, faults), as HTCondor's
        condor_master logs its daemons' ends and starts."""
        self._events.append({"t": round(self.now(), 3), "daemon": daemon, "kind": kind, **fields})

    def actors(self) -> list[_Actor]:
        return list(self._actors.values())

    def cedar_address(self, daemon: str = "") -> str:
        """``host:port`` where HTCondor's clients reach ``daemon`` (default: the
        collector) over CEDAR; "" if the pool has no listeners."""
        a = self.actor(daemon) if daemon else self._actors.get("central")
        if a is None:
            return ""
        return a.cedar.get(daemon.lower()) or a.cedar.get("", "")

    def actor(self, target: str) -> _Actor:
        plan = find_actor([a.plan for a in self._actors.values()], target)
        if plan is None:
            names = ", ".join(sorted(d for a in self._actors.values() for d in a.plan.daemons))
            raise KeyError(f"no daemon or actor {target!r} in this pool (it has {names})")
        return self._actors[plan.name]

    def _died(self, a: _Actor, why: BaseException | str, life: int | None = None) -> None:
        """``a`` is down; ``life`` is the incarnation a failed call went to (a call to
        an earlier life that fails late is not a second death)."""
        if not a.alive or (life is not None and life != a.incarnation):
            return
        a.alive = False
        a.down_since = self.now()
        log.warning("actor %s died: %s", a.plan.name, why)
        self.emit(
            "daemon_died", actor=a.plan.name, daemons=list(a.plan.daemons), cause=str(why)[:200]
        )

    async def _watch(self) -> None:
        """Notice deaths (one death is one death: the rest run on) and, when the spec
        asks Ray for restarts, bring a restarted actor's daemons back up."""
        while True:
            await asyncio.sleep(WATCH_EVERY)
            try:  # ship the daemons' events here often: a node lost takes its actors' with it
                await self.drain()
            except Exception as e:
                log.warning("draining events: %s", e)
            for a in list(self._actors.values()):
                if a.restarting:
                    continue
                life = a.incarnation
                try:
                    serving = await within(a.handle.serving.remote(), WATCH_EVERY * 4)
                except Exception as e:
                    if a.alive and not isinstance(e, TimeoutError):  # paused: not dead
                        self._died(a, e, life)
                    continue
                if not serving and not a.restarting and self.spec.restarts > 0:
                    self._died(a, "the actor's process ended")  # Ray made a new one
                    await self._bring_up(a, a.handle, cause="ray")

    async def inject(self, table: dict[str, Any], where: str) -> None:
        """Check one fault (a ``[[faults]]`` table; ``at`` defaults to now) and run it."""
        table = {"at": self.now(), **table}
        if not table.get("target"):
            table.pop("target", None)
        plan = check_plan(parse_fault(table, where), [a.plan for a in self._actors.values()])
        task = asyncio.create_task(run_plan(self, plan))
        self._injected.add(task)
        task.add_done_callback(self._injected.discard)

    async def crash(self, target: str, cause: str = "fault") -> _Actor:
        """Kill ``target``'s actor at once, as kill -9 would: its daemons are down until
        restarted."""
        a = self.actor(target)
        if not a.alive:
            return a
        if (name := self._alone(a, target)) is not None:
            await self._crash_alone(a, name, cause)
            return a
        try:  # what it logged before it died is kept, as a crashed daemon's log file is
            self._take(await within(a.handle.drain_events.remote(), 10))
        except Exception as e:
            log.warning("cannot drain %s's events before the crash: %s", a.plan.name, e)
        import ray

        ray.kill(a.handle, no_restart=True)
        self._died(a, cause)
        return a

    async def restart(self, target: str, cause: str = "fault") -> _Actor:
        """Start ``target``'s actor again (crashing it first if it runs): a schedd from
        its queue, a startd with new claim ids, the central manager on its old port."""
        a = self.actor(target)
        if a.alive and (name := self._alone(a, target)) is not None:
            await self._restart_alone(a, name, cause)
            return a
        if a.alive:
            await self.crash(a.plan.name, cause)
        assert self._spawn is not None
        await self._bring_up(a, self._spawn(a.plan.role, **a.args), cause=cause)
        return a

    async def _bring_up(self, a: _Actor, handle: Any, cause: str) -> None:
        a.restarting = True
        try:
            port = cedar_port = 0
            if a.plan.role == "central":
                port = int(a.address.rpartition(":")[2])
                cedar_port = int(a.cedar.get("", ":0").rpartition(":")[2])
            address = await handle.serve.remote(
                self.collector_address, port, (self.spec.time_scale, self.epoch_wall), cedar_port
            )
            if a.cedar:
                a.cedar = await handle.cedar_addresses.remote()
            # what its schedds committed after the last gathering, before they run on
            self._take(await handle.stored_events.remote(dict(self._event_marks)))
            await handle.run.remote(self.spec.time_scale, self.epoch_wall)
        finally:
            a.restarting = False
        a.handle, a.address, a.alive = handle, address, True
        a.incarnation += 1
        a.down.clear()  # the whole actor started again
        if a.plan.role == "central":
            self._central = handle
        elif a.plan.role != "negotiator":
            # the negotiator advertises at its first cycle, and no one looks it up by name
            # meanwhile
            await self._wait_readvertised(a)
        self.emit(
            "daemon_restarted",
            actor=a.plan.name,
            daemons=list(a.plan.daemons),
            address=address,
            down=round(self.now() - a.down_since, 3),
            cause=cause,
        )
