"""The collector's CEDAR queries, asked by HTCondor's own client (``htcondor2`` in a child
process) of a collector service in this process: every ad type, constraint, projection,
limit, locate, and the private ads refused to a READ peer."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from builders.htcondor import run_htcondor

from mockpool.auth import Principal, Role, acting_as
from mockpool.cedar import Builder, CedarServer, SecurityConfig
from mockpool.cedar.collector_cmds import answer, collector_commands
from mockpool.cedar.commands import QUERY_STARTD_ADS
from mockpool.classad import ClassAd
from mockpool.collector.collector import CollectorUpdate
from mockpool.collector.service import CollectorService

SCHEDD_ADDR = "<127.0.0.1:9001?addrs=127.0.0.1-9001>"


def _ads() -> list[tuple[str, ClassAd]]:
    def ad(**attrs: object) -> ClassAd:
        out = ClassAd()
        for k, v in attrs.items():
            out[k] = v
        return out

    slots = [
        ("Machine", ad(Name=f"slot{i}@exec1", Machine="exec1", Cpus=c, State=s, Memory=512 * c))
        for i, (c, s) in enumerate([(1, "Unclaimed"), (2, "Claimed"), (4, "Unclaimed")], 1)
    ]
    return [
        *slots,
        ("MachinePrivate", ad(Name="slot2@exec1", Capability="<10.0.0.1:1>#1#secret")),
        ("Scheduler", ad(Name="schedd1@ap", Machine="ap", MyAddress=SCHEDD_ADDR, TotalIdleJobs=3)),
        ("Submitter", ad(Name="alice@pool", ScheddName="schedd1@ap", IdleJobs=3)),
        ("Negotiator", ad(Name="negotiator", Machine="cm")),
        ("Accounting", ad(Name="alice@pool", Priority=500.0)),
    ]


@pytest.fixture
async def collector(tmp_path: Path, daemon_ctx: Any) -> AsyncIterator[CollectorService]:
    svc = CollectorService(daemon_ctx(tmp_path, host="cm", address="127.0.0.1:9618"))
    await svc.start()
    updates = [CollectorUpdate(i, t, a) for i, (t, a) in enumerate(_ads())]
    took, refused = svc.core.advertise(updates, 100.0)
    assert took == len(updates) and not refused
    yield svc
    await svc.stop()


QUERIES = """
c = htcondor2.Collector("127.0.0.1:{port}")
A = htcondor2.AdType
def names(ads):
    return [a.get("Name") for a in ads]
slots = c.query(A.Startd)
picked = c.query(A.Startd, "Cpus >= 2", ["Name", "Cpus"])
located = c.locate(htcondor2.DaemonType.Schedd, "schedd1@ap")
result = {{
    "slots": names(slots),
    "slot_attrs": sorted(slots[0].keys()),
    "picked": [dict(a) for a in picked],
    "schedd": names(c.query(A.Schedd)),
    "submitter": [(a["Name"], a["IdleJobs"]) for a in c.query(A.Submitter)],
    "negotiator": names(c.query(A.Negotiator)),
    "collector": [(a["Name"], a["Machine"]) for a in c.query(A.Collector)],
    "accounting": names(c.query(A.Accounting)),
    "master": names(c.query(A.Master)),
    "any": sorted(a["MyType"] for a in c.query(A.Any)),
    "any_cm": sorted(names(c.query(constraint='MyType == "Negotiator" || MyType == "Collector"'))),
    "located": {{k: located.get(k) for k in ("Name", "MyAddress")}},
    "private": [(a["Name"], a.get("Capability")) for a in c.query(A.StartdPrivate)],
}}
"""


async def test_every_ad_type_constraint_projection_and_locate(
    collector: CollectorService, tmp_path: Path
) -> None:
    server = CedarServer(collector_commands(collector), SecurityConfig(), name="collector")
    port = await server.start()
    try:
        got = await run_htcondor(QUERIES.format(port=port), tmp_path)
    finally:
        await server.stop()
    assert got["slots"] == ["slot1@exec1", "slot2@exec1", "slot3@exec1"]
    # a whole ad: the daemon's attributes, its type and the collector's stamp
    assert got["slot_attrs"] == [
        "Cpus", "LastHeardFrom", "Machine", "Memory", "MyType", "Name", "State"
    ]  # fmt: skip
    assert got["picked"] == [{"Name": "slot2@exec1", "Cpus": 2}, {"Name": "slot3@exec1", "Cpus": 4}]
    assert got["schedd"] == ["schedd1@ap"]
    assert got["submitter"] == [["alice@pool", 3]]
    assert got["negotiator"] == ["negotiator"]
    assert got["collector"] == [["cm", "cm"]]
    assert got["accounting"] == ["alice@pool"]
    assert got["master"] == []  # a mock pool has no condor_master ads
    types = ["Accounting", "Collector", *["Machine"] * 3, "Negotiator", "Scheduler", "Submitter"]
    assert got["any"] == types
    assert got["any_cm"] == ["cm", "negotiator"]
    assert got["located"] == {"Name": "schedd1@ap", "MyAddress": SCHEDD_ADDR}
    # the pool's own user (FS) administers the pool: it may read claim ids
    assert got["private"] == [["slot2@exec1", "<10.0.0.1:1>#1#secret"]]


READ_PEER = """
c = htcondor2.Collector("127.0.0.1:{port}")
result = {{"slots": len(c.query(htcondor2.AdType.Startd))}}
try:
    c.query(htcondor2.AdType.StartdPrivate)
    result["private"] = "answered"
except Exception as exc:
    result["private"] = str(exc)
"""


async def test_private_ads_are_refused_to_a_read_peer(
    collector: CollectorService, tmp_path: Path
) -> None:
    """A peer that did not authenticate reads as READ: slots yes, claim ids never."""
    config = SecurityConfig(unauthenticated_read=True)
    server = CedarServer(collector_commands(collector), config, name="collector")
    port = await server.start()
    try:
        got = await run_htcondor(
            READ_PEER.format(port=port), tmp_path, "SEC_CLIENT_AUTHENTICATION = NEVER"
        )
    finally:
        await server.stop()
    assert got["slots"] == 3
    assert got["private"] == "Failed communication with collector."


class _Sink:
    """What answer() writes, kept (a CedarSocket's flush/send)."""

    encrypted = False

    def __init__(self) -> None:
        self.data = b""

    async def flush(self, builder: Builder) -> None:
        self.data += builder.take().build()

    async def send(self, builder: Builder) -> None:
        self.data += builder.build()


async def test_an_ad_a_reply_carried_is_encoded_again_when_its_update_arrives(
    collector: CollectorService,
) -> None:
    """A table clients read stays encoded as its ads are re-advertised; an ad no reply
    carried since its last update is left until one asks."""
    collector_commands(collector)  # the listener's commands: the store's hook with them
    store = collector.store
    query = ClassAd(MyType="Query", TargetType="Machine")

    def update(cpus: int) -> None:
        ad = ClassAd(Name="slot1@exec1", Machine="exec1", Cpus=cpus, State="Unclaimed")
        took, refused = collector.core.advertise([CollectorUpdate(0, "Machine", ad)], 200.0)
        assert took == 1 and not refused

    with acting_as(Principal(Role.READ)):
        assert await answer(collector, _Sink(), query, QUERY_STARTD_ADS) == 3
    update(8)  # read before its update: encoded as it arrives
    assert store.get("Machine", "slot1@exec1").cedar is not None
    assert store.get("Machine", "slot2@exec1").cedar is not None  # not updated: kept
    update(16)  # its last version no reply carried: left for the next query
    assert store.get("Machine", "slot1@exec1").cedar is None
    sink = _Sink()
    with acting_as(Principal(Role.READ)):
        await answer(collector, sink, query, QUERY_STARTD_ADS)
    assert b"Cpus = 16\0" in sink.data
