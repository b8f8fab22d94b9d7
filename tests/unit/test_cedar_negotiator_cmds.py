"""The negotiator's CEDAR commands, asked by ``htcondor2.Negotiator`` (in a child process)
of a negotiator service in this process: priorities, a submitter's slots, every setter
(as the pool's own user, an administrator), and the setters refused to a READ peer and to
a submitter."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from builders.htcondor import run_htcondor

from mockpool.auth import Principal, Role
from mockpool.cedar import CedarServer, SecurityConfig
from mockpool.cedar.negotiator_cmds import negotiator_commands
from mockpool.classad import ClassAd
from mockpool.negotiator.held_ads import SnapshotPart
from mockpool.negotiator.service import NegotiatorService

E = 1_767_225_600  # the pool's date of pool time 0
ALICE, BOB = "alice@pool", "bob@pool"


@pytest.fixture
def negotiator(tmp_path: Path, daemon_ctx: Any) -> NegotiatorService:
    ctx = daemon_ctx(tmp_path / "negotiator", ad_epoch=E)
    priorities = {ALICE: {"factor": 10.0, "priority": 2.0}, BOB: {"factor": 100.0}}
    svc = NegotiatorService(ctx, log_base_wall=E, priorities=priorities)
    slot = ClassAd(Name="slot1@exec1", State="Claimed", RemoteUser=ALICE)
    slot["StartdIpAddr"], slot["EnteredCurrentState"] = "<10.0.0.1:9618>", E + 50
    svc.core.slot_ads.merge(
        "e", 1, False, SnapshotPart([slot], ["slot1@exec1"]), SnapshotPart([], [])
    )
    return svc


async def _ask(
    svc: NegotiatorService, code: str, folder: Path, config: SecurityConfig, client: str = ""
) -> dict:
    server = CedarServer(negotiator_commands(svc), config, name="negotiator")
    port = await server.start()
    prologue = (
        f'n = htcondor2.Negotiator(classad2.ClassAd({{"MyAddress": "<127.0.0.1:{port}>"}}))\n'
        "def prios():\n"
        "    return {a['Name']: {k: a[k] for k in ('Priority', 'PriorityFactor',"
        " 'AccumulatedUsage', 'BeginUsageTime', 'LastUsageTime')} for a in n.getPriorities()}\n"
    )
    try:
        return await run_htcondor(prologue + code, folder, client)
    finally:
        await server.stop()


ADMIN = """
before = prios()
slots = [dict(a) for a in n.getResourceUsage("alice@pool")]
n.setFactor("alice@pool", 20.0)
n.setPriority("alice@pool", 5.0)
n.setUsage("alice@pool", 3600.0)
n.setBeginUsage("alice@pool", 1767225900)
n.setLastUsage("alice@pool", 1767226100)
n.resetUsage("bob@pool")
middle = prios()
n.deleteUser("bob@pool")
after = prios()
n.resetAllUsage()
result = {"before": before, "slots": slots, "middle": middle, "after": after, "reset": prios()}
"""


async def test_priorities_slots_and_every_setter_for_an_administrator(
    tmp_path: Path, negotiator: NegotiatorService
) -> None:
    svc = negotiator
    got = await _ask(svc, ADMIN, tmp_path, SecurityConfig())
    # effective priority = real priority x factor
    assert got["before"][ALICE]["Priority"] == 20.0
    assert got["before"][ALICE]["PriorityFactor"] == 10.0
    assert got["before"][BOB]["Priority"] == 50.0  # 0.5 x 100
    assert "<none>" in got["before"]  # the groups' entries come too
    assert got["slots"] == [{"Name": "slot1@exec1@<10.0.0.1:9618>", "StartTime": E + 50}]
    alice = got["middle"][ALICE]
    # a float travels with 31 bits of mantissa (frexp and 2**31 - 1, stream.cpp): 20.0
    # arrives as 19.999999994..., as at HTCondor's own negotiator
    assert alice == {
        "Priority": pytest.approx(100.0, rel=1e-8),  # 5 x 20
        "PriorityFactor": pytest.approx(20.0, rel=1e-8),
        "AccumulatedUsage": pytest.approx(3600.0, rel=1e-8),
        "BeginUsageTime": E + 300,
        "LastUsageTime": E + 500,
    }
    assert got["middle"][BOB]["BeginUsageTime"] == E + 100  # reset at pool time 100
    assert BOB not in got["after"] and ALICE in got["after"]
    assert got["reset"][ALICE]["AccumulatedUsage"] == 0.0


REFUSED = """
refused = []
for call in (lambda: n.setFactor("alice@pool", 20.0), lambda: n.setPriority("alice@pool", 9.0),
             lambda: n.resetAllUsage(), lambda: n.deleteUser("alice@pool")):
    try:
        call()
    except Exception as exc:
        refused.append(str(exc))
result = {"refused": refused, "after": prios()}
"""


def _by(role: Role) -> Callable[[SecurityConfig, str, str], Principal]:
    return lambda config, user, method: Principal(role, "alice")


async def test_setters_are_refused_to_a_reader_and_to_a_submitter(
    tmp_path: Path, negotiator: NegotiatorService
) -> None:
    svc = negotiator
    reader = SecurityConfig(unauthenticated_read=True)
    got = await _ask(svc, REFUSED, tmp_path, reader, "SEC_CLIENT_AUTHENTICATION = NEVER")
    # a READ peer holds neither WRITE nor ADMINISTRATOR: refused before the command runs
    assert got["refused"] == ["Unable to connect to the negotiator"] * 4
    assert got["after"][ALICE]["PriorityFactor"] == 10.0
    # a submitter reaches SET_PRIORITYFACTOR (WRITE) but the negotiator refuses it inside
    # (HTCondor's error 1); the ADMINISTRATOR setters it cannot reach at all
    got = await _ask(svc, REFUSED, tmp_path, SecurityConfig(map_user=_by(Role.SUBMIT)))
    assert got["refused"] == ["Unable to connect to the negotiator"] * 3
    assert got["after"][ALICE] == {
        "Priority": 20.0,
        "PriorityFactor": 10.0,
        "AccumulatedUsage": 0.0,
        "BeginUsageTime": 0,
        "LastUsageTime": 0,
    }


OWN_ADS = """
c = htcondor2.Collector("127.0.0.1:{port}")
result = {{
    "negotiator": [(a["Name"], a["MyType"]) for a in c.query(htcondor2.AdType.Negotiator)],
    "accounting": sorted(a["Name"] for a in c.query(htcondor2.AdType.Accounting)),
    "alice": [dict(a) for a in c.query(
        htcondor2.AdType.Accounting, 'Name == "alice@pool"', ["Name", "PriorityFactor"]
    )],
}}
"""


async def test_a_negotiator_of_its_own_answers_for_its_ads(
    tmp_path: Path, negotiator: NegotiatorService
) -> None:
    """On a listener of its own (no collector beside it), a negotiator answers
    QUERY_NEGOTIATOR_ADS with its ad and QUERY_ACCOUNTING_ADS with its Accounting ads,
    as HTCondor's (Collector(negotiator's ad).query, directQuery)."""
    svc = negotiator
    server = CedarServer(
        negotiator_commands(svc, own_ads=True), SecurityConfig(), name="negotiator"
    )
    port = await server.start()
    try:
        got = await run_htcondor(OWN_ADS.format(port=port), tmp_path)
    finally:
        await server.stop()
    assert got["negotiator"] == [["negotiator", "Negotiator"]]
    assert {ALICE, BOB, "<none>"} <= set(got["accounting"])
    assert got["alice"] == [{"Name": ALICE, "PriorityFactor": 10.0}]
