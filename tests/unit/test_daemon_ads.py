"""The daemons' ads have what HTCondor's have and tools read: a slot ad's START,
``Requirements = START && (WithinResourceLimits)`` on split slots (Reqexp.cpp), the
version and platform strings, the machine's detected and total resources, load averages;
the schedd's, collector's and negotiator's CondorVersion, CondorPlatform, MyAddress,
DaemonStartTime and MyCurrentTime."""

from __future__ import annotations

from pathlib import Path

import pytest
from builders.cores import make_schedd

from mockpool.classad import ClassAd, evaluate, parse_expr
from mockpool.collector.collector import Collector
from mockpool.condor_version import CONDOR_VERSION
from mockpool.config import parse_config
from mockpool.negotiator.negotiator import Negotiator
from mockpool.startd.machine import Machine

WRL = (
    "(MY.Cpus > 0 && TARGET.RequestCpus <= MY.Cpus && MY.Memory > 0 && "
    "TARGET.RequestMemory <= MY.Memory && MY.Disk > 0 && TARGET.RequestDisk <= MY.Disk)"
)


def slot_ads(config: str) -> dict[str, ClassAd]:
    m = Machine("exec1", parse_config(config, "test.conf"), "127.0.0.1:9618", 1000, 0.0)
    return {str(a.eval("Name")): a for a in m.public_ads(0.0)}


def job(cpus: int, memory: int, disk: int = 1024) -> ClassAd:
    ad = ClassAd(RequestCpus=cpus, RequestMemory=memory, RequestDisk=disk, Owner="alice")
    ad["Requirements"] = parse_expr("true")
    return ad


def test_static_slot_requirements_are_start_and_a_split_slot_adds_within_resource_limits():
    static = slot_ads(
        'NUM_CPUS = 2\nSLOT_TYPE_0_PARTITIONABLE = False\nSTART = TARGET.Owner == "alice"\n'
    )
    ad = static["slot1@exec1"]
    assert str(ad["Start"]) == 'TARGET.Owner == "alice"'
    assert str(ad["Requirements"]) == "START" and "WithinResourceLimits" not in ad
    pslot = slot_ads("NUM_CPUS = 4\nMEMORY = 4096\n")["slot1@exec1"]
    assert str(pslot["Requirements"]) == "START && (WithinResourceLimits)"
    assert str(pslot["WithinResourceLimits"]) == str(parse_expr(WRL))
    # 4 cpus, 4096 MB, 64 GB of disk: a job of 4 cpus fits, of 5 does not; nor of 4097 MB
    assert evaluate(pslot["Requirements"], pslot, job(4, 4096)) is True
    assert evaluate(pslot["Requirements"], pslot, job(5, 1024)) is False
    assert evaluate(pslot["Requirements"], pslot, job(1, 4097)) is False


def test_consumption_policy_and_custom_resources_have_htcondors_variants() -> None:
    cp = slot_ads(
        "NUM_CPUS = 4\nMEMORY = 4096\nCONSUMPTION_POLICY = True\nMACHINE_RESOURCE_GPUs = 2\n"
    )["slot1@exec1"]
    text = str(cp["WithinResourceLimits"])
    # Cpus, Disk, GPUs, Memory in case-insensitive order, each on its consumption
    assert text.index("MY.ConsumptionCpus") < text.index("MY.ConsumptionDisk")
    assert text.index("MY.ConsumptionGPUs") < text.index("MY.ConsumptionMemory")
    assert "TARGET._cp_orig_RequestGPUs" in text and "TARGET._cp_orig_RequestDisk" in text
    # a 3-cpu job consumes 3 of 4 cpus: within; a 5-cpu one is not
    assert evaluate(cp["WithinResourceLimits"], cp, job(3, 1024)) is True
    assert evaluate(cp["WithinResourceLimits"], cp, job(5, 1024)) is False
    gpu = slot_ads("NUM_CPUS = 4\nMEMORY = 4096\nMACHINE_RESOURCE_GPUs = 2\n")["slot1@exec1"]
    wrl = gpu["WithinResourceLimits"]
    three = job(1, 1024)
    three["RequestGPUs"] = 3
    assert evaluate(wrl, gpu, job(1, 1024)) is True  # no GPU request: no GPU clause
    assert evaluate(wrl, gpu, three) is False


def test_slot_ads_carry_version_platform_and_the_machines_resources() -> None:
    ads = slot_ads("NUM_CPUS = 2\nMEMORY = 3000\nARCH = aarch64\nOPSYSMAJORVER = 8\n")
    ad = ads["slot1@exec1"]
    assert ad.eval("CondorVersion") == CONDOR_VERSION
    # condor_submit's clause for jobs that need 8.9.7 reads the version so
    version = parse_expr('versioncmp(split(TARGET.CondorVersion)[1], "8.9.7") >= 0')
    assert evaluate(version, ClassAd(), ad) is True
    assert evaluate(parse_expr("split(CondorVersion)[1]"), ad) == "25.0.0"
    assert ad.eval("CondorPlatform") == "$CondorPlatform: aarch64-AlmaLinux_8 $"
    expected = {
        "MyType": "Machine",
        "DetectedCpus": 2,
        "DetectedMemory": 4096,  # the mock hardware: 2048 MB a cpu; MEMORY says 3000
        "TotalCpus": 2,
        "TotalMemory": 3000,
        "LoadAvg": 0.0,
        "CondorLoadAvg": 0.0,
        "TotalLoadAvg": 0.0,
        "TotalCondorLoadAvg": 0.0,
        "SlotType": "Partitionable",
        "UidDomain": "mockpool",
        "FileSystemDomain": "exec1",
        "OpSys": "LINUX",
        "Arch": "aarch64",
        "Rank": 0.0,
    }
    assert {k: ad.eval(k) for k in expected} == expected


@pytest.mark.parametrize("kind", ["Scheduler", "Collector", "Negotiator"])
def test_daemon_ads_say_what_and_where_they_are(kind: str, tmp_path: Path) -> None:
    if kind == "Scheduler":
        ad = make_schedd(tmp_path / "q.sqlite", 3.0).schedd_ad(9.0)
    elif kind == "Collector":
        c = Collector(parse_config("", "<t>"))
        c.start(3.0, "cm", "127.0.0.1:9618")
        c.publish_self_ad(9.0)
        (ad,) = c.store.query("Collector", now=9.0)
    else:
        n = Negotiator("negotiator", parse_config("", "<t>"), tmp_path)
        n.started(3.0)
        ad = n.negotiator_ad("127.0.0.1:9618", 9.0)
    assert ad.eval("MyType") == kind
    assert ad.eval("CondorVersion") == CONDOR_VERSION
    assert str(ad.eval("CondorPlatform")).startswith("$CondorPlatform: X86_64-")
    assert str(ad.eval("MyAddress")).startswith("<127.0.0.1:")
    assert (ad.eval("DaemonStartTime"), ad.eval("MyCurrentTime")) == (3, 9)
