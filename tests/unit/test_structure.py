"""The house's rules, kept by a test: no module over ~800 lines and no import circle.

Both are ratchets: each list below names what breaks a rule today, and may only shrink.
A module that grows past the limit or a new circle fails; so does an entry that no longer
breaks the rule (take it off the list). Imports count wherever they are written, inside
functions too (a lazy import hides a circle, it does not remove it); those under
``if TYPE_CHECKING:`` do not run and do not count. The generated protobuf code
(``services/v1``) is left out, and so is the package's root (``mockpool/__init__``): every
module imports it first as its parent, and its one lazy export (``mockpool.Pool``) is the
public face, not a dependency.
"""

from __future__ import annotations

import ast
from pathlib import Path

SERVICES = Path(__file__).resolve().parents[2] / "services"
MAX_LINES = 800

# modules over the limit today: each is to be split by idea (issue 43)
TOO_LONG: set[str] = set()

# import circles today (modules named from mockpool.), each a strongly connected component
CIRCLES: set[frozenset[str]] = set()


def _sources() -> dict[str, Path]:
    """Module name (relative to mockpool, "" for the package) -> its file."""
    out = {}
    for path in sorted(SERVICES.rglob("*.py")):
        rel = path.relative_to(SERVICES)
        if rel.parts[0] == "v1":
            continue
        parts = list(rel.with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        if parts:  # the root package aside (see the module docstring)
            out[".".join(parts)] = path
    return out


def _imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for n in ast.walk(node))
    return [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Import | ast.ImportFrom) and id(n) not in skip
    ]


def _strip(name: str) -> str | None:
    """``mockpool.x.y`` -> ``x.y`` (``mockpool`` -> ""), None for other packages."""
    if name == "mockpool":
        return ""
    return name[len("mockpool.") :] if name.startswith("mockpool.") else None


def import_graph() -> dict[str, set[str]]:
    mods = _sources()
    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges: set[str] = set()
        for node in _imports(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                edges.update(m for a in node.names if (m := _strip(a.name)) in mods)
                continue
            if node.level:
                base = package.split(".") if package else []
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                stripped = _strip(node.module or "")
                if stripped is None:
                    continue
                target = stripped
            for alias in node.names:
                sub = f"{target}.{alias.name}" if target else alias.name
                edges.add(sub if sub in mods else target)
        edges.discard(name)
        graph[name] = {e for e in edges if e in mods}
    return graph


def circles(graph: dict[str, set[str]]) -> set[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: set[frozenset[str]] = set()
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, edges = work[-1]
            w = next(edges, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = set()
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.add(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.add(frozenset(comp))
    return found


def test_no_module_grows_past_the_limit_and_the_list_only_shrinks() -> None:
    lengths = {
        str(p.relative_to(SERVICES)): len(p.read_text().splitlines()) for p in _sources().values()
    }
    over = {name for name, n in lengths.items() if n > MAX_LINES}
    assert not over - TOO_LONG, {n: lengths[n] for n in sorted(over - TOO_LONG)}
    assert not TOO_LONG - over, f"now under {MAX_LINES} lines: take off TOO_LONG: {TOO_LONG - over}"


def test_no_new_import_circle_and_the_list_only_shrinks() -> None:
    found = circles(import_graph())
    new = [sorted(c) for c in found - CIRCLES]
    assert not new, f"import circles: {new}"
    gone = [sorted(c) for c in CIRCLES - found]
    assert not gone, f"these circles changed or are gone: update CIRCLES: {gone}"


def test_the_circle_finder_finds_a_circle_and_ignores_a_chain() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert circles(graph) == {frozenset({"a", "b", "c"})}
    assert circles({"a": {"b"}, "b": set()}) == set()
