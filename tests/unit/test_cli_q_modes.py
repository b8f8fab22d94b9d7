"""condor_q -run, -idle and -totals (services/cli/q_layouts.py) and condor_history's
-completedsince (job_cmds.since_cut), character by character.

Widths from queue.cpp's jobRuntime_PrintFormat and jobIdle_PrintFormat: ` ID` 5
(`%4d.`), ` ` 3 with no separator before it (`%-3d`), OWNER 14 left, SUBMITTED 11 and
RUN_TIME 12 right, HOST(S) as wide as its text; -idle's UNIVERSE/CPUS/MEMORY/STARTS are
as wide as their heading (`UNIVERSE ` 9, 4, 6, 6), left-aligned, the numbers printf'd
`%4d`/`%6d`/`%6d`. Times print in UTC."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from mockpool.classad import parse_ad
from mockpool.cli.job_cmds import selection_constraint, since_cut
from mockpool.cli.q_layouts import JobTotals, format_q_mode

BASE = 1732269600  # 2024-11-22 10:00:00 UTC
HEADER = "\n\n-- Schedd: s1 : <127.0.0.1:9618> @ 11/22/24 11:00:00\n"


@pytest.fixture(autouse=True)
def utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def job(text: str) -> object:
    return parse_ad(f'[ ClusterId = 1; ProcId = 0; Owner = "alice"; JobUniverse = 5; {text} ]')


def q(jobs: list, mode: str) -> str:
    return format_q_mode(
        jobs,
        mode,
        schedd_name="s1",
        schedd_address="<127.0.0.1:9618>",
        now_wall=BASE + 3600,
        total_all=JobTotals(jobs=9, idle=9),
    )


def test_run_layout() -> None:
    # QDate 10:00, running since 10:30 with 100 s of earlier runs: 1900 s at 11:00
    ad = job(
        f"QDate = {BASE}; JobStatus = 2; JobCurrentStartDate = {BASE + 1800};"
        ' RemoteWallClockTime = 100.0; RemoteHost = "slot1_1@exec0001"'
    )
    assert q([ad], "run") == HEADER + (
        " ID      OWNER            SUBMITTED     RUN_TIME HOST(S)\n"
        "   1.0   alice          11/22 10:00   0+00:31:40 slot1_1@exec0001\n"
    )


def test_idle_layout_widens_past_the_heading() -> None:
    small = job("RequestCpus = 1; RequestMemory = 128; JobStatus = 1")
    big = parse_ad(
        '[ ClusterId = 12; ProcId = 3; Owner = "bob"; JobUniverse = 7; RequestCpus = 12345;'
        ' RequestMemory = 2048; NumShadowStarts = 2; LastRemoteHost = "slot1@exec2" ]'
    )
    assert q([big, small], "idle") == HEADER + (
        " ID      OWNER          UNIVERSE  CPUS  MEMORY STARTS LAST_HOST\n"
        "   1.0   alice          Vanilla      1     128      0 \n"
        "  12.3   bob            Scheduler 12345   2048      2 slot1@exec2\n"
    )


def test_totals_is_the_header_and_the_totals_lines() -> None:
    assert q([job("JobStatus = 1"), job("JobStatus = 5")], "totals") == HEADER + (
        "\nTotal for query: 2 jobs; 0 completed, 0 removed, 1 idle, 0 running, 1 held,"
        " 0 suspended \n"
        "Total for all users: 9 jobs; 0 completed, 0 removed, 9 idle, 0 running, 0 held,"
        " 0 suspended\n\n"
    )


def test_completedsince_stops_at_the_first_job_completed_at_or_before() -> None:
    # newest first; 3.0 completed at 300 stops the scan, so 1.0 (at 500, out of order
    # as a history file can be) is not reached
    ads = [
        parse_ad(f"[ ClusterId = {c}; CompletionDate = {t} ]")
        for c, t in ((4, 900), (3, 300), (1, 500))
    ]
    assert [a.get_value("ClusterId") for a in since_cut(ads, "300")] == [4]
    assert [a.get_value("ClusterId") for a in since_cut(ads, "299")] == [4, 3, 1]
    assert since_cut(ads, "1000") == []


def test_selection_constraint_still_builds_the_query() -> None:
    assert selection_constraint("x > 1", ["alice", "4.1"]) == (
        '(x > 1) && (Owner == "alice") && ((ClusterId == 4 && ProcId == 1))'
    )
