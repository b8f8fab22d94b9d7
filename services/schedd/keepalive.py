"""Keeping claims alive: when each claim needs a keepalive (its job lease, never more often
than MIN_ALIVE_EVERY), the rounds that send them, a startd's answer, and giving a claim
up when its lease runs out (the job back to Idle, a reconnect failure in its log).

A mixin of :class:`.schedd.Schedd`; its methods use the core's own records and
transaction.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..claimid import redact
from ..jobstates import IDLE, RUNNING
from . import userlog as ulog
from .records import HeldClaim, Outbox, machine_of

if TYPE_CHECKING:
    from .schedd import Schedd

# No claim is kept alive more often than this (pool seconds), whatever its job lease: so
# a claim made now needs nothing before now + MIN_ALIVE_EVERY.
MIN_ALIVE_EVERY = 10.0
# the states of a claim that keepalives renew
_KEPT_ALIVE = frozenset(("active", "idle", "waiting"))


class ClaimKeepalive:
    """Claim keepalives and leases (mixed into ``Schedd``)."""

    def claims_by_startd(self: Schedd) -> dict[str, list[str]]:
        """Claims this schedd holds, per startd address (what keepalives carry)."""
        out: dict[str, list[str]] = defaultdict(list)
        for claim in self.claims.values():
            if claim.state in ("active", "idle", "waiting"):
                out[claim.startd_address].append(claim.claim_id)
        return dict(out)

    def _alive_every(self: Schedd, claim: HeldClaim) -> float:
        """min(ALIVE_INTERVAL, JobLeaseDuration / 3) of the claim's job, at least 10 s;
        kept when the job leaves (the startd's lease was set when the claim was made).
        Sets the claim's lease as its startd computes it: the job's JobLeaseDuration, else
        MAX_CLAIM_ALIVES_MISSED x ALIVE_INTERVAL."""
        if claim.alive_every:  # the usual case: set when the claim got its job
            return claim.alive_every
        interval = float(self.config.get_int("ALIVE_INTERVAL"))
        if claim.job is not None:
            every = interval
            # read as the claim got its job: when the startd set its lease
            lease = claim.job.number(
                "JobLeaseDuration", 0.0, now=self.ad_epoch + claim.since, rng=self.eval_rng
            )
            if lease > 0:
                every = min(every, lease / 3)
            claim.alive_every = max(MIN_ALIVE_EVERY, every)
            claim.lease = (
                lease if lease > 0 else self.config.get_int("MAX_CLAIM_ALIVES_MISSED") * interval
            )
        return claim.alive_every or max(MIN_ALIVE_EVERY, interval)

    def _claim_times(self: Schedd, claim: HeldClaim) -> tuple[float, float, float]:
        """When ``claim`` next needs a keepalive (within its period of being made or of
        the last keepalive to its startd; a claim loaded at a restart at once, the
        reconnect), its period (0: a reconnecting claim, whose first keepalive is a
        reconnect) and the end of its lease (inf: not known, or reconnecting: its lease
        runs from the restart's first keepalive)."""
        addr, since = claim.startd_address, claim.since
        if claim.reconnecting and addr not in self._reconnect_asked:
            return since, 0.0, math.inf
        period = claim.alive_every or self._alive_every(claim)
        last = self._alive_sent.get(addr, since)
        end = claim.heard + claim.lease if claim.lease > 0 else math.inf
        return (last if last > since else since) + period, period, end

    def _keepalive_times(
        self: Schedd, now: float = -math.inf
    ) -> tuple[dict[str, float], list[HeldClaim], float, dict[str, float]]:
        """One look over the claims (a schedd holds thousands): per startd address, when
        its claims next need a keepalive (:meth:`_claim_times`); the claims whose lease
        ran out by ``now``, in order (the schedd gives up on them), and the earliest end
        of any claim's lease; and per address the shortest period of its claims (when
        the next is due once one is sent now; reconnecting claims left out)."""
        due: dict[str, float] = {}
        every: dict[str, float] = {}
        expired: list[HeldClaim] = []
        first_end = inf = math.inf
        times = self._claim_times
        for claim in self.claims.values():
            if claim.state not in _KEPT_ALIVE:
                continue
            addr = claim.startd_address
            t, period, end = times(claim)
            if end < inf:
                if end <= now:
                    expired.append(claim)
                if end < first_end:
                    first_end = end
            if period and period < every.get(addr, inf):
                every[addr] = period
            if t < due.get(addr, inf):
                due[addr] = t
        return due, expired, first_end, every

    def _alive_soon(self: Schedd, claim: HeldClaim) -> None:
        """``claim`` is kept alive from now on (its job started, or it waits for a
        retiring one): the next look is no later than its first keepalive or the end of
        its lease (:attr:`alive_next` was worked out without it). No other change makes
        a keepalive due sooner, so a busy schedd looks over its claims only when one is
        due, as HTCondor's schedd sends its alives on a timer."""
        t, _, end = self._claim_times(claim)
        self._look_by(min(t, end))

    def _look_by(self: Schedd, t: float) -> None:
        if self.alive_next is None or t < self.alive_next:
            self.alive_next = t

    def next_keepalive(self: Schedd) -> float | None:
        """When :meth:`alive_round` next has something to do (None: no claims): a
        keepalive to send or a lease to give up on."""
        due, _expired, first_end, _every = self._keepalive_times()
        return self._next_alive(due.values(), first_end)

    def _next_alive(self: Schedd, due: Iterable[float], first_end: float) -> float | None:
        times = list(due)
        if first_end < math.inf:
            times.append(first_end)
        times += [min(u.until, u.again) for u in self._unsure.values()]
        return min(times, default=None)

    def alive_round(self: Schedd, now: float) -> tuple[Outbox, dict[str, list[str]]]:
        """What is due now: claims whose startd has not answered for a whole lease are
        given up (the job is Idle again, as HTCondor's shadow gives up reconnecting once
        the job lease has run out), then the keepalives to send. Sets :attr:`alive_next`,
        :meth:`next_keepalive` as the round leaves the claims (without a second look)."""
        out = Outbox()
        due, expired, first_end, every = self._keepalive_times(now)
        changed = bool(expired)
        for claim in expired:
            self._give_up(claim, now, out)
        for cid, u in list(self._unsure.items()):
            if u.until <= now:
                self._settle_unsure(cid, now, "the claim's lease is over")
                changed = True
            elif u.again <= now:  # the release may have been lost: again
                u.again = now + self._alive_every(u.claim)
                out.releases[u.claim.startd_address].append(cid)
        self._commit(now)
        asked = len(self._reconnect_asked)
        keepalives = self.keepalives_due(now, None if changed else due)
        if changed or len(self._reconnect_asked) != asked:
            # claims given up, or reconnects asked (their leases start now): look again
            self.alive_next = self.next_keepalive()
        else:
            # a startd sent a keepalive now is next due a period of its claims from now
            for addr in keepalives:
                due[addr] = now + every[addr]
            self.alive_next = self._next_alive(due.values(), first_end)
        return out, keepalives

    def _give_up(self: Schedd, claim: HeldClaim, now: float, out: Outbox) -> None:
        job = claim.job
        reason = f"Job disconnected too long: JobLeaseDuration ({claim.lease:g} seconds) expired"
        claim.job = None
        if job is not None:
            job.claim = None
            if claim.state == "active" and job.status == RUNNING:
                self._account_run(job, claim.activated, now)
                self._left_slot(job)
                self._transition(job, IDLE, now)
                self._log(
                    job,
                    ulog.RECONNECT_FAILED,
                    now,
                    reason=reason,
                    startd=machine_of(claim.slot_name),
                )
            elif job.status == IDLE:
                self._reserved -= 1
                self._unreserve(job)
        self._emit(
            "reconnect_failed",
            job=job.job_id if job is not None else "",
            slot=claim.slot_name,
            claim=redact(claim.claim_id),
            reason=reason,
            heard=round(claim.heard, 3),
            lease=claim.lease,
        )
        self._drop_claim(claim, out)
        if claim.claim_id in self._releasing:
            self.on_releases_done([claim.claim_id], now, answered=False)

    def keepalives_due(
        self: Schedd, now: float, alive_due: dict[str, float] | None = None
    ) -> dict[str, list[str]]:
        """The keepalives to send now: every claim held at each startd that has one due
        (one KeepAlive per startd carries them all, so the others are renewed early).
        ``alive_due``: when each startd's next is due, if just worked out."""
        if alive_due is None:
            alive_due = self._keepalive_times()[0]
        due = {a for a, t in alive_due.items() if t <= now}
        if not due:
            return {}
        held = self.claims_by_startd()
        for addr in set(self._alive_sent) - set(held):
            del self._alive_sent[addr]  # no claims left there
        out = {a: ids for a, ids in held.items() if a in due}
        for addr, ids in out.items():
            self._alive_sent[addr] = now
            if addr not in self._reconnect_asked:
                self._reconnect_asked.add(addr)
                for cid in ids:
                    claim = self.claims[cid]
                    if claim.reconnecting:  # its lease and its wall clock run from now
                        claim.heard = claim.activated = now
        return out

    def on_keepalive_answer(
        self: Schedd, claim_ids: Iterable[str], unknown: Iterable[str], now: float
    ) -> None:
        """A startd answered a keepalive: the claims it knows are heard from (a claim
        loaded at a restart is reconnected: its job runs on); those it does not know are
        lost and their jobs Idle again (in the startd's order: a set's order would change
        with the interpreter's string hashing, and the events with it)."""
        lost = dict.fromkeys(unknown)
        for cid in claim_ids:
            claim = self.claims.get(cid)
            if claim is None or cid in lost:
                continue
            claim.heard = now
            if claim.reconnecting:
                claim.reconnecting = False
                self._emit(
                    "job_reconnected",
                    job=claim.job.job_id if claim.job is not None else "",
                    slot=claim.slot_name,
                    claim=redact(cid),
                )
        if lost:
            self.on_claims_lost(lost, now)

    def readdress(self: Schedd, old: str, new: str) -> None:
        """A startd came back on a new address (found through the collector): its claims
        are reached there."""
        for claim in self.claims.values():
            if claim.startd_address == old:
                claim.startd_address = new
        self._alive_sent.pop(old, None)
        self._reconnect_asked.discard(old)
        self.alive_next = self.next_keepalive()  # (their times are the new address's)
