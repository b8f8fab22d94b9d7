"""The chaos campaign: run seeded chaos pools (:mod:`.chaos`) and judge every run.

For each seed it writes the drawn spec, runs ``mockpool run SPEC --clock virtual --out
DIR`` in a child process (one past ``--timeout`` real seconds is killed: a hang is a
failure), and checks DIR as ``mockpool check DIR`` does. A seed passes when the run exits
0, DIR holds events.jsonl, summary.json and ads/, and the checker finds no violation.
It prints a line per seed and a summary of the failures grouped by signature, exits 1 if
any seed failed, and keeps each failing seed's spec, output and log for replay::

    python -m mockpool.pool.chaos --seeds 0-199 [--keep DIR] [--workers 2]
    python -m mockpool.pool.chaos --print 17 > chaos17.toml    # one seed's spec
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from .chaos import draw
from .check import CheckError, check_dir, format_report

__all__ = ["OUTPUTS", "SeedResult", "main", "parse_seeds", "run_seed"]

OUTPUTS = ("events.jsonl", "summary.json", "ads")  # what a run's folder must hold
DEFAULT_KEEP = Path("mockpool-out") / "chaos"


@dataclass(frozen=True)
class SeedResult:
    seed: int
    rc: int | None  # the run's exit status; None: killed at the timeout
    wall: float  # real seconds, run and check
    missing: tuple[str, ...] = ()  # OUTPUTS the folder lacks
    violations: tuple[str, ...] = ()  # invariants the checker found broken
    symptom: str = ""  # the run's last error line, or the checker's report
    where: str = ""  # the innermost frame of the run's traceback (file:function)

    @property
    def ok(self) -> bool:
        return self.rc == 0 and not self.missing and not self.violations and not self.symptom

    @property
    def check(self) -> str:
        if self.missing:
            return "no output" if len(self.missing) == len(OUTPUTS) else "output incomplete"
        return "clean" if not self.violations else "violations"

    @property
    def signature(self) -> str:
        """What the failure is, without the seed's own numbers and names: failures with
        one signature are one bug, most likely."""
        if self.ok:
            return ""
        if self.rc is None:
            return "timeout (the run hung)"
        if self.rc != 0:
            text = re.sub(r"\S*spec\.toml:\d+", "SPEC:N", self.symptom)
            text = re.sub(r"'[^']*'", "'_'", text)
            text = re.sub(r"\d+(\.\d+)?", "N", text)
            text = re.sub(r"(\w+N)(, \w+N)+", r"\1", text)  # a list of names: as one
            return f"exit {self.rc}: {text}" + (f" [{self.where}]" if self.where else "")
        if self.violations:
            return "check: " + ", ".join(self.violations)
        if self.missing:
            return "output lacks " + ", ".join(self.missing)
        return "check failed: " + self.symptom

    def line(self) -> str:
        rc = "hung" if self.rc is None else f"rc {self.rc}"
        text = f"seed {self.seed:5d}  {rc:7s}  {self.check:17s} {self.wall:6.1f} s"
        return text if self.ok else f"{text}  {self.signature}"


def parse_seeds(text: str) -> list[int]:
    """``0-199,250,300-310``: the seeds in that order, each once."""
    seeds: list[int] = []
    for part in text.split(","):
        m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", part)
        if not m or (m.group(2) and int(m.group(2)) < int(m.group(1))):
            raise ValueError(f"bad seed range {part!r} (expected N or N-M, comma separated)")
        first = int(m.group(1))
        last = int(m.group(2)) if m.group(2) else first
        seeds += [s for s in range(first, last + 1) if s not in seeds]
    return seeds


def _last_error(stderr: str) -> tuple[str, str]:
    """The last error line of a run's stderr and its traceback's innermost frame."""
    lines = [ln.rstrip() for ln in stderr.splitlines() if ln.strip()]
    frames = re.findall(r'File "([^"]+)", line \d+, in (\S+)', stderr)
    where = f"{Path(frames[-1][0]).name}:{frames[-1][1]}" if frames else ""
    for ln in reversed(lines):
        if re.match(r"[\w.]+(Error|Exception|Exit)\b|mockpool: ", ln.strip()):
            return ln.strip()[:400], where
    return (lines[-1].strip()[:400] if lines else "(no output on stderr)"), where


def run_seed(seed: int, work: Path, *, timeout: float = 120.0) -> SeedResult:
    """Run chaos seed ``seed`` in folder ``work`` (spec.toml, out/, run.log, check.txt)
    and judge it; the folder is left as the run left it."""
    work.mkdir(parents=True, exist_ok=True)
    spec, out = work / "spec.toml", work / "out"
    spec.write_text(draw(seed).text)
    cmd = [sys.executable, "-m", "mockpool.cli.main", "run", str(spec), "--clock", "virtual"]
    cmd += ["--out", str(out)]
    t0 = time.monotonic()
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
        rc: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # its own session: the run and nothing else
        stdout, stderr = proc.communicate()
        rc = None
    (work / "run.log").write_text(f"$ {' '.join(cmd)}\n{stdout}\n--- stderr ---\n{stderr}")
    symptom, where = _last_error(stderr) if rc != 0 else ("", "")
    symptom = symptom.replace(str(work), f"seed-{seed}")  # the folder may move (--keep)
    if rc is None:
        symptom = f"killed after {timeout:g} real s"
    missing = tuple(name for name in OUTPUTS if not (out / name).exists())
    violations: tuple[str, ...] = ()
    if not missing:
        try:
            report = check_dir(out)
            text = format_report(report)
            violations = tuple(sorted({v.invariant for v in report.violations}))
            if violations and not symptom:
                symptom = text.splitlines()[1] if len(text.splitlines()) > 1 else text
        except CheckError as e:
            text = f"check refused the folder: {e}"
            symptom = symptom or text
        (work / "check.txt").write_text(text + "\n")
    return SeedResult(
        seed, rc, round(time.monotonic() - t0, 2), missing, violations, symptom, where
    )


def _replay(seed: int, keep: Path) -> str:
    d = keep / f"seed-{seed}"
    return (
        f"mockpool run {d}/spec.toml --clock virtual --out {d}/out; mockpool check {d}/out"
        f"   (or: python -m mockpool.pool.chaos --seeds {seed})"
    )


def summary(results: Sequence[SeedResult], keep: Path) -> str:
    """The campaign's end: counts, then each failure signature with its seeds."""
    failed = [r for r in results if not r.ok]
    walls = sorted(r.wall for r in results)
    lines = [
        f"{len(results)} seeds: {len(results) - len(failed)} passed, {len(failed)} failed"
        + (f"; wall median {walls[len(walls) // 2]:.1f} s, max {walls[-1]:.1f} s" if walls else "")
    ]
    groups: dict[str, list[SeedResult]] = {}
    for r in failed:
        groups.setdefault(r.signature, []).append(r)
    for sig, rs in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        seeds = ", ".join(str(r.seed) for r in rs[:12]) + (", ..." if len(rs) > 12 else "")
        lines += [f"\n{len(rs)} x {sig}", f"  seeds: {seeds}", f"  e.g. {rs[0].symptom}"]
        lines.append(f"  replay: {_replay(rs[0].seed, keep)}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m mockpool.pool.chaos",
        description="Run seeded chaos pools in virtual time and check every run.",
    )
    p.add_argument("--seeds", default="0-19", help="seeds: N, N-M, comma separated (0-19)")
    p.add_argument("--keep", type=Path, default=DEFAULT_KEEP, help="where failing seeds stay")
    p.add_argument("--timeout", type=float, default=120.0, help="real seconds a run may take")
    p.add_argument("--workers", type=int, default=1, help="runs at once (default 1)")
    p.add_argument("--print", type=int, metavar="SEED", help="print a seed's spec and stop")
    p.add_argument("--features", action="store_true", help="list what each seed draws; stop")
    ns = p.parse_args(argv)
    if ns.print is not None:
        print(draw(ns.print).text, end="")
        return 0
    try:
        seeds = parse_seeds(ns.seeds)
    except ValueError as e:
        p.error(str(e))
    if ns.features:
        for s in seeds:
            print(f"seed {s:5d}  {' '.join(sorted(draw(s).features))}")
        return 0
    ns.keep.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="chaos-") as tmp:

        def one(seed: int) -> SeedResult:
            work = Path(tmp) / f"seed-{seed}"
            result = run_seed(seed, work, timeout=ns.timeout)
            if not result.ok:  # kept for replay, replacing an older copy of this seed
                dest = ns.keep / f"seed-{seed}"
                shutil.rmtree(dest, ignore_errors=True)
                shutil.move(str(work), dest)
            else:
                shutil.rmtree(work, ignore_errors=True)
            return result

        results = []
        with ThreadPoolExecutor(max(1, ns.workers)) as pool:
            for result in pool.map(one, seeds):
                print(result.line(), flush=True)
                results.append(result)
    print(summary(results, ns.keep))
    if any(not r.ok for r in results):
        print(f"Failing seeds kept in {ns.keep}/seed-N (spec.toml, out/, run.log, check.txt)")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
