"""A pool of x86_64 and aarch64 machines: condor_submit's default Requirements keep a job
on its submit machine's architecture unless the job says otherwise (virtual time)."""

from __future__ import annotations

from mockpool import Pool
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


def test_jobs_stay_on_the_submit_machines_architecture_unless_they_ask() -> None:
    with Pool(parse_spec(SPEC, "<mixed>")) as pool:
        assert pool.wait(lambda: len(pool.jobs("JobStatus == 4", history=True)) == 10, 2000)
        alice, bob = _hosts(pool, "alice"), _hosts(pool, "bob")
        arch = {str(s.get_value("Machine")): s.get_value("Arch") for s in pool.slots()}
    # alice's six jobs (no requirements: X86_64 from the submit machine) wait for the
    # four x86 slots even though eight aarch64 slots stand idle; bob asked for AARCH64
    assert len(alice) == 6 and all(h.split("@")[-1].startswith("x86-") for h in alice)
    assert len(bob) == 4 and all(h.split("@")[-1].startswith("arm-") for h in bob)
    assert set(arch.values()) == {"X86_64", "AARCH64"}
