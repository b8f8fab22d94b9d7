"""mockpool.cli.layouts: condor_q / condor_status / condor_history text, character by character.

Every expected line was worked out by hand from HTCondor 25's print-format definitions
(queue.cpp jobDefault_PrintFormat / jobProgress_PrintFormat, prettyPrint.cpp
startdPFV_Normal and friends, totals.cpp, history_utils.h): column widths, the single-space
column separator, left/right alignment, truncation and the ``OR ??`` fill-ins. The comment
above each block gives the widths used. Times print in UTC (the fixture sets TZ=UTC).
"""

from __future__ import annotations

import functools
import time

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from mockpool.classad import ClassAd
from mockpool.cli.history_layout import format_history
from mockpool.cli.layouts import (
    LayoutError,
    fmt_date,
    fmt_duration,
    format_long,
    format_q_long,
    natural_cmp,
    natural_key,
)
from mockpool.cli.q_layouts import JobTotals, format_q
from mockpool.cli.status_normal import (
    format_status,
    format_status_any,
    format_status_negotiator,
    format_status_schedd,
    format_status_submitters,
)

BASE = (
    1732269600  # 2024-11-22 10:00:00 UTC: the pool's date of pool time 0 (ads' dates count from it)
)


@pytest.fixture(autouse=True)
def utc(monkeypatch):
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def job(cluster: int, proc: int, status: int = 1, **kw) -> ClassAd:
    attrs = dict(
        ClusterId=cluster,
        ProcId=proc,
        Owner="alice",
        JobStatus=status,
        QDate=BASE,
        Cmd="/bin/sleep",
        Args="60",
        JobPrio=0,
        ImageSize=100,
    )
    attrs.update(kw)
    return ClassAd(attrs)


def q(jobs, **kw) -> str:
    kw.setdefault("now_wall", BASE + 300)
    return format_q(jobs, schedd_name="schedd@submit", schedd_address="<10.0.0.1:9618>", **kw)


def lines(*ls: str) -> str:
    return "".join(x + "\n" for x in ls)


HEADER_1005 = "\n\n-- Schedd: schedd@submit : <10.0.0.1:9618> @ 11/22/24 10:05:00\n"


# -- time helpers ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "secs, text",
    [
        (90061, "1+01:01:01"),
        (60, "0+00:01:00"),
        (0, "0+00:00:00"),
        (59.9, "0+00:00:59"),
        (86399, "0+23:59:59"),
        (123 * 86400 + 5, "123+00:00:05"),
        (-5, "0+00:00:00"),
    ],
)
def test_fmt_duration(secs, text):
    assert fmt_duration(secs) == text


def test_fmt_date_is_month_day_hour_minute_in_local_time(monkeypatch):
    # format_date(): "%2d/%-2d %02d:%02d"
    assert fmt_date(BASE) == "11/22 10:00"
    assert fmt_date(1704445380) == " 1/5  09:03"  # 2024-01-05 09:03:00 UTC
    assert fmt_date(-1) == "    ???    "
    monkeypatch.setenv("TZ", "America/Chicago")
    time.tzset()
    assert fmt_date(BASE) == "11/22 04:00"  # HTCondor prints local time


def test_natural_cmp_orders_slots_like_condor_status():
    names = ["slot1_10@x", "slot1@x", "slot1_2@x", "slot1_1@x", "slot10@x", "slot2@x"]
    assert sorted(names, key=functools.cmp_to_key(natural_cmp)) == [
        "slot1@x",
        "slot1_1@x",
        "slot1_2@x",
        "slot1_10@x",
        "slot2@x",
        "slot10@x",
    ]
    assert natural_cmp("exec01", "exec1") < 0  # more leading zeros first (strverscmp)
    assert natural_cmp("a", "a") == 0
    assert natural_cmp("exec9", "exec10") < 0 < natural_cmp("exec10", "exec9")


def _sign(x: int) -> int:
    return (x > 0) - (x < 0)


@settings(max_examples=1500, deadline=None)
@example("00", "0")
@example("012@", "0123@")
@example("a0\n1", "a00")
@given(st.text("0019a_@\n", max_size=8), st.text("0019a_@\n", max_size=8))
def test_natural_key_orders_exactly_as_natural_cmp(a, b):
    # the key sorts big pools fast; natural_cmp is the line-by-line port of natural_cmp.cpp
    by_key = (natural_key(a) > natural_key(b)) - (natural_key(a) < natural_key(b))
    assert by_key == _sign(natural_cmp(a, b))


# -- condor_q batch ----------------------------------------------------------------------


# OWNER AUTO (>= "OWNER"), BATCH_NAME >= 10 left, SUBMITTED 12 right, five counters 6 right
# ("_" for 0), JOB_IDS as is; one space between columns.
def test_q_batch_fifteen_idle_jobs_of_one_cluster():
    out = q([job(12, p) for p in range(15)])
    assert out == HEADER_1005 + lines(
        "OWNER BATCH_NAME    SUBMITTED   DONE   RUN    IDLE  TOTAL JOB_IDS",
        "alice ID: 12      11/22 10:00      _      _     15     15 12.0-14",
        "",
        "Total for query: 15 jobs; 0 completed, 0 removed, 15 idle, 0 running, 0 held, 0 suspended ",
        "Total for all users: 15 jobs; 0 completed, 0 removed, 15 idle, 0 running, 0 held, 0 suspended",
        "",
    )


def mixed_jobs() -> list[ClassAd]:
    return [
        job(
            22,
            0,
            2,
            Owner="bob",
            JobBatchName="sweep",
            QDate=BASE + 120,
            JobCurrentStartDate=BASE + 200,
            MemoryUsage=12345,
            JobPrio=-10,
            Args="600",
        ),
        job(20, 1, 5, QDate=BASE + 60, RemoteWallClockTime=120.0, ImageSize=2500, Args="600"),
        job(20, 0, 2, QDate=BASE + 60, JobCurrentStartDate=BASE + 100, ImageSize=2500, Args="600"),
        job(
            21,
            0,
            1,
            Owner="bob",
            JobBatchName="sweep",
            QDate=BASE + 120,
            JobPrio=5,
            ImageSize=2500,
            Args="600",
        ),
        job(20, 2, 4, QDate=BASE + 60, ImageSize=2500, Args="600"),
    ]


def test_q_batch_groups_by_owner_and_batch_name_and_shows_hold_when_held():
    # cluster 20: R, H, C -> DONE _ (procs 0..2 all still queued), RUN 1, IDLE _, HOLD 1,
    # TOTAL 3 (the completed job counts only there); clusters 21 and 22 share "sweep".
    out = q(mixed_jobs(), now_wall=BASE + 3661)
    assert out == "\n\n-- Schedd: schedd@submit : <10.0.0.1:9618> @ 11/22/24 11:01:01\n" + lines(
        "OWNER BATCH_NAME    SUBMITTED   DONE   RUN    IDLE   HOLD  TOTAL JOB_IDS",
        "alice ID: 20      11/22 10:01      _      1      _      1      3 20.0-2",
        "bob   sweep       11/22 10:02      _      1      1      _      2 21.0 ... 22.0",
        "",
        "Total for query: 5 jobs; 1 completed, 0 removed, 1 idle, 2 running, 1 held, 0 suspended ",
        "Total for all users: 5 jobs; 1 completed, 0 removed, 1 idle, 2 running, 1 held, 0 suspended",
        "",
    )


def test_q_batch_done_counts_procs_that_left_the_queue():
    # TotalSubmitProcs 10 with procs 5..9 queued: 5 done. Without it the total is guessed
    # from the highest proc id: procs 0, 3 of cluster 31 -> total 4, done 2.
    jobs = [job(30, p, TotalSubmitProcs=10) for p in range(5, 10)]
    jobs += [job(31, 0, 2, JobCurrentStartDate=BASE), job(31, 3)]
    out = q(jobs, total_all=JobTotals(jobs=40, idle=30, running=10))
    assert out == HEADER_1005 + lines(
        "OWNER BATCH_NAME    SUBMITTED   DONE   RUN    IDLE  TOTAL JOB_IDS",
        "alice ID: 30      11/22 10:00      5      _      5     10 30.5-9",
        "alice ID: 31      11/22 10:00      2      1      1      4 31.0-3",
        "",
        "Total for query: 7 jobs; 0 completed, 0 removed, 6 idle, 1 running, 0 held, 0 suspended ",
        "Total for all users: 40 jobs; 0 completed, 0 removed, 30 idle, 10 running, 0 held, 0 suspended",
        "",
    )


def test_q_batch_short_owner_names_get_an_8_wide_column():
    # every owner shorter than "OWNER": fnFixupWidthsForProgressFormat widens to 8
    out = q([job(7, 0, Owner="bob")])
    assert out.splitlines()[3:5] == [
        "OWNER    BATCH_NAME    SUBMITTED   DONE   RUN    IDLE  TOTAL JOB_IDS",
        "bob      ID: 7       11/22 10:00      _      _      1      1 7.0",
    ]


def test_q_batch_long_batch_name_is_shrunk_to_fit_80_columns():
    # var_wid = 80-50 = 30 < 27+5+7: bw=nw=iw=1; ids halved to 3 (needed 12 > 7);
    # rw=7 -> nw 4, bw 5; owner 5 < nw+8 -> bw = min(10+5+7, 27)-10 = 12: name width 22.
    name = "my_parameter_sweep_2024_run"
    out = q([job(12, p, JobBatchName=name) for p in range(15)])
    assert out.splitlines()[3:5] == [
        "OWNER BATCH_NAME                SUBMITTED   DONE   RUN    IDLE  TOTAL JOB_IDS",
        "alice my_parameter_sweep_202  11/22 10:00      _      _     15     15 12.0-14",
    ]
    wide = q([job(12, p, JobBatchName=name) for p in range(15)], width=None)
    assert wide.splitlines()[4] == (
        "alice my_parameter_sweep_2024_run  11/22 10:00      _      _     15     15 12.0-14"
    )


def test_q_batch_with_no_jobs_keeps_the_default_columns_and_hold():
    # minicondor quickstart output: OWNER 5, BATCH_NAME 12, HOLD shown
    out = q([])
    assert out == HEADER_1005 + lines(
        "OWNER BATCH_NAME      SUBMITTED   DONE   RUN    IDLE   HOLD  TOTAL JOB_IDS",
        "",
        "Total for query: 0 jobs; 0 completed, 0 removed, 0 idle, 0 running, 0 held, 0 suspended ",
        "Total for all users: 0 jobs; 0 completed, 0 removed, 0 idle, 0 running, 0 held, 0 suspended",
        "",
    )


def test_q_header_summarizes_a_sinful_with_parameters():
    out = format_q(
        [],
        schedd_name="s@h",
        schedd_address="<10.0.0.1:9618?addrs=10.0.0.1-9618&alias=h>",
        now_wall=BASE,
    )
    assert out.startswith("\n\n-- Schedd: s@h : <10.0.0.1:9618?... @ 11/22/24 10:00:00\n")


def test_q_my_jobs_query_prints_three_totals_lines():
    out = q(
        [job(1, 0)],
        me=("alice", JobTotals(jobs=1, idle=1)),
        total_all=JobTotals(jobs=3, idle=2, held=1),
    )
    assert out.endswith(
        lines(
            "",
            "Total for query: 1 jobs; 0 completed, 0 removed, 1 idle, 0 running, 0 held, 0 suspended ",
            "Total for alice: 1 jobs; 0 completed, 0 removed, 1 idle, 0 running, 0 held, 0 suspended ",
            "Total for all users: 3 jobs; 0 completed, 0 removed, 2 idle, 0 running, 1 held, 0 suspended",
            "",
        )
    )


def test_job_totals_count_as_the_schedd_does():
    jobs = [job(1, k, s) for k, s in enumerate([1, 2, 3, 4, 5, 6, 7, 7])]
    assert JobTotals.of(jobs) == JobTotals(
        jobs=8, completed=1, removed=1, idle=1, running=2, held=1, suspended=2
    )


# -- condor_q -nobatch -------------------------------------------------------------------


# " ID" 5 right ("%4d."), " " 3 no prefix ("%-3d"), OWNER 14 left, SUBMITTED 11, RUN_TIME 12,
# ST 2 left, PRI >= 3 left, SIZE 4 right truncated ("%.1f" MB), CMD basename + args.
def test_q_nobatch_rows():
    out = q(mixed_jobs(), batch=False, now_wall=BASE + 3661)
    assert out.splitlines()[3:] == [
        " ID      OWNER            SUBMITTED     RUN_TIME ST PRI SIZE CMD",
        "  20.0   alice          11/22 10:01   0+00:59:21 R  0    2.4 sleep 600",  # 3661-100
        "  20.1   alice          11/22 10:01   0+00:02:00 H  0    2.4 sleep 600",  # earlier run
        "  20.2   alice          11/22 10:01   0+00:00:00 C  0    2.4 sleep 600",
        "  21.0   bob            11/22 10:02   0+00:00:00 I  5    2.4 sleep 600",
        "  22.0   bob            11/22 10:02   0+00:57:41 R  -10 1234 sleep 600",  # 12345.0 cut
        "",
        "Total for query: 5 jobs; 1 completed, 0 removed, 1 idle, 2 running, 1 held, 0 suspended ",
        "Total for all users: 5 jobs; 1 completed, 0 removed, 1 idle, 2 running, 1 held, 0 suspended",
        "",
    ]


def test_q_nobatch_big_cluster_id_widens_id_and_size_columns():
    # cluster 12345 -> "%5d." in 6; SIZE widened to len("100.0") = 5; no ImageSize -> 0.0
    out = q([job(12345, 0, ImageSize=102400), job(12345, 1, ImageSize=None)], batch=False)
    assert out.splitlines()[3:6] == [
        " ID       OWNER            SUBMITTED     RUN_TIME ST PRI SIZE  CMD",
        "12345.0   alice          11/22 10:00   0+00:00:00 I  0   100.0 sleep 60",
        "12345.1   alice          11/22 10:00   0+00:00:00 I  0     0.0 sleep 60",
    ]


def test_q_nobatch_lines_are_cut_at_79_columns_unless_wide():
    long_args = "--input data/run_000001.root --output out/run_000001.h5 --verbose"
    row = q([job(1, 0, Args=long_args)], batch=False).splitlines()[4]
    full = "   1.0   alice          11/22 10:00   0+00:00:00 I  0    0.1 sleep " + long_args
    assert row == full[:79]
    assert q([job(1, 0, Args=long_args)], batch=False, width=None).splitlines()[4] == full


def test_q_nobatch_missing_owner_fills_the_column():
    row = q([job(1, 0, Owner=None)], batch=False).splitlines()[4]
    assert row.startswith("   1.0   [????????????] 11/22 10:00")


# -- condor_q -hold ---------------------------------------------------------------------


# queue.cpp's jobHold_PrintFormat: " ID" and " " as -nobatch, OWNER 14 left, HELD_SINCE 11
# (a date), CODE "%4d" with no separator before /SUB "/%-3d" (blank when absent), then
# HOLD_REASON as long as it is, cut at 79 columns unless -wide.
def test_q_hold_rows():
    held = [
        job(
            7,
            2,
            5,
            EnteredCurrentStatus=BASE + 180,
            HoldReasonCode=46,
            HoldReasonSubCode=0,
            HoldReason="The job exceeded allowed job duration of 01:40",
        ),
        job(
            3,
            0,
            5,
            Owner="bob",
            EnteredCurrentStatus=BASE + 3600,
            HoldReasonCode=1,
            HoldReason="via condor_hold (by user bob)",
        ),
        job(3, 1, 5, EnteredCurrentStatus=None, HoldReasonCode=None, HoldReason=None),
    ]
    out = q(held, hold=True, now_wall=BASE + 3661)
    assert out.splitlines()[3:8] == [
        " ID      OWNER          HELD_SINCE  CODE/SUB HOLD_REASON",
        "   3.0   bob            11/22 11:00    1     via condor_hold (by user bob)",
        "   3.1   alice          [?????????]    ?     ",
        "   7.2   alice          11/22 10:03   46/0   The job exceeded allowed job durat",  # 79
        "",
    ]


def test_q_long_sorts_jobs_and_attributes_and_hides_private_ones():
    a = ClassAd(
        {
            "ProcId": 0,
            "ClusterId": 2,
            "owner": "bob",
            "ClaimId": "<1.2.3.4:5>#1#2#s",
            "_condor_priv_x": 1,
            "Args": "x",
        }
    )
    b = ClassAd({"ClusterId": 1, "ProcId": 3, "JobStatus": 1})
    assert format_q_long([a, b]) == lines(
        "ClusterId = 1",
        "JobStatus = 1",
        "ProcId = 3",
        "",
        'Args = "x"',
        "ClusterId = 2",
        'owner = "bob"',
        "ProcId = 0",
        "",
    )


# -- condor_status ----------------------------------------------------------------------


def slot(name: str, state: str, activity: str, memory: int, entered: int, **kw) -> ClassAd:
    attrs = dict(
        Name=name,
        Machine=name.split("@")[1],
        OpSys="LINUX",
        Arch="X86_64",
        State=state,
        Activity=activity,
        Memory=memory,
        EnteredCurrentActivity=BASE + entered,
    )
    attrs.update(kw)
    return ClassAd(attrs)


def pslot_and_ten_dslots() -> list[ClassAd]:
    dyn = [
        slot(
            f"slot1_{k}@exec0001",
            "Claimed",
            "Busy",
            1024,
            100 + k,
            CondorLoadAvg=1.0,
            SlotType="Dynamic",
            DynamicSlot=True,
        )
        for k in (7, 10, 1, 3, 9, 2, 5, 8, 4, 6)
    ]
    p = slot(
        "slot1@exec0001",
        "Unclaimed",
        "Idle",
        6144,
        0,
        SlotType="Partitionable",
        PartitionableSlot=True,
    )
    return [*dyn[:5], p, *dyn[5:]]


# Name >= 34 left (not cut when piped), OpSys 10, Arch 8, State AUTO (9 here), Activity 8,
# LoadAv 6 right "%.3f", Mem 6 right, ActvtyTime 12 right with no separator before it.
def test_status_pslot_and_ten_dynamic_slots_in_natural_order_with_totals():
    out = format_status(pslot_and_ten_dslots(), now=BASE + 90061)
    d = "LINUX      X86_64   Claimed   Busy      1.000   1024"
    assert out == lines(
        "Name                               OpSys      Arch     State     Activity LoadAv Mem     ActvtyTime",
        "",
        "slot1@exec0001                     LINUX      X86_64   Unclaimed Idle      0.000   6144  1+01:01:01",
        f"slot1_1@exec0001                   {d}  1+00:59:20",
        f"slot1_2@exec0001                   {d}  1+00:59:19",
        f"slot1_3@exec0001                   {d}  1+00:59:18",
        f"slot1_4@exec0001                   {d}  1+00:59:17",
        f"slot1_5@exec0001                   {d}  1+00:59:16",
        f"slot1_6@exec0001                   {d}  1+00:59:15",
        f"slot1_7@exec0001                   {d}  1+00:59:14",
        f"slot1_8@exec0001                   {d}  1+00:59:13",
        f"slot1_9@exec0001                   {d}  1+00:59:12",
        f"slot1_10@exec0001                  {d}  1+00:59:11",
        "",
        "               Total Owner Claimed Unclaimed Matched Preempting  Drain Backfill BkIdle",
        "",
        "  X86_64/LINUX    11     0      10         1       0          0      0        0      0",
        "",
        "         Total    11     0      10         1       0          0      0        0      0",
    )


def test_status_on_an_80_column_terminal_crops_the_name_column():
    # remain = 79 - 65 - 34 = -20 -> Name 14 wide, cut; every line fits 79 columns
    ads = [
        a
        for a in pslot_and_ten_dslots()
        if a.get_value("Name") in ("slot1_10@exec0001", "slot1_7@exec0001")
    ]
    out = format_status(ads, now=BASE + 90061, width=80).splitlines()
    assert out[:4] == [
        "Name           OpSys      Arch     State   Activity LoadAv Mem     ActvtyTime",
        "",
        "slot1_7@exec00 LINUX      X86_64   Claimed Busy      1.000   1024  1+00:59:14",
        "slot1_10@exec0 LINUX      X86_64   Claimed Busy      1.000   1024  1+00:59:11",
    ]


def test_status_sorts_by_machine_then_name_and_sizes_name_to_the_longest():
    long = "slot1@" + "a-very-long-execute-host-name.example.org"  # 47 characters
    ads = [
        slot("slot2@exec10", "Owner", "Idle", 1, 5),
        slot("slot1@exec9", "Matched", "Idle", 1, 5),
        slot(long, "Preempting", "Vacating", 1, 5),
    ]
    out = format_status(ads, now=BASE + 5).splitlines()
    assert [r.split()[0] for r in out[2:5]] == [long, "slot1@exec9", "slot2@exec10"]
    assert out[0].startswith("Name" + " " * 44 + "OpSys")  # 47 wide, then the separator
    assert out[2].endswith("LINUX      X86_64   Preempting Vacating  0.000      1  0+00:00:00")
    assert out[-3:] == [
        "  X86_64/LINUX     3     1       0         0       1          1      0        0      0",
        "",
        "         Total     3     1       0         0       1          1      0        0      0",
    ]


def test_status_missing_values_and_malformed_ads():
    # LoadAv absent -> 0.000 (documented difference); Memory "OR ??" -> [????];
    # ActvtyTime "OR -"; an unknown State still makes its Arch/OpSys row but counts nothing.
    ads = [
        ClassAd(
            dict(
                Name="slot1@x",
                Machine="x",
                OpSys="LINUX",
                Arch="X86_64",
                State="Shutdown",
                Activity="Idle",
            )
        ),
        ClassAd(dict(Name="slot2@x", Machine="x", State="Owner", Activity="Idle", Memory=3)),
    ]
    out = format_status(ads, now=BASE + 10).splitlines()
    assert out[2] == (
        "slot1@x                            LINUX      X86_64   Shutdown Idle"
        "      0.000 [????]           -"
    )
    assert out[3] == (
        "slot2@x                            [????????] [??????] Owner    Idle"
        "      0.000      3           -"
    )
    assert out[5:] == [
        "               Total Owner Claimed Unclaimed Matched Preempting  Drain Backfill BkIdle",
        "",
        "  X86_64/LINUX     0     0       0         0       0          0      0        0      0",
        "",
        "         Total     0     0       0         0       0          0      0        0      0",
        "",
        "              (Omitted 2 malformed ads in computed attribute totals)",
        "",
    ]


def test_status_with_no_ads_prints_nothing():
    assert format_status([], now=BASE) == ""
    assert format_status_schedd([]) == ""


def test_status_long_sorts_ads_and_attributes_case_insensitively():
    a = ClassAd(
        {
            "Name": "slot1@exec10",
            "Machine": "exec10",
            "arch": "X86_64",
            "Activity": "Idle",
            "_zz": 1,
            "Capability": "secret",
            "LoadAvg": 0.5,
        }
    )
    b = ClassAd({"Machine": "exec9", "Name": "slot1@exec9", "ClaimIdList": ["a"]})
    assert format_long([a, b]) == lines(
        'Machine = "exec9"',
        'Name = "slot1@exec9"',
        "",
        "_zz = 1",
        'Activity = "Idle"',
        'arch = "X86_64"',
        "LoadAvg = 0.5",
        'Machine = "exec10"',
        'Name = "slot1@exec10"',
        "",
    )


# Name >= 15 and Machine >= 12 (AUTO, left), RunningJobs %11d, IdleJobs %10d, HeldJobs %10d;
# totals: 14 columns of key, "%18d %18d %18d", and the empty row of the " " key.
# condor_status -any (prettyPrint.cpp adtype_PrintFormat): MyType ?: "None" and
# TargetType ?: "None" 18 wide and cut, Name 41 wide never cut ("?" when missing), sorted
# by Machine then Name, no summary
def test_status_any_lists_every_ad_by_type_and_name():
    ads = [
        ClassAd(dict(MyType="Accounting", Name="group_physics.alice@mockpool")),
        ClassAd(dict(MyType="Negotiator", Name="negotiator", Machine="cm")),
        ClassAd(
            dict(MyType="Machine", TargetType="Job", Name="slot1@exec0001", Machine="exec0001")
        ),
        ClassAd(dict(MyType="AVeryLongAdTypeNameIndeed", Name="x" * 45)),
        ClassAd(dict(MyType="Submitter")),
    ]
    assert format_status_any(ads) == lines(
        "MyType             TargetType         Name                                     ",
        "",
        # sort key Machine then Name: "cm", "exec0001", then no Machine ("undefined")
        "Negotiator         None               negotiator                               ",
        "Machine            Job                slot1@exec0001                           ",
        "Accounting         None               group_physics.alice@mockpool             ",
        "Submitter          None               ?                                        ",
        "AVeryLongAdTypeNam None               " + "x" * 45,
    )
    assert format_status_any([]) == ""


def test_status_schedd_table_and_totals():
    ads = [
        ClassAd(
            dict(
                Name="schedd@submit10",
                Machine="submit10",
                TotalRunningJobs=1,
                TotalIdleJobs=0,
                TotalHeldJobs=0,
            )
        ),
        ClassAd(
            dict(
                Name="schedd@submit2",
                Machine="submit2",
                TotalRunningJobs=3,
                TotalIdleJobs=12,
                TotalHeldJobs=1,
            )
        ),
    ]
    assert format_status_schedd(ads) == lines(
        "Name            Machine      RunningJobs   IdleJobs   HeldJobs",
        "",
        "schedd@submit2  submit2                3         12          1",
        "schedd@submit10 submit10               1          0          0",
        "",
        "                TotalRunningJobs      TotalIdleJobs      TotalHeldJobs",
        "",
        "              ",
        "         Total                 4                 12                  1",
    )


def test_status_schedd_missing_counts_are_blank_and_malformed():
    ads = [ClassAd(dict(Name="s@m", Machine="m", TotalRunningJobs=2, TotalIdleJobs=1))]
    out = format_status_schedd(ads).splitlines()
    assert out[2] == "s@m             m                      2          1           "
    assert out[-4:] == [
        "         Total                 2                  1                  0",
        "",
        "              (Omitted 1 malformed ads in computed attribute totals)",
        "",
    ]


# rows as -schedd; totals keyed by submitter Name, key column as wide as the longest name
def test_status_submitters_rows_and_per_submitter_totals():
    ads = [
        ClassAd(
            dict(
                Name="alice@mockpool",
                ScheddName="schedd@submit2",
                Machine="submit2",
                RunningJobs=1,
                IdleJobs=4,
                HeldJobs=0,
            )
        ),
        ClassAd(
            dict(
                Name="bob@mockpool",
                ScheddName="schedd@submit1",
                Machine="submit1",
                RunningJobs=0,
                IdleJobs=2,
                HeldJobs=0,
            )
        ),
        ClassAd(
            dict(
                Name="alice@mockpool",
                ScheddName="schedd@submit1",
                Machine="submit1",
                RunningJobs=3,
                IdleJobs=12,
                HeldJobs=1,
            )
        ),
    ]
    assert format_status_submitters(ads) == lines(
        "Name            Machine      RunningJobs   IdleJobs   HeldJobs",
        "",
        "alice@mockpool  submit1                3         12          1",
        "bob@mockpool    submit1                0          2          0",
        "alice@mockpool  submit2                1          4          0",
        "",
        "              RunningJobs   IdleJobs   HeldJobs",
        "",
        "alice@mockpool          4         16          1",
        "  bob@mockpool          0          2          0",
        "",
        "         Total          4         18          1",
    )


# Name >= 12 AUTO, LastCycleEnd 12 right (M/D hh:mm), then %5d %7d %8d %7d %7d %7d %10d
def test_status_negotiator():
    ad = ClassAd(
        dict(
            Name="negotiator@cm",
            Machine="cm",
            LastNegotiationCycleTime0=BASE + 598,
            LastNegotiationCycleDuration0=2,
            LastNegotiationCycleCandidateSlots0=11,
            LastNegotiationCycleActiveSubmitterCount0=2,
            LastNegotiationCycleNumSchedulers0=1,
            LastNegotiationCycleNumIdleJobs0=14,
            LastNegotiationCycleMatches0=10,
            LastNegotiationCycleRejections0=4,
        )
    )
    assert format_status_negotiator([ad]) == lines(
        "Name          LastCycleEnd (Sec)   Slots Submitrs Schedds    Jobs Matches Rejections",
        "",
        "negotiator@cm  11/22 10:10     2      11        2       1      14      10          4",
    )


# -- condor_history ---------------------------------------------------------------------


def history_jobs() -> list[ClassAd]:
    return [
        job(
            13,
            0,
            3,
            Owner="bob",
            QDate=BASE + 120,
            CompletionDate=0,
            RemoteWallClockTime=0.0,
            Cmd="/home/bob/analysis/run.sh",
            Args="--all",
        ),
        job(
            12,
            0,
            4,
            QDate=BASE,
            CompletionDate=BASE + 3661,
            RemoteWallClockTime=3600.0,
            Args="3600",
        ),
    ]


def test_history_80_columns_uses_the_legacy_short_layout():
    # " %-7s %-14s %11s %12s %-2s %11s %-15s" and "%4d.%-3d %-14s %-11s %-12s %-2c %-11s %-15s"
    assert format_history(history_jobs()) == lines(
        " ID      OWNER            SUBMITTED     RUN_TIME ST   COMPLETED CMD            ",
        "  13.0   bob            11/22 10:02   0+00:00:00 X   ???        /home/bob/analy",
        "  12.0   alice          11/22 10:00   0+01:00:00 C  11/22 11:01 /bin/sleep 3600",
    )


def test_history_wide_layout():
    # ID AUTO >= 12 left, OWNER 14, SUBMITTED 11, RUN_TIME 12, ST 2, COMPLETED 11, CMD;
    # an unset CompletionDate prints the epoch, as HTCondor's QDATE formatter does
    assert format_history(history_jobs(), width=None) == lines(
        " ID          OWNER            SUBMITTED   RUN_TIME   ST   COMPLETED CMD",
        "13.0         bob            11/22 10:02   0+00:00:00 X   1/1  00:00 run.sh --all",
        "12.0         alice          11/22 10:00   0+01:00:00 C  11/22 11:01 sleep 3600",
    )


# -- bad input ---------------------------------------------------------------------------


def test_bad_input_raises_layout_error_naming_the_problem():
    with pytest.raises(LayoutError, match=r"job ad #1 has no integer ClusterId"):
        q([job(1, 0), ClassAd({"ProcId": 0})])
    with pytest.raises(LayoutError, match=r"slot ad #0 is a dict, not a ClassAd"):
        format_status([{"Name": "x"}], now=BASE)  # type: ignore[list-item]
    with pytest.raises(LayoutError, match="width must be positive"):
        q([], width=0)
    assert issubclass(LayoutError, ValueError)


# -- condor_submit -dry-run ------------------------------------------------------------


def test_dry_run_writes_the_first_job_whole_and_then_what_differs(tmp_path, capsys) -> None:
    from mockpool.cli.main import main

    sub = tmp_path / "job.sub"
    sub.write_text("executable = /bin/sleep\narguments = $(Process)\nrequest_gpus = 1\nqueue 2\n")
    assert main(["submit", "-dry-run", "-", str(sub), "--owner", "alice"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "Dry-Run job(s).." and out[-1] == "2 job(s) dry-run to cluster 1."
    body = out[1:-1]
    assert body[0] == "" and "ClusterId=1" in body and 'Owner="alice"' in body
    assert "RequestGPUs=1" in body
    first, second = body.index("ProcId=0"), body.index("ProcId=1")
    assert body[first + 1 : first + 3] == ['Args="0"', "MockDuration=0"]
    assert body[second - 1] == "" and body[second + 1 :] == ['Args="1"', "MockDuration=1"]
    out_file = tmp_path / "ads.txt"
    assert main(["submit", "-dry-run:full", str(out_file), str(sub), "--owner", "alice"]) == 0
    ads = out_file.read_text().split("\n\n")
    assert len(ads) == 2 and 'Args = "1"' in ads[1] and "RequestGPUs = 1" in ads[0]


def test_dry_run_of_a_bad_description_names_the_line(tmp_path, capsys) -> None:
    from mockpool.cli.main import main

    sub = tmp_path / "bad.sub"
    sub.write_text("executable = x\nuniverse = docker\nqueue\n")
    assert main(["submit", "-dry-run", "-", str(sub)]) != 0
    assert "bad.sub:" in capsys.readouterr().err


def test_status_gpus_lists_the_slots_with_gpus() -> None:
    from mockpool.cli.status_normal import format_status_gpus
    from mockpool.config import parse_config
    from mockpool.startd.machine import Machine

    def ads(name: str, text: str) -> list[ClassAd]:
        return Machine(name, parse_config(text), "127.0.0.1:9000", 100, 0.0).public_ads(0.0)

    gpu = ads("gpu01", "NUM_CPUS = 8\nuse FEATURE : GPUs\nMOCK_GPUS = 4\n")
    out = format_status_gpus([*gpu, *ads("cpu01", "NUM_CPUS = 8\n")]).splitlines()
    assert out[0].split() == ["Name", "ST", "User", "GPUs", "GPU-Memory", "GPU-Name"]
    # 40536 MB is 39.6 GB in metric_units; the cpu-only machine is left out
    assert out[2].split() == [
        "slot1@gpu01",
        "Ui",
        "_",
        "4",
        "39.6",
        "GB",
        "NVIDIA",
        "A100-SXM4-40GB",
    ]
    assert "cpu01" not in "\n".join(out) and out[-1].split()[:2] == ["Total", "1"]
