"""The schedd servicer's methods for HTCondor's queue management (qmgmt) and RESCHEDULE:
a cluster id handed out ahead of its jobs, jobs as ready-made ads, edits, a reschedule.

A mixin of :class:`.service.ScheddService` (kept apart so that module stays readable);
like the rest of the servicer it turns messages into core calls (:mod:`.readymade`) and
nothing else. The CEDAR listener (``mockpool.cedar.schedd_cmds``) calls these methods as
the gRPC server does, with the caller's principal set.
"""

from __future__ import annotations

import errno
import logging
from typing import TYPE_CHECKING

import grpc
import grpc.aio

from .. import turns
from ..auth import caller
from ..classad import unparse
from ..daemon import abort_invalid
from ..v1 import schedd_pb2 as spb
from ..wire import WireError, ad_from_pb
from .jobads import EditSpec, JobAdError
from .queue import QueueError
from .records import ScheddError
from .submit import SubmitError

if TYPE_CHECKING:
    from .service import ScheddService

__all__ = ["QmgmtMethods"]

log = logging.getLogger(__name__)

# errno -> the status a refusal is answered with
_STATUS = {
    errno.EACCES: grpc.StatusCode.PERMISSION_DENIED,
    errno.ENOENT: grpc.StatusCode.NOT_FOUND,
}


def _texts(msg: object) -> dict[str, str]:
    """An ad's attributes as the queue stores them: name -> expression text."""
    return {name: unparse(expr) for name, expr in ad_from_pb(msg).pairs()}  # type: ignore[arg-type]


async def _refuse(context: grpc.aio.ServicerContext, exc: JobAdError) -> None:
    code = _STATUS.get(exc.errno, grpc.StatusCode.INVALID_ARGUMENT)
    await context.abort(code, str(exc))


class QmgmtMethods:
    """NewCluster, SubmitJobAds, Edit and Reschedule (mixed into ``ScheddService``)."""

    async def NewCluster(
        self: ScheddService, request: spb.NewClusterRequest, context: grpc.aio.ServicerContext
    ) -> spb.NewClusterReply:
        core = await self._core(request.schedd_name, context)
        return spb.NewClusterReply(cluster_id=core.reserve_cluster())

    async def SubmitJobAds(
        self: ScheddService, request: spb.SubmitJobAdsRequest, context: grpc.aio.ServicerContext
    ) -> spb.SubmitReply:
        driver = await self._driver(request.schedd_name, context)
        await turns.own_turn()  # thousands of ads in one transaction: a loop round apart
        try:
            cluster_ad = _texts(request.cluster)
            proc_ads = [_texts(p) for p in request.procs]
        except WireError as exc:
            await abort_invalid(context, f"SubmitJobAds: {exc}")
        try:
            (cluster, n), ready = driver.submit_ads(
                self.ctx.clock.now(),
                caller(),
                int(request.cluster_id),
                cluster_ad,
                proc_ads,
                request_id=request.request_id or None,
            )
        except PermissionError as exc:
            await context.abort(grpc.StatusCode.PERMISSION_DENIED, str(exc))
        except JobAdError as exc:
            await _refuse(context, exc)
        except SubmitError as exc:
            await abort_invalid(context, str(exc))
        except QueueError as exc:
            log.error("%s: job ads not stored: %s", driver.name, exc)
            await context.abort(grpc.StatusCode.INTERNAL, f"job not queued: {exc}")
        self._act(driver, ready)
        return spb.SubmitReply(cluster_id=cluster, num_procs=n)

    async def Edit(
        self: ScheddService, request: spb.EditRequest, context: grpc.aio.ServicerContext
    ) -> spb.EditReply:
        driver = await self._driver(request.schedd_name, context)
        specs = [
            EditSpec(tuple(e.job_ids), e.constraint, e.name, None if e.delete else e.value)
            for e in request.edits
        ]
        try:
            matched, ready = driver.edit(
                self.ctx.clock.now(), caller(), specs, check_only=request.check_only
            )
        except JobAdError as exc:
            await _refuse(context, exc)
        except ScheddError as exc:  # a constraint that does not parse, or costs too much
            await abort_invalid(context, str(exc))
        except QueueError as exc:
            log.error("%s: edit not stored: %s", driver.name, exc)
            await context.abort(grpc.StatusCode.INTERNAL, f"edit not stored: {exc}")
        self._act(driver, ready)
        return spb.EditReply(matched=matched)

    async def Reschedule(
        self: ScheddService,
        request: spb.ScheddRescheduleRequest,
        context: grpc.aio.ServicerContext,
    ) -> spb.ScheddRescheduleReply:
        """HTCondor's RESCHEDULE: the schedd's ads go out as soon as SCHEDD_MIN_INTERVAL
        allows, and a negotiation cycle is asked for after them."""
        driver = await self._driver(request.schedd_name, context)
        self._act(driver, driver.expedite(self.ctx.clock.now()))  # wakes the loop
        return spb.ScheddRescheduleReply()
