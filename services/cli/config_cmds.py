"""``mockpool config list``: the knobs the daemons read, with HTCondor's defaults, their
types and ranges, and which daemons read them (``condor_config_val -summary`` lists a
configuration's values; this lists the table the pool spec checks them against)."""

from __future__ import annotations

import argparse

from ..config.knobs import COLLECTOR, NEGOTIATOR, SCHEDD, STARTD, knob_rows

_HEADER = ("NAME", "TYPE", "RANGE", "DAEMONS", "DEFAULT")


def cmd_config_list(ns: argparse.Namespace) -> int:
    rows = [_HEADER, *knob_rows(ns.daemon or "")]
    widths = [max(len(r[i]) for r in rows) for i in range(len(_HEADER) - 1)]
    for row in rows:
        cells = [cell.ljust(w) for cell, w in zip(row, widths, strict=False)]
        print("  ".join([*cells, row[-1]]).rstrip())
    return 0


def add_config_commands(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("config", help="the knobs mockpool's daemons read")
    csub = p.add_subparsers(dest="config_command", required=True, metavar="ACTION")
    c = csub.add_parser(
        "list",
        help="every knob: HTCondor's default, its type and range, the daemons that read it",
    )
    c.add_argument("--daemon", choices=(COLLECTOR, NEGOTIATOR, SCHEDD, STARTD))
    c.set_defaults(func=cmd_config_list)
