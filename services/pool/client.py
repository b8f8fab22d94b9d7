"""A user's client of a running pool: what condor_submit, condor_q, condor_status,
condor_rm/hold/release and condor_history talk to, over gRPC with the pool's token.

Schedds are found the way HTCondor tools find them: from their "Scheduler" ads in the
collector (``MyAddress``). Errors from the pool come back as :class:`PoolError` with the
daemon's message (the bad line of a submit file, an unknown job id, ...).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import grpc
import grpc.aio

from .. import rpc
from ..claimid import from_sinful
from ..classad import ClassAd
from ..schedd.submit import SubmitError, SubmitInputs
from ..v1 import (
    collector_pb2,
    collector_pb2_grpc,
    negotiator_pb2,
    negotiator_pb2_grpc,
    schedd_pb2,
    schedd_pb2_grpc,
)
from ..wire import ad_from_pb, ads_from_pb
from .submit_files import SubmitFileError, read_submit_inputs

TIMEOUT = 30.0


class PoolError(RuntimeError):
    """A call the pool refused or could not answer; the message says why."""

    def __init__(self, message: str, code: grpc.StatusCode | None = None) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class ActResult:
    job_id: str
    ok: bool
    error: str


class PoolClient:
    """Async client; make it (and use it) on one event loop. ``await client.close()``."""

    def __init__(self, collector_address: str, token: str) -> None:
        self.collector_address = collector_address
        self._channel = rpc.make_channel(collector_address, token)
        self._token = token
        self._collector = collector_pb2_grpc.CollectorStub(self._channel)
        self._peers: dict[str, grpc.aio.Channel] = {}  # the schedds and the negotiator
        self.last_schedd: tuple[str, str] | None = None  # (name, host:port): tools' errors

    async def close(self) -> None:
        await self._channel.close()
        for ch in self._peers.values():
            await ch.close()
        self._peers.clear()

    async def _call(self, method, request):  # type: ignore[no-untyped-def]
        try:
            return await rpc.call(method, request, timeout=TIMEOUT)
        except grpc.aio.AioRpcError as e:
            raise PoolError(e.details() or str(e.code()), e.code()) from None

    # ------------------------------------------------------------- negotiator
    async def _negotiator(self) -> negotiator_pb2_grpc.NegotiatorStub:
        """The negotiator, where its ad says it is (as condor_userprio finds it); the
        collector's server, which hosts it, while it has not advertised yet."""
        ads = await self.query("Negotiator", projection=["MyAddress"])
        address = from_sinful(str(ads[0].get_value("MyAddress", ""))) if ads else ""
        if not address or address == self.collector_address:
            return negotiator_pb2_grpc.NegotiatorStub(self._channel)
        return negotiator_pb2_grpc.NegotiatorStub(self._peer(address))

    def _peer(self, address: str) -> Any:
        ch = self._peers.get(address)
        if ch is None:
            ch = self._peers[address] = rpc.make_channel(address, self._token)
        return ch

    async def userprio(
        self, action: str = "", name: str = "", value: float = 0.0
    ) -> tuple[list[ClassAd], float]:
        """condor_userprio: the Accounting ads after ``action`` (setfactor, setprio,
        resetusage, delete; "" only reads), and the negotiator's pool time."""
        reply = await self._call(
            (await self._negotiator()).UserPrio,
            negotiator_pb2.UserPrioRequest(action=action, name=name, value=value),
        )
        return ads_from_pb(reply.ads), reply.now

    # ------------------------------------------------------------- collector
    async def query(
        self, ad_type: str, constraint: str = "", projection: Sequence[str] = ()
    ) -> list[ClassAd]:
        reply = await self._call(
            self._collector.Query,
            collector_pb2.QueryRequest(
                ad_type=ad_type, constraint=constraint, projection=list(projection)
            ),
        )
        return ads_from_pb(reply.ads)

    async def schedd_address(self, name: str = "") -> tuple[str, str]:
        """(name, host:port) of the schedd called ``name`` (any one if empty)."""
        ads = await self.query("Scheduler", projection=["Name", "MyAddress"])
        if not ads:
            raise PoolError("no schedd has advertised itself to the collector yet")
        for ad in sorted(ads, key=lambda a: str(a.get_value("Name", ""))):
            ad_name = str(ad.get_value("Name", ""))
            if not name or ad_name.lower() == name.lower():
                return ad_name, from_sinful(str(ad.get_value("MyAddress", "")))
        known = ", ".join(sorted(str(a.get_value("Name", "")) for a in ads))
        raise PoolError(f"no schedd named {name!r} (known: {known})", grpc.StatusCode.NOT_FOUND)

    async def _schedd(self, name: str, address: str = "") -> tuple[str, schedd_pb2_grpc.ScheddStub]:
        """The schedd ``name`` at ``address``, or where the collector says it is."""
        if not address:
            name, address = await self.schedd_address(name)
        self.last_schedd = (name, address)
        return name, schedd_pb2_grpc.ScheddStub(self._peer(address))

    # ------------------------------------------------------------- schedd
    async def submit(
        self,
        description: str,
        *,
        owner: str,
        schedd: str = "",
        source: str = "<submit>",
        inputs: SubmitInputs | None = None,
        address: str = "",
    ) -> tuple[int, int]:
        """Queue a description. Its item files and ``$ENV`` values are read here, on the
        user's side (relative paths from the current folder), unless ``inputs`` gives them."""
        if inputs is None:
            try:
                inputs = read_submit_inputs(description, source)
            except (SubmitError, SubmitFileError) as e:
                raise PoolError(str(e), grpc.StatusCode.INVALID_ARGUMENT) from None
        name, stub = await self._schedd(schedd, address)
        reply = await self._call(
            stub.Submit,
            schedd_pb2.SubmitRequest(
                schedd_name=name,
                request_id=rpc.request_id(),
                description=description,
                source=source,
                owner=owner,
                item_files=inputs.item_files,
                env=inputs.env,
                iwd=inputs.iwd,
            ),
        )
        return reply.cluster_id, reply.num_procs

    async def jobs(
        self,
        constraint: str = "",
        projection: Sequence[str] = (),
        *,
        schedd: str = "",
        history: bool = False,
        limit: int = 0,
        address: str = "",
    ) -> tuple[list[ClassAd], ClassAd]:
        """Jobs of schedd ``schedd`` (at ``address``: without asking the collector)."""
        name, stub = await self._schedd(schedd, address)
        req = schedd_pb2.JobQueryRequest(
            schedd_name=name, constraint=constraint, projection=list(projection), limit=limit
        )
        reply = await self._call(stub.History if history else stub.QueryJobs, req)
        return ads_from_pb(reply.jobs), ad_from_pb(reply.schedd)

    async def act(
        self,
        action: str,
        job_ids: Sequence[str] = (),
        *,
        constraint: str = "",
        reason: str = "",
        owner: str = "",
        schedd: str = "",
        address: str = "",
    ) -> list[ActResult]:
        name, stub = await self._schedd(schedd, address)
        reply = await self._call(
            stub.Act,
            schedd_pb2.ActRequest(
                schedd_name=name,
                action=action,
                job_ids=list(job_ids),
                constraint=constraint,
                reason=reason,
                owner=owner,
            ),
        )
        return [ActResult(r.job_id, r.ok, r.error) for r in reply.results]
