"""A pool of x86_64 and aarch64 machines, one with GPUs: condor_submit's default
Requirements keep a job on its submit machine's architecture unless the job says otherwise,
and a GPU job runs only where there are GPUs, taking them from a partitionable slot
(virtual time)."""

from __future__ import annotations

from mockpool import Pool
from mockpool.cli.status_normal import format_status_gpus
from mockpool.pool.spec import parse_spec

SPEC = """
[pool]
clock = "virtual"
seed = 0

[config]
NEGOTIATOR_INTERVAL = 60

[[startds]]
name = "x86-{:02d}"
count = 2
config = '''
NUM_CPUS = 2
'''

[[startds]]
name = "arm-{:02d}"
count = 2
config = '''
NUM_CPUS = 4
ARCH = AARCH64
'''

[[startds]]
name = "gpu-{:02d}"
count = 1
config = '''
use FEATURE : GPUs
NUM_CPUS = 8
MOCK_GPUS = 2
'''

[[submit]]
at = 0
owner = "carol"
description = '''
executable = /bin/sleep
arguments = 300
request_gpus = 1
queue 3
'''

[[submit]]
at = 0
owner = "alice"
description = '''
executable = /bin/sleep
arguments = 100
queue 6
'''

[[submit]]
at = 0
owner = "bob"
description = '''
executable = /bin/sleep
arguments = 100
requirements = TARGET.Arch == "AARCH64"
queue 4
'''
"""


def _hosts(pool: Pool, owner: str) -> list[str]:
    jobs = pool.jobs(f'Owner == "{owner}"', history=True)
    return [str(j.get_value("LastRemoteHost") or j.get_value("RemoteHost")) for j in jobs]


def test_jobs_stay_on_their_platform_and_gpu_jobs_on_gpus() -> None:
    with Pool(parse_spec(SPEC, "<mixed>")) as pool:
        # two of carol's three GPU jobs run at once on the two GPUs; the third waits (the
        # collector hears of the dynamic slots at the startd's next update)
        assert pool.wait(
            lambda: (
                len(pool.jobs('Owner == "carol" && JobStatus == 2')) == 2
                and len(pool.slots('DynamicSlot && Machine == "gpu-01"')) == 2
            ),
            500,
        )
        pslot = pool.slots('Name == "slot1@gpu-01"')[0]
        running = pool.slots('DynamicSlot && Machine == "gpu-01"')
        table = format_status_gpus(pool.slots())
        assert pool.wait(lambda: len(pool.jobs("JobStatus == 4", history=True)) == 13, 5000)
        alice, bob, carol = (_hosts(pool, o) for o in ("alice", "bob", "carol"))
        arch = {str(s.get_value("Machine")): s.get_value("Arch") for s in pool.slots()}
    assert pslot.get_value("GPUs") == 0 and pslot.get_value("TotalSlotGPUs") == 2
    assert sorted(s.get_value("AssignedGPUs") for s in running) == sorted(
        pslot.get_value("DetectedGPUs").split(", ")
    )
    assert all(s.get_value("GPUs") == 1 for s in running)
    assert "slot1_1@gpu-01" in table and "NVIDIA A100-SXM4-40GB" in table
    # alice's six jobs (no requirements: X86_64 from the submit machine) use only the
    # x86 and GPU machines even though eight aarch64 slots stand idle; bob asked for
    # AARCH64; carol's GPU jobs all ran on the GPU machine
    assert len(alice) == 6 and all(h.split("@")[-1][:4] in ("x86-", "gpu-") for h in alice)
    assert len(bob) == 4 and all(h.split("@")[-1].startswith("arm-") for h in bob)
    assert len(carol) == 3 and all(h.split("@")[-1] == "gpu-01" for h in carol)
    assert set(arch.values()) == {"X86_64", "AARCH64"}
