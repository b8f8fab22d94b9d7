"""condor_submit's Requirements, request commands and file-transfer attributes.

Each expected Requirements string was worked from submit_utils.cpp (SetRequirements,
SetRequestGpus, SetResourceRequirements) and checked against htcondor 24.12's
``htcondor.Submit(...).jobs()`` with FILESYSTEM_DOMAIN = mockpool on an X86_64 Linux host.
"""

from __future__ import annotations

import textwrap

import pytest

from mockpool.classad import parse_expr
from mockpool.classad.refs import references
from mockpool.config import parse_config
from mockpool.schedd.requirements import RequirementsMemo, SubmitHost, job_requirements
from mockpool.schedd.submit import SubmitError, parse_submit

ARCH_OS = '(TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX")'
DISK_MEM = "(TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory)"
FT = "((TARGET.FileSystemDomain == MY.FileSystemDomain) || (TARGET.HasFileTransfer))"


def one(text: str, **kw) -> dict[str, str]:
    (ad,) = parse_submit(textwrap.dedent(text), "job.sub", owner="alice", **kw).procs
    return ad


def same(a: str, b: str) -> bool:
    return parse_expr(a) == parse_expr(b)


def test_references_split_like_get_expr_references() -> None:
    tree = parse_expr('TARGET.Arch == "X" && MY.Foo > Memory && RequestMemory > 1 && a.b')
    internal, external = references(tree, {"requestmemory"})
    assert internal == {"foo", "requestmemory"}
    assert external == {"arch", "memory", "a"}


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        # the defaults: platform, disk, memory (128 MB > 1), file system or transfer
        ("", f"{ARCH_OS} && {DISK_MEM} && {FT}"),
        # more than one cpu adds the Cpus clause; a GPU request its own
        (
            "request_cpus = 2\nrequest_gpus = 1",
            f"{ARCH_OS} && {DISK_MEM} && (TARGET.Cpus >= RequestCpus) && "
            f"(TARGET.GPUs >= RequestGPUs) && {FT}",
        ),
        # the user's Memory/OpSysAndVer/HasFileTransfer: no OpSys and no transfer clause,
        # but the Memory clause stays; an expression request gets its clause
        (
            'requirements = TARGET.Memory > 3 && OpSysAndVer == "x" && HasFileTransfer\n'
            "request_memory = MemoryUsage * 2\nrequest_cpus = 2",
            '(TARGET.Memory > 3 && OpSysAndVer == "x" && HasFileTransfer) && '
            '(TARGET.Arch == "X86_64") && '
            f"{DISK_MEM} && (TARGET.Cpus >= RequestCpus)",
        ),
        # request_disk = 0 has no disk clause; YES transfers: HasFileTransfer alone;
        # custom resources in name order; require_gpus counts matching GPUs
        (
            "request_foo = 2\nrequire_gpus = Capability > 7\nrequest_gpus = 1\n"
            "should_transfer_files = YES\nrequest_disk = 0",
            f"{ARCH_OS} && (TARGET.Memory >= RequestMemory) && "
            "(TARGET.foo >= Requestfoo) && "
            "(countMatches(MY.RequireGPUs,TARGET.AvailableGPUs) >= RequestGPUs) && "
            "(TARGET.HasFileTransfer)",
        ),
        # NO: the same file system; a zero GPU request and 1 MB of memory need nothing;
        # a string resource is a regexp
        (
            'should_transfer_files = NO\nrequest_memory = 1\nrequest_gpus = 0\nrequest_bar = "x"',
            f"{ARCH_OS} && (TARGET.Disk >= RequestDisk) && regexp(Requestbar,TARGET.bar) "
            "&& (TARGET.FileSystemDomain == MY.FileSystemDomain)",
        ),
        # a URL to fetch needs a plugin for its scheme
        (
            "transfer_input_files = http://a/b, osdf:///c, d",
            f"{ARCH_OS} && {DISK_MEM} && ((TARGET.FileSystemDomain == MY.FileSystemDomain) "
            '|| (TARGET.HasFileTransfer && stringListIMember("http",'
            'TARGET.HasFileTransferPluginMethods) && stringListIMember("osdf",'
            "TARGET.HasFileTransferPluginMethods)))",
        ),
        # the local and scheduler universes never transfer
        ("universe = local", f"{ARCH_OS} && {DISK_MEM}"),
        ("universe = scheduler", f"{ARCH_OS} && {DISK_MEM}"),
        ("universe = java\narguments = Main", f"TARGET.HasJava && {DISK_MEM} && {FT}"),
        (
            "universe = docker\ndocker_image = centos:7",
            f'(TARGET.Arch == "X86_64") && TARGET.HasDocker && {DISK_MEM} && {FT}',
        ),
        (
            'universe = docker\ndocker_image = centos\nrequirements = Arch == "aarch64"',
            f'(Arch == "aarch64") && TARGET.HasDocker && {DISK_MEM} && {FT}',
        ),
        (
            "universe = container\ncontainer_image = /images/foo.sif",
            f'(TARGET.Arch == "X86_64") && TARGET.HasContainer && TARGET.HasSIF && '
            f"{DISK_MEM} && {FT}",
        ),
        (
            "docker_image = centos",  # vanilla with an image is a container job
            f'(TARGET.Arch == "X86_64") && TARGET.HasContainer && TARGET.HasDockerURL && '
            f"{DISK_MEM} && {FT}",
        ),
        # grid jobs to a non-HTCondor batch system get no defaults at all
        ("universe = grid\ngrid_resource = batch slurm", "TRUE"),
        (
            "cuda_version = 11.2",
            f"{ARCH_OS} && {DISK_MEM} && {FT} && CUDAVersion <= TARGET.CUDAMaxSupportedVersion",
        ),
    ],
)
def test_default_requirements(lines: str, expected: str) -> None:
    ad = one(f"executable = /bin/sleep\n{lines}\nqueue\n")
    assert same(ad["Requirements"], expected), ad["Requirements"]


def test_gpu_limits_become_require_gpus() -> None:
    ad = one(
        "executable = x\nrequest_gpus = 2\ngpus_minimum_capability = 7.5\n"
        "gpus_maximum_capability = 9\ngpus_minimum_memory = 8G\ngpus_minimum_runtime = 11.2\n"
        "queue\n"
    )
    assert (ad["GPUsMinCapability"], ad["GPUsMaxCapability"]) == ("7.5", "9")
    assert (ad["GPUsMinMemory"], ad["GPUsMinRuntime"]) == ("8192", "11020")  # 11*1000+2*10
    assert same(
        ad["RequireGPUs"],
        "Capability >= GPUsMinCapability && Capability <= GPUsMaxCapability && "
        "GlobalMemoryMb >= GPUsMinMemory && MaxSupportedVersion >= GPUsMinRuntime",
    )
    # the user's own require_gpus comes first; a property it names gets no clause
    ad = one(
        'executable = x\nrequest_gpus = 1\nrequire_gpus = Capability > 8 || DeviceName == "A"\n'
        "gpus_minimum_capability = 7\ngpus_minimum_memory = 4000\nqueue\n"
    )
    assert same(
        ad["RequireGPUs"],
        '(Capability > 8 || DeviceName == "A") && GlobalMemoryMb >= GPUsMinMemory',
    )
    # without a GPU request the GPU commands are ignored
    ad = one("executable = x\ngpus_minimum_capability = 7\nqueue\n")
    assert "GPUsMinCapability" not in ad and "RequireGPUs" not in ad


def test_cuda_version_forms() -> None:
    def cuda(text: str) -> str:
        return one(f"executable = x\ncuda_version = {text}\nqueue\n")["CUDAVersion"]

    assert (cuda("11.2"), cuda("12"), cuda("11020")) == ("11002", "12000", "11020")
    with pytest.raises(SubmitError, match=r"job.sub:2: cuda_version = \"eleven\": must be"):
        cuda("eleven")


def test_forced_custom_request_counts_and_misspellings_do_not() -> None:
    ad = one("executable = x\n+RequestFpgas = 1\nrequest_cpu = 4\nrequest_x = 2\nqueue\n")
    assert "(TARGET.Fpgas >= RequestFpgas)" in ad["Requirements"]
    assert "RequestCpu" not in ad and "Requestx" not in ad and ad["RequestCpus"] == "1"


def test_submit_host_knobs() -> None:
    cfg = parse_config(
        "ARCH = AARCH64\nOPSYS = LINUX\nAPPEND_REQ_VANILLA = HasBigScratch\n"
        "SUBMIT_GENERATE_CUSTOM_RESOURCE_REQUIREMENTS = false\n"
    )
    host = SubmitHost.from_config(cfg, "submit.example.org")
    assert host.file_system_domain == "submit.example.org"
    ad = one("executable = x\nrequest_foo = 1\nrequest_gpus = 1\nqueue\n", host=host)
    assert ad["FileSystemDomain"] == '"submit.example.org"'
    assert same(
        ad["Requirements"],
        '(HasBigScratch) && (TARGET.Arch == "AARCH64") && (TARGET.OpSys == "LINUX") && '
        f"{DISK_MEM} && (TARGET.GPUs >= RequestGPUs) && {FT}",
    )


@pytest.mark.parametrize(
    ("lines", "problem"),
    [
        ("requirements = Requirements && Memory > 1", "is circular"),
        ("universe = docker", "docker jobs require a docker_image"),
        ("universe = container", "container jobs require a container_image or docker_image"),
        ("docker_image = a\ncontainer_image = b.sif", "cannot declare both"),
        ("universe = java", "arguments must name the class"),
        ("should_transfer_files = maybe", "expected YES, NO or IF_NEEDED"),
        ("should_transfer_files = NO\nwhen_to_transfer_output = ON_EXIT", "contradicts"),
        ("should_transfer_files = NO\ntransfer_input_files = a", "should_transfer_files is NO"),
        ("universe = vm", "not supported by mockpool"),
        ("request_gpus = (1", "request_gpus"),
    ],
)
def test_refusals_name_the_problem(lines: str, problem: str) -> None:
    with pytest.raises(SubmitError, match=r"^job\.sub:") as info:
        one(f"executable = x\n{lines}\nqueue\n")
    assert problem in str(info.value)


def test_job_requirements_is_pure_over_attribute_texts() -> None:
    ad = {"JobUniverse": "5", "RequestDisk": "0", "RequestMemory": "1", "RequestCpus": "1"}
    assert job_requirements(ad, None, SubmitHost()) == f"{ARCH_OS} && {FT}"


def test_requirements_are_worked_out_again_only_for_a_job_that_reads_otherwise() -> None:
    memo = RequirementsMemo(SubmitHost())
    mem = "(TARGET.Memory >= RequestMemory)"
    job = {"JobUniverse": "5", "RequestDisk": "0", "RequestMemory": "2048", "RequestCpus": "1"}
    assert memo(job | {"Arguments": '"10"'}, None) == f"{ARCH_OS} && {mem} && {FT}"
    # another argument: nothing read differs
    assert memo(job | {"Arguments": '"20"'}, None) == f"{ARCH_OS} && {mem} && {FT}"
    assert memo.computed == 1
    # 1 MiB asks for no memory clause
    one_mib = job | {"RequestMemory": "1", "Arguments": '"10"'}
    assert memo(one_mib, None) == f"{ARCH_OS} && {FT}" and memo.computed == 2
    # another name: a GPU clause
    gpus = job | {"RequestGpus": "1", "Arguments": '"10"'}
    assert memo(gpus, None) == f"{ARCH_OS} && {mem} && (TARGET.Gpus >= RequestGpus) && {FT}"
    # the user's own expression: the memory clause stays (only Disk and Cpus give way)
    user = "TARGET.Memory > 4096"
    assert memo(job | {"Arguments": '"30"'}, user) == f"({user}) && {ARCH_OS} && {mem} && {FT}"
    assert memo(job | {"Arguments": '"40"'}, None) == f"{ARCH_OS} && {mem} && {FT}"
    assert memo.computed == 4


def test_the_procs_of_one_submit_get_the_requirements_of_their_own_requests() -> None:
    text = "executable = x\nrequest_memory = $(mem)\nqueue mem from (\n2048\n1\n2048\n)\n"
    procs = parse_submit(text, "job.sub", owner="alice").procs
    mem = "(TARGET.Memory >= RequestMemory)"
    assert [mem in p["Requirements"] for p in procs] == [True, False, True]


def test_if_blocks_choose_commands() -> None:
    text = (
        "executable = x\nif defined big\nrequest_cpus = 8\nelif $(medium:false)\n"
        "request_cpus = 4\nelse\nrequest_cpus = 1\nendif\nqueue\n"
    )
    assert one("big = 1\n" + text)["RequestCpus"] == "8"
    assert one("medium = true\n" + text)["RequestCpus"] == "4"
    assert one(text)["RequestCpus"] == "1"
    assert one("executable = x\nif version >= 9.0\n+New = 1\nendif\nqueue\n")["New"] == "1"
    for bad, where in (
        ("if a b\nendif", "job.sub:2: unsupported 'if' condition"),
        ("endif", "job.sub:2: 'endif' without 'if'"),
        ("if true", "'if' without 'endif'"),
    ):
        with pytest.raises(SubmitError, match=where):
            one(f"executable = x\n{bad}\nqueue\n")


@pytest.mark.parametrize(
    ("line", "attr", "value"),
    [  # each checked against htcondor 24.12's Submit.jobs()
        ("arguments = \"a 'b c' d\"", "Arguments", "a b' 'c d"),
        ('arguments = "a ""b"" c"', "Arguments", 'a "b" c'),
        ('arguments = a\\"b', "Args", 'a"b'),
        ("arguments = \"a'b'c\"", "Arguments", "abc"),
        ('arguments = "  a  b  "', "Arguments", "a b"),
        ("arguments = a  b   c", "Args", "a b c"),
        ("arguments = \"'a''b'\"", "Arguments", "a''''b"),
        ("arguments2 = \"x 'y z'\"", "Arguments", "x y' 'z"),
    ],
)
def test_arguments_are_stored_as_htcondor_writes_them(line: str, attr: str, value: str) -> None:
    from mockpool.classad import evaluate

    assert evaluate(one(f"executable = x\n{line}\nqueue\n")[attr]) == value


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ('arguments = a "b" c', 'found illegal unescaped double-quote: "b" c'),
        ('arguments = "a \'b"', "unbalanced quote starting here: 'b"),
        ('arguments = "one', "unterminated double-quote"),
        ('arguments = "x" y', "unexpected characters following double-quote"),
        ('arguments = a\narguments2 = "b"', "not both"),
        ("arguments2 = b", "expecting a double-quoted string"),
    ],
)
def test_arguments_htcondor_refuses(line: str, problem: str) -> None:
    with pytest.raises(SubmitError) as info:
        one(f"executable = x\n{line}\nqueue\n")
    assert problem in str(info.value)


def test_require_gpus_naming_an_unknown_property_is_refused() -> None:
    with pytest.raises(SubmitError) as info:
        one("executable = x\nrequest_gpus = 1\nrequire_gpus = Capabilty >= 8\nqueue\n")
    assert "job.sub:3: require_gpus" in str(info.value)
    assert "'capabilty' is not a GPU property" in str(info.value)
    # properties, the job's own GPU limits and +Attr the job sets are all fine
    ok = one(
        "executable = x\nrequest_gpus = 1\n+MinMem = 8000\n"
        "require_gpus = Capability >= 7 && GlobalMemoryMb >= MinMem && TARGET.Foo =!= 1\nqueue\n"
    )
    assert "RequireGPUs" in ok
