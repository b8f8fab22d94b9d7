"""The startd core: slots, claims, carving, jobs and time accounting, with hand-worked numbers."""

from __future__ import annotations

import pytest

from mockpool.classad import ClassAd, parse_expr
from mockpool.config import ConfigError, parse_config
from mockpool.startd.grants import (
    ClaimRefusedError,
    InvalidJobError,
    StartdError,
    UnknownClaimError,
)
from mockpool.startd.machine import Machine

ADDR = "127.0.0.1:9618"
SCHEDD = "<127.0.0.1:7000>"


def machine(text: str, now: float = 0.0, name: str = "exec0001") -> Machine:
    return Machine(name, parse_config(text, "test.conf"), ADDR, 1000, now)


def job(cluster: int = 1, proc: int = 0, **attrs: object) -> ClassAd:
    ad = ClassAd(
        ClusterId=cluster,
        ProcId=proc,
        Owner="alice",
        User="alice@mockpool",
        RequestCpus=1,
        RequestMemory=128,
        RequestDisk=1024,
        MockDuration=60,
        JobLeaseDuration=2400,
    )
    ad["Requirements"] = parse_expr("true")
    for k, v in attrs.items():
        exprs = ("Requirements", "MockDuration", "MockExitCode")
        ad[k] = parse_expr(v) if isinstance(v, str) and k in exprs else v
    return ad


def claim(m: Machine, cid: str, slot: str, j: ClassAd | None = None, now: float = 0.0):
    return m.request_claim(cid, slot, j or job(), "schedd0", SCHEDD, "alice@mockpool", now)


def priv(m: Machine, slot: str) -> ClassAd:
    return next(a for a in m.private_ads() if a.eval("Name") == slot)


def pub(m: Machine, slot: str, now: float = 0.0) -> ClassAd:
    return next(a for a in m.public_ads(now) if a.eval("Name") == slot)


def id_list(m: Machine, slot: str = "slot1@exec0001") -> list[str]:
    """A consumption-policy p-slot's ClaimIdList, else its Capability (what it offers)."""
    ids = priv(m, slot).eval("ClaimIdList")
    return ids.split() if isinstance(ids, str) else [priv(m, slot).eval("Capability")]


# --- layout -----------------------------------------------------------------------------


def test_default_machine_is_one_pslot_of_mock_detected_resources() -> None:
    m = machine("")
    (ad,) = m.public_ads(0)
    assert ad.eval("Name") == "slot1@exec0001"
    assert ad.eval("SlotType") == "Partitionable"
    # 1 detected cpu, 2048 MB per cpu, 16 GiB of disk per cpu
    assert (ad.eval("Cpus"), ad.eval("Memory"), ad.eval("Disk")) == (1, 2048, 16 * 1024 * 1024)
    # no consumption policy (the default): the Capability only, no ClaimIdList/NumClaims
    assert priv(m, "slot1@exec0001").lookup("ClaimIdList") is None
    assert ad.lookup("NumClaims") is None and ad.lookup("ConsumptionCpus") is None
    assert ad.eval("MachineResources") == "Cpus Memory Disk Swap"


def test_static_slots_divide_num_cpus_evenly() -> None:
    m = machine("NUM_CPUS = 4\nSLOT_TYPE_0_PARTITIONABLE = False\n")
    ads = m.public_ads(0)
    assert [a.eval("Name") for a in ads] == [f"slot{i}@exec0001" for i in (1, 2, 3, 4)]
    assert {(a.eval("Cpus"), a.eval("Memory"), a.eval("SlotType")) for a in ads} == {
        (1, 2048, "Static")  # 8192 MB detected for 4 cpus, a quarter each
    }
    assert [a.eval("SlotID") for a in ads] == [1, 2, 3, 4]
    assert all(a.eval("TotalCpus") == 4 and a.eval("TotalMemory") == 8192 for a in ads)


def test_slot_types_fractions_amounts_and_auto_numbered_in_type_order() -> None:
    m = machine(
        """
        NUM_CPUS = 8
        MEMORY = 16384
        DISK = 1000000
        SLOT_TYPE_1 = 1/4
        NUM_SLOTS_TYPE_1 = 2
        SLOT_TYPE_2 = cpus=2, memory=2048
        NUM_SLOTS_TYPE_2 = 1
        SLOT_TYPE_3 = auto
        SLOT_TYPE_3_PARTITIONABLE = True
        SLOT_TYPE_3_CONSUMPTION_POLICY = True
        NUM_SLOTS_TYPE_3 = 1
        """
    )
    got = [
        (a.eval("Name"), a.eval("SlotType"), a.eval("Cpus"), a.eval("Memory"), a.eval("Disk"))
        for a in m.public_ads(0)
    ]
    # type 1: a quarter of 8 cpus, 16384 MB, 1000000 KB each; type 2: 2 cpus, 2048 MB and
    # an auto share of disk; type 3 (auto) takes what is left: 8-4-2 = 2 cpus,
    # 16384-8192-2048 = 6144 MB; types 2 and 3 split the 500000 KB of disk left.
    assert got == [
        ("slot1@exec0001", "Static", 2, 4096, 250000),
        ("slot2@exec0001", "Static", 2, 4096, 250000),
        ("slot3@exec0001", "Static", 2, 2048, 250000),
        ("slot4@exec0001", "Partitionable", 2, 6144, 250000),
    ]
    assert len(id_list(m, "slot4@exec0001")) == 2  # NUM_CLAIMS = ceil(Cpus), with a policy
    assert priv(m, "slot1@exec0001").lookup("ClaimIdList") is None


def test_bad_configuration_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="NUM_CLAIMS"):
        machine("NUM_CLAIMS = many\n")
    with pytest.raises(ConfigError, match="START"):
        machine("START = (\n")
    with pytest.raises(ConfigError):
        machine("NUM_CPUS = 2\nSLOT_TYPE_1 = cpus=4\nNUM_SLOTS_TYPE_1 = 1\n")


def test_slot_ad_policy_attributes() -> None:
    m = machine('NUM_CPUS = 2\nSTART = TARGET.Owner == "alice"\nRANK = TARGET.JobPrio\n')
    ad = pub(m, "slot1@exec0001", now=5)
    assert str(ad["Start"]) == str(parse_expr('TARGET.Owner == "alice"'))
    # a partitionable slot: START && (WithinResourceLimits), as HTCondor's Reqexp.cpp
    assert str(ad["Requirements"]) == str(parse_expr("START && (WithinResourceLimits)"))
    assert str(ad["WithinResourceLimits"]) == str(
        parse_expr(
            "(MY.Cpus > 0 && TARGET.RequestCpus <= MY.Cpus && MY.Memory > 0 && "
            "TARGET.RequestMemory <= MY.Memory && MY.Disk > 0 && TARGET.RequestDisk <= MY.Disk)"
        )
    )
    assert ad.eval("SlotWeight") == 2  # SLOT_WEIGHT defaults to Cpus
    for attr, value in {
        "MyType": "Machine",
        "Machine": "exec0001",
        "MyAddress": "<127.0.0.1:9618>",
        "Arch": "X86_64",
        "OpSys": "LINUX",
        "State": "Unclaimed",
        "Activity": "Idle",
        "PartitionableSlot": True,
        "DynamicSlot": False,
        "TotalSlotCpus": 2,
        "DaemonStartTime": 1000,
        "NumDynamicSlots": 0,
        "TotalTimeUnclaimedIdle": 5,
    }.items():
        assert ad.eval(attr) == value, attr


# --- claims on a partitionable slot -----------------------------------------------------


def test_slot_ads_share_the_bindings_of_equal_values() -> None:
    """Two machines of two static slots: their ads share one binding of each equal
    value (OpSys, Cpus = 1, the START tree), and hold their own Names."""
    cfg = "NUM_CPUS = 2\nNUM_SLOTS_TYPE_1 = 2\nSLOT_TYPE_1 = 1/2\n"
    ads = machine(cfg).public_ads(0.0) + machine(cfg, name="exec0002").public_ads(0.0)

    def binding(ad: ClassAd, name: str) -> tuple:
        return next(p for p in ad.pairs() if p[0] == name)

    for name in ("OpSys", "Cpus", "Start"):
        assert len({id(binding(ad, name)) for ad in ads}) == 1, name
    assert len({binding(ad, "Name")[1].value for ad in ads}) == 4
    assert [ad.eval("Cpus") for ad in ads] == [1, 1, 1, 1]


def test_ten_cpu_pslot_with_fifteen_one_cpu_jobs() -> None:
    m = machine("NUM_CPUS = 10\nMEMORY = 20480\nCONSUMPTION_POLICY = True\n")
    granted, refused = [], []
    for i in range(15):
        cid = id_list(m)[i % 10]
        try:
            granted.append(claim(m, cid, "slot1@exec0001", job(1, i)))
        except StartdError as e:
            refused.append((i, str(e)))
    assert [g.slot_name for g in granted] == [f"slot1_{k}@exec0001" for k in range(1, 11)]
    assert all(g.slot_ad.eval("Cpus") == 1 for g in granted)
    assert all(g.slot_ad.eval("Memory") == 128 for g in granted)
    p = pub(m, "slot1@exec0001")
    assert (p.eval("Cpus"), p.eval("Memory")) == (0, 20480 - 10 * 128)
    assert p.eval("NumDynamicSlots") == 10
    assert p.eval("ChildCpus") == [1] * 10
    assert [i for i, _ in refused] == list(range(10, 15))
    assert "slot1@exec0001 cannot be split" in refused[0][1] and "1 cpus (has 0)" in refused[0][1]


def test_request_edits_round_memory_disk_and_cpus_up() -> None:
    m = machine("NUM_CPUS = 4\nMEMORY = 8192\nDISK = 100000\n")
    g = claim(
        m,
        id_list(m)[0],
        "slot1@exec0001",
        job(RequestMemory=1000, RequestDisk=1000, RequestCpus=1.5),
    )
    # quantize(1000,{128}) = 1024, quantize(1000,{1024}) = 1024, quantize(1.5,{1}) = 2
    assert (g.slot_ad.eval("Cpus"), g.slot_ad.eval("Memory"), g.slot_ad.eval("Disk")) == (
        2,
        1024,
        1024,
    )
    assert g.slot_ad.eval("SlotType") == "Dynamic" and g.slot_ad.eval("DynamicSlot") is True
    assert g.slot_ad.eval("TotalSlotMemory") == 1024
    p = pub(m, "slot1@exec0001")
    assert (p.eval("Cpus"), p.eval("Memory"), p.eval("Disk")) == (2, 7168, 98976)
    assert (p.eval("TotalSlotCpus"), p.eval("TotalSlotMemory")) == (4, 8192)


def test_modify_request_expr_knob_and_fallback_when_edit_breaks_start() -> None:
    m = machine(
        "NUM_CPUS = 4\nMEMORY = 8192\nMODIFY_REQUEST_EXPR_REQUESTMEMORY = quantize(RequestMemory, {512})\n"
    )
    g = claim(m, id_list(m)[0], "slot1@exec0001", job(RequestMemory=600))
    assert g.slot_ad.eval("Memory") == 1024
    # START refuses the edited request (1024) but accepts the job as sent (1000): HTCondor
    # drops the edit (MUST_MODIFY_REQUEST_EXPRS = False)
    m = machine("NUM_CPUS = 4\nMEMORY = 8192\nSTART = TARGET.RequestMemory < 1024\n")
    g = claim(m, id_list(m)[0], "slot1@exec0001", job(RequestMemory=1000))
    assert g.slot_ad.eval("Memory") == 1000


def test_used_pslot_id_is_replaced_and_dynamic_claim_gets_its_own() -> None:
    m = machine("NUM_CPUS = 4\nCONSUMPTION_POLICY = True\n")
    before = id_list(m)
    g = claim(m, before[1], "slot1@exec0001")
    after = id_list(m)
    assert len(after) == 4 and after[0] == before[0] and after[2:] == before[2:]
    assert after[1] != before[1]
    assert g.claim_id not in before + after
    # a claimed slot's Capability is its preempting id (HTCondor's r_pre), not the held one
    cap = priv(m, g.slot_name).eval("Capability")
    assert cap not in (g.claim_id, *before, *after)
    # the spent id is refused, naming why
    with pytest.raises(UnknownClaimError, match="no longer valid at exec0001"):
        claim(m, before[1], "slot1@exec0001")
    # the dynamic slot's claim id is held: it cannot be claimed again
    with pytest.raises(ClaimRefusedError, match="already claimed"):
        claim(m, g.claim_id, g.slot_name)


def test_pslot_capability_is_also_a_claimable_id() -> None:
    m = machine("NUM_CPUS = 2\n")
    cap = priv(m, "slot1@exec0001").eval("Capability")
    g = claim(m, cap, "slot1@exec0001")
    assert g.slot_name == "slot1_1@exec0001"
    assert priv(m, "slot1@exec0001").eval("Capability") != cap


def test_release_returns_resources_and_reuses_the_lowest_free_index() -> None:
    m = machine("NUM_CPUS = 4\nMEMORY = 4096\nCONSUMPTION_POLICY = True\n")
    grants = [
        claim(m, id_list(m)[i], "slot1@exec0001", job(1, i, RequestMemory=1000)) for i in range(3)
    ]
    assert pub(m, "slot1@exec0001").eval("Memory") == 4096 - 3 * 1024
    rel = m.release(grants[1].claim_id, now=10)
    assert rel.slot_name == "slot1_2@exec0001" and rel.killed_job is None
    assert rel.slot_ad.eval("Name") == "slot1@exec0001"
    assert (rel.slot_ad.eval("Cpus"), rel.slot_ad.eval("Memory")) == (2, 4096 - 2 * 1024)
    assert "slot1_2@exec0001" not in m.slots
    assert m.take_removed() == ["slot1_2@exec0001"] and m.take_removed() == []
    again = claim(m, id_list(m)[0], "slot1@exec0001", job(1, 9))
    assert again.slot_name == "slot1_2@exec0001"  # HTCondor's IdDispenser: lowest free
    with pytest.raises(UnknownClaimError, match="no longer valid"):
        m.release(grants[1].claim_id, now=11)


def test_missing_memory_request_is_refused_for_a_pslot() -> None:
    m = machine("NUM_CPUS = 2\n")
    j = job()
    del j["RequestMemory"]
    del j["RequestDisk"]
    with pytest.raises(InvalidJobError, match="no numeric RequestMemory"):
        claim(m, id_list(m)[0], "slot1@exec0001", j)


# --- claims on static slots, refusals -----------------------------------------------------


def static(text: str = "", cpus: int = 2) -> Machine:
    return machine(f"NUM_CPUS = {cpus}\nSLOT_TYPE_0_PARTITIONABLE = False\n{text}")


def test_static_claim_and_release_with_a_fresh_id() -> None:
    m = static()
    cid = priv(m, "slot1@exec0001").eval("Capability")
    assert priv(m, "slot1@exec0001").lookup("ClaimIdList") is None
    g = claim(m, cid, "slot1@exec0001", now=5)
    assert g.claim_id == cid and g.slot_name == "slot1@exec0001"
    ad = g.slot_ad
    assert (ad.eval("State"), ad.eval("Activity"), ad.eval("EnteredCurrentState")) == (
        "Claimed",
        "Idle",
        5,
    )
    assert ad.eval("RemoteOwner") == "alice@mockpool"
    assert ad.eval("RemoteUser") == "alice@mockpool"
    assert ad.eval("AccountingGroup") == "alice@mockpool"
    assert ad.eval("RemoteScheddName") == "schedd0"
    assert ad.eval("ClientMachine") == "127.0.0.1"
    assert ad.eval("PublicClaimId").endswith("#...")
    with pytest.raises(ClaimRefusedError, match="already claimed"):
        claim(m, cid, "slot1@exec0001")
    rel = m.release(cid, now=7)
    fresh = priv(m, "slot1@exec0001").eval("Capability")
    assert fresh != cid
    assert rel.slot_ad.eval("State") == "Unclaimed" and rel.slot_ad.lookup("RemoteOwner") is None
    with pytest.raises(UnknownClaimError, match="no longer valid"):
        claim(m, cid, "slot1@exec0001")
    claim(m, fresh, "slot1@exec0001")


def test_claim_id_not_issued_here_is_refused_and_nothing_changes() -> None:
    m = static()
    before = [str(a) for a in m.private_ads()]
    foreign = priv(Machine("x", parse_config(""), "10.0.0.1:1", 5, 0), "slot1@x").eval("Capability")
    with pytest.raises(UnknownClaimError, match="was not issued by exec0001"):
        claim(m, foreign, "slot1@exec0001")
    with pytest.raises(UnknownClaimError, match="was not issued"):
        claim(m, "garbage", "slot1@exec0001")
    assert [str(a) for a in m.private_ads()] == before
    assert m.version == 0


def test_claim_id_for_another_slot_is_refused() -> None:
    m = static()
    cid = priv(m, "slot1@exec0001").eval("Capability")
    with pytest.raises(ClaimRefusedError, match="is for slot1@exec0001, not slot2@exec0001"):
        claim(m, cid, "slot2@exec0001")


def test_start_and_job_requirements_both_checked() -> None:
    m = static('START = TARGET.Owner == "bob"\n')
    cid = priv(m, "slot1@exec0001").eval("Capability")
    with pytest.raises(ClaimRefusedError, match=r"START is not true for job 1\.0"):
        claim(m, cid, "slot1@exec0001")
    m = static()
    cid = priv(m, "slot1@exec0001").eval("Capability")
    with pytest.raises(ClaimRefusedError, match="Requirements are not true on slot1@exec0001"):
        claim(m, cid, "slot1@exec0001", job(Requirements="TARGET.Cpus >= 2"))
    # UNDEFINED counts as false
    with pytest.raises(ClaimRefusedError, match="Requirements"):
        claim(m, cid, "slot1@exec0001", job(Requirements="TARGET.NoSuchAttr"))
    assert pub(m, "slot1@exec0001").eval("State") == "Unclaimed"


def test_start_and_requirements_see_the_claim_time_as_current_time() -> None:
    # the machine opens for jobs at pool time 1000; a claim at 999 is refused, at 1000 granted
    m = static("START = CurrentTime >= 1000 && time() >= 1000\n")
    cid = priv(m, "slot1@exec0001").eval("Capability")
    with pytest.raises(ClaimRefusedError, match="START is not true"):
        claim(m, cid, "slot1@exec0001", now=999.0)
    with pytest.raises(ClaimRefusedError, match="Requirements are not true"):
        claim(m, cid, "slot1@exec0001", job(Requirements="CurrentTime < 1000"), now=1000.0)
    claim(m, cid, "slot1@exec0001", now=1000.0)
    assert pub(m, "slot1@exec0001").eval("State") == "Claimed"


def test_slot_type_knobs_override_per_type() -> None:
    m = machine(
        """
        NUM_CPUS = 4
        SLOT_TYPE_1 = 1/4
        NUM_SLOTS_TYPE_1 = 1
        SLOT_TYPE_1_START = False
        SLOT_TYPE_2 = 3/4
        NUM_SLOTS_TYPE_2 = 1
        SLOT_TYPE_2_PARTITIONABLE = True
        SLOT_TYPE_2_NUM_CLAIMS = 5
        SLOT_TYPE_2_CONSUMPTION_POLICY = True
        SLOT_TYPE_2_RANK = 7
        """
    )
    with pytest.raises(ClaimRefusedError, match="START"):
        claim(m, priv(m, "slot1@exec0001").eval("Capability"), "slot1@exec0001")
    assert len(id_list(m, "slot2@exec0001")) == 5
    g = claim(m, id_list(m, "slot2@exec0001")[0], "slot2@exec0001")
    assert g.slot_name == "slot2_1@exec0001"
    assert g.slot_ad.eval("CurrentRank") == 7.0
    assert g.slot_ad.eval("SlotTypeID") == 2


def test_claim_request_needs_schedd_address_and_owner() -> None:
    m = static()
    cid = priv(m, "slot1@exec0001").eval("Capability")
    with pytest.raises(ClaimRefusedError, match="address"):
        m.request_claim(cid, "slot1@exec0001", job(), "s", "", "alice@mockpool", 0)
    with pytest.raises(ClaimRefusedError, match="owner"):
        m.request_claim(cid, "slot1@exec0001", job(), "s", SCHEDD, "", 0)


# --- jobs and time ------------------------------------------------------------------------


def test_time_accounting_unclaimed_100_then_busy_60() -> None:
    m = static()
    cid = priv(m, "slot1@exec0001").eval("Capability")
    claim(m, cid, "slot1@exec0001", now=100)
    act = m.activate(cid, job(MockDuration=60), now=100)
    assert (act.start, act.end, act.job_id) == (100, 160, "1.0")
    busy = pub(m, "slot1@exec0001", now=130)
    assert busy.eval("Activity") == "Busy" and busy.eval("TotalTimeClaimedBusy") == 30
    assert busy.eval("JobId") == "1.0" and busy.eval("JobStart") == 100
    assert busy.eval("GlobalJobId") == "schedd0#1.0#0"
    m.advance(160)
    ad = pub(m, "slot1@exec0001", now=160)
    assert ad.eval("TotalTimeUnclaimedIdle") == 100
    assert ad.eval("TotalTimeClaimedBusy") == 60
    assert ad.eval("TotalTimeClaimedIdle") == 0
    assert (ad.eval("State"), ad.eval("Activity")) == ("Claimed", "Idle")
    assert ad.eval("EnteredCurrentState") == 100 and ad.eval("EnteredCurrentActivity") == 160
    assert pub(m, "slot1@exec0001", now=175).eval("TotalTimeClaimedIdle") == 15
    m.release(cid, now=180)
    ad = pub(m, "slot1@exec0001", now=200)
    assert (ad.eval("TotalTimeUnclaimedIdle"), ad.eval("TotalTimeClaimedIdle")) == (120, 20)


def test_job_exits_at_exactly_start_plus_mock_duration() -> None:
    m = machine("NUM_CPUS = 2\n")
    g = claim(m, id_list(m)[0], "slot1@exec0001", now=10)
    m.activate(g.claim_id, job(7, 3, MockDuration=45.5), now=10)
    assert m.next_event_time() == 55.5
    assert m.advance(55.49) == []
    m.mark_clean()
    (rec,) = m.advance(100)  # advanced late: the exit keeps its own time
    assert (rec.cluster, rec.proc, rec.start, rec.end, rec.exit_code) == (7, 3, 10, 55.5, 0)
    assert (rec.slot_name, rec.claim_id, rec.schedd_address) == (
        "slot1_1@exec0001",
        g.claim_id,
        SCHEDD,
    )
    assert m.dirty
    assert m.next_event_time() is None
    ad = pub(m, "slot1_1@exec0001", now=100)
    assert ad.eval("TotalTimeClaimedBusy") == 45 and ad.eval("TotalTimeClaimedIdle") == 44
    assert ad.lookup("JobId") is None


def test_mock_duration_expression_and_zero() -> None:
    m = static()
    cid = priv(m, "slot1@exec0001").eval("Capability")
    claim(m, cid, "slot1@exec0001")
    act = m.activate(cid, job(MockDuration="10 * TARGET.Cpus"), now=0)
    assert act.end == 10
    m.advance(10)
    act = m.activate(cid, job(2, 0, MockDuration=0), now=10)
    assert act.end == 10 and [r.cluster for r in m.advance(10)] == [2]


def test_mock_exit_code_is_what_the_job_exits_with() -> None:
    m = static()
    cid = priv(m, "slot1@exec0001").eval("Capability")
    claim(m, cid, "slot1@exec0001")
    m.activate(cid, job(MockDuration=5, MockExitCode="TARGET.Cpus + 2"), now=0)
    assert [r.exit_code for r in m.advance(5)] == [3]  # the slot has 1 cpu
    for bad, shown in (('"one"', "one"), ("2.5", "2.5"), ("4294967296", "4294967296")):
        with pytest.raises(InvalidJobError, match=f"no usable MockExitCode \\(got {shown}\\)"):
            m.activate(cid, job(MockExitCode=bad), now=5)
    assert pub(m, "slot1@exec0001", now=5).eval("Activity") == "Idle"


@pytest.mark.parametrize("value", [None, '"long"', "-5", "undefined"])
def test_activation_without_usable_mock_duration_is_refused(value: str | None) -> None:
    m = static()
    cid = priv(m, "slot1@exec0001").eval("Capability")
    claim(m, cid, "slot1@exec0001")
    j = job()
    if value is None:
        del j["MockDuration"]
    else:
        j["MockDuration"] = parse_expr(value)
    with pytest.raises(InvalidJobError, match="MockDuration"):
        m.activate(cid, j, now=0)
    assert pub(m, "slot1@exec0001").eval("Activity") == "Idle"
    assert m.next_event_time() is None


def test_activation_refusals() -> None:
    m = static()
    cid = priv(m, "slot1@exec0001").eval("Capability")
    with pytest.raises(UnknownClaimError):
        m.activate(cid, job(), now=0)  # offered, not claimed
    claim(m, cid, "slot1@exec0001")
    j = job()
    del j["ClusterId"]
    with pytest.raises(InvalidJobError, match="ClusterId"):
        m.activate(cid, j, now=0)
    with pytest.raises(ClaimRefusedError, match="Requirements"):
        m.activate(cid, job(Requirements="TARGET.Cpus > 4"), now=0)
    m.activate(cid, job(), now=0)
    with pytest.raises(ClaimRefusedError, match=r"already running job 1\.0"):
        m.activate(cid, job(2, 0), now=1)


def test_release_of_a_busy_claim_kills_the_job_without_an_exit() -> None:
    m = machine("NUM_CPUS = 2\n")
    g = claim(m, id_list(m)[0], "slot1@exec0001")
    m.activate(g.claim_id, job(MockDuration=60), now=0)
    rel = m.release(g.claim_id, now=30)
    assert rel.killed_job == "1.0"
    assert m.next_event_time() is None and m.advance(100) == []
    assert pub(m, "slot1@exec0001").eval("Cpus") == 2


def test_claim_reuse_runs_the_next_job_on_the_same_claim() -> None:
    m = machine("NUM_CPUS = 2\n")
    g = claim(m, id_list(m)[0], "slot1@exec0001")
    m.activate(g.claim_id, job(1, 0, MockDuration=10), now=0)
    m.advance(10)
    m.activate(g.claim_id, job(1, 1, MockDuration=10), now=10)
    assert [(r.proc, r.end) for r in m.advance(20)] == [(1, 20)]


def test_keepalive_and_lease_fields() -> None:
    m = static()
    a = priv(m, "slot1@exec0001").eval("Capability")
    b = priv(m, "slot2@exec0001").eval("Capability")
    claim(m, a, "slot1@exec0001", job(JobLeaseDuration=600), now=0)
    j = job()
    del j["JobLeaseDuration"]
    claim(m, b, "slot2@exec0001", j, now=0)
    assert m.keepalive([a, b, "nope"], now=50) == ["nope"]
    assert m.claim(a).last_heard == 50
    assert m.claim(a).lease_duration == 600
    assert m.claim(b).lease_duration == 1800  # MAX_CLAIM_ALIVES_MISSED 6 x ALIVE_INTERVAL 300


def test_dirty_tracks_changes_since_mark_clean() -> None:
    m = static()
    assert m.dirty
    v = m.version
    m.mark_clean()
    assert not m.dirty
    cid = priv(m, "slot1@exec0001").eval("Capability")
    claim(m, cid, "slot1@exec0001")
    assert m.dirty and m.version == v + 1
    m.mark_clean(v)  # an advertisement of an older version leaves it dirty
    assert m.dirty
    m.keepalive([cid], now=3)  # keepalives do not change ads
    m.mark_clean()
    m.keepalive([cid], now=4)
    assert not m.dirty


def test_update_sequence_number_increases_per_round() -> None:
    m = static()
    first = m.public_ads(0)[0].eval("UpdateSequenceNumber")
    assert m.public_ads(1)[0].eval("UpdateSequenceNumber") == first + 1


def test_machines_sharing_an_address_never_accept_each_others_ids() -> None:
    a, b = machine("", name="exec0001"), machine("", name="exec0002")
    foreign = id_list(b, "slot1@exec0002")[0]
    assert foreign.startswith("<127.0.0.1:9618?alias=exec0002>#1000#")
    with pytest.raises(UnknownClaimError, match="was not issued by exec0001"):
        claim(a, foreign, "slot1@exec0001")


# --- consumption policies, leftovers, concurrency limits ---------------------------------


def test_consumption_policy_advertises_its_expressions_and_claim_ids() -> None:
    m = machine(
        "NUM_CPUS = 10\nMEMORY = 1903\nCONSUMPTION_POLICY = True\nNUM_CLAIMS = 20\n"
        "CONSUMPTION_MEMORY = quantize(target.RequestMemory, {512})\n"
    )
    ad = pub(m, "slot1@exec0001")
    assert ad.eval("MachineResources") == "Cpus Memory Disk Swap"
    assert ad.eval("NumClaims") == 20
    job_ad = job(RequestMemory=100)
    # the p-slot's own expressions, evaluated with the job as TARGET
    assert ad.eval("ConsumptionMemory", job_ad) == 512
    assert ad.eval("ConsumptionCpus", job_ad) == 1  # CONSUMPTION_CPUS default quantize(,{1})
    assert ad.eval("ConsumptionDisk", job_ad) == 1024  # quantize(1024, {1024})
    assert len(id_list(m)) == 20


def test_consumption_policy_carves_by_consumption() -> None:
    # 1903 MB and ConsumptionMemory = quantize(RequestMemory, {512}): jobs asking 100 MB get
    # dynamic slots of 512 MB; three fit (1536), the fourth finds 367 MB left
    m = machine(
        "NUM_CPUS = 10\nMEMORY = 1903\nCONSUMPTION_POLICY = True\nNUM_CLAIMS = 20\n"
        "CONSUMPTION_MEMORY = quantize(target.RequestMemory, {512})\n"
    )
    grants = [
        claim(m, id_list(m)[i], "slot1@exec0001", job(1, i, RequestMemory=100)) for i in range(3)
    ]
    assert [g.slot_ad.eval("Memory") for g in grants] == [512, 512, 512]
    assert all(g.slot_ad.eval("Cpus") == 1 for g in grants)
    assert pub(m, "slot1@exec0001").eval("Memory") == 1903 - 3 * 512
    with pytest.raises(ClaimRefusedError, match="512 MB \\(has 367\\)"):
        claim(m, id_list(m)[3], "slot1@exec0001", job(1, 3, RequestMemory=100))


def test_per_type_consumption_policy() -> None:
    m = machine(
        """
        NUM_CPUS = 4
        SLOT_TYPE_1 = 1/2
        SLOT_TYPE_1_PARTITIONABLE = True
        NUM_SLOTS_TYPE_1 = 1
        SLOT_TYPE_2 = 1/2
        SLOT_TYPE_2_PARTITIONABLE = True
        SLOT_TYPE_2_CONSUMPTION_POLICY = True
        SLOT_TYPE_2_CONSUMPTION_CPUS = 2
        NUM_SLOTS_TYPE_2 = 1
        """
    )
    assert pub(m, "slot1@exec0001").lookup("ConsumptionCpus") is None
    assert pub(m, "slot2@exec0001").eval("ConsumptionCpus") == 2
    g = claim(m, id_list(m, "slot2@exec0001")[0], "slot2@exec0001")
    assert g.slot_ad.eval("Cpus") == 2  # SLOT_TYPE_2_CONSUMPTION_CPUS, not RequestCpus 1
    assert g.slot_ad.eval("ConsumptionCpus") == 2  # a dynamic slot shows its parent's policy


def test_bad_consumption_or_slot_weight_names_file_line_and_knob() -> None:
    with pytest.raises(ConfigError, match=r"test.conf:2: CONSUMPTION_MEMORY = 'quantize\(target"):
        machine("CONSUMPTION_POLICY = True\nCONSUMPTION_MEMORY = quantize(target.RequestMemory,\n")
    # ill-typed: parses, but is not a number for a one-cpu job
    with pytest.raises(
        ConfigError, match=r"test.conf:2: CONSUMPTION_CPUS = '\"one\"': evaluates to 'one'"
    ):
        machine('CONSUMPTION_POLICY = True\nCONSUMPTION_CPUS = "one"\n').check_policies()
    with pytest.raises(ConfigError, match=r"test.conf:1: SLOT_TYPE_1_CONSUMPTION_POLICY = 'maybe'"):
        machine(
            "SLOT_TYPE_1_CONSUMPTION_POLICY = maybe\nSLOT_TYPE_1_PARTITIONABLE = True\nNUM_SLOTS_TYPE_1 = 1\n"
        )
    with pytest.raises(
        ConfigError, match=r"test.conf:1: SLOT_WEIGHT = 'Cpus \+ \"x\"': evaluates to ERROR"
    ):
        machine('SLOT_WEIGHT = Cpus + "x"\n').check_policies()
    with pytest.raises(
        ConfigError, match=r"test.conf:1: SLOT_WEIGHT = 'Cpus \*' \(slot type 0\): syntax error"
    ):
        machine("SLOT_WEIGHT = Cpus *\n")


def test_claim_returns_leftovers_of_a_pslot_without_policy() -> None:
    m = machine("NUM_CPUS = 4\nMEMORY = 4096\n")
    cap = id_list(m)[0]
    g = m.request_claim(
        cap,
        "slot1@exec0001",
        job(RequestMemory=1024),
        "schedd0",
        SCHEDD,
        "alice@mockpool",
        0.0,
        leftovers=True,
    )
    assert g.slot_name == "slot1_1@exec0001"
    # the leftover claim id is the p-slot's new Capability, its ad the p-slot after the carve
    assert g.leftover_claim_id == priv(m, "slot1@exec0001").eval("Capability") != cap
    assert g.leftover_ad is not None
    assert (g.leftover_ad.eval("Cpus"), g.leftover_ad.eval("Memory")) == (3, 3072)
    # the schedd claims the leftovers with it, and gets the next leftovers back
    g2 = m.request_claim(
        g.leftover_claim_id,
        "slot1@exec0001",
        job(1, 1, RequestMemory=1024),
        "schedd0",
        SCHEDD,
        "alice@mockpool",
        0.0,
        leftovers=True,
    )
    assert g2.slot_name == "slot1_2@exec0001"
    assert g2.leftover_ad is not None and g2.leftover_ad.eval("Cpus") == 2
    # not asked: none sent
    g3 = claim(m, id_list(m)[0], "slot1@exec0001")
    assert g3.leftover_claim_id == "" and g3.leftover_ad is None


def test_no_leftovers_with_a_policy_or_when_switched_off() -> None:
    m = machine("NUM_CPUS = 4\nCONSUMPTION_POLICY = True\n")
    g = m.request_claim(
        id_list(m)[0],
        "slot1@exec0001",
        job(),
        "schedd0",
        SCHEDD,
        "alice@mockpool",
        0.0,
        leftovers=True,
    )
    assert g.leftover_claim_id == ""
    m = machine("NUM_CPUS = 4\nCLAIM_PARTITIONABLE_LEFTOVERS = False\n")
    g = m.request_claim(
        id_list(m)[0],
        "slot1@exec0001",
        job(),
        "schedd0",
        SCHEDD,
        "alice@mockpool",
        0.0,
        leftovers=True,
    )
    assert g.leftover_claim_id == ""
    # its default follows NEGOTIATOR_USE_SLOT_WEIGHTS (HTCondor's param table)
    m = machine("NUM_CPUS = 4\nNEGOTIATOR_USE_SLOT_WEIGHTS = False\n")
    g = m.request_claim(
        id_list(m)[0],
        "slot1@exec0001",
        job(),
        "schedd0",
        SCHEDD,
        "alice@mockpool",
        0.0,
        leftovers=True,
    )
    assert g.leftover_claim_id == ""


def test_claimed_slot_publishes_the_jobs_concurrency_limits() -> None:
    m = machine("NUM_CPUS = 2\nNUM_SLOTS = 2\nSLOT_TYPE_0_PARTITIONABLE = False\n")
    cap = priv(m, "slot1@exec0001").eval("Capability")
    g = claim(m, cap, "slot1@exec0001", job(ConcurrencyLimits="Matlab,db:2"))
    assert pub(m, "slot1@exec0001").eval("ConcurrencyLimits") == "Matlab,db:2"
    # an expression is evaluated against the slot
    m.release(g.claim_id, 1.0)
    assert pub(m, "slot1@exec0001").lookup("ConcurrencyLimits") is None
    cap = priv(m, "slot1@exec0001").eval("Capability")
    expr_job = job(1, 1)
    expr_job["ConcurrencyLimits"] = parse_expr('strcat("lic_", TARGET.SlotID)')
    g = claim(m, cap, "slot1@exec0001", expr_job)
    assert pub(m, "slot1@exec0001").eval("ConcurrencyLimits") == "lic_1"
    # without limits: none published
    cap = priv(m, "slot2@exec0001").eval("Capability")
    claim(m, cap, "slot2@exec0001")
    assert pub(m, "slot2@exec0001").lookup("ConcurrencyLimits") is None


def test_empty_consumption_knob_falls_back_to_the_request() -> None:
    # Resource.cpp: with no CONSUMPTION_<RES> value, ifThenElse(target.Request<Res> =?=
    # undefined, 0, target.Request<Res>): the request as is, 0 when missing
    m = machine("NUM_CPUS = 4\nCONSUMPTION_POLICY = True\nSLOT_TYPE_0_CONSUMPTION_MEMORY =\n")
    ad = pub(m, "slot1@exec0001")
    assert ad.eval("ConsumptionMemory", job(RequestMemory=1000)) == 1000  # not rounded to 1024
    no_request = job()
    del no_request["RequestMemory"]
    assert ad.eval("ConsumptionMemory", no_request) == 0


@pytest.mark.parametrize(
    ("worklife", "second_at", "outcome"),
    [
        ("-1", 10_000, "runs"),  # no limit
        ("0", 60, "closed"),  # one job per claim: age 60 > 0 when the first job exits
        ("59", 60, "closed"),
        ("60", 60, "runs"),  # age 60 at the exit is not past 60
        ("100", 100, "runs"),  # age 100 is not past 100
        ("100", 101, "refused"),  # not past it at the exit (60), past it at 101
        ("1200", 60, "runs"),  # HTCondor's default
    ],
)
def test_claim_worklife_limits_new_jobs_on_a_claim(
    worklife: str, second_at: int, outcome: str
) -> None:
    """Claimed at 0, first job 0-60; the second activation at ``second_at``. A claim past
    its worklife when its job exits is closing: the exit says so and the slot is released
    (HTCondor's deactivate_claim answer, then Claimed/Idle -> Preempting)."""
    m = machine(f"NUM_CPUS = 1\nSLOT_TYPE_0_PARTITIONABLE = False\nCLAIM_WORKLIFE = {worklife}\n")
    cid = priv(m, "slot1@exec0001").eval("Capability")
    claim(m, cid, "slot1@exec0001")
    m.activate(cid, job(MockDuration=60), now=0)
    (exit_,) = m.advance(60)
    assert exit_.job_id == "1.0" and exit_.claim_closing == (outcome == "closed")
    if outcome == "runs":
        a = m.activate(cid, job(1, 1, MockDuration=60), now=second_at)
        assert (a.job_id, a.start) == ("1.1", second_at)
    elif outcome == "refused":
        with pytest.raises(ClaimRefusedError, match="past CLAIM_WORKLIFE"):
            m.activate(cid, job(1, 1), now=second_at)
    else:
        assert not m.holds(cid)
        assert pub(m, "slot1@exec0001").eval("State") == "Unclaimed"
        with pytest.raises(UnknownClaimError):
            m.activate(cid, job(1, 1), now=second_at)


def test_a_dynamic_slot_whose_claim_closes_with_its_job_gives_its_resources_back() -> None:
    """A 4-cpu p-slot, CLAIM_WORKLIFE 30: a 1-cpu job of 0-60 exits past it, so the
    dynamic slot goes and the p-slot has its 4 cpus again."""
    m = machine("NUM_CPUS = 4\nCLAIM_WORKLIFE = 30\n")
    cid = priv(m, "slot1@exec0001").eval("Capability")
    grant = claim(m, cid, "slot1@exec0001")
    m.activate(grant.claim_id, job(MockDuration=60), now=0)
    assert pub(m, "slot1@exec0001").eval("Cpus") == 3
    (exit_,) = m.advance(60)
    assert exit_.claim_closing and not m.holds(grant.claim_id)
    assert pub(m, "slot1@exec0001").eval("Cpus") == 4
    assert m.take_removed() == [grant.slot_name]


def test_claim_worklife_never_stops_the_first_job() -> None:
    m = machine("NUM_CPUS = 1\nSLOT_TYPE_0_PARTITIONABLE = False\nCLAIM_WORKLIFE = 0\n")
    cid = priv(m, "slot1@exec0001").eval("Capability")
    claim(m, cid, "slot1@exec0001")
    assert m.activate(cid, job(), now=500).job_id == "1.0"
