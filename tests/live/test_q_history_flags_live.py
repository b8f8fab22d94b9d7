"""Every new `q` and `history` flag of issue 41 on one live pool (the quiet pool plus two
jobs that ran and completed, one that runs, and one held with a long reason), each
output compared with a golden file in tests/data/golden/q/ after dates, times and
addresses are normalised. MOCKPOOL_UPDATE_GOLDEN=1 rewrites the files."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from builders.live import QuietPool, run_cli

GOLDEN = Path(__file__).resolve().parent.parent / "data" / "golden" / "q"

_DATE = re.compile(r"\b\d{1,2}/\d{1,2}(/\d{2,4})? +\d\d:\d\d(:\d\d)?\b")
_CTIME = re.compile(r"\b[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4}\b")
_SPAN = re.compile(r"\b\d+\+\d\d:\d\d:\d\d\b")
_UNIX = re.compile(r"\b1[6-9]\d{8}\b")
_DYNAMIC_SLOT = re.compile(r"\bslot(\d+)_\d+@")  # which dynamic slot a job got
_ADDRESS = re.compile(r"<?\b\d+\.\d+\.\d+\.\d+:\d+\b[^\s>\"]*>?")

LONG_REASON = "the input file " + "/very/long/path" * 8 + " is not there"


def normalise(text: str) -> str:
    """Dates, run times, Unix times, addresses and dynamic slot numbers vary run to run;
    their places do not."""
    text = _DATE.sub(lambda m: "M/D hh:mm".ljust(len(m[0])), text)
    text = _CTIME.sub("CTIME", text)
    text = _SPAN.sub(lambda m: "D+hh:mm:ss".rjust(len(m[0])), text)
    text = _ADDRESS.sub("<ADDRESS>", text)
    text = _DYNAMIC_SLOT.sub(lambda m: f"slot{m[1]}_N@", text)
    return _UNIX.sub("UNIXTIME", text)


@pytest.fixture(scope="module")
def pool(quiet_pool: QuietPool) -> QuietPool:
    """The quiet pool (alice's idle 1.0-1.2, bob's held 2.0) and: alice's 3.0 and 4.0
    completed (3.0 first), 5.0 running, carol's 6.0 held with a reason of 140 characters."""
    p = quiet_pool.pool
    # the 2-cpu slot runs 3.0 and 4.0 at once; 5.0 starts when 3.0 (shorter) leaves
    for seconds in (5, 30, 1000000):
        p.submit(f"executable = /bin/sleep\narguments = {seconds}\nqueue 1", owner="alice")
    assert p.wait(
        lambda: len(p.jobs(history=True)) == 2 and bool(p.jobs("ClusterId == 5 && JobStatus == 2")),
        timeout=60,
    )
    p.submit("executable = /bin/sleep\narguments = 5\nrequirements = false\nqueue 1", owner="carol")
    (held,) = p.act("hold", ["6.0"], reason=LONG_REASON)
    assert held.ok, held.error
    return quiet_pool


CASES = {
    "af": ("q", "-af", "ClusterId", "ProcId", "Owner", "JobStatus", "RequestMemory/1024.0"),
    "af_jth": ("q", "-af:jth", "Owner", "Cmd"),
    "af_lr": ("q", "2.0", "-af:lr", "Owner", "Requirements"),
    "autoformat_comma": ("q", "-autoformat:,", "Owner", "Args"),
    "format": (
        "q",
        "-format",
        "%d.",
        "ClusterId",
        "-format",
        "%-3d",
        "ProcId",
        "-format",
        "%s\\n",
        "Owner",
    ),
    "json": ("q", "1", "-json", "-attributes", "ClusterId,ProcId,Owner,JobStatus,QDate"),
    "global": ("q", "-global"),
    "allusers": ("q", "-allusers", "-nobatch"),
    "submitter": ("q", "-submitter", "bob"),
    "run": ("q", "-run"),
    "idle": ("q", "-idle"),
    "totals": ("q", "-totals"),
    "limit": ("q", "-limit", "2", "-af", "ClusterId", "ProcId"),
    "hold": ("q", "-hold"),
    "wide": ("q", "-nobatch", "-wide"),
    "batch": ("q", "-batch", "bob"),
    "history_wide": ("history", "-wide"),
    "attributes": ("q", "2", "-long", "-attributes", "Owner,ClusterId,JobStatus"),
    "better_analyze": ("q", "-better-analyze", "1.0"),
    "reverse_analyze": ("q", "-reverse-analyze"),
    "reverse_analyze_job": ("q", "-reverse", "2.0"),
    "history_af": ("history", "-af", "ClusterId", "Owner", "ExitCode"),
    "history_json": ("history", "-json", "-attributes", "ClusterId,ProcId,CompletionDate"),
    "history_forwards": ("history", "-forwards", "-af", "ClusterId"),
    "history_match": ("history", "-match", "1", "-af", "ClusterId"),
    "history_forwards_limit": ("history", "-forwards", "-limit", "1", "-af", "ClusterId"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_flag_output_matches_golden(pool: QuietPool, case: str) -> None:
    rc, out, err = run_cli(pool.home, *CASES[case])
    assert rc == 0, err
    got = normalise(out)
    path = GOLDEN / f"{case}.txt"
    if os.environ.get("MOCKPOOL_UPDATE_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(got)
    assert got == path.read_text(), f"{case}: {CASES[case]}"


def test_json_is_json_of_every_attribute(pool: QuietPool) -> None:
    rc, out, _ = run_cli(pool.home, "q", "-json")
    assert rc == 0
    ads = json.loads(out)
    assert [(a["ClusterId"], a["ProcId"]) for a in ads][:3] == [(1, 0), (1, 1), (1, 2)]
    assert all(list(a) == sorted(a, key=str.lower) for a in ads)


def test_hold_and_wide_print_the_reason_whole(pool: QuietPool) -> None:
    for args in (("q", "-hold"), ("q", "-hold", "-wide")):
        rc, out, _ = run_cli(pool.home, *args)
        assert rc == 0 and LONG_REASON in out


def test_history_completedsince_stops_at_the_first_older_job(pool: QuietPool) -> None:
    first, second = sorted(
        pool.pool.jobs(history=True), key=lambda a: int(a.get_value("CompletionDate"))
    )
    since = str(int(first.get_value("CompletionDate")))
    rc, out, _ = run_cli(pool.home, "history", "-completedsince", since, "-af", "ClusterId")
    assert rc == 0
    assert out == f"{second.get_value('ClusterId')}\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("q", "-run", "-idle"), "-run and -hold/held or -idle are incompatible"),
        (("q", "-limit", "0"), "-limit takes a positive number"),
        (("q", "-batch", "-af", "Owner"), "-batch conflicts"),
        (("q", "-better-analyze", "-reverse"), "not supported"),
        (("q", "-af"), "needs at least one attribute"),
        (("q", "-format", "%d %d", "ClusterId"), "2 conversions"),
        (("history", "-completedsince", "1 +"), "not a valid -completedsince"),
    ],
)
def test_bad_flags_are_refused_with_a_reason(
    pool: QuietPool, args: tuple[str, ...], message: str
) -> None:
    rc, _, err = run_cli(pool.home, *args)
    assert rc == 2 and message in err


def test_pool_names_the_collector_as_htcondors_tools_do(
    pool: QuietPool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `-pool HOST:PORT`: the central manager's collector, the tokens from $MOCKPOOL_HOME
    import contextlib
    import io

    from mockpool.cli.main import main

    monkeypatch.setenv("MOCKPOOL_HOME", str(pool.home))
    collector = pool.addresses["collector"]
    for args in (["q", "-af", "ClusterId", "ProcId", "Owner"], ["status", "-af", "Name"]):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert main([*args, "-pool", collector]) == 0
        rc, by_folder, err = run_cli(pool.home, *args)
        assert rc == 0, err
        assert out.getvalue() == by_folder and by_folder.strip(), args
    # nothing listens there: HTCondor's words, not gRPC's
    with pytest.raises(SystemExit) as e:
        main(["q", "-pool", "127.0.0.1:1"])
    assert "Couldn't contact the condor_collector on 127.0.0.1:1" in str(e.value)
