"""condor_status' -compact, -claimed, -state, -server, -master, -startd, -collector
layouts, the totals tables, -sort and the query a command line makes (status_layout.py,
status_cmds.status_query), pinned with text worked out from HTCondor's print formats
(prettyPrint.cpp), its roll-up of slots (status.cpp) and totals (totals.cpp)."""

from __future__ import annotations

import argparse

import pytest

from mockpool.classad import ClassAd, parse_expr
from mockpool.cli import status_layout as S
from mockpool.cli.status_cmds import status_query


def slot(**kw: object) -> ClassAd:
    base: dict[str, object] = {
        "MyType": "Machine",
        "Arch": "X86_64",
        "OpSys": "LINUX",
        "OpSysAndVer": "AlmaLinux9",
        "State": "Unclaimed",
        "Activity": "Idle",
        "LastHeardFrom": 1000,
    }
    base.update(kw)
    return ClassAd(**base)


def pslot() -> ClassAd:
    """m1: 8 cpus, 16 GB, two dynamic slots (4 and 8 GB), both Claimed, one Busy."""
    ad = slot(
        Name="slot1@m1",
        Machine="m1",
        SlotTypeID=1,
        SlotType="Partitionable",
        PartitionableSlot=True,
        NumDynamicSlots=2,
        TotalSlotCpus=8,
        TotalSlotMemory=16384,
        Cpus=4,
        Memory=4096,
        TotalLoadAvg=2.0,
        TotalCpus=8,
        RecentJobStarts=10,
    )
    ad["ChildMemory"] = parse_expr("{4096, 8192}")
    ad["ChildState"] = parse_expr('{"Claimed", "Claimed"}')
    ad["ChildActivity"] = parse_expr('{"Busy", "Idle"}')
    return ad


def static(name: str, type_id: int, **kw: object) -> ClassAd:
    return slot(Name=name, Machine="m2", SlotTypeID=type_id, SlotType="Static", **kw)


DSLOT = slot(
    Name="slot1_1@m1",
    Machine="m1",
    SlotTypeID=1,
    SlotType="Dynamic",
    DynamicSlot=True,
    State="Claimed",
    Activity="Busy",
    Cpus=2,
    Memory=4096,
)
S1 = static(
    "slot1@m2",
    1,
    State="Claimed",
    Activity="Busy",
    Cpus=1,
    Memory=1024,
    TotalSlotCpus=1,
    TotalSlotMemory=1024,
    TotalLoadAvg=1.0,
    TotalCpus=2,
)
S2 = static(
    "slot2@m2",
    1,
    Cpus=1,
    Memory=2048,
    TotalSlotCpus=1,
    TotalSlotMemory=2048,
    TotalLoadAvg=1.0,
    TotalCpus=2,
)
S3 = static("slot3@m2", 2, State="Owner", Cpus=2, Memory=512, TotalSlotCpus=2, TotalSlotMemory=512)

TOTALS_HEAD = (
    "               Total Owner Claimed Unclaimed Matched Preempting  Drain Backfill BkIdle\n\n"
)


def test_compact_rolls_up_a_pslot_and_folds_static_slots():
    """m1 (p-slot): Slots = NumDynamicSlots 2, FreCpu/FreeGb its own 4 and 4.00,
    CpuLoad 2.0/8, Jobs/Min 10/20, MaxSlotGb max(ChildMemory)/1024 = 8.00; ST: its Ui
    against the children's C (both Claimed) and # (Busy, Idle) gives **. m2 (two static
    slots of one type): Slots 2 with the S tag, Cpus and TotalGb the first slot's, FreCpu
    1 and FreeGb 2.00 from the idle one only (slot1 is Claimed), MaxSlotGb 2.00, ST Cb
    and Ui differ: **; Jobs/Min "_" (no RecentJobStarts). The dynamic slot is left out.
    Totals by platform: m1's children (2 Claimed) and its free part (Unclaimed), m2's
    Claimed and Unclaimed: 5 = 3 + 2."""
    assert S.format_status_compact([S2, DSLOT, pslot(), S1]) == (
        "Machine      Platform       Slots Cpus Gpus  TotalGb FreCpu  FreeGb  CpuLoad ST Jobs/Min MaxSlotGb\n"
        "\n"
        "m1           x64/AlmaLinux9    2     8         16.00      4     4.00    0.25 **     0.50      8.00\n"
        "m2           x64/AlmaLinux9    2S    1          1.00      1     2.00    0.50 ** _             2.00\n"
        "\n"
        + TOTALS_HEAD
        + "x64/AlmaLinux9     5     0       3         2       0          0      0        0      0\n"
        "\n"
        "         Total     5     0       3         2       0          0      0        0      0\n"
    )


def test_compact_gives_a_second_slot_type_its_own_row_named_by_its_slot():
    """slot3 is m2's slot type 2: a row of its own, "   slot3"; an Owner slot is not busy,
    so its 2 cpus and 0.50 GB count as free."""
    out = S.format_status_compact([S1, S3, S2]).splitlines()
    assert out[2] == (
        "m2           x64/AlmaLinux9    2S    1          1.00      1     2.00    0.50 ** _             2.00"
    )
    assert out[3] == (
        "   slot3     x64/AlmaLinux9    1S    2          0.50      2     0.50         Oi _             0.50"
    )


def test_compact_of_an_exhausted_pslot_shows_its_childrens_state():
    """A p-slot with no cpus left (Cpus < 0.1) that says Unclaimed/Idle shows its
    children's consensus (Cb), and is not counted Unclaimed in the totals."""
    ad = pslot()
    ad["Cpus"] = 0
    ad["ChildActivity"] = parse_expr('{"Busy", "Busy"}')
    out = S.format_status_compact([ad])
    assert out.splitlines()[2].split()[8] == "Cb"
    assert out.splitlines()[-1].split()[1:5] == ["2", "0", "2", "0"]


CLAIMED = [
    slot(
        Name="slot2@m2",
        Machine="m2",
        State="Claimed",
        Activity="Busy",
        CondorLoadAvg=0.5,
        LoadAvg=0.5,
        RemoteUser="bob@mockpool",
        ClientMachine="submit.example",
    ),
    slot(
        Name="slot1@m2",
        Machine="m2",
        State="Claimed",
        Activity="Busy",
        CondorLoadAvg=1.0,
        LoadAvg=1.0,
        RemoteUser="alice@mockpool",
        ClientMachine="submit.example",
        Mips=1000,
        KFlops=200000,
    ),
]


def test_claimed_layout_and_run_totals():
    """Name OpSys Arch LoadAv RemoteUser(20) ClientMachine(16); StartdRunTotal: 2
    machines, MIPS and KFLOPS summed, AvgLoadAvg (1.0 + 0.5) / 2; slot2 has no Mips or
    KFlops, a malformed ad."""
    assert S.format_status_claimed(CLAIMED) == (
        "Name                               OpSys      Arch     LoadAv RemoteUser           ClientMachine   \n"
        "\n"
        "slot1@m2                           LINUX      X86_64    1.000 alice@mockpool       submit.example  \n"
        "slot2@m2                           LINUX      X86_64    0.500 bob@mockpool         submit.example  \n"
        "\n"
        "               Machines         MIPS       KFLOPS   AvgLoadAvg\n"
        "\n"
        "  X86_64/LINUX        2         1000       200000   0.750\n"
        "\n"
        "         Total        2         1000       200000   0.750\n"
        "\n"
        "              (Omitted 1 malformed ads in computed attribute totals)\n"
        "\n"
    )


def test_state_layout_times_from_last_heard_from_and_totals_by_activity():
    """KbdIdle 90061 s = 1+01:01:01; StateTime and ActvtyTime are LastHeardFrom (1000)
    less the Entered times; a missing KeyboardIdle is [??????????]. The totals are keyed
    by Activity and their Total column stays 0 (HTCondor's StartdStateTotal never adds
    to it)."""
    a = slot(
        Name="slot1@m2",
        Machine="m2",
        Cpus=1,
        Memory=1024,
        CondorLoadAvg=0.25,
        KeyboardIdle=90061,
        EnteredCurrentState=1000 - 3600,
        EnteredCurrentActivity=1000 - 60,
    )
    b = slot(
        Name="slot2@m2",
        Machine="m2",
        Cpus=1,
        Memory=1024,
        State="Claimed",
        Activity="Busy",
        CondorLoadAvg=1.0,
        EnteredCurrentState=1000 - 7200,
        EnteredCurrentActivity=1000 - 7200,
    )
    assert S.format_status_state([b, a]) == (
        "Name                               Cpu  Mem  LoadAv   KbdIdle    State     StateTime  Activ   ActvtyTime\n"
        "\n"
        "slot1@m2                           1    1024  0.250   1+01:01:01 Unclaimed   0+01:00:00 Idle    0+00:01:00\n"
        "slot2@m2                           1    1024  1.000 [??????????] Claimed   0+02:00:00 Busy    0+02:00:00\n"
        "\n"
        "               Total Owner Unclaimed Claimed Preempting Matched  Drain Backfill BkIdle\n"
        "\n"
        "          Busy     0     0         0       1          0       0      0        0      0\n"
        "          Idle     0     0         1       0          0       0      0        0      0\n"
        "\n"
        "         Total     0     0         1       1          0       0      0        0      0\n"
    )


def test_server_layout_and_totals():
    """Memory 8, Disk 9, Mips 7, KFlops 9 wide; totals: Avail counts Claimed and
    Unclaimed slots (not the Owner one), the numbers summed."""
    a = slot(
        Name="slot1@m2",
        Machine="m2",
        Memory=1024,
        Disk=4000000,
        Mips=1000,
        KFlops=200000,
        CondorLoadAvg=0.25,
    )
    b = slot(
        Name="slot2@m2",
        Machine="m2",
        State="Owner",
        Memory=2048,
        Disk=4000000,
        Mips=1000,
        KFlops=200000,
        CondorLoadAvg=0.0,
    )
    assert S.format_status_server([a, b]) == (
        "Name                               OpSys      Arch     LoadAv Memory   Disk      Mips    KFlops   \n"
        "\n"
        "slot1@m2                           LINUX      X86_64    0.250     1024   4000000    1000    200000\n"
        "slot2@m2                           LINUX      X86_64    0.000     2048   4000000    1000    200000\n"
        "\n"
        "                  Slots Avail  Memory        Disk        MIPS      KFLOPS\n"
        "\n"
        "  X86_64/LINUX        2     1        3072     8000000        2000      400000\n"
        "\n"
        "         Total        2     1        3072     8000000        2000      400000\n"
    )


VERSION = "$CondorVersion: 25.0.1 2025-06-04 BuildID: 123 $"


def test_master_and_startd_daemon_layouts():
    """Version is X.Y.Z.BuildID; Memory READABLE_MB (16384 MB = 16.0 GB); Uptime
    LastHeardFrom - DaemonStartTime; -startd's totals: Memory% = 4096/16384."""
    m = ClassAd(
        MyType="DaemonMaster",
        Name="m1",
        Machine="m1",
        CondorVersion=VERSION,
        DetectedCpus=8,
        DetectedMemory=16384,
        DaemonStartTime=1000 - 90061,
        LastHeardFrom=1000,
    )
    assert S.format_status_master([m]) == (
        "Name Version        Cpus   Memory      Uptime    \n"
        "\n"
        "m1   25.0.1.123        8    16.0 GB    1+01:01:01\n"
    )
    d = ClassAd(
        MyType="StartD",
        Name="m1",
        Machine="m1",
        Arch="X86_64",
        OpSys="LINUX",
        OpSysAndVer="AlmaLinux9",
        CondorVersion=VERSION,
        DetectedCpus=8,
        DetectedMemory=16384,
        DetectedGPUs="GPU-1, GPU-2",
        DaemonStartTime=1000 - 3600,
        LastHeardFrom=1000,
        TotalSlots=3,
        TotalCpus=8,
        TotalGPUs=2,
        TotalMemory=16384,
        TotalInUseCpus=4,
        TotalInUseMemory=4096,
        TotalInUseGPUs=1,
    )
    assert S.format_status_startd([d]) == (
        "Name Platform       Version    Cpus   Memory   GPUs     Uptime    \n"
        "\n"
        "m1   x64/AlmaLinux9 25.0.1.123    8    16.0 GB     2    0+01:00:00\n"
        "\n"
        "              Machines    Slots     Cpus BusyCpus   BkCpus     GPUs BusyGPUs   BkGPUs  Memory%   BkMem%\n"
        "\n"
        "x64/AlmaLinux9       1        3        8        4        0        2        1        0   25.00%    0.00%\n"
        "\n"
        "         Total       1        3        8        4        0        2        1        0   25.00%    0.00%\n"
    )


def test_collector_layout_widens_machine_on_a_wide_terminal():
    """Machine is 18 when piped; on a 120-column terminal 18 + min(30, 40 - 20) = 38."""
    co = ClassAd(
        MyType="Collector",
        Name="cm.example",
        Machine="cm.example",
        RunningJobs=3,
        IdleJobs=4,
        HostsTotal=2,
    )
    assert S.format_status_collector([co]) == (
        "Name       Machine            RunningJobs   IdleJobs HostsTotal\n"
        "\n"
        "cm.example cm.example                   3          4          2\n"
    )
    assert S.format_status_collector([co], width=120).splitlines()[0] == (
        "Name       Machine" + " " * 32 + "RunningJobs   IdleJobs HostsTotal"
    )


def test_totals_key_width_is_the_longest_key_with_wide():
    """-wide: the key column is as wide as the longest key (at least 5), not 14."""
    out = S.format_totals([S1, S2], "normal", None).splitlines()
    assert (
        out[2]
        == "X86_64/LINUX     2     0       1         1       0          0      0        0      0"
    )
    assert (
        out[4]
        == "       Total     2     0       1         1       0          0      0        0      0"
    )


def test_sort_keys_order_naturally_then_by_arrival():
    """-sort Memory: 512 before 1024 (natural compare of the rendered values); a tie keeps
    the collector's order."""
    ads = [slot(Name="a", Memory=1024), slot(Name="b", Memory=512), slot(Name="c", Memory=512)]
    got = S.status_sorted(ads, S.SortKeys(["Memory"]))
    assert [a.eval("Name") for a in got] == ["b", "c", "a"]
    with pytest.raises(S.LayoutError, match="-sort"):
        S.SortKeys(["Memory +"])


def ns(*names: str, **flags: object) -> argparse.Namespace:
    base: dict[str, object] = {
        "names": list(names),
        "constraint": None,
        "sort": None,
        "compact": False,
        "negotiator": False,
        "schedd": False,
        "submitters": False,
        "any": False,
        "gpus": False,
        "master": False,
        "startd": False,
        "collector": False,
        "claimed": False,
        "run": False,
        "avail": False,
    }
    base.update(flags)
    return argparse.Namespace(**base)


def test_query_of_names_modes_and_sort():
    """Names are ORed (Name or Machine); -avail's constraint is ORed with them, as
    status.cpp's addORConstraint does; -claimed names are RemoteUsers; -constraint and
    -sort's EXPR =!= UNDEFINED are ANDed; -compact keeps p-slots and static slots."""
    assert status_query(ns("m1")) == ("Machine", '(Name == "m1" || Machine == "m1")')
    assert status_query(ns("m1", "m2")) == (
        "Machine",
        '((Name == "m1" || Machine == "m1") || (Name == "m2" || Machine == "m2"))',
    )
    assert status_query(ns("m1", avail=True))[1] == (
        '((State == "Unclaimed" && Cpus > 0 && Memory > 0) || (Name == "m1" || Machine == "m1"))'
    )
    assert status_query(ns("alice@mockpool", claimed=True))[1] == (
        '((State == "Claimed") || (RemoteUser == "alice@mockpool"))'
    )
    assert status_query(ns(constraint=["Cpus > 1"], sort=["Memory"], compact=True)) == (
        "Machine",
        "(Cpus > 1) && (PartitionableSlot =?= true || DynamicSlot =!= true) "
        "&& (Memory =!= UNDEFINED)",
    )
    assert status_query(ns(master=True)) == ("DaemonMaster", "")
    assert status_query(ns(constraint=[" "])) == ("Machine", "")  # a blank one: none
    assert status_query(ns('a"b'))[1] == '(Name == "a\\"b" || Machine == "a\\"b")'


def test_default_table_wide_and_presorted():
    """-wide: the long ActivityTime column, no crop on a narrow terminal, totals keyed
    as wide as the longest key; keep_order: the -sort order stays."""
    from mockpool.cli.status_normal import format_status

    a = slot(
        Name="a-very-long-slot-name-that-goes-past-34@m2",
        Machine="m2",
        Memory=1,
        EnteredCurrentActivity=0,
    )
    b = slot(Name="b@m1", Machine="m1", Memory=2, EnteredCurrentActivity=0)
    out = format_status([a, b], now=90061, width=60, wide=True, keep_order=True)
    lines = out.splitlines()
    assert lines[0].endswith("Mem    ActivityTime")
    assert lines[2].startswith("a-very-long-slot-name-that-goes-past-34@m2 LINUX")
    assert lines[2].endswith("  1+01:01:01") and lines[3].startswith("b@m1")
    assert (
        lines[-1]
        == "       Total     2     0       0         2       0          0      0        0      0"
    )


def variant_slots() -> list[ClassAd]:
    p = pslot()
    p["ChildRemoteUser"] = parse_expr('{"bob@mockpool", "alice@mockpool", "bob@mockpool"}')
    p["Mips"], p["KFlops"] = 1000, 200000
    return [S2, DSLOT, p, S1]


def test_compact_claimed_lists_the_users_of_claimed_machines():
    """-compact -claimed (claimedCompact_PrintFormat): machines with a Claimed static slot
    or a p-slot with dynamic slots; Users are the children's RemoteUsers, unique and
    sorted. The run totals count a p-slot with cpus left twice (status.cpp totalizes it
    once rolled up and once for its own free part; StartdRunTotal ignores both options):
    3 = 2 + slot1@m2, each malformed: no LoadAvg (slot1@m2 no Mips and KFlops either)."""
    assert S.format_status_compact(variant_slots(), variant="claimed") == (
        "Machine Platform       Slots Users                       \n"
        "\n"
        "m1      x64/AlmaLinux9    2  alice@mockpool, bob@mockpool\n"
        "m2      x64/AlmaLinux9    1S                             \n"
        "\n"
        "               Machines         MIPS       KFLOPS   AvgLoadAvg\n"
        "\n"
        "x64/AlmaLinux9        3         2000       400000   0.000\n"
        "\n"
        "         Total        3         2000       400000   0.000\n"
        "\n"
        "              (Omitted 3 malformed ads in computed attribute totals)\n"
        "\n"
    )


def test_compact_state_and_server_columns():
    """-compact -state: no free or MaxSlotGb columns; totals keyed by Activity, the p-slot
    counting its two Claimed children and its own Unclaimed part. -compact -server:
    Mips and KFlops ("-" when missing), Machine at least 7 wide (12 only for -compact)."""
    state = S.format_status_compact(variant_slots(), variant="state").splitlines()
    assert state[0] == "Machine Platform       Slots Cpus Gpus  TotalGb CpuLoad ST Jobs/Min"
    assert state[2] == "m1      x64/AlmaLinux9    2     8         16.00    0.25 **     0.50"
    assert state[-1].split() == ["Total", "0", "0", "2", "3", "0", "0", "0", "0", "0"]
    server = S.format_status_compact(variant_slots(), variant="server").splitlines()
    assert server[0] == (
        "Machine Platform       Slots Cpus Gpus  TotalGb  Mips    KFlops   CpuLoad ST Jobs/Min"
    )
    assert server[3] == (
        "m2      x64/AlmaLinux9    2S    1          1.00 -       -            0.50 ** _       "
    )


def test_gpus_totals_are_the_state_totals():
    """-gpus: condor_status totals the GPU slots as PP_SLOTS_STATE (by Activity, Total
    column 0), not by Arch/OpSys."""
    from mockpool.cli.status_cmds import _gpus

    g = slot(Name="slot1@m3", Machine="m3", GPUs=1, State="Claimed", Activity="Busy")
    out = _gpus([g, S2], {"width": None, "keep_order": False}, False).splitlines()
    assert out[2].startswith("slot1@m3") and len(out) == 9
    assert out[4].startswith("               Total Owner Unclaimed Claimed")
    assert (
        out[6]
        == "          Busy     0     0         0       1          0       0      0        0      0"
    )
