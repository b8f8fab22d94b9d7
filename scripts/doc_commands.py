"""The commands README.md, docs/*.md and deploy/README.md show, and how CI runs each.

A page shows commands in ```sh (or bash) blocks, one a line; `&&` and `;` join several.
A line's comment may quote what the command's output shows (`# "Pool up": ...`, as the
README's tour does). A ```text block marked <!-- output --> right under a block shows
the output of that block's last command (under a python block: what it prints); a line
`...` in it stands for any lines. Cluster commands (kubectl, docker, ray start, ...)
and benchmarks are shown inline in `code`; they are listed too, though never run here.

How each is checked: "virtual" (no pool: tests/virtual/test_docs_run.py), "live"
(against one `mockpool up` pool: tests/live/test_docs_live.py), "tour" (the README's
tour: tests/live/test_readme_tour.py), or "not run" (tests/unit/test_docs_commands.py
says why, and checks what it can).

    python scripts/doc_commands.py      # every command shown, where, and how it is checked
"""

from __future__ import annotations

import contextlib
import difflib
import io
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "deploy" / "README.md"]
FENCE = re.compile(r"(?:<!-- ([^>]*?) -->\n)?```(\w*)\n(.*?)```", re.S)
SHELL = ("sh", "bash")
# inline `code` that is a whole command of a program that needs a cluster, or a script
INLINE = re.compile(
    r"(?:kubectl|docker|helm|openssl) .+|kind load .+|minikube image .+"
    r"|ray (?:up|attach|down|start|get-auth-token|job)\b.*"
    r"|python (?:bench|scripts)/.+"
)


@dataclass(frozen=True)
class Block:
    page: str  # relative to the repository root
    line: int  # of the opening fence
    lang: str
    mark: str  # the <!-- mark --> above it, if any
    text: str
    output: str | None  # the <!-- output --> block under it

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


@dataclass(frozen=True)
class Command:
    where: str  # page:line of the command itself
    text: str  # the command, its comment cut off
    quoted: tuple[str, ...]  # what its comment says the output shows
    block: Block | None  # None: inline in the text
    last: bool  # the block's last command: its <!-- output --> is this one's

    @property
    def program(self) -> str:
        return self.text.split()[0]

    @property
    def argv(self) -> list[str]:
        return shlex.split(self.text)


def blocks(pages: list[Path] = PAGES) -> list[Block]:
    """Every fenced block of the pages; an <!-- output --> block goes with the block above."""
    out: list[Block] = []
    for page in pages:
        text = page.read_text()
        prev_end = -1
        for m in FENCE.finditer(text):
            mark, lang, body = m.groups()
            mark = (mark or "").strip()
            if mark == "output" and out and not text[prev_end : m.start()].strip():
                last = out[-1]
                out[-1] = Block(last.page, last.line, last.lang, last.mark, last.text, body)
            else:
                line = text.count("\n", 0, m.start()) + (2 if m.group(1) else 1)
                rel = str(page.relative_to(ROOT))
                out.append(Block(rel, line, lang, mark, body, None))
            prev_end = m.end()
    return out


def block_commands(block: Block) -> list[Command]:
    """The commands of a shell block, in order, with the texts their comments quote."""
    found: list[tuple[int, str, tuple[str, ...]]] = []
    for i, raw in enumerate(block.text.splitlines(), start=1):
        command, _, comment = raw.partition("  #")
        if not command.strip() or command.lstrip().startswith("#"):
            continue
        parts = [p for p in re.split(r"\s*(?:&&|;)\s*", command.strip()) if p]
        quoted = tuple(re.findall(r'"([^"]+)"', comment))
        for j, part in enumerate(parts):  # the comment speaks of the line's last command
            found.append((block.line + i, part, quoted if j == len(parts) - 1 else ()))
    return [
        Command(f"{block.page}:{n}", text, quoted, block, k == len(found) - 1)
        for k, (n, text, quoted) in enumerate(found)
    ]


def inline_commands(pages: list[Path] = PAGES) -> list[Command]:
    """Whole commands shown inline (`kubectl apply -f ...`): cluster tools and scripts."""
    out = []
    for page in pages:
        text = re.sub(
            r"```.*?```", lambda m: "\n" * m.group(0).count("\n"), page.read_text(), flags=re.S
        )
        for m in re.finditer(r"`([^`\n]+)`", text):
            if INLINE.fullmatch(m.group(1)):
                line = text.count("\n", 0, m.start()) + 1
                where = f"{page.relative_to(ROOT)}:{line}"
                out.append(Command(where, m.group(1), (), None, False))
    return out


def commands() -> list[Command]:
    """Every command shown: each shell block's, then the inline ones."""
    shown = [c for b in blocks() if b.lang in SHELL for c in block_commands(b)]
    return shown + inline_commands()


# ------------------------------------------------------------------ how each is run

# mockpool commands that need no pool; the rest talk to an `up` pool (or start one)
NO_POOL = {"report", "check", "eval", "match", "demo"}


def how(command: Command) -> str:
    """ "virtual", "live", "tour" or "not run" (then tests/unit/test_docs_commands.py
    lists it with its reason)."""
    if command.block is not None and command.block.mark == "tour":
        return "tour"
    argv = command.argv
    if argv[0] == "python" and argv[1:3] == ["-m", "mockpool.pool.chaos"] and "--print" in argv:
        return "virtual"  # prints a drawn spec
    if argv[0] != "mockpool" or len(argv) < 2:
        return "not run"
    sub = argv[1]
    if "--address" in argv:
        return "not run"  # joins a Ray cluster
    if sub in NO_POOL or argv[1:3] == ["token", "secret"] or "-dry-run" in argv:
        return "virtual"
    if sub == "run":
        return "virtual" if _flag(argv, "--clock") == "virtual" else "live"
    if sub == "sweep":
        return "live" if _flag(argv, "--clock") == "live" else "virtual"
    return "live"


def _flag(argv: list[str], name: str) -> str | None:
    return argv[argv.index(name) + 1] if name in argv[:-1] else None


def block_how(block: Block) -> str:
    """A block runs as a whole, in order: "live" if any command needs a live pool or Ray,
    "virtual" if every command it runs needs neither, "not run" if it runs none."""
    kinds = {how(c) for c in block_commands(block)} - {"not run"}
    if "tour" in kinds:
        return "tour"
    return "live" if "live" in kinds else "virtual" if kinds else "not run"


def shell_blocks(kind: str) -> list[Block]:
    return [b for b in blocks() if b.lang in SHELL and block_how(b) == kind]


def python_how(block: Block) -> str:
    """A python block: "tour" (the README's pytest snippet), "live" (it starts a pool, or
    is a pytest test taking the plugin's fixtures) or "pure"."""
    if block.mark == "pytest":
        return "tour"
    if re.search(r"^def test_\w+\(", block.text, re.M) or re.search(r"\bPool\b", block.text):
        return "live"
    return "pure"


# ------------------------------------------------------------------ running one


@dataclass(frozen=True)
class Result:
    rc: int
    out: str
    err: str


def run(command: Command) -> Result:
    """Run a command as the page shows it, from the current folder: `mockpool ...` in
    this process (its CLI's own main: seconds faster than a new interpreter each time),
    anything else with bash, this interpreter's folder first on PATH. So do the commands
    that leave processes behind, which must not be this process' children: `up`'s pool
    process (no one here would reap it when it ends, and `down` would wait on a zombie)
    and `sweep`'s workers (their multiprocessing resource tracker outlives the sweep)."""
    argv = command.argv
    if argv[0] != "mockpool" or argv[1] in ("up", "sweep"):
        env = dict(
            os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
        )
        proc = subprocess.run(["bash", "-c", command.text], env=env, capture_output=True, text=True)
        return Result(proc.returncode, proc.stdout, proc.stderr)
    from mockpool.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(argv[1:])
        except SystemExit as e:  # a tool refusing, with its message
            rc = e.code if isinstance(e.code, int) else 1
            if isinstance(e.code, str):
                print(e.code, file=sys.stderr)
    return Result(rc, out.getvalue(), err.getvalue())


@contextlib.contextmanager
def working_dir(folder: Path, env: dict[str, str]) -> Iterator[Path]:
    """Run the pages' commands in ``folder``, as a reader in a checkout would: its
    ``examples`` is the repository's, what the commands write stays in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    if not (folder / "examples").exists():
        (folder / "examples").symlink_to(ROOT / "examples")
    before = Path.cwd()
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    os.chdir(folder)
    try:
        yield folder
    finally:
        os.chdir(before)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def check(command: Command, result: Result) -> None:
    """AssertionError unless the command exited 0, its output holds every text its
    comment quotes, and it printed what an <!-- output --> block under it shows."""
    said = f"{command.where}: {command.text!r} (exit {result.rc})"
    assert result.rc == 0, f"{said} failed:\n{result.out}\n{result.err}"
    missing = [q for q in command.quoted if q not in result.out]
    assert not missing, f"{said} does not print {missing}:\n{result.out}"
    if command.last and command.block is not None and command.block.output is not None:
        compare(command.block.output, result.out, said)


# ------------------------------------------------------------------ output shown

# What legitimately differs between the output a page shows and a run's: wall-clock
# durations and the speed achieved (the machine's), memory (the machine's and Python's),
# addresses (free ports, each run), process ids, wall-clock dates and times.
VARIES = [
    (re.compile(r"\d+(?:\.\d+)? real s\b"), "N real s"),
    (re.compile(r"\bachieved \d+(?:\.\d+)?"), "achieved N"),
    (re.compile(r"\d+(?:\.\d+)? MiB\b"), "N MiB"),
    (re.compile(r"<?\b\d{1,3}(?:\.\d{1,3}){3}:\d+>?"), "ADDRESS"),
    (re.compile(r"\bpid \d+"), "pid N"),
    (re.compile(r"\b\d\d?/\d\d?(?:/\d\d)? \d\d?:\d\d(?::\d\d)?"), "DATE"),
]


def normalise(text: str) -> list[str]:
    """The lines of ``text`` with what varies masked, trailing blanks and blank ends gone."""
    for pattern, stand_in in VARIES:
        text = pattern.sub(stand_in, text)
    lines = [line.rstrip() for line in text.splitlines()]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    return lines


def compare(shown: str, printed: str, said: str) -> None:
    """AssertionError unless ``printed`` is what ``shown`` shows, once normalised; a
    line ``...`` of ``shown`` stands for any lines (none included)."""
    want, got = normalise(shown), normalise(printed)
    pattern = "".join(
        r"(?:[^\n]*\n)*?" if line == "..." else re.escape(line) + "\n" for line in want
    )
    if re.fullmatch(pattern, "".join(g + "\n" for g in got)):
        return
    diff = "\n".join(difflib.unified_diff(want, got, "shown", "printed", lineterm=""))
    raise AssertionError(f"{said} prints other than its page shows:\n{diff}")


def form(line: str) -> str:
    """A line as a pattern in which each number, and a mockpool-out/ path, stands for any."""
    out = []
    for word in re.split(r"(\d+(?:\.\d+)?%?|mockpool-out/\S+)", line):
        if re.fullmatch(r"\d+(?:\.\d+)?%?", word):
            out.append(r"\d+(?:\.\d+)?%?")
        elif word.startswith("mockpool-out/"):
            out.append(r"\S+")
        else:
            out.append(re.escape(word))
    return "".join(out)


def main() -> int:
    for c in commands():
        print(f"{how(c):8} {c.where:28} {c.text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
