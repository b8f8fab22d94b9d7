"""The Requirements expression condor_submit makes for a job.

condor_submit (src/condor_utils/submit_utils.cpp, ``SubmitHash::SetRequirements``) takes
the user's ``requirements`` in parentheses and appends clauses for what the user's
expression does not already say, in this order:

1. APPEND_REQ_VANILLA (vanilla jobs) or APPEND_REQUIREMENTS from the submit host's config.
2. By universe: java ``TARGET.HasJava``; docker the Arch clause and ``TARGET.HasDocker``;
   container the Arch clause, ``TARGET.HasContainer`` and the image's kind
   (``HasDockerURL``, ``HasSIF``, ``HasSandboxImage``); every other universe the Arch and
   OpSys clauses of the submit machine. A clause is left out when the user's expression
   refers to that machine attribute (any OpSys* attribute counts for OpSys).
3. ``(TARGET.Disk >= RequestDisk)``, ``(TARGET.Memory >= RequestMemory)`` and
   ``(TARGET.Cpus >= RequestCpus)`` when the request is an expression or more than 0 KiB,
   1 MiB and 1 cpu; Disk and Cpus only when the user's expression does not mention them.
4. For every other ``Request<Res>`` attribute (custom resources, GPUs), in name order
   ignoring case: ``(TARGET.<Res> >= Request<Res>)`` for a number above 0 or an
   expression, ``(countMatches(MY.Require<Res>,TARGET.Available<Res>) >= Request<Res>)``
   when the job has ``Require<Res>``, and ``regexp(Request<Res>, TARGET.<Res>)`` for a
   non-empty string; none when the user's expression mentions ``<Res>``.
5. File transfer for the universes that may transfer (vanilla, parallel, java):
   should_transfer_files NO gives ``(TARGET.FileSystemDomain == MY.FileSystemDomain)``,
   YES ``(TARGET.HasFileTransfer)``, IF_NEEDED (the default) the two joined by ``||``;
   plus the plugin-method clauses for URLs the job transfers.

A reference is a machine's when written ``TARGET.x`` or as a bare name the job does not
define (HTCondor's ``GetExprReferences``; so a bare ``Memory`` is the machine's). Known
difference: HTCondor 25.12 and later wrap the vanilla disk clause in a version test for
new starters; mockpool writes the plain clause, as HTCondor 24 and 25.0 do.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from ..classad import ClassAd, MissingEvalInput, evaluate, parse_expr
from ..classad.refs import references
from ..classad.tree import Expr, Literal, Unary
from ..classad.values import UNDEFINED
from ..config import ConfigDict

__all__ = ["RequirementsMemo", "SubmitHost", "job_requirements", "url_methods"]

VANILLA, GRID, JAVA, PARALLEL, VM = 5, 9, 10, 11, 13
# the universes whose jobs may transfer files (submit_utils.cpp mightTransfer; 8 is MPI)
_MIGHT_TRANSFER = {VANILLA, 8, PARALLEL, JAVA, VM}
_OPSYS_ATTRS = ("opsys", "opsysandver", "opsyslongname", "opsysshortname", "opsysname")
_OPSYS_ATTRS += ("opsyslegacy",)
# names condor_submit defines in the scratch ad it reads the user's requirements with
_JOB_NAMES = {"requestmemory", "vm_ckptmac", "requirements"}
_BUILTIN_REQUESTS = {"requestcpus", "requestdisk", "requestmemory"}
_PREFIX = len("Request")
_DOMAIN_CHECK = "(TARGET.FileSystemDomain == MY.FileSystemDomain)"


@dataclass(frozen=True)
class SubmitHost:
    """What condor_submit takes from the submit machine: its platform and its knobs."""

    arch: str = "X86_64"
    opsys: str = "LINUX"
    file_system_domain: str = "mockpool"
    append_req_vanilla: str = ""
    append_requirements: str = ""
    custom_resource_requirements: bool = True  # SUBMIT_GENERATE_CUSTOM_RESOURCE_REQUIREMENTS

    @classmethod
    def from_config(cls, cfg: ConfigDict, machine: str) -> SubmitHost:
        """The schedd's knobs; FILESYSTEM_DOMAIN defaults to the schedd's machine name, as
        HTCondor's ``$(FULL_HOSTNAME)``."""
        return cls(
            arch=cfg.get_str("ARCH", "").strip() or cls.arch,
            opsys=cfg.get_str("OPSYS", "").strip() or cls.opsys,
            file_system_domain=cfg.get_str("FILESYSTEM_DOMAIN", "").strip() or machine,
            append_req_vanilla=cfg.get_str("APPEND_REQ_VANILLA", "").strip(),
            append_requirements=cfg.get_str("APPEND_REQUIREMENTS", "").strip(),
            custom_resource_requirements=cfg.get_bool(
                "SUBMIT_GENERATE_CUSTOM_RESOURCE_REQUIREMENTS", True
            ),
        )


def _literal_number(text: str) -> float | None:
    """The number a request is written as, or None for an expression (a negative
    literal is ``-`` applied to a number, as in HTCondor's parser)."""
    try:
        tree = parse_expr(text)
    except Exception:
        return None
    sign = 1.0
    if isinstance(tree, Unary) and tree.op in ("-", "+") and isinstance(tree.operand, Literal):
        sign, tree = (-1.0 if tree.op == "-" else 1.0), tree.operand
    if isinstance(tree, Literal) and type(tree.value) in (int, float):
        return sign * tree.value
    return None


_MISSING = object()
# answers kept per set of attribute names (a submit's procs vary in a few ways at
# most), and sets of names kept (a schedd's submits come in a few forms)
_KEPT_PER_NAMES = 8
_NAMES_KEPT = 1024


class _Reads(Mapping[str, str]):
    """A job's attribute texts as ``job_requirements`` reads them: each name it looks up
    is noted with what it found (or that it found nothing)."""

    __slots__ = ("_ad", "read")

    def __init__(self, ad: Mapping[str, str]) -> None:
        self._ad = ad
        self.read: dict[str, object] = {}

    def __getitem__(self, name: str) -> str:
        text = self._ad.get(name, _MISSING)
        self.read[name] = text
        if text is _MISSING:
            raise KeyError(name)
        return text  # type: ignore[return-value]

    def __iter__(self) -> Iterator[str]:  # the names: part of the memo's key
        return iter(self._ad)

    def __len__(self) -> int:
        return len(self._ad)


class RequirementsMemo:
    """``job_requirements`` for the jobs a schedd queues. Jobs (the procs of ``queue
    ... from``, a workload's clusters) differ mostly in what it never reads (arguments,
    durations), so an answer is kept with the names the job had and the texts it read,
    and given again to a job with the same names that holds the same texts there: the
    function, pure, would read the same and answer the same. ``computed`` counts the
    answers worked out."""

    def __init__(self, host: SubmitHost) -> None:
        self.host = host
        self.computed = 0
        self._kept: dict[tuple, list[tuple[dict[str, object], str]]] = {}

    def __call__(self, ad: Mapping[str, str], user: str | None) -> str:
        key = (user, tuple(ad))
        if key not in self._kept and len(self._kept) >= _NAMES_KEPT:
            self._kept.clear()
        kept = self._kept.setdefault(key, [])
        for read, answer in kept:
            if all(ad.get(name, _MISSING) == text for name, text in read.items()):
                return answer
        reads = _Reads(ad)
        answer = job_requirements(reads, user, self.host)
        self.computed += 1
        if len(kept) < _KEPT_PER_NAMES:
            kept.append((reads.read, answer))
        return answer


def _clause_needed(text: str, floor: float) -> bool:
    value = _literal_number(text)
    return value is None or value > floor


def _submit_value(name: str, text: str | Expr, scope: ClassAd | None = None) -> object:
    """Attribute ``name`` (``text``) as condor_submit reads it to write Requirements.
    The answer is kept for every later job with the same texts (RequirementsMemo), so it
    reads no clock and no generator: a time() or random() in it is refused (ValueError,
    which the submit reports at its place), where condor_submit would read its own."""
    try:
        return evaluate(text, scope, now=None, rng=None)
    except MissingEvalInput:
        raise ValueError(
            f"{name}: time() and random() cannot decide the Requirements condor_submit writes"
        ) from None


def _string(ad: Mapping[str, str], name: str) -> str | None:
    text = ad.get(name)
    if text is None:
        return None
    value = _submit_value(name, text)
    return value if isinstance(value, str) else None


def _true(ad: Mapping[str, str], name: str) -> bool:
    text = ad.get(name)
    return text is not None and _submit_value(name, text) is True


def url_methods(ad: Mapping[str, str]) -> list[str]:
    """The URL schemes of the files the job transfers that its own TransferPlugins do not
    supply, lower case and sorted (condor_submit's ``WantTransferPluginMethods``)."""
    supplied = set()
    for plug in (_string(ad, "TransferPlugins") or "").split(";"):
        methods, eq, _ = plug.partition("=")
        if eq:
            supplied.update(m.strip().lower() for m in methods.replace(",", " ").split())
    urls = [f.strip() for f in (_string(ad, "TransferInput") or "").split(",")]
    urls.append((_string(ad, "OutputDestination") or "").strip())
    for remap in (_string(ad, "TransferOutputRemaps") or "").split(";"):
        urls.append(remap.partition("=")[2].strip())
    wanted = set()
    for url in urls:
        scheme, sep, _ = url.partition("://")
        ok = sep and scheme and scheme.replace("+", "").replace("-", "").isalnum()
        if ok and scheme.lower() not in supplied:
            wanted.add(scheme.lower())
    return sorted(wanted)


def job_requirements(ad: Mapping[str, str], user: str | None, host: SubmitHost) -> str:
    """Requirements for the job whose other attributes (expression texts) are ``ad``;
    ``user`` is the user's own expression. Raises ValueError for a circular one."""
    universe = int(ad.get("JobUniverse", str(VANILLA)))
    answer = f"({user})" if user else ""
    append = (host.append_req_vanilla if universe == VANILLA else "") or host.append_requirements
    if append:
        answer += f" && ({append})" if answer else f"({append})"
    grid_type = (_string(ad, "GridResource") or "").split(" ", 1)[0].lower()
    if universe == GRID and grid_type != "condor":
        return answer or "TRUE"

    internal, external = references(parse_expr(answer), _JOB_NAMES) if answer else (set(), set())
    if "requirements" in internal or "requirements" in external:
        raise ValueError(f"Requirements = {answer} is circular. Did you intend $(Requirements)?")

    docker = _true(ad, "WantDocker")
    container = _true(ad, "WantContainer")
    might_transfer = universe in _MIGHT_TRANSFER

    def add(clause: str) -> None:
        nonlocal answer
        answer += f" && {clause}" if answer else clause

    arch = f'(TARGET.Arch == "{host.arch}")'
    if universe == JAVA:
        add("TARGET.HasJava")
    elif docker:
        if "arch" not in external:
            add(arch)
        add("TARGET.HasDocker")
        network = _string(ad, "DockerNetworkType")
        if network and network not in ("host", "none", "nat"):
            answer += "&& StringListMember(My.DockerNetworkType, TARGET.DockerNetworks)"
    elif container:
        if "arch" not in external:
            add(arch)
        add("TARGET.HasContainer")
        image = _string(ad, "ContainerImage")
        if "DockerImage" in ad or (image is not None and image.strip().startswith("docker:")):
            answer += "&& TARGET.HasDockerURL"
        elif image is not None:
            sif = image.strip().endswith(".sif")
            answer += "&& TARGET.HasSIF" if sif else "&& TARGET.HasSandboxImage"
    else:
        if "arch" not in external:
            add(arch)
        if not any(a in external for a in _OPSYS_ATTRS):
            answer += f' && (TARGET.OpSys == "{host.opsys}")'

    if "RequestDisk" in ad:
        if "disk" in external or _clause_needed(ad["RequestDisk"], 0.0):
            answer += " && (TARGET.Disk >= RequestDisk)"
    elif "disk" not in external:
        answer += " && (TARGET.Disk >= DiskUsage)"
    if "RequestMemory" in ad and _clause_needed(ad["RequestMemory"], 1.0):
        answer += " && (TARGET.Memory >= RequestMemory)"
    cpus = ad.get("RequestCpus")
    if universe != GRID and "cpus" not in external and cpus and _clause_needed(cpus, 1.0):
        answer += " && (TARGET.Cpus >= RequestCpus)"

    answer += _custom_resource_clauses(ad, external, host)

    if _true(ad, "EncryptExecuteDirectory") and "hasencryptexecutedirectory" not in external:
        answer += " && TARGET.HasEncryptExecuteDirectory"
    if might_transfer:
        answer += _transfer_clauses(ad, external)
    if _true(ad, "WantFTOnCheckpoint") and "hasselfcheckpointtransfers" not in external:
        answer += " && TARGET.HasSelfCheckpointTransfers"
    if "CUDAVersion" in ad:
        answer += "&& CUDAVersion <= TARGET.CUDAMaxSupportedVersion"
    return answer


def _custom_resource_clauses(ad: Mapping[str, str], external: set[str], host: SubmitHost) -> str:
    tags: dict[str, str] = {}  # lower-case name -> the job's spelling (first seen)
    for name in ad:
        lower = name.lower()
        custom = lower.startswith("request") and lower not in _BUILTIN_REQUESTS
        if custom and len(name) >= _PREFIX + 2 and name[_PREFIX] != "_":
            tags.setdefault(lower, name)
    if not host.custom_resource_requirements:
        tags = {k: v for k, v in tags.items() if k == "requestgpus"}
    requires = {name.lower(): name for name in ad if name.lower().startswith("require")}
    scope: ClassAd | None = None
    out = ""
    for lower in sorted(tags):
        attr = tags[lower]
        tag = attr[_PREFIX:]
        if tag.lower() in external:
            continue
        value: object = _literal_number(ad[attr])
        if value is None:  # an expression: its value in the job ad says its type
            if scope is None:
                scope = ClassAd({k: parse_expr(v) for k, v in ad.items()})
            expr = scope.lookup(attr)
            value = _submit_value(attr, expr, scope) if expr is not None else UNDEFINED
        if value is UNDEFINED or (type(value) in (int, float) and value > 0):
            if f"require{tag.lower()}" in requires:
                require = f"Require{tag}"
                out += f" && (countMatches(MY.{require},TARGET.Available{tag}) >= {attr})"
            else:
                out += f" && (TARGET.{tag} >= {attr})"
        elif isinstance(value, str) and value:
            out += f" && regexp({attr}, TARGET.{tag})"
    return out


def _transfer_clauses(ad: Mapping[str, str], external: set[str]) -> str:
    checks_fsdomain = "filesystemdomain" in external
    checks_transfer = "hasfiletransfer" in external or "hasjobtransferplugins" in external
    should = (_string(ad, "ShouldTransferFiles") or "IF_NEEDED").upper()
    if should == "NO":
        return "" if checks_fsdomain else f" && {_DOMAIN_CHECK}"
    if checks_transfer:
        return ""
    out, join, close = "", " && (", ")"
    if should == "IF_NEEDED" and not checks_fsdomain:
        out += join + _DOMAIN_CHECK
        join, close = " || (", "))"
    xfer = (
        "TARGET.HasJobTransferPlugins"
        if _string(ad, "TransferPlugins")
        else "TARGET.HasFileTransfer"
    )
    out += join + xfer
    encrypts = ("EncryptInputFiles", "EncryptOutputFiles", "DontEncryptInputFiles")
    encrypts += ("DontEncryptOutputFiles",)
    if "hasperfileencryption" not in external and any(a in ad for a in encrypts):
        out += " && TARGET.HasPerFileEncryption"
    when = (_string(ad, "WhenToTransferOutput") or "").upper()
    if "CheckpointFiles" in ad or _true(ad, "PreserveRelativePaths") or when == "ON_SUCCESS":
        out += ' && versioncmp( split(TARGET.CondorVersion)[1], "8.9.7" ) >= 0'
    if "hasfiletransferpluginmethods" not in external:
        for method in url_methods(ad):
            out += f' && stringListIMember("{method}",TARGET.HasFileTransferPluginMethods)'
    return out + close
