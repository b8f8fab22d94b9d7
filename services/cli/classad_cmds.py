"""`mockpool demo`, `mockpool eval` and `mockpool match`: the ClassAd language from the shell."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from ..classad import ClassAdSyntaxError, evaluate, matches, parse_ad, parse_ads, parse_expr
from ..classad.kernel import CompiledExpr, SlotTable, match_vector
from ..classad.tree import format_value
from ..tooltime import TOOL_RNG, wall_now


def examples_dir() -> Path:
    """examples/ of a source checkout (the demo's default ads)."""
    return Path(__file__).resolve().parent.parent.parent / "examples"


def _read_ads(path: Path) -> list:
    try:
        return parse_ads(path.read_text())
    except ClassAdSyntaxError as e:
        raise SystemExit(f"{path}:{e.line}:{e.column}: {e.reason}; expected {e.expected}") from None
    except OSError as e:
        raise SystemExit(f"cannot read {path}: {e.strerror}") from None


def _match_table(job, slots, title: str) -> int:
    console = Console()
    # the classad tools evaluate as HTCondor's do: the wall clock, a generator of their own
    now, rng = wall_now(), TOOL_RNG
    result = match_vector(job, slots, now=now, rng=rng)
    scalar = [matches(job, s, now=now, rng=rng) for s in slots]
    table = Table(title=title)
    for col in ("Name", "Arch", "Cpus", "Memory", "job Req", "slot Req", "Match", "Rank"):
        table.add_column(
            col,
            justify="right" if col in ("Cpus", "Memory", "Rank") else "left",
            no_wrap=col == "Name",
        )
    for k, s in enumerate(slots):
        jr = evaluate(job.lookup("Requirements"), job, s, now=now, rng=rng)
        sr = (
            evaluate(s.lookup("Requirements"), s, job, now=now, rng=rng)
            if s.lookup("Requirements")
            else "undefined"
        )
        table.add_row(
            str(s.get_value("Name", "?")),
            str(s.get_value("Arch", "")),
            str(s.get_value("Cpus", "")),
            str(s.get_value("Memory", "")),
            format_value(jr),
            format_value(sr) if not isinstance(sr, str) else sr,
            "[green]yes[/]" if result.matches[k] else "no",
            f"{result.rank[k]:g}",
        )
    console.print(table)
    agree = list(result.matches) == scalar
    console.print(
        f"kernel and scalar evaluator agree on every slot: {agree}; "
        f"row-by-row fallbacks: {result.fallbacks}"
    )
    return 0 if agree else 1


def cmd_demo(ns: argparse.Namespace) -> int:

    ex = Path(ns.examples) if ns.examples else examples_dir()
    job = _read_ads(ex / "job.ad")[0]
    slots = _read_ads(ex / "slots.ads")
    console = Console()
    console.print(
        f"[bold]Job[/] {job.get_value('ClusterId')}.{job.get_value('ProcId')} "
        f"Requirements = {job.lookup('Requirements')}"
    )
    rc = _match_table(job, slots, f"{len(slots)} slots from {ex / 'slots.ads'}")
    # the same job against many copies of the slots, to show the kernel's speed
    big = [slots[k % len(slots)] for k in range(ns.scale)]
    table = SlotTable.from_ads(big)
    compiled = CompiledExpr(job.lookup("Requirements"))
    now, rng = wall_now(), TOOL_RNG
    compiled.requirements_mask(table, job, now=now, rng=rng)
    t = time.perf_counter()
    reps = 10
    for _ in range(reps):
        mask = compiled.requirements_mask(table, job, now=now, rng=rng)
    dt = (time.perf_counter() - t) / reps
    console.print(
        f"numpy kernel: {len(big):,} slots in {dt * 1e3:.2f} ms "
        f"= {len(big) / dt:,.0f} (job, slot) pairs/s; {int(mask.sum()):,} match the job side"
    )
    return rc


def cmd_eval(ns: argparse.Namespace) -> int:
    my = parse_ad(Path(ns.my).read_text()) if ns.my else None
    target = parse_ad(Path(ns.target).read_text()) if ns.target else None
    try:
        expr = parse_expr(ns.expression)
    except ClassAdSyntaxError as e:
        raise SystemExit(f"mockpool eval: {e}") from None
    print(format_value(evaluate(expr, my, target, now=wall_now(), rng=TOOL_RNG)))
    return 0


def cmd_match(ns: argparse.Namespace) -> int:
    job = _read_ads(Path(ns.job))[0]
    slots = _read_ads(Path(ns.slots))
    return _match_table(job, slots, f"{ns.job} against {ns.slots}")


def add_classad_commands(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="evaluate and match the example ads, and time the kernel")
    p.add_argument("--examples", help="folder with job.ad and slots.ads (default: examples/)")
    p.add_argument("--scale", type=int, default=100_000, help="slots for the timing run")
    p.set_defaults(func=cmd_demo)
    p = sub.add_parser("eval", help="evaluate a ClassAd expression")
    p.add_argument("expression")
    p.add_argument("--my", help="file with the MY ad (old or new syntax)")
    p.add_argument("--target", help="file with the TARGET ad")
    p.set_defaults(func=cmd_eval)
    p = sub.add_parser("match", help="match a job ad against slot ads")
    p.add_argument("job")
    p.add_argument("slots")
    p.set_defaults(func=cmd_match)
