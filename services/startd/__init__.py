"""The startd: machines and slots (static, partitionable, dynamic), claims, running jobs.

- :mod:`.slots`: one slot's policy, state, claim and time accounting, and its ads.
- :mod:`.machine`: :class:`Machine`, the pure core of one execute machine (``now`` is
  always passed in; nothing here reads a clock or touches the network).
- :mod:`.service`: ``StartdService``, the gRPC shell hosting many machines (import it
  from there: it pulls in gRPC, the core does not).
"""

from .grants import (
    ActivationGrant,
    ClaimGrant,
    ClaimRefusedError,
    InvalidJobError,
    JobExitRecord,
    LeaseExpiry,
    Release,
    StartdError,
    Tick,
    UnknownClaimError,
)
from .machine import Machine

__all__ = [
    "ActivationGrant",
    "ClaimGrant",
    "ClaimRefusedError",
    "InvalidJobError",
    "JobExitRecord",
    "LeaseExpiry",
    "Machine",
    "Release",
    "StartdError",
    "Tick",
    "UnknownClaimError",
]
