"""One schedd core behind the daemon contract (``contract.py``): its timers, its messages.

:class:`ScheddDriver` holds a :class:`~.schedd.Schedd` and answers ``next_wakeup``,
``tick`` and ``deliver``. The core keeps the HTCondor state (queue, claims, ads); this
module keeps what used to live in the shell's loops and RPC plumbing, as rules:

- five timers in one: the ad round (``AdCadence``), activations of claims whose slot's
  job has retired, keepalive rounds, the periodic job policy, the wall-clock checkpoint;
- the core's ``Outbox`` turned into messages to startds (one per address and kind, with
  a corr id), and their answers or failures turned back into outcomes (the failure texts
  are the ones the shell wrote: "RequestClaims failed: UNAVAILABLE", "no answer from the
  startd", an activation not ``answered``);
- the keepalive look: when the core says a keepalive or a lease's end is next due (a
  claim kept alive from now on brings it forward; nothing else does);
- a startd that does not answer a keepalive is looked up in the collector by machine
  (``CollectorQuery``), and asked once more at its new address;
- the ad round: Scheduler and Submitter ads (and invalidations) to the collector, then a
  RESCHEDULE when the cadence says so, whether or not the ads arrived (HTCondor's
  ``Scheduler::timeout`` sends it after ``sendAds`` regardless); the negotiator's address
  from its ad in the collector, kept until a reschedule to it fails;
- a negotiator's matches answered before they are used (HTCondor's schedd acknowledges a
  match, then contacts the startd): the ack and the claim requests in one ``Ready``, the
  ack first;
- what counts as a change of the queue (its ads go SCHEDD_MIN_INTERVAL later);
- the counters (``stats``).

A separate class, not more methods on ``Schedd``: schedd.py holds the HTCondor state and
is already long; the conversation state (corr ids, requests in flight, the address
cache, the keepalive look) is this module's. Log lines go to :attr:`notes` (level,
text) for the caller to write: a core reads no clock, and a log record would.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import math
import random
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..claimid import from_sinful
from ..classad.tree import quote_string
from ..collector.collector import CollectorUpdate
from ..contract import Peer, Ready, Send, Undeliverable
from ..messages import (
    AdvertiseAck,
    CollectorAdvertise,
    CollectorQuery,
    JobsExitedAck,
    MatchesAck,
    NegotiatorReschedule,
    NegotiatorResourceRequests,
    QueryReply,
    RescheduleAck,
    ScheddActivationResults,
    ScheddClaimResults,
    ScheddJobsExited,
    ScheddKeepAliveAnswer,
    ScheddMatches,
    ScheddReleaseResults,
    ScheddResourceRequestsRequest,
    StartdActivateClaims,
    StartdKeepAlive,
    StartdReleaseClaims,
    StartdRequestClaims,
)
from ..principals import Principal, Role
from .owners import acting_user, log_refusal, submit_owner
from .queue import QueueError
from .records import ActivationOutcome, ClaimOutcome, JobExit, Outbox
from .schedd import Schedd
from .userlog import format_events

if TYPE_CHECKING:
    from ..startd.grants import JobExitRecord

__all__ = ["ScheddDriver", "exits_refusal", "job_exit"]

# Pool seconds before a keepalive round that failed is tried again.
_ALIVE_RETRY = 10.0


def job_exit(e: JobExitRecord) -> JobExit:
    """A startd's exit record as the schedd core takes it."""
    return JobExit(
        e.claim_id,
        int(e.cluster),
        int(e.proc),
        e.start,
        e.end,
        int(e.exit_code),
        e.slot_name,
        e.reason,
        e.claim_closing,
    )


def exits_refusal(who: Principal) -> str:
    """Why ``who`` may not report job exits ("": it may): only a startd, or an admin."""
    if who.role is Role.ADMIN or who.is_daemon("startd"):
        return ""
    return f"{who} is not a startd: may not report job exits"


def _first_address(ads: list[Any], at: float, rng: random.Random) -> str | None:
    """``host:port`` of the first ad with a MyAddress (a locate's answer)."""
    for ad in ads:
        value = ad.get_value("MyAddress", now=at, rng=rng)
        if isinstance(value, str) and value:
            return from_sinful(value)
    return None


# per-schedd counters the metrics read from status()
PER_SCHEDD = ("rejections", "keepalives")


class ScheddDriver:
    """A schedd core as the contract's ``Core``.

    ``address``: this schedd's own ``host:port`` (what a startd reports job exits to);
    ``collector_address``: the collector's (empty: none, so no ads and no lookups);
    ``duty_cycle``: the loop's RecentDaemonCoreDutyCycle for the Scheduler ad (live: the
    shell's meter; virtual: 0); ``pool_user``: the user the schedd runs as (job event
    logs are written for that user's or an admin's jobs only)."""

    def __init__(
        self,
        core: Schedd,
        now: float,
        *,
        address: str = "",
        collector_address: str = "",
        duty_cycle: Callable[[], float] | None = None,
        pool_user: str = "",
    ) -> None:
        self.core = core
        self.pool_user = pool_user  # the user this schedd runs as (writes user logs as)
        self.name = core.name
        self.address = address
        self.collector_address = collector_address
        self.duty_cycle = duty_cycle or (lambda: 0.0)
        self.stats: Counter[str] = Counter()
        self.notes: list[tuple[int, str]] = []  # (logging level, text) for the caller
        self._ids = itertools.count(1)
        # requests in flight: corr -> (address, message) (a reply says which it answers)
        self._asked: dict[str, tuple[str, Any]] = {}
        # keepalive rounds: the next look, and whether it was set by a change (later
        # changes until then ride along)
        self._alive_look: float | None = float(now)
        self._alive_coalescing = False
        self._ads_corr: str | None = None  # the ad round's Advertise in flight
        self._negotiator: str | None = None  # its address, from its ad (cached)

    def status(self) -> dict[str, Any]:
        """This schedd's status: its core's, with the counters the metrics read."""
        return {**self.core.status(), **{k: self.stats[k] for k in PER_SCHEDD if k in self.stats}}

    # --- the contract ---------------------------------------------------------------

    def start(self, now: float, *, keepalive_at: float | None = None) -> Ready:
        """What a (re)started schedd sends at once: releases of claims whose jobs left
        before a restart. Its first keepalive round (the reconnects of the claims it
        reloaded) is at once, or at ``keepalive_at``: a schedd that came back inside a
        running actor whose one loop looked at keepalives then (the queue counts as
        changed at ``now`` too)."""
        ready = Ready()
        self._outbox(self.core.startup_outbox(), ready)
        if keepalive_at is not None:
            self.core.ad_cadence.changed(now)
            self._alive_look, self._alive_coalescing = keepalive_at, True
        return self._drain(ready)

    @property
    def keepalive_look(self) -> float | None:
        """When the next keepalive round is (None: no claims to keep alive)."""
        return self._alive_look

    def next_wakeup(self) -> float | None:
        core = self.core
        times = [
            core.next_ready_time(),
            self._alive_look,
            core.next_policy_time(),
            core.wallclock_next,
        ]
        if self._ads_corr is None:
            times.append(core.ad_cadence.due())
        due = [t for t in times if t is not None and t < math.inf]
        return min(due, default=None)

    def tick(self, now: float) -> Ready:
        """Whatever is due at ``now``, in the order the shell's loops started in: the ad
        round, activations, keepalives, job policy, wall-clock checkpoint."""
        ready = Ready()
        core = self.core
        if self._ads_corr is None and core.ad_cadence.due() <= now:
            self.ad_round(now, ready)
        ready_at = core.next_ready_time()
        if ready_at is not None and ready_at <= now:
            out = core.activate_ready(now)
            if out:
                self._changed(now)
                self._outbox(out, ready)
        if self._alive_look is not None and self._alive_look <= now:
            self._alive_round(now, ready)
        policy_at = core.next_policy_time()
        if policy_at is not None and policy_at <= now:
            try:
                out = core.policy_round(core.policy_due(now), now)
            except Exception as exc:  # one job's policy must not stop the schedd
                self.notes.append((logging.ERROR, f"{self.name}: periodic job policy: {exc!r}"))
                out = None
            if out is not None:
                self._changed(now)
                self._outbox(out, ready)
        try:
            core.wall_clock_round(now)
        except QueueError as exc:  # not stored: the next round tries again
            self.notes.append((logging.ERROR, f"{self.name}: wall-clock checkpoint: {exc}"))
        return self._drain(ready)

    def deliver(self, msg: Any, sender: Peer, now: float) -> Ready:
        ready = Ready()
        handler = _HANDLERS.get(type(msg))
        if handler is None:
            raise TypeError(f"a schedd takes no {type(msg).__name__}")
        handler(self, msg, sender, now, ready)
        return self._drain(ready)

    # --- the caller's own calls (clients: submit, act, edit, query) -----------------
    # Each applies the rules on who may do it (``owners.py``) to the caller's principal,
    # calls the core, and returns what it made besides the answer.

    def submit(
        self, now: float, principal: Principal, description: str, source: str, owner: str, **kw: Any
    ) -> tuple[tuple[int, int], Ready]:
        """condor_submit: ``Schedd.submit`` as the owner the principal may submit as
        (PermissionError if none); (cluster id, jobs), and the events."""
        owner = submit_owner(principal, owner)
        refused = log_refusal(principal, self.pool_user)
        done = self.core.submit(description, source, owner, now, log_refused=refused, **kw)
        return done, self.submitted(now)

    def submit_ads(
        self,
        now: float,
        principal: Principal,
        cluster: int,
        cluster_ad: Any,
        proc_ads: Any,
        **kw: Any,
    ) -> tuple[tuple[int, int], Ready]:
        """Jobs as ready-made ads (qmgmt): ``Schedd.submit_ads`` as the principal's user."""
        owner = submit_owner(principal, "")
        refused = log_refusal(principal, self.pool_user)
        done = self.core.submit_ads(
            cluster, cluster_ad, proc_ads, owner, now, log_refused=refused, **kw
        )
        return done, self.submitted(now)

    def edit(
        self, now: float, principal: Principal, specs: Any, *, check_only: bool = False
    ) -> tuple[list[int], Ready]:
        """condor_qedit on the jobs the principal may edit (a SUBMIT token: its own)."""
        user = acting_user(principal)
        matched = self.core.edit(specs, now, only_owner=user, check_only=check_only)
        return matched, self.after_call(now, changed=not check_only)

    def act(
        self,
        now: float,
        principal: Principal,
        action: str,
        job_ids: list[str],
        constraint: str,
        reason: str,
        owner: str,
        **kw: Any,
    ) -> tuple[list[Any], Ready]:
        """condor_rm / hold / release / vacate on the jobs the principal may act on (a
        SUBMIT token: its own); (results, Ready with the releases to send)."""
        user = acting_user(principal)
        results, out = self.core.act(
            action, job_ids, constraint, reason, user or owner, now, only_owner=user, **kw
        )
        ready = Ready()
        self._changed(now)
        self._outbox(out, ready)
        return results, self._drain(ready)

    def submitted(self, now: float) -> Ready:
        """After a submit (the core asked for a reschedule after its ads)."""
        self.stats["submits"] += 1
        return self.after_call(now)

    def after_call(self, now: float, *, changed: bool = True) -> Ready:
        """After the caller called the core directly (a query, a cluster id handed out):
        the events it made, and the queue marked changed (its ads go soon) if it was."""
        ready = Ready()
        if changed:
            self._changed(now)
        return self._drain(ready)

    def can_join_ad_round(self) -> bool:
        """Whether an ad round may start now (none is in flight)."""
        return self._ads_corr is None and bool(self.collector_address)

    def expedite(self, now: float) -> Ready:
        """RESCHEDULE from a client: the ads go as soon as SCHEDD_MIN_INTERVAL allows, and
        a negotiation cycle is asked for after them."""
        self.core.ad_cadence.expedite(now)
        return self._drain(Ready())

    def take_user_logs(self) -> tuple[dict[str, str], dict[str, str]]:
        """The job event logs (``log =``) to append since the last call: the text per
        file, and per file the first job that wrote there (for a failure's message).
        The caller appends them (``logfiles.append_user_logs``) after each call."""
        core = self.core
        events = core.joblog.drain()
        if not events:
            return {}, {}
        jobs: dict[str, str] = {}
        for e in events:
            jobs.setdefault(e.path, f"{e.cluster}.{e.proc}")
        return format_events(events, core.ad_epoch, core.joblog.format), jobs

    # --- the ad round ---------------------------------------------------------------

    def ad_round(self, now: float, ready: Ready) -> None:
        """Start an ad round now: the Scheduler and Submitter ads (and invalidations of
        submitters without jobs) to the collector. (A caller that batches the schedds
        of one process into one Advertise starts the others' rounds with it.)"""
        core = self.core
        core.ad_cadence.start(now)
        if not self.collector_address:
            self._ads_done(now, ready)
            return
        updates = [CollectorUpdate(0, "Scheduler", core.schedd_ad(now, self.duty_cycle()))]
        ads, gone = core.submitter_updates(now)
        updates += [CollectorUpdate(0, "Submitter", ad) for ad in ads]
        updates += [CollectorUpdate(0, "Submitter", key, invalidate=True) for key in gone]
        updates = [dataclasses.replace(u, index=i) for i, u in enumerate(updates)]
        self._ads_corr = corr = self._corr("ads")
        self._request(ready, self.collector_address, CollectorAdvertise(corr, updates))

    def _ads_done(self, now: float, ready: Ready) -> None:
        self._ads_corr = None
        if self.core.ad_cadence.finish():
            self._reschedule(ready)

    def _reschedule(self, ready: Ready) -> None:
        if self._negotiator:
            corr = self._corr("reschedule")
            self._request(ready, self._negotiator, NegotiatorReschedule(corr, self.name))
        elif self.collector_address:
            query = CollectorQuery(self._corr("negotiator"), "Negotiator", "", ("MyAddress",))
            self._request(ready, self.collector_address, query)
        else:
            self._no_negotiator()

    def _no_negotiator(self) -> None:
        self.notes.append(
            (logging.INFO, f"{self.name}: no negotiator ad yet; not asking for a reschedule")
        )

    # --- keepalives -----------------------------------------------------------------

    def _alive_round(self, now: float, ready: Ready) -> None:
        core = self.core
        try:
            given_up, due = core.alive_round(now)
        except Exception as exc:
            self.notes.append((logging.ERROR, f"{self.name}: keepalive round failed: {exc!r}"))
            self._alive_look, self._alive_coalescing = now + _ALIVE_RETRY, True
            return
        self._alive_look, self._alive_coalescing = core.alive_next, False
        if given_up:
            self._changed(now)
            self._outbox(given_up, ready)
        for address, claim_ids in due.items():
            msg = StartdKeepAlive(self._corr("alive"), self.name, claim_ids)
            self._request(ready, address, msg)

    def _follow_alive(self) -> None:
        """The core's next keepalive look came earlier (a claim it keeps alive from now
        on, an activation left unanswered): look then, unless a retry of a failed round
        is what comes next."""
        wanted, look = self.core.alive_next, self._alive_look
        if wanted is not None and not self._alive_coalescing and (look is None or wanted < look):
            self._alive_look = wanted

    def _relocate(self, address: str, msg: StartdKeepAlive, ready: Ready) -> None:
        """A startd did not answer a keepalive: look its machine up in the collector (by
        a claim it holds); one that came back on a new address is asked there."""
        claims = self.core.claims
        claim = next((claims[c] for c in msg.claim_ids if c in claims), None)
        if claim is None or not self.collector_address:
            return
        machine = claim.slot_name.rpartition("@")[2]
        query = CollectorQuery(
            self._corr("locate"), "Machine", f"Machine == {quote_string(machine)}", ("MyAddress",)
        )
        self._request(ready, self.collector_address, query, (address, machine, msg))

    # --- deliveries -----------------------------------------------------------------

    def _on_resource_requests(
        self, msg: ScheddResourceRequestsRequest, sender: Peer, now: float, ready: Ready
    ) -> None:
        ads = self.core.resource_requests(msg.submitter or None)
        ready.send(sender.address, NegotiatorResourceRequests(msg.corr, self.name, ads))

    def _on_matches(self, msg: ScheddMatches, sender: Peer, now: float, ready: Ready) -> None:
        core = self.core
        if msg.rejections:
            core.on_rejections(msg.rejections, now)
            self.stats["rejections"] += len(msg.rejections)
        self.stats["matches"] += len(msg.matches)
        # the answer first: the negotiator's cycle does not wait for the claims
        ready.send(sender.address, MatchesAck(msg.corr, len(msg.matches)))
        out = core.on_matches(msg.matches, now)
        self.stats["matches_dropped"] += out.dropped
        self._changed(now)
        self._outbox(out, ready)

    def _on_jobs_exited(
        self, msg: ScheddJobsExited, sender: Peer, now: float, ready: Ready
    ) -> None:
        refused = exits_refusal(sender.principal)
        if refused:
            ready.send(sender.address, Undeliverable(msg, "PERMISSION_DENIED", refused))
            return
        out = self.core.on_job_exits([job_exit(e) for e in msg.exits], now)
        self.stats["job_exits"] += len(msg.exits)
        ready.send(sender.address, JobsExitedAck(msg.corr, len(msg.exits)))
        self._changed(now)
        self._outbox(out, ready)

    def _on_claim_results(
        self, msg: ScheddClaimResults, sender: Peer, now: float, ready: Ready
    ) -> None:
        asked = self._asked.pop(msg.corr, None)
        if asked is None:
            return
        reqs = asked[1].claims
        outcomes = [
            ClaimOutcome(r.claim_id, False, "no answer from the startd")
            if i >= len(msg.outcomes) or msg.outcomes[i] is None
            else msg.outcomes[i]
            for i, r in enumerate(reqs)
        ]
        self._claim_outcomes(outcomes, now, ready)

    def _claim_outcomes(self, outcomes: list[ClaimOutcome], now: float, ready: Ready) -> None:
        out = self.core.on_claim_results(outcomes, now)
        self._changed(now)
        self._outbox(out, ready)

    def _on_activation_results(
        self, msg: ScheddActivationResults, sender: Peer, now: float, ready: Ready
    ) -> None:
        asked = self._asked.pop(msg.corr, None)
        if asked is None:
            return
        answered = {o.claim_id: o for o in msg.outcomes}
        outcomes = []
        for a in asked[1].activations:
            r = answered.get(a.claim_id)
            if r is None:
                outcomes.append(
                    ActivationOutcome(
                        a.claim_id, False, "no answer from the startd", answered=False
                    )
                )
            else:
                outcomes.append(ActivationOutcome(a.claim_id, r.ok, r.error, r.start_time))
        self._activation_outcomes(outcomes, now, ready)

    def _activation_outcomes(
        self, outcomes: list[ActivationOutcome], now: float, ready: Ready
    ) -> None:
        out = self.core.on_activation_results(outcomes, now)
        self._changed(now)
        self._outbox(out, ready)

    def _on_release_results(
        self, msg: ScheddReleaseResults, sender: Peer, now: float, ready: Ready
    ) -> None:
        asked = self._asked.pop(msg.corr, None)
        if asked is None:
            return
        self.core.on_releases_done(asked[1].claim_ids, now, answered=True)
        self._changed(now)

    def _on_keepalive_answer(
        self, msg: ScheddKeepAliveAnswer, sender: Peer, now: float, ready: Ready
    ) -> None:
        asked = self._asked.pop(msg.corr, None)
        if asked is None:
            return
        self.stats["keepalives"] += 1
        self.core.on_keepalive_answer(asked[1].claim_ids, msg.unknown, now)
        if msg.unknown:
            self._changed(now)

    def _on_advertise_ack(self, msg: AdvertiseAck, sender: Peer, now: float, ready: Ready) -> None:
        if self._asked.pop(msg.corr, None) is None:
            return
        for err in msg.errors:
            self.notes.append((logging.WARNING, f"collector refused a schedd ad: {err}"))
        self.core.submitters_advertised()
        self.stats["advertise"] += 1
        self._ads_done(now, ready)

    def _on_query_reply(self, msg: QueryReply, sender: Peer, now: float, ready: Ready) -> None:
        asked = self._asked.pop(msg.corr, None)
        if asked is None:
            return
        core = self.core
        found = None if msg.error else _first_address(msg.ads, core.ad_epoch + now, core.eval_rng)
        if msg.corr.startswith("negotiator:"):
            self._negotiator = found
            if found is None:
                self._no_negotiator()
            else:
                self._reschedule(ready)
            return
        old, machine, keepalive = asked[2]
        if found is None or found == old:
            return
        self.notes.append(
            (logging.INFO, f"{self.name}: startd of {machine} moved from {old} to {found}")
        )
        self.core.readdress(old, found)
        again = dataclasses.replace(keepalive, corr=self._corr("alive-again"))
        self._request(ready, found, again)

    def _on_reschedule_ack(
        self, msg: RescheduleAck, sender: Peer, now: float, ready: Ready
    ) -> None:
        if self._asked.pop(msg.corr, None) is not None:
            self.stats["reschedules"] += 1

    def _on_undeliverable(
        self, failed: Undeliverable, sender: Peer, now: float, ready: Ready
    ) -> None:
        """A request of ours that failed: what the shell did on an ``AioRpcError``."""
        msg, code = failed.msg, failed.code
        asked = self._asked.pop(getattr(msg, "corr", ""), None)
        if asked is None:
            return
        address = asked[0]
        why = failed.detail or code
        kind = type(msg).__name__
        if isinstance(msg, (StartdRequestClaims, StartdActivateClaims, StartdReleaseClaims)):
            rpc = {"StartdRequestClaims": "RequestClaims", "StartdActivateClaims": "ActivateClaims"}
            name = rpc.get(kind, "ReleaseClaims")
            self.notes.append((logging.WARNING, f"{self.name}: {name} to {address} failed: {why}"))
            self.stats["rpc_failures"] += 1
        if isinstance(msg, StartdRequestClaims):
            text = f"RequestClaims failed: {code}"
            self._claim_outcomes(
                [ClaimOutcome(r.claim_id, False, text) for r in msg.claims], now, ready
            )
        elif isinstance(msg, StartdActivateClaims):
            text = f"ActivateClaims failed: {code}"
            self._activation_outcomes(
                [
                    ActivationOutcome(a.claim_id, False, text, answered=False)
                    for a in msg.activations
                ],
                now,
                ready,
            )
        elif isinstance(msg, StartdReleaseClaims):
            # the startd drops the claim anyway when its lease runs out
            self.core.on_releases_done(msg.claim_ids, now, answered=False)
            self._changed(now)
        elif isinstance(msg, StartdKeepAlive):
            self.stats["rpc_failures"] += 1
            if msg.corr.startswith("alive:"):  # a first try: find the startd again
                self.notes.append(
                    (logging.WARNING, f"{self.name}: KeepAlive to {address} failed: {why}")
                )
                self._relocate(address, msg, ready)
        elif isinstance(msg, CollectorAdvertise):
            self.notes.append((logging.WARNING, f"schedd ads not advertised: {why}"))
            self.stats["rpc_failures"] += 1
            self._ads_done(now, ready)
        elif isinstance(msg, NegotiatorReschedule):
            self._negotiator = None  # look it up again next time
            self.notes.append((logging.WARNING, f"{self.name}: reschedule failed: {why}"))
        elif isinstance(msg, CollectorQuery) and msg.corr.startswith("negotiator:"):
            self._negotiator = None
            self.notes.append((logging.WARNING, f"{self.name}: reschedule failed: {why}"))

    def merge_sends(self, sends: list[Send]) -> list[Send]:
        """Sends of several deliveries (a big message delivered in parts) with one
        message per startd address and kind, as one delivery would have made them."""
        out: list[Send] = []
        merged: dict[tuple[type, str], int] = {}
        for send in sends:
            msg = send.msg
            field = _ITEMS.get(type(msg))
            key = (type(msg), send.address)
            if field is None or key not in merged:
                if field is not None:
                    merged[key] = len(out)
                out.append(send)
                continue
            first = out[merged[key]].msg
            items = getattr(first, field) + getattr(msg, field)
            self._asked.pop(first.corr, None)
            self._asked.pop(msg.corr, None)
            again = dataclasses.replace(first, corr=self._corr(first.corr.partition(":")[0]))
            again = dataclasses.replace(again, **{field: items})
            self._asked[again.corr] = (send.address, again)
            out[merged[key]] = Send(send.address, again)
        return out

    # --- plumbing -------------------------------------------------------------------

    def _corr(self, kind: str) -> str:
        return f"{kind}:{self.name}:{next(self._ids)}"

    def _request(self, ready: Ready, address: str, msg: Any, *context: Any) -> None:
        self._asked[msg.corr] = (address, msg, *context)
        ready.send(address, msg)

    def _outbox(self, out: Outbox, ready: Ready) -> None:
        """The core's outbox as messages: per startd address one of each kind (claims,
        activations, releases), the job ads copied as a message's would be."""
        name = self.name
        for address, reqs in out.claims.items():
            if reqs:
                claims = [dataclasses.replace(r, job_ad=r.job_ad.copy()) for r in reqs]
                msg = StartdRequestClaims(self._corr("claims"), name, self.address, claims)
                self._request(ready, address, msg)
        for address, acts in out.activations.items():
            if acts:
                copies = [dataclasses.replace(a, job_ad=a.job_ad.copy()) for a in acts]
                self._request(
                    ready, address, StartdActivateClaims(self._corr("activate"), name, copies)
                )
        for address, ids in out.releases.items():
            if ids:
                msg = StartdReleaseClaims(self._corr("release"), name, list(ids))
                self._request(ready, address, msg)

    def _changed(self, now: float) -> None:
        """The queue or the claims changed: the ads go SCHEDD_MIN_INTERVAL from the
        first change."""
        self.core.ad_cadence.changed(now)

    def _drain(self, ready: Ready) -> Ready:
        self._follow_alive()
        for kind, fields, seq in self.core.drain_numbered():
            if seq is not None:  # stored with its change: the gatherer counts what it saw
                fields = {**fields, "_seq": seq}
            ready.events.append((self.name, kind, fields))
        return ready


# the list each message to a startd carries (what merge_sends joins)
_ITEMS: dict[type, str] = {
    StartdRequestClaims: "claims",
    StartdActivateClaims: "activations",
    StartdReleaseClaims: "claim_ids",
}

_HANDLERS: dict[type, Callable[[ScheddDriver, Any, Peer, float, Ready], None]] = {
    ScheddResourceRequestsRequest: ScheddDriver._on_resource_requests,
    ScheddMatches: ScheddDriver._on_matches,
    ScheddJobsExited: ScheddDriver._on_jobs_exited,
    ScheddClaimResults: ScheddDriver._on_claim_results,
    ScheddActivationResults: ScheddDriver._on_activation_results,
    ScheddReleaseResults: ScheddDriver._on_release_results,
    ScheddKeepAliveAnswer: ScheddDriver._on_keepalive_answer,
    AdvertiseAck: ScheddDriver._on_advertise_ack,
    QueryReply: ScheddDriver._on_query_reply,
    RescheduleAck: ScheddDriver._on_reschedule_ack,
    Undeliverable: ScheddDriver._on_undeliverable,
}
