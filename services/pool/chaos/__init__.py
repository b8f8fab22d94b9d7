"""Seeded chaos pools: a random pool spec, workload and fault plan from one integer.

:func:`draw` is pure: the same seed gives the same TOML text on every machine (it uses
``random.Random(seed)`` only). A drawn spec is always ``clock = "virtual"`` and a few
thousand pool seconds long, so a run takes a second or two. What it holds:

- 1 to 3 families of machines (30 in all at most) of 1 to 8 cpus: static slots (one per
  cpu, or a few of several cpus), or one partitionable slot with or without
  ``CONSUMPTION_POLICY``, spread over one or several startd actors;
- 1 to 3 schedds, sometimes several sharing an actor (``per_actor``);
- 1 to 3 ``[[workload]]`` tables (fixed or random durations and requests, arrivals at
  once, Poisson or in bursts, accounting groups with or without quotas) and 0 to 3
  ``[[submit]]`` items with job policies (periodic_hold/release/remove, on_exit_hold,
  on_exit_remove, max_retries, allowed_job_duration, hold, ``+MockExitCode``, leases);
- the cadence knobs (NEGOTIATOR_INTERVAL, CLAIM_WORKLIFE, ALIVE_INTERVAL, ...), sometimes
  SYSTEM_PERIODIC_* policies, message latency, a negotiator in an actor of its own;
- a fault plan of written faults (crashes with and without a duration, i.e. that stay
  down; restarts, pauses, partitions, drops, delays and skews) on schedds, machines,
  ``central`` and actors, none contradicting another, and sometimes a random plan.

``ChaosSpec.features`` names what a seed drew, so a fixed set of seeds can be chosen to
cover them. The campaign that runs seeds is :mod:`..chaos_campaign`; ``python -m
mockpool.pool.chaos --seeds 0-199`` runs it (``__main__.py``).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from ..faults import Fault, contradicts
from ..layout import actor_plans

__all__ = ["ChaosSpec", "draw"]

OWNERS = ("alice", "bob", "carol", "dave")
GROUPS = ("group_a", "group_b")


# the job policies a submit description may draw (a feature ``policy_<name>`` each)
POLICIES = (
    "periodic_hold",
    "periodic_release",
    "periodic_remove",
    "on_exit_remove",
    "on_exit_hold",
    "max_retries",
    "allowed_job_duration",
    "hold",
    "job_lease_duration",
)


@dataclass(frozen=True)
class ChaosSpec:
    seed: int
    text: str  # the pool spec, TOML
    features: frozenset[str]  # what it drew: "pslot", "crash_stays_down:schedd", ...


def _q(s: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's for the text drawn here)."""
    return json.dumps(s)


class _Draw:
    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        self.features: set[str] = set()
        self.out: list[str] = []

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def line(self, *lines: str) -> None:
        self.out.extend(lines)

    # ---------------------------------------------------------------- the pool

    def build(self) -> ChaosSpec:
        r = self.rng
        self.duration = r.choice((1500, 2000, 2500, 3000))
        self.line("[pool]", 'clock = "virtual"', f"seed = {self.seed}")
        self.line(f"duration = {self.duration}")
        if self.chance(0.2):
            self.line("until_done = true")
            self.features.add("until_done")
        if self.chance(0.25):
            self.line(f"latency = {r.choice((0.05, 0.5, 2.0))}")
            self.features.add("latency")
        self.own_negotiator = self.chance(0.15)
        self.use_groups = self.chance(0.35)
        self.config()
        self.machines()
        self.schedds()
        self.workloads()
        self.policy_submits()
        if self.own_negotiator:
            self.line("", "[placement]", 'negotiator = "own"')
            self.features.add("own_negotiator")
        self.faults()
        return ChaosSpec(self.seed, "\n".join(self.out) + "\n", frozenset(self.features))

    def config(self) -> None:
        r = self.rng
        self.line("", "[config]")
        self.line(f"NEGOTIATOR_INTERVAL = {r.choice((30, 60, 60, 120))}")
        worklife = r.choice((-1, 0, 300, 1200))
        self.line(f"CLAIM_WORKLIFE = {worklife}")
        self.features.add("worklife_reuse" if worklife else "worklife_zero")
        for knob, values in (
            ("UPDATE_INTERVAL", (30, 60, 120)),
            ("ALIVE_INTERVAL", (20, 60, 120)),
            ("CLASSAD_LIFETIME", (120, 300)),
            ("SCHEDD_INTERVAL", (30, 120)),
            ("PERIODIC_EXPR_INTERVAL", (20, 30)),
        ):
            if self.chance(0.5):
                self.line(f"{knob} = {r.choice(values)}")
        if self.use_groups:
            self.line(f"GROUP_NAMES = {_q(', '.join(GROUPS))}")
            for g in GROUPS:
                if self.chance(0.7):
                    self.line(f"GROUP_QUOTA_{g} = {r.randint(1, 8)}")
            self.line(f"GROUP_ACCEPT_SURPLUS = {str(self.chance(0.5)).lower()}")
            self.features.add("group_quotas")
        text = []
        if self.chance(0.2):
            text += [
                "SYSTEM_PERIODIC_RELEASE = HoldReasonCode == 46 && "
                "time() - EnteredCurrentStatus >= 60",
                f"SYSTEM_MAX_RELEASES = {r.randint(1, 3)}",
            ]
            self.features.add("system_periodic")
        if self.chance(0.1):
            text.append("SYSTEM_PERIODIC_REMOVE = NumJobStarts > 3")
            self.features.add("system_periodic")
        if text:
            self.line("text = '''", *text, "'''")

    def machines(self) -> None:
        r = self.rng
        left = r.randint(1, 30)
        families = min(left, r.randint(1, 3))
        self.machine_names: list[str] = []
        self.startd_groups: list[SimpleNamespace] = []
        self.slot_memory: list[int] = []  # the memory of each family's smallest slot
        self.max_cpus = 1
        for i in range(families):
            count = left if i == families - 1 else r.randint(1, left - (families - 1 - i))
            left -= count
            cpus = r.randint(1, 8)
            memory = cpus * r.choice((512, 1024, 2048))
            per_actor = r.randint(1, count)
            pattern = f"m{i}_{{:03d}}"
            names = [pattern.format(n) for n in range(1, count + 1)]
            self.machine_names += names
            self.startd_groups.append(SimpleNamespace(names=names, machines_per_actor=per_actor))
            if per_actor < count:
                self.features.add("startd_actors")
            cfg = [f"NUM_CPUS = {cpus}", f"MEMORY = {memory}"]
            layout = r.choice(("static", "static_split", "pslot", "pslot_consumption"))
            if layout == "static_split" and cpus == 1:
                layout = "static"
            if layout == "static":
                cfg.append("SLOT_TYPE_0_PARTITIONABLE = False")
                self.slot_memory.append(memory // cpus)
            elif layout == "static_split":
                slots = r.choice([d for d in range(1, cpus) if cpus % d == 0])
                cfg += [f"SLOT_TYPE_1 = 1/{slots}", f"NUM_SLOTS_TYPE_1 = {slots}"]
                self.slot_memory.append(memory // slots)
            else:
                cfg += [
                    "SLOT_TYPE_1 = 100%",
                    "SLOT_TYPE_1_PARTITIONABLE = True",
                    "NUM_SLOTS_TYPE_1 = 1",
                ]
                if layout == "pslot_consumption":
                    cfg.append("CONSUMPTION_POLICY = True")
                self.slot_memory.append(memory)
            self.features.add(layout)
            self.max_cpus = max(self.max_cpus, cpus)
            self.line("", "[[startds]]", f"name = {_q(pattern)}", f"count = {count}")
            self.line(f"machines_per_actor = {per_actor}", "config = '''", *cfg, "'''")

    def schedds(self) -> None:
        r = self.rng
        count = r.randint(1, 3)
        per_actor = r.randint(1, count)
        self.schedd_names = [f"schedd{n}" for n in range(1, count + 1)]
        self.schedd_group = SimpleNamespace(names=self.schedd_names, per_actor=per_actor)
        self.line("", "[[schedds]]", f"count = {count}", f"per_actor = {per_actor}")
        if per_actor > 1:
            self.features.add("schedds_share_actor")
        if count > 1:
            self.features.add("schedds_several")

    # ---------------------------------------------------------------- the work

    def memory(self) -> int:
        """A request that fits the smallest slot of some family, mostly."""
        return max(64, int(self.rng.choice(self.slot_memory) * self.rng.uniform(0.1, 0.9)))

    def distribution(self, low: float, high: float) -> str:
        r = self.rng
        kind = r.choice(("fixed", "uniform", "normal", "exponential", "lognormal", "empirical"))
        self.features.add(f"duration_{kind}")
        mean = round(r.uniform(low, high))
        if kind == "fixed":
            return str(mean)
        if kind == "uniform":
            return f'{{ dist = "uniform", low = {mean // 2}, high = {mean * 3 // 2} }}'
        if kind == "normal":
            return f'{{ dist = "normal", mean = {mean}, sigma = {mean // 4} }}'
        if kind == "exponential":
            return f'{{ dist = "exponential", mean = {mean} }}'
        if kind == "lognormal":
            return f'{{ dist = "lognormal", mu = {round(r.uniform(3.5, 6), 2)}, sigma = 0.5 }}'
        values = sorted(r.sample(range(int(low), int(high) + 1), 3))
        return f'{{ dist = "empirical", values = {values} }}'

    def workloads(self) -> None:
        r = self.rng
        for i in range(r.randint(1, 3)):
            self.line("", "[[workload]]", f'name = "w{i + 1}"', f"owner = {_q(r.choice(OWNERS))}")
            self.line(f"schedd = {r.randrange(len(self.schedd_names))}")
            self.line(f"jobs = {r.randint(3, 40)}")
            self.line(f"duration = {self.distribution(30, 600)}")
            arrival = r.choice(("at_once", "poisson", "bursts"))
            self.features.add(f"arrival_{arrival}")
            if arrival == "at_once":
                self.line(f'arrival = {{ kind = "at_once", at = {r.choice((0, 0, 100, 500))} }}')
            elif arrival == "poisson":
                rate = round(r.uniform(0.005, 0.1), 4)
                self.line(f'arrival = {{ kind = "poisson", rate = {rate}, start = 0 }}')
            else:
                every, size = r.randint(60, 600), r.randint(1, 8)
                self.line(f'arrival = {{ kind = "bursts", every = {every}, size = {size} }}')
            if self.chance(0.4):
                high = min(self.max_cpus, 4)
                self.line(f'request_cpus = {{ dist = "uniform", low = 1, high = {high} }}')
                self.features.add("request_cpus_random")
            # few distinct requests: each is an autocluster the negotiator tries every cycle
            if self.chance(0.5):
                values = sorted({self.memory() for _ in range(3)})
                self.line(f'request_memory = {{ dist = "empirical", values = {values} }}')
            else:
                self.line(f"request_memory = {self.memory()}")
            if self.chance(0.4):
                self.line(f"accounting_group = {_q(r.choice(GROUPS))}")
                self.features.add("accounting_group")

    def policy_submits(self) -> None:
        r = self.rng
        for _ in range(r.choice((0, 1, 1, 2, 3))):
            desc = [
                "executable = /bin/sleep",
                f"arguments = {r.randint(20, 400)}",
                f"request_cpus = {r.choice((1, 1, min(2, self.max_cpus)))}",
                f"request_memory = {self.memory()}",
            ]
            policies = r.sample(list(POLICIES), r.randint(1, 4))
            if "max_retries" in policies and "on_exit_remove" in policies and self.chance(0.5):
                policies.remove("on_exit_remove")
            for p in policies:
                self.features.add(f"policy_{p}")
                desc.append(self.policy_line(p))
            if self.chance(0.6) or "max_retries" in policies or "on_exit_hold" in policies:
                code = r.choice(("0", "1", "3", "ifThenElse(NumJobStarts > 1, 0, 1)"))
                desc.append(f"+MockExitCode = {code}")
                self.features.add("mock_exit_code")
            if self.use_groups and self.chance(0.4):
                desc.append(f"accounting_group = {r.choice(GROUPS)}")
            desc.append(f"queue {r.randint(1, 8)}")
            self.line("", "[[submit]]", f"at = {r.choice((0, 0, 50, 300))}")
            self.line(f"schedd = {r.randrange(len(self.schedd_names))}")
            self.line(f"owner = {_q(r.choice(OWNERS))}", "description = '''", *desc, "'''")

    def policy_line(self, policy: str) -> str:
        r = self.rng
        if policy == "periodic_hold":
            return f"periodic_hold = JobStatus == 2 && time() - EnteredCurrentStatus > {r.randint(30, 300)}"
        if policy == "periodic_release":
            return f"periodic_release = NumHolds < {r.randint(2, 4)}"
        if policy == "periodic_remove":
            return r.choice(
                (
                    "periodic_remove = NumHolds >= 2",
                    f"periodic_remove = time() - QDate > {r.randint(300, 1500)}",
                    "periodic_remove = NumJobStarts >= 3",
                )
            )
        if policy == "on_exit_remove":
            return r.choice(
                ("on_exit_remove = NumJobStarts >= 2", "on_exit_remove = ExitCode == 0")
            )
        if policy == "on_exit_hold":
            return "on_exit_hold = ExitCode == 3"
        if policy == "max_retries":
            return f"max_retries = {r.randint(1, 3)}"
        if policy == "allowed_job_duration":
            return f"allowed_job_duration = {r.randint(30, 300)}"
        if policy == "hold":
            return "hold = true"
        return f"job_lease_duration = {r.choice((60, 120, 300, 600))}"

    # ---------------------------------------------------------------- the faults

    def faults(self) -> None:
        r = self.rng
        spec = SimpleNamespace(
            startds=self.startd_groups,
            schedds=[self.schedd_group],
            placement={"negotiator": "own"} if self.own_negotiator else {},
        )
        plans = actor_plans(spec)  # type: ignore[arg-type]
        actor_of = {d.lower(): p.name for p in plans for d in p.daemons}
        actor_of.update({p.name.lower(): p.name for p in plans})
        role_of = {p.name: p.role for p in plans}
        shared = {p.name: len(p.daemons) > 1 for p in plans}
        daemons = [*self.schedd_names, *self.machine_names, "collector", "negotiator"]
        names = [*daemons, *(p.name for p in plans)]
        # schedds are few and machines many: draw the kind of target first
        pools = (self.schedd_names, self.machine_names, ["central", "collector", "negotiator"])
        pools += ([p.name for p in plans],)
        kept: list[Fault] = []
        kinds = ("crash", "crash", "crash", "restart", "restart", "pause", "pause")
        kinds += ("partition", "drop", "delay", "skew")
        for _ in range(r.choice((0, 1, 2, 2, 3, 4, 5))):
            kind = r.choice(kinds)
            target = r.choice(r.choices(pools, weights=(35, 35, 15, 15))[0])
            at = round(r.uniform(0.05, 0.8) * self.duration)
            table: dict[str, Any] = {"kind": kind, "target": target, "at": at}
            if kind == "crash" and self.chance(0.5):
                pass  # stays down
            elif kind != "restart":
                table["duration"] = r.choice((30, 90, 200, 400, 900))
            if kind in ("partition", "drop", "delay"):
                others = [n for n in names if actor_of[n.lower()] != actor_of[target.lower()]]
                if not others:
                    continue
                table["peer"] = r.choice(others)
            if kind == "drop":
                table["fraction"] = round(r.uniform(0.1, 0.9), 2)
            if kind == "delay":
                table["delay"] = r.choice((1, 5, 30))
                table["fraction"] = round(r.uniform(0.3, 1.0), 2)
            if kind == "skew":
                table["skew"] = r.choice((-60, -5, 5, 30, 120))
            fault = Fault(
                kind,
                actor_of[target.lower()],
                at,
                table.get("duration", 0.0),
                actor_of[table["peer"].lower()] if "peer" in table else "",
            )
            if any(contradicts(fault, k) for k in kept):
                continue
            kept.append(fault)
            role = role_of[fault.target]
            if kind == "crash":
                how = "crash" if "duration" in table else "crash_stays_down"
                self.features.add(f"{how}:{role}")
            else:
                self.features.add(f"{kind}:{role}")
            if target in role_of and target not in daemons:
                self.features.add("fault_on_actor")
            elif target in self.schedd_names and shared[fault.target]:
                self.features.add("fault_on_shared_schedd")  # its actor holds others
            self.line("", "[[faults]]", *(f"{k} = {_toml(v)}" for k, v in table.items()))
        if self.chance(0.3):
            self.random_plan(daemons)

    def random_plan(self, daemons: list[str]) -> None:
        r = self.rng
        targets = r.sample(daemons, min(len(daemons), r.randint(2, 6)))
        kinds = r.sample(
            ["crash", "restart", "pause", "partition", "drop", "delay"], r.randint(2, 5)
        )
        rates = ", ".join(f"{k} = {r.randint(1, 4)}" for k in sorted(kinds))
        start = round(r.uniform(0.0, 0.3) * self.duration)
        until = round(r.uniform(0.5, 0.9) * self.duration)
        self.line("", "[[faults]]", 'kind = "random"', f"seed = {r.randint(0, 10**6)}")
        self.line(f"targets = {json.dumps(targets)}", f"rate = {{ {rates} }}")
        self.line(f"start = {start}", f"until = {until}", f"duration = {r.choice((30, 90, 200))}")
        self.features.add("random_plan")


def _toml(v: Any) -> str:
    return _q(v) if isinstance(v, str) else repr(v)


def draw(seed: int) -> ChaosSpec:
    """The chaos pool of ``seed`` (an integer >= 0): its spec text and what it holds."""
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"a chaos seed is a whole number >= 0, got {seed!r}")
    return _Draw(seed).build()
