"""Write the submit-description corpus and what HTCondor's condor_submit makes of it.

    python3 -m venv /tmp/h24 && /tmp/h24/bin/pip install 'htcondor==24.12.24'
    /tmp/h24/bin/python scripts/make_submit_corpus.py [--out tests/conformance/submit_corpus]

For each case below it writes ``NNN-name.sub`` and, from HTCondor's own submit code (the
version 1 Python bindings' ``htcondor.Submit(text).jobs()``, which builds the job ads
without a schedd; htcondor 25 no longer offers it), either ``NNN-name.ads`` (every job ad,
old syntax, attributes sorted, a blank line after each) or ``NNN-name.err`` (the error
HTCondor printed) when it refuses the description. The submit host is fixed by a small
config: JOB_DEFAULT_REQUESTMEMORY = 128, JOB_DEFAULT_REQUESTDISK as HTCondor's param
table has it, FILESYSTEM_DOMAIN = UID_DOMAIN = mockpool, on an X86_64 Linux host. The
test (tests/conformance/test_submit_corpus.py) compares mockpool's job ads with these.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import tempfile
from pathlib import Path

CONFIG = """JOB_DEFAULT_REQUESTMEMORY = 128
JOB_DEFAULT_REQUESTDISK = MAX({1024, (TransferInputSizeMB+1) * 1.25}) * 1024
FILESYSTEM_DOMAIN = mockpool
UID_DOMAIN = mockpool
"""

SLEEP = "executable = /bin/sleep\narguments = 60\n"

# (name, description): realistic descriptions, then ones HTCondor refuses
CASES: list[tuple[str, str]] = [
    ("plain", SLEEP + "queue\n"),
    ("queue-5", SLEEP + "request_cpus = 1\nqueue 5\n"),
    ("memory-units", SLEEP + "request_memory = 2G\nrequest_disk = 4G\nqueue\n"),
    ("memory-mb", SLEEP + "request_memory = 3000\nqueue\n"),
    ("memory-512m", SLEEP + "request_memory = 512M\nrequest_disk = 100M\nqueue\n"),
    ("memory-kb", SLEEP + "request_memory = 1048576K\nqueue\n"),
    ("disk-kb", SLEEP + "request_disk = 2000000\nqueue\n"),
    ("disk-zero", SLEEP + "request_disk = 0\nqueue\n"),
    ("memory-one", SLEEP + "request_memory = 1\nqueue\n"),
    ("cpus-4", SLEEP + "request_cpus = 4\nrequest_memory = 8G\nqueue\n"),
    ("cpus-expr", SLEEP + "request_cpus = 2 * 4\nqueue\n"),
    ("memory-expr", SLEEP + "request_memory = MemoryUsage * 2\nqueue\n"),
    (
        "memory-ifthenelse",
        SLEEP + "request_memory = ifThenElse(MemoryUsage =!= undefined, MemoryUsage, 2048)\n"
        "queue\n",
    ),
    ("memory-undefined", SLEEP + "request_memory = undefined\nqueue\n"),
    ("req-arch", SLEEP + 'requirements = (Arch == "X86_64")\nqueue\n'),
    ("req-target-arch", SLEEP + 'requirements = TARGET.Arch == "AARCH64"\nqueue\n'),
    ("req-opsys", SLEEP + 'requirements = OpSys == "LINUX"\nqueue\n'),
    ("req-opsysandver", SLEEP + 'requirements = OpSysAndVer == "AlmaLinux9"\nqueue\n'),
    ("req-opsysmajor", SLEEP + "requirements = OpSysMajorVer >= 8\nqueue\n"),
    ("req-memory", SLEEP + "requirements = Memory > 4096\nqueue\n"),
    ("req-target-memory", SLEEP + "requirements = TARGET.Memory >= 2048\nqueue\n"),
    ("req-disk", SLEEP + "requirements = Disk > 1000000\nqueue\n"),
    ("req-cpus", SLEEP + "request_cpus = 2\nrequirements = TARGET.Cpus >= 8\nqueue\n"),
    ("req-fsdomain", SLEEP + 'requirements = FileSystemDomain == "cs.wisc.edu"\nqueue\n'),
    ("req-hasfiletransfer", SLEEP + "requirements = HasFileTransfer\nqueue\n"),
    ("req-machine", SLEEP + 'requirements = Machine == "exec01.example.org"\nqueue\n'),
    ("req-regexp", SLEEP + 'requirements = regexp("^gpu", Machine)\nqueue\n'),
    ("req-my", SLEEP + "+Weight = 3\nrequirements = MY.Weight > 2\nqueue\n"),
    (
        "req-or",
        SLEEP + 'requirements = (OpSysAndVer == "AlmaLinux9") || (OpSysAndVer == "AlmaLinux8")\n'
        "queue\n",
    ),
    ("req-singularity", SLEEP + "requirements = HasSingularity =?= true\nqueue\n"),
    ("req-and-request", SLEEP + "request_memory = 4G\nrequirements = Memory >= 8192\nqueue\n"),
    ("gpus-1", SLEEP + "request_gpus = 1\nqueue\n"),
    ("gpus-2-cpus", SLEEP + "request_gpus = 2\nrequest_cpus = 8\nrequest_memory = 32G\nqueue\n"),
    ("gpus-0", SLEEP + "request_gpus = 0\nqueue\n"),
    ("gpus-require", SLEEP + "request_gpus = 1\nrequire_gpus = Capability >= 8.0\nqueue\n"),
    (
        "gpus-min-capability",
        SLEEP + "request_gpus = 1\ngpus_minimum_capability = 7.5\nqueue\n",
    ),
    (
        "gpus-all-limits",
        SLEEP + "request_gpus = 2\ngpus_minimum_capability = 7.0\ngpus_maximum_capability = 9.0\n"
        "gpus_minimum_memory = 16G\ngpus_minimum_runtime = 12.1\nqueue\n",
    ),
    (
        "gpus-require-and-limit",
        SLEEP + 'request_gpus = 1\nrequire_gpus = DeviceName == "Tesla T4"\n'
        "gpus_minimum_memory = 8000\nqueue\n",
    ),
    (
        "gpus-require-names-capability",
        SLEEP + "request_gpus = 1\nrequire_gpus = Capability > 8\ngpus_minimum_capability = 7\n"
        "queue\n",
    ),
    ("gpus-limits-without-gpus", SLEEP + "gpus_minimum_capability = 8.0\nqueue\n"),
    ("custom-resource", SLEEP + "request_fpgas = 1\nqueue\n"),
    ("custom-two", SLEEP + "request_foo = 2\nrequest_bar = 1\nqueue\n"),
    ("custom-string", SLEEP + 'request_licenses = "matlab"\nqueue\n'),
    ("custom-zero", SLEEP + "request_tokens = 0\nqueue\n"),
    ("custom-mentioned", SLEEP + "request_fpgas = 1\nrequirements = TARGET.Fpgas >= 2\nqueue\n"),
    ("cuda-version", SLEEP + "request_gpus = 1\ncuda_version = 11.2\nqueue\n"),
    ("cuda-major", SLEEP + "cuda_version = 12\nqueue\n"),
    ("transfer-yes", SLEEP + "should_transfer_files = YES\nqueue\n"),
    ("transfer-no", SLEEP + "should_transfer_files = NO\nqueue\n"),
    ("transfer-if-needed", SLEEP + "should_transfer_files = IF_NEEDED\nqueue\n"),
    (
        "transfer-yes-on-exit",
        SLEEP + "should_transfer_files = YES\nwhen_to_transfer_output = ON_EXIT\nqueue\n",
    ),
    (
        "transfer-on-success",
        SLEEP + "should_transfer_files = YES\nwhen_to_transfer_output = ON_SUCCESS\nqueue\n",
    ),
    ("transfer-input-urls", SLEEP + "transfer_input_files = http://example.org/a, b\nqueue\n"),
    (
        "transfer-input-osdf",
        SLEEP + "transfer_input_files = osdf:///ospool/ap40/data/x.tar.gz\nqueue\n",
    ),
    ("universe-local", "universe = local\n" + SLEEP + "queue\n"),
    ("universe-scheduler", "universe = scheduler\n" + SLEEP + "queue\n"),
    ("universe-java", "universe = java\nexecutable = Main.class\narguments = Main 1 2\nqueue\n"),
    ("universe-parallel", "universe = parallel\n" + SLEEP + "machine_count = 4\nqueue\n"),
    ("docker", "universe = docker\ndocker_image = centos:7\n" + SLEEP + "queue\n"),
    (
        "docker-arch",
        "universe = docker\ndocker_image = ubuntu:22.04\n"
        + SLEEP
        + 'requirements = Arch == "AARCH64"\nqueue\n',
    ),
    ("container-sif", "universe = container\ncontainer_image = /images/py.sif\nqueue\n"),
    ("container-docker", "universe = container\ncontainer_image = docker://python:3.11\nqueue\n"),
    ("vanilla-docker-image", "docker_image = python:3.12\n" + SLEEP + "queue\n"),
    ("grid-batch", "universe = grid\ngrid_resource = batch slurm\nexecutable = x.sh\nqueue\n"),
    ("accounting-group", SLEEP + "accounting_group = group_physics\nqueue\n"),
    (
        "accounting-group-user",
        SLEEP + "accounting_group = group_physics.hep\naccounting_group_user = bob\nqueue\n",
    ),
    ("nice-user", SLEEP + "nice_user = true\nqueue\n"),
    ("concurrency-one", SLEEP + "concurrency_limits = matlab\nqueue\n"),
    ("concurrency-many", SLEEP + "concurrency_limits = DB:2, Matlab, license.sub:3\nqueue\n"),
    ("priority-rank", SLEEP + "priority = 10\nrank = Memory\nqueue\n"),
    ("lease", SLEEP + "job_lease_duration = 3600\nqueue\n"),
    ("plus-attrs", SLEEP + '+ProjectName = "OSG-Staff"\n+WantGlidein = true\nqueue\n'),
    ("my-attrs", SLEEP + 'MY.Weight = 2.5\nMY.Site = "CHTC"\nqueue\n'),
    ("forced-requirements", SLEEP + "request_cpus = 4\n+Requirements = TARGET.Cpus > 0\nqueue\n"),
    ("forced-custom-request", SLEEP + "+RequestFpgas = 2\nqueue\n"),
    (
        "queue-in",
        "executable = /bin/echo\narguments = $(Item)\nqueue Item in (alpha, beta, gamma)\n",
    ),
    (
        "queue-from-inline",
        "executable = /bin/echo\narguments = $(a) $(b)\nqueue a, b from (\n1, x\n2, y\n)\n",
    ),
    ("queue-process", "executable = /bin/echo\narguments = job $(Process)\nqueue 3\n"),
    ("queue-count-in", "executable = /bin/echo\narguments = $(Item)\nqueue 2 in (p q)\n"),
    (
        "if-defined",
        SLEEP + "if defined BIG\nrequest_memory = 8G\nelse\nrequest_memory = 1G\nendif\nqueue\n",
    ),
    (
        "if-true",
        "USE_GPU = true\n" + SLEEP + "if $(USE_GPU)\nrequest_gpus = 1\nendif\nqueue\n",
    ),
    ("args-old", "executable = /bin/echo\narguments = a  b   c\nqueue\n"),
    ("args-new", "executable = /bin/echo\narguments = \"a 'b c' d\"\nqueue\n"),
    ("args-new-quotes", 'executable = /bin/echo\narguments = "a ""b"" c"\nqueue\n'),
    ("args-old-escaped", 'executable = /bin/echo\narguments = a\\"b\nqueue\n'),
    ("args-single-quotes", "executable = /bin/echo\narguments = \"'a''b'\"\nqueue\n"),
    ("macros", "N = 5\nexecutable = /bin/sleep\narguments = $(N)\nrequest_cpus = $(N)\nqueue\n"),
    ("held", SLEEP + "hold = true\nqueue 2\n"),
    ("batch-name", SLEEP + "batch_name = nightly\nqueue\n"),
    # refused
    ("bad-universe", "universe = nowhere\n" + SLEEP + "queue\n"),
    ("bad-should-transfer", SLEEP + "should_transfer_files = maybe\nqueue\n"),
    (
        "bad-when-with-no",
        SLEEP + "should_transfer_files = NO\nwhen_to_transfer_output = ON_SUCCESS\nqueue\n",
    ),
    ("bad-docker-no-image", "universe = docker\n" + SLEEP + "queue\n"),
    ("bad-java-no-class", "universe = java\nexecutable = Main.class\nqueue\n"),
    ("bad-both-images", "docker_image = a\ncontainer_image = b.sif\n" + SLEEP + "queue\n"),
    ("bad-circular", SLEEP + "requirements = Requirements && Memory > 1\nqueue\n"),
    ("bad-args-quote", 'executable = /bin/echo\narguments = a "b" c\nqueue\n'),
    ("bad-args-unbalanced", 'executable = /bin/echo\narguments = "a \'b"\nqueue\n'),
    ("bad-args-trailing", 'executable = /bin/echo\narguments = "x" y\nqueue\n'),
    ("bad-concurrency", SLEEP + "concurrency_limits = 1bad\nqueue\n"),
    ("bad-queue", SLEEP + "queue x y z in\n"),
    # job policy (SetPeriodicExpressions, SetJobRetries)
    (
        "policy-periodic",
        SLEEP + 'periodic_hold = time() - QDate > 3600\nperiodic_hold_reason = "slow"\n'
        "periodic_hold_subcode = 42\nperiodic_release = NumHolds < 3\n"
        "periodic_remove = NumJobStarts > 5\nperiodic_vacate = false\nqueue\n",
    ),
    (
        "policy-on-exit",
        SLEEP + 'on_exit_hold = ExitCode != 0\non_exit_hold_reason = strcat("code ", ExitCode)\n'
        "on_exit_hold_subcode = ExitCode\non_exit_remove = ExitCode == 0\nqueue\n",
    ),
    ("policy-attribute-names", SLEEP + "PeriodicHold = true\nOnExitRemove = false\nqueue\n"),
    ("policy-max-retries", SLEEP + "max_retries = 3\nqueue\n"),
    ("policy-success-exit-code", SLEEP + "success_exit_code = 7\nqueue\n"),
    ("policy-retry-until-code", SLEEP + "max_retries = 2\nretry_until = 42\nqueue\n"),
    (
        "policy-retry-until-expr",
        SLEEP + "retry_until = ExitCode > 100 ? true : false\non_exit_remove = a ? b : c\nqueue\n",
    ),
    (
        "policy-retries-and-on-exit",
        SLEEP + "max_retries = 1\non_exit_remove = ExitCode == 5\non_exit_hold = ExitCode == 9\n"
        "queue\n",
    ),
    (
        "policy-durations",
        SLEEP + "allowed_job_duration = 3600\nallowed_execute_duration = 10 * 60\nqueue\n",
    ),
    ("bad-retry-until", SLEEP + "retry_until = x ==\nqueue\n"),
    ("bad-retry-until-big", SLEEP + "retry_until = 99999999999\nqueue\n"),
    # issue 41: the java universe's Cmd, transfer list and JVM arguments; macro-like text
    (
        "java-jar-files",
        "universe = java\nexecutable = /home/alice/Main.class\narguments = Main 1\n"
        "jar_files = a.jar, lib/b.jar\ntransfer_input_files = data.txt\nqueue\n",
    ),
    (
        "java-jar-files-only",
        "universe = java\nexecutable = /home/alice/Main.class\narguments = Main\n"
        "jar_files = a.jar\nqueue\n",
    ),
    (
        "java-no-transfer",
        "universe = java\nexecutable = /home/alice/Main.class\narguments = Main\n"
        "should_transfer_files = NO\nqueue\n",
    ),
    (
        "java-vm-args",
        "universe = java\nexecutable = Main.class\narguments = Main\n"
        "java_vm_args = -Xmx1g -Dx=1\nqueue\n",
    ),
    (
        "java-vm-arguments",
        "universe = java\nexecutable = Main.class\narguments = Main\n"
        "java_vm_args = \"-Xmx1g 'a b'\"\nqueue\n",
    ),
    (
        "macro-text",
        "executable = /bin/echo\narguments = $(foo $(X:a-b) $(X:$(Y:1)) $(A * 2) $(X:$(N)-1)\n"
        "N = 4\nqueue\n",
    ),
]


def oracle(text: str) -> tuple[list[str] | None, str]:
    """(job ads as -long text, or None; HTCondor's error text) for one description."""
    import htcondor  # the version 1 bindings of htcondor 24

    err = io.StringIO()
    fd = os.dup(2)
    with tempfile.TemporaryFile("w+") as capture:
        os.dup2(capture.fileno(), 2)
        try:
            with contextlib.redirect_stderr(err):
                ads = list(htcondor.Submit(text).jobs(owner="alice"))
        except Exception as e:  # HTCondor's refusal
            ads = None
            message = str(e)
        finally:
            sys.stderr.flush()
            os.dup2(fd, 2)
            os.close(fd)
        capture.seek(0)
        printed = capture.read()
    if ads is None:
        lines = [ln.strip() for ln in printed.splitlines() if ln.strip().startswith("ERROR")]
        return None, (lines[0] if lines else message).strip()
    out = []
    for ad in ads:  # printOld: one line per attribute, as condor_q -long writes them
        lines = sorted(ln for ln in ad.printOld().splitlines() if ln.strip())
        out.append("".join(ln + "\n" for ln in lines))
    return out, ""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="tests/conformance/submit_corpus")
    ap.add_argument("--first", type=int, default=1, help="write cases from this number on")
    ns = ap.parse_args()
    out = Path(ns.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp())
    (work / "condor_config").write_text(CONFIG)
    os.environ["CONDOR_CONFIG"] = str(work / "condor_config")
    os.chdir(work)  # HTCondor looks at files relative to the current folder
    for n, (name, text) in enumerate(CASES, 1):
        if n < ns.first:
            continue
        stem = out / f"{n:03d}-{name}"
        stem.with_suffix(".sub").write_text(text)
        ads, error = oracle(text)
        for old in (stem.with_suffix(".ads"), stem.with_suffix(".err")):
            old.unlink(missing_ok=True)
        if ads is None:
            stem.with_suffix(".err").write_text(error + "\n")
        else:
            stem.with_suffix(".ads").write_text("\n".join(ads))
    print(f"wrote {len(CASES) - ns.first + 1} cases to {out}")


if __name__ == "__main__":
    main()
