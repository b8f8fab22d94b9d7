"""Our expansion of real-world-style config files against HTCondor's own (``htcondor2.param``).

Every file of ``config_corpus/`` is read by both sides: ours with ``load_config``, HTCondor's
in one subprocess for the whole corpus (``CONDOR_CONFIG`` pointing at each file in turn,
``htcondor2.reload_config()``). Compared: every knob the file or its metaknobs set, plus the
policy knobs every execute node has (START, SUSPEND, PREEMPT, ...). A knob whose expansion
reaches a name we do not define (HTCondor's host-dependent built-ins such as FULL_HOSTNAME,
LIBEXEC, SPOOL) or draws a random number is left out: the other side's value depends on
its host. ``htcondor2.param`` returns typed values for typed knobs; ours are read the same
way (``get_bool``, ``get_int``, ``get_float``), else as the expanded text.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mockpool.config import ConfigDict, ConfigError, load_config, macros, metaknobs

pytest.importorskip("htcondor2")

CORPUS = Path(__file__).parent / "config_corpus"
FILES = sorted(CORPUS.glob("*.conf"))
ALWAYS = [
    "START",
    "SUSPEND",
    "CONTINUE",
    "PREEMPT",
    "KILL",
    "WANT_SUSPEND",
    "WANT_VACATE",
    "IS_OWNER",
    "DAEMON_LIST",
    "STARTD_ATTRS",
    "STARTD_LATCH_EXPRS",
    "CLAIM_WORKLIFE",
    "NEGOTIATOR_CONSIDER_PREEMPTION",
    "PREEMPTION_REQUIREMENTS",
    "PREEMPTION_RANK",
    "NEGOTIATOR_INTERVAL",
    "MINUTE",
    "HOUR",
    "StartIdleTime",
    "SmallJob",
    "IsVanilla",
]

_ORACLE = """
import json, os, sys
import htcondor2
out = {}
for path, names in json.load(sys.stdin):
    os.environ["CONDOR_CONFIG"] = path
    htcondor2.reload_config()
    out[path] = {n: htcondor2.param.get(n) for n in names}
print(json.dumps(out))
"""


def _comparable(cfg: ConfigDict, name: str) -> bool:
    """Whether ``name`` expands using only names we define (and no random draw)."""
    missing: list[str] = []

    def lookup(n: str) -> str | None:
        raw = cfg.raw(n)
        if (raw is None and n.lower() != "dollar") or "$RANDOM_" in (raw or "").upper():
            missing.append(n)
        return raw

    raw = cfg.raw(name)
    if raw is None or "$RANDOM_" in raw.upper():
        return False
    # an expansion error is compared (the comparison reports it) unless it reached a
    # host-dependent name
    with contextlib.suppress(Exception):
        macros.expand(raw, lookup, env={}, name=name)
    return not missing


def _ours(cfg: ConfigDict, name: str, like: object) -> object:
    if isinstance(like, bool):
        return cfg.get_bool(name, None)
    if isinstance(like, int):
        return cfg.get_int(name, None)
    if isinstance(like, float):
        return cfg.get_float(name, None)
    value = cfg.get_str(name, "")
    return value or None


def _compare_files(files: list[Path]) -> dict[str, tuple[ConfigDict, list[str], dict[str, object]]]:
    ours: dict[str, tuple[ConfigDict, list[str]]] = {}
    for path in files:
        cfg = load_config(path)
        names = list(dict.fromkeys([*(k.name for k in cfg.knobs()), *ALWAYS]))
        ours[str(path)] = (cfg, [n for n in names if _comparable(cfg, n)])
    request = json.dumps([[p, names] for p, (_, names) in ours.items()])
    env = {k: v for k, v in os.environ.items() if not k.startswith("_CONDOR")}
    done = subprocess.run(
        [sys.executable, "-c", _ORACLE],
        input=request,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=True,
    )
    theirs = json.loads(done.stdout)
    return {p: (cfg, names, theirs[p]) for p, (cfg, names) in ours.items()}


@pytest.fixture(scope="module")
def corpus() -> dict[str, tuple[ConfigDict, list[str], dict[str, object]]]:
    return _compare_files(FILES)


TEMPLATES = sorted(metaknobs._BODIES)


@pytest.fixture(scope="module")
def templates(tmp_path_factory) -> dict[str, tuple[ConfigDict, list[str], dict[str, object]]]:
    """Every shipped template, used with five made-up arguments (templates ignore extras)."""
    folder = tmp_path_factory.mktemp("templates")
    files = []
    for category, name in TEMPLATES:
        path = folder / f"{category}-{name}.conf"
        args = "9, 17, 1, 5" if "HOURS" in name or name == "DESKTOP_IDLE" else "A1, 7, c3, d4, e5"
        path.write_text(f"A1 = (Memory > 1)\nuse {category} : {name}({args})\n")
        files.append(path)
    return _compare_files(files)


@pytest.mark.parametrize("key", TEMPLATES, ids=[f"{c}:{n}" for c, n in TEMPLATES])
def test_template_expands_as_htcondor_does(templates, tmp_path_factory, key):
    path = next(p for p in templates if Path(p).name == f"{key[0]}-{key[1]}.conf")
    _check(*templates[path])


def test_the_corpus_is_large_enough():
    assert len(FILES) >= 50


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_file_expands_as_htcondor_does(corpus, path):
    _check(*corpus[str(path)])


def _check(cfg: ConfigDict, names: list[str], theirs: dict[str, object]) -> None:
    assert names, "nothing to compare"
    wrong = {}
    for name in names:
        want = theirs[name]
        try:
            got = _ours(cfg, name, want)
        except ConfigError as e:
            got = f"ConfigError: {e}"
        if isinstance(want, str):
            got, want = (got or "").strip() or None, want.strip() or None
            # the binding hands a boolean-looking string back as Python's True/False
            if want in ("True", "False") and isinstance(got, str) and got.lower() == want.lower():
                got = want
        if got != want:
            wrong[name] = (got, want)
    assert not wrong, "\n".join(f"{n}: ours {g!r}, HTCondor {w!r}" for n, (g, w) in wrong.items())


@pytest.mark.parametrize(
    "text",
    [
        "use POLICY : NoSuchPolicy\n",
        "use FEATURE : PartitionableSlot\nuse ROLE : Worker\n",
        "use POLICY : PREEMPT_IF\n",  # the template's own error line
    ],
)
def test_htcondor_refuses_what_we_refuse(tmp_path, text):
    path = tmp_path / "condor_config"
    path.write_text(text)
    with pytest.raises(ConfigError, match=r"condor_config:\d+: use "):
        load_config(path)
    env = {**os.environ, "CONDOR_CONFIG": str(path)}
    done = subprocess.run(
        [sys.executable, "-c", "import htcondor2; print('loaded')"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert "loaded" not in done.stdout
    assert "Error" in done.stderr or done.returncode != 0
