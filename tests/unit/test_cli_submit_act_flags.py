"""condor_submit's -append/-batch-name/-queue/-terse and condor_rm/hold/release's
one-line-per-argument messages (tool.cpp), worked by hand."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from mockpool.cli.act_messages import act_lines
from mockpool.cli.submit_flags import SubmitFlagError, apply_submit_flags, terse_line


@dataclass
class R:
    job_id: str
    ok: bool
    error: str = ""


def test_append_and_batch_name_go_just_before_the_first_queue() -> None:
    text = "executable = /bin/true\nqueue 2\narguments = x\nqueue\n"
    got = apply_submit_flags(text, append=["+Foo = 1", "request_cpus = 2"], batch_name="b1")
    assert got == (
        "executable = /bin/true\n+Foo = 1\nrequest_cpus = 2\nbatch_name = b1\n"
        "queue 2\narguments = x\nqueue\n"
    )


def test_queue_flag_supplies_the_statement_and_conflicts_with_one() -> None:
    got = apply_submit_flags("executable = /bin/true\n", append=["+A = 1"], queue="3")
    assert got == "executable = /bin/true\n+A = 1\nqueue 3\n"
    with pytest.raises(SubmitFlagError, match="-queue argument conflicts with queue statement"):
        apply_submit_flags("executable = x\n  Queue 1\n", queue="2")
    # "queue = x" is an assignment, not a queue statement
    assert apply_submit_flags("queue = 4\n", queue="1") == "queue = 4\nqueue 1\n"


def test_terse_prints_first_and_last_job_ids() -> None:
    assert terse_line(4, 20) == "4.0 - 4.19"
    assert terse_line(7, 1) == "7.0 - 7.0"


def test_cluster_job_and_constraint_lines() -> None:
    results = [R("4.0", True), R("4.1", True), R("5.2", True)]
    out, err = act_lines("remove", ["4", "5.2"], "", False, results)
    assert out == [
        "All jobs in cluster 4 have been marked for removal",
        "Job 5.2 marked for removal",
    ]
    assert err == []
    out, _ = act_lines("hold", [], 'Owner == "a"', False, [R("9.0", True), R("9.1", True)])
    assert out == ['All jobs matching constraint (Owner == "a") have been held']
    out, _ = act_lines("release", [], "true", True, [R("9.0", True)])
    assert out == ["All jobs have been released"]


def test_refusals_go_to_stderr_and_no_success_line() -> None:
    results = [
        R("7", False, "Couldn't find/remove all jobs in cluster 7"),
        R("4.0", True),
        R("4.1", False, "Permission denied to remove job 4.1"),
    ]
    out, err = act_lines("remove", ["7", "4"], "", False, results)
    assert out == []
    assert err == [
        "Couldn't find/remove all jobs in cluster 7",
        "Permission denied to remove job 4.1",
    ]


def test_daemon_down_messages_are_htcondors_words() -> None:
    from mockpool.cli.down_messages import daemon_down_message

    gone = "/mockpool.v1.Schedd/QueryJobs still UNAVAILABLE after 4 attempts over 1.20s"
    schedd = ("schedd1", "127.0.0.1:4001")
    assert daemon_down_message(gone, "127.0.0.1:9618", schedd) == (
        "-- Failed to fetch ads from: <127.0.0.1:4001> : schedd1"
    )
    act = "/mockpool.v1.Schedd/Act still UNAVAILABLE after 4 attempts over 1.20s"
    assert daemon_down_message(act, "127.0.0.1:9618", schedd) == (
        "ERROR: Failed to connect to queue manager schedd1"
    )
    query = "/mockpool.v1.Collector/Query still UNAVAILABLE after 4 attempts over 1.20s"
    assert daemon_down_message(query, "127.0.0.1:9618", None) == (
        "Error: Couldn't contact the condor_collector on 127.0.0.1:9618."
    )
