"""A partitionable slot matched whole is matched only if the job fits what it has left:
HTCondor's WithinResourceLimits (``START && WithinResourceLimits``), whatever the job's
own Requirements say. Hand-worked pools; NegotiatorLog lines in HTCondor's format."""

from __future__ import annotations

from mockpool.classad import ClassAd, parse_expr
from mockpool.config import parse_config
from mockpool.negotiator import Accountant, CycleAds, ResourceRequest, format_lines, negotiate
from mockpool.negotiator.fit import within_resource_limits

STARTD = "10.0.0.1:9618"
SCHEDD = "10.0.0.2:9618"
BASE = 1_700_000_000.0  # 11/14/23 22:13:20 UTC
# condor_submit's Requirements for a one-cpu job: no (TARGET.Cpus >= RequestCpus) clause
ONE_CPU_REQUIREMENTS = (
    '(TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk)'
    " && (TARGET.Memory >= RequestMemory) && (TARGET.HasFileTransfer)"
)


def pslot(machine: str, cpus: int, memory: int, **extra: object) -> ClassAd:
    """An Unclaimed p-slot without a consumption policy, as mockpool's startd advertises
    it (Requirements = START: no WithinResourceLimits)."""
    ad = ClassAd()
    ad["MyType"] = "Machine"
    ad["Name"] = f"slot1@{machine}"
    ad["Machine"] = machine
    ad["SlotType"] = "Partitionable"
    ad["PartitionableSlot"] = True
    ad["State"] = "Unclaimed"
    ad["Activity"] = "Idle"
    ad["Cpus"] = cpus
    ad["Memory"] = memory
    ad["Disk"] = 10_000_000
    ad["TotalSlotCpus"] = 4
    ad["Start"] = True
    ad["Requirements"] = parse_expr("START")
    ad["SlotWeight"] = parse_expr("Cpus")
    ad["MachineResources"] = "Cpus Memory Disk Swap"
    ad["Arch"] = "X86_64"
    ad["OpSys"] = "LINUX"
    ad["HasFileTransfer"] = True
    ad["MyAddress"] = f"<{STARTD}>"
    ad["StartdIpAddr"] = f"<{STARTD}>"
    for k, v in extra.items():
        ad[k] = v
    return ad


def pool(*slots: ClassAd) -> CycleAds:
    privates = []
    for k, s in enumerate(slots):
        p = ClassAd()
        p["MyType"] = "MachinePrivate"
        p["Name"] = s.eval("Name")
        p["Capability"] = f"<{STARTD}>#100#{k}#secret{k}"
        privates.append(p)
    return CycleAds(list(slots), privates)


def request(
    count: int = 1,
    *,
    cpus: int = 1,
    memory: int = 1024,
    requirements: str = ONE_CPU_REQUIREMENTS,
    **extra: object,
) -> ResourceRequest:
    ad = ClassAd()
    ad["ClusterId"] = 1
    ad["ProcId"] = 0
    ad["Owner"] = "alice"
    ad["RequestCpus"] = cpus
    ad["RequestMemory"] = memory
    ad["RequestDisk"] = 1000
    ad["Requirements"] = parse_expr(requirements)
    ad["AutoClusterId"] = 1
    ad["Submitter"] = "alice@mockpool"
    ad["ResourceRequestCount"] = count
    for k, v in extra.items():
        ad[k] = v
    return ResourceRequest.from_ad(ad, "schedd1", SCHEDD)


def run(snap: CycleAds, reqs: list[ResourceRequest]):
    return negotiate(snap, reqs, Accountant(), parse_config(""), 100.0)


def test_used_up_pslot_is_passed_over_for_machines_with_free_cpus():
    # exec0001's p-slot is used up (Cpus = 0, 7168 MB left); exec0002 and exec0003 have
    # 4 idle cpus each. NEGOTIATOR_PRE_JOB_RANK = 10000000 * Rank + 1000000 *
    # (RemoteOwner =?= UNDEFINED) - 100000 * Cpus - Memory ranks exec0001 first:
    # 1000000 - 0 - 7168 = 992832, against 1000000 - 400000 - 8192 = 591808. But the
    # job needs a cpu: WithinResourceLimits (MY.Cpus > 0 && ...) is false there, so it
    # goes to exec0002 (the tie with exec0003 goes to the first in snapshot order).
    snap = pool(pslot("exec0001", 0, 7168), pslot("exec0002", 4, 8192), pslot("exec0003", 4, 8192))
    res = run(snap, [request()])
    (m,) = res.matches
    assert (m.slot_name, m.claim_id) == ("slot1@exec0002", f"<{STARTD}>#100#1#secret1")
    assert m.cost == 4.0  # matched whole: its SlotWeight (Cpus)
    s, t = f"<{SCHEDD}>", f"<{STARTD}>"
    lines = format_lines(res.log, BASE)
    assert lines[10:14] == [
        "11/14/23 22:15:00     Request 00001.00000: autocluster 1 (request count 1 of 1)",
        f"11/14/23 22:15:00       Matched 1.0 alice@mockpool {s} preempting none {t} "
        "slot1@exec0002",
        "11/14/23 22:15:00       Successfully matched with slot1@exec0002",
        "11/14/23 22:15:00     Got NO_MORE_JOBS;  schedd has no more requests",
    ]


def test_every_pslot_too_small_rejects_the_request():
    # 2 cpus left on each p-slot, a 3-cpu job whose Requirements are just true: no match
    snap = pool(pslot("exec0001", 2, 8192), pslot("exec0002", 2, 8192))
    res = run(snap, [request(cpus=3, requirements="true")])
    assert res.matches == []
    assert [r.reason for r in res.rejections] == ["no match found"]
    assert "Rejected 1.0 alice@mockpool <10.0.0.2:9618>: no match found" in "\n".join(
        ln.text for ln in res.log
    )


def test_memory_and_disk_must_fit_too():
    # exec0001 has 1000 MB left, exec0002 4096: a 2048 MB job goes to exec0002 even
    # though exec0001 ranks first (-100000 * 4 - 1000 > -100000 * 4 - 4096)
    snap = pool(pslot("exec0001", 4, 1000), pslot("exec0002", 4, 4096))
    res = run(snap, [request(memory=2048, requirements="true")])
    assert [m.slot_name for m in res.matches] == ["slot1@exec0002"]
    small_disk = pslot("exec0003", 4, 8192, Disk=500)  # the job asks for 1000 KB
    assert run(pool(small_disk), [request(requirements="true")]).matches == []


def test_a_job_that_fits_exactly_is_matched():
    res = run(pool(pslot("exec0001", 2, 2048)), [request(cpus=2, memory=2048)])
    assert [m.slot_name for m in res.matches] == ["slot1@exec0001"]


def test_custom_resources_are_held_to_their_clause():
    gpus = "Cpus Memory Disk Swap GPUs"
    used = pslot("exec0001", 4, 8192, MachineResources=gpus, GPUs=0)
    free = pslot("exec0002", 4, 8192, MachineResources=gpus, GPUs=1)
    res = run(pool(used, free), [request(requirements="true", RequestGPUs=1)])
    assert [m.slot_name for m in res.matches] == ["slot1@exec0002"]
    # a slot without the resource has no clause for it (HTCondor builds one per resource
    # the slot has): a request of 0 GPUs matches it
    plain = pslot("exec0003", 4, 8192)
    res = run(pool(plain), [request(requirements="true", RequestGPUs=0)])
    assert [m.slot_name for m in res.matches] == ["slot1@exec0003"]


def test_used_up_pslot_is_not_matched_by_a_later_request_of_another_shape():
    # the answers a cycle remembers per request shape must tell the two requests apart
    # although their Requirements read no resource: the request sizes are in the shape.
    # The 2-cpu job (first) does not fit exec0001's 1 cpu and goes to exec0002; the
    # 1-cpu job then fits exec0001.
    snap = pool(pslot("exec0001", 1, 8192), pslot("exec0002", 4, 8192))
    small_ad = request(cpus=1, requirements="true").ad.copy()
    small_ad["ClusterId"], small_ad["AutoClusterId"] = 2, 2
    small = ResourceRequest.from_ad(small_ad, "schedd1", SCHEDD)
    big = request(cpus=2, requirements="true")
    res = run(snap, [big, small])
    assert [(m.job_id, m.slot_name) for m in res.matches] == [
        ("1.0", "slot1@exec0002"),
        ("2.0", "slot1@exec0001"),
    ]


def test_within_resource_limits_text_is_htcondors():
    assert within_resource_limits() == (
        "MY.Cpus > 0 && TARGET.RequestCpus <= MY.Cpus && MY.Memory > 0 && "
        "TARGET.RequestMemory <= MY.Memory && MY.Disk > 0 && TARGET.RequestDisk <= MY.Disk"
    )
    assert within_resource_limits(("GPUs",)).endswith(
        " && (TARGET.RequestGPUs is UNDEFINED || MY.GPUs >= TARGET.RequestGPUs)"
    )
