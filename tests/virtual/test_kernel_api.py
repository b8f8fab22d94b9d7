"""The Python API on the simulation kernel (``Pool(spec)`` with a virtual clock): every
call answers, and refuses, as the live pool's does (the figures worked out from the
spec; they are what the event-loop engine answered, before the kernel replaced it), with
no event loop, no gRPC and no protobuf between the caller and the cores."""

from __future__ import annotations

from typing import Any

import grpc
import pytest

from mockpool import Pool
from mockpool.kernel.api import KernelApiPool
from mockpool.pool.client import PoolError
from mockpool.pool.spec import parse_spec

SPEC = """
[pool]
clock = "virtual"
seed = 5

[config]
NEGOTIATOR_INTERVAL = 60

[[startds]]
count = 2
config = "NUM_CPUS = 2\\nSLOT_TYPE_0_PARTITIONABLE = False"

[[schedds]]
count = 2

[[submit]]
at = 0
schedd = 0
owner = "alice"
description = '''
executable = /bin/sleep
arguments = 100
queue 3
'''
"""


def _session() -> dict[str, Any]:
    """A script of every kind of call, and what each answered."""
    out: dict[str, Any] = {}
    with Pool(parse_spec(SPEC, "<api>")) as pool:
        out["class"] = type(pool).__name__
        out["submit"] = pool.submit(
            "executable = /bin/sleep\narguments = 50\nqueue 2", owner="bob", schedd="schedd2"
        )
        pool.sleep_until(70)  # after the second cycle (65): bob's submitter ad is in by then
        out["running"] = len(pool.jobs("JobStatus == 2", ["ClusterId"]))
        out["projected"] = sorted(
            sorted(k.lower() for k in ad) for ad in pool.ads("Machine", projection=["Name"])
        )[0]
        out["slots"] = sorted(str(a.eval("State")) for a in pool.slots())
        out["hold"] = [
            (r.job_id, r.ok, r.error) for r in pool.act("hold", ["1.2", "9.9"], reason="test")
        ]
        out["held"] = [a.eval("HoldReason") for a in pool.jobs("JobStatus == 5")]
        out["prio"] = sorted(str(a.eval("Name")) for a in pool.userprio())
        pool.userprio("setfactor", "bob@mockpool", 5.0)
        factors = {str(a.eval("Name")): a.eval("PriorityFactor") for a in pool.userprio()}
        out["factor"] = factors["bob@mockpool"]
        errors = []
        for call in (
            lambda: pool.jobs("JobStatus ==", schedd="schedd1"),
            lambda: pool.jobs(schedd="nosuch"),
            lambda: pool.submit("executable = /bin/sleep\nrequest_cpus = -1\nqueue 1", owner="a"),
            lambda: pool.userprio("setfactor", "nodomain", 2.0),
            lambda: pool.ads(""),
        ):
            with pytest.raises(PoolError) as e:
                call()
            errors.append((e.value.code, str(e.value)))
        out["errors"] = errors
        pool.crash("schedd2")
        out["down"] = pool.down_daemons()
        with pytest.raises(PoolError) as e:
            pool.jobs(schedd="schedd2")
        out["down_code"] = e.value.code
        pool.restart("schedd2")
        out["up"] = pool.down_daemons()
        out["back"] = len(pool.jobs(schedd="schedd2")) + len(
            pool.jobs(schedd="schedd2", history=True)
        )
        pool.sleep_until(400)
        out["completed"] = sorted(
            f"{a.eval('ClusterId')}.{a.eval('ProcId')}" for a in pool.all_jobs("JobStatus == 4")
        )
        kinds = [e["kind"] for e in pool.events]
        out["kinds"] = sorted({"daemon_died", "daemon_restarted", "job_completed"} & set(kinds))
        taken = pool.take_events()
        out["taken_again"] = pool.take_events()
        out["taken_some"] = bool(taken)
        out["cycles"] = len(pool.negotiator_log.cycles) > 0
        out["services"] = sorted(k for h in pool.status() for k in h["services"])
        out["metric_slots"] = sum(pool.metrics().slot_states.values())
        out["now"] = pool.now
    return out


def test_every_call_answers_on_the_kernel() -> None:
    kernel = _session()
    assert kernel["class"] == "KernelApiPool"
    assert kernel["submit"] == (1, 2)  # schedd2's first cluster
    assert kernel["running"] == 3  # alice's three on schedd1 (schedd1 is asked by default)
    assert kernel["projected"] == ["mytype", "name"]
    assert sorted(kernel["hold"]) == [("1.2", True, ""), ("9.9", False, "Job 9.9 not found")]
    assert kernel["held"] == ["test"]
    assert kernel["factor"] == 5.0
    codes = [code for code, _ in kernel["errors"]]
    assert (
        codes
        == [grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND]
        + [grpc.StatusCode.INVALID_ARGUMENT] * 3
    )
    assert "expected a number of CPUs" in kernel["errors"][2][1]
    assert kernel["down"] == ["schedd2"] and kernel["up"] == []
    assert kernel["down_code"] == grpc.StatusCode.UNAVAILABLE
    assert kernel["back"] == 2  # bob's jobs, from its queue on the simulated disk
    assert kernel["completed"] == ["1.0", "1.0", "1.1", "1.1"]  # 1.2 is held
    assert kernel["kinds"] == ["daemon_died", "daemon_restarted", "job_completed"]
    assert kernel["taken_again"] == [] and kernel["taken_some"]
    assert kernel["metric_slots"] == 4
    assert kernel["slots"] == ["Claimed"] * 4  # bob's two and alice's two running at 70
    assert kernel["prio"] == ["<none>", "alice@mockpool", "bob@mockpool"]
    assert [text for _, text in kernel["errors"]] == [
        "bad constraint 'JobStatus ==': syntax error at line 1, column 13: expected an "
        "expression, found end of input",
        "no schedd named 'nosuch' (known: schedd1, schedd2)",
        '<submit>:2: request_cpus = "-1": expected a number of CPUs',
        "-setfactor: 'nodomain' is not of the form user@domain",
        'Query needs an ad_type (e.g. "Machine", "Scheduler")',
    ]
    assert kernel["cycles"] and kernel["now"] == 400
    assert kernel["services"] == [
        "CollectorService",
        "NegotiatorService",
        "ScheddService",
        "StartdService",
    ]


def test_a_virtual_pool_on_the_kernel_takes_no_cluster_address_and_no_master() -> None:
    with pytest.raises(ValueError, match="no cluster address"):
        Pool(parse_spec(SPEC, "<api>"), address="ray://x:10001")
    with Pool(parse_spec(SPEC, "<api>")) as pool:
        assert isinstance(pool, KernelApiPool)
        assert pool.cedar_address() == ""
        with pytest.raises(PoolError, match="no master service"):
            pool.serve_master()
