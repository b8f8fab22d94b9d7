"""Today's pool, imported: machines from ``condor_status -long``, jobs from ``condor_q -long``.

An ``[import]`` table in the pool spec names the dumps (paths relative to the spec)::

    [import]
    status = "status.txt"     # condor_status -long: slot ads, blank lines between
    queue = "queue.txt"       # condor_q -long: job ads
    duration = 3600           # pool seconds a job runs when its ad does not say
    machines_per_actor = 100
    schedd = 0                # the schedd the jobs go to (index or name)

**Machines.** One mock machine per distinct ``Machine``, named as in the dump. Its
configuration is made from its slot ads:

- totals: ``NUM_CPUS``/``MEMORY``/``DISK`` from ``TotalCpus``/``TotalMemory``/``TotalDisk``
  (else the sum over its slots);
- slots: a partitionable slot becomes a partitionable slot type with its
  ``TotalSlotCpus``/``Memory``/``Disk``; static slots become slot types with their
  ``Cpus``/``Memory``/``Disk``, one type per distinct size, in slot order; dynamic slots
  are not slots of their own (their resources belong to their partitionable slot);
- ``START``, ``RANK`` and ``SLOT_WEIGHT`` from the first slot's ``Start``, ``Rank`` and
  ``SlotWeight``; ``CONSUMPTION_POLICY`` when a partitionable slot has one;
- ``ARCH``, ``OPSYS``, ``OPSYSANDVER``, ``OPSYSMAJORVER``, ``OPSYSNAME``, ``UID_DOMAIN``,
  ``FILESYSTEM_DOMAIN``;
- GPUs: the mock inventory (``MOCK_GPUS`` and the ``MOCK_GPU_*`` properties) with as many
  devices as ``DetectedGPUs`` lists (else ``TotalGPUs``), their properties from the slot's
  ``GPUs_DeviceName``, ``GPUs_Capability``... (the device ids are the mock's own);
- every other attribute the slot ads carry that the mock startd does not make itself (a
  site's ``HasSingularity``, ``IsGPUNode``...) is kept, as ``STARTD_ATTRS``.

Machines whose configurations come out the same share one ``[[startds]]``-like family
(and so actors, ``machines_per_actor`` to each).

**Jobs.** Every idle (1), running (2) or held (5) job of the queue dump is queued again
under its ``Owner``: its attributes are kept as they are (``+Attr = value``), among them
Requirements, Rank, the requests, JobPrio and the accounting group, except the ones the
schedd sets itself (ids, status, dates, where it runs). Held jobs are queued held. A job
runs for its ``MockDuration``, else ``JobDuration``, else the table's ``duration``; a
running job for what is left of that (its ``RemoteWallClockTime`` so far subtracted).
Completed and removed jobs are left out.

Known differences: a running job is queued idle at the start and runs again from the
first negotiation cycle, wherever it matches (not necessarily on the slot it ran on);
the claims, the accountant's usage and the dynamic slots of the dump are not carried over.

Everything here is pure: text in, configuration text and submit descriptions out.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from ..classad import ClassAd, ClassAdSyntaxError, parse_ad, unparse

__all__ = ["ImportError_", "ImportedJob", "ImportedMachine", "read_jobs", "read_machines"]

# attributes a mock startd makes itself: never copied as STARTD_ATTRS
_STARTD_OWN = {
    a.lower()
    for a in [
        "MyType",
        "TargetType",
        "Machine",
        "Name",
        "MyAddress",
        "StartdIpAddr",
        "Arch",
        "OpSys",
        "OpSysAndVer",
        "OpSysMajorVer",
        "OpSysName",
        "OpSysShortName",
        "OpSysLongName",
        "OpSysVer",
        "OpSysLegacy",
        "UidDomain",
        "FileSystemDomain",
        "HasFileTransfer",
        "TotalCpus",
        "TotalMemory",
        "TotalDisk",
        "TotalSlots",
        "DaemonStartTime",
        "SlotID",
        "SlotTypeID",
        "SlotType",
        "PartitionableSlot",
        "DynamicSlot",
        "State",
        "Activity",
        "EnteredCurrentState",
        "EnteredCurrentActivity",
        "Cpus",
        "Memory",
        "Disk",
        "Swap",
        "TotalSlotCpus",
        "TotalSlotMemory",
        "TotalSlotDisk",
        "Start",
        "Requirements",
        "WithinResourceLimits",
        "Rank",
        "SlotWeight",
        "MachineResources",
        "ConsumptionCpus",
        "ConsumptionMemory",
        "ConsumptionDisk",
        "ConsumptionGPUs",
        "NumDynamicSlots",
        "ChildCpus",
        "ChildMemory",
        "NumClaims",
        "DSlotId",
        "RemoteOwner",
        "RemoteUser",
        "AccountingGroup",
        "RemoteScheddName",
        "ClientMachine",
        "CurrentRank",
        "MaxJobRetirementTime",
        "PublicClaimId",
        "ClaimStartTime",
        "ConcurrencyLimits",
        "JobId",
        "GlobalJobId",
        "JobStart",
        "TotalTimeUnclaimedIdle",
        "TotalTimeClaimedIdle",
        "TotalTimeClaimedBusy",
        "TotalJobRunTime",
        "RetirementTimeRemaining",
        "MyCurrentTime",
        "UpdateSequenceNumber",
        "LastHeardFrom",
        "AuthenticatedIdentity",
        "AuthenticationMethod",
        "UpdatesTotal",
        "UpdatesSequenced",
        "UpdatesLost",
        "UpdatesHistory",
        "CondorVersion",
        "CondorPlatform",
        "GPUs",
        "TotalGPUs",
        "DetectedGPUs",
        "AvailableGPUs",
        "AssignedGPUs",
        "TotalSlotGPUs",
        "StartdAttrs",
        "LoadAvg",
        "CondorLoadAvg",
        "TotalLoadAvg",
        "TotalCondorLoadAvg",
        "KeyboardIdle",
        "ConsoleIdle",
        "Mips",
        "KFlops",
        "DetectedCpus",
        "DetectedMemory",
        "Name",
        "AddressV1",
        "MyAddress",
        "CpuBusyTime",
    ]
}
# job attributes the schedd sets itself: never copied as +Attr
_SCHEDD_OWN = {
    a.lower()
    for a in [
        "ClusterId",
        "ProcId",
        "Owner",
        "User",
        "QDate",
        "JobStatus",
        "EnteredCurrentStatus",
        "GlobalJobId",
        "RemoteHost",
        "LastRemoteHost",
        "RemoteSlotID",
        "JobCurrentStartDate",
        "JobStartDate",
        "ShadowBday",
        "JobRunCount",
        "NumJobStarts",
        "NumShadowStarts",
        "LastMatchTime",
        "LastJobLeaseRenewal",
        "ClaimId",
        "PublicClaimId",
        "StartdPrincipal",
        "StartdIpAddr",
        "RemoteWallClockTime",
        "CumulativeSlotTime",
        "CompletionDate",
        "ServerTime",
        "AutoClusterId",
        "AutoClusterAttrs",
        "HoldReason",
        "HoldReasonCode",
        "HoldReasonSubCode",
        "LastHoldReason",
        "LastSuspensionTime",
        "MockDuration",
        "JobDuration",
        "MyType",
        "TargetType",
    ]
}
_IDLE, _RUNNING, _HELD = 1, 2, 5
# (GPUs_<attr> slot attribute, mock inventory knob)
_GPU_KNOBS = (
    ("DeviceName", "MOCK_GPU_DEVICE_NAME"),
    ("Capability", "MOCK_GPU_CAPABILITY"),
    ("GlobalMemoryMb", "MOCK_GPU_MEMORY_MB"),
    ("DriverVersion", "MOCK_GPU_DRIVER_VERSION"),
    ("MaxSupportedVersion", "MOCK_GPU_MAX_SUPPORTED_VERSION"),
)


class ImportError_(ValueError):
    """A dump that cannot be imported: ``file:line: problem``."""


@dataclass(frozen=True)
class ImportedMachine:
    name: str
    config: str  # HTCondor configuration text for this one machine
    line: int  # where its first slot ad starts in the dump


@dataclass(frozen=True)
class ImportedJob:
    owner: str
    description: str  # a submit description queuing this one job
    line: int


def _ads(text: str, source: str) -> list[tuple[int, ClassAd]]:
    """The ads of a ``-long`` dump with the line each starts on."""
    out: list[tuple[int, ClassAd]] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        if not lines[i].strip():
            i += 1
            continue
        start = i
        while i < len(lines) and lines[i].strip():
            i += 1
        try:
            ad = parse_ad("\n".join(lines[start:i]))
        except ClassAdSyntaxError as e:
            what = str(e).split(": ", 1)[-1]
            raise ImportError_(
                f"{source}:{start + (e.line or 1)}: not a -long ad: {what}"
            ) from None
        out.append((start + 1, ad))
    return out


def _int(ad: ClassAd, name: str) -> int | None:
    value = ad.get_value(name)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value)


def _text(ad: ClassAd, name: str) -> str | None:
    expr = ad.lookup(name)
    return unparse(expr) if expr is not None else None


def _machine_config(name: str, slots: list[ClassAd]) -> str:
    first = slots[0]
    lines: list[str] = []
    pslots = [s for s in slots if s.get_value("PartitionableSlot") is True]
    statics = [
        s
        for s in slots
        if s.get_value("PartitionableSlot") is not True and s.get_value("DynamicSlot") is not True
    ]
    cpus = _int(first, "TotalCpus") or sum(
        _int(s, "TotalSlotCpus") or _int(s, "Cpus") or 0 for s in [*pslots, *statics]
    )
    memory = _int(first, "TotalMemory") or sum(
        _int(s, "TotalSlotMemory") or _int(s, "Memory") or 0 for s in [*pslots, *statics]
    )
    disk = _int(first, "TotalDisk") or sum(
        _int(s, "TotalSlotDisk") or _int(s, "Disk") or 0 for s in [*pslots, *statics]
    )
    lines += [f"NUM_CPUS = {max(cpus, 1)}", f"MEMORY = {max(memory, 1)}", f"DISK = {disk}"]
    for attr, knob in (
        ("Arch", "ARCH"),
        ("OpSys", "OPSYS"),
        ("OpSysAndVer", "OPSYSANDVER"),
        ("OpSysMajorVer", "OPSYSMAJORVER"),
        ("OpSysName", "OPSYSNAME"),
        ("UidDomain", "UID_DOMAIN"),
        ("FileSystemDomain", "FILESYSTEM_DOMAIN"),
    ):
        value = first.get_value(attr)
        if attr == "FileSystemDomain" and value == name:
            continue  # the default: lets machines that differ only in name share a family
        if isinstance(value, str | int) and not isinstance(value, bool) and str(value).strip():
            lines.append(f"{knob} = {value}")
    detected = first.get_value("DetectedGPUs")
    gpus = len([x for x in detected.split(",") if x.strip()]) if isinstance(detected, str) else 0
    gpus = gpus or _int(first, "TotalGPUs") or 0
    if gpus:  # the mock inventory, with the devices' properties as the dump shows them
        lines += ["MACHINE_RESOURCE_INVENTORY_GPUs = imported", f"MOCK_GPUS = {gpus}"]
        for attr, knob in _GPU_KNOBS:
            value = first.get_value(f"GPUs_{attr}")
            if isinstance(value, str | int | float) and not isinstance(value, bool):
                lines.append(f"{knob} = {value}")
    n = 0
    for p in pslots:
        n += 1
        share = (
            f"cpus={_int(p, 'TotalSlotCpus') or _int(p, 'Cpus') or 1}, "
            f"memory={_int(p, 'TotalSlotMemory') or _int(p, 'Memory') or 1}, "
            f"disk={_int(p, 'TotalSlotDisk') or _int(p, 'Disk') or 0}"
        )
        total = _int(p, "TotalSlotGPUs")
        if total is not None and gpus:
            share += f", gpus={total}"
        lines += [
            f"NUM_SLOTS_TYPE_{n} = 1",
            f"SLOT_TYPE_{n} = {share}",
            f"SLOT_TYPE_{n}_PARTITIONABLE = True",
        ]
        if p.lookup("ConsumptionCpus") is not None:
            lines.append(f"SLOT_TYPE_{n}_CONSUMPTION_POLICY = True")
    sizes: Counter[tuple[int, int, int, int | None]] = Counter()
    for s in statics:
        sizes[(_int(s, "Cpus") or 1, _int(s, "Memory") or 1, _int(s, "Disk") or 0,
               _int(s, "GPUs"))] += 1  # fmt: skip
    for (c, m, d, g), count in sizes.items():
        n += 1
        share = f"cpus={c}, memory={m}, disk={d}" + (f", gpus={g}" if g is not None else "")
        lines += [f"NUM_SLOTS_TYPE_{n} = {count}", f"SLOT_TYPE_{n} = {share}"]
    for attr, knob in (("Start", "START"), ("Rank", "RANK"), ("SlotWeight", "SLOT_WEIGHT")):
        text = _text(first, attr)
        if text is not None:
            lines.append(f"{knob} = {text}")
    extra = [a for a in first if a.lower() not in _STARTD_OWN and not _is_generated(a)]
    for a in extra:
        lines.append(f"{a} = {_text(first, a)}")
    if extra:
        lines.append("STARTD_ATTRS = $(STARTD_ATTRS) " + " ".join(extra))
    return "\n".join(lines) + "\n"


def _is_generated(attr: str) -> bool:
    """Per-device and per-resource attributes the mock startd makes from the inventory."""
    low = attr.lower()
    return low.startswith(("gpus_", "child", "total", "detected", "available", "assigned"))


def read_machines(text: str, source: str) -> list[ImportedMachine]:
    """One machine per distinct ``Machine`` of a ``condor_status -long`` dump."""
    by_machine: dict[str, list[ClassAd]] = {}
    first_line: dict[str, int] = {}
    for line, ad in _ads(text, source):
        if ad.get_value("MyType", "Machine") != "Machine":
            continue
        machine = ad.get_value("Machine")
        if not isinstance(machine, str) or not machine:
            raise ImportError_(f"{source}:{line}: a slot ad without Machine")
        by_machine.setdefault(machine, []).append(ad)
        first_line.setdefault(machine, line)
    if not by_machine:
        raise ImportError_(f'{source}: no slot ads (MyType = "Machine") in the dump')
    return [
        ImportedMachine(name, _machine_config(name, slots), first_line[name])
        for name, slots in by_machine.items()
    ]


def read_jobs(text: str, source: str, *, duration: float = 3600.0) -> list[ImportedJob]:
    """The idle, running and held jobs of a ``condor_q -long`` dump, each as a submit
    description that queues it again (see the module docstring)."""
    out: list[ImportedJob] = []
    for line, ad in _ads(text, source):
        status = ad.get_value("JobStatus")
        if status not in (_IDLE, _RUNNING, _HELD):
            continue
        owner = ad.get_value("Owner")
        if not isinstance(owner, str) or not owner:
            raise ImportError_(f"{source}:{line}: a job ad without Owner")
        length = ad.get_value("MockDuration")
        if not isinstance(length, int | float) or isinstance(length, bool):
            length = ad.get_value("JobDuration")
        if not isinstance(length, int | float) or isinstance(length, bool) or length <= 0:
            length = duration
        if status == _RUNNING:
            ran = ad.get_value("RemoteWallClockTime")
            if isinstance(ran, int | float) and not isinstance(ran, bool):
                length = max(1.0, float(length) - float(ran))
        cmd = ad.get_value("Cmd")
        lines = [
            f"# imported from condor_q -long: job {_text(ad, 'ClusterId')}.{_text(ad, 'ProcId')}",
            f"executable = {cmd if isinstance(cmd, str) and cmd else '/bin/true'}",
        ]
        for attr in ad:
            if attr.lower() in _SCHEDD_OWN or attr.lower() == "cmd":
                continue
            lines.append(f"+{attr} = {_text(ad, attr)}")
        lines.append(f"+MockDuration = {float(length):g}")
        if status == _HELD:
            lines.append("hold = true")
        lines.append("queue")
        out.append(ImportedJob(owner, "\n".join(lines) + "\n", line))
    return out
