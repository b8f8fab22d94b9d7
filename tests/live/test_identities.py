"""Identities on a live pool: a user's token acts as that user only; a daemon's token as
that daemon only; the Python API (an ADMIN token) still acts for everyone."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Awaitable, Callable, Iterator
from typing import TypeVar

import grpc
import pytest

from mockpool import Pool, rpc
from mockpool.auth import Role
from mockpool.claimid import from_sinful
from mockpool.pool.client import PoolClient, PoolError
from mockpool.v1 import schedd_pb2, schedd_pb2_grpc, startd_pb2, startd_pb2_grpc

pytestmark = [pytest.mark.live, pytest.mark.slow]

T = TypeVar("T")
LONG = (
    "executable = /bin/sleep\narguments = 100000\nrequest_cpus = 1\nrequest_memory = 100\nqueue 1\n"
)


@pytest.fixture(scope="module")
def pool(ray_session: None) -> Iterator[Pool]:
    with Pool(time_scale=10) as p:
        yield p


def as_user(pool: Pool, token: str, body: Callable[[PoolClient], Awaitable[T]]) -> T:
    """Run ``body`` with a client holding ``token`` (on its own event loop)."""

    async def go() -> T:
        client = PoolClient(pool.collector_address, token)
        try:
            return await body(client)
        finally:
            await client.close()

    return asyncio.run(go())


def test_a_submit_token_submits_only_as_its_user(pool: Pool) -> None:
    alice = pool.make_token(Role.SUBMIT, "alice")
    cluster, _ = as_user(pool, alice, lambda c: c.submit(LONG, owner=""))
    (job,) = pool.jobs(f"ClusterId == {cluster}", ["Owner"])
    assert job.get_value("Owner") == "alice"
    with pytest.raises(PoolError) as err:
        as_user(pool, alice, lambda c: c.submit(LONG, owner="bob"))
    assert err.value.code == grpc.StatusCode.PERMISSION_DENIED
    assert "user 'alice' may not submit jobs as 'bob'" in str(err.value)
    # The Python API holds an ADMIN token: it still submits as any owner.
    cluster, _ = pool.submit(LONG, owner="carol")
    assert [j.get_value("Owner") for j in pool.jobs(f"ClusterId == {cluster}")] == ["carol"]


def test_a_user_cannot_remove_or_hold_another_users_jobs(pool: Pool) -> None:
    alice = pool.make_token(Role.SUBMIT, "alice")
    bob = pool.make_token(Role.SUBMIT, "bob")
    cluster, _ = as_user(pool, alice, lambda c: c.submit(LONG, owner=""))
    jid = f"{cluster}.0"
    for action in ("remove", "hold"):
        (res,) = as_user(pool, bob, lambda c, a=action: c.act(a, [jid]))
        assert (res.ok, res.error) == (False, f"Permission denied to {action} job {jid}")
    results = as_user(pool, bob, lambda c: c.act("remove", constraint="true"))
    assert all(r.job_id != jid for r in results)
    assert len(pool.jobs(f"ClusterId == {cluster} && JobStatus != 3")) == 1  # untouched
    (res,) = as_user(pool, alice, lambda c: c.act("hold", [jid]))
    assert res.ok, res.error
    (res,) = pool.act("release", [jid])  # ADMIN: the queue superuser
    assert res.ok, res.error


def test_read_token_reads_but_never_sees_claim_ids_or_submits(pool: Pool) -> None:
    read = pool.make_token(Role.READ, "reader")
    assert as_user(pool, read, lambda c: c.query("Machine"))
    with pytest.raises(PoolError) as err:
        as_user(pool, read, lambda c: c.query("MachinePrivate"))
    assert err.value.code == grpc.StatusCode.PERMISSION_DENIED
    assert "only the negotiator or an admin may read them" in str(err.value)
    assert pool.ads("MachinePrivate")  # the ADMIN token sees them
    with pytest.raises(PoolError) as err:
        as_user(pool, read, lambda c: c.submit(LONG, owner="reader"))
    assert err.value.code == grpc.StatusCode.PERMISSION_DENIED


def test_a_claim_is_usable_only_by_the_schedd_holding_it(pool: Pool) -> None:
    cluster, _ = pool.submit(LONG, owner="dave")
    running = f"ClusterId == {cluster} && JobStatus == 2"
    assert pool.wait(lambda: len(pool.jobs(running)) == 1, timeout=120)
    # The claim id as its holder knows it (an attacker's best case): from the schedd's
    # queue file, which persists running claims.
    (queue,) = pool.state_dir.glob("schedd/*.sqlite")
    with sqlite3.connect(f"file:{queue}?mode=ro", uri=True) as db:
        claim_id, address, slot = db.execute(
            "SELECT claim_id, startd_address, slot_name FROM claims WHERE cluster = ?", (cluster,)
        ).fetchone()
    startd = from_sinful(address)
    schedd_name, schedd = as_user(pool, pool.token, lambda c: c.schedd_address())

    async def calls() -> tuple[list[str], list[str], grpc.StatusCode, grpc.StatusCode]:
        errors: list[str] = []
        oks: list[str] = []
        for identity in ("startd/startd0_0", "schedd/other"):
            token = pool.make_token(Role.DAEMON, identity)
            async with rpc.make_channel(startd, token) as ch:
                stub = startd_pb2_grpc.StartdStub(ch)
                reply = await stub.ReleaseClaims(
                    startd_pb2.ReleaseClaimsRequest(claim_ids=[claim_id])
                )
                errors += [r.error for r in reply.results if not r.ok]
                oks += [r.claim_id for r in reply.results if r.ok]
        # the negotiator's role does not talk to startds; a schedd is not the negotiator
        async with rpc.make_channel(startd, pool.make_token(Role.NEGOTIATOR, "negotiator")) as ch:
            try:
                await startd_pb2_grpc.StartdStub(ch).ReleaseClaims(
                    startd_pb2.ReleaseClaimsRequest(claim_ids=[claim_id])
                )
            except grpc.aio.AioRpcError as e:
                negotiator_code = e.code()
        own = pool.make_token(Role.DAEMON, f"schedd/{schedd_name}")
        async with rpc.make_channel(schedd, own) as ch:
            try:
                await schedd_pb2_grpc.ScheddStub(ch).Matches(
                    schedd_pb2.MatchesRequest(schedd_name=schedd_name)
                )
            except grpc.aio.AioRpcError as e:
                matches_code = e.code()
        return errors, oks, negotiator_code, matches_code

    errors, oks, negotiator_code, matches_code = asyncio.run(calls())
    assert oks == []
    assert len(errors) == 2 and all(f"is held by schedd '{schedd_name}'" in e for e in errors)
    assert negotiator_code == grpc.StatusCode.PERMISSION_DENIED
    assert matches_code == grpc.StatusCode.PERMISSION_DENIED
    # the claim and its job are untouched
    assert len(pool.jobs(running)) == 1
    # (the startd's update follows its claim by a second of pool time)
    assert pool.wait(lambda: len(pool.ads("Machine", f'Name == "{slot}"')) == 1, timeout=60)
    (again,) = pool.ads("Machine", f'Name == "{slot}"')
    assert (again.get_value("State"), again.get_value("Activity")) == ("Claimed", "Busy")
