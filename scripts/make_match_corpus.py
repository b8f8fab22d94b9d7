"""Write the (job, slot) match corpus: 25 job ads x 20 slot ads = 500 pairs.

    python scripts/make_match_corpus.py [OUTDIR]   (default tests/conformance/match_corpus)

Jobs carry the Requirements clauses condor_submit adds (Arch, OpSys, Disk, Memory,
FileSystemDomain or HasFileTransfer, RequestGPUs) around a user clause of the kind real
submit files hold; slots carry real START/Rank policies, x86_64 and aarch64, some with
GPUs as nested ads. The output is seeded, so rerunning it rewrites the same files.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

_DEFAULT_OUT = Path(__file__).resolve().parent.parent / "tests" / "conformance" / "match_corpus"

_USER_CLAUSES = [
    "",
    "(TARGET.HasSingularity == true)",
    "",
    'stringListMember(TARGET.Machine, "node01.example.org,node04.example.org")',
    'stringListsIntersect(TARGET.SupportedProjects, "cms atlas")',
    'versionGE(split(TARGET.CondorVersion)[1], "10.0.0")',
    'version_in_range(TARGET.CUDADriverVersion, "11.0", "12.9")',
    "(TARGET.CUDACapability >= 7.0)",
    "countMatches(Capability >= 8.0, TARGET.AvailableGPUs) >= 1",
    'regexp("^node0[1-3]", TARGET.Machine)',
    "(TARGET.KFlops > 1000000) || (TARGET.Mips > 20000)",
    'stringListSubsetMatch("avx,avx2", TARGET.CpuFeatures)',
    "(TARGET.OpSysMajorVer >= 8) && (TARGET.TotalCpus >= RequestCpus * 2)",
]

_JOB_RANKS = [
    None,
    "TARGET.Memory",
    "TARGET.KFlops / 1000",
    "-TARGET.LoadAvg",
    "TARGET.Cpus * 10 + TARGET.Memory",
    'versionCmp(split(TARGET.CondorVersion)[1], "23.0.0")',
    '(TARGET.Arch == "X86_64") * 5',
    'TARGET.Department =?= "physics"',
]

_STARTS = [
    "true",
    "(KeyboardIdle > 15 * 60) && (LoadAvg < 0.3)",
    'stringListMember(TARGET.Owner, "alice,bob,carol")',
    '(TARGET.AcctGroup =?= "group_physics") || (TARGET.RequestCpus <= 1)',
    "(TARGET.RequestGPUs =?= undefined) || (TARGET.RequestGPUs <= GPUs)",
    '(TARGET.JobUniverse == 5) && (TARGET.Owner =!= "mallory")',
    "ifThenElse(TARGET.RequestMemory > 8192, Cpus >= 4, true)",
    "(TARGET.RequestMemory <= Memory) && (LoadAvg < 1.0)",
]

_SLOT_RANKS = [
    None,
    'TARGET.Department =?= "physics"',
    "TARGET.JobPrio",
    'stringListIMember(TARGET.Owner, "Alice")',
]


def _q(s: str) -> str:
    return '"' + s + '"'


def _slot(k: int, rng: random.Random) -> list[str]:
    arch = "X86_64" if k % 3 else "aarch64"
    host = f"node{k // 2 + 1:02d}.example.org"
    cpus = rng.choice([1, 2, 4, 8, 16])
    gpus = rng.choice([0, 0, 1, 2])
    ver = rng.choice(["9.0.17", "10.0.9", "23.0.3", "23.10.1"])
    lines = [
        'MyType = "Machine"',
        f"Name = {_q(f'slot{k % 2 + 1}@{host}')}",
        f"Machine = {_q(host)}",
        f"Arch = {_q(arch)}",
        'OpSys = "LINUX"',
        f"OpSysMajorVer = {rng.choice([7, 8, 9])}",
        f"FileSystemDomain = {_q(rng.choice(['example.org', 'example.org', 'cluster.local']))}",
        f"HasFileTransfer = {'false' if k % 7 == 3 else 'true'}",
        f"HasSingularity = {rng.choice(['true', 'false'])}",
        f"Cpus = {cpus}",
        f"TotalCpus = {cpus * rng.choice([1, 2])}",
        f"Memory = {cpus * rng.choice([2048, 4096, 8192])}",
        f"Disk = {rng.choice([1_000_000, 20_000_000, 20_000_000, 50_000])}",
        f"KFlops = {rng.randint(500_000, 3_000_000)}",
        f"Mips = {rng.randint(10_000, 40_000)}",
        f"LoadAvg = {rng.choice([0.0, 0.1, 0.75, 1.5])}",
        f"KeyboardIdle = {rng.choice([60, 1200, 86400, 86400])}",
        f"EnteredCurrentState = {rng.randint(1_600_000_000, 1_700_000_000)}",
        f"CondorVersion = {_q(f'$CondorVersion: {ver} 2024-01-01 BuildID: 1 $')}",
        f"CpuFeatures = {_q(rng.choice(['sse4_1 avx avx2', 'avx', 'neon asimd', 'avx,avx2,avx512f']))}",
        f"SupportedProjects = {_q(rng.choice(['cms', 'atlas,lhcb', 'icecube', '']))}",
        f"GPUs = {gpus}",
    ]
    if gpus:
        caps = [rng.choice([6.1, 7.5, 8.0, 8.6]) for _ in range(gpus)]
        names = [f"GPU-{k:02d}{g}" for g in range(gpus)]
        lines.append(f"AvailableGPUs = {{ {', '.join(n.replace('-', '_') for n in names)} }}")
        for n, c in zip(names, caps):
            lines.append(
                f"{n.replace('-', '_')} = [ Id = {_q(n)}; Capability = {c}; GlobalMemoryMb = 16000 ]"
            )
        lines.append(f"CUDACapability = {max(caps)}")
        lines.append(f"CUDADriverVersion = {_q(rng.choice(['11.4', '12.2', '12.10']))}")
    start = _STARTS[k % len(_STARTS)]
    lines.append(f"START = {start}")
    lines.append("Requirements = START")
    rank = _SLOT_RANKS[k % len(_SLOT_RANKS)]
    if rank is not None:
        lines.append(f"Rank = {rank}")
    return lines


def _job(k: int, rng: random.Random) -> list[str]:
    owner = rng.choice(["alice", "bob", "carol", "dave", "mallory"])
    cpus = rng.choice([1, 1, 2, 4])
    mem = rng.choice([512, 1024, 2048, 8192])
    gpus = rng.choice([None, None, 1])
    arch = "X86_64" if k % 4 else "aarch64"
    lines = [
        'MyType = "Job"',
        f"ClusterId = {100 + k}",
        "ProcId = 0",
        f"Owner = {_q(owner)}",
        f"User = {_q(owner + '@example.org')}",
        f"AcctGroup = {_q(rng.choice(['group_physics', 'group_bio']))}",
        "JobUniverse = 5",
        f"JobPrio = {rng.randint(-5, 5)}",
        f"Department = {_q(rng.choice(['physics', 'chemistry']))}",
        f"RequestCpus = {cpus}",
        f"RequestMemory = {mem}",
        f"RequestDisk = {rng.choice([1024, 100_000])}",
        f"DiskUsage = {rng.choice([1, 1000])}",
        f"ShouldTransferFiles = {_q(rng.choice(['YES', 'IF_NEEDED', 'IF_NEEDED', 'NO']))}",
    ]
    if gpus:
        lines.append(f"RequestGPUs = {gpus}")
    # the clauses condor_submit adds, in its order
    fs = {
        "YES": "(TARGET.HasFileTransfer)",
        "NO": "(TARGET.FileSystemDomain == MY.FileSystemDomain)",
        "IF_NEEDED": "((TARGET.FileSystemDomain == MY.FileSystemDomain) || (TARGET.HasFileTransfer))",
    }[lines[-2 if gpus else -1].split('"')[1]]
    lines.append('FileSystemDomain = "example.org"')
    default = (
        f'(TARGET.Arch == "{arch}") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && '
        f"(TARGET.Memory >= RequestMemory) && {fs}"
    )
    if gpus:
        default += " && (TARGET.GPUs >= RequestGPUs)"
    user = _USER_CLAUSES[k % len(_USER_CLAUSES)]
    lines.append(f"Requirements = ({user}) && {default}" if user else f"Requirements = {default}")
    rank = _JOB_RANKS[k % len(_JOB_RANKS)]
    if rank is not None:
        lines.append(f"Rank = {rank}")
    return lines


def write(out: Path) -> None:
    rng = random.Random(13)
    out.mkdir(parents=True, exist_ok=True)
    jobs = "\n\n".join("\n".join(_job(k, rng)) for k in range(25)) + "\n"
    slots = "\n\n".join("\n".join(_slot(k, rng)) for k in range(20)) + "\n"
    (out / "jobs.ads").write_text(jobs)
    (out / "slots.ads").write_text(slots)


if __name__ == "__main__":
    write(Path(sys.argv[1]) if len(sys.argv) > 1 else _DEFAULT_OUT)
