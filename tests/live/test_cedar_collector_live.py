"""HTCondor's own ``htcondor2`` against a live pool's collector and negotiator, over CEDAR
(the pool's listeners, found through ``pool.write_condor_config``): every ad type, a
constraint, a projection, locate; private slot ads and the priority setters refused to a
READ token and to a submitter; priorities read and set by the pool's own user (FS, an
administrator), and the pool's own ``userprio`` agreeing."""

from __future__ import annotations

from pathlib import Path

import pytest
from builders.live import QuietPool, condor_config_for, run_htcondor

from mockpool.auth import Role

ALICE = "alice@mockpool"

EVERY_TYPE = """
c = htcondor2.Collector()
A = htcondor2.AdType
def names(ads):
    return sorted(a.get("Name") for a in ads)
slots = c.query(A.Startd)
schedd = c.locate(htcondor2.DaemonType.Schedd, sys.argv[1])
result = {
    "slots": names(slots),
    "slot": {k: slots[0].get(k) for k in ("MyType", "State", "Cpus", "Machine")},
    "picked": [dict(a) for a in c.query(A.Startd, 'Cpus >= 1 && State == "Unclaimed"', ["Name", "Cpus"])],
    "none": c.query(A.Startd, "Cpus > 1000"),
    "schedd": [(a["Name"], a["TotalIdleJobs"], a["TotalHeldJobs"]) for a in c.query(A.Schedd)],
    "submitters": names(c.query(A.Submitter)),
    "negotiator": [(a["Name"], a["MyAddress"]) for a in c.query(A.Negotiator)],
    "collector": [(a["Name"], a["Machine"], a["HostsTotal"]) for a in c.query(A.Collector)],
    "accounting": names(c.query(A.Accounting, "IsAccountingGroup == false")),
    "master": c.query(A.Master),
    "any": sorted({a["MyType"] for a in c.query(A.Any)}),
    "located": {k: schedd.get(k) for k in ("Name", "MyAddress")},
    "private": [(a["Name"], "Capability" in a) for a in c.query(A.StartdPrivate)],
}
"""


@pytest.fixture(scope="module")
def pool(quiet_pool: QuietPool) -> QuietPool:
    """The quiet pool once the negotiator has seen alice (her Accounting ad is in)."""

    def alice_accounted() -> bool:
        return any(a.get_value("Name") == ALICE for a in quiet_pool.pool.ads("Accounting"))

    assert quiet_pool.pool.wait(alice_accounted), "no accountant record for alice"
    return quiet_pool


def _handed(pool: QuietPool) -> int:
    """Queries the central manager's listener handed to its query worker so far."""
    (central,) = [h for h in pool.pool.status() if h["role"] == "central"]
    return central["cedar"]["central"]["query_worker"]["handed"]


def test_every_ad_type_constraint_projection_and_locate(pool: QuietPool, tmp_path: Path) -> None:
    config = condor_config_for(pool.pool, tmp_path)
    handed = _handed(pool)
    got = run_htcondor(EVERY_TYPE, config, pool.schedd_name)
    # the collector's query worker answered them all (cedar/query_worker.py)
    assert _handed(pool) - handed == 12
    (slot,) = pool.pool.slots()
    assert got["slots"] == [slot.get_value("Name")]
    assert got["slot"]["MyType"] == "Machine" and got["slot"]["Machine"] == "exec0001"
    assert got["picked"] == [{"Name": slot.get_value("Name"), "Cpus": slot.get_value("Cpus")}]
    assert got["none"] == []
    # alice's three idle jobs, bob's held one
    assert got["schedd"] == [[pool.schedd_name, 3, 1]]
    assert got["submitters"] == [ALICE, "bob@mockpool"]
    ((negotiator, address),) = got["negotiator"]
    assert negotiator == "negotiator" and address.startswith("<127.0.0.1:")
    assert got["collector"][0][1] == "127.0.0.1"
    assert ALICE in got["accounting"]
    assert got["master"] == []  # a mock pool runs no condor_master
    assert {"Machine", "Scheduler", "Submitter", "Negotiator", "Collector"} <= set(got["any"])
    # locate finds the schedd at the CEDAR address its ad leads with
    assert got["located"]["Name"] == pool.schedd_name
    assert got["located"]["MyAddress"].startswith(f"<{pool.pool.cedar_address(pool.schedd_name)}")
    # the pool's own user administers the pool: it may read the claim ids
    assert got["private"] == [[slot.get_value("Name"), True]]


REFUSED = """
c = htcondor2.Collector()
n = htcondor2.Negotiator()
result = {"slots": len(c.query(htcondor2.AdType.Startd))}
def attempt(name, call):
    try:
        call()
        result[name] = "done"
    except Exception as exc:
        result[name] = str(exc)
attempt("private", lambda: c.query(htcondor2.AdType.StartdPrivate))
attempt("priorities", lambda: n.getPriorities())
attempt("setfactor", lambda: n.setFactor("alice@mockpool", 50.0))
attempt("setprio", lambda: n.setPriority("alice@mockpool", 50.0))
attempt("resetall", lambda: n.resetAllUsage())
result["factor"] = {a["Name"]: a["PriorityFactor"] for a in n.getPriorities()}.get("alice@mockpool")
"""


@pytest.mark.parametrize(("role", "identity"), [(Role.READ, ""), (Role.SUBMIT, "alice")])
def test_private_ads_and_setters_refused_to_a_reader_and_a_submitter(
    pool: QuietPool, tmp_path: Path, role: Role, identity: str
) -> None:
    token = pool.pool.make_token(role, identity)
    config = condor_config_for(pool.pool, tmp_path, {role.value: token})
    got = run_htcondor(REFUSED, config)
    assert got["slots"] == 1 and got["priorities"] == "done"
    assert got["private"] == "Failed communication with collector."
    # ADMINISTRATOR commands are refused before they run; SET_PRIORITYFACTOR (WRITE) a
    # reader cannot reach and a submitter's the negotiator refuses (htcondor2 does not
    # read its error reply): the factor is unchanged either way
    assert got["setprio"] == got["resetall"] == "Unable to connect to the negotiator"
    if role is Role.READ:
        assert got["setfactor"] == "Unable to connect to the negotiator"
    assert got["factor"] == 1000.0  # DEFAULT_PRIO_FACTOR
    (alice,) = [a for a in pool.pool.userprio() if a.get_value("Name") == ALICE]
    assert alice.get_value("PriorityFactor") == 1000.0


ADMIN = """
n = htcondor2.Negotiator()
n.setFactor("alice@mockpool", 20.0)
n.setUsage("alice@mockpool", 7200.0)
result = {a["Name"]: {k: a[k] for k in ("PriorityFactor", "AccumulatedUsage")} for a in n.getPriorities()}
result["reslist"] = [dict(a) for a in n.getResourceUsage("alice@mockpool")]
"""


def test_priorities_and_setters_as_the_pools_own_user(pool: QuietPool, tmp_path: Path) -> None:
    got = run_htcondor(ADMIN, condor_config_for(pool.pool, tmp_path))
    # a float travels with 31 bits of mantissa, as HTCondor's Stream sends it
    assert got[ALICE]["PriorityFactor"] == pytest.approx(20.0, rel=1e-8)
    assert got[ALICE]["AccumulatedUsage"] == pytest.approx(7200.0, rel=1e-8)
    assert got["reslist"] == []  # alice's jobs match no slot: she holds none
    (alice,) = [a for a in pool.pool.userprio() if a.get_value("Name") == ALICE]
    assert alice.get_value("PriorityFactor") == pytest.approx(20.0, rel=1e-8)
