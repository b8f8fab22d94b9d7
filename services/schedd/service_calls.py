"""The schedd shell's requests: one function per message type a schedd core sends.

Each makes the message's RPC (protobuf) and returns the answer as the contract's reply message,
or the failure as ``Undeliverable``; the pump delivers it back to the core (the schedd
that asked: :class:`.host.ScheddHost`). No HTCondor rule here (the outcomes of a failure
are the core's).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import grpc
import grpc.aio

from .. import rpc, turns
from ..auth import Principal, Role, daemon_identity
from ..classad import ClassAd
from ..contract import Undeliverable
from ..daemon import RPC_TIMEOUT
from ..messages import (
    AdvertiseAck,
    CollectorQuery,
    NegotiatorReschedule,
    QueryReply,
    RescheduleAck,
    ScheddActivationResults,
    ScheddClaimResults,
    ScheddKeepAliveAnswer,
    ScheddReleaseResults,
    StartdActivateClaims,
    StartdKeepAlive,
    StartdReleaseClaims,
    StartdRequestClaims,
)
from ..v1 import collector_pb2 as cpb
from ..v1 import collector_pb2_grpc as cgrpc
from ..v1 import negotiator_pb2 as npb
from ..v1 import negotiator_pb2_grpc as ngrpc
from ..v1 import startd_pb2 as tpb
from ..v1 import startd_pb2_grpc as tgrpc
from ..wire import WireError, ad_from_pb, ad_to_pb
from .host import JointAdvertise, JointAnswer, ToSchedd
from .records import ActivationOutcome, ClaimOutcome, ClaimRequest

if TYPE_CHECKING:
    from .driver import ScheddDriver
    from .service import ScheddService

__all__ = ["ANSWERER", "CALLS", "PER_STARTD_REQUEST", "advertise"]

log = logging.getLogger(__name__)

# claims asked for (or activated) in one request to a startd, each with its job ad: 20,000
# in one message held the schedd's loop for 0.4 s to serialise, and its reply as long
PER_STARTD_REQUEST = 1_000
# who answered a request of ours (the core reads nothing of it)
ANSWERER = Principal(Role.DAEMON, "")


def _batches(items: list[Any], size: int) -> list[list[Any]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def _stub_for(svc: ScheddService, driver: ScheddDriver, address: str) -> tgrpc.StartdStub:
    """A stub to the startd at ``address``."""
    # Each schedd speaks to startds as itself: a claim is usable only by its holder.
    identity = daemon_identity("schedd", driver.name)
    return tgrpc.StartdStub(svc.ctx.channel(address, Role.DAEMON, identity))


async def _split(
    self,
    items: list[Any],
    call: Callable[[list[Any]], Awaitable[list[Any]]],
    msg: Any,
) -> list[Any] | Undeliverable:
    """A message's items in requests of PER_STARTD_REQUEST, concurrently; the answers
    in order (those of a failed request left out), or the failure if all failed."""
    parts = _batches(items, PER_STARTD_REQUEST)
    if len(parts) == 1:  # (the usual case: no task of its own)
        try:
            return await call(parts[0])
        except grpc.aio.AioRpcError as exc:
            return Undeliverable(msg, exc.code().name, exc.details() or "")
    results = await asyncio.gather(*(call(p) for p in parts), return_exceptions=True)
    answers: list[Any] = []
    failures = []
    for part, result in zip(parts, results, strict=True):
        if isinstance(result, grpc.aio.AioRpcError):
            failures.append(result)
            answers += [None] * len(part)
        elif isinstance(result, BaseException):
            raise result
        else:
            answers += result
    if failures and len(failures) == len(parts):
        exc = failures[0]
        return Undeliverable(msg, exc.code().name, exc.details() or "")
    return answers


async def _request_claims(
    svc: ScheddService, driver: ScheddDriver, address: str, msg: StartdRequestClaims
) -> ScheddClaimResults | Undeliverable:
    stub = _stub_for(svc, driver, address)

    async def call(reqs: list[ClaimRequest]) -> list[Any]:
        request = tpb.RequestClaimsRequest(request_id=rpc.request_id())
        async for part in turns.in_turns(reqs, turns.ADS_PER_TURN):
            for r in part:
                pb = request.claims.add(
                    claim_id=r.claim_id,
                    slot_name=r.slot_name,
                    schedd_name=msg.schedd_name,
                    schedd_address=msg.schedd_address,
                    owner=r.owner,
                    send_leftovers=r.leftovers,
                )
                ad_to_pb(r.job_ad, pb.job)
        reply = await rpc.call(stub.RequestClaims, request, timeout=RPC_TIMEOUT)
        results = list(reply.results)[: len(reqs)]
        return [_claim_outcome(driver, address, reqs[i], res) for i, res in enumerate(results)] + [
            None
        ] * (len(reqs) - len(results))

    answers = await _split(svc, msg.claims, call, msg)
    if isinstance(answers, Undeliverable):
        return answers
    return ScheddClaimResults(msg.corr, driver.name, answers)


def _claim_outcome(
    driver: ScheddDriver, address: str, req: ClaimRequest, res: tpb.ClaimResult
) -> ClaimOutcome:
    slot_ad: ClassAd | None = None
    leftover_ad: ClassAd | None = None
    try:
        if res.HasField("slot"):
            slot_ad = ad_from_pb(res.slot)
        if res.leftover_claim_id and res.HasField("leftover_slot"):
            leftover_ad = ad_from_pb(res.leftover_slot)
    except WireError as exc:
        log.warning("%s: bad slot ad from %s: %s", driver.name, address, exc)
    return ClaimOutcome(
        req.claim_id,
        res.ok,
        res.error,
        res.claim_id,
        res.slot_name,
        slot_ad,
        res.ready_time,
        res.leftover_claim_id if leftover_ad is not None else "",
        leftover_ad,
    )


async def _activate(
    svc: ScheddService, driver: ScheddDriver, address: str, msg: StartdActivateClaims
) -> ScheddActivationResults | Undeliverable:
    stub = _stub_for(svc, driver, address)

    async def call(acts: list[Any]) -> list[Any]:
        request = tpb.ActivateClaimsRequest(request_id=rpc.request_id())
        async for part in turns.in_turns(acts, turns.ADS_PER_TURN):
            for a in part:
                pb = request.activations.add(claim_id=a.claim_id)
                ad_to_pb(a.job_ad, pb.job)
        reply = await rpc.call(stub.ActivateClaims, request, timeout=RPC_TIMEOUT)
        return [ActivationOutcome(r.claim_id, r.ok, r.error, r.start_time) for r in reply.results]

    answers = await _split(svc, msg.activations, call, msg)
    if isinstance(answers, Undeliverable):
        return answers
    return ScheddActivationResults(msg.corr, driver.name, [a for a in answers if a])


async def _release(
    svc: ScheddService, driver: ScheddDriver, address: str, msg: StartdReleaseClaims
) -> ScheddReleaseResults | Undeliverable:
    request = tpb.ReleaseClaimsRequest(request_id=rpc.request_id(), claim_ids=msg.claim_ids)
    try:
        stub = _stub_for(svc, driver, address)
        await rpc.call(stub.ReleaseClaims, request, timeout=RPC_TIMEOUT)
    except grpc.aio.AioRpcError as exc:
        return Undeliverable(msg, exc.code().name, exc.details() or "")
    return ScheddReleaseResults(msg.corr, driver.name, msg.claim_ids)


async def _keepalive(
    svc: ScheddService, driver: ScheddDriver, address: str, msg: StartdKeepAlive
) -> ScheddKeepAliveAnswer | Undeliverable:
    request = tpb.KeepAliveRequest(schedd_name=msg.schedd_name, claim_ids=msg.claim_ids)
    try:
        stub = _stub_for(svc, driver, address)
        reply = await rpc.call(stub.KeepAlive, request, timeout=RPC_TIMEOUT)
    except grpc.aio.AioRpcError as exc:
        return Undeliverable(msg, exc.code().name, exc.details() or "")
    return ScheddKeepAliveAnswer(
        msg.corr, driver.name, msg.claim_ids, list(reply.unknown_claim_ids)
    )


async def _query(
    svc: ScheddService, driver: ScheddDriver, address: str, msg: CollectorQuery
) -> QueryReply | Undeliverable:
    stub = cgrpc.CollectorStub(svc.ctx.channel(address, Role.DAEMON))
    request = cpb.QueryRequest(
        ad_type=msg.ad_type, constraint=msg.constraint, projection=list(msg.projection)
    )
    try:
        reply = await rpc.call(stub.Query, request, timeout=RPC_TIMEOUT)
    except grpc.aio.AioRpcError as exc:
        return Undeliverable(msg, exc.code().name, exc.details() or "")
    return QueryReply(msg.corr, [ad_from_pb(m) for m in reply.ads])


async def _reschedule(
    svc: ScheddService, driver: ScheddDriver, address: str, msg: NegotiatorReschedule
) -> RescheduleAck | Undeliverable:
    stub = ngrpc.NegotiatorStub(svc.ctx.channel(address, Role.DAEMON))
    request = npb.RescheduleRequest(schedd_name=msg.schedd_name)
    try:
        reply = await rpc.call(stub.Reschedule, request, timeout=RPC_TIMEOUT)
    except grpc.aio.AioRpcError as exc:
        return Undeliverable(msg, exc.code().name, exc.details() or "")
    return RescheduleAck(msg.corr, reply.next_cycle)


async def advertise(svc: ScheddService, address: str, joint: JointAdvertise) -> JointAnswer:
    """The actor's schedds' ads in one Advertise; the answer, or the failure, for each."""
    request = cpb.AdvertiseRequest()
    for part in joint.parts:
        for u in part.msg.updates:
            ad_to_pb(u.ad, request.updates.add(ad_type=u.ad_type, invalidate=u.invalidate).ad)
    stub = cgrpc.CollectorStub(svc.ctx.channel(address, Role.DAEMON))
    answers: list[Any]
    try:
        reply = await rpc.call(stub.Advertise, request, timeout=RPC_TIMEOUT)
    except grpc.aio.AioRpcError as exc:
        answers = [Undeliverable(p.msg, exc.code().name, exc.details() or "") for p in joint.parts]
    else:
        errors = list(reply.errors)  # told once, by the first
        answers = [
            AdvertiseAck(p.msg.corr, reply.accepted, errors if i == 0 else [])
            for i, p in enumerate(joint.parts)
        ]
    return JointAnswer(
        [ToSchedd(p.schedd, answer) for p, answer in zip(joint.parts, answers, strict=True)]
    )


# each request a core sends: the function that makes its RPC and returns the answer
CALLS: dict[type, Callable[..., Awaitable[Any]]] = {
    StartdRequestClaims: _request_claims,
    StartdActivateClaims: _activate,
    StartdReleaseClaims: _release,
    StartdKeepAlive: _keepalive,
    CollectorQuery: _query,
    NegotiatorReschedule: _reschedule,
}
