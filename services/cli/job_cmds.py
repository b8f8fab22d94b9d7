"""`q` (condor_q) and `history` (condor_history): the job tools, their flags and parsers.

Output is one of HTCondor's: the default batch/-nobatch table, -hold, -run, -idle,
-totals, -long, -json, -af/-format (services/cli/autoformat.py) or -better-analyze.
Without -name, -global or -submitter `q` asks the pool's first schedd (by name), as
condor_q asks the local schedd; its header names that schedd."""

from __future__ import annotations

import argparse
import re
from collections.abc import Sequence
from typing import Any

from ..auth import Role
from ..claimid import from_sinful, sinful
from ..classad import ClassAd, ClassAdSyntaxError, evaluate, format_ad, parse_expr
from ..jobstates import HELD, IDLE, RUNNING, SUSPENDED, TRANSFERRING_OUTPUT
from ..pool.client import PoolClient
from ..schedd.submit_values import quote
from ..tooltime import TOOL_RNG, wall_now
from . import analyze_layout, history_layout, layouts, q_layouts
from .autoformat import format_json, format_parser, project, render, split_attributes
from .pool_cmds import _JOB_ID, _date_now, _width, _with_client, pool_arg
from .q_layouts import format_q_mode
from .reverse_analysis import format_reverse_analyze
from .run_cmds import fail

_OWNER = re.compile(r"[^\s\"'\\,]+\Z")  # what a submit accepts as an owner name

# condor_q -run: running, transferring output or suspended; -idle; -hold
_STATUS_CLAUSES = {
    "run": f"JobStatus == {RUNNING} || JobStatus == {TRANSFERRING_OUTPUT} || JobStatus == {SUSPENDED}",
    "idle": f"JobStatus == {IDLE}",
    "hold": f"JobStatus == {HELD}",
}


def selection_constraint(constraint: str, args: Sequence[str]) -> str:
    """condor_q's selection: ``constraint`` and any of the clusters, jobs (``N``, ``N.M``)
    and owners given. Ids become integers and owners string literals, so an argument can
    select but never add to the expression; an argument that is neither is refused."""
    ids: list[str] = []
    owners: list[str] = []
    for arg in args:
        if m := _JOB_ID.match(arg):
            cluster, proc = int(m.group(1)), m.group(2)
            ids.append(
                f"(ClusterId == {cluster}" + (f" && ProcId == {int(proc)})" if proc else ")")
            )
        elif re.fullmatch(r"[\d.]+", arg):
            raise ValueError(f"{arg!r} is not a cluster or a job id (cluster.proc) in 64 bits")
        elif _OWNER.match(arg):
            owners.append(f"Owner == {quote(arg)}")
        else:
            raise ValueError(f"{arg!r} is not a cluster, a job id (cluster.proc) or an owner name")
    parts = [f"({constraint})"] if constraint else []
    if owners:
        parts.append("(" + " || ".join(owners) + ")")
    if ids:
        parts.append("(" + " || ".join(ids) + ")")
    return " && ".join(parts)


def _and(query: str, clause: str) -> str:
    return f"({clause}) && ({query})" if query else clause


def _by_id(jobs: list[ClassAd]) -> list[ClassAd]:
    def key(ad: ClassAd) -> tuple[int, int]:
        c, p = ad.get_value("ClusterId", 0), ad.get_value("ProcId", 0)
        return (c if type(c) is int else 0, p if type(p) is int else 0)

    return sorted(jobs, key=key)


def _long(jobs: list[ClassAd], attributes: str | None) -> str:
    """-long, in the order given: each ad's attributes sorted, a blank line after it;
    with -attributes only those (condor_q/condor_history -long -attributes)."""
    if not attributes:
        return "".join(layouts.format_q_long([j]) for j in jobs)
    cut = project(jobs, split_attributes(attributes))
    return "".join(format_ad(a, "old", sort=True) + "\n" for a in cut if len(a))


def _projection(ns: argparse.Namespace) -> list[str]:
    """What the query must fetch: -af's attributes (and the job id), or -attributes for
    -long/-json; nothing (every attribute) for the fixed layouts."""
    if ns.printmask is not None:
        return sorted({*ns.printmask.attributes, "clusterid", "procid"})
    if ns.attributes and (ns.long or ns.json):
        return split_attributes(ns.attributes)
    return []


async def _schedds(c: PoolClient, ns: argparse.Namespace) -> list[tuple[str, str, str]]:
    """(name, address, label) of each schedd to ask: -submitter's (those holding a
    Submitter ad of that name), every schedd for -global, else the one -name names (the
    first by name by default). The label is the header's ``-- Schedd: ...`` text."""
    if ns.submitter:
        name = ns.submitter
        wanted = name if "@" in name else None
        ads = await c.query(
            "Submitter", projection=["Name", "ScheddName", "ScheddIpAddr", "Machine"]
        )
        out = []
        for ad in sorted(ads, key=lambda a: str(a.get_value("ScheddName", ""))):
            ad_name = str(ad.get_value("Name", ""))
            if ad_name != wanted and ad_name.split("@")[0] != name:
                continue
            address = from_sinful(str(ad.get_value("ScheddIpAddr", "")))
            label = f"Submitter: {ad_name} : <{address}> : {ad.get_value('Machine', '')}"
            out.append((str(ad.get_value("ScheddName", "")), address, label))
        return out
    if ns.glob:
        ads = await c.query("Scheduler", projection=["Name", "MyAddress"])
        return [
            (str(a.get_value("Name", "")), from_sinful(str(a.get_value("MyAddress", ""))), "")
            for a in sorted(ads, key=lambda a: str(a.get_value("Name", "")))
        ]
    name, address = await c.schedd_address(ns.name or "")
    return [(name, address, "")]


def _relabel(text: str, label: str) -> str:
    """A -submitter block: condor_q's ``-- Submitter: name : <addr> : machine`` title
    where the default layouts write ``-- Schedd: name : <addr>``."""
    if not label:
        return text
    return re.sub(r"-- Schedd: .*? @ ", lambda _: f"-- {label} @ ", text, count=1)


def cmd_q(ns: argparse.Namespace) -> int:
    modes = [m for m in ("hold", "run", "idle") if getattr(ns, m)]
    if len(modes) > 1:
        return fail("q: -run and -hold/held or -idle are incompatible", 2)
    if ns.limit is not None and ns.limit <= 0:
        return fail(f"q: -limit takes a positive number of jobs, got {ns.limit}", 2)
    if ns.submitter and ns.name:
        return fail("q: cannot query both a schedd (-name) and a submitter (-submitter)", 2)
    if ns.batch and (ns.nobatch or ns.printmask is not None):
        return fail("q: -batch conflicts with -nobatch, -format and -af", 2)
    if ns.reverse and ns.better_analyze:
        return fail(
            "q: -better-analyze -reverse (the detailed per-slot analysis) is not supported"
            " here; -reverse-analyze alone prints the slots' table",
            2,
        )
    try:
        query = selection_constraint(ns.constraint or "", ns.ids)
        if modes:
            query = _and(query, _STATUS_CLAUSES[modes[0]])
        if ns.submitter:
            query = _and(query, f"Owner == {quote(ns.submitter.split('@')[0])}")
    except ValueError as e:
        return fail(f"q: {e}", 2)
    projection = _projection(ns)

    async def body(c: PoolClient, info: dict[str, Any]) -> str:
        now = _date_now(info)
        schedds = await _schedds(c, ns)
        if not schedds:
            return "All queues are empty\n" if (ns.glob or ns.submitter) else ""
        out: list[str] = []
        every: list[ClassAd] = []
        for name, address, label in schedds:
            jobs, _ = await c.jobs(
                query, projection, schedd=name, limit=ns.limit or 0, address=address
            )
            jobs = _by_id(jobs)
            if ns.json or ns.long:
                every += jobs
            elif ns.printmask is not None:
                out.append(render(ns.printmask, jobs, now=now))
            elif ns.reverse:
                banner = q_layouts._schedd_header(name, sinful(address), now)
                slots = await c.query("Machine", "")
                out.append(format_reverse_analyze(banner, jobs, slots, now=now))
            elif ns.better_analyze:
                out.append(await _analyze(c, jobs, name, address, now))
            else:
                all_jobs = (
                    jobs if not query else (await c.jobs("", schedd=name, address=address))[0]
                )
                out.append(_relabel(_table(ns, jobs, all_jobs, name, address, now, modes), label))
        if ns.json:
            return format_json(every, split_attributes(ns.attributes or "") or None)
        if ns.long:
            return _long(every, ns.attributes)
        return "".join(out)

    print(_with_client(ns, Role.READ, body), end="")
    return 0


def _table(
    ns: argparse.Namespace,
    jobs: list[ClassAd],
    all_jobs: list[ClassAd],
    name: str,
    address: str,
    now: float,
    modes: list[str],
) -> str:
    # condor_q -hold is always wide (initOutputMask); -wide never cuts at the terminal
    width = None if ns.wide or "hold" in modes else _width(80)
    total_all = q_layouts.JobTotals.of(all_jobs)
    mode = "totals" if ns.totals else (modes[0] if modes and modes[0] != "hold" else "")
    if mode:
        return format_q_mode(
            jobs,
            mode,
            schedd_name=name,
            schedd_address=sinful(address),
            now_wall=now,
            total_all=total_all,
            width=width,
        )
    return q_layouts.format_q(
        jobs,
        schedd_name=name,
        schedd_address=sinful(address),
        now_wall=now,
        batch=not ns.nobatch,
        hold=bool(modes),
        total_all=total_all,
        width=width,
    )


async def _analyze(c: PoolClient, jobs: list[ClassAd], name: str, address: str, now: float) -> str:
    """-better-analyze over the selected jobs: each job's analysis against the slots."""
    from .analysis import analyze_job

    slots = await c.query("Machine", "")
    return "".join(
        analyze_layout.format_better_analyze(
            job,
            analyze_job(job, slots, now=now),
            schedd_name=name,
            schedd_address=sinful(address),
            now_wall=now,
            width=_width(80),
        )
        for job in jobs
    )


def since_cut(jobs: list[ClassAd], since: str) -> list[ClassAd]:
    """condor_history -completedsince T: newest first, stop at the first job whose
    ``CompletionDate <= T`` is true (history.cpp's sinceExpr)."""
    expr = parse_expr(f"CompletionDate <= {since}")
    out = []
    now = wall_now()
    for ad in jobs:
        if evaluate(expr, ad, now=now, rng=TOOL_RNG) is True:
            break
        out.append(ad)
    return out


def cmd_history(ns: argparse.Namespace) -> int:
    if ns.limit is not None and ns.limit <= 0:
        return fail(f"history: -limit/-match takes a positive number of jobs, got {ns.limit}", 2)
    try:
        query = selection_constraint(ns.constraint or "", ns.ids)
        if ns.completedsince is not None:
            parse_expr(f"CompletionDate <= {ns.completedsince}")
    except ClassAdSyntaxError:
        return fail(f"history: {ns.completedsince!r} is not a valid -completedsince time", 2)
    except ValueError as e:
        return fail(f"history: {e}", 2)
    projection = _projection(ns)
    if projection and ns.completedsince is not None:
        projection = sorted({*projection, "completiondate"})
    # the schedd keeps its limit newest first: -forwards and -completedsince need them all
    server_limit = 0 if ns.forwards or ns.completedsince is not None else ns.limit or 0

    async def body(c: PoolClient, info: dict[str, Any]) -> str:
        name, _ = await c.schedd_address(ns.name or "")
        jobs, _ = await c.jobs(query, projection, schedd=name, history=True, limit=server_limit)
        if ns.completedsince is not None:
            jobs = since_cut(jobs, ns.completedsince)
        if ns.forwards:
            jobs.reverse()
        if ns.limit:
            jobs = jobs[: ns.limit]
        if ns.json:
            return format_json(jobs, split_attributes(ns.attributes or "") or None)
        if ns.printmask is not None:
            return render(ns.printmask, jobs, now=_date_now(info))
        if ns.long:
            return _long(jobs, ns.attributes)
        return history_layout.format_history(jobs, width=None if ns.wide else _width(80))

    print(_with_client(ns, Role.READ, body), end="")
    return 0


def add_job_commands(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """The `q` and `history` parsers (each a FormatArgsParser: -af and -format)."""
    p = format_parser(sub, "q", help="condor_q: the job queue")
    p.add_argument("ids", nargs="*", help="cluster, cluster.proc or owner")
    p.add_argument("-nobatch", "--nobatch", action="store_true")
    p.add_argument("-batch", "--batch", action="store_true", help="one line a batch (the default)")
    p.add_argument(
        "-hold",
        "-held",
        "--hold",
        action="store_true",
        help="held jobs: since when, code and reason",
    )
    p.add_argument("-run", "--run", action="store_true", help="running jobs and where they run")
    p.add_argument("-idle", "--idle", action="store_true", help="idle jobs and what they ask for")
    p.add_argument("-totals", "-tot", "--totals", action="store_true", help="only the totals lines")
    p.add_argument("-long", "-l", "--long", action="store_true", dest="long")
    p.add_argument("-json", "--json", action="store_true", help="the job ads as JSON")
    p.add_argument(
        "-attributes",
        "-attrs",
        "--attributes",
        metavar="A,B",
        help="only these attributes in -long and -json",
    )
    p.add_argument("-constraint", "--constraint")
    p.add_argument("-limit", "--limit", type=int, metavar="N", help="at most N jobs per schedd")
    p.add_argument(
        "-wide", "--wide", action="store_true", help="do not cut lines at the terminal width"
    )
    p.add_argument(
        "-global", "--global", action="store_true", dest="glob", help="every schedd's queue"
    )
    p.add_argument(
        "-allusers",
        "--allusers",
        action="store_true",
        help="every user's jobs (what q shows anyway: a READ token has no user of its own)",
    )
    p.add_argument("-submitter", "--submitter", metavar="NAME", help="NAME's jobs, on every schedd")
    p.add_argument(
        "-better-analyze",
        "-better-analyse",
        "--better-analyze",
        action="store_true",
        dest="better_analyze",
        help="why each selected job does (not) match",
    )
    p.add_argument(
        "-reverse-analyze",
        "-reverse",
        "--reverse",
        action="store_true",
        help="each slot's own requirements against the selected jobs",
    )
    pool_arg(p)
    p.set_defaults(func=cmd_q)

    p = format_parser(sub, "history", help="condor_history: jobs that left the queue")
    p.add_argument("ids", nargs="*", help="cluster, cluster.proc or owner")
    p.add_argument("-constraint", "--constraint")
    p.add_argument(
        "-limit",
        "-match",
        "--limit",
        "--match",
        type=int,
        metavar="N",
        dest="limit",
        help="at most N jobs",
    )
    p.add_argument("-long", "-l", "--long", action="store_true", dest="long")
    p.add_argument("-json", "--json", action="store_true", help="the job ads as JSON")
    p.add_argument(
        "-attributes", "-attrs", "--attributes", metavar="A,B", help="only these attributes"
    )
    p.add_argument(
        "-completedsince",
        "--completedsince",
        metavar="T",
        help="jobs completed after T (a Unix time or an expression)",
    )
    p.add_argument(
        "-forwards", "--forwards", action="store_true", help="oldest first (default newest first)"
    )
    p.add_argument("-backwards", "--backwards", action="store_true", help="newest first (default)")
    p.add_argument(
        "-wide", "--wide", action="store_true", help="do not cut lines at the terminal width"
    )
    pool_arg(p)
    p.set_defaults(func=cmd_history)
