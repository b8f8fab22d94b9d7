"""The schedd's gRPC shell in-process: a real grpc.aio server with token auth, and tiny
fake collector, negotiator and startd servicers that record what they are sent."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
import pytest
from builders.waiting import until

from mockpool import auth, rpc
from mockpool.auth import Role
from mockpool.classad import ClassAd
from mockpool.clock import ManualClock
from mockpool.config import parse_config
from mockpool.daemon import DaemonContext, EventLog
from mockpool.schedd import service_calls
from mockpool.schedd.service import ScheddService
from mockpool.v1 import collector_pb2 as cpb
from mockpool.v1 import collector_pb2_grpc as cgrpc
from mockpool.v1 import negotiator_pb2 as npb
from mockpool.v1 import negotiator_pb2_grpc as ngrpc
from mockpool.v1 import schedd_pb2 as spb
from mockpool.v1 import schedd_pb2_grpc as sgrpc
from mockpool.v1 import startd_pb2 as tpb
from mockpool.v1 import startd_pb2_grpc as tgrpc
from mockpool.wire import ad_from_pb, ad_to_pb, frame_field

SUB = "executable = /bin/sleep\narguments = 60\nqueue 2\n"
# Who each role's token names: the submitting user, and a startd reporting exits.
IDENTITY = {Role.SUBMIT: "alice", Role.DAEMON: "startd/startd0_0"}


@dataclass
class FakeCollector(cgrpc.CollectorServicer):
    negotiator_address: str = ""
    updates: list[cpb.AdUpdate] = field(default_factory=list)

    async def Advertise(self, request, context):  # type: ignore[no-untyped-def]
        self.updates.extend(request.updates)
        return cpb.AdvertiseReply(accepted=len(request.updates))

    async def Query(self, request, context):  # type: ignore[no-untyped-def]
        reply = cpb.QueryReply()
        if request.ad_type == "Negotiator" and self.negotiator_address:
            ad = ClassAd({"MyType": "Negotiator", "MyAddress": f"<{self.negotiator_address}>"})
            ad_to_pb(ad, reply.ads.add())
        return reply


@dataclass
class FakeNegotiator(ngrpc.NegotiatorServicer):
    reschedules: list[str] = field(default_factory=list)

    async def Reschedule(self, request, context):  # type: ignore[no-untyped-def]
        self.reschedules.append(request.schedd_name)
        return npb.RescheduleReply(next_cycle=0.0)


@dataclass
class FakeStartd(tgrpc.StartdServicer):
    claims: list[tpb.RequestClaimsRequest] = field(default_factory=list)
    activations: list[tpb.ActivateClaimsRequest] = field(default_factory=list)
    releases: list[tpb.ReleaseClaimsRequest] = field(default_factory=list)
    keepalives: list[tpb.KeepAliveRequest] = field(default_factory=list)
    unknown: set[str] = field(default_factory=set)
    # a call applied but its answer lost (DEADLINE_EXCEEDED), per method
    lose_answers: set[str] = field(default_factory=set)
    # set: RequestClaims answers only once it is set
    answer_claims: asyncio.Event | None = None

    async def RequestClaims(self, request, context):  # type: ignore[no-untyped-def]
        self.claims.append(request)
        if self.answer_claims is not None:
            await self.answer_claims.wait()
        reply = tpb.RequestClaimsReply()
        for c in request.claims:
            reply.results.add(claim_id=c.claim_id, ok=True, slot_name=c.slot_name)
        return reply

    async def ActivateClaims(self, request, context):  # type: ignore[no-untyped-def]
        self.activations.append(request)
        if "ActivateClaims" in self.lose_answers:
            await context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, "the answer was lost")
        reply = tpb.ActivateClaimsReply()
        for a in request.activations:
            reply.results.add(claim_id=a.claim_id, ok=True, start_time=40.0)
        return reply

    async def ReleaseClaims(self, request, context):  # type: ignore[no-untyped-def]
        self.releases.append(request)
        if "ReleaseClaims" in self.lose_answers:
            await context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, "the answer was lost")
        return tpb.ReleaseClaimsReply()

    async def KeepAlive(self, request, context):  # type: ignore[no-untyped-def]
        self.keepalives.append(request)
        return tpb.KeepAliveReply(
            unknown_claim_ids=[c for c in request.claim_ids if c in self.unknown]
        )


@dataclass
class Pool:
    clock: ManualClock
    ctx: DaemonContext
    svc: ScheddService
    address: str
    secret: str
    collector: FakeCollector
    negotiator: FakeNegotiator
    startd: FakeStartd
    startd_address: str
    channels: dict[tuple[Role, str] | None, grpc.aio.Channel] = field(default_factory=dict)

    def stub(self, role: Role | None, identity: str | None = None) -> sgrpc.ScheddStub:
        key = (
            None
            if role is None
            else (role, IDENTITY.get(role, "") if identity is None else identity)
        )
        if key not in self.channels:
            if key is None:
                self.channels[key] = grpc.aio.insecure_channel(self.address)
            else:
                self.channels[key] = rpc.make_channel(
                    self.address, auth.make_token(self.secret, *key)
                )
        return sgrpc.ScheddStub(self.channels[key])

    def raw_call(self, role: Role, method: str, reply: Any) -> Any:
        """``method`` of the schedd, sent bytes as they are, its reply parsed as ``reply``."""
        self.stub(role)
        channel = self.channels[(role, IDENTITY.get(role, ""))]
        return channel.unary_unary(
            f"/mockpool.v1.Schedd/{method}", response_deserializer=reply.FromString
        )


@pytest.fixture
async def pool(tmp_path: Path) -> AsyncIterator[Pool]:
    collector, negotiator, startd = FakeCollector(), FakeNegotiator(), FakeStartd()
    peers, peer_address = await rpc.start_server(
        [
            lambda s: cgrpc.add_CollectorServicer_to_server(collector, s),
            lambda s: ngrpc.add_NegotiatorServicer_to_server(negotiator, s),
            lambda s: tgrpc.add_StartdServicer_to_server(startd, s),
        ],
        interceptors=[],
    )
    collector.negotiator_address = peer_address
    clock = ManualClock(0.0)
    secret = auth.make_secret()
    ctx = DaemonContext(
        clock=clock,
        config=parse_config("", "<test>"),
        secret=secret,
        collector_address=peer_address,
        events=EventLog(clock),
        state_dir=tmp_path,
    )
    svc = ScheddService(ctx, ["schedd1"])
    server, address = await rpc.start_server(
        [svc.add_to_server],
        interceptors=[auth.TokenAuthInterceptor(secret, method_roles=svc.METHOD_ROLES)],
    )
    ctx.address = address
    await svc.start()
    p = Pool(clock, ctx, svc, address, secret, collector, negotiator, startd, peer_address)
    try:
        yield p
    finally:
        await svc.stop()
        for ch in p.channels.values():
            await ch.close()
        await ctx.close_channels()
        await rpc.stop_server(server, 0)
        await rpc.stop_server(peers, 0)


async def test_submit_query_and_reschedule(pool: Pool) -> None:
    reply = await pool.stub(Role.SUBMIT).Submit(
        spb.SubmitRequest(description=SUB, source="job.sub", owner="alice", request_id="r1")
    )
    assert (reply.cluster_id, reply.num_procs) == (1, 2)
    # HTCondor's order: the schedd's ads first, then the reschedule, so the cycle sees
    # the new submitter; SCHEDD_MIN_INTERVAL (5) after the ads sent at start
    assert pool.negotiator.reschedules == []

    def submitter_ad_sent() -> bool:
        return any(
            u.ad_type == "Submitter" and ad_from_pb(u.ad).get_value("IdleJobs") == 2
            for u in pool.collector.updates
        )

    assert not submitter_ad_sent()
    await pool.clock.advance(5)
    await until(lambda: bool(pool.negotiator.reschedules))
    assert pool.negotiator.reschedules == ["schedd1"]
    assert submitter_ad_sent()

    q = await pool.stub(Role.READ).QueryJobs(
        spb.JobQueryRequest(projection=["ProcId", "JobStatus"])
    )
    assert [(a.get_value("ProcId"), a.get_value("JobStatus")) for a in map(ad_from_pb, q.jobs)] == [
        (0, 1),
        (1, 1),
    ]
    schedd_ad = ad_from_pb(q.schedd)
    assert schedd_ad.get_value("Name") == "schedd1" and schedd_ad.get_value("TotalIdleJobs") == 2

    # a retry with the same request id is not queued again
    again = await pool.stub(Role.SUBMIT).Submit(
        spb.SubmitRequest(description=SUB, source="job.sub", owner="alice", request_id="r1")
    )
    assert (again.cluster_id, again.num_procs) == (1, 2)

    assert any(u.ad_type == "Scheduler" for u in pool.collector.updates)
    kinds = [e["kind"] for e in pool.ctx.events.drain()]
    assert kinds == ["submit"]


async def test_malformed_submit_is_refused_and_queue_unchanged(pool: Pool) -> None:
    await pool.stub(Role.SUBMIT).Submit(spb.SubmitRequest(description=SUB, owner="alice"))
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await pool.stub(Role.SUBMIT).Submit(
            spb.SubmitRequest(
                description="executable = /bin/sleep\nrequest_memory = (lots\nqueue\n",
                source="bad.sub",
                owner="alice",
            )
        )
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert err.value.details().startswith("bad.sub:2: ")
    q = await pool.stub(Role.READ).QueryJobs(spb.JobQueryRequest())
    assert len(q.jobs) == 2

    with pytest.raises(grpc.aio.AioRpcError) as err:
        await pool.stub(Role.READ).QueryJobs(spb.JobQueryRequest(constraint="ProcId =="))
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "bad constraint" in err.value.details()


async def test_the_token_decides_the_owner_and_whose_jobs_a_user_manages(pool: Pool) -> None:
    alice, bob = pool.stub(Role.SUBMIT, "alice"), pool.stub(Role.SUBMIT, "bob")
    await alice.Submit(spb.SubmitRequest(description=SUB))  # no owner given: the token's
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await alice.Submit(spb.SubmitRequest(description=SUB, owner="bob"))
    assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert "user 'alice' may not submit jobs as 'bob'" in err.value.details()
    await pool.stub(Role.ADMIN).Submit(spb.SubmitRequest(description=SUB, owner="carol"))
    q = await pool.stub(Role.READ).QueryJobs(spb.JobQueryRequest(projection=["Owner"]))
    assert [ad_from_pb(a).get_value("Owner") for a in q.jobs] == ["alice"] * 2 + ["carol"] * 2

    def results(reply: spb.ActReply) -> list[tuple[str, bool, str]]:
        return [(r.job_id, r.ok, r.error) for r in reply.results]

    reply = await bob.Act(spb.ActRequest(action="remove", job_ids=["1.0"], owner="alice"))
    assert results(reply) == [("1.0", False, "Permission denied to remove job 1.0")]
    reply = await bob.Act(spb.ActRequest(action="hold", constraint="true"))
    assert results(reply) == [("", False, "Couldn't find/hold all jobs matching constraint (true)")]
    reply = await alice.Act(spb.ActRequest(action="hold", constraint="true"))
    assert results(reply) == [("1.0", True, ""), ("1.1", True, "")]
    reply = await pool.stub(Role.ADMIN).Act(spb.ActRequest(action="hold", job_ids=["2"]))
    assert results(reply) == [("2.0", True, ""), ("2.1", True, "")]


async def test_only_a_startd_reports_job_exits(pool: Pool) -> None:
    for identity in ("schedd/schedd1", "", "negotiator"):
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await pool.stub(Role.DAEMON, identity).JobsExited(spb.JobsExitedRequest())
        assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED
        assert "is not a startd" in err.value.details()
    assert (await pool.stub(Role.DAEMON).JobsExited(spb.JobsExitedRequest())).accepted == 0


async def test_tokens_and_roles(pool: Pool) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await pool.stub(None).QueryJobs(spb.JobQueryRequest())
    assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await pool.stub(Role.READ).Submit(spb.SubmitRequest(description=SUB, owner="alice"))
    assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await pool.stub(Role.SUBMIT).GetResourceRequests(spb.ResourceRequestsRequest())
    assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await pool.stub(Role.NEGOTIATOR).JobsExited(spb.JobsExitedRequest())
    assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED


async def test_unknown_schedd_is_not_found(pool: Pool) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await pool.stub(Role.READ).QueryJobs(spb.JobQueryRequest(schedd_name="nosuch"))
    assert err.value.code() == grpc.StatusCode.NOT_FOUND
    assert "'nosuch'" in err.value.details()


async def alices_autocluster(pool: Pool, description: str) -> int:
    """Submit ``description`` as alice; the autocluster of her resource request."""
    await pool.stub(Role.SUBMIT).Submit(spb.SubmitRequest(description=description, owner="alice"))
    rr = await pool.stub(Role.NEGOTIATOR).GetResourceRequests(spb.ResourceRequestsRequest())
    return ad_from_pb(rr.requests[0]).get_value("AutoClusterId")


def matches_request(
    pool: Pool, request_id: str, acid: int, claim_ids: list[str], first_slot: int = 0
) -> spb.MatchesRequest:
    """A negotiator's Matches message: alice's autocluster ``acid`` on one slot a claim."""
    request = spb.MatchesRequest(request_id=request_id, cycle=1)
    for n, c in enumerate(claim_ids, first_slot):
        request.matches.add(
            submitter="alice@mockpool",
            autocluster_id=acid,
            slot_name=f"slot{n}@exec1",
            claim_id=c,
            startd_address=pool.startd_address,
        )
    return request


async def test_matches_claim_activate_exit_release_keepalive(pool: Pool) -> None:
    await pool.stub(Role.SUBMIT).Submit(spb.SubmitRequest(description=SUB, owner="alice"))
    rr = await pool.stub(Role.NEGOTIATOR).GetResourceRequests(spb.ResourceRequestsRequest())
    (req,) = map(ad_from_pb, rr.requests)
    assert (
        req.get_value("ResourceRequestCount") == 2
        and req.get_value("Submitter") == "alice@mockpool"
    )
    acid = req.get_value("AutoClusterId")

    claim_ids = [f"<{pool.startd_address}>#1#{n}#s{n}" for n in (1, 2)]
    request = matches_request(pool, "m1", acid, claim_ids, first_slot=1)
    reply = await pool.stub(Role.NEGOTIATOR).Matches(request)
    assert reply.received == 2
    await until(lambda: len(pool.startd.activations) == 1)
    # one RequestClaims carrying the whole batch, then one ActivateClaims
    (claims,) = pool.startd.claims
    assert [c.claim_id for c in claims.claims] == claim_ids
    assert {c.schedd_name for c in claims.claims} == {"schedd1"}
    assert {c.schedd_address for c in claims.claims} == {pool.address}
    assert [ad_from_pb(c.job).get_value("ProcId") for c in claims.claims] == [0, 1]
    (acts,) = pool.startd.activations
    assert [a.claim_id for a in acts.activations] == claim_ids
    assert ad_from_pb(acts.activations[0].job).get_value("MockDuration") == 60

    # a retried Matches is answered from memory and claims nothing more
    assert (await pool.stub(Role.NEGOTIATOR).Matches(request)).received == 2
    await asyncio.sleep(0.05)
    assert len(pool.startd.claims) == 1

    q = await pool.stub(Role.READ).QueryJobs(spb.JobQueryRequest())
    jobs = list(map(ad_from_pb, q.jobs))
    assert [a.get_value("JobStatus") for a in jobs] == [2, 2]
    assert jobs[0].get_value("JobCurrentStartDate") == 40

    exits = spb.JobsExitedRequest(request_id="x1")
    exits.exits.add(
        schedd_name="schedd1",
        claim_id=claim_ids[0],
        cluster_id=1,
        proc_id=0,
        start_time=40.0,
        end_time=100.0,
        exit_code=0,
        slot_name="slot1@exec1",
    )
    assert (await pool.stub(Role.DAEMON).JobsExited(exits)).accepted == 1
    await until(lambda: len(pool.startd.releases) == 1)
    assert list(pool.startd.releases[0].claim_ids) == [claim_ids[0]]
    hist = await pool.stub(Role.READ).History(spb.JobQueryRequest())
    (h,) = map(ad_from_pb, hist.jobs)
    assert (h.get_value("JobStatus"), h.get_value("CompletionDate")) == (4, 100)
    assert h.get_value("RemoteWallClockTime") == 60.0

    # keepalives every ALIVE_INTERVAL carry the claims still held; one the startd lost
    pool.startd.unknown.add(claim_ids[1])
    await pool.clock.advance(300)
    await until(lambda: len(pool.startd.keepalives) == 1)
    assert list(pool.startd.keepalives[0].claim_ids) == [claim_ids[1]]
    await until(lambda: pool.svc.cores["schedd1"].status()["running"] == 0)
    assert pool.svc.cores["schedd1"].status()["idle"] == 1

    events = pool.ctx.events.drain()
    kinds = [e["kind"] for e in events]
    for kind in (
        "submit",
        "job_matched",
        "claim_held",
        "job_started",
        "job_completed",
        "claim_dropped",
        "claim_lost",
    ):
        assert kind in kinds, kind
    # claim ids appear in events only with their secret redacted
    shown = [e["claim"] for e in events if "claim" in e]
    assert shown and all(c.endswith("#...") for c in shown)


async def test_act_over_grpc_releases_the_running_claim(pool: Pool) -> None:
    await pool.stub(Role.SUBMIT).Submit(spb.SubmitRequest(description=SUB, owner="alice"))
    claim = f"<{pool.startd_address}>#1#7#s7"
    request = spb.MatchesRequest(request_id="m2")
    request.matches.add(
        submitter="alice@mockpool",
        autocluster_id=1,
        slot_name="slot1@exec1",
        claim_id=claim,
        startd_address=pool.startd_address,
    )
    await pool.stub(Role.NEGOTIATOR).Matches(request)
    await until(lambda: len(pool.startd.activations) == 1)
    reply = await pool.stub(Role.SUBMIT).Act(
        spb.ActRequest(action="remove", job_ids=["1.0", "99.0"], owner="alice")
    )
    assert [(r.job_id, r.ok, r.error) for r in reply.results] == [
        ("99.0", False, "Job 99.0 not found"),
        ("1.0", True, ""),
    ]
    await until(lambda: len(pool.startd.releases) == 1)
    assert list(pool.startd.releases[0].claim_ids) == [claim]
    # released: the removed job has left the queue
    await until(lambda: (1, 0) not in pool.svc.cores["schedd1"].jobs)
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await pool.stub(Role.SUBMIT).Act(spb.ActRequest(action="explode", job_ids=["1.1"]))
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT


async def test_status(pool: Pool) -> None:
    await pool.stub(Role.SUBMIT).Submit(spb.SubmitRequest(description=SUB, owner="alice"))
    st = pool.svc.status()
    assert st["schedds"]["schedd1"]["idle"] == 2


async def test_item_files_and_env_travel_with_the_submit(pool: Pool) -> None:
    text = 'executable = /bin/sleep\narguments = $(t)\n+E = "$ENV(MINE)"\nqueue t from secs.txt\n'
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await pool.stub(Role.SUBMIT).Submit(spb.SubmitRequest(description=text, owner="alice"))
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "queue ... from secs.txt: the file was not sent" in err.value.details()
    reply = await pool.stub(Role.SUBMIT).Submit(
        spb.SubmitRequest(
            description=text, owner="alice", item_files={"secs.txt": "5\n6\n"}, env={"MINE": "m"}
        )
    )
    assert reply.num_procs == 2
    q = await pool.stub(Role.READ).QueryJobs(spb.JobQueryRequest(projection=["MockDuration", "E"]))
    assert [(a.get_value("MockDuration"), a.get_value("E")) for a in map(ad_from_pb, q.jobs)] == [
        (5, "m"),
        (6, "m"),
    ]


async def test_an_unsendable_job_is_left_out_of_replies_and_reported(pool: Pool) -> None:
    for owner in ("alice", "bob"):
        await pool.stub(Role.SUBMIT, owner).Submit(spb.SubmitRequest(description=SUB))
    core = pool.svc.cores["schedd1"]
    core.jobs[(1, 0)].ad["Odd"] = 2**64  # however it got there, the wire cannot carry it
    q = await pool.stub(Role.READ).QueryJobs(spb.JobQueryRequest())
    ids = [(a.get_value("ClusterId"), a.get_value("ProcId")) for a in map(ad_from_pb, q.jobs)]
    assert ids == [(1, 1), (2, 0), (2, 1)]
    rr = await pool.stub(Role.NEGOTIATOR).GetResourceRequests(spb.ResourceRequestsRequest())
    assert "bob@mockpool" in {ad_from_pb(r).get_value("Submitter") for r in rr.requests}
    bad = [e for e in pool.ctx.events.drain() if e["kind"] == "bad_record"]
    assert bad and {e["job"] for e in bad} == {"1.0"}
    assert "integer 18446744073709551616 does not fit in 64 bits" in bad[0]["problem"]


async def test_a_cycles_worth_of_matches_is_applied_in_turns_and_claimed_in_one_request(
    pool: Pool,
) -> None:
    n = 300  # more than one turn (turns.YIELD_EVERY)
    sub = f"executable = /bin/sleep\narguments = 60\nqueue {n}\n"
    acid = await alices_autocluster(pool, sub)
    claim_ids = [f"<{pool.startd_address}>#1#{k}#s{k}" for k in range(n)]
    big = matches_request(pool, "big", acid, claim_ids)
    assert (await pool.stub(Role.NEGOTIATOR).Matches(big)).received == n
    await until(lambda: sum(len(a.activations) for a in pool.startd.activations) == n)
    (claims,) = pool.startd.claims  # the turns' claims go out together
    assert [c.claim_id for c in claims.claims] == claim_ids
    # the same claim ids in another request: read, then dropped (the core holds them)
    dropped = pool.svc.stats["matches_dropped"]
    again = matches_request(pool, "again", acid, claim_ids[:10])
    assert (await pool.stub(Role.NEGOTIATOR).Matches(again)).received == 10
    await until(lambda: pool.svc.stats["matches_dropped"] == dropped + 10)
    assert len(pool.startd.claims) == 1
    q = await pool.stub(Role.READ).QueryJobs(spb.JobQueryRequest(projection=["JobStatus"]))
    assert [ad_from_pb(a).get_value("JobStatus") for a in q.jobs] == [2] * n


async def test_claims_and_activations_go_to_a_startd_in_requests_of_a_size(
    pool: Pool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(service_calls, "PER_STARTD_REQUEST", 2)
    sub = "executable = /bin/sleep\narguments = 60\nqueue 5\n"
    acid = await alices_autocluster(pool, sub)
    claim_ids = [f"<{pool.startd_address}>#1#{k}#s{k}" for k in range(5)]
    await pool.stub(Role.NEGOTIATOR).Matches(matches_request(pool, "five", acid, claim_ids))
    await until(lambda: sum(len(a.activations) for a in pool.startd.activations) == 5)
    assert sorted(len(c.claims) for c in pool.startd.claims) == [1, 2, 2]
    assert sorted(c.claim_id for r in pool.startd.claims for c in r.claims) == sorted(claim_ids)
    assert all(len(a.activations) <= 2 for a in pool.startd.activations)


async def test_a_match_whose_slot_ad_does_not_decode_is_dropped_and_the_rest_claimed(
    pool: Pool, caplog: pytest.LogCaptureFixture
) -> None:
    acid = await alices_autocluster(pool, SUB)
    claim_ids = [f"<{pool.startd_address}>#1#{k}#s{k}" for k in (1, 2)]
    request = matches_request(pool, "bad-slot", acid, claim_ids, first_slot=1)
    request.matches[0].slot.attributes.add(name="Start", expression="(true &&")
    request.matches[1].slot.attributes.add(name="Start", expression="true")
    # the negotiator hears the batch was taken in; the schedd decodes the slots after
    assert (await pool.stub(Role.NEGOTIATOR).Matches(request)).received == 2
    await until(lambda: pool.svc.stats["matches_dropped"] == 1)
    await until(lambda: len(pool.startd.activations) == 1)
    (claims,) = pool.startd.claims
    assert [c.claim_id for c in claims.claims] == claim_ids[1:]
    assert "match for slot1@exec1 dropped: bad slot ad" in caplog.text
    assert "Start" in caplog.text


async def test_matches_that_are_not_a_message_are_refused_and_a_bad_match_is_dropped(
    pool: Pool, caplog: pytest.LogCaptureFixture
) -> None:
    acid = await alices_autocluster(pool, SUB)
    call = pool.raw_call(Role.NEGOTIATOR, "Matches", spb.MatchesReply)
    for bad, why in ((b"\xff\xff\xff\xff", "corrupt"), (b"\x0a\x02\xff\xfe", "UTF-8")):
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await call(bad)
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "/mockpool.v1.Schedd/Matches: the request is not a valid message" in (
            err.value.details() or ""
        )
        assert why in (err.value.details() or "")
    # a match entry that is not a Match: taken in, dropped, the others claimed
    claim_ids = [f"<{pool.startd_address}>#1#{k}#s{k}" for k in (1, 2)]
    good = matches_request(pool, "one-bad", acid, claim_ids, first_slot=1).SerializeToString()
    not_a_match = frame_field(4, b"\x0a\x05ab")  # a string that runs past its entry
    assert (await call(not_a_match + good)).received == 3
    await until(lambda: pool.svc.stats["matches_dropped"] == 1)
    await until(lambda: len(pool.startd.activations) == 1)
    (claims,) = pool.startd.claims
    assert [c.claim_id for c in claims.claims] == claim_ids
    assert "match dropped: not a valid message" in caplog.text


async def test_an_unanswered_activation_holds_its_job_until_a_release_is_answered(
    pool: Pool,
) -> None:
    sub = "executable = /bin/sleep\narguments = 60\njob_lease_duration = 90\nqueue\n"
    acid = await alices_autocluster(pool, sub)
    pool.startd.lose_answers = {"ActivateClaims", "ReleaseClaims"}
    claim = f"<{pool.startd_address}>#1#1#s1"
    await pool.stub(Role.NEGOTIATOR).Matches(matches_request(pool, "m1", acid, [claim]))
    # activated at the startd, for all the schedd knows: it releases the claim, and the
    # job is not offered to the negotiator while the release goes unanswered
    await until(lambda: len(pool.startd.releases) == 1)
    assert [r.claim_ids for r in pool.startd.releases] == [[claim]]
    rr = await pool.stub(Role.NEGOTIATOR).GetResourceRequests(spb.ResourceRequestsRequest())
    assert list(rr.requests) == []
    unanswered = [e for e in pool.ctx.events.drain() if e["kind"] == "activate_unanswered"]
    assert [e["job"] for e in unanswered] == ["1.0"]
    # the release is sent again a keepalive period (90 / 3 = 30 s) later; answered now
    pool.startd.lose_answers = set()
    await pool.clock.advance(30)
    await until(lambda: len(pool.startd.releases) == 2)
    await until(lambda: pool.svc.cores["schedd1"].status()["reserved"] == 0)
    rr = await pool.stub(Role.NEGOTIATOR).GetResourceRequests(spb.ResourceRequestsRequest())
    assert [ad_from_pb(r).get_value("ResourceRequestCount") for r in rr.requests] == [1]


async def test_a_schedd_whose_timers_raise_is_ticked_again_ten_seconds_later(
    pool: Pool, caplog: pytest.LogCaptureFixture
) -> None:
    driver = pool.svc.drivers["schedd1"]
    real_tick, failures = driver.tick, []

    def tick_once_failing(now: float):  # type: ignore[no-untyped-def]
        if not failures:
            failures.append(now)
            raise RuntimeError("a bug in a timer")
        return real_tick(now)

    driver.tick = tick_once_failing  # type: ignore[method-assign]
    await pool.stub(Role.SUBMIT).Submit(
        spb.SubmitRequest(description=SUB, source="job.sub", owner="alice", request_id="t1")
    )
    sent = len(pool.collector.updates)
    await pool.clock.advance(5)  # the ads' round (SCHEDD_MIN_INTERVAL after the submit) fails
    await until(lambda: failures == [5.0])
    assert "schedd1: timers failed" in caplog.text
    await pool.clock.advance(10)  # tried again at 15: the loop lives on
    await until(lambda: len(pool.collector.updates) > sent)


async def test_a_schedd_that_crashes_with_a_claim_request_out_hears_nothing_of_it(
    pool: Pool,
) -> None:
    """Its work in flight goes with it; the schedd started again from its queue file under
    the same name counts its requests from 1 again, and is not told the old answer."""
    pool.startd.answer_claims = asyncio.Event()
    await pool.stub(Role.SUBMIT).Submit(spb.SubmitRequest(description=SUB, owner="alice"))
    rr = await pool.stub(Role.NEGOTIATOR).GetResourceRequests(spb.ResourceRequestsRequest())
    acid = ad_from_pb(rr.requests[0]).get_value("AutoClusterId")
    claim_ids = [f"<{pool.startd_address}>#1#{n}#s{n}" for n in (1, 2)]
    await pool.stub(Role.NEGOTIATOR).Matches(matches_request(pool, "m1", acid, claim_ids))
    await until(lambda: len(pool.startd.claims) == 1)  # asked; the startd holds its answer
    pool.svc.crash_daemon("schedd1")
    pool.svc.restart_daemon("schedd1")
    pool.ctx.events.drain()
    sent = len(pool.collector.updates)
    pool.startd.answer_claims.set()
    # the restarted schedd's ad round runs (SCHEDD_INTERVAL after its start: 300); no
    # claim comes to it meanwhile
    await pool.clock.advance(300)
    await until(lambda: len(pool.collector.updates) > sent)
    core = pool.svc.cores["schedd1"]
    assert core.status()["running"] == 0 and core.claims == {}
    assert "claim_held" not in [e["kind"] for e in pool.ctx.events.drain()]
    assert pool.startd.activations == []


async def test_events_a_crash_kept_in_the_queue_file_are_handed_over_once(
    pool: Pool, tmp_path: Path
) -> None:
    """kill -9 between two gatherings: the events since the last one are gone from the
    actor's memory but were committed with the queue changes they describe. The actor
    started again on the same folder hands over exactly those (the launcher's marks say
    what it gathered), and the dead schedd's file read from outside gives the same."""
    from mockpool.schedd.stored import read_stored_queue

    await pool.stub(Role.SUBMIT).Submit(
        spb.SubmitRequest(description=SUB, source="job.sub", owner="alice", request_id="r1")
    )
    admin = pool.stub(Role.ADMIN)

    async def hold(job: str) -> list[dict[str, Any]]:
        await admin.Act(spb.ActRequest(action="hold", job_ids=[job], owner="alice"))
        return [e for e in pool.ctx.events.drain() if "_seq" in e]

    gathered = await hold("1.0")  # the launcher's last gathering
    assert [e["kind"] for e in gathered] == ["hold"]
    mark = gathered[-1]["_seq"]
    lost = await hold("1.1")  # committed, never gathered: the process dies here
    assert [e["kind"] for e in lost] == ["hold"] and lost[0]["_seq"] > mark

    stored = read_stored_queue(tmp_path / "schedd1.sqlite", "schedd1", mark)
    assert [(e["kind"], e["_seq"]) for e in stored.events] == [("hold", lost[0]["_seq"])]

    ctx = DaemonContext(
        clock=pool.clock,
        config=parse_config("", "<test>"),
        secret=pool.secret,
        collector_address="",
        events=EventLog(pool.clock),
        state_dir=tmp_path,
    )
    again = ScheddService(ctx, ["schedd1"])  # the restarted actor, on the same folder
    try:
        assert again.event_marks() == {"schedd1": lost[0]["_seq"]}
        handed = again.stored_events({"schedd1": mark})
        assert [(e["kind"], e["_seq"], e["job"]) for e in handed] == [
            ("hold", lost[0]["_seq"], "1.1")
        ]
        # gathered up to its last event: nothing is handed over twice
        assert again.stored_events({"schedd1": lost[0]["_seq"]}) == []
        # a pool that never gathered from it (a folder an older pool left) takes nothing
        assert again.stored_events({}) == []
    finally:
        for core in again.cores.values():
            core.queue.close()


async def test_a_caller_of_the_schedds_own_process_is_handed_its_own_copies(pool: Pool) -> None:
    """The schedd's CEDAR listener (this actor) asks QueryJobs and History for objects:
    the job ads and the schedd ad come as they are, not as a message, equal to what the
    message decodes to, and each is the caller's own (changing one changes nothing the
    queue holds)."""
    from mockpool.auth import Principal
    from mockpool.cedar.servicers import call_servicer

    await pool.stub(Role.SUBMIT).Submit(
        spb.SubmitRequest(description=SUB, source="job.sub", owner="alice", request_id="r1")
    )
    reader = Principal(Role.READ, "reader")
    request = spb.JobQueryRequest(schedd_name="schedd1", constraint="JobStatus == 1")
    message = await call_servicer(reader, pool.svc, "QueryJobs", request)
    handed = await call_servicer(reader, pool.svc, "QueryJobs", request, handover=True)
    assert isinstance(handed, rpc.Handover) and not isinstance(message, rpc.Handover)
    ads, schedd_ad = handed.value
    assert len(ads) == 2 and ads == [ad_from_pb(j) for j in message.jobs]
    assert schedd_ad == ad_from_pb(message.schedd)
    ads[0]["JobStatus"] = 5
    again = await pool.stub(Role.READ).QueryJobs(spb.JobQueryRequest(constraint="JobStatus == 5"))
    assert list(again.jobs) == []
    await pool.stub(Role.ADMIN).Act(spb.ActRequest(action="remove", job_ids=["1"], owner="alice"))
    history = spb.JobQueryRequest(schedd_name="schedd1")
    done, _ = (await call_servicer(reader, pool.svc, "History", history, handover=True)).value
    assert sorted(j.eval("ProcId") for j in done) == [0, 1]
