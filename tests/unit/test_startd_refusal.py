"""A refused claim request: the startd re-advertises the machine's slots at once (HTCondor's
abort_claim changes the slot's state, which sends its ad), and a request edit
(MODIFY_REQUEST_EXPR_*) that the p-slot cannot hold is dropped, as HTCondor's create_dslot
retries without it."""

from __future__ import annotations

from pathlib import Path

import pytest

from mockpool import auth
from mockpool.auth import Principal, Role
from mockpool.classad import ClassAd, parse_expr
from mockpool.clock import ManualClock
from mockpool.config import parse_config
from mockpool.daemon import DaemonContext, EventLog
from mockpool.startd.grants import ClaimRefusedError, UnknownClaimError
from mockpool.startd.machine import Machine
from mockpool.startd.service import StartdService
from mockpool.v1 import collector_pb2
from mockpool.wire import ad_from_pb

ADDR = "127.0.0.1:9618"
SCHEDD = "<127.0.0.1:7000>"
SCHEDD0 = Principal(Role.DAEMON, "schedd/schedd0")
PSLOT = "NUM_CPUS = 4\nMEMORY = 8192\nDISK = 1000000\nSLOT_TYPE_1_PARTITIONABLE = True\n"


def job(cluster: int, cpus: int, memory: int = 1024) -> ClassAd:
    ad = ClassAd(
        ClusterId=cluster,
        ProcId=0,
        Owner="alice",
        User="alice@mockpool",
        RequestCpus=cpus,
        RequestMemory=memory,
        RequestDisk=1024,
        MockDuration=600,
    )
    ad["Requirements"] = parse_expr("true")
    return ad


def service(tmp_path: Path) -> StartdService:
    """A startd shell with one machine of one 4-cpu p-slot, built, without a server."""
    clock = ManualClock()
    ctx = DaemonContext(clock, parse_config(""), auth.make_secret(), "", EventLog(clock), tmp_path)
    ctx.address = ADDR
    svc = StartdService(ctx, [("exec1", parse_config(PSLOT, "m.conf"))])
    svc._build_machines()
    return svc


def capability(m: Machine, slot: str = "slot1@exec1") -> str:
    return next(a for a in m.private_ads() if a.eval("Name") == slot).eval("Capability")


def request(svc: StartdService, claim_id: str, j: ClassAd, now: float):
    return svc.core.request_claim(
        claim_id, "slot1@exec1", j, "schedd0", SCHEDD, "alice@mockpool", SCHEDD0, now
    )


def sent(svc: StartdService, now: float) -> list[tuple[str, str]]:
    """(ad type, slot name) of what the next update of the changed machines carries."""
    machines = [svc.machines[n] for n in sorted(svc.core.changed)]
    updates, _ = svc.build_updates(machines, now, only_changed=True)
    out = []
    for u in map(collector_pb2.AdUpdate.FromString, updates):
        out.append((u.ad_type, ad_from_pb(u.ad).eval("Name")))
    return out


def test_a_refused_claim_request_sends_the_pslot_ad_at_once(tmp_path: Path) -> None:
    svc = service(tmp_path)
    m = svc.machines["exec1"]
    # a 4-cpu job takes the whole p-slot: it advertises Cpus = 0 from then on
    request(svc, capability(m), job(1, 4), 10.0)
    assert sent(svc, 11.0) == [
        ("Machine", "slot1@exec1"),
        ("MachinePrivate", "slot1@exec1"),
        ("Machine", "slot1_1@exec1"),
        ("MachinePrivate", "slot1_1@exec1"),
    ]
    svc.core.changed.clear()  # the shell sent them
    assert sent(svc, 12.0) == []  # nothing changed since
    # a 1-cpu job matched on that ad is refused; the refusal itself changes no slot, yet
    # the machine's ads go in the next update (UPDATE_DELAY on), not UPDATE_INTERVAL later
    with pytest.raises(ClaimRefusedError, match=r"cannot be split .* 1 cpus \(has 0\)"):
        request(svc, capability(m), job(2, 1), 20.0)
    assert svc.core.changed == {"exec1"}
    ads = sent(svc, 21.0)
    assert ("Machine", "slot1@exec1") in ads and ("MachinePrivate", "slot1@exec1") in ads
    pslot = next(a for a in m.public_ads(21.0) if a.eval("Name") == "slot1@exec1")
    assert pslot.eval("Cpus") == 0


def test_a_stale_claim_id_is_refused_and_the_ads_are_sent_again(tmp_path: Path) -> None:
    # an id the machine no longer offers (spent by a claim): the negotiator matched an
    # ad the collector should not hold any more
    svc = service(tmp_path)
    m = svc.machines["exec1"]
    spent = capability(m)
    request(svc, spent, job(1, 1), 10.0)
    svc.core.changed.clear()
    sent(svc, 11.0)
    with pytest.raises(UnknownClaimError, match="no longer valid at exec1"):
        request(svc, spent, job(2, 1), 20.0)
    assert svc.core.changed == {"exec1"}
    assert ("MachinePrivate", "slot1@exec1") in sent(svc, 21.0)
    assert svc.core.stats["claims_refused"] == 1


def test_a_request_for_no_machine_here_refreshes_nothing(tmp_path: Path) -> None:
    svc = service(tmp_path)
    svc.core.changed.clear()
    with pytest.raises(Exception, match="no slot 'slot1@exec9'"):
        svc.core.request_claim(
            "x", "slot1@exec9", job(1, 1), "schedd0", SCHEDD, "alice@mockpool", SCHEDD0, 5.0
        )
    assert svc.core.changed == set()


def test_an_edit_the_pslot_cannot_hold_is_dropped() -> None:
    # 1000 MB on the p-slot; MODIFY_REQUEST_EXPR_REQUESTMEMORY (quantize to 128) makes a
    # 1000 MB request 1024, which WithinResourceLimits refuses: HTCondor's create_dslot
    # retries with the request as sent, so the job gets a dynamic slot of 1000 MB
    m = Machine("exec1", parse_config("NUM_CPUS = 4\nMEMORY = 1000\n", "m.conf"), ADDR, 1000, 0)
    g = m.request_claim(
        capability(m), "slot1@exec1", job(1, 1, 1000), "schedd0", SCHEDD, "alice@mockpool", 0.0
    )
    assert (g.slot_ad.eval("Cpus"), g.slot_ad.eval("Memory")) == (1, 1000)
    # one that does not fit as sent either is refused, naming the request as sent
    m = Machine("exec1", parse_config("NUM_CPUS = 4\nMEMORY = 1000\n", "m.conf"), ADDR, 1000, 0)
    with pytest.raises(ClaimRefusedError, match=r"asks for 1001 MB \(has 1000\)"):
        m.request_claim(
            capability(m), "slot1@exec1", job(1, 1, 1001), "schedd0", SCHEDD, "alice@mockpool", 0
        )
