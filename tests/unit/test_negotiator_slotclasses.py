"""Slot classes: the class-based cycle makes exactly the matches of the slot-by-slot one.

The differential test draws random pools (static and partitionable slots, Claimed slots,
several machine shapes, START and Rank expressions that read the job, a FileSystemDomain
per machine or shared) and random requests, runs the cycle with classes and with every
slot its own class (``CycleConfig.slot_classes = False``), and compares the matches in
order, the rejections and the whole NegotiatorLog.
"""

from __future__ import annotations

import dataclasses
import random

import numpy as np
import pytest
from builders.cores import job_request, static_pool
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from mockpool.classad import ClassAd, parse_expr
from mockpool.classad.kernel import SlotTable
from mockpool.collector.columns import SlotColumns
from mockpool.config import parse_config
from mockpool.negotiator import Accountant, CycleAds, ResourceRequest, negotiate
from mockpool.negotiator.cycleinput import CycleCarry, CycleConfig
from mockpool.negotiator.slotclasses import (
    SlotClasses,
    WideTaint,
    _row_ids,
    job_reach,
    referenced_attrs,
)
from mockpool.packedcolumns import column_from_pb, column_to_pb
from mockpool.v1 import collector_pb2 as cpb

STARTD = "10.0.0.1:9618"
SCHEDD = "10.0.0.2:9618"

STARTS = [
    "True",
    'TARGET.RequestMemory <= MY.Memory / 2 || TARGET.Owner == "bob"',
    "TARGET.JobPrio >= 0",
]
SLOT_RANKS = ["0", "TARGET.JobPrio", 'TARGET.Owner == "alice"']
JOB_REQUIREMENTS = [
    '(TARGET.Arch == "X86_64") && (TARGET.Memory >= RequestMemory) && '
    "((TARGET.FileSystemDomain == MY.FileSystemDomain) || (TARGET.HasFileTransfer))",
    "TARGET.HasFileTransfer && TARGET.Memory >= RequestMemory && TARGET.Cpus >= RequestCpus",
    "(TARGET.Memory >= RequestMemory) && (TARGET.FileSystemDomain == MY.FileSystemDomain)",
    'TARGET.Arch == "X86_64" && TARGET.Disk >= RequestDisk',
    # read FileSystemDomain in three-valued logic: decided per class, or slot by slot
    "(TARGET.FileSystemDomain == MY.FileSystemDomain) && TARGET.HasFileTransfer",
    '!(TARGET.FileSystemDomain == "m001.fs") || TARGET.Cpus > 1',
    "(TARGET.FileSystemDomain == 5) || TARGET.HasFileTransfer",
    "TARGET.AtHome || (TARGET.HasFileTransfer && TARGET.Memory >= RequestMemory)",
    "TARGET.Odd || TARGET.HasFileTransfer",
    "(TARGET.FileSystemDomain == MY.FileSystemDomain) || TARGET.AtHome",
    "isUndefined(TARGET.FileSystemDomain) || TARGET.HasFileTransfer",
]
JOB_RANKS = [None, "TARGET.Memory", "-TARGET.SlotID", "TARGET.Cpus"]
CONFIGS = [
    "",
    "NEGOTIATOR_PRE_JOB_RANK = MY.Memory\nNEGOTIATOR_POST_JOB_RANK = 0",
    "NEGOTIATOR_CONSIDER_PREEMPTION = False",
    "PREEMPTION_REQUIREMENTS = False",
]
CP = {
    "ConsumptionCpus": "quantize(target.RequestCpus,{1})",
    "ConsumptionMemory": "quantize(target.RequestMemory,{128})",
    "ConsumptionDisk": "quantize(target.RequestDisk,{1024})",
}


def _slot(rng: random.Random, machine: int, slot_id: int, fsd: str, **kw: object) -> ClassAd:
    ad = ClassAd()
    name = f"slot{slot_id}@m{machine:03d}"
    ad["MyType"] = "Machine"
    ad["Name"] = name
    ad["Machine"] = f"m{machine:03d}"
    ad["SlotID"] = slot_id
    ad["State"] = "Unclaimed"
    ad["Activity"] = "Idle"
    ad["PartitionableSlot"] = False
    ad["Arch"] = "X86_64" if rng.random() < 0.9 else "aarch64"
    ad["OpSys"] = "LINUX"
    ad["HasFileTransfer"] = rng.random() < 0.9
    ad["FileSystemDomain"] = fsd
    # expressions that reach FileSystemDomain: one whose type follows it, one whose not
    ad["AtHome"] = parse_expr('MY.FileSystemDomain == "shared.fs"')
    ad["Odd"] = parse_expr('ifThenElse(MY.FileSystemDomain > "m050", "yes", true)')
    ad["Disk"] = 1_000_000
    ad["Start"] = parse_expr(rng.choice(STARTS))
    ad["Requirements"] = parse_expr("START")
    ad["Rank"] = parse_expr(rng.choice(SLOT_RANKS))
    ad["SlotWeight"] = parse_expr("Cpus")
    ad["MyAddress"] = f"<{STARTD}>"
    for k, v in kw.items():
        ad[k] = parse_expr(v) if k.startswith("Consumption") else v
    return ad


def random_pool(
    rng: random.Random,
    machines: int,
    pslots: float = 0.25,
    claimed: float = 0.15,
    groups: bool = False,
) -> CycleAds:
    """``claimed``: the share of static slots Claimed; with ``groups``, by a user under
    an accounting group (group_a on even machines, group_b on odd) other than their
    RemoteOwner, with a TotalJobRunTime of the slot's own."""
    slots, privates = [], []
    # one FileSystemDomain for every machine, one each, or either
    mode = rng.choice(["shared", "own", "mixed"])
    for m in range(machines):
        shared = mode == "shared" or (mode == "mixed" and rng.random() < 0.25)
        fsd = "shared.fs" if shared else f"m{m:03d}.fs"
        if rng.random() < pslots:  # a partitionable slot with a consumption policy
            ad = _slot(
                rng,
                m,
                1,
                fsd,
                Cpus=rng.choice([4, 8, 16]),
                Memory=rng.choice([8192, 16384]),
                PartitionableSlot=True,
                MachineResources="Cpus Memory Disk Swap",
                **CP,
            )
            ids = [f"<{STARTD}>#1#{m}#p{k}" for k in range(rng.choice([4, 8, 32]))]
            p = ClassAd(Name=ad.eval("Name"), Capability=ids[0], ClaimIdList=ids)
            slots.append(ad)
            privates.append(p)
            continue
        memory = rng.choice([1024, 2048, 4096])
        for k in range(1, rng.choice([1, 2, 4]) + 1):
            ad = _slot(rng, m, k, fsd, Cpus=rng.choice([1, 1, 2]), Memory=memory)
            if rng.random() < claimed:
                who = rng.choice(["alice", "bob", "dave"])
                ad["State"] = "Claimed"
                ad["Activity"] = "Busy"
                ad["RemoteUser"] = f"{who}@mockpool"
                ad["RemoteOwner"] = f"{who}@mockpool"
                group = f"group_{'ab'[m % 2]}.{who}" if groups else who
                ad["AccountingGroup"] = f"{group}@mockpool"
                ad["CurrentRank"] = 0.0
                if groups:  # read by the default PREEMPTION_RANK; a wide name in a pool of 120
                    ad["TotalJobRunTime"] = (37 * m + 11 * k) % 400
            slots.append(ad)
            privates.append(ClassAd(Name=ad.eval("Name"), Capability=f"<{STARTD}>#1#{m}#s{k}"))
    return CycleAds(slots, privates)


def random_requests(rng: random.Random, n: int, shapes: int = 0) -> list[ResourceRequest]:
    """``n`` random requests; with ``shapes``, drawn from that many random job shapes
    (each submitter its own autocluster of each)."""
    if shapes:
        drawn = random_requests(rng, shapes)
        out = []
        for ac in range(1, n + 1):
            ad = rng.choice(drawn).ad.copy()
            who = rng.choice(["alice", "bob", "carol"])
            ad["ClusterId"] = ad["AutoClusterId"] = ac
            ad["Submitter"] = f"{who}@mockpool"
            ad["ResourceRequestCount"] = rng.choice([1, 3, 8, 20])
            out.append(ResourceRequest.from_ad(ad, "schedd1", SCHEDD))
        return out
    out = []
    for ac in range(1, n + 1):
        who = rng.choice(["alice", "bob", "carol"])
        ad = ClassAd()
        ad["ClusterId"] = ac
        ad["ProcId"] = 0
        ad["Owner"] = who
        ad["JobPrio"] = rng.choice([-1, 0, 5])
        ad["RequestCpus"] = rng.choice([1, 1, 2])
        ad["RequestMemory"] = rng.choice([512, 1000, 2048, 3000])
        ad["RequestDisk"] = 1000
        ad["FileSystemDomain"] = rng.choice(["m001.fs", "m090.fs", "shared.fs", "submit.fs"])
        ad["Requirements"] = parse_expr(rng.choice(JOB_REQUIREMENTS))
        rank = rng.choice(JOB_RANKS)
        if rank is not None:
            ad["Rank"] = parse_expr(rank)
        ad["AutoClusterId"] = ac
        ad["Submitter"] = f"{who}@mockpool"
        ad["ResourceRequestCount"] = rng.choice([1, 3, 8, 20])
        out.append(ResourceRequest.from_ad(ad, "schedd1", SCHEDD))
    return out


def outcome(result) -> tuple:  # type: ignore[no-untyped-def]
    return (
        [(m.submitter, m.job_id, m.slot_name, m.claim_id, m.cost) for m in result.matches],
        [(r.autocluster_id, r.reason) for r in result.rejections],
        [line.text for line in result.log],
    )


def one_domain_each(rng: random.Random, n: int, **attrs: object) -> tuple[list, list]:
    """``n`` one-slot X86_64 machines that START anything, each its own domain
    (``m007.fs``); ``attrs`` per machine number (a callable) or fixed."""
    slots, privates = [], []
    for m in range(n):
        ad = _slot(rng, m, 1, f"m{m:03d}.fs", Cpus=1, Memory=1024)
        ad["Arch"] = "X86_64"
        ad["Start"] = parse_expr("True")
        for name, value in attrs.items():
            ad[name] = value(m) if callable(value) else value
        slots.append(ad)
        privates.append(ClassAd(Name=ad.eval("Name"), Capability=f"<{STARTD}>#1#{m}#s"))
    return slots, privates


def domain_job(domain: str, requirements: str, count: int, **attrs: object) -> ResourceRequest:
    """Autocluster 1 of alice: ``count`` jobs from ``domain``."""
    job = ClassAd(
        ClusterId=1,
        ProcId=0,
        RequestMemory=100,
        RequestDisk=1,
        FileSystemDomain=domain,
        Requirements=parse_expr(requirements),
        AutoClusterId=1,
        Submitter="alice@mockpool",
        ResourceRequestCount=count,
    )
    for name, value in attrs.items():
        job[name] = value
    return ResourceRequest.from_ad(job, "schedd1", SCHEDD)


def both_ways(  # type: ignore[no-untyped-def]
    snapshot: CycleAds,
    requests: list[ResourceRequest],
    text: str,
    acct: Accountant | None = None,
):
    cfg = CycleConfig.from_config(parse_config(text, "test"))
    acct = acct if acct is not None else Accountant()
    by_class = negotiate(snapshot, requests, acct, cfg, 100.0)
    by_slot = negotiate(
        snapshot, requests, acct, dataclasses.replace(cfg, slot_classes=False), 100.0
    )
    return by_class, by_slot


# a random pool and requests, and the config to run the cycle with
RANDOM_CYCLES = {
    "seed": st.integers(0, 2**32 - 1),
    "machines": st.sampled_from([6, 30, 120]),
    "config": st.sampled_from(CONFIGS),
}


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# a p-slot used up before the slot-by-slot view was made (see the test after the next)
@example(seed=1809, machines=120, config="")
@given(**RANDOM_CYCLES)
def test_class_based_cycle_makes_the_matches_of_the_slot_by_slot_cycle(
    seed: int, machines: int, config: str
) -> None:
    rng = random.Random(seed)
    snapshot = random_pool(rng, machines)
    requests = random_requests(rng, rng.choice([3, 12, 30]))
    by_class, by_slot = both_ways(snapshot, requests, config)
    assert outcome(by_class) == outcome(by_slot)
    assert by_slot.stats.slot_classes == by_slot.stats.candidate_slots


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**RANDOM_CYCLES, pslots=st.sampled_from([0.0, 0.3]))
def test_a_cycle_on_columns_sent_packed_makes_the_matches_of_a_cycle_on_the_ads(
    seed: int, machines: int, config: str, pslots: float
) -> None:
    """A negotiator over the wire asks a columnar snapshot for the names its last cycle
    read: a cycle that reads them from the columns the collector kept, packed, sent
    and checked, matches as one that reads the ads."""
    rng = random.Random(seed)
    snapshot = random_pool(rng, machines, pslots=pslots)
    requests = random_requests(rng, rng.choice([3, 12, 30]))
    cfg = CycleConfig.from_config(parse_config(config, "test"))
    carry = CycleCarry()
    on_ads = negotiate(snapshot, requests, Accountant(), cfg, 100.0, columns=carry)
    names = carry.slots.names_built()
    assert "cpus" in names and "start" in names
    kept = SlotColumns()
    keys = [str(ad.eval("Name")).lower() for ad in snapshot.slots]
    for key, ad in zip(keys, snapshot.slots, strict=True):
        kept.put(key, ad)
    slot_names = [str(ad.eval("Name")) for ad in snapshot.slots]
    sent = {
        c.name: column_from_pb(
            cpb.SlotColumn.FromString(column_to_pb(c).SerializeToString()), slot_names
        )
        for c in kept.pack(names, kept.rows(keys))
    }
    on_columns = negotiate(
        dataclasses.replace(snapshot, slot_columns=sent),
        requests,
        Accountant(),
        cfg,
        100.0,
        columns=carry,
    )
    assert outcome(on_columns) == outcome(on_ads)
    assert sorted(carry.slots.names_built()) == sorted(names)


# Claimed slots alike but for whom they would preempt (no SlotID in the ranks)
CLAIMED_CONFIGS = [
    "NEGOTIATOR_POST_JOB_RANK = 0",
    "NEGOTIATOR_POST_JOB_RANK = 0\nPREEMPTION_REQUIREMENTS = RemoteUserPrio > SubmitterUserPrio",
    "NEGOTIATOR_POST_JOB_RANK = 0\nPREEMPTION_REQUIREMENTS = True\nPREEMPTION_RANK = 0",
    "NEGOTIATOR_POST_JOB_RANK = 0\nPREEMPTION_REQUIREMENTS = True",
]


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    machines=st.sampled_from([30, 120]),
    config=st.sampled_from(CLAIMED_CONFIGS),
)
def test_claimed_slots_in_classes_make_the_matches_of_the_slot_by_slot_cycle(
    seed: int, machines: int, config: str
) -> None:
    """Pools where most static slots are Claimed, by users under two accounting groups,
    some users of a higher priority: Claimed slots form classes of several slots
    (by the user they would preempt), and the cycle matches as slot by slot."""
    rng = random.Random(seed)
    snapshot = random_pool(rng, machines, pslots=0.1, claimed=0.6, groups=True)
    requests = random_requests(rng, rng.choice([3, 12, 30]))
    acct = Accountant()
    for who in rng.sample(["alice", "bob", "dave"], 2):
        acct.set_priority(f"group_{rng.choice('ab')}.{who}@mockpool", rng.choice([2.0, 10.0]))
    by_class, by_slot = both_ways(snapshot, requests, config, acct)
    assert outcome(by_class) == outcome(by_slot)


def test_claimed_slots_form_classes_by_the_user_they_would_preempt() -> None:
    """Six Claimed slots alike in every name the cycle reads: alice's under two
    accounting groups (RemoteOwner the same for both), and bob's, whose user priority
    is 10 (EUP 10 x 1000 = 10,000; an unused submitter's is 0.5 x 1000 = 500). They
    form three classes, one per user they would preempt.

    group_a.alice asks for 6 jobs with PREEMPTION_REQUIREMENTS = True: her own two
    slots are not preemptible (the same user), group_b.alice's and bob's four are,
    bob's first: the default PREEMPTION_RANK (RemoteUserPrio * 1000000 -
    TotalJobRuntime) is 10^10 on his, 5 x 10^8 on hers. dave (EUP 500) asks for 6 with PREEMPTION_REQUIREMENTS
    = RemoteUserPrio > SubmitterUserPrio: only bob's two (10,000 > 500; 500 > 500 is
    false), each offered with RemoteUserPrio = 10,000."""
    snapshot = static_pool(
        0, claimed_by={"group_a.alice@pool": 2, "group_b.alice@pool": 2, "bob@pool": 2}
    )
    for ad in snapshot.slots:
        ad["Rank"] = ad["CurrentRank"] = 0.0
        if ad.eval("AccountingGroup") != "bob@pool":
            ad["RemoteOwner"] = "alice@pool"
    acct = Accountant()
    acct.set_priority("bob@pool", 10.0)

    config = parse_config("PREEMPTION_REQUIREMENTS = True", "test")
    alice = negotiate(snapshot, [job_request("group_a.alice@pool", 6)], acct, config, 100.0)
    assert alice.stats.slot_classes == 3
    assert [m.slot_name for m in alice.matches] == [
        "slot1@exec00004",
        "slot1@exec00005",
        "slot1@exec00002",
        "slot1@exec00003",
    ]
    assert [r.reason for r in alice.rejections] == ["no match found"]

    config_text = "PREEMPTION_REQUIREMENTS = RemoteUserPrio > SubmitterUserPrio"
    config = parse_config(config_text, "t")
    dave = negotiate(snapshot, [job_request("dave@pool", 6)], acct, config, 100.0)
    assert [m.slot_name for m in dave.matches] == ["slot1@exec00004", "slot1@exec00005"]
    assert [m.slot_ad.eval("RemoteUserPrio") for m in dave.matches] == [10_000.0, 10_000.0]
    assert [r.reason for r in dave.rejections] == ["PREEMPTION_REQUIREMENTS == False"]
    for result, text in ((alice, "PREEMPTION_REQUIREMENTS = True"), (dave, config_text)):
        by_slot = negotiate(
            snapshot,
            [job_request(result.matches[0].submitter, 6)],
            acct,
            dataclasses.replace(
                CycleConfig.from_config(parse_config(text, "t")), slot_classes=False
            ),
            100.0,
        )
        assert outcome(by_slot) == outcome(result)


def test_alike_slots_form_one_class_and_a_wide_name_is_left_out_of_the_key() -> None:
    """100 one-slot machines alike but for FileSystemDomain (one each, so wide) and
    SlotID (two values): two classes; FileSystemDomain is listed as wide."""
    rng = random.Random(7)
    ads = []
    for m in range(100):
        ad = _slot(rng, m, 1 + m % 2, f"m{m}.fs", Cpus=1, Memory=1024)
        ad["Arch"] = "X86_64"
        ad["HasFileTransfer"] = True
        ad["Start"] = parse_expr("True")
        ad["Rank"] = parse_expr("0")
        ads.append(ad)
    table = SlotTable(ads)
    job = ClassAd(Requirements=parse_expr(JOB_REQUIREMENTS[0]), RequestMemory=1)
    post = parse_expr("SlotID")
    attrs = referenced_attrs(table, [job], [post], ["Requirements", "Rank"])
    assert attrs is not None and {"filesystemdomain", "slotid", "memory"} <= attrs.keys()
    every = np.ones(100, dtype=bool)
    none = np.zeros(100, dtype=bool)
    classes = SlotClasses.build(table, every, every, none, set(attrs), (), wide_above=64)
    assert classes.wide == {"filesystemdomain"}
    assert len(classes) == 2
    assert classes.members[0].tolist() == list(range(0, 100, 2))


def test_the_names_jobs_reach_are_found_before_the_slots_and_read_with_them() -> None:
    """``job_reach`` follows the jobs' expressions alone (Requirements -> NeedsBig ->
    Memory; the slots' Start -> KFlops is not its to find); ``referenced_attrs`` adds the
    slots' side, and a job expression bound to two names is held by both (the wide-name
    taint of each reads it). Given ``job_reach`` it finds the same."""
    shared = parse_expr("Memory > 4096")
    job = ClassAd.from_exprs(
        [
            ("Requirements", parse_expr("NeedsBig && TARGET.Start")),
            ("NeedsBig", shared),
            ("Rank", parse_expr("AlsoBig")),
            ("AlsoBig", shared),
            ("Unused", parse_expr("Disk > 1")),
        ]
    )
    ads = [ClassAd(Start=parse_expr("KFlops > 10"), KFlops=k, Memory=8192) for k in (5, 50)]
    on_jobs = job_reach([job], [], ["Requirements", "Rank"])
    assert set(on_jobs) == {"requirements", "rank", "needsbig", "alsobig", "memory", "start"}
    assert on_jobs["needsbig"] == [shared] and on_jobs["alsobig"] == [shared]
    assert on_jobs["start"] == [] and on_jobs["memory"] == []
    attrs = referenced_attrs(SlotTable(ads), [job], [], ["Requirements", "Rank"])
    assert attrs is not None
    assert set(attrs) == set(on_jobs) | {"kflops"}
    assert attrs["needsbig"] == [shared] and attrs["alsobig"] == [shared]
    assert [str(e) for e in attrs["start"]] == [str(parse_expr("KFlops > 10"))]
    again = referenced_attrs(SlotTable(ads), [job], [], ["Requirements", "Rank"], on_jobs)
    assert again == attrs


def test_eval_in_an_expression_turns_classes_off() -> None:
    ads = [ClassAd(Start=parse_expr('eval("Memory > 1")'), Memory=m) for m in (1, 2)]
    table = SlotTable(ads)
    assert referenced_attrs(table, [], [], ["Start"]) is None


def test_a_request_that_reads_a_wide_name_gets_the_slot_by_slot_answer() -> None:
    """A job that must run where its files are (FileSystemDomain == its own) finds the
    one machine of 100 in its domain, although FileSystemDomain is not in the class key."""
    slots, privates = one_domain_each(random.Random(3), 100)
    req = domain_job("m042.fs", JOB_REQUIREMENTS[2], 2)
    by_class, by_slot = both_ways(CycleAds(slots, privates), [req], "")
    assert [m.slot_name for m in by_class.matches] == ["slot1@m042"]
    assert outcome(by_class) == outcome(by_slot)
    assert by_class.stats.slot_classes < 100
    assert by_class.stats.requests_by_slot == 1


def test_condor_submits_file_system_clause_is_decided_per_class() -> None:
    """condor_submit's IF_NEEDED clause, (FileSystemDomain == the job's) || HasFileTransfer,
    on 100 machines with a domain each: where every slot has file transfer the request
    is decided per class; where a tenth have none it is answered slot by slot. Both
    give the slot-by-slot cycle's matches."""
    for without_transfer in (0, 10):
        slots, privates = one_domain_each(
            random.Random(5),
            100,
            Rank=parse_expr("0"),
            HasFileTransfer=lambda m, k=without_transfer: m >= k,
        )
        req = domain_job("m005.fs", JOB_REQUIREMENTS[0], 100)
        by_class, by_slot = both_ways(CycleAds(slots, privates), [req], "")
        assert outcome(by_class) == outcome(by_slot)
        # the job's own domain (m005) and every machine with file transfer
        assert len(by_class.matches) == 100 - without_transfer + (without_transfer > 5)
        assert by_class.stats.requests_by_slot == (1 if without_transfer else 0)


def test_wide_taint_follows_expressions_and_types() -> None:
    """FileSystemDomain is wide. AtHome (a comparison of it) is tainted but keeps its
    type; Odd (a conditional on it) may be a string or a boolean; Uses reaches Odd."""
    reached = {
        "filesystemdomain": [],
        "hasfiletransfer": [],
        "athome": [parse_expr('MY.FileSystemDomain == "shared.fs"')],
        "odd": [parse_expr('ifThenElse(MY.FileSystemDomain > "m050", "yes", true)')],
        "uses": [parse_expr("MY.Odd == true")],
        "cpus": [],
    }
    taint = WideTaint.of(reached, {"filesystemdomain"})
    assert taint.tainted == {"filesystemdomain", "athome", "odd", "uses"}
    assert taint.untyped == {"odd", "uses"}
    safe = {
        "(TARGET.FileSystemDomain == MY.FileSystemDomain) || (TARGET.HasFileTransfer)": True,
        "TARGET.AtHome || TARGET.HasFileTransfer": True,
        '!(TARGET.FileSystemDomain == "a") && (TARGET.FileSystemDomain + 1 > 0)': True,
        'ifThenElse(TARGET.Cpus > 1, true, false) || TARGET.FileSystemDomain == "a"': True,
        "TARGET.Odd || TARGET.HasFileTransfer": False,
        "TARGET.Uses || TARGET.HasFileTransfer": False,
        "isUndefined(TARGET.FileSystemDomain) || TARGET.HasFileTransfer": False,
        '(TARGET.FileSystemDomain =?= "a") || TARGET.HasFileTransfer': False,
        "TARGET.FileSystemDomain / 2 > 0 || TARGET.HasFileTransfer": False,
        '((TARGET.FileSystemDomain == "a") || TARGET.Cpus) > 0': False,
    }
    assert {text: taint.kleene_safe(parse_expr(text)) for text in safe} == safe


def test_p_slots_alike_but_for_their_domain_share_only_answers_that_do_not_read_it() -> None:
    """Two 8-cpu p-slots alike but for FileSystemDomain (wide: 80 static machines have
    one each), a job of 1 cpu and 1 GB that runs where its files are, or anywhere with
    6 GB free. The p-slot in its domain takes 8 jobs; the other only until it has less
    than 6 GB left (3 jobs): their re-offer answers are shared only while the memory
    clause decides them."""
    rng = random.Random(11)
    slots, privates = one_domain_each(rng, 80, Memory=512)
    for m in (80, 81):
        ad = _slot(
            rng,
            m,
            1,
            f"m{m:03d}.fs",
            Cpus=8,
            Memory=8192,
            PartitionableSlot=True,
            MachineResources="Cpus Memory Disk Swap",
            **CP,
        )
        for name in ("Arch", "Start", "Rank", "HasFileTransfer"):
            ad[name] = slots[0].lookup(name)
        ids = [f"<{STARTD}>#1#{m}#p{k}" for k in range(16)]
        slots.append(ad)
        privates.append(ClassAd(Name=ad.eval("Name"), Capability=ids[0], ClaimIdList=ids))
    req = domain_job(
        "m081.fs",
        "(TARGET.FileSystemDomain == MY.FileSystemDomain) || (TARGET.Memory >= 6000)",
        40,
        RequestCpus=1,
        RequestMemory=1024,
        Rank=parse_expr("TARGET.Cpus"),
    )
    by_class, by_slot = both_ways(CycleAds(slots, privates), [req], "")
    assert outcome(by_class) == outcome(by_slot)
    on = [m.slot_name for m in by_class.matches]
    assert (on.count("slot1@m080"), on.count("slot1@m081")) == (3, 8)


def _pslot(rng: random.Random, m: int, fsd: str, claims: int = 8, **kw: object) -> tuple:
    """A 4-cpu, 8 GB p-slot with a consumption policy that STARTs anything, and its
    private ad with ``claims`` claim ids."""
    ad = _slot(
        rng,
        m,
        1,
        fsd,
        Cpus=4,
        Memory=8192,
        PartitionableSlot=True,
        MachineResources="Cpus Memory Disk Swap",
        **CP,
    )
    ad["Arch"] = "X86_64"
    ad["HasFileTransfer"] = True
    ad["Start"] = parse_expr("True")
    ad["Rank"] = parse_expr("0")
    for name, value in kw.items():
        ad[name] = value
    ids = [f"<{STARTD}>#1#{m}#p{k}" for k in range(claims)]
    return ad, ClassAd(Name=ad.eval("Name"), Capability=ids[0], ClaimIdList=ids)


def _shape_job(ac: int, who: str, memory: int = 1000) -> ResourceRequest:
    job = domain_job("submit.fs", JOB_REQUIREMENTS[1], 1, RequestCpus=1, RequestMemory=memory)
    job.ad["ClusterId"] = job.ad["AutoClusterId"] = ac
    job.ad["Owner"] = who
    job.ad["Submitter"] = f"{who}@mockpool"
    return ResourceRequest.from_ad(job.ad, "schedd1", SCHEDD)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), machines=st.sampled_from([8, 40, 120]))
def test_a_pool_of_p_slots_and_requests_of_few_shapes_gets_the_slot_by_slot_matches(
    seed: int, machines: int
) -> None:
    """Mostly partitionable slots, many requests of a few shapes: p-slot states shared
    and split, answers remembered across requests, states of one slot evaluated one by
    one."""
    rng = random.Random(seed)
    snapshot = random_pool(rng, machines, pslots=0.9)
    requests = random_requests(rng, rng.choice([12, 40]), shapes=rng.choice([1, 3]))
    by_class, by_slot = both_ways(snapshot, requests, rng.choice(CONFIGS))
    assert outcome(by_class) == outcome(by_slot)


@pytest.mark.parametrize("start", ["True", 'TARGET.Owner != "nobody"'])
def test_p_slots_holding_the_same_resources_are_evaluated_once_per_request_shape(
    start: str,
) -> None:
    """Four alike p-slots are one state until one is split. alice's request is
    evaluated on that one state (1 row) and splits m000; bob's, of the same shape, finds
    two states: the untouched one answered from alice's (remembered, 1 row), the split
    one evaluated (1 row); carol's asks for more memory: both states evaluated (2 rows).
    Where the slots' START reads the job's Owner, bob's request is not alice's shape:
    nothing is remembered. Either way, the slot-by-slot cycle's matches."""
    rng = random.Random(5)
    slots, privates = [], []
    for m in range(4):
        ad, private = _pslot(rng, m, "shared.fs", Start=parse_expr(start))
        slots.append(ad)
        privates.append(private)
    reqs = [_shape_job(1, "alice"), _shape_job(2, "bob"), _shape_job(3, "carol", 2000)]
    by_class, by_slot = both_ways(CycleAds(slots, privates), reqs, "")
    assert outcome(by_class) == outcome(by_slot)
    assert len(by_class.matches) == 3
    shared = start == "True"
    assert (by_class.stats.rows_evaluated, by_class.stats.rows_remembered) == (
        (4, 1) if shared else (5, 0)
    )
    assert by_slot.stats.rows_remembered == 0


@pytest.mark.parametrize(("claimed", "reused"), [(0, 2), (1, 0)])
def test_a_request_takes_the_candidate_order_of_one_of_its_shape_on_the_same_classes(
    claimed: int, reused: int
) -> None:
    """Four alike Unclaimed slots are one class; alice, bob, carol and dave each ask
    for one slot with the same job. alice's answers are evaluated (1 row), bob's are
    remembered and his candidate order is kept; the class is still live with the same
    rows, so carol and dave take that order (2). With a Claimed slot among the classes
    the order depends on who asks (preemption): nothing is taken. Either way, the
    slot-by-slot cycle's matches."""
    pool = static_pool(4, claimed_by={"zed@mockpool": claimed} if claimed else None)
    reqs = [
        job_request(f"{who}@mockpool", 1, ac=k + 1)
        for k, who in enumerate(["alice", "bob", "carol", "dave"])
    ]
    by_class, by_slot = both_ways(pool, reqs, "")
    assert outcome(by_class) == outcome(by_slot)
    assert [m.slot_name for m in by_class.matches] == [f"slot1@exec{i:05d}" for i in range(4)]
    assert by_class.stats.rows_evaluated == 1 + claimed
    assert by_class.stats.orders_remembered == reused
    assert by_slot.stats.orders_remembered == 0


def test_a_view_made_after_a_p_slot_is_used_up_keeps_the_other_slots_values() -> None:
    """alice's job uses up the p-slot's one claim id (it leaves the cycle). bob's job
    reads FileSystemDomain (wide: 81 machines, one each) in a way three-valued logic
    cannot decide, so it is answered on a view of the live slots made then. The default
    NEGOTIATOR_PRE_JOB_RANK prefers the slot with the least memory: m080 (512 MB, the
    view's last row). The p-slot's split was once written over that row, which then
    looked like 3 cpus and 7 GB, and bob got m000."""
    rng = random.Random(13)
    slots, privates = one_domain_each(
        rng, 81, Memory=lambda m: 512 if m == 80 else 1024, Rank=parse_expr("0")
    )
    pslot, private = _pslot(rng, 99, "m099.fs", claims=1)
    slots.insert(0, pslot)
    privates.insert(0, private)
    alice = domain_job("m099.fs", "TARGET.PartitionableSlot", 1, RequestCpus=1)
    bob = domain_job(
        "m001.fs",
        "isUndefined(TARGET.FileSystemDomain) || TARGET.HasFileTransfer",
        1,
        Rank=parse_expr("TARGET.Memory"),
    )
    bob.ad["ClusterId"] = bob.ad["AutoClusterId"] = 2
    bob.ad["Submitter"] = "bob@mockpool"
    bob = ResourceRequest.from_ad(bob.ad, "schedd1", SCHEDD)
    by_class, by_slot = both_ways(CycleAds(slots, privates), [alice, bob], "")
    assert outcome(by_class) == outcome(by_slot)
    assert [(m.submitter, m.slot_name) for m in by_class.matches] == [
        ("alice@mockpool", "slot1@m099"),
        ("bob@mockpool", "slot1@m080"),
    ]
    assert by_class.stats.requests_by_slot == 1


@settings(max_examples=50, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(-3, 3), st.sampled_from([-(2**41) - 3, -1, 0, 2**40]), st.integers(0, 1)
        ),
        min_size=1,
        max_size=40,
    )
)
def test_class_ids_number_rows_as_a_sort_of_the_whole_rows_does(rows: list[tuple]) -> None:
    key = np.array(rows, dtype=np.int64)
    _u, want = np.unique(key, axis=0, return_inverse=True)
    assert _row_ids(key).tolist() == want.reshape(-1).tolist()


@settings(max_examples=50, deadline=None)
@given(
    st.integers(8, 40).flatmap(
        lambda n: st.lists(
            st.lists(st.integers(-2, 2 * n), min_size=n, max_size=n), min_size=20, max_size=30
        )
    )
)
def test_class_ids_of_many_columns_number_rows_as_a_sort_of_the_whole_rows_does(
    columns: list[list[int]],
) -> None:
    """Twenty to thirty columns of up to 2n + 3 values: the rows' digits pass 2**62 and
    are renumbered on the way; the ids are still those of the whole rows' sort."""
    key = np.array(columns, dtype=np.int64).T
    _u, want = np.unique(key, axis=0, return_inverse=True)
    assert _row_ids(key).tolist() == want.reshape(-1).tolist()


def test_an_answer_that_read_a_wide_name_is_not_remembered_for_a_p_slot_state() -> None:
    """p-slots m080 and m081 are alike but for FileSystemDomain (wide: 80 static
    machines have one each, and START no job). alice's job asks
    only for 6000 MB free and splits m080 (3 GB taken, 5 GB left). bob's job runs where
    its files are (m081.fs) or where 6000 MB are free: m080, one slot in its state, says
    no (an answer that read FileSystemDomain), m081 says yes and is split the same way,
    so both are in one state. carol's job, of bob's shape, must still get m081: the
    state's answer on m080 was m080's alone and may not be remembered for the state."""
    rng = random.Random(17)
    slots, privates = one_domain_each(rng, 80, Memory=8192, Start=parse_expr("False"))
    for m in (80, 81):
        ad, private = _pslot(rng, m, f"m{m:03d}.fs", Cpus=8, Memory=8192)
        slots.append(ad)
        privates.append(private)
    reqs = []
    for ac, who in enumerate(("alice", "bob", "carol"), start=1):
        req = domain_job(
            "m081.fs",
            "TARGET.Memory >= 6000"
            if who == "alice"
            else "(TARGET.FileSystemDomain == MY.FileSystemDomain) || (TARGET.Memory >= 6000)",
            1,
            RequestCpus=1,
            RequestMemory=3000,
        )
        req.ad["ClusterId"] = req.ad["AutoClusterId"] = ac
        req.ad["Owner"] = "alice"  # read by some slots' Rank: one shape for all three
        req.ad["Submitter"] = f"{who}@mockpool"
        reqs.append(ResourceRequest.from_ad(req.ad, "schedd1", SCHEDD))
    by_class, by_slot = both_ways(CycleAds(slots, privates), reqs, "")
    assert outcome(by_class) == outcome(by_slot)
    assert [m.slot_name for m in by_class.matches] == ["slot1@m080", "slot1@m081", "slot1@m081"]


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**RANDOM_CYCLES)
def test_jobs_matched_a_run_at_a_time_get_the_slots_one_by_one_matching_gives(
    seed: int, machines: int, config: str
) -> None:
    """Past the NegotiatorLog's match limit a request's jobs take the static slots of one
    key in one step (``_match_run``); logging every match keeps the one-by-one path. The
    matches, their order and the rejections agree (submitter limits, p-slots, Claimed
    slots and concurrency limits included)."""
    rng = random.Random(seed)
    snapshot = random_pool(rng, machines)
    requests = [
        dataclasses.replace(r, count=4 * r.count)
        for r in random_requests(rng, rng.choice([3, 12, 30]))
    ]
    cfg = CycleConfig.from_config(parse_config(config, "test"))
    one = negotiate(
        snapshot, requests, Accountant(), dataclasses.replace(cfg, log_match_limit=10**9), 100.0
    )
    runs = negotiate(
        snapshot, requests, Accountant(), dataclasses.replace(cfg, log_match_limit=0), 100.0
    )
    assert outcome(runs)[:2] == outcome(one)[:2]
    assert one.stats.jobs_matched_in_runs == 0


def test_a_requests_jobs_take_alike_static_slots_in_runs_up_to_the_submitter_limit() -> None:
    """Ten one-cpu slots, alice and bob (equal priorities) ask for 8 jobs each: the pie
    gives each a limit of 5 slots. Past the log's limit each takes its five in one run,
    alice slots 0-4 and bob slots 5-9 (snapshot order), and the run stops at the limit."""
    cfg = CycleConfig.from_config(parse_config("", "test"))
    requests = [job_request("alice@pool", 8), job_request("bob@pool", 8, ac=2)]
    for limit, in_runs in ((10**9, 0), (0, 10)):
        got = negotiate(
            static_pool(10),
            requests,
            Accountant(),
            dataclasses.replace(cfg, log_match_limit=limit),
            100.0,
        )
        assert [(m.submitter, m.slot_name) for m in got.matches] == [
            ("alice@pool", f"slot1@exec{i:05d}") for i in range(5)
        ] + [("bob@pool", f"slot1@exec{i:05d}") for i in range(5, 10)]
        assert got.stats.jobs_matched_in_runs == in_runs
