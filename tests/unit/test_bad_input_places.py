"""Bad input, the last cases: every refusal is the project's own error, naming its place.

- ``$INT()`` / ``$REAL()`` of infinity, NaN or (``$INT``) a value beyond 64 bits, in a
  config text, a pool spec (``[config]`` text, a startd's config) and a submit file, and
  over gRPC from a live schedd (INVALID_ARGUMENT, not UNKNOWN with Python's text).
  HTCondor 25 (htcondor2.param) accepts them and prints garbage: ``$INT(1e999)`` is
  -9223372036854775808 (its undefined double-to-integer conversion), ``$REAL(1e999)`` is
  ``INF``; mockpool refuses them instead, as no knob can use either.
- TOML layouts the spec loader's line finder did not know (quoted and dotted keys, inline
  tables, arrays of inline tables, line continuations) are read, with the right lines.
- The refusals that named no place: the slot layout's totals, a default blamed for the
  user's knob it reads, a slot type with no SLOT_TYPE_<N>, a negative negotiator interval,
  a startd check that knows no line, a submit's owner, MAX_JOBS_PER_SUBMISSION.
"""

from __future__ import annotations

from pathlib import Path

import grpc
import grpc.aio
import pytest

from mockpool import auth, rpc
from mockpool.auth import Role
from mockpool.clock import ManualClock
from mockpool.config import ConfigError, parse_config, slot_types
from mockpool.config.constexpr import evaluate_constant
from mockpool.daemon import DaemonContext, EventLog
from mockpool.pool.spec import parse_spec
from mockpool.pool.specmodel import SpecError
from mockpool.pool.tomlplaces import SpecLines, TomlPlaces
from mockpool.schedd.service import ScheddService
from mockpool.schedd.submit import SubmitError, parse_submit
from mockpool.v1 import schedd_pb2 as spb
from mockpool.v1 import schedd_pb2_grpc as sgrpc

# --- 1. $INT() and $REAL() of numbers no knob can hold ----------------------------------


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("X = 1e999\nY = $INT(X)\n", r"\$INT\(X\): '1e999' is infinite"),
        ("X = 1e999\nY = $REAL(X)\n", r"\$REAL\(X\): '1e999' is infinite"),
        ("X = -1e999\nY = $REAL(X, %.2f)\n", "is infinite"),
        ("X = 1e999 - 1e999\nY = $INT(X)\n", r"is not a number \(NaN\)"),  # was an IndexError
        ("X = 1e999 - 1e999\nY = $REAL(X)\n", r"is not a number \(NaN\)"),
        ("X = 1\nY = $INT(1e30)\n", "beyond the range of a 64-bit integer"),
        ("X = 1\nY = $REAL(1e308 * 10)\n", "is infinite"),
        ("X = int(1e999)\nY = $INT(X)\n", "a number out of range"),
        # $EVAL gives HTCondor's text for infinity, real("INF"): not a number for $INT
        # (a macro function's argument ends at the first ")", so through a knob)
        ("Z = 1e999\nY = $INT(W)\nW = $EVAL(Z)\n", r"'real\(\"INF\"\)' is not a number"),
        ("X = 1\nY = $INT(5000000, %c)\n", "bad format ' %c'"),
    ],
)
def test_int_and_real_of_a_non_finite_value_are_refused_at_their_line(text, problem):
    cfg = parse_config(text, "pool.conf")
    with pytest.raises(ConfigError, match=rf"^pool\.conf:2: Y: .*{problem}"):
        cfg["Y"]


def test_finite_values_print_as_before():
    cfg = parse_config(
        "A = 2.5\nI = $INT(A)\nR = $REAL(A,%.2f)\nM = $INT(-9223372036854775808)\n"
        "W = $REAL(3,%.0f)\n",
        "pool.conf",
    )
    assert (cfg["I"], cfg["R"], cfg["M"], cfg["W"]) == ("2", "2.50", "-9223372036854775808", "3.0")


def test_constant_expressions_out_of_range_are_value_errors():
    for text in ("int(1e999)", "floor(1e999)", "round(-1e999)", "1.5 * " + "9" * 400):
        with pytest.raises(ValueError, match="out of range"):
            evaluate_constant(text)


def test_a_default_reading_the_users_bad_macro_blames_the_users_knob():
    cfg = parse_config("A = 1\nDETECTED_MEMORY = $INT(1e999)\n", "pool.conf")
    # MAX_JOBS_RUNNING's default reads DETECTED_MEMORY: the user's line is the place
    with pytest.raises(ConfigError, match=r"^pool\.conf:2: DETECTED_MEMORY \(read by MAX_JOB"):
        cfg.get_int("MAX_JOBS_RUNNING")


SPEC_CONFIG_TEXT = """\
[pool]
seed = 1

[config]
text = '''
X = 1e999
NEGOTIATOR_INTERVAL = $INT(X)
'''
"""

SPEC_STARTD_CONFIG = """\
[[startds]]
count = 1
config = '''
NUM_CPUS = 4
MEMORY = $REAL(1e999 - 1e999)
'''
"""

SPEC_SUBMIT = """\
[[submit]]
owner = "alice"
description = '''
executable = /bin/sleep
request_cpus = $INT(1e999)
queue
'''
"""


@pytest.mark.parametrize(
    ("spec", "line", "problem"),
    [
        (SPEC_CONFIG_TEXT, 7, "is infinite"),
        (SPEC_STARTD_CONFIG, 5, r"is not a number \(NaN\)"),
        (SPEC_SUBMIT, 5, "is infinite"),
    ],
)
def test_a_spec_with_int_or_real_of_infinity_is_refused_at_its_line(spec, line, problem):
    with pytest.raises(SpecError, match=rf"^pool\.toml:{line}: .*{problem}"):
        parse_spec(spec, "pool.toml")


def test_a_submit_file_with_int_of_infinity_is_refused_at_its_line():
    text = "executable = /bin/sleep\nX = 1e999\nrequest_memory = $INT(X)\nqueue\n"
    with pytest.raises(SubmitError, match=r"^job\.sub:3: request_memory: \$INT\(X\): .*infinite"):
        parse_submit(text, "job.sub", owner="alice")


@pytest.fixture
async def schedd(tmp_path: Path):
    """A schedd's gRPC server with token auth, and a stub with alice's SUBMIT token."""
    clock = ManualClock(0.0)
    secret = auth.make_secret()
    ctx = DaemonContext(
        clock=clock,
        config=parse_config("", "<test>"),
        secret=secret,
        collector_address="127.0.0.1:1",
        events=EventLog(clock),
        state_dir=tmp_path,
    )
    svc = ScheddService(ctx, ["schedd1"])
    server, address = await rpc.start_server(
        [svc.add_to_server],
        interceptors=[auth.TokenAuthInterceptor(secret, method_roles=svc.METHOD_ROLES)],
    )
    channel = rpc.make_channel(address, auth.make_token(secret, Role.SUBMIT, "alice"))
    try:
        yield svc, sgrpc.ScheddStub(channel)
    finally:
        await channel.close()
        await rpc.stop_server(server, 0)
        for core in svc.cores.values():
            core.queue.close()
        await ctx.close_channels()


async def test_a_live_schedd_refuses_int_of_infinity_as_invalid_argument(schedd):
    _, stub = schedd
    description = "executable = /bin/sleep\nrequest_cpus = $INT(1e999)\nqueue\n"
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.Submit(spb.SubmitRequest(description=description, source="job.sub"))
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert err.value.details().startswith("job.sub:2: request_cpus: $INT(1e999)")


async def test_a_value_error_the_submit_checks_missed_is_invalid_argument(schedd, monkeypatch):
    svc, stub = schedd

    def overflow(*args, **kwargs):
        raise OverflowError("cannot convert float infinity to integer")

    monkeypatch.setattr(svc.cores["schedd1"], "submit", overflow)
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.Submit(spb.SubmitRequest(description="queue\n", source="job.sub"))
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert err.value.details() == (
        "job.sub: OverflowError: cannot convert float infinity to integer"
    )


# --- 2. TOML layouts ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "line"),
    [
        # a quoted key: the line finder's IndexError in value_start before
        ("[config]\n\"text\" = '''\nA = 1\nB $(\n'''\n", 4),
        ('[[submit]]\nowner = "a"\n"description" = """\nexecutable = x\nqueue 1e9x\n"""\n', 5),
        # dotted keys, inline tables, arrays of inline tables: lines were off before
        ('config.text = """\nA = 1\nB $(\n"""\n', 3),
        ('config = { A = 1, "B B" = "x" }\n', 1),
        ('startds = [\n  { count = 1 },\n  { config = """\nNUM_CPUS = 0\n""" },\n]\n', 4),
        ('[[startds]]\nconfig.text = """\nMEMORY = 64\nNUM_CPUS = 0\n"""\n', 4),
        ('[config]\ntext = """\\\n   A = 1\n   B $(\n"""\n', 4),  # a line continuation
        ("[config]\ntext = '''A = 1\nB $('''\n", 3),  # content on the key's line
    ],
)
def test_spec_layouts_are_read_and_refusals_name_the_right_line(spec, line):
    with pytest.raises(SpecError, match=rf"^pool\.toml:{line}: "):
        parse_spec(spec, "pool.toml")


def test_the_toml_locator_finds_every_key_and_where_each_value_starts():
    text = (
        "[pool]\n"  # 1
        "'seed' = 3  # c\n"  # 2
        "[[startds]]\n"  # 3
        "config = { A = 1, text = '''\n"  # 4
        "X = 1''' }\n"  # 5
        "[[startds]]\n"  # 6
        "[startds.config]\n"  # 7
        'text = """\\\n'  # 8: a line continuation
        "\n"  # 9
        '   Y = 2"""\n'  # 10
        '[accountant."a.b@x"]\n'  # 11
        "factor = [\n"  # 12
        "  1, { x = 2 },\n"  # 13
        "]\n"
    )
    places = TomlPlaces(text).places
    assert {path: (p.key_line, p.value_line) for path, p in places.items()} == {
        ("pool",): (1, 1),
        ("pool", "seed"): (2, 2),
        ("startds",): (3, 3),
        ("startds", 0): (3, 3),
        ("startds", 0, "config"): (4, 4),
        ("startds", 0, "config", "A"): (4, 4),
        ("startds", 0, "config", "text"): (4, 5),
        ("startds", 1): (6, 6),
        ("startds", 1, "config"): (7, 7),
        ("startds", 1, "config", "text"): (8, 10),
        ("accountant", "a.b@x"): (11, 11),
        ("accountant", "a.b@x", "factor"): (12, 12),
        ("accountant", "a.b@x", "factor", 0): (13, 13),
        ("accountant", "a.b@x", "factor", 1): (13, 13),
        ("accountant", "a.b@x", "factor", 1, "x"): (13, 13),
    }
    lines = SpecLines(text)
    assert lines.value_start("startds.config", 1, "text") == 9  # Y's line is the 10th
    assert lines.key("startds", 1, "count") == 6  # not written: the table's line
    assert lines.key("accountant", None, "nobody") == 0


def test_a_non_string_text_is_refused_at_its_key():
    with pytest.raises(SpecError, match=r"^pool\.toml:2: \[config\] text: must be a string"):
        parse_spec("[config]\ntext = [1, { a = 2 }]\n", "pool.toml")


# --- 3. every refusal names its file and line ---------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("NUM_CPUS = 0\n", "c:1: NUM_CPUS: the machine has 0 cpus"),
        ("A = 1\nMEMORY = 10\nRESERVED_MEMORY = 20\n", "c:2: MEMORY: the machine has -10 MB"),
        ("A = 1\nRESERVED_MEMORY = 2000\n", "c:2: RESERVED_MEMORY: the machine has -976 MB"),
        ("NUM_CPUS = 99999999999\n", "c:1: NUM_CPUS: the machine has 99999999999 cpus, more"),
        # no SLOT_TYPE_1: its NUM_SLOTS_TYPE_1 is the user's knob, not a <defaults> one
        ("A = 1\nNUM_SLOTS_TYPE_1 = 5\n", "c:2: NUM_SLOTS_TYPE_1: 5 slots share the remaining 4"),
        ("NUM_SLOTS_TYPE_1 = -1\n", "c:1: NUM_SLOTS_TYPE_1 = -1: a negative number of slots"),
        # no NUM_SLOTS: one slot per cpu, so NUM_CPUS says how many
        (
            "NUM_CPUS = 8\nMEMORY = 4\nSLOT_TYPE_0_PARTITIONABLE = False\n",
            "c:1: NUM_CPUS: 8 slots share the remaining 4 MB of memory",
        ),
        ("NUM_SLOTS = 200000\n", "c:1: NUM_SLOTS: more than 100,000 slots"),
        # a claim id each: the startd took minutes and gigabytes making them
        ("NUM_CLAIMS = 99999999999\n", "c:1: NUM_CLAIMS = 99999999999: more than 100,000"),
    ],
)
def test_slot_layout_refusals_name_the_knob_and_its_line(text, message):
    with pytest.raises(ConfigError) as err:
        slot_types(parse_config(text, "c"), 4, 1024, 100000)
    assert str(err.value).startswith(message)


def test_a_default_made_of_the_users_knob_blames_the_users_line():
    cfg = parse_config("A = 1\nNEGOTIATOR_USE_SLOT_WEIGHTS = maybe\n", "pool.conf")
    with pytest.raises(ConfigError) as err:
        cfg.get_bool("CLAIM_PARTITIONABLE_LEFTOVERS")  # default $(NEGOTIATOR_USE_SLOT_WEIGHTS)
    assert str(err.value) == (
        'pool.conf:2: NEGOTIATOR_USE_SLOT_WEIGHTS = "maybe" (read by '
        'CLAIM_PARTITIONABLE_LEFTOVERS = "maybe"): expected a boolean (True or False)'
    )


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("[config]\nA = 1\nNEGOTIATOR_INTERVAL = -1\n", "pool.toml:3: NEGOTIATOR_INTERVAL must"),
        (  # the startd's NUM_CLAIMS check knows no line: the [[startds]] table's
            "[pool]\nseed = 1\n[[startds]]\nconfig = '''\nNUM_CLAIMS = 1.5\n'''\n",
            "pool.toml:3: [[startds]] #1: NUM_CLAIMS for slot type",
        ),
        (
            "[config]\nMAX_JOBS_PER_SUBMISSION = 1e999\n",
            'pool.toml:2: MAX_JOBS_PER_SUBMISSION = "inf": expected an integer',
        ),
        (
            '[[submit]]\nowner = "A = 1"\ndescription = "queue"\n',
            "pool.toml:2: [[submit]] #1 owner: must name the submitting user",
        ),
        (
            '[[startds]]\nname = "x{:99999999999}"\n',
            "pool.toml:2: [[startds]] #1 name: bad name pattern",
        ),
        ("[[startds]]\nname = 'x{0:{0}}'\n", "pool.toml:2: [[startds]] #1 name: bad name"),
        ("[pool]\nduration = inf\n", "pool.toml:2: [pool] duration: must be a finite number"),
        (
            "[pool]\nseed = 1\n[[submit]]\nat = inf\n",
            "pool.toml:4: [[submit]] #1 at: must be a fin",
        ),
    ],
)
def test_spec_refusals_name_their_line(spec, message):
    with pytest.raises(SpecError) as err:
        parse_spec(spec, "pool.toml")
    assert str(err.value).startswith(message)
