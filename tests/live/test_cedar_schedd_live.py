"""HTCondor's own Python bindings (``htcondor2``, the ``htcondor`` wheel) against a live
pool's schedd over CEDAR: query, history, submit with count and item data, act (hold,
release, remove, vacate, with reasons), edit, reschedule, and the refusals (alice cannot
act on bob's jobs; a READ token cannot submit).

One pool for the module; each client is a child process (``htcondor2`` keeps one
configuration and one session cache per process) with the pool's own condor_config
(``Pool.write_condor_config``: ``htcondor2.Schedd()`` finds the schedd with no
arguments), its token in tokens.d, IDTOKENS with encryption and integrity required, or FS.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.live

# two 2-cpu machines; a 600 s job runs 10 real seconds: still running when vacated
SPEC = """
[pool]
time_scale = 60

[config]
NEGOTIATOR_INTERVAL = 20

[[startds]]
name = "exec{:04d}"
count = 2
config = '''
NUM_CPUS = 2
MEMORY = 4096
'''

[[schedds]]
count = 1
"""
# how each client authenticates, after what the pool's condor_config says
IDTOKENS = """
SEC_CLIENT_AUTHENTICATION_METHODS = IDTOKENS
SEC_CLIENT_ENCRYPTION = REQUIRED
SEC_CLIENT_INTEGRITY = REQUIRED
"""
FS = "SEC_CLIENT_AUTHENTICATION_METHODS = FS\n"
PRELUDE = """
import htcondor2, json, time
s = htcondor2.Schedd()  # the pool's schedd, through its condor_config
def attempt(f, *a, **kw):
    try:
        return f(*a, **kw)
    except Exception as e:
        return "refused: " + str(e)
def until(fetch, n):  # what fetch() returns, once it holds n ads
    for _ in range(400):
        ads = fetch()
        if len(ads) >= n:
            return ads
        time.sleep(0.05)
    return ads
"""


@pytest.fixture(scope="module")
def pool(ray_session: None) -> Iterator[Any]:
    from mockpool import Pool

    with Pool(SPEC) as p:
        yield p


def client(pool: Any, folder: Path, code: str, token: tuple[str, str] | None = None) -> Any:
    """Run ``code`` (setting ``result``) with htcondor2 in a child process: with a token
    (role, user) in its tokens.d and IDTOKENS, or (None) as this process' user by FS."""
    from mockpool import auth

    config = pool.write_condor_config(folder)
    if token is not None:
        role, user = token
        auth.write_token(folder / "tokens.d" / user, auth.make_token(pool.secret, role, user))
    with config.open("a") as f:
        f.write(FS if token is None else IDTOKENS)
    run = subprocess.run(
        [sys.executable, "-c", PRELUDE + code + "\nprint(json.dumps(result))\n"],
        env={**os.environ, "CONDOR_CONFIG": str(config)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, f"htcondor2 client failed:\n{run.stderr[-3000:]}"
    return json.loads(run.stdout.strip().splitlines()[-1])


ALICE = """
long = htcondor2.Submit({"executable": "/bin/sleep", "arguments": "600", "request_cpus": "1"})
first = s.submit(long, count=2)
items = htcondor2.Submit("executable = /bin/sleep\\narguments = $(t)\\nrequest_cpus = 1\\n")
second = s.submit(items, itemdata=iter([{"t": "1000"}, {"t": "2000"}]))
c1, c2 = first.cluster(), second.cluster()
result = {"clusters": [[c1, first.num_procs()], [c2, second.num_procs()]]}
result["query"] = [
    [a["ProcId"], a["MockDuration"], a["Owner"], sorted(a.keys())]
    for a in s.query(f"ClusterId == {c2}", ["ProcId", "MockDuration", "Owner"])
]
result["limit"] = len(s.query("true", ["ProcId"], limit=1))
# a job of the first cluster runs (4 cpus, 4 one-cpu jobs): vacate it
run = until(lambda: s.query(f"ClusterId == {c1} && JobStatus == 2", ["ProcId"]), 1)[0]
result["vacate"] = dict(s.act(htcondor2.JobAction.Vacate, f"{c1}.{run['ProcId']}"))
result["vacated"] = [
    a["VacateReason"]
    for a in s.query(f"ClusterId == {c1} && ProcId == {run['ProcId']}", ["VacateReason"])
]
result["hold"] = dict(s.act(htcondor2.JobAction.Hold, [f"{c2}.0", f"{c2}.1"], ("by the test", "7")))
result["held"] = [
    [a["JobStatus"], a["HoldReason"], a["HoldReasonSubCode"]]
    for a in s.query(f"ClusterId == {c2}", ["JobStatus", "HoldReason", "HoldReasonSubCode"])
]
result["release"] = dict(s.act(htcondor2.JobAction.Release, f"ClusterId == {c2} && ProcId == 1"))
result["edit_ids"] = s.edit([f"{c2}.0", f"{c2}.1"], "Tag", '"blue"')
result["edit_constraint"] = s.edit(f"ClusterId == {c2}", "Level", 3)
result["edited"] = [[a["Tag"], a["Level"]] for a in s.query(f"ClusterId == {c2}", ["Tag", "Level"])]
result["edit_owner"] = attempt(s.edit, f"{c2}.0", "Owner", '"bob"')
result["edit_missing"] = attempt(s.edit, "999.0", "Tag", "1")
result["remove"] = dict(s.act(htcondor2.JobAction.Remove, c2))
# a removed running job leaves the queue once its claim is released
gone = until(lambda: s.history(f"ClusterId == {c2}", ["ClusterId", "ProcId"], match=5), 2)
result["history"] = [[a["ClusterId"], a["ProcId"]] for a in gone]
result["since"] = [a["ProcId"] for a in s.history(None, ["ProcId"], since=f"{c2}.0")]
s.reschedule()
"""


def test_htcondor2_drives_the_schedd(pool: Any, tmp_path: Path) -> None:
    alice = client(pool, tmp_path / "alice", ALICE, ("submit", "alice"))
    c1, c2 = alice["clusters"][0][0], alice["clusters"][1][0]
    assert alice["clusters"] == [[c1, 2], [c2, 2]]
    # item data made each job's arguments (/bin/sleep N runs N pool seconds); the jobs
    # are alice's, whoever the client process runs as
    assert alice["query"] == [
        [0, 1000, "alice", ["MockDuration", "Owner", "ProcId", "ServerTime"]],
        [1, 2000, "alice", ["MockDuration", "Owner", "ProcId", "ServerTime"]],
    ]
    assert alice["limit"] == 1
    assert alice["vacate"]["TotalSuccess"] == 1 and alice["vacate"]["TotalChangedAds"] == 1
    assert alice["vacated"] == ["via condor_vacate_job (by user alice)"]
    assert alice["hold"]["TotalSuccess"] == 2
    assert alice["held"] == [[5, "by the test", 7], [5, "by the test", 7]]
    assert alice["release"]["TotalSuccess"] == 1
    assert (alice["edit_ids"], alice["edit_constraint"]) == (2, 2)
    assert alice["edited"] == [["blue", 3], ["blue", 3]]
    assert "Attempt to edit immutable attribute Owner" in alice["edit_owner"]
    assert "Modifying attribute Tag in nonexistent job 999.0" in alice["edit_missing"]
    assert alice["remove"]["TotalSuccess"] == 2
    assert alice["history"] == [[c2, 1], [c2, 0]]
    assert alice["since"] == [1]  # the records after c2.0 (newest first), c2.0 left out

    bob = client(
        pool,
        tmp_path / "bob",
        f"""
result = {{
    "by_id": dict(s.act(htcondor2.JobAction.Hold, ["{c1}.0", "{c1}.1"])),
    "by_constraint": dict(s.act(htcondor2.JobAction.Hold, {c1})),
    "edit": attempt(s.edit, "{c1}.0", "Tag", "1"),
    "sees": len(s.query("true", ["ProcId"])),
}}
""",
        ("submit", "bob"),
    )
    assert bob["by_id"]["TotalPermissionDenied"] == 2 and bob["by_id"]["TotalSuccess"] == 0
    assert bob["by_constraint"]["TotalPermissionDenied"] == 2
    assert "User bob may not change attributes for jobs they do not own" in bob["edit"]
    assert bob["sees"] == 2

    reader = client(
        pool,
        tmp_path / "carol",
        f"""
result = {{
    "submit": attempt(s.submit, htcondor2.Submit({{"executable": "/bin/sleep", "arguments": "1"}})),
    "act": attempt(s.act, htcondor2.JobAction.Remove, "{c1}.0"),
    "sees": len(s.query("true", ["ProcId"])),
}}
""",
        ("read", "carol"),
    )
    assert reader["submit"].startswith("refused: Failed to connect to schedd")
    assert reader["act"] == "refused: Error when performing action on the schedd."
    assert reader["sees"] == 2
    # nothing they tried changed alice's jobs
    assert sorted(j.get_value("ProcId") for j in pool.jobs(f"ClusterId == {c1}")) == [0, 1]
    assert {j.get_value("JobStatus") for j in pool.jobs(f"ClusterId == {c1}")} <= {1, 2}

    # FS: this process' user started the pool, so it is the queue superuser
    admin = client(
        pool, tmp_path / "admin", f'result = dict(s.act(htcondor2.JobAction.Hold, "{c1}.0"))'
    )
    assert admin["TotalSuccess"] == 1
    (held,) = pool.jobs(f"ClusterId == {c1} && ProcId == 0")
    assert held.get_value("JobStatus") == 5
