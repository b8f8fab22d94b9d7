"""A machine's identity attributes (Arch, OpSys..., domains) from its configuration."""

from __future__ import annotations

import pytest

from mockpool.config import ConfigError, parse_config
from mockpool.startd.machine import Machine


def slot_ad(text: str, name: str = "exec0001") -> dict[str, object]:
    m = Machine(name, parse_config(text, "test.conf"), "127.0.0.1:9618", 1000, 0.0)
    ad = m.public_ads(0.0)[0]
    keys = ("Arch", "OpSys", "OpSysAndVer", "OpSysMajorVer", "OpSysName")
    keys += ("UidDomain", "FileSystemDomain", "HasFileTransfer")
    return {k: ad.eval(k) for k in keys}


def test_defaults_describe_an_x86_64_almalinux_9_host() -> None:
    assert slot_ad("") == {
        "Arch": "X86_64",
        "OpSys": "LINUX",
        "OpSysAndVer": "AlmaLinux9",
        "OpSysMajorVer": 9,
        "OpSysName": "AlmaLinux",
        "UidDomain": "mockpool",
        "FileSystemDomain": "exec0001",  # HTCondor's default: $(FULL_HOSTNAME)
        "HasFileTransfer": True,
    }


def test_knobs_set_each_attribute() -> None:
    text = (
        "ARCH = aarch64\nOPSYSANDVER = Ubuntu22\nOPSYSMAJORVER = 22\nOPSYSNAME = Ubuntu\n"
        "UID_DOMAIN = example.org\nFILESYSTEM_DOMAIN = fs.example.org\n"
    )
    ad = slot_ad(text)
    assert ad["Arch"] == "aarch64"
    assert ad["OpSys"] == "LINUX"
    assert (ad["OpSysAndVer"], ad["OpSysMajorVer"], ad["OpSysName"]) == ("Ubuntu22", 22, "Ubuntu")
    assert (ad["UidDomain"], ad["FileSystemDomain"]) == ("example.org", "fs.example.org")


def test_a_major_version_that_is_not_a_number_names_the_knob() -> None:
    with pytest.raises(ConfigError, match=r"test\.conf:2: OPSYSMAJORVER = 'nine'"):
        slot_ad("ARCH = aarch64\nOPSYSMAJORVER = nine\n")


# -- custom machine resources and GPUs -----------------------------------------------------

from mockpool.classad import ClassAd, matches, parse_expr  # noqa: E402
from mockpool.schedd.submit import parse_submit  # noqa: E402
from mockpool.startd.grants import ClaimRefusedError  # noqa: E402

GPU_MACHINE = "NUM_CPUS = 8\nuse FEATURE : GPUs\nMOCK_GPUS = 4\n"


def machine(text: str, name: str = "gpu01") -> Machine:
    return Machine(name, parse_config(text, "test.conf"), "127.0.0.1:9618", 1000, 0.0)


def job(lines: str, proc: int = 0) -> ClassAd:
    ad = parse_submit(f"executable = /bin/sleep\narguments = 60\n{lines}\nqueue 4\n", owner="a")
    return ClassAd({k: parse_expr(v) for k, v in ad.procs[proc].items()})


def offer(m: Machine, name: str = "slot1@gpu01") -> str:
    return next(cid for cid in m.offered_claim_ids() if m._offers[cid].name == name)


def test_the_mock_gpu_inventory_is_published_as_htcondor_does() -> None:
    ad = machine(GPU_MACHINE).public_ads(0.0)[0]
    ids = ad.eval("DetectedGPUs").split(", ")
    assert len(ids) == 4 and all(i.startswith("GPU-") and len(i) == 12 for i in ids)
    assert (ad.eval("GPUs"), ad.eval("TotalGPUs"), ad.eval("TotalSlotGPUs")) == (4, 4, 4)
    assert ad.eval("MachineResources") == "Cpus Memory Disk Swap GPUs"
    assert ad.eval("GPUs_Capability") == 8.0 and ad.eval("GPUs_GlobalMemoryMb") == 40536
    dev = ad.eval("GPUs_" + ids[0].replace("-", "_"))
    assert dev.eval("Id") == ids[0] and dev.eval("DeviceName") == "NVIDIA A100-SXM4-40GB"
    # the same machine name gives the same ids; another gives others
    assert machine(GPU_MACHINE).public_ads(0.0)[0].eval("DetectedGPUs") == ", ".join(ids)
    assert machine(GPU_MACHINE, "gpu02").public_ads(0.0)[0].eval("DetectedGPUs") != ", ".join(ids)


def test_a_gpu_job_matches_only_a_slot_with_gpus() -> None:
    gpu_slot = machine(GPU_MACHINE).public_ads(0.0)[0]
    cpu_slot = machine("NUM_CPUS = 8\n", "cpu01").public_ads(0.0)[0]
    gpu_job, cpu_job = job("request_gpus = 1"), job("")
    assert matches(gpu_job, gpu_slot) and not matches(gpu_job, cpu_slot)
    assert matches(cpu_job, gpu_slot) and matches(cpu_job, cpu_slot)
    # require_gpus reads each device's properties through AvailableGPUs
    assert matches(job("request_gpus = 2\ngpus_minimum_capability = 7.5"), gpu_slot)
    assert not matches(job("request_gpus = 1\ngpus_minimum_capability = 9.0"), gpu_slot)
    assert not matches(job("request_gpus = 5"), gpu_slot)


def test_a_partitionable_slot_carves_gpus_and_gets_them_back() -> None:
    m = machine(GPU_MACHINE)
    pad = m.public_ads(0.0)[0]
    ids = pad.eval("DetectedGPUs").split(", ")
    grant = m.request_claim(offer(m), "slot1@gpu01", job("request_gpus = 1"), "s", "a:1", "a", 1.0)
    second = m.request_claim(
        offer(m), "slot1@gpu01", job("request_gpus = 2", 1), "s", "a:1", "a", 1.0
    )
    pslot = m.slot("slot1@gpu01")
    # 4 GPUs: the first dynamic slot takes the first id, the second the next two
    assert m.slot(grant.slot_name).ids["GPUs"] == ids[:1]
    assert m.slot(second.slot_name).ids["GPUs"] == ids[1:3]
    assert grant.slot_ad.eval("AssignedGPUs") == ids[0] and grant.slot_ad.eval("GPUs") == 1
    pad = m.slot_ad("slot1@gpu01", 1.0)
    assert pad.eval("GPUs") == 1 and pslot.ids["GPUs"] == ids[3:]
    assert str(pad["AvailableGPUs"]) == "{ GPUs_" + ids[3].replace("-", "_") + " }"
    with pytest.raises(ClaimRefusedError, match=r"Requirements are not true on slot1@gpu01"):
        m.request_claim(offer(m), "slot1@gpu01", job("request_gpus = 2", 2), "s", "a:1", "a", 2.0)
    m.release(grant.claim_id, 3.0)
    assert pslot.custom["GPUs"] == 2 and pslot.ids["GPUs"] == [ids[0], ids[3]]  # in order


def test_static_slots_split_gpus_by_slot_type() -> None:
    text = (
        "NUM_CPUS = 4\nMACHINE_RESOURCE_GPUs = GPU-a, GPU-b, GPU-c, GPU-d\n"
        "NUM_SLOTS_TYPE_1 = 1\nSLOT_TYPE_1 = cpus=2, gpus=2\nNUM_SLOTS_TYPE_2 = 2\nSLOT_TYPE_2 = cpus=1\n"
    )
    ads = machine(text).public_ads(0.0)
    assert [a.eval("GPUs") for a in ads] == [2, 1, 1]  # the auto share: (4 - 2) / 2 each
    assert [a.eval("AssignedGPUs") for a in ads] == ["GPU-a,GPU-b", "GPU-c", "GPU-d"]
    assert [a.eval("AvailableGPUs") for a in ads] == [["GPU-a", "GPU-b"], ["GPU-c"], ["GPU-d"]]
    assert ads[0].eval("DetectedGPUs") == "GPU-a, GPU-b, GPU-c, GPU-d"


def test_a_counted_resource_without_ids() -> None:
    ads = machine(
        "NUM_CPUS = 2\nMACHINE_RESOURCE_Fpgas = 3\nSLOT_TYPE_0_PARTITIONABLE = False\n"
    ).public_ads(0.0)
    # two static slots share 3 units evenly, rounded down
    assert [(a.eval("Fpgas"), a.eval("TotalFpgas")) for a in ads] == [(1, 3), (1, 3)]
    assert "AssignedFpgas" not in ads[0] and ads[0].eval("DetectedFpgas") == 3
    assert ads[0].eval("MachineResources") == "Cpus Memory Disk Swap Fpgas"


def test_no_gpus_without_the_feature_or_with_no_devices() -> None:
    for text in ("NUM_CPUS = 2\n", "NUM_CPUS = 2\nuse FEATURE : GPUs\n"):
        ad = machine(text).public_ads(0.0)[0]
        assert "GPUs" not in ad.eval("MachineResources").split() or ad.eval("GPUs") == 0


def test_consumption_policy_consumes_custom_resources() -> None:
    m = machine(GPU_MACHINE + "CONSUMPTION_POLICY = True\n")
    pad = m.public_ads(0.0)[0]
    assert pad["ConsumptionGPUs"] == parse_expr(
        "ifthenelse(target.RequestGPUs =?= undefined, 0, target.RequestGPUs)"
    )
    grant = m.request_claim(offer(m), "slot1@gpu01", job("request_gpus = 3"), "s", "a:1", "a", 1.0)
    assert grant.slot_ad.eval("GPUs") == 3 and m.slot("slot1@gpu01").custom["GPUs"] == 1


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("MACHINE_RESOURCE_GPUs = -1\n", "test.conf:2: MACHINE_RESOURCE_GPUs = '-1': expected"),
        ("MACHINE_RESOURCE_GPUs = 1.5\n", "expected a whole number"),
        ("MACHINE_RESOURCE_GPUs = a, a\n", "an id is listed twice"),
        ("MACHINE_RESOURCE_INVENTORY_Fpgas = /bin/fpgas\n", "runs no inventory commands"),
        ("use FEATURE : GPUs\nMOCK_GPUS = -2\n", "MOCK_GPUS = -2: negative"),
        (
            "MACHINE_RESOURCE_GPUs = 2\nNUM_SLOTS_TYPE_1 = 1\nSLOT_TYPE_1 = gpus=3\n",
            "ask for 3 GPUs",
        ),
        ("NUM_SLOTS_TYPE_1 = 1\nSLOT_TYPE_1 = fpgas=1\n", "unknown resource 'fpgas'"),
    ],
)
def test_bad_resource_configuration_names_the_knob(text: str, problem: str) -> None:
    with pytest.raises(ConfigError) as info:
        machine("NUM_CPUS = 2\n" + text)
    assert problem in str(info.value)


def test_require_gpus_picks_the_devices_that_satisfy_it() -> None:
    m = machine(GPU_MACHINE + "MOCK_GPU_CAPABILITY = 7.5\n")
    m.public_ads(0.0)  # publishing nests the device ads in slot ads: they must still work
    ok = job("request_gpus = 1\ngpus_minimum_capability = 7.0")
    grant = m.request_claim(offer(m), "slot1@gpu01", ok, "s", "a:1", "a", 1.0)
    assert len(m.slot(grant.slot_name).ids["GPUs"]) == 1
    too_new = job("request_gpus = 1\n+RequireGPUs = Capability >= 8.0", 1)
    with pytest.raises(ClaimRefusedError, match="matching RequireGPUs"):
        m._pick_ids(m.slot("slot1@gpu01"), "GPUs", 1, too_new, ClassAd(), 1.0)


def test_a_gpu_job_can_be_activated_on_the_dynamic_slot_it_was_given() -> None:
    # every slot ad holds its own copy of the device ads: a job's RequireGPUs sees the
    # job through the dynamic slot it is checked against, whichever ad was built last
    m = machine(GPU_MACHINE + "MOCK_GPU_CAPABILITY = 7.5\n")
    ok = job("request_gpus = 1\ngpus_minimum_capability = 7.0")
    grant = m.request_claim(offer(m), "slot1@gpu01", ok, "s", "a:1", "a", 1.0)
    m.public_ads(1.0)
    m.activate(grant.claim_id, ok, 2.0)
    assert m.slot(grant.slot_name).claim.job is not None
