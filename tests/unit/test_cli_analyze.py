"""`mockpool analyze`: condor_q -better-analyze's figures and layout, character by character.

The layout follows HTCondor's jobmatch.cpp (printJobRunAnalysis, appendJobMatchTotals-
ToBuffer, appendBasicJobRunAnalysisToBuffer) and expr_analyze.cpp (PrettyPrintExprTree,
AnalyzeRequirementsForEachTarget: "[%d]" cut to 5 columns, a space, "%9d", two spaces,
the condition). Counts are worked out by hand from the slots below. Times print in UTC.
"""

from __future__ import annotations

import time

import pytest

from mockpool.classad import ClassAd, parse_expr
from mockpool.cli.analysis import analyze_job
from mockpool.cli.analyze_layout import format_better_analyze

BASE = 1732269600  # 2024-11-22 10:00:00 UTC = pool time 0
REQ = (
    '(TARGET.Arch == "X86_64") && (TARGET.Memory >= RequestMemory) && (TARGET.Cpus >= RequestCpus)'
)


@pytest.fixture(autouse=True)
def utc(monkeypatch):
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def slot(
    n: int,
    machine: str = "exec0001",
    *,
    arch: str = "X86_64",
    memory: int = 1024,
    cpus: int = 1,
    start: str = "true",
    remote: str | None = None,
) -> ClassAd:
    ad = ClassAd(
        Name=f"slot{n}@{machine}",
        Machine=machine,
        Arch=arch,
        OpSys="LINUX",
        Memory=memory,
        Cpus=cpus,
        Disk=1_000_000,
    )
    ad["Start"] = parse_expr(start)
    ad["Requirements"] = parse_expr("START")
    if remote:
        ad["RemoteUser"] = remote
        ad["State"] = "Claimed"
    return ad


def job(requirements: str = REQ, **attrs: object) -> ClassAd:
    ad = ClassAd(
        ClusterId=2,
        ProcId=0,
        Owner="alice",
        User="alice@mockpool",
        RequestMemory=1000,
        RequestCpus=1,
        RequestDisk=1000,
        JobStatus=1,
    )
    ad["Requirements"] = parse_expr(requirements)
    for k, v in attrs.items():
        ad[k] = v
    return ad


# slot1 fits but runs bob's job; slot2 is short of memory, slot3 of cpus; slot4 is ARM;
# slot5 (another machine) fits but its START refuses alice.
POOL = [
    slot(1, remote="bob@mockpool"),
    slot(2, memory=512, cpus=2),
    slot(3, memory=4096, cpus=0),
    slot(4, arch="ARM", memory=4096, cpus=4),
    slot(5, "exec0002", memory=2048, start='TARGET.Owner != "alice"'),
]


def render(j: ClassAd, slots: list[ClassAd]) -> str:
    return format_better_analyze(
        j,
        analyze_job(j, slots),
        schedd_name="schedd1@mockpool",
        schedd_address="<127.0.0.1:9618?addrs=127.0.0.1-9618>",
        now_wall=BASE + 300,
    )


def test_counts_each_step_and_each_kind_of_slot():
    a = analyze_job(job(), POOL)
    # arch: 1,2,3,5 = 4; memory: 1,3,4,5 = 4; both: 1,3,5 = 3; cpus: 1,2,4,5 = 4; all: 1,5 = 2
    assert [(s.index, s.matched) for s in a.steps] == [(0, 4), (1, 4), (2, 3), (3, 4), (4, 2)]
    assert [s.label for s in a.steps][2:] == [
        "[0] && [1]",
        "TARGET.Cpus >= RequestCpus",
        "[2] && [3]",
    ]
    assert (a.total_slots, a.machines) == (5, 2)
    assert (
        a.rejected_by_job,
        a.rejected_by_slots,
        a.serving_others,
        a.running_yours,
        a.willing,
    ) == (3, 1, 1, 0, 0)
    assert a.job_attributes == [
        ("requestcpus", "RequestCpus = 1"),
        ("requestmemory", "RequestMemory = 1000"),
    ]


def test_golden_better_analyze_with_rejection_reason():
    j = job(LastRejMatchTime=BASE + 100, LastRejMatchReason="PREEMPTION_REQUIREMENTS == False")
    assert render(j, POOL) == (
        "\n\n-- Schedd: schedd1@mockpool : <127.0.0.1:9618?... @ 11/22/24 10:05:00\n"
        "The Requirements expression for job 2.000 is\n"
        "\n"
        '    (TARGET.Arch == "X86_64") && (TARGET.Memory >= RequestMemory) &&\n'
        "    (TARGET.Cpus >= RequestCpus)\n"
        "\n"
        "Job 2.000 defines the following attributes:\n"
        "\n"
        "    RequestCpus = 1\n"
        "    RequestMemory = 1000\n"
        "\n"
        "The Requirements expression for job 2.000 reduces to these conditions:\n"
        "\n"
        "        Slots\n"
        "Step   Matched  Condition\n"
        "----- --------- ---------\n"
        '[0]           4  TARGET.Arch == "X86_64"\n'
        "[1]           4  TARGET.Memory >= RequestMemory\n"
        "[2]           3  [0] && [1]\n"
        "[3]           4  TARGET.Cpus >= RequestCpus\n"
        "[4]           2  [2] && [3]\n"
        "\n"
        "\n"
        "002.000:  Run analysis summary ignoring user priority.  Of 5 slots on 2 machines,\n"
        "      3 slots are rejected by your job's requirements\n"
        "      1 slots reject your job because of their own requirements\n"
        "      1 slots match but are serving other users\n"
        "      0 slots match and are willing to run your job\n"
        "\n"
        "No successful match recorded.\n"
        "Last failed match: Fri Nov 22 10:01:40 2024\n"
        "Reason for last match failure: PREEMPTION_REQUIREMENTS == False\n"
    )


def test_golden_nothing_matches_with_a_constant_step_and_a_held_job():
    # RequestCpus > 4 does not depend on the slot: "never"; the && stands for it, and its
    # other side, matching more slots than the &&, is pruned as irrelevant
    j = job(
        '(TARGET.Arch == "X86_64") && (RequestCpus > 4)',
        RequestCpus=1,
        JobStatus=5,
        HoldReason="via condor_hold (by user alice)",
        LastMatchTime=BASE + 50,
    )
    assert render(j, POOL).split("reduces to these conditions:\n\n", 1)[1] == (
        "        Slots\n"
        "Step   Matched  Condition\n"
        "----- --------- ---------\n"
        "[1]       never  RequestCpus > 4\n"
        "\n"
        "\n"
        "002.000:  Run analysis summary ignoring user priority.  Of 5 slots on 2 machines,\n"
        "      5 slots are rejected by your job's requirements\n"
        "      0 slots reject your job because of their own requirements\n"
        "      0 slots match and are willing to run your job\n"
        "\n"
        "WARNING:  Be advised:\n"
        "   No machines matched the job's constraints\n"
        "\n"
        "\n"
        "002.000:  Job is held.\n"
        "\n"
        "Hold reason: via condor_hold (by user alice)\n"
        "\n"
        "Last successful match: Fri Nov 22 10:00:50 2024\n"
    )


def test_all_slots_reject_gives_the_reverse_hint_and_running_yours_is_counted():
    slots = [slot(1, start="false"), slot(2, remote="alice@mockpool")]
    text = render(job(), slots)
    assert "      1 slots match and are already running your jobs\n" in text
    assert "      0 slots match but are serving other users\n" in text
    assert "   Job did not match any machines' constraints\n" not in text  # slot2 matches both ways
    text = render(job(), [slot(1, start="false")])
    assert (
        "   Job did not match any machines' constraints\n     -reverse -machine <name>\n"
        not in text
    )
    assert "   Job did not match any machines' constraints\n   To see why, pick a machine" in text


def test_long_requirements_wrap_after_and_at_80_columns():
    req = " && ".join(f"(TARGET.Attribute{k} >= {k * 1000})" for k in range(6))
    text = render(job(req), POOL)
    body = text.split("is\n\n", 1)[1].split("\n\n", 1)[0]
    lines = body.split("\n")
    assert all(len(x) <= 80 for x in lines) and all(x.endswith("&&") for x in lines[:-1])
    assert lines[0] == "    (TARGET.Attribute0 >= 0) && (TARGET.Attribute1 >= 1000) &&"
    assert lines[1] == "    (TARGET.Attribute2 >= 2000) && (TARGET.Attribute3 >= 3000) &&"


def test_no_slots_prints_no_summary():
    text = render(job(), [])
    assert "Run analysis summary" not in text and "[0]           0  " in text
