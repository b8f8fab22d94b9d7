"""The negotiator's CEDAR commands: what ``htcondor2.Negotiator`` and condor_userprio ask.

From HTCondor's matchmaker.cpp (its command handlers) and Accountant.cpp (ReportState):

- GET_PRIORITY (READ; GET_PRIORITY_ROLLUP: groups sum their users and subgroups): an
  empty request; the reply is one ad without its type strings (``PUT_CLASSAD_NO_TYPES``)
  holding ``LastUpdate``, ``NumSubmittors`` (the entries) and each accounting entry's
  attributes numbered from 1, ``Name1``, ``Priority1``, ...: the groups first, breadth
  first from ``<none>``, then the submitters. ``Priority`` is the effective priority.
- GET_RESLIST (READ): a submitter's name; the reply (no type strings) numbers the slots
  it holds, ``Name<n>`` (``slot@startd-address``, Accountant::GetResourceName) and
  ``StartTime<n>``; a group's is empty, as HTCondor's.
- SET_PRIORITY, SET_ACCUMUSAGE (name, float), SET_BEGINTIME, SET_LASTTIME (name, int),
  RESET_USAGE, DELETE_USER (name), RESET_ALL_USAGE (nothing): ADMINISTRATOR; no reply.
- SET_PRIORITYFACTOR (name, float): registered at WRITE, refused inside to a peer that is
  not an administrator (HTCondor's error 1, no user map configured); the reply is an ad
  with ``ErrorCode`` (0: done) and ``ErrorString``.
- QUERY_NEGOTIATOR_ADS, QUERY_ACCOUNTING_ADS (READ; on a negotiator's own listener: on
  the central manager's the collector answers them): a query ad, then its own ad (every
  time: its constraint is not applied, as HTCondor's) or the Accounting ads its
  Requirements select, projected, each after a 1, then a 0.

Every read and change goes through ``NegotiatorService.UserPrio``, the method the gRPC
``mockpool userprio`` calls, so its rules (ADMIN for a change, user@domain names, the
accountant's checks) are the same. GET_RESLIST reads the slot ads of the negotiator's
last cycle, which is when HTCondor's accountant records who holds what.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..classad import ClassAd, evaluate
from ..cli.userprio_layout import _rollup as rollup_groups
from ..tooltime import TOOL_RNG, wall_now
from ..v1 import negotiator_pb2 as npb
from ..wire import ads_from_pb
from .adwire import encode_ad
from .commands import QUERY_ACCOUNTING_ADS, QUERY_NEGOTIATOR_ADS
from .server import Command, CommandError, Level
from .servicers import call_servicer
from .stream import Builder

if TYPE_CHECKING:
    from ..negotiator.service import NegotiatorService

__all__ = [
    "SETTERS",
    "negotiator_commands",
    "priority_report",
    "resource_report",
]

log = logging.getLogger(__name__)

SCHED_VERS = 400
SET_PRIORITY = SCHED_VERS + 49
GET_PRIORITY = SCHED_VERS + 51
RESET_USAGE = SCHED_VERS + 58
SET_PRIORITYFACTOR = SCHED_VERS + 59
RESET_ALL_USAGE = SCHED_VERS + 60
GET_RESLIST = SCHED_VERS + 63
DELETE_USER = SCHED_VERS + 82
SET_ACCUMUSAGE = SCHED_VERS + 94
SET_BEGINTIME = SCHED_VERS + 95
SET_LASTTIME = SCHED_VERS + 96
GET_PRIORITY_ROLLUP = SCHED_VERS + 114

# each setter: its UserPrio action and what follows the submitter's name ("" nothing)
SETTERS: dict[int, tuple[str, str]] = {
    SET_PRIORITY: ("setprio", "float"),
    SET_PRIORITYFACTOR: ("setfactor", "float"),
    SET_ACCUMUSAGE: ("setaccum", "float"),
    SET_BEGINTIME: ("setbegin", "int"),
    SET_LASTTIME: ("setlast", "int"),
    RESET_USAGE: ("resetusage", ""),
    DELETE_USER: ("delete", ""),
}
_PER_ENTRY_SKIPPED = frozenset({"mytype", "negotiatorname", "lastupdate"})
_NO_ADMIN_MAP = (
    "Not an administrator and authorization maps (NEGOTIATOR_CLASSAD_USER_MAP_NAMES) is not set."
)


# ----------------------------------------------------------------------------- reports


def priority_report(accounting: Sequence[ClassAd], *, rollup: bool = False) -> ClassAd:
    """Accountant::ReportState's ad from the negotiator's Accounting ads: groups first
    (in the ads' order, breadth first), then submitters, numbered from 1; every
    attribute of an entry's ad but its type, negotiator and LastUpdate."""
    ads = rollup_groups(list(accounting)) if rollup else list(accounting)
    groups = [a for a in ads if a.eval("IsAccountingGroup") is True]
    users = [a for a in ads if a.eval("IsAccountingGroup") is not True]
    out = ClassAd()
    last = max((a.eval("LastUpdate") for a in ads if type(a.eval("LastUpdate")) is int), default=0)
    out["LastUpdate"] = last
    for k, ad in enumerate(groups + users, start=1):
        for name, expr in ad.pairs():
            if name.lower() not in _PER_ENTRY_SKIPPED:
                out[f"{name}{k}"] = expr
    out["NumSubmittors"] = len(ads)
    return out


def _accounting_name(slot: ClassAd) -> str | None:
    """Who a claimed slot is charged to: its AccountingGroup, else RemoteUser, else
    RemoteOwner (the negotiator's rule for usage)."""
    for attr in ("AccountingGroup", "RemoteUser", "RemoteOwner"):
        value = slot.eval(attr) if slot.lookup(attr) is not None else None
        if isinstance(value, str) and value:
            return value
    return None


def resource_report(slots: Sequence[ClassAd], submitter: str) -> ClassAd:
    """Accountant::ReportState(name): the Claimed slots charged to ``submitter``,
    ``Name<n>`` (``Name@StartdIpAddr``) and ``StartTime<n>`` (when the slot entered its
    Claimed state; 0 unknown). A group name (no ``@``) reports nothing."""
    out = ClassAd()
    if "@" not in submitter:
        return out
    k = 0
    for slot in slots:
        if slot.eval("State") != "Claimed" or _accounting_name(slot) != submitter:
            continue
        k += 1
        name = slot.eval("Name")
        addr = slot.eval("StartdIpAddr") if slot.lookup("StartdIpAddr") is not None else ""
        out[f"Name{k}"] = f"{name}@{addr if isinstance(addr, str) else ''}"
        start = slot.eval("EnteredCurrentState")
        out[f"StartTime{k}"] = start if type(start) is int else 0
    return out


def put_ad_no_types(reply: Builder, ad: ClassAd) -> Builder:
    """``putClassAd(.., PUT_CLASSAD_NO_TYPES)``: the count and the lines, without the two
    type strings (the client reads it with getClassAdNoTypes)."""
    lines = encode_ad(ad).lines
    reply.put_int(len(lines))
    for line in lines:
        reply.put_string(line[:-1].decode("utf-8", "surrogateescape"))
    return reply


# ----------------------------------------------------------------------------- commands


def negotiator_commands(service: NegotiatorService, *, own_ads: bool = False) -> list[Command]:
    """The negotiator's commands for a CEDAR listener; ``own_ads``: it also answers
    QUERY_NEGOTIATOR_ADS and QUERY_ACCOUNTING_ADS itself (Matchmaker's
    QUERY_ADS_commandHandler), as on a listener of its own (beside the collector, the
    collector answers them from its store)."""

    async def userprio(req: Any, action: str, name: str = "", value: float = 0.0) -> list[ClassAd]:
        request = npb.UserPrioRequest(action=action, name=name, value=value)
        peer = req.peer
        reply = await call_servicer(peer.principal, service, "UserPrio", request, peer=peer.address)
        return ads_from_pb(reply.ads)

    async def get_priority(req: Any) -> None:
        # the request is the command alone: the client's end_of_message sends nothing
        ads = await userprio(req, "")
        report = priority_report(ads, rollup=req.command == GET_PRIORITY_ROLLUP)
        await req.sock.send(put_ad_no_types(Builder(), report))

    async def get_reslist(req: Any) -> None:
        msg = await req.sock.recv()
        submitter = msg.get_string("the submitter's name")
        msg.expect_end("GET_RESLIST")
        report = resource_report(service.core.slot_ads.slots(), submitter)
        await req.sock.send(put_ad_no_types(Builder(), report))

    async def setter(req: Any) -> None:
        action, kind = SETTERS[req.command]
        msg = await req.sock.recv()
        name = msg.get_string("the submitter's name")
        value = 0.0
        if kind == "float":
            value = msg.get_float("the value")
        elif kind == "int":
            value = float(msg.get_int("the value"))
        msg.expect_end(action)
        await userprio(req, action, name, value)

    async def set_factor(req: Any) -> None:
        msg = await req.sock.recv()
        name = msg.get_string("the submitter's name")
        value = msg.get_float("the priority factor")
        msg.expect_end("SET_PRIORITYFACTOR")
        result = ClassAd()
        try:
            await userprio(req, "setfactor", name, value)
            result["ErrorCode"] = 0
        except CommandError as exc:
            code, text = _setfactor_error(exc)
            log.warning("%s: SET_PRIORITYFACTOR of %s refused: %s", service.name, name, text)
            result["ErrorCode"], result["ErrorString"] = code, text
        # htcondor2's client closes without reading it; condor_userprio reads it
        with contextlib.suppress(ConnectionError, OSError):
            await req.sock.send(Builder().put_ad(result))

    async def reset_all(req: Any) -> None:
        await userprio(req, "resetall")

    async def query_ads(req: Any) -> None:
        msg = await req.sock.recv()
        query = msg.get_ad(what="the query ad")
        msg.expect_end("the query")
        if req.command == QUERY_NEGOTIATOR_ADS:  # its own ad, whatever the constraint
            ads = [service.negotiator_ad()]
        else:
            ads = [a for a in await userprio(req, "") if _selected(query, a)]
        projection = query.eval("Projection") if query.lookup("Projection") is not None else ""
        names = projection.replace(",", " ").split() if isinstance(projection, str) else []
        reply = Builder()
        for ad in ads:
            reply.put_int(1).put_ad(ad, names or None)
        await req.sock.send(reply.put_int(0))

    out = [
        Command(GET_PRIORITY, Level.READ, get_priority),
        Command(GET_PRIORITY_ROLLUP, Level.READ, get_priority),
        Command(GET_RESLIST, Level.READ, get_reslist),
        Command(SET_PRIORITYFACTOR, Level.WRITE, set_factor),
        Command(RESET_ALL_USAGE, Level.ADMINISTRATOR, reset_all),
    ]
    out += [
        Command(number, Level.ADMINISTRATOR, setter)
        for number in SETTERS
        if number != SET_PRIORITYFACTOR
    ]
    if own_ads:
        out += [
            Command(n, Level.READ, query_ads) for n in (QUERY_NEGOTIATOR_ADS, QUERY_ACCOUNTING_ADS)
        ]
    return out


def _selected(query: ClassAd, ad: ClassAd) -> bool:
    """The query's Requirements hold for ``ad`` (as MY): true or a non-zero number."""
    if query.lookup("Requirements") is None:
        return True
    # the wall clock, as before: the command knows no pool date
    value = evaluate(query.lookup("Requirements"), ad, now=wall_now(), rng=TOOL_RNG)
    return value is True or (type(value) in (int, float) and value != 0)


def _setfactor_error(exc: CommandError) -> tuple[int, str]:
    """HTCondor's ErrorCode and ErrorString for a refused SET_PRIORITYFACTOR: a caller
    that is not an administrator is refused as HTCondor's negotiator refuses one when
    no user map grants it (1); any other refusal says why (4: "not authorized", as
    HTCondor has no code for a bad value)."""
    if getattr(exc.code, "name", "") == "PERMISSION_DENIED":
        return 1, _NO_ADMIN_MAP
    return 4, exc.details
