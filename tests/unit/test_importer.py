"""mockpool.pool.importer: a condor_status -long / condor_q -long pair into machines and jobs.

The shipped dumps (tests/data/import/) are made by scripts/make_import_dump.py from a
virtual pool of two x86_64 partitionable machines with site attributes, two aarch64
machines of four static slots and one machine with two GPUs, caught busy.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mockpool.classad import parse_expr
from mockpool.config import parse_config
from mockpool.pool.importer import ImportError_, read_jobs, read_machines
from mockpool.pool.spec import parse_spec
from mockpool.pool.specmodel import SpecError
from mockpool.schedd.submit import parse_submit

DATA = Path(__file__).parent.parent / "data" / "import"


def machines() -> dict[str, str]:
    return {m.name: m.config for m in read_machines((DATA / "status.txt").read_text(), "s")}


def test_one_machine_per_distinct_machine_with_its_slot_layout() -> None:
    ms = machines()
    assert sorted(ms) == ["arm-01", "arm-02", "gpu-01", "x86-01", "x86-02"]
    arm = parse_config(ms["arm-01"])
    # four static one-cpu slots of 2 GB: one slot type of four (dynamic slots are not slots)
    assert (arm.get_str("ARCH"), arm.get_int("NUM_CPUS"), arm.get_int("NUM_SLOTS_TYPE_1")) == (
        "AARCH64",
        4,
        4,
    )
    assert arm.get_str("SLOT_TYPE_1") == "cpus=1, memory=2048, disk=16777216"
    x86 = parse_config(ms["x86-01"])
    assert x86.get_bool("SLOT_TYPE_1_PARTITIONABLE") and x86.get_int("NUM_CPUS") == 8
    # the site's own attributes are kept
    assert x86.get_str("Site") == '"CHTC"' and "HasSingularity" in x86.get_str("STARTD_ATTRS")
    # and only those: what a startd publishes itself (WithinResourceLimits, the version,
    # the load) is not a site attribute
    assert x86.get_str("STARTD_ATTRS").split() == ["HasSingularity", "Site"]
    gpu = parse_config(ms["gpu-01"])
    assert (gpu.get_int("MOCK_GPUS"), gpu.get_float("MOCK_GPU_CAPABILITY")) == (2, 7.5)
    assert gpu.get_str("MOCK_GPU_DEVICE_NAME") == "Tesla T4"
    assert gpu.get_str("SLOT_TYPE_1").endswith("gpus=2")
    # machines that differ only in name come out the same (one family)
    assert ms["arm-01"] == ms["arm-02"] and ms["x86-01"] == ms["x86-02"]


def test_idle_running_and_held_jobs_are_queued_again_with_their_attributes() -> None:
    jobs = read_jobs((DATA / "queue.txt").read_text(), "q", duration=100)
    assert len(jobs) == 27  # 3 idle, 22 running, 2 held
    assert {j.owner for j in jobs} == {"alice", "bob", "carol"}
    bob = next(j for j in jobs if j.owner == "bob")
    (ad,) = parse_submit(bob.description, "q", owner="bob", validate=parse_expr).procs
    assert ad["AcctGroup"] == '"group_physics"' and ad["RequestCpus"] == "2"
    assert ad["Requirements"].startswith('(TARGET.Arch == "X86_64")')  # as it was, no more
    held = [j for j in jobs if "hold = true" in j.description]
    assert len(held) == 2 and all(j.owner == "alice" for j in held)
    carol = next(j for j in jobs if j.owner == "carol")
    assert "+RequireGPUs = Capability >= GPUsMinCapability" in carol.description


def test_durations_come_from_the_ad_or_the_default() -> None:
    text = (
        'Owner = "a"\nJobStatus = 1\nMockDuration = 50\nClusterId = 1\nProcId = 0\n\n'
        'Owner = "a"\nJobStatus = 1\nClusterId = 2\nProcId = 0\n\n'
        'Owner = "a"\nJobStatus = 2\nJobDuration = 300\nRemoteWallClockTime = 120\n'
        "ClusterId = 3\nProcId = 0\n\n"
        'Owner = "a"\nJobStatus = 4\nClusterId = 4\nProcId = 0\n'
    )
    jobs = read_jobs(text, "q", duration=700)
    assert [j.description.split("+MockDuration = ")[1].split()[0] for j in jobs] == [
        "50",
        "700",
        "180",  # running: 300 - 120 already run
    ]


@pytest.mark.parametrize(
    ("status", "queue", "problem"),
    [
        ("Name = \n", None, "status.txt:1: not a -long ad"),
        ('MyType = "Machine"\nName = "slot1@x"\n', None, "status.txt:1: a slot ad without Machine"),
        ('MyType = "Scheduler"\n', None, "no slot ads"),
        (None, "Owner = 3\nJobStatus = 1\n", "queue.txt:1: a job ad without Owner"),
        (None, '\n\nOwner = "a"\nJobStatus = 1\nRequirements = (\n', "queue.txt:5: not a -long ad"),
    ],
)
def test_bad_dumps_name_file_and_line(tmp_path, status, queue, problem) -> None:
    lines = ["[import]"]
    if status is not None:
        (tmp_path / "status.txt").write_text(status)
        lines.append('status = "status.txt"')
    if queue is not None:
        (tmp_path / "queue.txt").write_text(queue)
        lines.append('queue = "queue.txt"')
    spec = tmp_path / "pool.toml"
    spec.write_text("\n".join(lines) + "\n")
    with pytest.raises(SpecError) as info:
        parse_spec(spec.read_text(), str(spec), base_dir=tmp_path)
    assert problem in str(info.value)


def test_the_import_table_is_checked() -> None:
    with pytest.raises(SpecError, match="unknown key"):
        parse_spec('[import]\nstatus = "s"\nbogus = 1\n', "<t>")
    with pytest.raises(ImportError_):
        read_machines("", "s")
