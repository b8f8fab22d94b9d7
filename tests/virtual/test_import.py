"""Today's pool, imported: a pool built from the shipped condor_status -long and condor_q
-long dumps (tests/data/import/, made by scripts/make_import_dump.py) shows the same
machines, slots and jobs (virtual time)."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

from mockpool import Pool
from mockpool.classad import parse_ads
from mockpool.cli.q_layouts import format_q
from mockpool.cli.status_normal import format_status
from mockpool.pool.spec import parse_spec

DATA = Path(__file__).parent.parent / "data" / "import"
SPEC = """
[pool]
clock = "virtual"

[config]
NEGOTIATOR_INTERVAL = 60

[import]
status = "status.txt"
queue = "queue.txt"
duration = 1200
"""


def _top_slots(ads) -> set[tuple[str, int, str]]:
    """(Name, Cpus as configured, Arch) of each slot that is not dynamic."""
    return {
        (a.get_value("Name"), a.get_value("TotalSlotCpus"), a.get_value("Arch"))
        for a in ads
        if a.get_value("DynamicSlot") is not True
    }


def test_an_imported_pool_shows_the_dumped_machines_slots_and_jobs() -> None:
    dumped_slots = parse_ads((DATA / "status.txt").read_text())
    dumped_jobs = [j for j in parse_ads((DATA / "queue.txt").read_text())]
    with Pool(parse_spec(SPEC, str(DATA / "pool.toml"), base_dir=DATA)) as pool:
        pool.sleep_until(1)  # before the first cycle: every job is queued, none matched
        slots, jobs = pool.slots(), pool.jobs()
        now = pool.start_date + 1  # the date now, as the ads count it
        status = format_status(slots, now=now)
        q = format_q(jobs, schedd_name="schedd1", schedd_address="", now_wall=now, batch=False)
        site = pool.slots('Machine == "x86-01"')[0].get_value("Site")
        # then the pool runs them: GPU jobs on the GPU machine, alice's on x86_64
        assert pool.wait(lambda: len(pool.jobs("JobStatus == 4", history=True)) == 25, 600)
        done = pool.jobs("JobStatus == 4", history=True)
    assert {a.get_value("Machine") for a in slots} == {a.get_value("Machine") for a in dumped_slots}
    assert _top_slots(slots) == _top_slots(dumped_slots)
    assert site == "CHTC"  # a site attribute of the dump, kept
    gpu = next(a for a in slots if a.get_value("Machine") == "gpu-01")
    assert gpu.get_value("TotalGPUs") == 2 and gpu.get_value("GPUs_DeviceName") == "Tesla T4"
    for name in ("slot1@x86-01", "slot4@arm-02", "slot1@gpu-01"):
        assert name in status

    # every idle, running or held job of the dump is in the queue (the first cycle, at
    # start-up, has already matched some), the held ones held
    def kinds(ads) -> Counter:
        return Counter(
            (j.get_value("Owner"), j.get_value("JobStatus") == 5)
            for j in ads
            if j.get_value("JobStatus") in (1, 2, 5)
        )

    assert kinds(jobs) == kinds(dumped_jobs)
    assert "27 jobs; 0 completed, 0 removed," in q and "2 held" in q
    hosts: dict[str, set[str]] = {}
    for j in done:
        host = str(j.get_value("LastRemoteHost") or j.get_value("RemoteHost"))
        hosts.setdefault(str(j.get_value("Owner")), set()).add(host.split("@")[-1])
    assert hosts["carol"] == {"gpu-01"}
    assert not any(h.startswith("arm-") for h in hosts["alice"])


def test_the_shipped_dumps_are_what_the_script_writes() -> None:
    sys.path.insert(0, str(Path(__file__).parents[2] / "scripts"))
    try:
        import make_import_dump
    finally:
        sys.path.pop(0)
    status, queue = make_import_dump.make_dumps()
    assert status == (DATA / "status.txt").read_text()
    assert queue == (DATA / "queue.txt").read_text()
