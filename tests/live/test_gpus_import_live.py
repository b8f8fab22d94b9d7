"""HTCondor's own files on a live pool of Ray actors: a pool imported from the shipped
condor_status/condor_q dumps (tests/data/import/), with x86_64, aarch64 and GPU machines,
runs its jobs where condor_submit's Requirements allow, and condor_status -gpus shows the
GPU slots (the virtual twins: tests/virtual/test_import.py, test_mixed_platforms.py)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from mockpool import Pool
from mockpool.cli.status_normal import format_status_gpus
from mockpool.pool.spec import parse_spec

pytestmark = [pytest.mark.live, pytest.mark.slow]

DATA = Path(__file__).parent.parent / "data" / "import"
SPEC = """
[pool]
time_scale = 200

[config]
NEGOTIATOR_INTERVAL = 20

[import]
status = "status.txt"
queue = "queue.txt"
"""


def test_an_imported_mixed_pool_runs_gpu_and_platform_jobs_where_they_belong(
    ray_session: None,
) -> None:
    with Pool(parse_spec(SPEC, str(DATA / "pool.toml"), base_dir=DATA)) as pool:
        machines = {str(s.get_value("Machine")) for s in pool.slots()}
        queued = Counter(str(j.get_value("Owner")) for j in pool.jobs())
        # carol's GPU jobs each take one of gpu-01's two GPUs; the collector sees the
        # dynamic slots at the startd's next update, which may come after the schedd
        # marks the jobs running
        assert pool.wait(lambda: len(pool.jobs('Owner == "carol" && JobStatus == 2')) == 2, 60)
        assert pool.wait(lambda: len(_gpu_dynamic_rows(pool)) == 2, 60)
        table = format_status_gpus(pool.slots())
        running = pool.jobs("JobStatus == 2")
    assert machines == {"x86-01", "x86-02", "arm-01", "arm-02", "gpu-01"}
    assert queued == Counter({"alice": 14, "bob": 10, "carol": 3})
    hosts = {
        (str(j.get_value("Owner")), str(j.get_value("RemoteHost")).split("@")[-1]) for j in running
    }
    assert {h for o, h in hosts if o == "carol"} == {"gpu-01"}
    assert not any(h.startswith("arm-") for o, h in hosts if o in ("alice", "bob"))
    # the two dynamic slots hold one GPU each
    gpus = sorted(int(r[3]) for r in _gpu_dynamic_rows_of(table))
    assert gpus == [1, 1] and any("Tesla" in ln for ln in table.splitlines())


def _gpu_dynamic_rows_of(table: str) -> list[list[str]]:
    rows = [ln.split() for ln in table.splitlines() if "@gpu-01" in ln]
    return [r for r in rows if r[0].startswith("slot1_")]


def _gpu_dynamic_rows(pool: Pool) -> list[list[str]]:
    return _gpu_dynamic_rows_of(format_status_gpus(pool.slots()))
