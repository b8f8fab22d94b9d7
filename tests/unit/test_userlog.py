"""The user job event log's text (services/schedd/userlog.py), event by event, against
texts written by hand from HTCondor's condor_event.cpp (formatHeader, each formatBody,
formatRusage, formatUsageAd) and WriteUserLog's "..." line; then read back with
HTCondor's own reader, htcondor2.JobEventLog."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from mockpool.schedd.userlog import (
    ABORTED,
    EVICTED,
    EXECUTE,
    HELD,
    RECONNECT_FAILED,
    RELEASED,
    SUBMIT,
    TERMINATED,
    DateFormat,
    LogEvent,
    UsageRow,
    format_date,
    format_event,
    format_events,
    format_options,
    wall_time,
)

# 2026-11-28 08:00:00 UTC; the tests print UTC dates (the local zone is the machine's)
BASE = 1795852800
UTC = DateFormat(utc=True)
USAGE = (
    UsageRow("Memory", 0, 128, 128),
    UsageRow("Cpus", None, 1, 1),
    UsageRow("Disk", 43, 1, 100),
)
NO_CPU = "Usr 0 00:00:00, Sys 0 00:00:00"


def ev(number: int, t: float = 0.0, usage: tuple[UsageRow, ...] = (), **fields: object) -> LogEvent:
    return LogEvent("/tmp/job.log", number, 12, 3, t, fields, usage)


def test_pool_time_is_printed_as_the_start_date_plus_pool_seconds() -> None:
    assert wall_time(BASE, 65.5) == BASE + 65.5
    assert format_date(wall_time(BASE, 65.5), UTC) == "2026-11-28 08:01:05Z"
    assert format_date(BASE + 65.5, DateFormat(utc=True, sub_second=True)) == (
        "2026-11-28 08:01:05.500Z"
    )
    assert format_date(BASE + 65, DateFormat(iso=False, utc=True)) == "11/28 08:01:05Z"


def test_dates_are_local_times_without_utc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "EST+5")  # five hours behind UTC, no summer time
    time.tzset()
    try:
        assert format_date(BASE) == "2026-11-28 03:00:00"
        assert format_date(BASE, DateFormat(iso=False)) == "11/28 03:00:00"
    finally:
        monkeypatch.undo()
        time.tzset()


def test_format_options_read_as_parse_opts() -> None:
    assert format_options(None) == DateFormat(iso=True, utc=False, sub_second=False)
    assert format_options("UTC, SUB_SECOND") == DateFormat(True, True, True)
    assert format_options("LEGACY") == DateFormat(False, False, False)
    assert format_options("UTC LEGACY") == DateFormat(False, False, False)
    assert format_options("LEGACY !LEGACY") == DateFormat(True, False, False)
    assert format_options("utc !iso_date json") == DateFormat(False, True, False)


def test_submit_and_execute() -> None:
    assert format_event(ev(SUBMIT, host="<127.0.0.1:9618>"), BASE, UTC) == (
        "000 (012.003.000) 2026-11-28 08:00:00Z Job submitted from host: <127.0.0.1:9618>\n...\n"
    )
    assert format_event(ev(EXECUTE, 5, host="<10.0.0.2:9000>", slot="slot1@exec1"), BASE) == (
        "001 (012.003.000) 2026-11-28 08:00:05 Job executing on host: <10.0.0.2:9000>\n"
        "\tSlotName: slot1@exec1\n"
        "...\n"
    )


def test_submit_notes_the_batch_name_as_a_classad() -> None:
    # WriteSubmitToUserLog's structured notes: the evaluated JobBatchName, unparsed
    text = format_event(ev(SUBMIT, host="<h:1>", batch_name='run "7"'), BASE, UTC)
    assert text == (
        "000 (012.003.000) 2026-11-28 08:00:00Z Job submitted from host: <h:1>\n"
        '    [ JobBatchName = "run \\"7\\"" ]\n'
        "...\n"
    )


def test_terminated_with_its_return_value_and_usage_table() -> None:
    # columns: Usage and Request at least 8 wide, Allocated at least 9; the resource
    # column sizeof("Memory (MB)") + 8 = 20; rows by name; each line ends with the
    # (empty) Assigned column after a space, as formatUsageAd prints it
    assert format_event(ev(TERMINATED, 60, USAGE, return_value=2), BASE, UTC) == (
        "005 (012.003.000) 2026-11-28 08:01:00Z Job terminated.\n"
        "\t(1) Normal termination (return value 2)\n"
        f"\t\t{NO_CPU}  -  Run Remote Usage\n"
        f"\t\t{NO_CPU}  -  Run Local Usage\n"
        f"\t\t{NO_CPU}  -  Total Remote Usage\n"
        f"\t\t{NO_CPU}  -  Total Local Usage\n"
        "\t0  -  Run Bytes Sent By Job\n"
        "\t0  -  Run Bytes Received By Job\n"
        "\t0  -  Total Bytes Sent By Job\n"
        "\t0  -  Total Bytes Received By Job\n"
        "\tPartitionable Resources :    Usage  Request Allocated \n"
        "\t   Cpus                 :                 1         1 \n"
        "\t   Disk (KB)            :       43        1       100 \n"
        "\t   Memory (MB)          :        0      128       128 \n"
        "...\n"
    )


def test_a_fraction_in_a_column_lines_up_its_whole_numbers() -> None:
    rows = (UsageRow("Cpus", 0.25, 1, 1), UsageRow("Disk", 43, 1, 100))
    text = format_event(ev(TERMINATED, 0, rows), BASE, UTC)
    assert text.endswith(
        "\tPartitionable Resources :    Usage  Request Allocated \n"
        "\t   Cpus                 :     0.25        1         1 \n"
        "\t   Disk (KB)            :    43           1       100 \n"
        "...\n"
    )


def test_terminated_by_a_signal() -> None:
    text = format_event(ev(TERMINATED, signal=9), BASE, UTC)
    assert "\t(0) Abnormal termination (signal 9)\n\t(0) No core file\n\t\tUsr 0" in text


def test_evicted_vacated_and_requeued() -> None:
    assert format_event(ev(EVICTED, 6, reason="preempted by a better job"), BASE, UTC) == (
        "004 (012.003.000) 2026-11-28 08:00:06Z Job was evicted.\n"
        "\t(0) CPU times\n"
        f"\t\t{NO_CPU}  -  Run Remote Usage\n"
        f"\t\t{NO_CPU}  -  Run Local Usage\n"
        "\t0  -  Run Bytes Sent By Job\n"
        "\t0  -  Run Bytes Received By Job\n"
        "\tReason: preempted by a better job\n"
        "...\n"
    )
    vacated = format_event(ev(EVICTED, 6, reason="too long", code=1000, subcode=2), BASE, UTC)
    assert vacated.startswith(
        "004 (012.003.000) 2026-11-28 08:00:06Z Job was evicted. Code 1000 Subcode 2\n"
    )
    requeued = format_event(
        ev(EVICTED, 6, requeued=True, return_value=1, reason="retry"), BASE, UTC
    )
    assert requeued == (
        "004 (012.003.000) 2026-11-28 08:00:06Z Job was evicted.\n"
        "\t(0) Job terminated and was requeued\n"
        f"\t\t{NO_CPU}  -  Run Remote Usage\n"
        f"\t\t{NO_CPU}  -  Run Local Usage\n"
        "\t0  -  Run Bytes Sent By Job\n"
        "\t0  -  Run Bytes Received By Job\n"
        "\t(1) Normal termination (return value 1)\n"
        "\tretry\n"
        "...\n"
    )


def test_aborted_held_released_and_reconnect_failed() -> None:
    assert format_event(ev(ABORTED, 7, reason="via condor_rm (by user alice)"), BASE, UTC) == (
        "009 (012.003.000) 2026-11-28 08:00:07Z Job was aborted.\n"
        "\tvia condor_rm (by user alice)\n"
        "...\n"
    )
    assert format_event(ev(HELD, 8, reason="via condor_hold", code=1, subcode=0), BASE, UTC) == (
        "012 (012.003.000) 2026-11-28 08:00:08Z Job was held.\n"
        "\tvia condor_hold\n"
        "\tCode 1 Subcode 0\n"
        "...\n"
    )
    assert format_event(ev(HELD, 8), BASE, UTC).endswith(
        "\tReason unspecified\n\tCode 0 Subcode 0\n...\n"
    )
    assert format_event(ev(RELEASED, 9, reason="via condor_release"), BASE, UTC) == (
        "013 (012.003.000) 2026-11-28 08:00:09Z Job was released.\n\tvia condor_release\n...\n"
    )
    text = format_event(
        ev(RECONNECT_FAILED, 10, reason="Job not found at execution machine", startd="exec1"),
        BASE,
        UTC,
    )
    assert text == (
        "024 (012.003.000) 2026-11-28 08:00:10Z Job reconnection failed\n"
        "    Job not found at execution machine\n"
        "    Can not reconnect to exec1, rescheduling job\n"
        "...\n"
    )


def test_a_newline_in_a_reason_does_not_start_a_new_line() -> None:
    text = format_event(ev(HELD, reason="one\n...\n000 (1.0.0) two", code=1), BASE, UTC)
    assert text.count("\n") == 4 and "\tone ... 000 (1.0.0) two\n" in text


def test_big_ids_and_events_grouped_by_file() -> None:
    a = LogEvent("/a.log", SUBMIT, 12345, 1000, 0, {"host": "<h>"})
    b = LogEvent("/b.log", ABORTED, 1, 0, 1, {})
    c = LogEvent("/a.log", ABORTED, 12345, 1000, 2, {})
    texts = format_events([a, b, c], BASE, UTC)
    assert list(texts) == ["/a.log", "/b.log"]
    assert texts["/a.log"].startswith("000 (12345.1000.000) 2026-11-28 08:00:00Z Job submitted")
    assert texts["/a.log"].count("...\n") == 2
    assert texts["/b.log"] == "009 (001.000.000) 2026-11-28 08:00:01Z Job was aborted.\n...\n"


def test_an_event_this_schedd_never_writes_is_refused() -> None:
    with pytest.raises(ValueError, match="event 006"):
        format_event(ev(6), BASE)


def test_htcondor_reads_every_event(tmp_path: Path) -> None:
    htcondor2 = pytest.importorskip("htcondor2")
    life = [
        ev(SUBMIT, 0, host="<127.0.0.1:9618>", batch_name="nightly"),
        ev(EXECUTE, 5, host="<127.0.0.1:9619>", slot="slot1@exec1"),
        ev(EVICTED, 6, USAGE, reason="preempted", code=1000, subcode=2),
        ev(RECONNECT_FAILED, 7, reason="Job not found at execution machine", startd="exec1"),
        ev(HELD, 8, reason="via condor_hold", code=1, subcode=0),
        ev(RELEASED, 9, reason="via condor_release"),
        ev(EVICTED, 10, USAGE, requeued=True, return_value=3, reason="OnExitRemove"),
        ev(TERMINATED, 11.5, (UsageRow("Cpus", 0.25, 1, 1), *USAGE[:1]), return_value=2),
        ev(ABORTED, 12, reason="via condor_rm"),
    ]
    path = tmp_path / "job.log"
    path.write_text(format_events(life, BASE)["/tmp/job.log"])
    got = list(htcondor2.JobEventLog(str(path)).events(0))
    assert [int(e.type) for e in got] == [0, 1, 4, 24, 12, 13, 4, 5, 9]
    assert [e.timestamp for e in got] == [BASE + t for t in (0, 5, 6, 7, 8, 9, 10, 11, 12)]
    assert all((e.cluster, e.proc) == (12, 3) for e in got)
    submit, execute, vacate, lost, held, released, requeued, done, aborted = got
    assert submit["SubmitHost"] == "<127.0.0.1:9618>"
    assert submit["StructuredNotes"]["JobBatchName"] == "nightly"
    assert (execute["ExecuteHost"], execute["SlotName"]) == ("<127.0.0.1:9619>", "slot1@exec1")
    assert (vacate["ReasonCode"], vacate["ReasonSubCode"], vacate["Reason"]) == (
        1000,
        2,
        "preempted",
    )
    assert lost["StartdName"] == "exec1"
    assert (held["HoldReason"], held["HoldReasonCode"]) == ("via condor_hold", 1)
    assert released["Reason"] == "via condor_release"
    assert requeued["TerminatedAndRequeued"] and requeued["ReturnValue"] == 3
    assert done["ReturnValue"] == 2 and done["TerminatedNormally"]
    assert (done["CpusUsage"], done["RequestCpus"], done["Cpus"]) == (0.25, 1, 1)
    assert (done["RequestMemory"], done["Memory"]) == (128, 128)
    assert aborted["Reason"] == "via condor_rm"
