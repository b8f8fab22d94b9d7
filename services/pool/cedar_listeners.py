"""The CEDAR listeners of an actor: HTCondor's own clients reach its daemons through them.

The central manager's actor listens once for its collector and negotiator (the commands
do not overlap); a negotiator of its own once; a schedd actor once per schedd, since
HTCondor's clients tell schedds apart by address. Startds have none: HTCondor's tools do
not talk to startds for what mockpool models.

Security comes from the pool's own HTCondor config, with HTCondor's knob names:
``SEC_DEFAULT_AUTHENTICATION`` (default REQUIRED: as the pool's gRPC side, every caller
authenticates), ``SEC_DEFAULT_AUTHENTICATION_METHODS`` (default ``FS, IDTOKENS``; CLAIMTOBE
only when listed), ``SEC_DEFAULT_ENCRYPTION`` and ``SEC_DEFAULT_INTEGRITY`` (default
OPTIONAL: a client that requires them gets them), ``SEC_TOKEN_MAX_AGE``. The trust domain
is the pool key's (``auth.pool_key``), so the tokens ``mockpool token create`` mints are
the ones a client picks for this pool.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any

from ..auth import pool_key
from ..cedar import CedarRequest, CedarServer, Command, Limits, SecurityConfig
from ..cedar.auth_claim import ClaimToBeAuth
from ..cedar.auth_fs import FSAuth
from ..cedar.auth_token import TokenAuth
from ..cedar.crypto import AesCrypto
from ..config import ConfigDict
from .cedar_knobs import CedarError, _level, _max_age, _methods, check_knobs, query_workers

log = logging.getLogger(__name__)

__all__ = ["CedarError", "check_knobs", "query_workers", "security_from_config", "start_listeners"]


def security_from_config(
    config: ConfigDict, secret: str, pool_user: str, *, subsystem: str
) -> SecurityConfig:
    """A listener's security as the pool's config asks (CedarError names a bad knob)."""
    material, trust_domain = pool_key(secret)
    max_age = _max_age(config)
    methods: list[Any] = []
    for name in _methods(config):
        if name == "FS" and not any(isinstance(m, FSAuth) for m in methods):
            methods.append(FSAuth())
        elif name in ("IDTOKENS", "TOKEN", "TOKENS") and not any(
            isinstance(m, TokenAuth) for m in methods
        ):
            methods.append(
                TokenAuth({"POOL": material}, trust_domain=trust_domain, max_age=max_age)
            )
        elif name == "CLAIMTOBE" and not any(isinstance(m, ClaimToBeAuth) for m in methods):
            methods.append(ClaimToBeAuth())
    return SecurityConfig(
        methods=tuple(methods),
        authentication=_level(config, "SEC_DEFAULT_AUTHENTICATION", "REQUIRED"),
        encryption=_level(config, "SEC_DEFAULT_ENCRYPTION", "OPTIONAL"),
        integrity=_level(config, "SEC_DEFAULT_INTEGRITY", "OPTIONAL"),
        crypto=AesCrypto(),
        pool_user=pool_user,
        trust_domain=trust_domain,
        subsystem=subsystem,
    )


def _commands(services: Iterable[Any], workers: list[Any], config: ConfigDict) -> list[Command]:
    from ..cedar.collector_cmds import collector_commands
    from ..cedar.negotiator_cmds import negotiator_commands
    from ..cedar.query_worker import QueryWorker
    from ..collector.service import CollectorService
    from ..negotiator.service import NegotiatorService

    out: list[Command] = []
    services = list(services)
    # a negotiator on a listener of its own answers queries for its ads itself
    alone = not any(isinstance(s, CollectorService) for s in services)
    for s in services:
        if isinstance(s, CollectorService):
            worker = QueryWorker(s.store, name=s.name) if query_workers(config) else None
            if worker is not None:
                workers.append(worker)
            out += collector_commands(s, worker)
        elif isinstance(s, NegotiatorService):
            out += negotiator_commands(s, own_ads=alone)
    return out


def _gated(commands: list[Command], gate: Callable[[], Awaitable[None]] | None) -> list[Command]:
    """Each command waits at ``gate`` first: a paused daemon (a ``pause`` fault, as a
    SIGSTOPped process) answers no one, HTCondor's clients included, until it resumes."""
    if gate is None:
        return commands

    def wrap(handler: Callable[[CedarRequest], Awaitable[None]]) -> Any:
        async def gated(req: CedarRequest) -> None:
            await gate()
            await handler(req)

        return gated

    return [dataclasses.replace(c, handler=wrap(c.handler)) for c in commands]


async def start_listeners(
    role: str,
    services: Sequence[Any],
    config: ConfigDict,
    secret: str,
    pool_user: str,
    *,
    host: str,
    port: int = 0,
    gate: Callable[[], Awaitable[None]] | None = None,
    limits: Limits | None = None,
) -> dict[str, CedarServer]:
    """Start the actor's listeners: ``{"": server}`` for a central manager or negotiator
    (on ``port``: a restarted central manager comes back where clients look), ``{schedd
    name (lower case): server}`` for a schedd actor. ``limits``: DaemonCore's timeouts
    unless given (a fuzz shortens them)."""
    servers: dict[str, CedarServer] = {}
    try:
        if role in ("central", "negotiator"):
            subsystem = "COLLECTOR" if role == "central" else "NEGOTIATOR"
            security = security_from_config(config, secret, pool_user, subsystem=subsystem)
            workers: list[Any] = []
            commands = _commands(services, workers, config)
            server = CedarServer(
                _gated(commands, gate), security, name=f"{role} CEDAR", limits=limits
            )
            for worker in workers:  # the collector's queries answered outside its loop
                server.counts.query_worker = worker.counts  # the host's status shows them
                worker.start()
                server.closers.append(worker.stop)
            servers[""] = server
            await server.start(host, port)
        elif role == "schedd":
            from ..cedar.schedd_cmds import schedd_commands

            security = security_from_config(config, secret, pool_user, subsystem="SCHEDD")
            (service,) = services
            for key, core in service.cores.items():
                commands = _gated(schedd_commands(service, core.name), gate)
                server = CedarServer(commands, security, name=f"{core.name} CEDAR", limits=limits)
                await server.start(host, 0)
                servers[key] = server
    except BaseException:
        for server in servers.values():
            await server.stop()
        raise
    return servers
