"""The README and docs/ say what the code does: every `mockpool ...` line they show parses
with the command's own parser, every TOML snippet is a spec parse_spec accepts, every
Python snippet compiles, every link reaches a page and heading, every event kind the
daemons emit is in services/eventkinds.py with its fields, and docs/python-api.md's events
table is rendered from that table."""

from __future__ import annotations

import ast
import contextlib
import io
import re
import shlex
from pathlib import Path

import pytest

from mockpool.cli.main import build_parser
from mockpool.eventkinds import EVENT_KINDS, render_table
from mockpool.pool.spec import parse_spec

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"(?:<!-- ([^>]*?) -->\n)?```(\w*)\n(.*?)```", re.S)


def blocks(lang: str) -> list[tuple[str, str]]:
    """(where, text) of each ``` block of ``lang``, unless marked <!-- not-checked ... -->."""
    out = []
    for page in PAGES:
        text = page.read_text()
        for m in FENCE.finditer(text):
            mark, kind, body = m.groups()
            if kind == lang and not (mark or "").startswith("not-checked"):
                line = text.count("\n", 0, m.start()) + 1
                out.append((f"{page.relative_to(ROOT)}:{line}", body))
    return out


def command_lines() -> list[tuple[str, str]]:
    """Each `mockpool ...` command of the sh blocks, its comment cut off."""
    out = []
    for where, body in blocks("sh"):
        for line in body.splitlines():
            line = line.partition("  #")[0].strip()
            for part in re.split(r"\s*(?:&&|;)\s*", line):
                if part.startswith("mockpool "):
                    out.append((where, part))
    return out


@pytest.mark.parametrize(("where", "line"), command_lines())
def test_command_lines_parse(where: str, line: str) -> None:
    argv = shlex.split(line)[1:]
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            build_parser().parse_args(argv)
        except SystemExit as e:
            pytest.fail(f"{where}: {line!r} does not parse ({e.code}): {err.getvalue()}")


def test_the_docs_show_commands() -> None:
    assert len(command_lines()) > 30


@pytest.mark.parametrize(("where", "text"), blocks("toml"))
def test_spec_snippets_parse(where: str, text: str) -> None:
    parse_spec(text, where, base_dir=ROOT / "examples")


@pytest.mark.parametrize(("where", "text"), blocks("python"))
def test_python_snippets_compile(where: str, text: str) -> None:
    compile(text, where, "exec")


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation gone, blanks to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    return {_slug(h) for h in re.findall(r"^#+ (.*)$", text, re.M)}


def links() -> list[tuple[str, str]]:
    out = []
    for page in PAGES:
        text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if not re.match(r"[a-z]+:", target):
                out.append((str(page.relative_to(ROOT)), target))
    return out


@pytest.mark.parametrize(("page", "target"), links())
def test_links_reach_a_page_and_heading(page: str, target: str) -> None:
    path, _, anchor = target.partition("#")
    dest = (ROOT / page).parent / path if path else ROOT / page
    assert dest.exists(), f"{page}: link to {target}: no such file"
    if anchor and dest.suffix == ".md":
        assert anchor in _anchors(dest), f"{page}: link to {target}: no such heading"


def test_slug_is_githubs() -> None:
    assert _slug("Job event log (`log =`)") == "job-event-log-log-"
    assert _slug("`[import]` of a pool") == "import-of-a-pool"


# --- events ----------------------------------------------------------------------------


def _kinds_in(node: ast.expr) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.IfExp):  # "job_evicted" if e.reason else "job_exit"
        return _kinds_in(node.body) + _kinds_in(node.orelse)
    return []


def emitted() -> dict[str, set[str]]:
    """Event kind -> the field names the source gives it, where it names them: calls of
    ``emit``/``_emit`` (a kind, or a daemon then a kind) and ``self._events.append((...))``
    of (kind, {fields}) or (daemon, kind, {fields})."""
    found: dict[str, set[str]] = {}
    for path in (ROOT / "services").rglob("*.py"):
        if "v1" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
                continue
            func = node.func
            if func.attr in ("emit", "_emit") and node.args:
                second = _kinds_in(node.args[1]) if len(node.args) > 1 else []
                kinds = second or _kinds_in(node.args[0])
                fields = {kw.arg for kw in node.keywords if kw.arg}
            elif (
                func.attr == "append"
                and isinstance(func.value, ast.Attribute)
                and func.value.attr == "_events"
                and node.args
                and isinstance(node.args[0], ast.Tuple)
            ):
                elts = node.args[0].elts
                kinds = _kinds_in(elts[-2]) if len(elts) >= 2 else []
                d = elts[-1]
                fields = (
                    {k.value for k in d.keys if isinstance(k, ast.Constant)}
                    if isinstance(d, ast.Dict)
                    else set()
                )
            else:
                continue
            for kind in kinds:
                found.setdefault(kind, set()).update(fields)
    return found


def test_the_scan_finds_the_daemons_events() -> None:
    kinds = emitted()
    for kind in ("cycle", "match", "submit", "job_exit", "job_evicted", "lease_expired"):
        assert kind in kinds
    assert {"job", "slot", "claim", "start", "end"} <= kinds["job_exit"]


@pytest.mark.parametrize(("kind", "fields"), sorted(emitted().items()))
def test_every_emitted_event_is_in_the_event_kinds_table_with_its_fields(
    kind: str, fields: set[str]
) -> None:
    assert kind in EVENT_KINDS, f"event {kind!r} is not in services/eventkinds.py"
    shapes = EVENT_KINDS[kind].shapes.values()
    known = set().union(*(set(s.fields) | s.optional for s in shapes))
    # t, daemon and kind are every event's; a startd dates an exit at its end (t)
    assert not sorted(fields - {"t"} - known), f"event {kind!r}: fields not in eventkinds.py"


def test_every_event_kind_is_emitted() -> None:
    assert set(EVENT_KINDS) <= set(emitted())


def test_the_docs_events_table_is_the_event_kinds_table() -> None:
    text = (ROOT / "docs" / "python-api.md").read_text()
    table = text.split("<!-- events -->\n", 1)[1].split("\n\n", 1)[0]
    assert table == render_table(), (
        "docs/python-api.md's events table is stale: paste mockpool.eventkinds.render_table()"
    )
