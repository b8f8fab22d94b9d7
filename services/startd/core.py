"""The machines of one startd actor: routing, the claim index, the job-exit schedule,
the ad cadence and the job-exit reports: the startd's core.

It answers the daemon contract (``contract.py``): :meth:`StartdCore.deliver` takes the
schedd's StartdRequestClaims, StartdActivateClaims, StartdReleaseClaims and
StartdKeepAlive (the reply, to the sender, in the ``Ready`` it returns), the negotiator's
StartdMatchInfo (one-way), and the answers to what it sent (AdvertiseAck, JobsExitedAck,
QueryReply, or an ``Undeliverable``); :meth:`StartdCore.tick` ends the jobs due, sends
job-exit reports (``exits.py``) and the round of ads due (``adverts.py``). Everything is
decided here, with ``now`` passed in.

Requests route by slot Name (``slot1@exec0001``: the part after '@' is the machine) or
by claim id (the table of the claims held here). Each call answers for one item and
raises ``StartdError`` (or a subclass) to refuse it, so one bad item of a batch does not
fail the others. Events (``claim``, ``activate``, ``release``, ``job_exit`` ...) are the
startd's facts; the shell drains them into the actor's event log. A fact found after it
happened (a job end or a lease deadline that passed while the startd was paused) carries
its own ``t``, the pool time it happened, so the log's order is the order of the facts.
"""

from __future__ import annotations

import heapq
import logging
import random
from collections import Counter, defaultdict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..claimid import from_sinful, redact
from ..classad import ClassAd
from ..classad.evalmemo import EvalMemo
from ..config import ConfigDict, ConfigError
from ..contract import Peer, Ready, Undeliverable
from ..messages import (
    AdvertiseAck,
    CollectorAdvertise,
    CollectorQuery,
    JobsExitedAck,
    QueryReply,
    ScheddActivationResults,
    ScheddClaimResults,
    ScheddJobsExited,
    ScheddKeepAliveAnswer,
    ScheddReleaseResults,
    StartdActivateClaims,
    StartdKeepAlive,
    StartdMatchInfo,
    StartdReleaseClaims,
    StartdRequestClaims,
)
from ..schedd.records import ActivationOutcome, ClaimOutcome
from .adverts import AdCadence, RecordAds
from .exits import ExitReports
from .grants import (
    ActivationGrant,
    ClaimGrant,
    ClaimRefusedError,
    JobExitRecord,
    Release,
    StartdError,
)
from .machine import LEASE_EXPIRED, WORKLIFE, Machine

if TYPE_CHECKING:
    from ..auth import Principal

log = logging.getLogger(__name__)

__all__ = ["StartdCore"]

Event = tuple[str, str, dict[str, Any]]  # (daemon, kind, ids)


class StartdCore:
    """Every simulated machine of one startd actor."""

    def __init__(
        self,
        specs: list[tuple[str, ConfigDict]],
        *,
        ad_epoch: int = 0,
        config: ConfigDict | None = None,
    ) -> None:
        """``specs``: each machine's name and configuration; ``config``: the startd's
        (its UPDATE_INTERVAL; none: 300)."""
        names = [n for n, _ in specs]
        if len(set(names)) != len(names):
            dup = next(n for n in names if names.count(n) > 1)
            raise ConfigError(f"machine name {dup!r} is used twice in one startd")
        # Fail now on a bad configuration (once per distinct config: families share one).
        checked: set[int] = set()
        for name, cfg in specs:
            if id(cfg) not in checked:
                checked.add(id(cfg))
                Machine(name, cfg, "127.0.0.1:0", 0, 0.0).check_policies()
        self.specs = list(specs)
        self.ad_epoch = int(ad_epoch)  # Unix time of pool time 0 (ads' dates)
        self.machines: dict[str, Machine] = {}
        self._memo = EvalMemo()  # the machines' remembered match checks
        self.changed: set[str] = set()  # machines whose ads changed since the shell looked
        self._held: dict[str, Machine] = {}  # claim id -> machine holding the claim
        self._exits: list[tuple[float, str]] = []  # (wakeup, machine name), lazy
        self._events: list[Event] = []
        self.stats: dict[str, int] = dict.fromkeys(
            (
                "claims",
                "claims_refused",
                "activations",
                "activations_refused",
                "releases",
                "jobs_killed",
                "job_exits",
                "jobs_evicted",
                "leases_expired",
                # the job-exit reports and the ad rounds
                "exits_reported",
                "exit_report_failures",
                "advertise_rounds",
                "ads_sent",
                "advertise_failures",
            ),
            0,
        )
        interval = 300.0
        if config is not None:
            interval = config.for_subsystem("STARTD").get_float("UPDATE_INTERVAL")
        self.ads = AdCadence(interval, RecordAds(self.ad_epoch))
        self.reports = ExitReports()
        self.collector_address = ""
        # machines whose due jobs one tick ends (None: all; the live shell's fairness)
        self.tick_limit: int | None = None
        # per machine, for the metrics (a daemon there is a machine, as in HTCondor)
        self.machine_stats: defaultdict[str, Counter[str]] = defaultdict(Counter)

    def build(self, address: str, now: float, rng: Callable[[str], random.Random | None]) -> None:
        """Make the machines once the server's address (in their claim ids) is known."""
        if self.machines:
            return
        birthday = self.ad_epoch + int(now)  # a Unix time, as in HTCondor's claim ids
        for name, cfg in self.specs:
            self.machines[name] = Machine(
                name,
                cfg,
                address,
                birthday,
                now,
                rng=rng(name),
                ad_epoch=self.ad_epoch,
                memo=self._memo,
            )
        self.changed.update(self.machines)

    def start(
        self,
        address: str,
        now: float,
        rng: Callable[[str], random.Random | None],
        collector_address: str = "",
    ) -> Ready:
        """Begin at ``address`` (in the claim ids): the machines made, every ad due now."""
        self.build(address, now, rng)
        self.collector_address = collector_address
        self.ads.start(now)
        return self.flush(now)

    def crash(self, name: str) -> None:
        """Machine ``name`` dies alone, as its startd process would: its slots, claims and
        jobs are gone, nothing is said (its ads stay in the collector until they expire;
        its schedds find out as they would of a dead startd); so do the job exits it had
        not yet reported."""
        machine = self.machines.pop(name)
        self._held = {c: m for c, m in self._held.items() if m is not machine}
        self.changed.discard(name)
        self.reports.drop_machine(name)

    def restart(
        self, name: str, address: str, now: float, rng: Callable[[str], random.Random | None]
    ) -> None:
        """Machine ``name`` starts again: new slots, new claim ids (its birthday is now)."""
        cfg = next(c for n, c in self.specs if n == name)
        self.machines[name] = Machine(
            name,
            cfg,
            address,
            self.ad_epoch + int(now),
            now,
            rng=rng(name),
            ad_epoch=self.ad_epoch,
            memo=self._memo,
        )
        self.changed.add(name)

    @property
    def claims_held(self) -> int:
        return len(self._held)

    def status(self) -> dict[str, Any]:
        """What the pool's status and metrics read of this startd."""
        return {
            "machines": len(self.machines) or len(self.specs),
            "slots": sum(len(m.slots) for m in self.machines.values()),
            "claims_held": self.claims_held,
            "exits_pending": self.reports.waiting(),
            **self.stats,
            "by_machine": {name: dict(c) for name, c in self.machine_stats.items()},
        }

    def next_wakeup(self) -> float | None:
        """When :meth:`tick` next has something to do (a job end, an eviction or a lease
        deadline of some machine, a round of ads, a job-exit report to send again);
        None: nothing is scheduled."""
        t = self._exits[0][0] if self._exits else None
        for other in (self.ads.due(), self.reports.next_retry()):
            if other is not None and (t is None or other < t):
                t = other
        return t

    def drain_events(self) -> list[Event]:
        out, self._events = self._events, []
        return out

    # --- the contract ----------------------------------------------------------------------

    def tick(self, now: float) -> Ready:
        """Run what is due: jobs end (their exits reported), leases and matches time out,
        reports due again are sent, and the round of ads due."""
        ready = Ready()
        if self._exits and self._exits[0][0] <= now:
            self.reports.queue(self.finish_jobs(now, self.tick_limit), ready)
        self.reports.retries(now, ready)
        due = self.ads.due()
        if due is not None and due <= now:
            self.ads.round(
                now, self.machines, self.changed, self.collector_address, self.stats, ready
            )
        return self.flush(now, ready)

    def flush(self, now: float, ready: Ready | None = None) -> Ready:
        """``ready`` (or a new one) with the events since the last call; a change asks
        for its round of ads."""
        ready = ready or Ready()
        if self._events:
            ready.events += self.drain_events()
        self.ads.notice(now, bool(self.changed))
        return ready

    def deliver(self, msg: Any, sender: Peer, now: float) -> Ready:
        """Take one message; a request's reply goes to ``sender.address``."""
        ready = Ready()
        t = type(msg)
        who = sender.principal
        if t is StartdRequestClaims:
            outcomes = self.request_claims(msg, who, now)
            ready.send(sender.address, ScheddClaimResults(msg.corr, msg.schedd_name, outcomes))
        elif t is StartdActivateClaims:
            acts = self.activations(msg, who, now)
            ready.send(sender.address, ScheddActivationResults(msg.corr, msg.schedd_name, acts))
        elif t is StartdReleaseClaims:
            for claim_id in msg.claim_ids:  # a refusal is only not released
                try:
                    self.release(claim_id, who, now)
                except Exception as e:
                    refusal(e)
            ready.send(
                sender.address, ScheddReleaseResults(msg.corr, msg.schedd_name, msg.claim_ids)
            )
        elif t is StartdKeepAlive:
            unknown = self.keep_alive(msg.claim_ids, who, now)
            renewed = msg.claim_ids
            if unknown:
                gone = set(unknown)
                renewed = [c for c in renewed if c not in gone]
            answer = ScheddKeepAliveAnswer(msg.corr, msg.schedd_name, renewed, unknown)
            ready.send(sender.address, answer)
        elif t is StartdMatchInfo:
            try:
                self.match_info_from(who, msg.claim_ids, now)
            except ClaimRefusedError as e:
                ready.send(sender.address, Undeliverable(msg, "PERMISSION_DENIED", str(e)))
        elif t is AdvertiseAck:
            self.ads.acked(msg.corr, msg.errors, self.stats)
        elif t is JobsExitedAck:
            self.reports.acked(msg.corr, self.stats, ready)
        elif t is QueryReply:
            self.reports.located(msg.corr, self._address_in(msg, now), now, ready)
        elif t is Undeliverable:
            self._undelivered(msg, now, ready)
        else:
            raise TypeError(f"the startd takes no {t.__name__}")
        return self.flush(now, ready)

    def _undelivered(self, u: Undeliverable, now: float, ready: Ready) -> None:
        sent = u.msg
        if type(sent) is CollectorAdvertise:
            self.ads.failed(sent.corr, u.detail or u.code, now, self.changed, self.stats)
        elif type(sent) is ScheddJobsExited:
            detail = u.detail or u.code
            self.reports.failed(sent.corr, detail, now, self.collector_address, self.stats, ready)
        elif type(sent) is CollectorQuery:
            self.reports.located(sent.corr, None, now, ready)

    def _address_in(self, reply: QueryReply, now: float) -> str | None:
        """The ``host:port`` in the MyAddress of the first ad that has one."""
        date = self.ad_epoch + now
        for ad in reply.ads:
            value = ad.get_value("MyAddress", None, now=date, rng=_NO_RANDOM)
            if isinstance(value, str) and value:
                return from_sinful(value)
        return None

    def request_claims(
        self, msg: StartdRequestClaims, who: Principal, now: float
    ) -> list[ClaimOutcome | None]:
        """Each claim request on its own: its outcome, or its refusal, in order."""
        outcomes: list[ClaimOutcome | None] = []
        add = outcomes.append
        name, address = msg.schedd_name, msg.schedd_address
        for r in msg.claims:
            try:
                grant = self.request_claim(
                    r.claim_id,
                    r.slot_name,
                    r.job_ad,
                    name,
                    address,
                    r.owner,
                    who,
                    now,
                    leftovers=r.leftovers,
                )
            except Exception as e:
                add(ClaimOutcome(r.claim_id, False, refusal(e), r.claim_id, r.slot_name))
                continue
            left = grant.leftover_ad is not None
            add(
                ClaimOutcome(
                    r.claim_id,
                    True,
                    "",
                    grant.claim_id,
                    grant.slot_name,
                    grant.slot_ad,
                    grant.ready,
                    grant.leftover_claim_id if left else "",
                    grant.leftover_ad,
                )
            )
        return outcomes

    def activations(
        self, msg: StartdActivateClaims, who: Principal, now: float
    ) -> list[ActivationOutcome]:
        """Each activation on its own: its outcome, in order."""
        outcomes: list[ActivationOutcome] = []
        add = outcomes.append
        for a in msg.activations:
            try:
                act = self.activate(a.claim_id, a.job_ad, who, now)
            except Exception as e:
                add(ActivationOutcome(a.claim_id, False, refusal(e)))
                continue
            add(ActivationOutcome(a.claim_id, True, "", act.start))
        return outcomes

    def releases(self, claim_ids: list[str], who: Principal, now: float) -> list[Release | str]:
        """Each release on its own: what was released, or why not."""
        out: list[Release | str] = []
        for claim_id in claim_ids:
            try:
                out.append(self.release(claim_id, who, now))
            except Exception as e:
                out.append(refusal(e))
        return out

    def match_info_from(self, who: Principal, claim_ids: list[str], now: float) -> list[str]:
        """:meth:`match_info` for the negotiator (or an admin) only: ClaimRefusedError
        for anyone else."""
        if not (who.role == "admin" or (who.role == "daemon" and who.name == "negotiator")):
            raise ClaimRefusedError(f"{who} may not report matches: the negotiator's")
        return self.match_info(claim_ids, now)

    def undecodable(self, counter: str) -> None:
        """An item of a request whose job ad did not decode (refused by the shell)."""
        self.stats[counter] += 1

    # --- routing -------------------------------------------------------------------------

    def machine_for_slot(self, slot_name: str) -> Machine:
        _, at, machine = slot_name.partition("@")
        m = self.machines.get(machine) if at else None
        if m is None:
            if not self.machines:
                raise StartdError("this startd has not started yet")
            raise StartdError(f"no slot {slot_name!r} at this startd")
        return m

    def machine_for_claim(self, claim_id: str, who: Principal) -> Machine:
        """The machine holding ``claim_id``, if ``who`` speaks for the claim's holder:
        a claim is activated and released only by the schedd that requested it."""
        m = self._held.get(claim_id)
        if m is None:
            raise StartdError(f"claim id {redact(claim_id)} is not held at this startd")
        holder = m.claim(claim_id).schedd_name
        if not who.acts_for_schedd(holder):
            raise ClaimRefusedError(
                f"claim id {redact(claim_id)} is held by schedd {holder!r}; {who} may not use it"
            )
        return m

    def _touch(self, machine: Machine) -> None:
        self.changed.add(machine.name)

    def _wake_at(self, t: float, machine_name: str) -> None:
        heapq.heappush(self._exits, (t, machine_name))

    def _drop_stale(self, claim_id: str) -> None:
        m = self._held.get(claim_id)
        if m is not None and not m.holds(claim_id):
            del self._held[claim_id]

    # --- the claim protocol, one item at a time -----------------------------------------

    def request_claim(
        self,
        claim_id: str,
        slot_name: str,
        job: ClassAd,
        schedd_name: str,
        schedd_address: str,
        owner: str,
        who: Principal,
        now: float,
        *,
        leftovers: bool = False,
    ) -> ClaimGrant:
        machine = None
        try:
            if not who.acts_for_schedd(schedd_name):
                raise ClaimRefusedError(f"{who} may not request claims for schedd {schedd_name!r}")
            machine = self.machine_for_slot(slot_name)
            grant = machine.request_claim(
                claim_id,
                slot_name,
                job,
                schedd_name,
                schedd_address,
                owner,
                now,
                leftovers=leftovers,
            )
        except Exception:
            self.stats["claims_refused"] += 1
            if machine is not None:  # the match was made on ads that misled: send them now
                machine.refresh()
                self._touch(machine)
            raise
        self._held[grant.claim_id] = machine
        self._wake_at(now + machine.claim(grant.claim_id).lease_duration, machine.name)
        if grant.ready:  # a preemption: the eviction is due now or when retirement ends
            self._wake_at(grant.ready, machine.name)
        self.stats["claims"] += 1
        self._touch(machine)
        for slot, old, why in machine.take_taken_over():  # idle claims preempted at once
            self._released(machine.name, slot, old, {"reason": why})
        at, rng = self.ad_epoch + now, machine.eval_rng
        held = grant.slot_ad
        self._events.append(
            (
                machine.name,
                "claim",
                {
                    "slot": grant.slot_name,
                    "job": job_id(job, at, rng),
                    "claim": redact(grant.claim_id),
                    "schedd": schedd_name,
                    "submitter": owner,
                    # what the slot holds, for the checker's over-commit invariant
                    "cpus": held.eval("Cpus", now=at, rng=rng),
                    "memory": held.eval("Memory", now=at, rng=rng),
                    "disk": held.eval("Disk", now=at, rng=rng),
                    **({"preempts": redact(grant.preempts)} if grant.preempts else {}),
                },
            )
        )
        return grant

    def activate(self, claim_id: str, job: ClassAd, who: Principal, now: float) -> ActivationGrant:
        try:
            machine = self.machine_for_claim(claim_id, who)
            act = machine.activate(claim_id, job, now)
        except Exception:
            self.stats["activations_refused"] += 1
            raise
        self.stats["activations"] += 1
        self._touch(machine)
        self._wake_at(act.end, machine.name)
        self._events.append(
            (
                machine.name,
                "activate",
                {
                    "slot": act.slot_name,
                    "job": act.job_id,
                    "claim": redact(claim_id),
                    "start": round(act.start, 3),
                    "end": round(act.end, 3),
                    "cpus": act.cpus,
                },
            )
        )
        return act

    def release(self, claim_id: str, who: Principal, now: float) -> Release:
        try:
            machine = self.machine_for_claim(claim_id, who)
            rel = machine.release(claim_id, now)
        except Exception:
            self._drop_stale(claim_id)
            raise
        self._touch(machine)
        fields: dict[str, Any] = {}
        if rel.killed_job:
            self.stats["jobs_killed"] += 1
            fields = {"job": rel.killed_job, "killed": True}
        self._released(machine.name, rel.slot_name, claim_id, fields)
        return rel

    def _released(
        self, machine_name: str, slot_name: str, claim_id: str, fields: dict[str, Any]
    ) -> None:
        """A claim the machine ended: forgotten here, counted, and its event."""
        self._held.pop(claim_id, None)
        self.stats["releases"] += 1
        self._events.append(
            (machine_name, "release", {"slot": slot_name, "claim": redact(claim_id), **fields})
        )

    def keep_alive(self, claim_ids: list[str], who: Principal, now: float) -> list[str]:
        """Renew the leases of ``claim_ids``; the ids not held here (or not ``who``'s)."""
        unknown = []
        for claim_id in claim_ids:
            machine = self._held.get(claim_id)
            if (
                machine is not None
                and machine.holds(claim_id)
                and not who.acts_for_schedd(machine.claim(claim_id).schedd_name)
            ):
                unknown.append(claim_id)  # not the holder's: no lease renewed
                continue
            if machine is None or machine.keepalive([claim_id], now):
                self._drop_stale(claim_id)
                unknown.append(claim_id)
        return unknown

    def match_info(self, claim_ids: list[str], now: float) -> list[str]:
        """Matched slots (NEGOTIATOR_INFORM_STARTD), by machine; the ids refused."""
        by_machine: dict[str, list[str]] = {}
        refused: list[str] = []
        for cid in claim_ids:
            name = cid.partition("alias=")[2].partition(">")[0]
            if name in self.machines:
                by_machine.setdefault(name, []).append(cid)
            else:
                refused.append(cid)
        for name, ids in by_machine.items():
            machine = self.machines[name]
            bad = machine.match_info(ids, now)
            refused += bad
            matched = [c for c in ids if c not in bad]
            if matched:
                self._touch(machine)
                self._wake_at(machine.next_wakeup() or now, name)
            for cid in matched:
                self._events.append((name, "slot_matched", {"claim": redact(cid)}))
        return refused

    # --- timers --------------------------------------------------------------------------

    def finish_jobs(self, now: float, limit: int | None = None) -> list[JobExitRecord]:
        """Let every machine with something due by ``now`` tick (at most ``limit`` of
        them, the earliest due: the others stay due for the next call): jobs end, matches
        time out, claims whose lease ran out are dropped. The exits, in (end, slot)
        order, for the shell to report to their schedds."""
        due: set[str] = set()
        while self._exits and self._exits[0][0] <= now and (limit is None or len(due) < limit):
            due.add(heapq.heappop(self._exits)[1])
        exits: list[JobExitRecord] = []
        for name in sorted(due):
            machine = self.machines.get(name)
            if machine is None:  # crashed: its timers died with it
                continue
            tick = machine.tick(now)
            if tick.exits or tick.expired:
                self._touch(machine)
            exits.extend(tick.exits)
            for slot_name in tick.unmatched:
                self._touch(machine)
                log.info("%s: State change: match timed out", slot_name)
                self._events.append(
                    (name, "match_timeout", {"slot": slot_name, "message": "match timed out"})
                )
            for x in tick.expired:
                self._held.pop(x.claim_id, None)
                self.stats["leases_expired"] += 1
                self.machine_stats[name]["leases_expired"] += 1
                log.warning(
                    "%s: %s: State change: %s", x.slot_name, redact(x.claim_id), LEASE_EXPIRED
                )
                fields: dict[str, Any] = {
                    "slot": x.slot_name,
                    "claim": redact(x.claim_id),
                    "schedd": x.schedd_name,
                    "last_heard": round(x.last_heard, 3),
                    "lease": x.lease_duration,
                    "deadline": round(x.deadline, 3),
                    "interval": x.keepalive_interval,
                    "message": LEASE_EXPIRED,
                    "t": round(x.deadline, 3),  # it ended then, even if found later
                }
                if x.killed_job:
                    self.stats["jobs_killed"] += 1
                    fields["job"] = x.killed_job
                self._events.append((name, "lease_expired", fields))
            # keepalives move lease deadlines later: re-arm at the machine's next one
            wake = machine.next_wakeup()
            if wake is not None:
                heapq.heappush(self._exits, (max(wake, now), name))
        exits.sort(key=lambda e: (e.end, e.slot_name))
        for e in exits:
            self.stats["jobs_evicted" if e.reason else "job_exits"] += 1
            machine_name = e.slot_name.partition("@")[2]
            self.machine_stats[machine_name]["jobs_evicted" if e.reason else "job_exits"] += 1
            self._events.append(
                (
                    machine_name,
                    "job_evicted" if e.reason else "job_exit",
                    {
                        "slot": e.slot_name,
                        "job": e.job_id,
                        "claim": redact(e.claim_id),
                        "start": round(e.start, 3),
                        "end": round(e.end, 3),
                        **({"reason": e.reason} if e.reason else {}),
                        "t": round(e.end, 3),
                    },
                )
            )
            if e.claim_closing:  # the machine ended the claim with its job
                why = e.closed_by or WORKLIFE
                fields = {"reason": why, "t": round(e.end, 3)}
                self._released(machine_name, e.slot_name, e.claim_id, fields)
        return exits


def refusal(e: Exception) -> str:
    """The answer for one refused item; a bug fails only its own item, and is logged."""
    if isinstance(e, StartdError):
        return str(e)
    log.exception("startd: internal error on one request item")
    return f"internal error in the startd: {type(e).__name__}: {e}"


# what a MyAddress draws from (a literal: nothing; an evaluation needs a generator)
_NO_RANDOM = random.Random(0)


def job_id(job: ClassAd, now: float, rng: random.Random) -> str:
    cluster, proc = job.eval("ClusterId", now=now, rng=rng), job.eval("ProcId", now=now, rng=rng)
    return f"{cluster}.{proc}" if isinstance(cluster, int) and isinstance(proc, int) else ""
