"""Users' files under abuse: every mutation is read or refused, never a traceback, and every
refusal starts with its place (``file:line: ``).

Mutated: the example specs (``examples/*.toml``), the config corpus (read as a spec's
``[config] file``, so the negotiator's, the schedd's and a startd's checks see it too) and
the submit corpus (read as condor_submit's side and the schedd's would). A mutation
replaces a value with a bad one (infinity, NaN, ``$INT(1e999)``, huge counts, broken
macros and TOML), replaces a number, deletes or duplicates a line, or inserts a line of
garbage. Then TOML layouts: the same bad line in a ``[config]`` text, a startd's config
and a submit description written in every layout TOML allows must be refused at its own
line. Bounded: a few hundred examples, about 20 s on a 2-core box. No oracle needed.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from mockpool.classad import parse_expr
from mockpool.pool.spec import parse_spec
from mockpool.pool.specmodel import SpecError
from mockpool.pool.submit_files import SubmitFileError, read_submit_inputs
from mockpool.schedd.submit import SubmitError, parse_submit

ROOT = Path(__file__).parents[2]
SPECS = sorted((ROOT / "examples").glob("*.toml"))
CONFIGS = sorted((Path(__file__).parent / "config_corpus").glob("*.conf"))
SUBMITS = sorted((Path(__file__).parent / "submit_corpus").glob("*.sub"))
FUZZ = settings(max_examples=200, deadline=None, derandomize=True, database=None)
PLACE = re.compile(r"\S+?:\d+: ")  # how a refusal starts: file:line

# A value for `key = ...`: numbers no knob can hold, broken macros and TOML, odd types.
BAD_VALUES = [
    "-1",
    "0",
    "1.5",
    "1e999",
    "-1e999",
    "inf",
    "nan",
    "-inf",
    "99999999999",
    "9223372036854775808",
    "$INT(1e999)",
    "$INT(1e30)",
    "$REAL(1e999 - 1e999)",
    "$REAL(-1e999, %.2f)",
    "$EVAL(1e999)",
    "$INT($EVAL(1e999))",
    "$INT(int(1e999))",
    "$CHOICE(1e999, a, b)",
    "$SUBSTR(X, 1e999)",
    "$RANDOM_INTEGER(5, 1)",
    "$(UNDEFINED",
    "$(",
    "1/0",
    '"x"',
    "true",
    "[]",
    "{}",
    "{ x = 1 }",
    "[1, 'a']",
    '"""',
    "'''",
    "",
    "(",
    "undefined",
    "cpus=200%",
    "cpus=0, mem=1e999",
]
# A line of its own, in any of the three languages (a TOML line in a config is garbage
# too, and the other way round).
BAD_LINES = [
    "[[startds]]",
    "[config]",
    "[",
    "x = ",
    "\"text\" = '''",
    'config.text = "A = $("',
    "text = 5",
    "[startds.config]",
    "startds = 5",
    '[accountant."x"]',
    "factor = inf",
    "at = inf",
    "count = -inf",
    "NUM_CPUS = 0",
    "NUM_CPUS = 99999999999",
    "NUM_CPUS = $INT(1e999)",
    "MEMORY = $REAL(1e999)",
    "MEMORY = 0",
    "RESERVED_MEMORY = 99999999",
    "DISK = 1e999",
    "NUM_SLOTS = 100000000",
    "NUM_SLOTS_TYPE_1 = 5",
    "SLOT_TYPE_1 = cpus=200%",
    "SLOT_TYPE_1 = 1/0",
    "NUM_CLAIMS = 99999999999",
    "NUM_CLAIMS = 1.5",
    "CONSUMPTION_POLICY = True",
    "NEGOTIATOR_INTERVAL = -1",
    "NEGOTIATOR_USE_SLOT_WEIGHTS = maybe",
    "DETECTED_MEMORY = $INT(1e999)",
    "MINUTE = x",
    "GROUP_NAMES = a, b",
    "GROUP_QUOTA_a = -1",
    "MAX_JOBS_PER_SUBMISSION = 1e999",
    "X = 1e999",
    "Y = $INT(X)",
    "START = (",
    "use FEATURE : Nope",
    "include : /nonexistent/file",
    "if",
    "endif",
    "A @=end",
    "queue",
    "queue 1e999",
    "request_cpus = $INT(1e999)",
    "request_memory = $REAL(1e999 - 1e999)",
    "+Foo = (",
    'arguments = "',
]
NUMBERS = ["0", "-1", "1.5", "1e999", "99999999999", "inf", "nan"]


@st.composite
def mutated(draw: st.DrawFn, files: list[Path]) -> tuple[Path, str]:
    """A file of ``files`` with one to three mutations."""
    path = draw(st.sampled_from(files))
    lines = path.read_text().split("\n")
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(lines) - 1)) if lines else 0
        # most often a value: a bad value in a known place goes deepest
        op = draw(st.sampled_from(["value"] * 3 + ["number", "delete", "duplicate", "insert"]))
        if op == "value" and lines and "=" in lines[i]:
            lines[i] = lines[i].split("=", 1)[0] + "= " + draw(st.sampled_from(BAD_VALUES))
        elif op == "number" and lines and (m := re.search(r"\d+(\.\d*)?", lines[i])):
            number = draw(st.sampled_from(NUMBERS))
            lines[i] = lines[i][: m.start()] + number + lines[i][m.end() :]
        elif op == "delete" and len(lines) > 1:
            del lines[i]
        elif op == "duplicate" and lines:
            lines.insert(i, lines[i])
        else:
            lines.insert(i, draw(st.sampled_from(BAD_LINES)))
    return path, "\n".join(lines)


def refused_with_place(exc: BaseException) -> None:
    assert PLACE.match(str(exc)), f"{type(exc).__name__} names no place: {exc}"


def _edited(name: str, old: str, new: str) -> tuple[Path, str]:
    """An example spec with one line changed (the cases this test found, kept as examples)."""
    path = ROOT / "examples" / name
    text = path.read_text()
    assert old in text
    return path, text.replace(old, new, 1)


@FUZZ
@given(mutated(SPECS))
@example(_edited("pslot.toml", "NUM_CPUS = 10", "NUM_CPUS = $INT(1e999)"))  # a traceback
@example(_edited("pslot.toml", "NUM_CPUS = 10", "NUM_CPUS = 0"))  # "the machine has 0 cpus"
@example(_edited("pslot.toml", 'owner = "alice"', 'owner = "A = 1"'))  # no line
@example(_edited("sawtooth.toml", "NEGOTIATOR_INTERVAL = 100", "NEGOTIATOR_INTERVAL = -1"))
@example(_edited("mixed.toml", "NUM_CPUS = 4", "NUM_CPUS = 99999999999"))  # minutes, GBs
def test_mutated_example_specs_are_read_or_refused_at_a_place(case: tuple[Path, str]) -> None:
    path, text = case
    try:
        parse_spec(text, str(path), base_dir=path.parent)
    except SpecError as e:
        refused_with_place(e)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mutated")


SPEC_OF_CONFIG = '[config]\nfile = "pool.conf"\n\n[[startds]]\ncount = 2\n'


@FUZZ
@given(case=mutated(CONFIGS))
def test_mutated_config_files_are_read_or_refused_at_a_place(
    folder: Path, case: tuple[Path, str]
) -> None:
    (folder / "pool.conf").write_text(case[1])
    try:
        parse_spec(SPEC_OF_CONFIG, "pool.toml", base_dir=folder)
    except SpecError as e:
        refused_with_place(e)


@FUZZ
@given(mutated(SUBMITS))
def test_mutated_submit_files_are_read_or_refused_at_a_place(case: tuple[Path, str]) -> None:
    path, text = case
    try:
        inputs = read_submit_inputs(text, path.name, base_dir=path.parent, environ={})
        parse_submit(
            text,
            path.name,
            owner="alice",
            validate=parse_expr,
            item_files=inputs.item_files,
            env=inputs.env,
        )
    except (SubmitError, SubmitFileError) as e:
        refused_with_place(e)


# --- TOML layouts: the line of a bad line, whatever the layout ------------------------------

MARK = "MARKED"  # on the bad line, to find its number in the generated spec
# (table, layouts of a string value at key, bad line): {body} is the string's content
CONFIG_LAYOUTS = [
    "[config]\ntext = '''\n{body}'''\n",
    '[config]\n"text" = """\n{body}"""\n',
    "[config]\n'text' = '''{body}'''\n",
    "config.text = '''\n{body}'''\n",
    '"config" . "text" = """\n{body}"""\n',
    "config = {{ text = '''\n{body}''' }}\n",
    '[config]\ntext = """\\\n    {body}"""\n',
    '[ config ]  # the pool\'s knobs\ntext = """\n{body}"""\n',
]
STARTD_LAYOUTS = [
    "[[startds]]\nconfig = '''\n{body}'''\n",
    '[[startds]]\n"config" = """\n{body}"""\n',
    "[[startds]]\nconfig.text = '''\n{body}'''\n",
    "[[startds]]\n[startds.config]\ntext = '''\n{body}'''\n",
    "[[startds]]\nconfig = {{ text = '''\n{body}''' }}\n",
    "startds = [\n  {{ count = 1, config = '''\n{body}''' }},\n]\n",
]
SUBMIT_LAYOUTS = [
    "[[submit]]\nowner = 'alice'\ndescription = '''\n{body}'''\n",
    "[[submit]]\nowner = 'alice'\n\"description\" = '''{body}'''\n",
    'submit = [ {{ owner = \'alice\', description = """\n{body}""" }} ]\n',
    "[[submit]]\ndescription = '''\n{body}'''\nowner = 'alice'\n",
]
KINDS = {
    "config": (
        CONFIG_LAYOUTS,
        ["A = 1", "B = $(A)"],
        f"NEGOTIATOR_INTERVAL = $INT(1e999) # {MARK}",
    ),
    "startd": (
        STARTD_LAYOUTS,
        ["MEMORY = 4096", "# a comment"],
        f"NUM_CPUS = $REAL(0*1e999) #{MARK}",
    ),
    "submit": (
        SUBMIT_LAYOUTS,
        ["executable = /bin/true", "arguments = 1"],
        f"request_cpus = $INT(1e99) # {MARK}",
    ),
}
PREAMBLES = ["", "# a pool\n", "\n\n", "[pool]\nseed = 3\n\n", "[pool]\n'seed' = 3 # c\n"]


@FUZZ
@given(
    kind=st.sampled_from(sorted(KINDS)),
    layout=st.integers(0, 7),
    before=st.integers(0, 2),
    preamble=st.sampled_from(PREAMBLES),
)
def test_a_bad_line_is_refused_at_its_own_line_in_any_toml_layout(
    kind: str, layout: int, before: int, preamble: str
) -> None:
    layouts, good, bad = KINDS[kind]
    lines = [*good[:before], bad, *good[before:]]
    if kind == "submit":
        lines.append("queue")
    body = "\n".join(lines) + "\n"
    table = layouts[layout % len(layouts)].format(body=body)
    # a top-level key (config.text = ..., startds = [...]) must come before any [table]
    text = preamble + table if table.startswith("[") or "[" not in preamble else table + preamble
    line = text[: text.index(MARK)].count("\n") + 1
    with pytest.raises(SpecError) as err:
        parse_spec(text, "pool.toml")
    assert str(err.value).startswith(f"pool.toml:{line}: "), (text, str(err.value))
