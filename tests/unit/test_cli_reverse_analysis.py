"""condor_q -reverse-analyze: each slot's own Requirements against the jobs, as HTCondor's
jobmatch.cpp doSlotRunAnalysisToBuffer prints its table ("%-W.Ws %-4s %12d %12d %10.2f",
W = max(longest Machine + 7, longest Name, 16); headings "%4s %12.12s %12.12s %10.10s").
Counts worked out by hand from the ads below."""

from __future__ import annotations

from mockpool.classad import ClassAd, parse_expr
from mockpool.cli.reverse_analysis import format_reverse_analyze, reverse_analyze

BANNER = "\n\n-- Schedd: schedd1 : <10.0.0.1:9618> @ 11/22/24 10:00:00\n"


def slot(name: str, start: str, **extra: object) -> ClassAd:
    ad = ClassAd({"Name": name, "Machine": "node1.example", "Memory": 128, **extra})
    ad["Start"] = parse_expr(start)
    ad["Requirements"] = parse_expr("START")
    return ad


def job(cluster: int, owner: str, requirements: str) -> ClassAd:
    ad = ClassAd({"ClusterId": cluster, "ProcId": 0, "Owner": owner})
    ad["Requirements"] = parse_expr(requirements)
    return ad


NO_BOB = slot("slot1@node1.example", 'TARGET.Owner != "bob"')
ANYONE = slot("slot2@node1.example", "true")
ALICE = job(1, "alice", "TARGET.Memory >= 100")
BOB = job(2, "bob", "true")

HEAD = (
    "                     Slot  Slot's Req    Job's Req     Both   \n"
    "Name                 Type  Matches Job Matches Slot    Match %\n"
    "-------------------- ---- ------------ ------------ ----------\n"
)


def test_a_slot_whose_start_refuses_an_owner_matches_only_the_others() -> None:
    # slot1's START refuses bob: it takes alice's job only; both jobs take slot1
    m = reverse_analyze(NO_BOB, [ALICE, BOB])
    assert (m.slot_matches_job, m.job_matches_slot, m.both, m.both_percent) == (1, 2, 1, 50.0)
    m = reverse_analyze(ANYONE, [ALICE, BOB])
    assert (m.slot_matches_job, m.job_matches_slot, m.both, m.both_percent) == (2, 2, 2, 100.0)


def test_table_for_two_jobs() -> None:
    # the name column: max(len("node1.example") + 7 = 20, len("slot1@node1.example") = 19, 16)
    assert format_reverse_analyze(BANNER, [ALICE, BOB], [NO_BOB, ANYONE]) == (
        BANNER + "Analyzing matches for 2 jobs\n" + HEAD + "slot1@node1.example  Stat"
        "            1            2      50.00\n"
        "slot2@node1.example  Stat            2            2     100.00\n"
    )


def test_one_job_is_named_and_a_refusing_slot_reads_zero() -> None:
    assert format_reverse_analyze(BANNER, [BOB], [NO_BOB, ANYONE]) == (
        BANNER + "2.0: Analyzing matches for 1 job\n" + HEAD + "slot1@node1.example  Stat"
        "            0            1       0.00\n"
        "slot2@node1.example  Stat            1            1     100.00\n"
    )


def test_slot_types_offline_slots_and_a_long_name_widen_the_column() -> None:
    part = slot("slot1@node1.example", "true", PartitionableSlot=True)
    dyn = slot("slot1_1@a-much-longer-slot.example", "true", DynamicSlot=True)
    off = slot("slot9@node1.example", "true", Offline=True)
    text = format_reverse_analyze("", [ALICE], [part, dyn, off])
    lines = text.splitlines()
    # the Name column 34 wide (the dynamic slot's name); Machine 13 + 7 = 20 is less
    assert lines[3] == "-" * 24 + " " * 10 + " ---- ------------ ------------ ----------"
    assert (
        lines[4] == "slot1@node1.example" + " " * 15 + " Part            1            1     100.00"
    )
    assert (
        lines[5] == "slot1_1@a-much-longer-slot.example Dyn             1            1     100.00"
    )
    assert lines[6] == "slot9@node1.example       is offline"


def test_no_slots_prints_the_banner_alone() -> None:
    assert format_reverse_analyze(BANNER, [ALICE], []) == BANNER
