"""The schedd-startd claim protocol under a hostile network, in the pure cores.

Two schedd cores and one startd core (a 4-cpu partitionable slot) exchange the protocol's
messages (claim requests, activations, releases, keepalives and their answers, job exits)
through a network the test controls: hypothesis delivers them in any order, duplicates
them, drops them, and moves the clock (job ends, lease expiries, keepalive rounds). The
negotiator is played by a rule that hands an Unclaimed slot's id to a schedd.

After every step: no job runs in two places, the slot is never over-committed, no claim
id is held by two schedds, and no job completes twice or is lost. At the end the network
heals: every message is delivered and time runs on until every job has completed, exactly
once, and each claim the startd ended is gone from its schedd.
"""

from __future__ import annotations

import random
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from mockpool.config import parse_config
from mockpool.schedd.queue import JobQueue
from mockpool.schedd.records import ActivationOutcome, ClaimOutcome, JobExit, MatchNotice
from mockpool.schedd.schedd import COMPLETED, RUNNING, Schedd
from mockpool.startd.machine import Machine

SCHEDDS = ("schedd1", "schedd2")
STARTD = "127.0.0.1:9000"
JOB = "executable = /bin/sleep\narguments = {n}\nrequest_memory = 100\njob_lease_duration = 90\n"


@dataclass
class Message:
    """One message in flight: what delivering it does, and what losing it does. A lost
    request or reply is a failed call to its caller (the shells turn an RPC error into a
    refusal); a lost job exit is sent again (the startd retries until the schedd answers);
    a lost release or its answer is a failed call (the schedd sends it again while it waits
    on it); a lost keepalive is just lost."""

    what: str
    deliver: Callable[[], None]
    lost: Callable[[], None] | None = None


class ClaimProtocol(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.now = 0.0
        self._tmp = tempfile.TemporaryDirectory()
        self.cfg = cfg = parse_config("NUM_CPUS = 4\nMEMORY = 1024\nALIVE_INTERVAL = 30", "<test>")
        self.startd = Machine("exec1", cfg, STARTD, 1, 0.0)
        self.schedds: dict[str, Schedd] = {}
        self.submitted: set[tuple[str, str]] = set()
        self.completions: Counter[tuple[str, str]] = Counter()
        self.network: list[Message] = []
        for i, name in enumerate(SCHEDDS):
            queue = JobQueue(Path(self._tmp.name) / f"{name}.sqlite")
            s = Schedd(name, queue, cfg, 0.0)
            s.address = f"127.0.0.1:{9100 + i}"
            cluster, n = s.submit(JOB.format(n=40 + 30 * i) + "queue 3\n", "a.sub", "alice", 0.0)
            self.submitted |= {(name, f"{cluster}.{p}") for p in range(n)}
            self.schedds[name] = s
        self._drain_events()

    def teardown(self) -> None:
        for s in self.schedds.values():
            s.queue.close()
        self._tmp.cleanup()

    # ----------------------------------------------------------------- plumbing
    def _drain_events(self) -> None:
        for name, s in self.schedds.items():
            for kind, fields in s.drain_events():
                if kind == "job_completed":
                    self.completions[(name, fields["job"])] += 1

    def _send(self, s: Schedd, out) -> None:  # type: ignore[no-untyped-def]
        """A schedd's outbox onto the network (all of it addressed to our one startd)."""
        for reqs in out.claims.values():
            for r in reqs:
                failed = self._claim_failed(s, r.claim_id)
                self.network.append(Message("claim", self._claim_request(s, r, failed), failed))
        for acts in out.activations.values():
            for a in acts:
                failed = self._activation_failed(s, a.claim_id)
                self.network.append(Message("activate", self._activation(s, a, failed), failed))
        for ids in out.releases.values():
            if ids:
                self.network.append(Message("release", *self._release(s, list(ids))))
        self._drain_events()

    def _claim_failed(self, s: Schedd, cid: str) -> Callable[[], None]:
        failed = ClaimOutcome(cid, False, "RequestClaims failed: DEADLINE_EXCEEDED")
        return lambda: self._send(s, s.on_claim_results([failed], self.now))

    def _activation_failed(self, s: Schedd, cid: str) -> Callable[[], None]:
        failed = ActivationOutcome(
            cid, False, "ActivateClaims failed: DEADLINE_EXCEEDED", answered=False
        )
        return lambda: self._send(s, s.on_activation_results([failed], self.now))

    def _claim_request(self, s: Schedd, r, failed) -> Callable[[], None]:  # type: ignore[no-untyped-def]
        def deliver() -> None:
            try:
                g = self.startd.request_claim(
                    r.claim_id,
                    r.slot_name,
                    r.job_ad,
                    s.name,
                    s.address,
                    r.owner,
                    self.now,
                    leftovers=r.leftovers,
                )
                outcome = ClaimOutcome(
                    r.claim_id,
                    True,
                    claim_id=g.claim_id,
                    slot_name=g.slot_name,
                    slot_ad=g.slot_ad,
                    ready_time=g.ready,
                    leftover_claim_id=g.leftover_claim_id or "",
                    leftover_slot_ad=g.leftover_ad,
                )
            except Exception as e:
                outcome = ClaimOutcome(r.claim_id, False, error=str(e))
            self.network.append(
                Message(
                    "claim reply",
                    lambda: self._send(s, s.on_claim_results([outcome], self.now)),
                    failed,
                )
            )

        return deliver

    def _activation(self, s: Schedd, a, failed) -> Callable[[], None]:  # type: ignore[no-untyped-def]
        def deliver() -> None:
            try:
                act = self.startd.activate(a.claim_id, a.job_ad, self.now)
                outcome = ActivationOutcome(a.claim_id, True, start_time=act.start)
            except Exception as e:
                outcome = ActivationOutcome(a.claim_id, False, error=str(e))
            self.network.append(
                Message(
                    "activate reply",
                    lambda: self._send(s, s.on_activation_results([outcome], self.now)),
                    failed,
                )
            )

        return deliver

    def _release(self, s: Schedd, ids: list[str]) -> tuple[Callable[[], None], Callable[[], None]]:
        """Delivering a release, and losing it (or its answer): the schedd learns which."""

        def done(answered: bool) -> None:
            s.on_releases_done(ids, self.now, answered=answered)
            self._drain_events()

        def deliver() -> None:
            for cid in ids:
                if self.startd.holds(cid):
                    self.startd.release(cid, self.now)
            self.network.append(Message("release reply", lambda: done(True), lambda: done(False)))

        return deliver, lambda: done(False)

    def _keepalive(self, s: Schedd, ids: list[str]) -> Callable[[], None]:
        def deliver() -> None:
            mine = [c for c in ids if not self.startd.holds(c) or self._holder(c) == s.name]
            unknown = self.startd.keepalive(mine, self.now)
            unknown += [c for c in ids if c not in mine]
            self.network.append(
                Message(
                    "keepalive reply",
                    lambda: (s.on_keepalive_answer(ids, unknown, self.now), self._drain_events()),
                )
            )

        return deliver

    def _holder(self, cid: str) -> str:
        return self.startd.claim(cid).schedd_name

    def _exit_message(self, x) -> Message:  # type: ignore[no-untyped-def]
        s = self.schedds[x.schedd_name]
        e = JobExit(
            x.claim_id, x.cluster, x.proc, x.start, x.end, x.exit_code, x.slot_name, x.reason
        )
        return Message(
            "exit",
            lambda: self._send(s, s.on_job_exits([e], self.now)),
            lambda: self.network.append(self._exit_message(x)),  # sent again
        )

    # ----------------------------------------------------------------- rules
    @rule(schedd=st.sampled_from(SCHEDDS))
    def negotiate(self, schedd: str) -> None:
        """The negotiator matches the p-slot's offered id to one of the schedd's requests."""
        s = self.schedds[schedd]
        requests = s.resource_requests()
        slot = self.startd.slot("slot1@exec1")
        if not requests or slot.cpus < 1 or slot.memory < 100:
            return
        ad = requests[0]
        m = MatchNotice(
            str(ad.eval("Submitter")),
            int(ad.eval("AutoClusterId")),
            slot.name,
            slot.claim_id,
            STARTD,
            self.startd.slot_ad(slot.name, self.now),
        )
        self._send(s, s.on_matches([m], self.now))

    @precondition(lambda self: self.network)
    @rule(data=st.data())
    def deliver(self, data: st.DataObject) -> None:
        i = data.draw(st.integers(0, len(self.network) - 1))
        self.network.pop(i).deliver()

    @precondition(lambda self: self.network)
    @rule(data=st.data())
    def duplicate(self, data: st.DataObject) -> None:
        i = data.draw(st.integers(0, len(self.network) - 1))
        self.network.append(self.network[i])

    @precondition(lambda self: self.network)
    @rule(data=st.data())
    def drop(self, data: st.DataObject) -> None:
        i = data.draw(st.integers(0, len(self.network) - 1))
        lost = self.network.pop(i).lost
        if lost is not None:
            lost()

    @initialize(seed=st.integers(0, 2**32 - 1))
    def claim_id_secrets(self, seed: int) -> None:
        # The startd's claim-id secrets from the example, not the OS: their order can
        # matter, and a failure must replay.
        self.startd = Machine("exec1", self.cfg, STARTD, 1, 0.0, rng=random.Random(seed))

    @rule(dt=st.sampled_from([1.0, 10.0, 35.0, 100.0]))
    def time_passes(self, dt: float) -> None:
        self.now += dt
        tick = self.startd.tick(self.now)
        for x in tick.exits:
            self.network.append(self._exit_message(x))
        for s in self.schedds.values():
            given_up, due = s.alive_round(self.now)
            # the round's own account of what is next is a fresh look's
            assert s.alive_next == s.next_keepalive()
            self._send(s, given_up)
            for ids in due.values():
                self.network.append(Message("keepalive", self._keepalive(s, list(ids))))
        self._drain_events()

    # ----------------------------------------------------------------- invariants
    @invariant()
    def no_keepalive_is_due_before_the_schedds_next_look(self) -> None:
        # between rounds the schedd looks again only when it said it would: whatever
        # changed its claims meanwhile must not make a keepalive or a lease's end due
        # earlier than that (a fresh look's account)
        for s in self.schedds.values():
            fresh = s.next_keepalive()
            if fresh is not None:
                assert s.alive_next is not None and s.alive_next <= fresh

    @invariant()
    def no_job_runs_twice(self) -> None:
        running = Counter(
            (s.claim.schedd_name, f"{s.claim.job.cluster}.{s.claim.job.proc}")
            for s in self.startd.ordered_slots()
            if s.claim is not None and s.claim.job is not None
        )
        assert all(n == 1 for n in running.values()), running

    @invariant()
    def the_slot_is_never_overcommitted(self) -> None:
        parent = self.startd.slot("slot1@exec1")
        children = [s for s in self.startd.ordered_slots() if s.kind == "Dynamic"]
        assert parent.cpus >= 0 and parent.memory >= 0
        assert parent.cpus + sum(c.cpus for c in children) == parent.total_cpus
        assert parent.memory + sum(c.memory for c in children) == parent.total_memory

    @invariant()
    def no_claim_is_held_by_two_schedds(self) -> None:
        # a request in flight is not a claim (a p-slot's id may be offered again)
        held = Counter(
            cid
            for s in self.schedds.values()
            for cid, c in s.claims.items()
            if c.state != "requesting"
        )
        assert all(n == 1 for n in held.values()), held

    @invariant()
    def no_job_completes_twice_or_is_lost(self) -> None:
        assert all(n == 1 for n in self.completions.values()), self.completions
        present = set()
        for name, s in self.schedds.items():
            present |= {(name, f"{c}.{p}") for (c, p) in s.jobs}
            present |= {
                (name, str(h.eval("ClusterId")) + "." + str(h.eval("ProcId"))) for h in s.history()
            }
        assert self.submitted <= present

    def heal(self) -> None:
        """The network is whole again: deliver everything, let time run and negotiate,
        until every job has completed."""
        for _ in range(200):
            while self.network:
                self.network.pop(0).deliver()
            if all(self.completions[j] == 1 for j in self.submitted):
                break
            for name in SCHEDDS:
                self.negotiate(name)
            while self.network:
                self.network.pop(0).deliver()
            self.time_passes(35.0)
        assert {j for j in self.submitted if self.completions[j] != 1} == set()
        assert all(s.status()["running"] == 0 for s in self.schedds.values())
        for s in self.schedds.values():
            for job in s.jobs.values():
                assert job.status in (COMPLETED,), job.job_id
        # nothing left running at the startd, and no schedd holds a claim it lost
        assert not [x for x in self.startd.ordered_slots() if x.claim and x.claim.job]
        assert all(j.status != RUNNING for s in self.schedds.values() for j in s.jobs.values())


class HealingProtocol(ClaimProtocol):
    def teardown(self) -> None:
        try:
            self.heal()
        finally:
            super().teardown()


HealingProtocol.TestCase.settings = settings(
    max_examples=100,
    derandomize=True,
    database=None,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestClaimProtocol = HealingProtocol.TestCase
