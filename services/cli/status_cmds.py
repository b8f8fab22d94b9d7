"""`status` (condor_status) and `userprio` (condor_userprio): their flags, the query each
flag makes of the collector or the negotiator, and the layout it prints.

condor_status' query is HTCondor's: the AND of ``-constraint``s and the mode's own
constraint (``-compact``: the partitionable and static slots; ``-sort EXPR``: ``EXPR =!=
UNDEFINED``), and the OR of the names given (``Name == N || Machine == N``; with -claimed
or -run ``RemoteUser == N``) and of -avail's or -claimed's constraint (status.cpp adds them
with addORConstraint, so ``-avail NAME`` shows the available slots *or* NAME's)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..auth import Role
from ..classad import ClassAd
from ..pool.client import PoolClient
from . import layouts, status_normal
from . import status_layout as sl
from .autoformat import format_json, format_parser, render
from .pool_cmds import POOL_HELP, _base_wall, _date_now, _width, _with_client, token_arg
from .run_cmds import fail
from .status_compact import CLAIMED_COMPACT_CONSTRAINT
from .userprio_layout import Detail, format_userprio

__all__ = ["add_status_commands", "cmd_status", "cmd_userprio", "status_query"]

AVAIL = 'State == "Unclaimed" && Cpus > 0 && Memory > 0'
CLAIMED = 'State == "Claimed"'

# the ad type each mode queries, as the collector stores it (HTCondor's MyType)
_AD_TYPES = {
    "negotiator": "Negotiator",
    "schedd": "Scheduler",
    "submitters": "Submitter",
    "any": "Any",
    "master": "DaemonMaster",
    "startd": "StartD",
    "collector": "Collector",
}
_SLOT_MODES = ("slots", "gpus", "claimed", "avail", "run")


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _mode(ns: argparse.Namespace) -> str:
    for m in (*_AD_TYPES, "gpus", "claimed", "avail", "run"):
        if getattr(ns, m, False):
            return m
    return "slots"


def status_query(ns: argparse.Namespace) -> tuple[str, str]:
    """(ad type, constraint) of a `status` command line, as condor_status builds them."""
    mode = _mode(ns)
    ands = [f"({c})" for c in ns.constraint or () if c.strip()]  # "": no constraint
    ors: list[str] = []
    claimed = mode in ("claimed", "run")
    if ns.compact and mode in _SLOT_MODES:
        ands.append(f"({CLAIMED_COMPACT_CONSTRAINT if claimed else sl.COMPACT_CONSTRAINT})")
        if mode == "avail":
            ands.append(f"({AVAIL})")
    elif mode == "avail":
        ors.append(f"({AVAIL})")
    elif claimed:
        ors.append(f"({CLAIMED})")
    for e in ns.sort or ():
        ands.append(f"({e} =!= UNDEFINED)")
    for name in ns.names:
        if claimed:
            ors.append(f"(RemoteUser == {_quote(name)})")
        else:
            ors.append(f"(Name == {_quote(name)} || Machine == {_quote(name)})")
    parts = [*ands]
    if ors:
        parts.append(ors[0] if len(ors) == 1 and not ands else "(" + " || ".join(ors) + ")")
    return _AD_TYPES.get(mode, "Machine"), " && ".join(parts)


def _totals_of(table: str) -> str:
    """The summary of a layouts.py table (headings, blank, rows, blank, summary)."""
    parts = table.split("\n\n", 2)
    return parts[2] if len(parts) == 3 else ""


def _gpus(ads: list[ClassAd], kw: dict[str, Any], wide: bool) -> str:
    """-gpus: the GPU slots' table, then the totals condor_status keeps for -gpus,
    PP_SLOTS_STATE's (by Activity), where status_normal.format_status_gpus ends with the
    default table's (by Arch/OpSys)."""
    text = status_normal.format_status_gpus(ads, **kw)
    gpu_slots = [ad for ad in ads if status_normal._is_gpu_slot(ad)]
    normal = status_normal._slot_totals(gpu_slots)
    if not text or not text.endswith(normal):
        return text
    return text[: -len(normal)] + sl.format_totals(gpu_slots, "state", None if wide else 14)


def _render(ns: argparse.Namespace, ads: list[ClassAd], now: float) -> str:
    mode = _mode(ns)
    keys = sl.SortKeys(ns.sort or ())
    ads = sl.status_sorted(ads, keys)
    wide = bool(ns.wide)
    width = None if wide else _width(None)
    kw: dict[str, Any] = {"width": width, "keep_order": True}
    slots_like = mode in ("slots", "avail")
    claimed = mode in ("claimed", "run")
    if ns.total:
        if ns.compact and mode in _SLOT_MODES:
            print(
                "Warning: ignoring -compact option because -total option is also set",
                file=sys.stderr,
            )
        key = None if wide else 14
        if slots_like and ns.state:
            kind = "state"
        elif slots_like and ns.server:
            kind = "server"
        elif slots_like:
            kind = "normal"
        elif claimed:
            kind = "run"
        elif mode == "gpus":
            kind = "state"  # dash_gpus totals are PP_SLOTS_STATE's
        elif mode == "startd":
            kind = "startd"
        elif mode == "schedd":
            return "\n" + _totals_of(status_normal.format_status_schedd(ads, **kw))
        elif mode == "submitters":
            return "\n" + _totals_of(status_normal.format_status_submitters(ads, **kw))
        else:
            return ""  # the daemons' and -any's layouts have no summary
        return "\n" + sl.format_totals(ads, kind, key) if ads else ""
    if ns.compact and (slots_like or claimed):
        variant = "claimed" if claimed else "state" if ns.state else "server" if ns.server else ""
        return sl.format_status_compact(
            ads, width=width, wide=wide, keys=keys, variant=variant or "normal"
        )
    if slots_like and ns.state:
        return sl.format_status_state(ads, width=width, wide=wide, keys=keys)
    if slots_like and ns.server:
        return sl.format_status_server(ads, width=width, wide=wide, keys=keys)
    if claimed:
        return sl.format_status_claimed(ads, width=width, wide=wide, keys=keys)
    if mode == "master":
        return sl.format_status_master(ads, width=width, keys=keys)
    if mode == "startd":
        return sl.format_status_startd(ads, width=width, wide=wide, keys=keys)
    if mode == "collector":
        return sl.format_status_collector(ads, width=width, wide=wide, keys=keys)
    if mode == "negotiator":
        return status_normal.format_status_negotiator(ads, **kw)
    if mode == "schedd":
        return status_normal.format_status_schedd(ads, **kw)
    if mode == "submitters":
        return status_normal.format_status_submitters(ads, **kw)
    if mode == "any":
        return status_normal.format_status_any(ads, **kw)
    if mode == "gpus":
        return _gpus(ads, kw, wide)
    return status_normal.format_status(ads, now=now, wide=wide, **kw)


def cmd_status(ns: argparse.Namespace) -> int:
    if ns.limit is not None and ns.limit < 0:
        return fail(f"status -limit: {ns.limit} is not a count of ads", 2)
    try:
        sl.SortKeys(ns.sort or ())
    except sl.LayoutError as e:
        return fail(f"status: {e}", 2)
    ad_type, constraint = status_query(ns)

    async def body(c: PoolClient, info: dict[str, Any]) -> str:
        ads = await c.query(ad_type, constraint)
        if ns.limit:  # the collector's result limit: the first N ads it holds
            ads = ads[: ns.limit]
        if ns.printmask is not None or ns.json or ns.long:
            ads = sl.status_sorted(ads, sl.SortKeys(ns.sort or ()))
        if ns.printmask is not None:  # -af, -format: no headings, no totals
            return render(ns.printmask, ads, now=_date_now(info))
        if ns.json:
            return format_json(ads)
        if ns.long:
            return layouts.format_long(ads)
        return _render(ns, ads, _date_now(info))

    print(_with_client(ns, Role.READ, body), end="")
    return 0


# ----------------------------------------------------------------------------- userprio


def _detail(ns: argparse.Namespace) -> Detail:
    return Detail(
        all=ns.all,
        usage=ns.usage,
        priority=ns.priority,
        quotas=ns.quotas,
    )


def cmd_userprio(ns: argparse.Namespace) -> int:
    action, name, value = "", "", 0.0
    if ns.setfactor:
        action, name, value = "setfactor", ns.setfactor[0], ns.setfactor[1]
    elif ns.setprio:
        action, name, value = "setprio", ns.setprio[0], ns.setprio[1]
    elif ns.resetusage:
        action, name = "resetusage", ns.resetusage
    elif ns.resetall:
        action = "resetall"
    elif ns.delete:
        action, name = "delete", ns.delete
    if action in ("setfactor", "setprio"):
        try:
            value = float(value)
        except ValueError:
            return fail(f"userprio -{action}: {value!r} is not a number", 2)

    async def body(c: PoolClient, info: dict[str, Any]) -> str:
        ads, now = await c.userprio(action, name, value)
        if action == "resetall":
            return "The accumulated usage was reset for all users\n"
        if action == "setfactor":
            return f"The priority factor of {name} was set to {value:f}\n"
        if action == "setprio":
            return f"The priority of {name} was set to {value:f}\n"
        if action == "resetusage":
            return f"The accumulated usage of {name} was reset\n"
        if action == "delete":
            return f"The accountant record named {name} was deleted\n"
        if ns.printmask is not None:  # -af: a row per record (PrintModularAds)
            return render(ns.printmask, ads, now=_base_wall(info) + now)
        if ns.long:
            return layouts.format_long(ads)
        base = _base_wall(info)
        last = max(
            (a.eval("LastUpdate") for a in ads if isinstance(a.eval("LastUpdate"), int)), default=0
        )
        return format_userprio(
            ads,
            now_wall=base + now,
            last_update_wall=last or base,
            all_users=ns.allusers,
            detail=_detail(ns),
            rollup=ns.grouprollup,
        )

    # Listing is reading; changing the accountant is the administrator's (as condor_userprio).
    print(_with_client(ns, Role.ADMIN if action else Role.READ, body), end="")
    return 0


# ----------------------------------------------------------------------------- parsers


def _pool_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("-pool", "--pool", metavar="HOST:PORT|DIR", help=POOL_HELP)
    token_arg(p)


def add_status_commands(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = format_parser(sub, "status", help="condor_status: slots and daemons")
    p.add_argument("names", nargs="*", help="machines or slots (Name or Machine)")
    p.add_argument("-long", "-l", "--long", action="store_true", dest="long")
    p.add_argument("-json", "--json", action="store_true", help="the ads as a JSON list")
    p.add_argument("-constraint", "--constraint", action="append", metavar="EXPR")
    g = p.add_mutually_exclusive_group()
    g.add_argument("-negotiator", "--negotiator", action="store_true")
    g.add_argument("-schedd", "--schedd", action="store_true")
    g.add_argument("-submitters", "--submitters", action="store_true")
    g.add_argument("-any", "--any", action="store_true", help="every ad: MyType, TargetType, Name")
    g.add_argument("-gpus", "--gpus", action="store_true", help="the slots with GPUs")
    g.add_argument("-master", "--master", action="store_true", help="the masters' ads")
    g.add_argument("-startd", "--startd", action="store_true", help="the startd daemons' ads")
    g.add_argument("-collector", "--collector", action="store_true", help="the collector's ad")
    g.add_argument("-claimed", "--claimed", action="store_true", help="the claimed slots")
    g.add_argument("-run", "--run", action="store_true", help="the claimed slots (as -claimed)")
    g.add_argument("-avail", "--avail", action="store_true", help="the slots free to run a job")
    s = p.add_mutually_exclusive_group()
    s.add_argument("-state", "--state", action="store_true", help="the slots' states and times")
    s.add_argument("-server", "--server", action="store_true", help="memory, disk, mips, kflops")
    p.add_argument("-compact", "--compact", action="store_true", help="a row per machine")
    p.add_argument("-total", "--total", action="store_true", help="only the totals")
    p.add_argument("-wide", "--wide", action="store_true", help="neither crop nor cut lines")
    p.add_argument("-sort", "--sort", action="append", metavar="EXPR", help="sort by EXPR")
    p.add_argument("-limit", "--limit", type=int, metavar="N", help="at most N ads")
    _pool_arg(p)
    p.set_defaults(func=cmd_status)

    p = format_parser(sub, "userprio", help="condor_userprio: user priorities and group quotas")
    p.add_argument(
        "-allusers", "--allusers", action="store_true", help="also users not active in the last day"
    )
    p.add_argument("-all", "--all", action="store_true", help="every column")
    p.add_argument("-usage", "--usage", action="store_true", help="the usage columns")
    p.add_argument("-priority", "--priority", action="store_true", help="the priority columns")
    p.add_argument("-quotas", "--quotas", action="store_true", help="the group quota columns")
    p.add_argument(
        "-grouprollup", "--grouprollup", action="store_true", help="groups sum their users"
    )
    p.add_argument("-long", "-l", "--long", action="store_true", dest="long")
    e = p.add_mutually_exclusive_group()
    e.add_argument("-setfactor", "--setfactor", nargs=2, metavar=("USER", "FACTOR"))
    e.add_argument("-setprio", "--setprio", nargs=2, metavar=("USER", "PRIO"))
    e.add_argument("-resetusage", "--resetusage", metavar="USER")
    e.add_argument("-resetall", "--resetall", action="store_true", help="reset every user's usage")
    e.add_argument("-delete", "--delete", metavar="USER")
    _pool_arg(p)
    p.set_defaults(func=cmd_userprio)
