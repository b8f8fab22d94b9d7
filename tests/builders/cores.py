"""Pools of static slots, resource requests, schedd cores and their jobs, and the context
a daemon service is built with."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mockpool.classad import ClassAd, parse_expr
from mockpool.clock import ManualClock
from mockpool.config import parse_config
from mockpool.daemon import DaemonContext, EventLog
from mockpool.negotiator import Accountant, CycleAds, ResourceRequest, negotiate
from mockpool.schedd.queue import JobQueue
from mockpool.schedd.records import ActivationOutcome, ClaimOutcome, MatchNotice
from mockpool.schedd.schedd import Schedd

ALICE = "alice@mockpool"


FS_STARTD = "10.0.0.1:9618"


FS_SCHEDD = "10.0.0.2:9618"


# what a mock startd says about its platform: condor_submit's default Requirements ask
# for the submit machine's Arch and OpSys and for file transfer or a shared file system
MACHINE_IDENTITY = {
    "Arch": "X86_64",
    "OpSys": "LINUX",
    "HasFileTransfer": True,
    "FileSystemDomain": "exec1",
}


def static_pool(n: int, *, cpus: int = 1, claimed_by: dict[str, int] | None = None) -> CycleAds:
    """``n`` Unclaimed one-slot machines (plus Claimed ones: submitter -> how many)."""
    slots, privates = [], []
    rows = [("Unclaimed", None)] * n
    for who, k in (claimed_by or {}).items():
        rows += [("Claimed", who)] * k
    for i, (state, who) in enumerate(rows):
        name = f"slot1@exec{i:05d}"
        ad = ClassAd()
        ad["MyType"] = "Machine"
        ad["Name"] = name
        ad["PartitionableSlot"] = False
        ad["State"] = state
        ad["Activity"] = "Idle" if who is None else "Busy"
        ad["Cpus"] = cpus
        ad["Memory"] = 1024
        ad["Disk"] = 1_000_000
        ad["Start"] = True
        ad["Requirements"] = parse_expr("START")
        ad["SlotWeight"] = parse_expr("Cpus")
        ad["MyAddress"] = f"<{FS_STARTD}>"
        if who is not None:
            ad["RemoteOwner"] = who
            ad["AccountingGroup"] = who
        slots.append(ad)
        p = ClassAd()
        p["Name"] = name
        p["Capability"] = f"<{FS_STARTD}>#1#{i}#secret{i}"
        privates.append(p)
    return CycleAds(slots, privates)


def job_request(
    submitter: str,
    count: int,
    *,
    ac: int = 1,
    cpus: int = 1,
    schedd: str = "schedd1",
    requirements: str = "TARGET.Cpus >= RequestCpus",
) -> ResourceRequest:
    ad = ClassAd()
    ad["ClusterId"] = ac
    ad["ProcId"] = 0
    ad["RequestCpus"] = cpus
    ad["RequestMemory"] = 1
    ad["RequestDisk"] = 1
    ad["Requirements"] = parse_expr(requirements)
    ad["AutoClusterId"] = ac
    ad["Submitter"] = submitter
    ad["ResourceRequestCount"] = count
    return ResourceRequest.from_ad(ad, schedd, FS_SCHEDD)


def matched_counts(
    snapshot: CycleAds,
    requests: list[ResourceRequest],
    accountant: Accountant,
    config: str = "",
    now: float = 0.0,
):
    """Run one cycle; (matches per submitter, the result)."""
    res = negotiate(snapshot, requests, accountant, parse_config(config, "test.conf"), now)
    counts: dict[str, int] = {}
    for m in res.matches:
        counts[m.submitter] = counts.get(m.submitter, 0) + 1
    return counts, res


def startd_job(proc: int = 0, duration: int = 3600, lease: int | None = 600) -> ClassAd:
    """Job 1.``proc`` of alice as a startd receives it: 1 cpu, 1 GB, ``duration`` pool
    seconds, a JobLeaseDuration of ``lease`` (None: none)."""
    ad = ClassAd(
        ClusterId=1,
        ProcId=proc,
        User="alice@mockpool",
        RequestCpus=1,
        RequestMemory=1024,
        RequestDisk=1024,
        MockDuration=duration,
    )
    if lease is not None:
        ad["JobLeaseDuration"] = lease
    ad["Requirements"] = parse_expr("true")
    return ad


def make_schedd(path: Path, now: float = 0.0, config: str = "", *, name: str = "schedd1") -> Schedd:
    s = Schedd(name, JobQueue(path), parse_config(config, "<test>"), now)
    s.address = "<127.0.0.1:9618>"
    return s


def cid(n: int, host: str = "exec1:1") -> str:
    return f"<{host}>#100#{n}#secret{n}"


def start_job(
    s: Schedd,
    job: str,
    n: int,
    now: float,
    *,
    submitter: str = ALICE,
    acid: int = 1,
    host: str = "exec1:1",
    slot: str = "",
) -> str:
    """Match, claim and activate one job of (submitter, acid) at ``now``; the claim id."""
    claim = cid(n, host)
    slot = slot or f"slot{n}@exec1"
    out = s.on_matches([MatchNotice(submitter, acid, slot, claim, host)], now)
    assert out.accepted == 1
    (req,) = out.claims[host]
    assert f"{req.job_ad.get_value('ClusterId')}.{req.job_ad.get_value('ProcId')}" == job
    out = s.on_claim_results([ClaimOutcome(claim, True, claim_id=claim, slot_name=slot)], now)
    assert [a.claim_id for a in out.activations[host]] == [claim]
    s.on_activation_results([ActivationOutcome(claim, True, start_time=now)], now)
    return claim


def job_ad(s: Schedd, job: str) -> ClassAd:
    cluster, proc = job.split(".")
    return s.jobs[(int(cluster), int(proc))].ad


def v(ad: ClassAd, name: str) -> object:
    return ad.get_value(name)


def daemon_context(state_dir: Path, config: str = "", **fields: Any) -> DaemonContext:
    """The context a service is built with in a test: a ManualClock at pool time 100,
    ``config`` (HTCondor config text), no collector; ``fields`` set the rest."""
    clock = ManualClock(100.0)
    return DaemonContext(
        clock=clock,
        config=parse_config(config, "<test>"),
        secret="s" * 40,
        collector_address="",
        events=EventLog(clock),
        state_dir=state_dir,
        **fields,
    )
