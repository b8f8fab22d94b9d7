"""What a schedd hands a startd of its own process instead of a message, and gets back.

In a virtual run (or an actor hosting both) the schedd's claim requests and activations
go to the startd as the schedd core's own records (``rpc.Handover``), and the startd
answers with the records the schedd core takes (``ClaimOutcome``, ``ActivationOutcome``):
no protobuf is built and no ad is encoded. The job ads are copies made at sending, as a
message would be: the schedd goes on changing its own.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from .records import ActivationRequest, ClaimRequest

__all__ = ["HandedActivations", "HandedClaims"]


@dataclass(frozen=True)
class HandedClaims:
    """A RequestClaims call's content (startd.proto RequestClaimsRequest)."""

    request_id: str
    schedd_name: str
    schedd_address: str
    claims: list[ClaimRequest]

    @classmethod
    def of(
        cls, request_id: str, schedd_name: str, schedd_address: str, reqs: list[ClaimRequest]
    ) -> HandedClaims:
        claims = [dataclasses.replace(r, job_ad=r.job_ad.copy()) for r in reqs]
        return cls(request_id, schedd_name, schedd_address, claims)


@dataclass(frozen=True)
class HandedActivations:
    """An ActivateClaims call's content (startd.proto ActivateClaimsRequest)."""

    request_id: str
    activations: list[ActivationRequest]

    @classmethod
    def of(cls, request_id: str, acts: list[ActivationRequest]) -> HandedActivations:
        return cls(request_id, [dataclasses.replace(a, job_ad=a.job_ad.copy()) for a in acts])
