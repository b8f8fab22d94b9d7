"""A slot ad's Requirements (START && (WithinResourceLimits)) as the mock startd publishes
it, evaluated by HTCondor's classad2 against jobs that fit and jobs that do not: the same
answer as ours, for a static slot, a partitionable one, one with a consumption policy and
one with GPUs."""

from __future__ import annotations

import pytest
from builders.oracle import OracleExpr, require_oracle, to_oracle_ad

from mockpool.classad import ClassAd, evaluate, parse_expr
from mockpool.config import parse_config
from mockpool.startd.machine import Machine

pytestmark = pytest.mark.oracle
require_oracle()

MACHINES = {
    "static": "NUM_CPUS = 2\nMEMORY = 2048\nSLOT_TYPE_0_PARTITIONABLE = False\n",
    "pslot": "NUM_CPUS = 4\nMEMORY = 4096\n",
    "consumption": "NUM_CPUS = 4\nMEMORY = 4096\nCONSUMPTION_POLICY = True\n",
    "gpus": "NUM_CPUS = 4\nMEMORY = 4096\nMACHINE_RESOURCE_GPUs = 2\n",
}
JOBS = [(1, 512, None), (4, 4096, None), (5, 512, None), (1, 5000, None), (1, 512, 2), (1, 512, 3)]


def _job(cpus: int, memory: int, gpus: int | None) -> ClassAd:
    ad = ClassAd(RequestCpus=cpus, RequestMemory=memory, RequestDisk=1024, Owner="alice")
    if gpus is not None:
        ad["RequestGPUs"] = gpus
    return ad


@pytest.mark.parametrize("kind", sorted(MACHINES))
def test_slot_requirements_agree_with_classad2(kind: str) -> None:
    m = Machine("exec1", parse_config(MACHINES[kind], "t.conf"), "127.0.0.1:9618", 1000, 0.0)
    slot = next(a for a in m.public_ads(0.0) if a.eval("Name") == "slot1@exec1")
    theirs_slot = to_oracle_ad(slot)
    requirements = OracleExpr("MY.Requirements")
    answers = []
    for cpus, memory, gpus in JOBS:
        job = _job(cpus, memory, gpus)
        ours = evaluate(parse_expr("MY.Requirements"), slot, job)
        theirs = requirements.eval(theirs_slot, to_oracle_ad(job))
        assert ours == theirs, (kind, cpus, memory, gpus, ours, theirs)
        answers.append(ours)
    assert True in answers and (kind == "static" or False in answers), answers
