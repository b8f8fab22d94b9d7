"""A CedarServer in the test's process answers HTCondor's own client: the ``htcondor2``
bindings (in a child process) query it as a collector, authenticate by FS, and resume
their session on the next query."""

from __future__ import annotations

import getpass
from pathlib import Path

from conftest import run_htcondor

from mockpool.auth import Principal, Role
from mockpool.cedar import Builder, CedarRequest, CedarServer, Command, Level, SecurityConfig
from mockpool.cedar.commands import QUERY_STARTD_ADS
from mockpool.classad import ClassAd, evaluate, parse_expr

ME = getpass.getuser()


def slot(i: int, cpus: int) -> ClassAd:
    ad = ClassAd()
    ad["MyType"] = "Machine"
    ad["Name"] = f"slot{i}@exec"
    ad["Cpus"] = cpus
    ad["Memory"] = 1024 * cpus
    ad["WeightedCpus"] = parse_expr("Cpus * 2")
    ad["State"] = "Unclaimed"
    ad["ClaimId"] = f"<10.0.0.1:1>#{i}#secret"  # private: never sent to a query
    return ad


ADS = [slot(1, 1), slot(2, 2), slot(3, 4)]


def collector_query(ads: list[ClassAd], seen: list) -> Command:
    """QUERY_STARTD_ADS as collector.cpp answers it: the query ad, then a 1 before each
    matching ad, projected, and a 0."""

    async def handle(req: CedarRequest) -> None:
        query = (await req.sock.recv()).get_ad(what="query ad")
        seen.append((req.peer, query))
        constraint = query.lookup("Requirements")
        projection = query.eval("Projection")
        names = projection.replace(",", " ").split() if isinstance(projection, str) else None
        out = Builder()
        for ad in ads:
            if constraint is None or evaluate(constraint, ad) is True:
                out.put_int(1).put_ad(ad, names)
        out.put_int(0)
        await req.sock.send(out)

    return Command(QUERY_STARTD_ADS, Level.READ, handle, "QUERY_STARTD_ADS")


QUERIES = """
c = htcondor2.Collector("127.0.0.1:{port}")
def text(ads):
    return [{{k: str(a.lookup(k)) for k in sorted(a.keys())}} for a in ads]
result = [
    text(c.query(htcondor2.AdType.Startd)),
    text(c.query(htcondor2.AdType.Startd, "Cpus >= 2", ["Name", "WeightedCpus"])),
]
"""


async def test_htcondor2_queries_a_cedar_server_and_resumes_its_session(tmp_path: Path) -> None:
    seen: list = []
    server = CedarServer([collector_query(ADS, seen)], SecurityConfig(), name="collector")
    port = await server.start()
    try:
        whole, projected = await run_htcondor(QUERIES.format(port=port), tmp_path)
    finally:
        await server.stop()
    # every public attribute of every ad; ClaimId stays home
    assert whole == [
        {
            "Cpus": str(c),
            "Memory": str(1024 * c),
            "MyType": '"Machine"',
            "Name": f'"slot{i}@exec"',
            "State": '"Unclaimed"',
            "WeightedCpus": "Cpus * 2",
        }
        for i, c in ((1, 1), (2, 2), (3, 4))
    ]
    # the constraint picks two; the projection brings what WeightedCpus uses
    assert projected == [
        {"Cpus": "2", "Name": '"slot2@exec"', "WeightedCpus": "Cpus * 2"},
        {"Cpus": "4", "Name": '"slot3@exec"', "WeightedCpus": "Cpus * 2"},
    ]
    # the query ads htcondor2 sent, and who sent them: FS, as the pool's own user
    (peer1, q1), (peer2, q2) = seen
    assert "Projection" not in q1
    assert q2.eval("Requirements", ADS[1]) is True and q2.eval("Requirements", ADS[0]) is False
    assert q2.eval("Projection") == "Name WeightedCpus"
    assert peer1.method == "FS" and peer1.user.startswith(f"{ME}@")
    assert peer1.principal == Principal(Role.ADMIN, ME)
    # one handshake; the second query resumed its session
    assert server.security.counts == {"new": 1, "resumed": 1}
    assert peer2.session_id == peer1.session_id != ""


async def test_fs_maps_a_user_who_is_not_the_pool_user_to_submit(tmp_path: Path) -> None:
    """FS user X submits as X; root is the pool's own user (FS_ROOT_TO_CONDOR)."""
    seen: list = []
    config = SecurityConfig(pool_user="somebody-else")
    server = CedarServer([collector_query(ADS[:1], seen)], config, name="collector")
    port = await server.start()
    try:
        await run_htcondor(QUERIES.format(port=port), tmp_path)
    finally:
        await server.stop()
    if ME == "root":
        assert seen[0][0].principal == Principal(Role.ADMIN, "somebody-else")
    else:
        assert seen[0][0].principal == Principal(Role.SUBMIT, ME)
