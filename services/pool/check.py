"""Invariants over a run's output folder (``events.jsonl`` and ``ads/``; see :mod:`.report`).

``mockpool check DIR`` and the end of ``mockpool run`` print what this finds. Each fact is
read from the daemon that owns it: slot facts (claim, activate, job_exit, job_evicted,
release, lease_expired) from the startd's events (its ``daemon`` is the machine the slot
is on), job facts (submit, completion) from the schedd's. A job is named by its schedd
and id (``schedd1 12.0``); the startd's events name the schedd through the claim.

Invariants:

- ``job_lost``: every submitted job is in the final queue or in history (GlobalJobId).
- ``job_running_twice``: a job is never activated on a claim while it runs on another
  (a run ends with its claim's end at the startd, or when its schedd gives the claim up:
  ``reconnect_failed``, after which HTCondor's schedd runs the job again).
- ``job_completed_twice``: a schedd completes a job at most once, and history holds it once.
- ``job_completion_unlogged``: a job history holds as completed (JobStatus 4) has its
  schedd's ``job_completed`` event: the event is committed with the change (a crash keeps
  both or neither). Jobs completed before the run's first event (a pool resumed from an
  old state folder) are not judged.
- ``slot_overcommitted``: the dynamic slots alive at once on a partitionable slot never
  hold more cpus, memory or disk than it has (its TotalSlot* in the final ads), nor does
  a final p-slot with its children (those its startd advertised since it last started:
  a crashed startd's old ads linger until they expire); a dynamic slot is never claimed
  while it is alive (but by a claim that preempts the one it has: the startd's claim
  event names it, and the preempted claim's release follows).
- ``claim_two_schedds``: a claim id is granted to one schedd, and no other schedd says
  it holds it.
- ``lease_late``: a claim whose lease expired ended no earlier than its deadline and at
  most one keepalive interval after it (after the end of a pause of its startd, whose
  timers wait while it is catatonic).

Faults: a ``daemon_died`` event of the master ends every claim and dynamic slot of the
startds that died; a restarted startd starts whole.

- ``accountant_usage``: at each negotiation cycle, the slots the accountant charged each
  submitter (ResourcesUsed, from the slot ads) agree with the claims the startds' events
  show alive then: no fewer than it held through the last ``AD_DELAY`` pool seconds (ads
  take time to reach the collector; a live run's window is 5 real seconds), no more than
  it held at any moment of them. As HTCondor's accountant, it charges what the collector
  holds: a claim whose startd could not reach the collector when it ended (a partition,
  drop or delay fault between its actor and ``central``, or a pause of either) stays charged while its last ad
  stays there, until the ad is dropped (``ad_expired``, ``ad_invalidated``: its lifetime
  ended), the central manager restarts, or the fault ends; a claim made during such a
  fault need not be charged until it ends. A charge after that, or for a slot the
  submitter never claimed, is a violation.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..classad import ClassAd, parse_ads
from .faultkinds import FAULT_KINDS

__all__ = ["INVARIANTS", "CheckError", "Report", "Violation", "check", "check_dir", "format_report"]

INVARIANTS = (
    "job_lost",
    "job_running_twice",
    "job_completed_twice",
    "job_completion_unlogged",
    "slot_overcommitted",
    "claim_two_schedds",
    "lease_late",
    "accountant_usage",
)
AD_DELAY = 60.0  # pool seconds an ad change may take to reach the negotiator's snapshot
_EPSILON = 1e-3  # event times are rounded to the millisecond
_RUN_ENDS = ("job_exit", "job_evicted", "release", "lease_expired")  # a run ends on its claim
_RUNS_LEFT = (*_RUN_ENDS, "reconnect_failed")  # ... or its schedd gives the claim up
_RESOURCES = (("cpus", "Cpus"), ("memory", "Memory"), ("disk", "Disk"))
_CENTRAL = "central"  # the actor that hosts the collector
# faults that may keep a startd's ads from the collector: a cut between them, or a
# pause of either (a paused startd sends nothing; a paused collector takes nothing in,
# and its negotiator's overdue cycle charges what it held when it stopped)
_CUTS = frozenset(k.name for k in FAULT_KINDS.values() if k.cuts_calls)


class CheckError(ValueError):
    """The folder cannot be read (missing file, bad line); the message says where."""


@dataclass(frozen=True)
class Violation:
    invariant: str
    subject: str  # "job schedd1 1.0", "slot slot1@exec0001", "claim <...>#..."
    message: str
    lines: tuple[int, ...] = ()  # events.jsonl line numbers (1-based) that show it

    def __str__(self) -> str:
        where = f" (events.jsonl lines {', '.join(map(str, self.lines))})" if self.lines else ""
        return f"{self.invariant}: {self.subject}: {self.message}{where}"


@dataclass
class Report:
    events: int
    jobs: int
    violations: list[Violation] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.violations


Event = tuple[int, dict[str, Any]]  # (line number, event)


def _from_startd(e: dict[str, Any]) -> bool:
    slot = e.get("slot")
    return isinstance(slot, str) and slot.partition("@")[2] == e.get("daemon")


def _parent(slot: str) -> str | None:
    """``slot1@m`` for the dynamic slot ``slot1_3@m``; None for any other slot."""
    name, at, machine = slot.partition("@")
    head, us, sub = name.partition("_")
    return f"{head}@{machine}" if at and us and sub.isdigit() else None


def _gjid_key(ad: ClassAd) -> tuple[str, str] | None:
    gjid = ad.eval("GlobalJobId")
    if isinstance(gjid, str) and gjid.count("#") >= 2:
        schedd, job, _ = gjid.split("#", 2)
        return schedd, job
    return None


def _older(started: Any, than: float) -> bool:
    return isinstance(started, (int, float)) and started < than


def _machine_of(claim_id: str) -> str:
    """The machine a claim id names (``<host:port?alias=exec0001>#...``)."""
    head = claim_id.partition(">")[0]
    return head.partition("alias=")[2]


def _deaths(events: list[Event]) -> dict[int, set[str]]:
    """Line -> the machines whose startd died there (a crash ends all their claims)."""
    return {
        n: {str(d) for d in e.get("daemons", ())}
        for n, e in events
        if e["kind"] == "daemon_died" and e.get("daemon") == "master"
    }


def check(
    events: list[Event],
    queue: list[ClassAd],
    history: list[ClassAd],
    slots: list[ClassAd],
    ad_delay: float = AD_DELAY,
    start_date: float = 0.0,
) -> Report:
    """Every invariant over these events (in file order) and final ads (whose dates count
    from ``start_date``, the date of pool time 0)."""
    out: list[Violation] = []
    startd = [(n, e) for n, e in events if _from_startd(e)]
    owner: dict[str, tuple[str, int]] = {}  # claim id -> (schedd granted it, line)
    for n, e in startd:
        if e["kind"] != "claim" or "claim" not in e:
            continue
        cid, schedd = e["claim"], e.get("schedd", "")
        first = owner.setdefault(cid, (schedd, n))
        if first[0] != schedd:
            out.append(
                Violation(
                    "claim_two_schedds",
                    f"claim {cid}",
                    f"granted to {first[0]} and to {schedd}",
                    (first[1], n),
                )
            )
    for n, e in events:
        if e["kind"] == "claim_held" and e.get("claim") in owner:
            holder, line = owner[e["claim"]]
            if holder != e.get("daemon"):
                out.append(
                    Violation(
                        "claim_two_schedds",
                        f"claim {e['claim']}",
                        f"granted to {holder}, but {e.get('daemon')} holds it",
                        (line, n),
                    )
                )
    out += _jobs(events, startd, owner, queue, history)
    out += _completions(events, history, start_date)
    out += _slots(startd, slots, _deaths(events))
    out += _leases(startd, _pauses(events))
    out += _usage(events, startd, ad_delay)
    jobs = len(queue) + len(history)
    return Report(len(events), jobs, out)


def _jobs(
    events: list[Event],
    startd: list[Event],
    owner: dict[str, tuple[str, int]],
    queue: list[ClassAd],
    history: list[ClassAd],
) -> list[Violation]:
    out: list[Violation] = []
    submitted: dict[tuple[str, str], int] = {}
    completed: dict[tuple[str, str], list[int]] = defaultdict(list)
    for n, e in events:
        if _from_startd(e):
            continue
        if e["kind"] == "submit":
            cluster, procs = e.get("cluster"), e.get("procs")
            if isinstance(cluster, int) and isinstance(procs, int):
                for p in range(procs):
                    submitted[(e["daemon"], f"{cluster}.{p}")] = n
        elif e["kind"] == "job_completed" and "job" in e:
            completed[(e["daemon"], e["job"])].append(n)
    for (schedd, job), lines in completed.items():
        if len(lines) > 1:
            out.append(
                Violation(
                    "job_completed_twice",
                    f"job {schedd} {job}",
                    f"completed {len(lines)} times",
                    tuple(lines),
                )
            )
    present = [k for ad in queue + history if (k := _gjid_key(ad)) is not None]
    seen: set[tuple[str, str]] = set()
    for ad in history:
        k = _gjid_key(ad)
        if k in seen:
            out.append(
                Violation("job_completed_twice", f"job {k[0]} {k[1]}", "is in history twice")
            )
        if k is not None:
            seen.add(k)
    have = set(present)
    for (schedd, job), n in submitted.items():
        if (schedd, job) not in have:
            out.append(
                Violation(
                    "job_lost",
                    f"job {schedd} {job}",
                    "submitted but neither in the queue nor in history",
                    (n,),
                )
            )
    running: dict[tuple[str, str], tuple[str, int]] = {}  # job -> (claim, activate line)
    deaths = _deaths(events)
    # a schedd that gave a claim up (its job lease ran out) runs the job elsewhere, as
    # HTCondor's does: the silent startd's own lease ends its copy (``lease_late``)
    gave_up = [(n, e) for n, e in events if e["kind"] == "reconnect_failed" and e.get("job")]
    for n, e in sorted(startd + gave_up + [(n, {}) for n in deaths]):
        if n in deaths:  # a dead startd runs nothing any more
            running = {k: v for k, v in running.items() if _machine_of(v[0]) not in deaths[n]}
            continue
        cid, job = e.get("claim"), e.get("job")
        if cid is None or job is None or cid not in owner:
            continue
        key = (owner[cid][0], job)
        if e["kind"] == "activate":
            other = running.get(key)
            if other is not None and other[0] != cid:
                out.append(
                    Violation(
                        "job_running_twice",
                        f"job {key[0]} {job}",
                        f"activated on {e['slot']} while running on claim {other[0]}",
                        (other[1], n),
                    )
                )
            running[key] = (cid, n)
        elif e["kind"] in _RUNS_LEFT and running.get(key, ("",))[0] == cid:
            del running[key]
    return out


def _completions(events: list[Event], history: list[ClassAd], start_date: float) -> list[Violation]:
    """Each job history holds as completed since the run began has its completion event."""
    logged = {(e.get("daemon"), e.get("job")) for _, e in events if e["kind"] == "job_completed"}
    began = math.floor(min(float(e["t"]) for _, e in events)) if events else -math.inf
    began += start_date  # CompletionDate is a date
    out: list[Violation] = []
    for ad in history:
        key = _gjid_key(ad)
        if key is None or ad.eval("JobStatus") != 4 or key in logged:
            continue
        done = ad.eval("CompletionDate")
        if isinstance(done, int | float) and not isinstance(done, bool) and done < began:
            continue  # completed before this run's events begin
        out.append(
            Violation(
                "job_completion_unlogged",
                f"job {key[0]} {key[1]}",
                "completed in history, but its schedd has no job_completed event for it",
            )
        )
    return out


def _slots(
    startd: list[Event], slots: list[ClassAd], deaths: dict[int, set[str]]
) -> list[Violation]:
    out: list[Violation] = []
    totals: dict[str, tuple[float, ...]] = {}
    final_children: dict[str, list[ClassAd]] = defaultdict(list)
    for ad in slots:
        name = ad.eval("Name")
        if not isinstance(name, str):
            continue
        if ad.eval("SlotType") == "Partitionable":
            totals[name] = tuple(_num(ad, f"TotalSlot{a}") for _, a in _RESOURCES)
        elif (parent := _parent(name)) is not None:
            final_children[parent].append(ad)
    for pslot, children in final_children.items():
        if pslot not in totals:
            continue
        p_ad = next(a for a in slots if a.eval("Name") == pslot)
        # A crashed startd's ads stay in the collector until they expire, as HTCondor's
        # do: a child left from before its startd restarted (an older DaemonStartTime
        # than its p-slot's) is no part of the slot the restarted startd serves.
        born = p_ad.eval("DaemonStartTime")
        if isinstance(born, (int, float)):
            children = [c for c in children if not _older(c.eval("DaemonStartTime"), born)]
        for i, (word, attr) in enumerate(_RESOURCES):
            used = _num(p_ad, attr) + sum(_num(c, attr) for c in children)
            if used > totals[pslot][i] + _EPSILON:
                out.append(
                    Violation(
                        "slot_overcommitted",
                        f"slot {pslot}",
                        f"final ads: it and its dynamic slots hold {used:g} {word} "
                        f"of {totals[pslot][i]:g}",
                    )
                )
    # dynamic slot -> (amounts, line, claim)
    alive: dict[str, tuple[tuple[float, ...], int, str]] = {}
    for n, e in sorted(startd + [(n, {}) for n in deaths]):
        if n in deaths:  # its slots went with it; a restarted startd starts whole
            alive = {s: v for s, v in alive.items() if s.partition("@")[2] not in deaths[n]}
            continue
        slot = e["slot"]
        parent = _parent(slot)
        if parent is None:
            continue
        if e["kind"] == "claim":
            # a preempting claim takes the slot (and what it holds) from the claim it names
            if slot in alive and alive[slot][2] != e.get("preempts"):
                out.append(
                    Violation(
                        "slot_overcommitted",
                        f"slot {slot}",
                        "claimed again while alive",
                        (alive[slot][1], n),
                    )
                )
            amounts = tuple(float(e.get(w, 0) or 0) for w, _ in _RESOURCES)
            alive[slot] = (amounts, n, e.get("claim", ""))
            total = totals.get(parent)
            if total is None:
                continue
            mine = [(s, v) for s, v in alive.items() if _parent(s) == parent]
            for i, (word, _) in enumerate(_RESOURCES):
                used = sum(v[0][i] for _, v in mine)
                if used > total[i] + _EPSILON:
                    lines = tuple(sorted(v[1] for _, v in mine))
                    out.append(
                        Violation(
                            "slot_overcommitted",
                            f"slot {parent}",
                            f"its dynamic slots hold {used:g} {word} of {total[i]:g}",
                            lines,
                        )
                    )
        elif (
            e["kind"] in ("release", "lease_expired")
            and slot in alive
            and alive[slot][2] in ("", e.get("claim", ""))
        ):
            # the claim that ends (a preempted one's end comes after its successor's claim)
            del alive[slot]
    return out


def _cuts(events: list[Event]) -> dict[str, list[tuple[float, float]]]:
    """Machine -> the (start, end) of the network faults between its startd's actor and the
    central manager's (the collector's): its updates may not arrive meanwhile. ``"*"``: a
    fault whose startd side the events do not name (the central manager its target, a
    startd actor its peer, and no event saying which machines that actor hosts), taken to
    cut every machine."""
    hosts: dict[str, list[str]] = {}  # actor -> its daemons, as events name them
    for _, e in events:
        if isinstance(e.get("actor"), str) and isinstance(e.get("daemons"), list):
            hosts[e["actor"]] = [str(d) for d in e["daemons"]]
        elif e["kind"] == "fault_start" and len(e.get("actors") or ()) == 1:
            hosts[str(e["actors"][0])] = [str(d) for d in e.get("daemons", ())]
    out: dict[str, list[tuple[float, float]]] = defaultdict(list)
    open_at: dict[tuple[str, str, str], tuple[float, list[str]]] = {}
    for _, e in events:
        if e.get("fault") not in _CUTS or e.get("daemon") != "master":
            continue
        key = (str(e["fault"]), str(e.get("target")), str(e.get("peer")))
        if e["kind"] == "fault_start":
            if e["fault"] == "pause":  # of a startd's actor (its machines), or of central
                central = _CENTRAL in (e.get("actors") or ())
                machines = ["*"] if central else [str(d) for d in e.get("daemons", ())]
            elif e.get("peer") == _CENTRAL:
                machines = [str(d) for d in e.get("daemons", ())]
            elif e.get("target") == _CENTRAL or _CENTRAL in (e.get("actors") or ()):
                peer = str(e.get("peer"))
                unknown = ["*"] if peer.startswith("startd") else []  # layout.py's names
                machines = [str(d) for d in e.get("peer_daemons") or hosts.get(peer, unknown)]
            else:
                continue
            open_at[key] = (float(e["t"]), machines)
        elif e["kind"] == "fault_end" and key in open_at:
            t, machines = open_at.pop(key)
            for m in machines:
                out[m].append((t, float(e["t"])))
    for t, machines in open_at.values():  # no end: cut until the run's end
        for m in machines:
            out[m].append((t, math.inf))
    return out


def _stale_until(
    span: list[Any],
    cuts: dict[str, list[tuple[float, float]]],
    dropped: dict[str, list[float]],
    restarts: list[float],
    delay: float,
) -> float:
    """Until when the collector may still show a claim that ended at ``span[3]``: its end,
    or, when its startd was cut from the collector before the release could arrive (and
    after the claim's own ad could), until its ad is dropped, the collector restarts or
    the cut ends (the startd sends its ads again at once)."""
    slot, start, end = span[0], span[2], span[3]
    machine = slot.partition("@")[2]
    until = end
    for a, b in (*cuts.get(machine, ()), *cuts.get("*", ())):
        if start <= a <= end + delay and b > end:
            gone = [t for t in (*dropped.get(slot, ()), *restarts) if t >= end]
            until = max(until, min([b, *gone]))
    return until


def _usage(events: list[Event], startd: list[Event], delay: float) -> list[Violation]:
    """What the accountant charged at each cycle's start (slots held per submitter, from
    the slot ads) against the claims the startds say were alive then. The snapshot may be
    up to ``delay`` old: a submitter's count must lie between the slots it held through
    the whole window before the cycle and those it held at any moment of it."""
    cycles = [(n, e) for n, e in events if e["kind"] == "cycle" and "charged" in e]
    if not cycles:
        return []
    # claim id -> [slot, submitter, start, end, end of its ad]: a dead startd's claims end
    # with it, but its ads stay in the collector (and are charged) until they expire
    spans: dict[str, list[Any]] = {}
    deaths = _deaths(events)
    expired: dict[str, float] = {}  # slot -> when the collector dropped its ad, the last time
    dropped: dict[str, list[float]] = defaultdict(list)  # slot -> every time it was dropped
    # when the negotiator lost sight of a slot's ad (it expired: a silent startd; or the
    # central manager restarted empty): a claim seen before need not be charged after
    blind: dict[str, list[float]] = defaultdict(list)
    restarts: list[float] = []
    for _, e in events:
        if e["kind"] in ("ad_expired", "ad_invalidated") and e.get("ad_type") == "Machine":
            expired[str(e.get("name"))] = float(e["t"])
            dropped[str(e.get("name"))].append(float(e["t"]))
            if e["kind"] == "ad_expired":
                blind[str(e.get("name"))].append(float(e["t"]))
        elif e["kind"] in ("daemon_died", "daemon_restarted") and e.get("actor") == _CENTRAL:
            restarts.append(float(e["t"]))
    cuts = _cuts(events)
    for n, e in sorted(startd + [(n, {"kind": "died", "t": 0}) for n in deaths]):
        if n in deaths:
            t = float(next(ev["t"] for m, ev in events if m == n))
            for span in spans.values():
                if span[3] == math.inf and span[0].partition("@")[2] in deaths[n]:
                    span[3] = t
                    gone = expired.get(span[0], math.inf)
                    span[4] = gone if gone >= t else math.inf
            continue
        cid = e.get("claim")
        if e["kind"] == "claim" and cid:
            spans[cid] = [e["slot"], e.get("submitter", ""), float(e["t"]), math.inf, math.inf]
        elif e["kind"] in ("release", "lease_expired") and cid in spans:
            spans[cid][3] = min(spans[cid][3], float(e["t"]))
            spans[cid][4] = _stale_until(spans[cid], cuts, dropped, restarts, delay)
    out: list[Violation] = []
    for n, e in cycles:
        # in pool time: the event's date less the cycle's length (its ``start`` is the
        # negotiator's own clock, which a skew fault moves)
        start = round(float(e["t"]) - float(e.get("duration", 0) or 0), 3)
        lo_t = start - delay
        by_slot: dict[str, list[list[Any]]] = defaultdict(list)
        for span in spans.values():
            if span[2] <= start + _EPSILON and span[4] >= lo_t - _EPSILON:
                by_slot[span[0]].append(span)
        low: Counter[str] = Counter()
        high: Counter[str] = Counter()
        for claims in by_slot.values():
            for sub in {c[1] for c in claims}:
                high[sub] += 1
            c = claims[0]
            unseen = any(c[2] <= t <= start for t in (*blind.get(c[0], ()), *restarts))
            # its ad may not have reached the collector before a cut that lasts into the window
            machine = c[0].partition("@")[2]
            cut = (*cuts.get(machine, ()), *cuts.get("*", ()))
            unseen = unseen or any(a < c[2] + delay and b > max(c[2], lo_t) for a, b in cut)
            if len(claims) == 1 and c[2] <= lo_t and c[3] > start + _EPSILON and not unseen:
                low[c[1]] += 1
        charged = {str(k): int(v) for k, v in (e.get("charged") or {}).items()}
        for sub in sorted(set(charged) | set(low)):
            got = charged.get(sub, 0)
            if not low[sub] <= got <= high[sub]:
                out.append(
                    Violation(
                        "accountant_usage",
                        f"submitter {sub}",
                        f"cycle {e.get('cycle')} at {start:g} charged {got} slots; the "
                        f"startds say it held {low[sub]} to {high[sub]} then",
                        (n,),
                    )
                )
    return out


def _pauses(events: list[Event]) -> dict[str, list[tuple[float, float]]]:
    """Daemon -> the (start, end) of its pauses: a catatonic startd's timers wait."""
    out: dict[str, list[tuple[float, float]]] = defaultdict(list)
    open_at: dict[str, float] = {}
    for _, e in events:
        if e.get("daemon") != "master" or e.get("fault") != "pause":
            continue
        for d in e.get("daemons", ()):
            if e["kind"] == "fault_start":
                open_at[d] = float(e["t"])
            elif e["kind"] == "fault_end" and d in open_at:
                out[d].append((open_at.pop(d), float(e["t"])))
    for d, t in open_at.items():
        out[d].append((t, float("inf")))
    return out


def _leases(startd: list[Event], pauses: dict[str, list[tuple[float, float]]]) -> list[Violation]:
    out: list[Violation] = []
    for n, e in startd:
        if e["kind"] != "lease_expired":
            continue
        deadline, lease = float(e.get("deadline", 0)), float(e.get("lease", 0))
        interval = float(e.get("interval") or max(10.0, min(300.0, lease / 3)))
        due = deadline
        for start, end in pauses.get(e["daemon"], ()):
            if start <= deadline <= end:  # it could only act once the pause ended
                due = end
        subject = f"claim {e.get('claim')}"
        if "last_heard" in e and abs(float(e["last_heard"]) + lease - deadline) > _EPSILON:
            out.append(
                Violation(
                    "lease_late",
                    subject,
                    f"deadline {deadline:g} is not last heard {e['last_heard']:g} + "
                    f"lease {lease:g}",
                    (n,),
                )
            )
        if e["t"] < deadline - _EPSILON:
            out.append(
                Violation(
                    "lease_late",
                    subject,
                    f"ended at {e['t']:g}, before its deadline {deadline:g}",
                    (n,),
                )
            )
        elif e["t"] > due + interval + _EPSILON:
            out.append(
                Violation(
                    "lease_late",
                    subject,
                    f"ended at {e['t']:g}, {e['t'] - deadline:g} s after its deadline "
                    f"{deadline:g} (keepalive interval {interval:g})",
                    (n,),
                )
            )
    return out


def _num(ad: ClassAd, name: str) -> float:
    v = ad.eval(name)
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else 0.0


def read_events(path: Path) -> list[Event]:
    out: list[Event] = []
    try:
        text = path.read_text()
    except OSError as e:
        raise CheckError(f"{path}: cannot read: {e.strerror}") from None
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            e = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CheckError(f"{path}:{n}: not JSON: {exc.msg}") from None
        if not isinstance(e, dict) or not isinstance(e.get("kind"), str):
            raise CheckError(f'{path}:{n}: an event is an object with a "kind"')
        if not isinstance(e.get("t"), int | float):
            raise CheckError(f'{path}:{n}: event without a numeric time "t"')
        out.append((n, e))
    return out


def _read_ads(path: Path) -> list[ClassAd]:
    try:
        return parse_ads(path.read_text())
    except OSError as e:
        raise CheckError(f"{path}: cannot read: {e.strerror}") from None
    except ValueError as e:
        raise CheckError(f"{path}: {e}") from None


def check_dir(folder: str | Path) -> Report:
    """Check a ``mockpool run`` output folder (CheckError if it cannot be read)."""
    d = Path(folder)
    if not (d / "events.jsonl").is_file():
        raise CheckError(f"{d}: no events.jsonl here: not a mockpool run output folder")
    events = read_events(d / "events.jsonl")
    ads = {n: _read_ads(d / "ads" / f"{n}.ads") for n in ("jobs", "history", "slots")}
    delay, start_date = AD_DELAY, 0.0
    summary = d / "summary.json"
    if summary.is_file():
        with contextlib.suppress(ValueError, TypeError, KeyError, AttributeError):
            facts = json.loads(summary.read_text())
            # a live pool's ads lag by real time (a few real seconds), and by as much more
            # as its daemons' timers fell behind (an actor that wakes late sends late)
            delay = max(AD_DELAY, 5.0 * float(facts["time_scale"])) + _worst_lag(facts)
        with contextlib.suppress(ValueError, TypeError, KeyError):
            start_date = float(json.loads(summary.read_text())["start_date"])
    return check(events, ads["jobs"], ads["history"], ads["slots"], delay, start_date)


def _worst_lag(summary: dict[str, Any]) -> float:
    """The most pool seconds any actor's timers woke late in the run (0 when unknown)."""
    lags = summary.get("lag") or {}
    worst = [float(v.get("max", 0.0)) for v in lags.values() if isinstance(v, dict)]
    return max([0.0, *(w for w in worst if math.isfinite(w))])


def format_report(r: Report) -> str:
    if r.ok:
        return (
            f"Check: {len(INVARIANTS)} invariants hold over {r.events} events and "
            f"{r.jobs} jobs ({', '.join(INVARIANTS)})"
        )
    lines = [f"Check: {len(r.violations)} violations over {r.events} events and {r.jobs} jobs:"]
    lines += [f"  {v}" for v in r.violations]
    return "\n".join(lines)
