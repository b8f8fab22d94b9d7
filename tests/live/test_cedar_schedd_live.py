"""HTCondor's own Python bindings (``htcondor2``, the ``htcondor`` wheel) against a live
pool's schedd over CEDAR: query, history, submit with count and item data, act (hold,
release, remove, vacate, with reasons), edit, reschedule, and the refusals (alice cannot
act on bob's jobs; a READ token cannot submit).

One pool for the module: a collector and negotiator, a startd of two machines and a
schedd, each a DaemonHost on real gRPC and a scaled clock in this process, with a
CedarServer around the schedd's service (until the pool's actors start their own
listeners). Each client is a child process (the bindings hold the GIL while they wait
on the network) whose CONDOR_CONFIG points it at the pool's tokens.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from mockpool import auth, rpc
from mockpool.auth import Role
from mockpool.cedar.auth_fs import FSAuth
from mockpool.cedar.auth_token import TokenAuth
from mockpool.cedar.crypto import AesCrypto
from mockpool.cedar.schedd_cmds import schedd_commands
from mockpool.cedar.security import SecurityConfig
from mockpool.cedar.server import CedarServer
from mockpool.config import parse_config
from mockpool.pool.host import DaemonHost
from mockpool.schedd.service import ScheddService

pytestmark = [pytest.mark.live]

TIME_SCALE = 30.0  # a 600 s job runs 20 real seconds: it is still running when vacated
MACHINE = "NUM_CPUS = 2\nMEMORY = 4096\n"
CLIENT_CONFIG = """\
SEC_CLIENT_AUTHENTICATION_METHODS = {methods}
SEC_CLIENT_ENCRYPTION = REQUIRED
SEC_CLIENT_INTEGRITY = REQUIRED
SEC_TOKEN_DIRECTORY = {tokens}
"""
# The schedd's location ad, as Collector.locate would return it
LOCATE = """
import htcondor2, classad2, json, time
s = htcondor2.Schedd(classad2.ClassAd({{
    "MyAddress": "{address}", "CondorVersion": "$CondorVersion: 25.14.1 $", "Name": "schedd1"}}))
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


@dataclass
class CedarPool:
    service: ScheddService
    address: str
    folder: Path
    secret: str

    async def client(self, user: str, role: Role, code: str, methods: str = "IDTOKENS") -> Any:
        """Run ``code`` (setting ``result``) with htcondor2 in a child process that holds
        a ``role`` token for ``user`` in its tokens.d."""
        folder = self.folder / f"{user}-{role.value}"
        tokens = folder / "tokens.d"
        tokens.mkdir(parents=True, mode=0o700, exist_ok=True)
        auth.write_token(tokens / "pool", auth.make_token(self.secret, role, user))
        conf = folder / "condor_config"
        conf.write_text(CLIENT_CONFIG.format(methods=methods, tokens=tokens))
        script = LOCATE.format(address=self.address) + code + "\nprint(json.dumps(result))\n"
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            script,
            env={**os.environ, "CONDOR_CONFIG": str(conf)},
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await proc.communicate()
        assert proc.returncode == 0, f"htcondor2 client failed:\n{err.decode()[-3000:]}"
        return json.loads(out.decode().strip().splitlines()[-1])


@pytest.fixture
async def cedar_pool(tmp_path: Path) -> AsyncIterator[CedarPool]:
    folder = tmp_path
    secret = auth.make_secret()
    config = parse_config("NEGOTIATOR_INTERVAL = 20\n", "<test>")
    common = {"secret": secret, "config": config, "transport": rpc.GRPC}
    central = DaemonHost("central", state_dir=str(folder / "central"), **common)
    startd = DaemonHost(
        "startd",
        state_dir=str(folder / "startd"),
        machines=[(f"exec{i}", parse_config(MACHINE, "<test>")) for i in (1, 2)],
        identity="startd/startd0",
        **common,
    )
    schedd = DaemonHost(
        "schedd",
        state_dir=str(folder / "schedd"),
        schedds=["schedd1"],
        identity="schedd/s0",
        **common,
    )
    collector = await central.serve()
    await asyncio.gather(startd.serve(collector), schedd.serve(collector))
    epoch = time.time()
    for host in (central, startd, schedd):
        await host.run(TIME_SCALE, epoch)
    service = schedd._hosting("schedd1")
    security = SecurityConfig(
        methods=(FSAuth(), TokenAuth.for_pool(secret)), crypto=AesCrypto(), subsystem="SCHEDD"
    )
    server = CedarServer(schedd_commands(service), security, name="schedd1")
    await server.start()
    try:
        yield CedarPool(service, server.sinful, folder, secret)
    finally:
        await server.stop()
        for host in (schedd, startd, central):
            await host.stop()


async def test_htcondor2_drives_the_schedd(cedar_pool: CedarPool) -> None:
    alice = await cedar_pool.client(
        "alice",
        Role.SUBMIT,
        """
long = htcondor2.Submit({"executable": "/bin/sleep", "arguments": "600", "request_cpus": "1"})
first = s.submit(long, count=2)
items = htcondor2.Submit("executable = /bin/sleep\\narguments = $(t)\\nrequest_cpus = 1\\n")
second = s.submit(items, itemdata=iter([{"t": "1000"}, {"t": "2000"}]))
c1, c2 = first.cluster(), second.cluster()
result = {"clusters": [[c1, first.num_procs()], [c2, second.num_procs()]]}
result["query"] = [
    [a["ProcId"], a["MockDuration"], sorted(a.keys())]
    for a in s.query(f"ClusterId == {c2}", ["ProcId", "MockDuration"])
]
result["limit"] = len(s.query("true", ["ProcId"], limit=1))
# a job of the first cluster runs (a 4-cpu pool, 4 one-cpu jobs): vacate it
run = until(lambda: s.query(f"ClusterId == {c1} && JobStatus == 2", ["ProcId"]), 1)[0]
jid = f"{c1}.{run['ProcId']}"
result["vacate"] = dict(s.act(htcondor2.JobAction.Vacate, jid))
result["vacated"] = [
    a["VacateReason"] for a in s.query(f"ClusterId == {c1} && ProcId == {run['ProcId']}", ["VacateReason"])
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
""",
    )
    c1, c2 = alice["clusters"][0][0], alice["clusters"][1][0]
    assert alice["clusters"] == [[c1, 2], [c2, 2]]
    # item data made each job's arguments; /bin/sleep N runs N pool seconds
    assert alice["query"] == [
        [0, 1000, ["MockDuration", "ProcId", "ServerTime"]],
        [1, 2000, ["MockDuration", "ProcId", "ServerTime"]],
    ]
    assert alice["limit"] == 1
    success = {"TotalSuccess": 1, "TotalNotFound": 0, "TotalBadStatus": 0}
    assert alice["vacate"].items() >= {**success, "TotalChangedAds": 1}.items()
    assert alice["vacated"] == ["via condor_vacate_job (by user alice)"]  # off its slot
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
    # the jobs are alice's, whatever the client's own user is; the reschedule asked for
    # a cycle after the schedd's ads
    core = cedar_pool.service.cores["schedd1"]
    assert {j.ad.get_value("Owner") for j in core.jobs.values()} == {"alice"}

    bob = await cedar_pool.client(
        "bob",
        Role.SUBMIT,
        f"""
result = {{
    "by_id": dict(s.act(htcondor2.JobAction.Hold, ["{c1}.0", "{c1}.1"])),
    "by_constraint": dict(s.act(htcondor2.JobAction.Hold, {c1})),
    "edit": attempt(s.edit, "{c1}.0", "Tag", "1"),
    "sees": len(s.query("true", ["ProcId"])),
}}
""",
    )
    assert bob["by_id"]["TotalPermissionDenied"] == 2 and bob["by_id"]["TotalSuccess"] == 0
    assert bob["by_constraint"]["TotalPermissionDenied"] == 2
    assert "User bob may not change attributes for jobs they do not own" in bob["edit"]
    assert bob["sees"] == 2

    reader = await cedar_pool.client(
        "carol",
        Role.READ,
        f"""
result = {{
    "submit": attempt(s.submit, htcondor2.Submit({{"executable": "/bin/sleep", "arguments": "1"}})),
    "act": attempt(s.act, htcondor2.JobAction.Remove, "{c1}.0"),
    "sees": len(s.query("true", ["ProcId"])),
}}
""",
    )
    assert reader["submit"].startswith("refused: Failed to connect to schedd")
    assert reader["act"] == "refused: Error when performing action on the schedd."
    assert reader["sees"] == 2
    # nothing they tried changed alice's jobs
    assert {j.job_id for j in core.jobs.values()} == {f"{c1}.0", f"{c1}.1"}
    assert all(j.status in (1, 2) for j in core.jobs.values())

    # FS: the pool's own user (this test's) is the queue superuser
    admin = await cedar_pool.client(
        "ignored",
        Role.READ,
        f'result = dict(s.act(htcondor2.JobAction.Hold, "{c1}.0"))',
        methods="FS",
    )
    assert admin["TotalSuccess"] == 1
    assert core.jobs[(c1, 0)].status == 5
