"""Every command README.md, docs/ and deploy/README.md show is run by CI or listed here as
not run, with the reason, and checked as far as it can be without running it
(scripts/doc_commands.py finds them; tests/virtual/test_docs_run.py and
tests/live/test_docs_live.py run the others). Also: the pages' Python snippets that need
no pool run, and what their comments and output blocks say they give is what they give."""

from __future__ import annotations

import ast
import contextlib
import io
import re
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

import doc_commands as dc  # scripts/ (pytest's pythonpath)
import pytest
import yaml

from mockpool.cli.main import build_parser
from mockpool.pool.spec import load_spec

ROOT: Path = dc.ROOT
DEPLOY = ROOT / "deploy"


# ------------------------------------------------------------------ checks of what is not run


def _readme_block(mark: str) -> str:
    m = re.search(rf"<!-- {mark} -->\s*```sh\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    assert m is not None, f"README.md has no <!-- {mark} --> block"
    return m.group(1)


def check_install(command: Any) -> None:
    """The install steps are the README's test command's, which .ci/run runs as written
    (the demo's `pip install -e .` is the same install without the test extra)."""
    ci = (ROOT / ".ci" / "run").read_text()
    assert "<!-- test-command -->" in ci and 'bash -c "$cmd"' in ci
    parts = re.split(r"\s*&&\s*", _readme_block("test-command").strip())
    assert command.text.replace("-e .", "-e '.[test]'", 1) in parts or command.text in parts


def check_suite(command: Any) -> None:
    assert command.text in _readme_block("test-command")
    assert "<!-- test-command -->" in (ROOT / ".ci" / "run").read_text()
    assert "pytest-xdist" in (ROOT / "pyproject.toml").read_text()  # -n 2 --dist loadgroup


def check_cluster_join(command: Any) -> None:
    """Parses with the CLI's parser, names a valid spec; the tests that join a local
    cluster (two `ray start`; three nodes) are there."""
    ns = build_parser().parse_args(command.argv[1:])
    assert ns.address == "auto"
    load_spec(ROOT / ns.spec)
    for test in ("test_ray_start_two_nodes.py", "test_ray_cluster.py"):
        assert "address" in (ROOT / "tests" / "live" / test).read_text()


# a module run with `python -m` whose flags another file's parser defines
FLAGS_IN = {"mockpool.pool.chaos": ROOT / "services" / "pool" / "chaos_campaign.py"}


def _flags(source: Path) -> set[str]:
    """The option strings ``add_argument`` calls of ``source`` define."""
    found = set()
    for node in ast.walk(ast.parse(source.read_text())):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument":
            found |= {a.value for a in node.args if isinstance(a, ast.Constant)}
    return found


def check_script_flags(command: Any) -> None:
    """The script (or module) is there, and defines every flag the command gives it."""
    argv = command.argv
    if argv[1] == "-m":
        source = FLAGS_IN[argv[2]]
        given = argv[3:]
    else:
        source = ROOT / argv[1]
        given = argv[2:]
    assert source.is_file(), f"{command.where}: no {source.relative_to(ROOT)}"
    unknown = {a for a in given if a.startswith("--")} - _flags(source)
    assert not unknown, f"{command.where}: {source.name} has no {sorted(unknown)}"


def check_inventory(command: Any) -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert dc.main() == 0
    assert len(out.getvalue().splitlines()) == len(dc.commands())
    assert f"not run  {command.where}" in out.getvalue()


def _manifests() -> dict[str, list[dict]]:
    return {
        str(p.relative_to(ROOT)): list(yaml.safe_load_all(p.read_text()))
        for p in sorted((DEPLOY / "kuberay").glob("*.yaml"))
    }


def _pod_specs(doc: dict) -> list[dict]:
    if doc["kind"] == "Pod":
        return [doc["spec"]]
    cluster = doc["spec"] if doc["kind"] == "RayCluster" else doc["spec"]["rayClusterSpec"]
    groups = [cluster["headGroupSpec"], *cluster["workerGroupSpecs"]]
    return [g["template"]["spec"] for g in groups]


def _pods() -> list[dict]:
    return [
        s
        for docs in _manifests().values()
        for d in docs
        if d["kind"] != "Service" and d["kind"] != "PersistentVolumeClaim"
        for s in _pod_specs(d)
    ]


def _secret_file() -> str:
    m = re.search(r'^secret_file = "(.+)"$', (DEPLOY / "pool.toml").read_text(), re.M)
    assert m is not None
    return m.group(1)


def _rayjob() -> dict:
    (job,) = [d for docs in _manifests().values() for d in docs if d["kind"] == "RayJob"]
    return job


def _mount_of(pod: dict, path: str) -> tuple[dict, dict]:
    """(the container's mount holding ``path``, its volume)."""
    (mount,) = [
        m
        for c in pod["containers"]
        for m in c.get("volumeMounts", [])
        if path.startswith(m["mountPath"].rstrip("/") + "/")
    ]
    (volume,) = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    return mount, volume


def check_kubectl(command: Any) -> None:
    """What each kubectl line names is in the manifests, as the page says."""
    argv = command.argv
    verb = argv[1]
    if verb == "apply":
        path = ROOT / argv[argv.index("-f") + 1]
        docs = list(yaml.safe_load_all(path.read_text()))
        assert docs and all(d["apiVersion"] and d["kind"] and d["metadata"]["name"] for d in docs)
    elif verb == "create":  # kubectl create secret generic NAME --from-file=KEY=FILE
        name, source = argv[4], argv[5]
        key = source.removeprefix("--from-file=").split("=")[0]
        for pod in _pods():
            secrets = [v for v in pod["volumes"] if "secret" in v]
            if not secrets:
                continue
            (vol,) = secrets
            assert vol["secret"]["secretName"] == name
            (mount,) = [
                m for c in pod["containers"] for m in c["volumeMounts"] if m["name"] == vol["name"]
            ]
            assert f"{mount['mountPath']}/{key}" == _secret_file()
    elif verb == "logs":  # kubectl logs -l job-name=NAME: KubeRay's submitter Job is NAME
        assert argv[2:4] == ["-l", f"job-name={_rayjob()['metadata']['name']}"]
    elif verb == "cp":  # kubectl cp POD:PATH DEST: the run's --out, seen from the reader
        pod_name, _, path = argv[2].partition(":")
        (reader,) = [d for docs in _manifests().values() for d in docs if d["kind"] == "Pod"]
        assert reader["metadata"]["name"] == pod_name
        job = _rayjob()
        entry = shlex.split(job["spec"]["entrypoint"])
        out = entry[entry.index("--out") + 1]
        head = _pod_specs(job)[0]
        job_mount, job_vol = _mount_of(head, out)
        read_mount, read_vol = _mount_of(reader["spec"], path)
        assert job_vol["persistentVolumeClaim"] == read_vol["persistentVolumeClaim"]
        assert out[len(job_mount["mountPath"]) :] == path[len(read_mount["mountPath"]) :]
    elif verb == "exec":  # kubectl exec -it <head pod> -- mockpool ...: the image's spec
        tool = argv[argv.index("--") + 1 :]
        ns = build_parser().parse_args(tool[1:])
        workdir = re.search(r"^WORKDIR (\S+)$", (DEPLOY / "Dockerfile").read_text(), re.M)
        assert workdir is not None and ns.spec == f"{workdir.group(1)}/deploy/pool.toml"
    else:
        raise AssertionError(f"{command.where}: no check for kubectl {verb}")


def check_image(command: Any) -> None:
    """The image built or loaded is the one every manifest and the launcher run."""
    argv = command.argv
    tag = argv[argv.index("-t") + 1] if argv[0] == "docker" else argv[-1]
    if argv[0] == "docker":
        assert (ROOT / argv[argv.index("-f") + 1]).is_file()
    images = {c["image"] for pod in _pods() for c in pod["containers"]}
    launcher = yaml.safe_load((DEPLOY / "ray-cluster.yaml").read_text())
    assert images == {tag} == {launcher["docker"]["image"]}


def check_launcher(command: Any) -> None:
    config = yaml.safe_load((ROOT / command.argv[2]).read_text())
    assert config["head_node_type"] in config["available_node_types"]


def check_node_start(command: Any) -> None:
    """CI starts a head and a worker with `ray start` and Ray's token auth on one machine."""
    text = (ROOT / "tests" / "live" / "test_ray_start_two_nodes.py").read_text()
    assert '"start"' in text and 'RAY_AUTH_MODE="token"' in text and "RAY_AUTH_TOKEN_PATH" in text


# pattern (the whole command) -> (why CI does not run it, what checks it instead)
NOT_RUN: dict[str, tuple[str, Callable[[Any], None]]] = {
    r"python3 -m venv \.venv|\. \.venv/bin/activate|pip install -e .*": (
        "makes a venv and installs from PyPI: done before any test runs (.ci/run runs the "
        "README's test command as written)",
        check_install,
    ),
    r"pytest -n 2 --dist loadgroup": (
        "the whole suite: .ci/run runs it, this test among it",
        check_suite,
    ),
    r"mockpool (run|sweep) .* --address auto": (
        "joins the Ray cluster this machine belongs to, which CI has not: "
        "tests/live/test_ray_start_two_nodes.py makes one with two `ray start` and sweeps "
        "on it with --address; tests/live/test_ray_cluster.py runs a pool on three nodes",
        check_cluster_join,
    ),
    r"python -m mockpool\.pool\.chaos --seeds 0-199 .*": (
        "200 seeded pools, minutes: CI runs a fixed set of seeds that covers every fault kind "
        "(tests/virtual/test_chaos_campaign.py)",
        check_script_flags,
    ),
    r"python bench/.*": (
        "a benchmark: a pool of thousands of slots for minutes, and its figures are the machine's",
        check_script_flags,
    ),
    r"python scripts/doc_commands\.py": (
        "this inventory: the test below runs its main, here",
        check_inventory,
    ),
    r"python scripts/(?!doc_commands\.py).*": (
        "a generator: remakes a committed picture or data set from long runs",
        check_script_flags,
    ),
    r"kubectl .*": ("needs a Kubernetes cluster with the KubeRay operator", check_kubectl),
    r"docker build .*|kind load .*|minikube image load .*": (
        "builds or loads the image: needs Docker, and kind or minikube",
        check_image,
    ),
    r"ray (up|attach|down) deploy/ray-cluster\.yaml": (
        "Ray's cluster launcher: machines reached over ssh",
        check_launcher,
    ),
    r"ray start .*|ray get-auth-token .*|ray job submit|openssl rand .*": (
        "on each machine of a cluster: tests/live/test_ray_start_two_nodes.py starts two "
        "nodes on one machine, with Ray's token auth",
        check_node_start,
    ),
}


def _entry(command: Any) -> str | None:
    found = [p for p in NOT_RUN if re.fullmatch(p, command.text)]
    assert len(found) <= 1, f"{command.text!r} matches {found}"
    return found[0] if found else None


NOT_RUN_COMMANDS = [c for c in dc.commands() if dc.how(c) == "not run"]


def test_the_pages_show_what_the_inventory_finds() -> None:
    shown = {(c.text, dc.how(c)) for c in dc.commands()}
    for expected in [
        ("mockpool run examples/pslot.toml", "live"),  # the README's demo
        ("mockpool up examples/tour.toml", "tour"),
        ("mockpool fault crash schedd1", "live"),  # docs/faults.md
        ("mockpool sweep examples/tuning.toml --set NEGOTIATOR_INTERVAL=40,50,60", "virtual"),
        ("kubectl apply -f deploy/kuberay/rayjob.yaml", "not run"),
        ("ray start --head", "not run"),
    ]:
        assert expected in shown
    (sweep,) = [b for b in dc.blocks() if "mockpool sweep examples/tuning.toml" in b.text]
    assert sweep.output is not None and "LOADING_FACTOR" in sweep.output
    assert [b.page for b in dc.shell_blocks("live")] == [
        "README.md",
        "docs/cli.md",
        "docs/faults.md",
    ]


@pytest.mark.parametrize("command", NOT_RUN_COMMANDS, ids=lambda c: f"{c.where} {c.text}")
def test_a_command_not_run_is_listed_with_its_reason_and_checked(command: Any) -> None:
    entry = _entry(command)
    assert entry is not None, (
        f"{command.where}: {command.text!r} is neither run by CI nor listed in NOT_RUN with "
        "the reason (scripts/doc_commands.py says what runs)"
    )
    NOT_RUN[entry][1](command)


def test_every_not_run_entry_is_still_shown() -> None:
    used = {_entry(c) for c in NOT_RUN_COMMANDS}
    assert set(NOT_RUN) <= used, f"NOT_RUN lists what no page shows: {set(NOT_RUN) - used}"


# ------------------------------------------------------------------ output comparison


def test_what_varies_is_masked_and_nothing_else() -> None:
    printed = (
        "Pool ran 300 pool s in 9.8 real s (time scale 30, achieved 30.634)\n"
        "Peak memory of all actors 330 MiB\n"
        "Pool up (pid 4242): collector at 127.0.0.1:44337\n"
        "-- Schedd: schedd1 : <127.0.0.1:35257> @ 11/28/26 11:14:16   \n\n"
    )
    assert dc.normalise(printed) == [
        "Pool ran 300 pool s in N real s (time scale 30, achieved N)",
        "Peak memory of all actors N MiB",
        "Pool up (pid N): collector at ADDRESS",
        "-- Schedd: schedd1 : ADDRESS @ DATE",
    ]
    # a count, a pool time and a measure stay as they are
    assert dc.normalise("matches 10 in 300 pool s; loading factor 0.9") == [
        "matches 10 in 300 pool s; loading factor 0.9"
    ]


def test_an_ellipsis_line_stands_for_any_lines_and_a_drift_fails() -> None:
    shown = "Sweeping x\n...\n40  0.75\nTable written"
    dc.compare(shown, "Sweeping x\n  1/3 points\n  2/3 points\n40  0.75\nTable written\n", "t")
    dc.compare(shown, "Sweeping x\n40  0.75\nTable written", "t")  # ... may stand for none
    with pytest.raises(AssertionError, match=r"-40  0\.75\n\+40  0\.76"):
        dc.compare(shown, "Sweeping x\n40  0.76\nTable written", "t")


def test_a_comment_quotes_what_the_output_shows() -> None:
    block = dc.Block(
        "p.md",
        1,
        "sh",
        "",
        'mockpool q   # condor_q: "6 jobs;"\nmockpool a && mockpool b  # "b"\n',
        "x",
    )
    q, a, b = dc.block_commands(block)
    assert (q.where, q.text, q.quoted, q.last) == ("p.md:2", "mockpool q", ("6 jobs;",), False)
    assert (a.quoted, b.quoted, b.last) == ((), ("b",), True)
    dc.check(q, dc.Result(0, "Total for query: 6 jobs; 0 completed\n", ""))
    with pytest.raises(AssertionError, match=r"does not print \['6 jobs;'\]"):
        dc.check(q, dc.Result(0, "Total for query: 5 jobs; 0 completed\n", ""))
    with pytest.raises(AssertionError, match="exit 1"):
        dc.check(q, dc.Result(1, "6 jobs;", "refused"))


# ------------------------------------------------------------------ Python snippets


def _pure_snippets() -> list[tuple[str, list[Any]]]:
    """(page, its python blocks that start no pool), in page order: a page's snippets
    build on each other, as in one interpreter."""
    pages: dict[str, list[Any]] = {}
    for b in dc.blocks():
        if b.lang == "python" and dc.python_how(b) == "pure":
            pages.setdefault(b.page, []).append(b)
    return sorted(pages.items())


def _claims(text: str) -> dict[int, Any]:
    """Line -> the value a top-level expression's comment says it has (`x  # True: ...`)."""
    lines = text.splitlines()
    out = {}
    for node in ast.parse(text).body:
        if isinstance(node, ast.Expr) and node.lineno == node.end_lineno:
            comment = lines[node.lineno - 1].partition("  # ")[2]
            literal = re.split(r":\s", comment, maxsplit=1)[0]
            with contextlib.suppress(ValueError, SyntaxError):
                out[node.lineno] = ast.literal_eval(literal)
    return out


def test_claims_are_read_from_comments() -> None:
    text = "x = 1\nx + 1  # 2: one more\nf(x)  # [True]\nprint(x)  # a word\n"
    assert _claims(text) == {2: 2, 3: [True]}


@pytest.mark.parametrize(("page", "snippets"), _pure_snippets())
def test_python_snippets_run_and_give_what_they_say(page: str, snippets: list[Any]) -> None:
    namespace: dict[str, Any] = {"__name__": "__doc__"}
    for block in snippets:
        claims = _claims(block.text)
        assert claims or block.output is not None, f"{block.where}: a snippet that shows nothing"
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            for node in ast.parse(block.text).body:
                code = ast.Module([node], type_ignores=[])
                if node.lineno in claims:
                    value = eval(
                        compile(ast.Expression(node.value), block.where, "eval"), namespace
                    )
                    assert value == claims[node.lineno], (
                        f"{block.page}:{block.line + node.lineno}: gives {value!r}, "
                        f"its comment says {claims[node.lineno]!r}"
                    )
                else:
                    exec(compile(code, block.where, "exec"), namespace)
        if block.output is not None:
            dc.compare(block.output, out.getvalue(), block.where)
    assert snippets
