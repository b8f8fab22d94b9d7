"""Submit descriptions against HTCondor's own condor_submit (recorded).

Each ``submit_corpus/NNN-name.sub`` has beside it what HTCondor 24.12's submit code made of
it (``scripts/make_submit_corpus.py``, run with the htcondor 24 bindings, whose
``Submit.jobs()`` builds job ads without a schedd): ``.ads``, the job ads, or ``.err``, its
refusal. mockpool must queue the same number of jobs with the same values for the
attributes below (compared as ClassAd expressions; the requests by value), or refuse too.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mockpool.classad import ClassAd, evaluate, parse_ads, parse_expr
from mockpool.schedd.requirements import SubmitHost
from mockpool.schedd.submit import SubmitError, parse_submit

CORPUS = Path(__file__).parent / "submit_corpus"
CASES = sorted(CORPUS.glob("*.sub"))
COMPARED = [
    "PeriodicHold",
    "PeriodicHoldReason",
    "PeriodicHoldSubCode",
    "PeriodicRelease",
    "PeriodicRemove",
    "PeriodicVacate",
    "OnExitHold",
    "OnExitHoldReason",
    "OnExitHoldSubCode",
    "OnExitRemove",
    "JobMaxRetries",
    "JobSuccessExitCode",
    "AllowedJobDuration",
    "AllowedExecuteDuration",
    "Requirements",
    "Rank",
    "RequestGPUs",
    "RequireGPUs",
    "GPUsMinCapability",
    "GPUsMaxCapability",
    "GPUsMinMemory",
    "GPUsMinRuntime",
    "CUDAVersion",
    "ConcurrencyLimits",
    "AccountingGroup",
    "AcctGroup",
    "AcctGroupUser",
    "NiceUser",
    "JobUniverse",
    "Args",
    "Arguments",
    "JobPrio",
    "JobLeaseDuration",
    "ShouldTransferFiles",
    "WhenToTransferOutput",
    "TransferInput",
    "WantTransferPluginMethods",
    "WantDocker",
    "DockerImage",
    "WantContainer",
    "WantDockerImage",
    "WantSIF",
    "WantSandboxImage",
    "JobStatus",
    "HoldReasonCode",
    "JobBatchName",
    "TransferExecutable",
    "JarFiles",
    "JavaVMArgs",
    "JavaVMArguments",
]
# compared for java universe jobs only (elsewhere condor_submit makes a relative Cmd absolute
# in the folder the corpus was recorded in)
JAVA_COMPARED = ["Cmd"]
BY_VALUE = ("RequestCpus", "RequestMemory", "RequestDisk")
# the submit host the corpus was recorded on
HOST = SubmitHost(arch="X86_64", opsys="LINUX", file_system_domain="mockpool")


def test_the_corpus_has_at_least_80_descriptions() -> None:
    assert len(CASES) >= 80
    assert all(c.with_suffix(".ads").exists() != c.with_suffix(".err").exists() for c in CASES)


def _value(ad: ClassAd, name: str) -> object:
    scope = ad.copy()
    scope["TransferInputSizeMB"] = 0
    return evaluate(scope.lookup(name), scope) if scope.lookup(name) is not None else None


@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_mockpool_makes_the_job_ads_htcondor_makes(case: Path) -> None:
    text = case.read_text()
    refused = case.with_suffix(".err")
    if refused.exists():
        with pytest.raises(SubmitError):
            parse_submit(text, case.name, owner="alice", validate=parse_expr, host=HOST)
        return
    theirs = parse_ads(case.with_suffix(".ads").read_text())
    ours = parse_submit(text, case.name, owner="alice", validate=parse_expr, host=HOST).procs
    assert len(ours) == len(theirs), f"{case.name}: {len(ours)} jobs, HTCondor {len(theirs)}"
    plus = [ln[1:].split("=")[0].strip() for ln in text.splitlines() if ln.startswith("+")]
    plus += [ln[3:].split("=")[0].strip() for ln in text.splitlines() if ln.startswith("MY.")]
    for k, (mine, htc) in enumerate(zip(ours, theirs)):
        ad = ClassAd({n: parse_expr(v) for n, v in mine.items()})
        java = [*JAVA_COMPARED] if htc.lookup("JobUniverse") == parse_expr("10") else []
        for name in (*COMPARED, *plus, *java):
            a, b = ad.lookup(name), htc.lookup(name)
            assert (a is None) == (b is None), (
                f"{case.name} job {k}: {name}: mockpool {a}, HTCondor {b}"
            )
            if a is not None:
                assert a == b, f"{case.name} job {k}: {name}:\n  mockpool {a}\n  HTCondor {b}"
        for name in BY_VALUE:
            assert _value(ad, name) == _value(htc, name), (
                f"{case.name} job {k}: {name}: mockpool {ad.lookup(name)}, "
                f"HTCondor {htc.lookup(name)}"
            )
