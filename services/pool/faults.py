"""Fault plans as data: what goes wrong, where, when and for how long. Each kind's own
rules (its keys, checks, events and how it acts) are its module in ``faultkinds/``.

A fault is a kind, a target, a start time and a duration in pool seconds:

- ``crash``: the target dies (``kill -9``); with a duration, it is restarted that long
  after (a schedd from its queue database, a startd with new claim ids, the central
  manager on its old port, keeping the accountant); without one it stays down. A schedd
  named alone dies alone, though it shares its actor (the others run on); an actor's name,
  or a daemon of the other roles, takes the whole actor (its process) down;
- ``restart``: crash and come back at once (no duration);
- ``pause``: alive but answering nothing, its timers stopped: a catatonic daemon;
- ``partition`` (with ``peer``): calls between the two fail as a broken connection does;
- ``drop`` (with ``peer``, ``fraction``): that fraction of the calls between them fail;
- ``delay`` (with ``peer``, ``delay``, optional ``fraction``): calls wait ``delay`` s;
- ``skew`` (with ``skew``): the target's clock reads ``skew`` seconds ahead.

A target (and a peer) is a daemon's name (a machine, a schedd, ``collector``,
``negotiator``) or an actor's name (see ``layout.py``); ``constraint`` instead picks every
daemon whose ad (Machine or Scheduler) matches, when the fault starts.

A plan is a list of faults, or ``kind = "random"``: a seeded draw of faults with ``rate``
per pool hour per kind over ``targets`` between ``start`` and ``until``, each lasting
``duration``. A plan is checked before anything is injected: an unknown daemon, kind or
key, a missing or non-positive duration, or two faults that contradict each other (on one
target at overlapping times, where one crashes, restarts or pauses it, or both skew it;
two network faults on the same pair) are refused with the fault's place in the plan. A
random plan's draws are compared as the actors they act on (machines of one actor are one
target) and a draw that would contradict is left out: a random plan always runs.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Protocol

from .faultkinds import FAULT_KINDS, FAULT_PARAMS, FaultError
from .layout import ActorPlan, find_actor

log = logging.getLogger(__name__)

KINDS = tuple(FAULT_KINDS)  # each kind's rules: faultkinds/
RANDOM_KINDS = tuple(k.name for k in FAULT_KINDS.values() if k.drawable)
MAX_DRAWS = 100_000  # a random plan's expected faults: more is a typo, not a plan
_KEYS = {"kind", "target", "constraint", "peer", "at", "duration", *FAULT_PARAMS}
_RANDOM_KEYS = {
    "kind",
    "seed",
    "rate",
    "targets",
    "start",
    "until",
    "duration",
    "fraction",
    "delay",
}


@dataclass(frozen=True)
class Fault:
    kind: str
    target: str = ""  # a daemon or actor name ("" with a constraint)
    at: float = 0.0
    duration: float = 0.0  # 0: a crash that stays down, or an instant restart
    peer: str = ""
    constraint: str = ""
    fraction: float = 1.0
    delay: float = 0.0
    skew: float = 0.0
    where: str = ""  # its place in the plan, for messages
    drawn: bool = False  # by a random plan: left out, not refused, where it contradicts

    @property
    def end(self) -> float:
        return self.at + self.duration if self.duration else float("inf")

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"fault": self.kind, "target": self.target or self.constraint}
        if self.peer:
            out["peer"] = self.peer
        if self.duration:
            out["duration"] = self.duration
        return out | FAULT_KINDS[self.kind].extras(self)


def _number(t: Mapping[str, Any], key: str, default: float, where: str) -> float:
    v = t.get(key, default)
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise FaultError(f"{where}: {key} must be a number, got {v!r}")
    return float(v)


def parse_fault(t: Mapping[str, Any], where: str) -> list[Fault]:
    """One ``[[faults]]`` table: a fault, or the faults of a random plan."""
    kind = t.get("kind")
    if kind == "random":
        return _random_plan(t, where)
    if kind not in KINDS:
        raise FaultError(
            f"{where}: unknown kind {kind!r} (expected one of {', '.join(KINDS)} or random)"
        )
    for k in t:
        if k not in _KEYS:
            raise FaultError(f"{where}: unknown key {k!r} (expected {', '.join(sorted(_KEYS))})")
    target, constraint = t.get("target", ""), t.get("constraint", "")
    if not isinstance(target, str) or not isinstance(constraint, str):
        raise FaultError(f"{where}: target and constraint must be strings")
    if bool(target) == bool(constraint):
        raise FaultError(f"{where}: give a target (a daemon or actor name) or a constraint")
    fk = FAULT_KINDS[kind]
    peer = t.get("peer", "")
    if fk.needs_peer and (not isinstance(peer, str) or not peer):
        raise FaultError(f"{where}: a {kind} fault needs a peer (the other daemon)")
    if not fk.needs_peer and peer:
        raise FaultError(f"{where}: a {kind} fault takes no peer")
    at = _number(t, "at", 0.0, where)
    if at < 0:
        raise FaultError(f"{where}: at must be >= 0, got {at:g}")
    duration = _number(t, "duration", 0.0, where)
    if fk.instant:
        if "duration" in t:
            raise FaultError(f"{where}: a {kind} is instant: it takes no duration")
    elif ("duration" in t or not fk.stays_without_duration) and not duration > 0:
        raise FaultError(f"{where}: duration must be > 0 pool seconds, got {duration:g}")
    fraction = _number(t, "fraction", 1.0, where)
    if not 0 < fraction <= 1:
        raise FaultError(f"{where}: fraction must be in (0, 1], got {fraction:g}")
    delay = _number(t, "delay", 0.0, where)
    skew = _number(t, "skew", 0.0, where)
    fault = Fault(kind, target, at, duration, peer, constraint, fraction, delay, skew, where)
    fk.check(fault)
    return [fault]


def _random_plan(t: Mapping[str, Any], where: str) -> list[Fault]:
    for k in t:
        if k not in _RANDOM_KEYS:
            raise FaultError(
                f"{where}: unknown key {k!r} for a random plan "
                f"(expected {', '.join(sorted(_RANDOM_KEYS))})"
            )
    seed = t.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise FaultError(f"{where}: seed must be a whole number")
    rates = t.get("rate", {})
    if not isinstance(rates, dict) or not rates:
        raise FaultError(f"{where}: rate must be a table of faults per pool hour by kind")
    for kind, r in rates.items():
        if kind not in RANDOM_KINDS:
            raise FaultError(
                f"{where}: rate.{kind}: not a kind (expected {', '.join(RANDOM_KINDS)})"
            )
        if isinstance(r, bool) or not isinstance(r, int | float) or r < 0:
            raise FaultError(f"{where}: rate.{kind} must be a number >= 0")
    targets = t.get("targets", [])
    if not isinstance(targets, list) or not targets or not all(isinstance(x, str) for x in targets):
        raise FaultError(f"{where}: targets must be a list of daemon or actor names")
    start = _number(t, "start", 0.0, where)
    until = _number(t, "until", 0.0, where)
    if not until > start >= 0:
        raise FaultError(f"{where}: needs 0 <= start < until (pool seconds)")
    duration = _number(t, "duration", 60.0, where)
    if not duration > 0:
        raise FaultError(f"{where}: duration must be > 0 pool seconds, got {duration:g}")
    fraction = _number(t, "fraction", 0.5, where)
    delay = _number(t, "delay", 5.0, where)
    expected = sum(float(r) for r in rates.values()) * (until - start) / 3600.0
    if not expected <= MAX_DRAWS:
        raise FaultError(
            f"{where}: rate x (until - start) asks for about {expected:g} faults; "
            f"a random plan draws at most {MAX_DRAWS:,}"
        )
    rng = random.Random(seed)
    drawn: list[Fault] = []
    for kind in sorted(rates):
        fk = FAULT_KINDS[kind]
        rate = float(rates[kind]) / 3600.0
        tt = start
        while rate > 0:
            tt += rng.expovariate(rate)
            if tt >= until:
                break
            target = rng.choice(targets)
            peer = ""
            if fk.needs_peer:
                others = [x for x in targets if x != target]
                if not others:
                    continue
                peer = rng.choice(others)
            drawn.append(
                Fault(
                    kind,
                    target,
                    round(tt, 3),
                    0.0 if fk.instant else duration,
                    peer,
                    fraction=fraction if "fraction" in fk.params else 1.0,
                    delay=delay if "delay" in fk.params else 0.0,
                    where=f"{where} (random, seed {seed})",
                    drawn=True,
                )
            )
    # Draws that would contradict one drawn before are left out, so a plan always runs
    # (check_plan leaves out those that contradict once names are actors).
    kept: list[Fault] = []
    for f in sorted(drawn, key=lambda f: (f.at, f.kind, f.target)):
        if not any(contradicts(f, g) for g in kept):
            kept.append(f)
    return kept


def _ends(f: Fault) -> tuple[str, ...]:
    return tuple(sorted(x.lower() for x in (f.target, f.peer) if x))


def contradicts(a: Fault, b: Fault) -> bool:
    """Whether two faults cannot both act: on one target (or pair) at overlapping times,
    one of them crashing, restarting or pausing it, or both skewing it or cutting it."""
    ak, bk = FAULT_KINDS[a.kind], FAULT_KINDS[b.kind]
    a_end = a.at if ak.instant else a.end
    b_end = b.at if bk.instant else b.end
    if a.at > b_end or b.at > a_end:
        return False
    a_on = {x.lower() for x in (a.target, a.peer) if x}
    b_on = {x.lower() for x in (b.target, b.peer) if x}
    if not a_on & b_on:
        return False
    if ak.exclusive or bk.exclusive:
        return True
    if ak is bk and ak.single:
        return True
    return ak.needs_peer and bk.needs_peer and _ends(a) == _ends(b)


def check_plan(faults: Iterable[Fault], plans: list[ActorPlan]) -> list[Fault]:
    """The plan with names resolved to actors, or FaultError naming the first problem.
    Faults that act on actors conflict per actor, so names are compared as actors."""
    resolved: list[Fault] = []
    given: dict[int, Fault] = {}  # id of a resolved fault -> the fault as written
    for f in faults:
        names = {}
        for key in ("target", "peer"):
            name = getattr(f, key)
            if not name:
                continue
            actor = find_actor(plans, name)
            if actor is None:
                known = ", ".join(sorted({d for p in plans for d in p.daemons}))
                raise FaultError(
                    f"{f.where}: {key} {name!r}: no such daemon (the pool has {known})"
                )
            names[key] = actor.name
        if names.get("peer") and names["peer"] == names.get("target"):
            if f.drawn:
                continue  # two machines of one actor drawn as the two ends
            raise FaultError(
                f"{f.where}: {f.target!r} and {f.peer!r} are in one actor: nothing to cut"
            )
        resolved.append(replace(f, **names))
        given[id(resolved[-1])] = f
    # The faults written out first, in plan order (one that contradicts another is
    # refused); then the drawn ones, each left out where it contradicts one kept.
    kept: list[Fault] = []
    for a in sorted(resolved, key=lambda f: f.drawn):
        clash = next((b for b in kept if contradicts(a, b)), None)
        if clash is None:
            kept.append(a)
        elif not a.drawn:
            raise FaultError(
                f"{a.where}: {a.kind} of {a.target} at {a.at:g} contradicts {clash.where}: "
                f"{clash.kind} of {clash.target} at {clash.at:g}"
            )
    # A crash or restart of a daemon acts on that daemon (the others of its actor run
    # on); the rest act on its actor, named so in the events.
    return sorted(
        (given[id(f)] if FAULT_KINDS[f.kind].on_daemon else f for f in kept),
        key=lambda f: f.at,
    )


# ---------------------------------------------------------------------- running a plan


class FaultTarget(Protocol):
    """What a plan acts on: a running pool (``launcher.LivePool``)."""

    clock: Any
    client: Any

    def emit(self, kind: str, daemon: str = ..., **fields: Any) -> None: ...
    def actor(self, target: str) -> Any: ...
    def crash_scope(self, target: str) -> list[str]: ...
    async def crash(self, target: str, cause: str = ...) -> Any: ...
    async def restart(self, target: str, cause: str = ...) -> Any: ...


async def _constraint_targets(pool: FaultTarget, f: Fault) -> list[str]:
    """The actors of the daemons whose Machine or Scheduler ad matches the constraint."""
    names: set[str] = set()
    for ad_type, attr in (("Machine", "Machine"), ("Scheduler", "Name")):
        for ad in await pool.client.query(ad_type, f.constraint, projection=[attr]):
            value = ad.get_value(attr)
            if isinstance(value, str):
                try:
                    names.add(pool.actor(value).plan.name)
                except KeyError:
                    continue
    return sorted(names)


async def apply_fault(pool: FaultTarget, f: Fault, start: bool) -> None:
    """Start (or end) one fault on a running pool; every step is an event."""
    targets = [f.target] if f.target else await _constraint_targets(pool, f)
    actors = [pool.actor(t).plan.name for t in targets]
    kind = FAULT_KINDS[f.kind]
    if kind.on_daemon:
        daemons = sorted(d for t in targets for d in pool.crash_scope(t))
    else:
        daemons = sorted(d for t in targets for d in pool.actor(t).plan.daemons)
    extra: dict[str, Any] = {}
    if f.peer:  # the daemons on the other side of a cut (the checker reads them)
        extra["peer_daemons"] = sorted(pool.actor(f.peer).plan.daemons)
    if start:
        pool.emit("fault_start", **f.describe(), actors=actors, daemons=daemons, **extra)
    for target in targets:
        await kind.act(pool, f, target, pool.actor(target), start)
    if not start or kind.instant:
        pool.emit("fault_end", **f.describe(), actors=actors, daemons=daemons, **extra)


def plan_steps(faults: list[Fault]) -> list[tuple[float, Fault, bool]]:
    """Each fault's start and (after its duration) end, in the order they act: by time,
    the ends of one instant before its starts, then in plan order."""
    steps: list[tuple[float, int, Fault, bool]] = []
    for i, f in enumerate(faults):
        steps.append((f.at, i, f, True))
        if f.duration and not FAULT_KINDS[f.kind].instant:
            steps.append((f.at + f.duration, i, f, False))
    steps.sort(key=lambda s: (s[0], not s[3], s[1]))
    return [(at, f, start) for at, _, f, start in steps]


async def run_plan(pool: FaultTarget, faults: list[Fault]) -> None:
    """Inject each fault at its time and end it after its duration, in pool time."""
    for at, f, start in plan_steps(faults):
        await pool.clock.sleep_until(at)
        await apply_step(pool, f, start)


async def apply_step(pool: FaultTarget, f: Fault, start: bool) -> None:
    """One step of a plan; a failure is an event (``fault_failed``): the pool goes on."""
    try:
        await apply_fault(pool, f, start)
    except Exception as e:
        log.warning("fault %s failed: %s", f.describe(), e)
        pool.emit("fault_failed", **f.describe(), error=str(e)[:300])
