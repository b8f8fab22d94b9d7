"""Slot, p-slot and request ads as the negotiator's cycle reads them."""

from __future__ import annotations

from mockpool.classad import ClassAd, parse_expr
from mockpool.negotiator import CycleAds, ResourceRequest

STARTD = "10.0.0.1:9618"


SCHEDD = "10.0.0.2:9618"


def slot(
    name: str,
    *,
    cpus: int = 1,
    memory: int = 1024,
    disk: int = 10_000_000,
    state: str = "Unclaimed",
    start: str = "True",
    rank: str = "0.0",
    partitionable: bool = False,
    **extra: object,
) -> ClassAd:
    ad = ClassAd()
    ad["MyType"] = "Machine"
    ad["Name"] = name
    ad["Machine"] = name.split("@", 1)[1]
    ad["SlotID"] = int(name.split("@")[0].removeprefix("slot").split("_")[0])
    ad["SlotType"] = "Partitionable" if partitionable else "Static"
    ad["PartitionableSlot"] = partitionable
    ad["State"] = state
    ad["Activity"] = "Idle"
    ad["Cpus"] = cpus
    ad["Memory"] = memory
    ad["Disk"] = disk
    ad["Start"] = parse_expr(start)
    ad["Requirements"] = parse_expr("START")
    ad["Rank"] = parse_expr(rank)
    ad["SlotWeight"] = parse_expr("Cpus")
    ad["Arch"] = "X86_64"
    ad["OpSys"] = "LINUX"
    ad["MyAddress"] = f"<{STARTD}>"
    ad["StartdIpAddr"] = f"<{STARTD}>"
    for k, v in extra.items():
        ad[k] = (
            parse_expr(v)
            if isinstance(v, str)
            and k in ("ConsumptionMemory", "ConsumptionCpus", "ConsumptionDisk")
            else v
        )
    return ad


def private(name: str, claims: list[str] | None = None) -> ClassAd:
    ad = ClassAd()
    ad["MyType"] = "MachinePrivate"
    ad["Name"] = name
    if claims is None:
        ad["Capability"] = f"<{STARTD}>#100#{abs(hash(name)) % 1000}#secret{name}"
    else:
        ad["Capability"] = claims[0]
        ad["ClaimIdList"] = list(claims)
    return ad


def pool(*slots: ClassAd, claims: dict[str, list[str]] | None = None) -> CycleAds:
    claims = claims or {}
    return CycleAds(
        list(slots), [private(s.eval("Name"), claims.get(s.eval("Name"))) for s in slots]
    )


def request(
    ac: int,
    count: int,
    *,
    submitter: str = "alice@mockpool",
    cpus: int = 1,
    memory: int = 1024,
    disk: int = 1000,
    requirements: str | None = None,
    rank: str | None = None,
    schedd: str = "schedd1",
    address: str = SCHEDD,
    cluster: int | None = None,
) -> ResourceRequest:
    ad = ClassAd()
    ad["ClusterId"] = cluster if cluster is not None else ac
    ad["ProcId"] = 0
    ad["Owner"] = submitter.split("@")[0]
    ad["RequestCpus"] = cpus
    ad["RequestMemory"] = memory
    ad["RequestDisk"] = disk
    ad["Requirements"] = parse_expr(
        requirements
        or (
            '(TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk)'
            " && (TARGET.Memory >= RequestMemory) && (TARGET.Cpus >= RequestCpus)"
        )
    )
    if rank is not None:
        ad["Rank"] = parse_expr(rank)
    ad["AutoClusterId"] = ac
    ad["Submitter"] = submitter
    ad["ResourceRequestCount"] = count
    return ResourceRequest.from_ad(ad, schedd, address)


CP_DEFAULTS = {  # what a startd with CONSUMPTION_POLICY = True advertises by default
    "ConsumptionCpus": "quantize(target.RequestCpus,{1})",
    "ConsumptionMemory": "quantize(target.RequestMemory,{128})",
    "ConsumptionDisk": "quantize(target.RequestDisk,{1024})",
}


def pslot(
    name: str = "slot1@exec0001",
    *,
    cpus: int = 10,
    memory: int = 10240,
    claims: int = 20,
    policy: bool = True,
    **extra,
):
    """A p-slot and its claim ids; with ``policy`` it advertises a consumption policy
    (MachineResources, Consumption<Res>: the startd's defaults unless given)."""
    if policy:
        extra = {"MachineResources": "Cpus Memory Disk Swap", **CP_DEFAULTS, **extra}
    ad = slot(name, cpus=cpus, memory=memory, partitionable=True, **extra)
    ids = [f"<{STARTD}>#100#{k}#s{k}" for k in range(claims)]
    return ad, ids
