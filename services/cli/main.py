"""The `mockpool` command."""

from __future__ import annotations

import argparse
import sys

from .classad_cmds import add_classad_commands
from .config_cmds import add_config_commands
from .job_cmds import add_job_commands
from .pool_cmds import add_pool_commands
from .status_cmds import add_status_commands
from .token_cmds import add_token_commands


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="mockpool",
        description="A live, distributed mock of an HTCondor pool.",
    )
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_pool_commands(sub)
    add_job_commands(sub)
    add_status_commands(sub)
    add_token_commands(sub)
    add_classad_commands(sub)
    add_config_commands(sub)
    return ap


def main(argv: list[str] | None = None) -> int:
    ap = build_parser()
    ns = ap.parse_args(argv)
    try:
        return int(ns.func(ns) or 0)
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
