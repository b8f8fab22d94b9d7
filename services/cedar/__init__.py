"""HTCondor's wire protocol, CEDAR, server side: the pool's daemons answer HTCondor's own
clients (the ``htcondor2`` bindings, the ``htcondor`` tool) through it.

Layers, each its own module: ``framing`` (ReliSock packets), ``stream`` (values in a
message), ``adwire`` (ClassAds in a message), ``secpolicy`` and ``handshake`` (the
DC_AUTHENTICATE negotiation and sessions), ``auth_fs`` / ``auth_claim`` (FS and
CLAIMTOBE authentication), ``levels`` (authorization levels and the pool's roles),
``server`` (the asyncio listener and its command table).
"""

from .authmethod import AuthResult
from .commands import DC_AUTHENTICATE, QUERY_STARTD_ADS
from .encoding import StreamError
from .handshake import Peer
from .levels import Level
from .security import SecurityConfig
from .server import (
    CedarClosed,
    CedarRequest,
    CedarServer,
    CedarSocket,
    Command,
    CommandError,
    Limits,
)
from .stream import Builder, Message

__all__ = [
    "DC_AUTHENTICATE",
    "QUERY_STARTD_ADS",
    "AuthResult",
    "Builder",
    "CedarClosed",
    "CedarRequest",
    "CedarServer",
    "CedarSocket",
    "Command",
    "CommandError",
    "Level",
    "Limits",
    "Message",
    "Peer",
    "SecurityConfig",
    "StreamError",
]
