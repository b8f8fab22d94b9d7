"""Submit descriptions (condor_submit's language) into job ads.

``parse_submit`` reads a submit description and returns one ad per job, each an ordered
``dict`` of attribute name -> ClassAd expression text (new syntax, strings quoted). The
rules follow HTCondor's manual (condor_submit and htcondor-jdl pages) and
src/condor_utils/submit_utils.cpp:

- Lines: ``name = value`` defines a submit variable (commands are variables with meaning),
  ``+Attr = expr`` and ``MY.Attr = expr`` set job attributes, ``queue ...`` queues jobs with
  the variables as they are at that point; comments, continuation lines and macros are the
  configuration language's (:mod:`mockpool.config`). Live variables per job: ``$(Cluster)``
  / ``$(ClusterId)``, ``$(Process)`` / ``$(ProcId)``, ``$(Step)``, ``$(ItemIndex)``,
  ``$(Row)``, ``$(Item)`` or the queue statement's own variable names.
- Queue forms: ``queue``, ``queue N``, ``queue [N] [var] in [slice] a, b, c`` or ``(...)``
  (one line or until a line starting with ``)``), ``queue [N] [vars] from [slice] (...)``
  or ``from <file>`` (one job set per line, split on commas and/or spaces, the last variable
  taking the rest of the line), ``queue [N] [var] matching [files|dirs|any] [slice] globs``
  (the submitting side lists the matches). ``from <command> |`` is not supported.
  A submit that would queue more than MAX_JOBS_PER_SUBMISSION jobs (``max_jobs``) is refused
  before any job is built, with condor_submit's words.
- Files and the environment are the submitting user's, never the schedd's: this module
  reads no file and no environment variable. The submitting tool finds the item files a
  description names (``submit_inputs``), reads them on the user's side and sends their
  text along (``item_files``), with the ``$ENV(NAME)`` values the description names
  (``env``); a ``queue ... from <file>`` or ``include : <file>`` not sent is refused.
- ``if``/``elif``/``else``/``endif`` as in configuration files (``defined NAME``,
  ``version >= x.y``, or a value that reads as a boolean once expanded).
- ``hold = true`` queues the jobs held, as condor_submit does: JobStatus 5, HoldReasonCode
  15 (SubmittedOnHold), HoldReason "submitted on hold at user's request".
- Numbers must fit the job ad's types (64-bit integers, finite reals): a literal that
  HTCondor's ClassAd language would read as 0 or INF, or a request_* value past 2**63 - 1,
  is refused instead of being queued as something else.
- Defaults when not given (condor_submit's, from its param table): RequestCpus 1
  (JOB_DEFAULT_REQUESTCPUS), RequestMemory 128 MB (JOB_DEFAULT_REQUESTMEMORY), RequestDisk
  1048576 KB (JOB_DEFAULT_REQUESTDISK evaluated with no input files), JobLeaseDuration 2400
  (JOB_DEFAULT_LEASE_DURATION), JobPrio 0, Rank 0.0, JobUniverse 5 (vanilla).
- Requests: ``request_cpus``/``memory``/``disk`` (numbers with units, or expressions kept
  as written), ``request_gpus`` and any other ``request_<res>`` as ``Request<res>``, and for a
  GPU job ``require_gpus``, ``gpus_minimum_capability``/``maximum_capability``/
  ``minimum_memory``/``minimum_runtime`` (folded into RequireGPUs) and ``cuda_version``.
- Requirements: condor_submit's (:mod:`.requirements`); ``+Requirements``/``MY.Requirements``
  replace it all.
- ``if``/``elif``/``else``/``endif`` as in configuration files; ``include : <file>`` reads
  a file the submitting side sent.
- Accounting: ``accounting_group`` G and ``accounting_group_user`` U (default: the owner)
  give AcctGroup = G, AcctGroupUser = U, AccountingGroup = "G.U"; U alone gives
  AccountingGroup = "U". ``nice_user = true`` is the accounting group ``nice-user``
  (HTCondor >= 8.9.9), plus MaxJobRetirementTime = 0 (HTCondor 24 no longer writes
  NiceUser).
- Concurrency limits (``SetConcurrencyLimits``): ``concurrency_limits`` is lower-cased,
  split on commas and whitespace, each item checked as ``name[.sub][:count]`` (names as
  ClassAd attribute names), sorted and joined with commas into the string
  ConcurrencyLimits; ``concurrency_limits_expr`` gives it as an expression instead (not
  both).

Known differences (see also :mod:`.requirements`): the retry forms (``request_memory =
1G, 4G``) keep only the first value; executables are not made absolute nor checked;
item commands (``queue ... from cmd |``) are refused; the vm universe is refused; most
other commands are accepted and ignored.
"""

from __future__ import annotations

import math
import os
import posixpath
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from ..classad import ClassAdSyntaxError, parse_expr
from ..classad.numbers import INT64_MAX, out_of_range_number
from ..classad.refs import references
from ..classad.tree import AttrRef, Binary, Cond, walk
from ..config import (
    DEFAULTS,
    ConfigDict,
    ConfigError,
    Knob,
    MacroError,
    expand_macros,
    parse_size,
)
from ..config.conditions import Conditions, evaluate_condition
from ..config.constexpr import evaluate_constant
from ..config.lines import LineReader
from ..config.units import KIB, MIB
from ..jobstates import HOLD_CODE_SUBMITTED_ON_HOLD
from .javajob import java_attrs
from .requirements import RequirementsMemo, SubmitHost, url_methods

_LIMIT_SEP = re.compile(r"[,\s]+")
_ATTR_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

UID_DOMAIN = "mockpool"
# the schedd's knob, at its default when a submit is parsed without a schedd's config
MAX_JOBS_PER_SUBMISSION = int(DEFAULTS["MAX_JOBS_PER_SUBMISSION"])

# condor_submit's defaults (param table), already in the job ad's units
DEFAULT_REQUEST_CPUS = 1
DEFAULT_REQUEST_MEMORY_MB = 128
DEFAULT_REQUEST_DISK_KB = 1024 * 1024  # MAX({1024, (0 + 1) * 1.25}) * 1024
DEFAULT_LEASE = "2400"
NICE_USER_GROUP = "nice-user"

UNIVERSES = {
    "vanilla": 5,
    "scheduler": 7,
    "grid": 9,
    "java": 10,
    "parallel": 11,
    "local": 12,
    "vm": 13,
    "docker": 5,  # docker and container jobs are vanilla-universe jobs in the job ad
    "container": 5,
}

_ATTR = re.compile(r"(?:\+|MY\.)([A-Za-z_]\w*)\s*=(.*)\Z", re.IGNORECASE | re.DOTALL)
_ASSIGN = re.compile(r"([A-Za-z_][\w.]*)\s*=(.*)\Z", re.DOTALL)
_QUEUE = re.compile(r"queue(?![\w.])(?!\s*=)\s*(.*)\Z", re.IGNORECASE | re.DOTALL)
_KEYWORD = re.compile(r"(?<![\w.])(in|from|matching)(?![\w.])", re.IGNORECASE)
_IDENT = re.compile(r"[A-Za-z_]\w*\Z")
_SLICE = re.compile(r"\[\s*(-?\d*)\s*(?::\s*(-?\d*)\s*(?::\s*(-?\d*)\s*)?)?\]")
_ITEM_SEP = re.compile(r"[\s,]+")
_MATCH_MODE = re.compile(r"(files|dirs|any)(?![\w.])", re.IGNORECASE)
# item_files key of a ``queue ... matching``'s names (a NUL never starts a path)
_MATCHING_KEY = "\0matching "
_ROW_SEP = re.compile(r"\s*,\s*|\s+")
_SLEEP_ARG = re.compile(r"(\d+(?:\.\d*)?|\.\d+)([smhd]?)\Z")
_SLEEP_UNIT = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}
_NAME_OK = re.compile(r"[^\s\"'\\,]+\Z")
_MENTIONS_CPUS = re.compile(r"(?<![\w.])(?:target\.)?cpus(?!\w)", re.IGNORECASE)
_INCLUDE = re.compile(r"@?include(?![\w.])(?!\s*=)\s*(.*)\Z", re.IGNORECASE | re.DOTALL)
_CONDITIONAL = re.compile(
    r"(if|elif|else|endif)(?![\w.])(?!\s*=)\s*(.*)\Z", re.IGNORECASE | re.DOTALL
)
MAX_INCLUDE_DEPTH = 10
_ENV_NAME = re.compile(r"\$ENV\(\s*([A-Za-z_]\w*)\s*[:)]", re.IGNORECASE)
_OUT_OF_RANGE = "number out of range (integers are 64-bit, reals finite)"
# the policy commands that become an expression of the same meaning
_POLICY_COMMANDS = (
    ("periodic_hold", "PeriodicHold"),
    ("periodic_hold_reason", "PeriodicHoldReason"),
    ("periodic_hold_subcode", "PeriodicHoldSubCode"),
    ("periodic_release", "PeriodicRelease"),
    ("periodic_remove", "PeriodicRemove"),
    ("periodic_vacate", "PeriodicVacate"),
    ("on_exit_hold", "OnExitHold"),
    ("on_exit_hold_reason", "OnExitHoldReason"),
    ("on_exit_hold_subcode", "OnExitHoldSubCode"),
    ("on_exit_remove", "OnExitRemove"),
    ("allowed_job_duration", "AllowedJobDuration"),
    ("allowed_execute_duration", "AllowedExecuteDuration"),
)
DEFAULT_JOB_MAX_RETRIES = 2  # condor_submit's DEFAULT_JOB_MAX_RETRIES
_BOOL_WORDS = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}

_NO_RECONNECT = {"local", "scheduler", "grid"}  # universes whose jobs get no JobLeaseDuration
_BUILTIN_REQUEST_KEYS = {"request_cpus", "request_memory", "request_disk"}
# request_* commands that are not resources: common misspellings condor_submit warns about
_NOT_RESOURCES = {"cpu", "gpu", "gpu_memory", "gpus_memory"}
# the properties condor_gpu_discovery -properties reports for a device
_GPU_NAMES = (
    "Capability",
    "ClockMhz",
    "ComputeUnits",
    "CoresPerCU",
    "DeviceName",
    "DevicePciBusId",
    "DeviceUuid",
    "DriverVersion",
    "ECCEnabled",
    "GlobalMemoryMb",
    "Id",
    "MaxSupportedVersion",
)
_GPU_PROPERTIES = {n.lower() for n in _GPU_NAMES}
_SCOPE_NAMES = {"my", "target", "parent", "self"}
# the job attributes a RequireGPUs may name without a +Attr (condor_submit's own)
_GPU_JOB_ATTRS = {
    "gpusmincapability",
    "gpusmaxcapability",
    "gpusminmemory",
    "gpusminruntime",
    "requestgpus",
}
# (job attribute, GPU property, RequireGPUs clause), in condor_submit's order
_GPU_LIMIT_CLAUSES = (
    ("GPUsMinCapability", "capability", "Capability >= GPUsMinCapability"),
    ("GPUsMaxCapability", "capability", "Capability <= GPUsMaxCapability"),
    ("GPUsMinMemory", "globalmemorymb", "GlobalMemoryMb >= GPUsMinMemory"),
    ("GPUsMinRuntime", "maxsupportedversion", "MaxSupportedVersion >= GPUsMinRuntime"),
)
_IMAGE_OK = re.compile(r"[^\s\"]+\Z")
# (submit command, job attribute) of the file-transfer strings; lists are comma-joined
_TRANSFER_STRINGS = (
    ("transfer_input_files", "TransferInput"),
    ("transfer_output_files", "TransferOutput"),
    ("transfer_plugins", "TransferPlugins"),
    ("output_destination", "OutputDestination"),
    ("transfer_output_remaps", "TransferOutputRemaps"),
    ("checkpoint_files", "CheckpointFiles"),
)
_TRANSFER_BOOLS = (
    ("preserve_relative_paths", "PreserveRelativePaths"),
    ("encrypt_execute_directory", "EncryptExecuteDirectory"),
)
_TRANSFER_LISTS = {"TransferInput", "TransferOutput", "CheckpointFiles"}
_VERSION = re.compile(r"(\d+)(?:\.(\d+))?\Z")


def _image_kind(image: str) -> str:
    """The job attribute condor_submit sets for a container_image's kind."""
    image = image.strip()
    if image.startswith("docker:"):
        return "WantDockerImage"
    return "WantSIF" if image.endswith(".sif") else "WantSandboxImage"


def _cuda_version(text: str) -> str | None:
    """cuda_version as the job ad holds it: x.y is x*1000 + y%100, x alone x*1000
    (a number past 1000 is already in that form)."""
    m = _VERSION.match(text.strip())
    if not m:
        return None
    major = int(m.group(1))
    if m.group(2) is not None:
        return str(major * 1000 + int(m.group(2)) % 100)
    return str(major if major >= 1000 else major * 1000)


def _cuda_runtime(text: str) -> str | None:
    """gpus_minimum_runtime x or x.y as x*1000 + y*10; None for an expression."""
    m = _VERSION.match(text.strip())
    if not m or (m.group(2) is not None and int(m.group(2)) >= 100):
        return None
    major = int(m.group(1))
    if m.group(2) is None and major > 1000:
        return str(major)
    return str(major * 1000 + (int(m.group(2)) * 10 if m.group(2) else 0))


def _or_operand(text: str) -> str:
    """``text`` as an operand of ``||``: in parentheses when it is a ``?:``."""
    return f"({text})" if isinstance(parse_expr(text), Cond) else text


def _and_operand(text: str) -> str:
    """``text`` as an operand of ``&&``: in parentheses when its top operator binds looser."""
    tree = parse_expr(text)
    if (isinstance(tree, Binary) and tree.op == "||") or isinstance(tree, Cond):
        return f"({text})"
    return text


# attribute names other code looks up by this spelling, whatever case +Attr used
_CANONICAL = {
    n.lower(): n
    for n in (
        "ClusterId",
        "ProcId",
        "QDate",
        "JobStatus",
        "Iwd",
        "In",
        "Out",
        "Err",
        "UserLog",
        "MockDuration",
        "Requirements",
        "Rank",
        "RequestCpus",
        "RequestMemory",
        "RequestDisk",
        "JobPrio",
        "JobLeaseDuration",
        "AccountingGroup",
        "AcctGroup",
        "AcctGroupUser",
        "NiceUser",
        "JobBatchName",
        "Owner",
        "User",
        "JobUniverse",
        "Cmd",
        "Args",
        "Arguments",
        "ConcurrencyLimits",
        "MaxJobRetirementTime",
    )
}


class SubmitError(ValueError):
    """A bad submit description: ``source:line: problem``."""


@dataclass
class SubmitResult:
    """The jobs of one submit description: ``procs[i]`` is job ``cluster_id.i``."""

    cluster_id: int
    procs: list[dict[str, str]]
    warnings: list[str] = field(default_factory=list)


_ESCAPES = {c: f"\\{c:03o}" for c in range(32)} | {
    ord('"'): '\\"',
    ord("\\"): "\\\\",
    ord("\n"): "\\n",
    ord("\t"): "\\t",
}


def quote(text: str) -> str:
    """A ClassAd string literal (new syntax) holding ``text``."""
    return '"' + text.translate(_ESCAPES) + '"'


def _fits(value: float) -> bool:
    """True when ``value`` can be a job ad number: finite and within 64-bit integers."""
    return math.isfinite(value) and abs(value) <= INT64_MAX


def _number_text(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def split_arguments(text: str) -> tuple[list[str], bool]:
    """The words of an ``arguments`` value and whether it was old syntax (HTCondor's
    ArgList): new syntax is the whole value in double quotes (``""`` is a quote, single
    quotes group, ``''`` inside them is a quote); old syntax splits on whitespace and takes
    ``\\"`` for a quote, refusing a bare one. ValueError says what is wrong."""
    stripped = text.lstrip()
    if not stripped.startswith('"'):
        if (bad := re.search(r'(?<!\\)"', text)) is not None:
            raise ValueError(f"found illegal unescaped double-quote: {text[bad.start() :]}")
        return text.replace('\\"', '"').split(), True
    raw, pos = "", 1
    while True:
        if pos >= len(stripped):
            raise ValueError("unterminated double-quote")
        if stripped[pos] == '"':
            if stripped[pos + 1 : pos + 2] == '"':
                raw, pos = raw + '"', pos + 2
                continue
            break
        raw, pos = raw + stripped[pos], pos + 1
    if stripped[pos + 1 :].strip():
        raise ValueError(
            "unexpected characters following double-quote (repeat a double-quote to escape "
            f"it): {stripped[pos:]}"
        )
    words: list[str] = []
    word, in_word, k = "", False, 0
    while k < len(raw):
        c = raw[k]
        if c == "'":
            end = k + 1
            while True:
                if end >= len(raw):
                    raise ValueError(f"unbalanced quote starting here: {raw[k:]}")
                if raw[end] == "'":
                    if raw[end + 1 : end + 2] == "'":
                        word, end = word + "'", end + 2
                        continue
                    break
                word, end = word + raw[end], end + 1
            in_word, k = True, end + 1
        elif c in " \t\n\r":
            if in_word:
                words.append(word)
            word, in_word, k = "", False, k + 1
        else:
            word, in_word, k = word + c, True, k + 1
    if in_word:
        words.append(word)
    return words, False


def sleep_duration(cmd: str, words: list[str]) -> float | None:
    """The pool seconds a job runs when its executable is ``sleep`` with a first argument
    ``N[smhd]`` (None otherwise): how a mock job of ``/bin/sleep 60`` lasts a minute."""
    if not words or os.path.basename(cmd) != "sleep":
        return None
    m = _SLEEP_ARG.match(words[0])
    return None if m is None else float(m.group(1)) * _SLEEP_UNIT[m.group(2)]


def join_arguments(words: list[str]) -> str:
    """Words in HTCondor's new-syntax raw form (the job's Arguments): a space, tab, newline
    or single quote is put in single quotes (a quote doubled), runs of them in one pair."""
    out = ""
    for word in words:
        if out:
            out += " "
        if not word:
            out += "''"
        for c in word:
            if c in " \t\n\r'":
                out = out[:-1] if out.endswith("'") else out + "'"
                out += ("''" if c == "'" else c) + "'"
            else:
                out += c
    return out


class _Submit:
    def __init__(
        self,
        source: str,
        owner: str,
        cluster_id: int,
        qdate: int,
        validate: Callable[[str], object] | None,
        *,
        item_files: Mapping[str, str] | None = None,
        env: Mapping[str, str] | None = None,
        max_jobs: int = MAX_JOBS_PER_SUBMISSION,
        read_item_file: Callable[[str], str] | None = None,
        glob: Callable[[str, str], list[str]] | None = None,
        host: SubmitHost | None = None,
        requirements: RequirementsMemo | None = None,
        iwd: str = "",
    ) -> None:
        self.source = source
        self.iwd = iwd  # the submitting side's folder: Iwd and the log's path are under it
        self.host = host or SubmitHost()
        self.job_requirements = (
            requirements if requirements is not None else RequirementsMemo(self.host)
        )
        assert self.job_requirements.host == self.host  # a memo answers for its host only
        self.owner = owner
        self.cluster_id = cluster_id
        self.qdate = qdate
        self.validate = validate or parse_expr  # requests may be expressions: always check
        self.item_files = dict(item_files or {})
        self.env = dict(env or {})
        self.max_jobs = max_jobs
        # Set only on the submitting side (submit_inputs): read the item files, queue nothing.
        self.read_item_file = read_item_file
        self.glob = glob
        self.owner_attr = quote(owner)
        self.user_attr = quote(f"{owner}@{UID_DOMAIN}")
        self.vars = ConfigDict(defaults={}, env=self.env)
        self.procs: list[dict[str, str]] = []
        self.warnings: list[str] = []
        self.line = 0
        self.queued = False
        self.live: dict[str, str] = {}
        self.used_live = False
        self.static: dict[str, str] = {}  # values that do not depend on live variables
        self.static_sections: dict[str, dict[str, str]] = {}

    # --- errors and expansion ---------------------------------------------------------

    def fail(self, problem: str, line: int | None = None) -> SubmitError:
        return SubmitError(f"{self.source}:{self.line if line is None else line}: {problem}")

    def lookup(self, name: str) -> str | None:
        key = name.lower()
        if key in self.live:
            self.used_live = True
            return self.live[key]
        return self.vars.raw(name)

    def expand(self, text: str, line: int, name: str | None = None) -> str:
        try:
            return expand_macros(text, self.lookup, env=self.env, name=name).strip()
        except MacroError as e:
            raise self.fail(f"{name + ': ' if name else ''}{e}", line) from None

    def value(self, knob: Knob) -> str:
        """``knob`` expanded; cached for the queue statement unless it uses live variables."""
        key = knob.name.lower()
        if key in self.static:
            return self.static[key]
        outer, self.used_live = self.used_live, False
        value = self.expand(knob.raw, knob.line, knob.name)
        if not self.used_live:
            self.static[key] = value
        self.used_live = outer or self.used_live
        return value

    def command(self, *names: str) -> tuple[str, int, str] | None:
        """(name as written, line, expanded value) of the first of ``names`` that is set."""
        for name in names:
            knob = self.vars.knob(name)
            if knob is not None:
                return knob.name, knob.line, self.value(knob)
        return None

    def bad(self, found: tuple[str, int, str], problem: str) -> SubmitError:
        name, line, value = found
        return self.fail(f'{name} = "{value}": {problem}', line)

    def check_expr(self, found: tuple[str, int, str]) -> str:
        if self.validate is not None:
            try:
                self.validate(found[2])
            except Exception as e:  # the validator's error type is the caller's
                raise self.bad(found, str(e)) from None
        if (number := out_of_range_number(found[2])) is not None:
            raise self.bad(found, f"{_OUT_OF_RANGE}: {number}")
        return found[2]

    # --- reading ----------------------------------------------------------------------

    def run(self, text: str) -> None:
        self.read(text, 0)
        if not self.queued:
            raise self.fail("no queue statement: nothing to submit")

    def read(self, text: str, depth: int) -> None:
        """Read submit lines; ``include`` reads the named file's text in place."""
        reader = LineReader(text)
        conds = Conditions()
        for self.line, line in reader:
            try:
                if m := _CONDITIONAL.match(line):
                    conds.step(m.group(1).lower(), m.group(2).strip(), self.condition)
                elif not conds.active:
                    continue
                elif m := _QUEUE.match(line):
                    self.queue(m.group(1), reader)
                    self.queued = True
                elif m := _INCLUDE.match(line):
                    self.include(m.group(1), depth)
                elif m := _ATTR.match(line):
                    self.vars.set("MY." + m.group(1), m.group(2), self.source, self.line)
                elif m := _ASSIGN.match(line):
                    self.vars.set(m.group(1), m.group(2), self.source, self.line)
                else:
                    raise self.fail(
                        f"cannot parse {line[:60]!r}: expected 'name = value' or 'queue'"
                    )
            except ConfigError as e:
                raise SubmitError(str(e)) from None
            except ValueError as e:
                if isinstance(e, SubmitError):
                    raise
                raise self.fail(str(e)) from None
            except ArithmeticError as e:  # a number out of range: the line is still known
                raise self.fail(f"{type(e).__name__}: {e}") from None
        try:
            conds.close()
        except ValueError as e:
            raise self.fail(str(e)) from None

    def condition(self, text: str) -> bool:
        line = self.line
        return evaluate_condition(text, self.vars.is_defined, lambda t: self.expand(t, line))

    def include(self, rest: str, depth: int) -> None:
        """``include : file``: the file is the submitting user's, read on their side and
        sent along like an item file (commands, ``include command : cmd |``, are refused)."""
        options, colon, target = rest.partition(":")
        target = self.expand(target.strip(), self.line)
        if not colon or not target or target.endswith("|") or options.strip():
            raise self.fail("only 'include : <file>' is supported (not commands)")
        if depth >= MAX_INCLUDE_DEPTH:
            raise self.fail("includes nested too deeply")
        line = self.line
        text = self.sent_file(target, "include")
        self.read(text, depth + 1)
        self.line = line

    def queue(self, args: str, reader: LineReader) -> None:
        line = self.line
        self.live = {}
        self.static = {}
        self.static_sections = {}
        args = self.expand(args, line)
        count, names, rows, indices = self.queue_items(args, reader)
        if self.read_item_file is not None:
            return  # the submitting side only gathers item files
        if count * len(rows) + len(self.procs) > self.max_jobs:
            raise self.fail(
                f"Number of submitted jobs would exceed MAX_JOBS_PER_SUBMISSION ({self.max_jobs})",
                line,
            )
        template: dict[str, str] | None = None
        for index, row in zip(indices, rows):
            for step in range(count):
                proc = len(self.procs)
                if template is not None:
                    ad = dict(template)
                    ad["ProcId"] = str(proc)
                    self.procs.append(ad)
                    continue
                self.live = {
                    "cluster": str(self.cluster_id),
                    "clusterid": str(self.cluster_id),
                    "process": str(proc),
                    "procid": str(proc),
                    "step": str(step),
                    "itemindex": str(index),
                    "row": str(index),
                }
                if row is not None:
                    self.live.update({n.lower(): v for n, v in zip(names, row)})
                self.used_live = False
                ad = self.job(proc, line)
                self.procs.append(ad)
                if not self.used_live:  # nothing per-job: the rest differ only in ProcId
                    template = ad
        self.live = {}

    def queue_items(
        self, args: str, reader: LineReader
    ) -> tuple[int, list[str], list[list[str] | None], list[int]]:
        """(count, variable names, rows of values, item indices) of a queue statement."""
        m = _KEYWORD.search(args)
        head = args[: m.start()] if m else args
        tokens = [t for t in _ITEM_SEP.split(head.strip()) if t]
        count_text = ""
        if not m:
            count_text = head.strip()
            tokens = []
        elif tokens and self.is_count(tokens[0]):
            count_text = tokens.pop(0)
        count = self.count(count_text) if count_text else 1
        if not m:
            return count, [], [None], [0]
        names = tokens or ["Item"]
        for name in names:
            if not _IDENT.match(name):
                raise self.fail(f"queue: {name!r} is not a variable name")
        keyword = m.group(1).lower()
        tail = args[m.end() :].strip()
        mode = "any"
        if keyword == "matching" and (qual := _MATCH_MODE.match(tail)):
            mode, tail = qual.group(1).lower(), tail[qual.end() :].strip()
        sliced = slice(None)
        if tail.startswith("["):
            sm = _SLICE.match(tail)
            if not sm:
                raise self.fail(f"queue: bad slice {tail[:20]!r}")
            parts = [int(p) if p else None for p in sm.groups()]
            if parts[2] is not None and parts[2] <= 0:
                raise self.fail("queue: a slice step must be positive")
            sliced = slice(*parts)
            tail = tail[sm.end() :].strip()
        if keyword in ("in", "matching") and len(names) > 1:
            raise self.fail(f"'queue ... {keyword}' takes one variable; use 'from' for several")
        lines = self.item_lines(tail, keyword, reader)
        if keyword == "matching":
            patterns = [item for ln in lines for item in _ITEM_SEP.split(ln) if item]
            lines = self.matches(patterns, mode)
        if keyword in ("in", "matching"):
            rows = [[item] for ln in lines for item in _ITEM_SEP.split(ln) if item]
        else:
            rows = []
            for ln in lines:
                ln = ln.strip()
                if ln and not ln.startswith("#"):
                    values = _ROW_SEP.split(ln, maxsplit=len(names) - 1)
                    rows.append(values + [""] * (len(names) - len(values)))
        indices = list(range(len(rows)))[sliced]
        return count, names, [rows[i] for i in indices], indices

    def is_count(self, token: str) -> bool:
        try:
            evaluate_constant(token)
        except ValueError:
            return False
        return True

    def count(self, text: str) -> int:
        try:
            value = evaluate_constant(text)
        except ValueError:
            value = None
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise self.fail(f"queue: {text!r} is not a number of jobs (or an unknown queue form)")
        return value

    def item_lines(self, tail: str, keyword: str, reader: LineReader) -> list[str]:
        if not tail:
            raise self.fail(f"queue ... {keyword}: no items")
        if tail.startswith("("):
            close = tail.rfind(")")
            if close > 0:
                if tail[close + 1 :].strip():
                    raise self.fail(
                        f"queue: unexpected {tail[close + 1 :].strip()!r} after the list"
                    )
                return [tail[1:close]]
            lines = [tail[1:]] if tail[1:].strip() else []
            for number, ln in reader:
                if ln.startswith(")"):
                    if ln[1:].strip():
                        problem = f"unexpected {ln[1:].strip()!r} after the list"
                        raise self.fail(f"queue: {problem}", number)
                    return lines
                lines.append(ln)
            raise self.fail("queue: the item list has no closing ')'")
        if keyword in ("in", "matching"):
            return [tail]
        if tail.endswith("|"):
            raise self.fail("'queue ... from <command> |' is not supported by mockpool")
        return self.item_file(tail).splitlines()

    def matches(self, patterns: list[str], mode: str) -> list[str]:
        """The paths the submitting user's ``queue ... matching`` patterns name: globbed on
        their side (files, dirs or any), each pattern's matches sorted, duplicates dropped,
        and sent along with the description."""
        key = f"{_MATCHING_KEY}{mode}\n" + "\n".join(patterns)
        if self.glob is not None:
            found: list[str] = []
            for pattern in patterns:
                try:
                    hits = self.glob(pattern, mode)
                except (OSError, ValueError) as e:
                    raise self.fail(f"queue ... matching {pattern}: {e}") from None
                if not hits:
                    self.warn(f"{self.source}:{self.line}: '{pattern}' does not match any files")
                found += [h for h in hits if h not in found]
            self.item_files[key] = "\n".join(found)
            return found
        text = self.item_files.get(key)
        if text is None:
            raise self.fail(
                "queue ... matching: the matching files were not sent with the submit (the "
                "schedd lists no folders; the submitting tool sends the names)"
            )
        return [name for name in text.split("\n") if name]

    def item_file(self, path: str) -> str:
        return self.sent_file(path, "queue ... from")

    def sent_file(self, path: str, what: str) -> str:
        """A file the description names: read by the submitting side's reader, or as sent."""
        if self.read_item_file is not None:
            try:
                text = self.read_item_file(path)
            except (OSError, ValueError) as e:  # ValueError: a NUL in the name, not UTF-8
                raise self.fail(f"{what} {path}: {getattr(e, 'strerror', None) or e}") from None
            self.item_files[path] = text
            return text
        text = self.item_files.get(path)
        if text is None:
            raise self.fail(
                f"{what} {path}: the file was not sent with the submit (the schedd reads no "
                "files; the submitting tool sends the files a description names)"
            )
        return text

    # --- one job ----------------------------------------------------------------------

    def job(self, proc: int, queue_line: int) -> dict[str, str]:
        ad: dict[str, str] = {
            "ClusterId": str(self.cluster_id),
            "ProcId": str(proc),
            "Owner": self.owner_attr,
            "User": self.user_attr,
            "QDate": str(self.qdate),
            "JobStatus": "1",
        }
        for build in (
            self.universe,
            self.executable,
            self.resources,
            self.transfer,
            self.preferences,
            self.accounting,
            self.limits,
            self.records,
            self.hold,
            self.policy,
        ):
            ad.update(self.section(build, queue_line))
        ad.update(self.section(self.java, queue_line))
        forced = self.section(self.forced_attributes, queue_line)
        if self.vars.knob("MY.Requirements") is None:  # +Requirements replaces it all
            # +RequestFoo counts as a resource request, as in condor_submit
            ad["Requirements"] = self.requirements({**ad, **forced})
        ad.update(forced)
        return ad

    def section(self, build: Callable[[int], dict[str, str]], queue_line: int) -> dict[str, str]:
        """A group of attributes, built once per queue statement unless it uses live
        variables (so ``queue 100000`` costs little more than one job)."""
        key = build.__name__
        if key in self.static_sections:
            return self.static_sections[key]
        outer, self.used_live = self.used_live, False
        attrs = build(queue_line)
        if not self.used_live:
            self.static_sections[key] = attrs
        self.used_live = outer or self.used_live
        return attrs

    def universe(self, _: int) -> dict[str, str]:
        """JobUniverse, and a container job's image attributes (docker_image or
        container_image in the docker, container or vanilla universe)."""
        found = self.command("universe")
        name = found[2].lower() if found and found[2] else "vanilla"
        if name not in UNIVERSES:
            raise self.bad(found, f"unknown universe (one of {', '.join(UNIVERSES)})")
        attrs = {"JobUniverse": str(UNIVERSES[name])}
        docker = self.command("docker_image")
        image = self.command("container_image")
        for given in (docker, image):
            if given and given[2] and not _IMAGE_OK.match(given[2]):
                raise self.bad(given, "not a valid container image")
        docker_text = docker[2] if docker and docker[2] else ""
        image_text = image[2] if image and image[2] else ""
        if name == "docker":
            if image_text:
                raise self.bad(image, "docker universe does not allow use of container_image")
            if not docker_text:
                raise self.fail("docker jobs require a docker_image")
            attrs.update(WantDocker="true", DockerImage=quote(docker_text))
        elif name in ("container", "vanilla", "local") and (docker_text or image_text):
            if docker_text and image_text:
                raise self.bad(image, "cannot declare both docker_image and container_image")
            attrs["WantContainer"] = "true"
            if docker_text:
                attrs.update(DockerImage=quote(docker_text), WantDockerImage="true")
            else:
                attrs["ContainerImage"] = quote(image_text)
                kind = _image_kind(image_text)
                attrs[kind] = "true"
        elif name == "container":
            raise self.fail("container jobs require a container_image or docker_image")
        elif name == "vm":
            raise self.bad(found, "the vm universe is not supported by mockpool")
        return attrs

    def transfer(self, _: int) -> dict[str, str]:
        """File transfer: ShouldTransferFiles, WhenToTransferOutput, the transfer lists and
        FileSystemDomain, which choose the Requirements' file-system clauses."""
        attrs = {"FileSystemDomain": quote(self.host.file_system_domain)}
        should = self.command("should_transfer_files", "ShouldTransferFiles")
        should_text = "IF_NEEDED"
        if should and should[2]:
            should_text = should[2].upper()
            if should_text not in ("YES", "NO", "IF_NEEDED"):
                raise self.bad(should, "expected YES, NO or IF_NEEDED")
        attrs["ShouldTransferFiles"] = quote(should_text)
        when = self.command("when_to_transfer_output", "WhenToTransferOutput")
        if should_text == "NO" and when and when[2]:
            raise self.bad(when, "contradicts should_transfer_files = NO")
        if should_text != "NO":
            when_text = when[2].upper() if when and when[2] else "ON_EXIT"
            if when_text not in ("ON_EXIT", "ON_EXIT_OR_EVICT", "ON_SUCCESS"):
                raise self.bad(when, "expected ON_EXIT, ON_EXIT_OR_EVICT or ON_SUCCESS")
            attrs["WhenToTransferOutput"] = quote(when_text)
        for key, attr in _TRANSFER_STRINGS:
            found = self.command(key)
            if found and found[2]:
                if should_text == "NO" and key == "transfer_input_files":
                    raise self.bad(
                        found, "files to transfer given, but should_transfer_files is NO"
                    )
                text = found[2]
                if attr in _TRANSFER_LISTS:
                    text = ",".join(x.strip() for x in text.split(",") if x.strip())
                attrs[attr] = quote(text)
        image = self.command("container_image")
        if image and image[2] and not image[2].startswith(("docker://", "oras://")):
            # a local image travels with the job's input (process_container_input_files)
            listed = attrs.get("TransferInput")
            files = [listed[1:-1]] if listed else []
            attrs["TransferInput"] = quote(",".join([*files, image[2].strip()]))
        for key, attr in _TRANSFER_BOOLS:
            found = self.command(key)
            if found and found[2]:
                word = _BOOL_WORDS.get(found[2].lower())
                if word is None:
                    raise self.bad(found, "expected True or False")
                attrs[attr] = "true" if word else "false"
        cuda = self.command("cuda_version")
        if cuda and cuda[2]:
            version = _cuda_version(cuda[2])
            if version is None:
                raise self.bad(cuda, "must be of the form 'x' or 'x.y' (positive integers)")
            attrs["CUDAVersion"] = version
        methods = url_methods(attrs)
        if methods:
            attrs["WantTransferPluginMethods"] = quote(",".join(methods))
        return attrs

    def executable(self, queue_line: int) -> dict[str, str]:
        """Cmd, Args (old syntax) or Arguments (new syntax), and MockDuration for
        ``/bin/sleep N``."""
        cmd = self.command("executable", "cmd")
        universe = self.command("universe")
        universe_name = universe[2].lower() if universe and universe[2] else "vanilla"
        attrs = {"Cmd": quote(cmd[2] if cmd else "")}
        if cmd is None or not cmd[2]:
            images = self.command("container_image") or self.command("docker_image")
            # a container job may run its image's entry point
            if not (images and images[2] and universe_name in ("docker", "container", "vanilla")):
                raise self.fail("no executable given before this queue statement", queue_line)
        args = self.command("arguments", "args")
        args2 = self.command("arguments2")
        if args2 and args2[2] and args and args[2]:
            raise self.bad(args2, "give 'arguments' or 'arguments2', not both")
        words: list[str] = []
        if args2 and args2[2]:
            if not args2[2].lstrip().startswith('"'):
                raise self.bad(args2, "expecting a double-quoted string (new syntax)")
            words, _ = self.arguments(args2)
            attrs["Arguments"] = quote(join_arguments(words))
        elif args and args[2]:
            words, old = self.arguments(args)
            if old:
                attrs["Args"] = quote(" ".join(words))
            else:
                attrs["Arguments"] = quote(join_arguments(words))
        else:  # no arguments: an empty argument list, in the new syntax
            attrs["Arguments"] = quote("")
        if universe_name == "java" and not words:
            raise self.fail(
                "in the java universe, arguments must name the class to run (arguments = MyClass)",
                queue_line,
            )
        seconds = sleep_duration(cmd[2] if cmd is not None else "", words)
        if seconds is not None:
            if not _fits(seconds) and args is not None:
                raise self.bad(args, f"{_OUT_OF_RANGE}: sleep {words[0]}")
            attrs["MockDuration"] = _number_text(seconds)
        return attrs

    def java(self, queue_line: int) -> dict[str, str]:
        """JarFiles, and a java universe job's Cmd, transfer list and JVM arguments."""
        ad = {**self.section(self.universe, queue_line), **self.section(self.transfer, queue_line)}
        cmd, jars, vm = (self.command(k) for k in ("executable", "jar_files", "java_vm_args"))
        vm_text, vm_new = None, False
        if vm and vm[2]:
            words, old = self.arguments(vm)
            vm_text, vm_new = (" ".join(words), False) if old else (join_arguments(words), True)
        return java_attrs(
            ad,
            executable=cmd[2] if cmd else "",
            jar_files=jars[2] if jars and jars[2] else None,
            vm_args=vm_text,
            vm_args_new=vm_new,
            iwd=self.iwd,
            quote=quote,
        )

    def arguments(self, found: tuple[str, int, str]) -> tuple[list[str], bool]:
        try:
            return split_arguments(found[2])
        except ValueError as e:
            raise self.bad(found, str(e)) from None

    def integer(self, found: tuple[str, int, str]) -> int:
        try:
            value = evaluate_constant(found[2])
        except ValueError:
            value = None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.bad(found, "expected an integer")
        if not _fits(value):
            raise self.bad(found, _OUT_OF_RANGE)
        return int(value)

    def size(self, found: tuple[str, int, str], unit: int, example: str) -> str | None:
        """A request_memory/request_disk value in the ad's unit; an expression is kept as
        written (condor_submit's rule); ``undefined`` leaves the attribute out."""
        text = found[2].strip()
        head = text.partition(",")[0].strip()
        if head != text and parse_size(head, unit) is not None:
            text = head  # "1G, 4G": a retry list; only the first is modelled
        if text.lower() == "undefined":
            return None
        size = parse_size(text, unit)
        if size is None:
            try:
                value = evaluate_constant(text)
            except ValueError:
                return self.check_expr((found[0], found[1], text))
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise self.bad(found, f"expected a size such as {example}")
            if not _fits(value):
                raise self.bad(found, _OUT_OF_RANGE)
            size = int(value)
        if size > INT64_MAX:
            raise self.bad(found, _OUT_OF_RANGE)
        return str(size)

    def resources(self, _: int) -> dict[str, str]:
        """Request<Res> for cpus, memory, disk, GPUs and custom resources, and the GPU
        property limits (submit_utils.cpp SetRequestResources, SetRequestGpus)."""
        attrs: dict[str, str] = {}
        universe = self.command("universe")
        if universe and universe[2].lower() == "grid":
            return self.grid_resources()
        cpus = self.command("request_cpus", "RequestCpus")
        if cpus and cpus[2]:
            if cpus[2].lower() != "undefined":
                attrs["RequestCpus"] = self.amount(cpus, "a number of CPUs")
        else:
            attrs["RequestCpus"] = str(DEFAULT_REQUEST_CPUS)
        memory = self.command("request_memory", "RequestMemory")
        text = str(DEFAULT_REQUEST_MEMORY_MB)
        if memory and memory[2]:
            text = self.size(memory, MIB, "2048, 2GB or 512M")
        if text is not None:
            attrs["RequestMemory"] = text
        disk = self.command("request_disk", "RequestDisk")
        text = str(DEFAULT_REQUEST_DISK_KB)
        if disk and disk[2]:
            text = self.size(disk, KIB, "1048576, 1G or 100M")
        if text is not None:
            attrs["RequestDisk"] = text
        for knob in self.vars.knobs():
            name = knob.name
            if name[:8].lower() != "request_" or name.lower() in _BUILTIN_REQUEST_KEYS:
                continue
            tag = name[8:]
            if len(tag) < 2 or tag.startswith("_") or tag.lower() in _NOT_RESOURCES:
                continue
            found = (name, knob.line, self.value(knob))
            if found[2] and found[2].lower() != "undefined":
                attr = "RequestGPUs" if tag.lower() == "gpus" else "Request" + tag
                attrs[attr] = self.check_expr(found)
        if "RequestGPUs" in attrs:
            attrs.update(self.gpu_limits())
        return attrs

    def grid_resources(self) -> dict[str, str]:
        """A grid job's requests: only those given (condor_submit sets no defaults)."""
        attrs: dict[str, str] = {}
        for key, attr in (("request_cpus", "RequestCpus"), ("request_gpus", "RequestGPUs")):
            found = self.command(key, attr)
            if found and found[2] and found[2].lower() != "undefined":
                attrs[attr] = self.amount(found, f"a number of {key[8:]}")
        for key, attr, unit, example in (
            ("request_memory", "RequestMemory", MIB, "2048, 2GB or 512M"),
            ("request_disk", "RequestDisk", KIB, "1048576, 1G or 100M"),
        ):
            found = self.command(key, attr)
            if found and found[2] and (text := self.size(found, unit, example)) is not None:
                attrs[attr] = text
        return attrs

    def gpu_limits(self) -> dict[str, str]:
        """RequireGPUs and GPUsMin/Max* from require_gpus and gpus_minimum_* (only for a job
        that requests GPUs); the limits become RequireGPUs clauses unless it names them."""
        attrs: dict[str, str] = {}
        require = self.command("require_gpus", "RequireGPUs")
        if require and require[2]:
            attrs["RequireGPUs"] = self.check_expr(require)
        for key, attr in (
            ("gpus_minimum_capability", "GPUsMinCapability"),
            ("gpus_maximum_capability", "GPUsMaxCapability"),
        ):
            found = self.command(key, attr)
            if found and found[2]:
                attrs[attr] = self.check_expr(found)
        found = self.command("gpus_minimum_memory", "GPUsMinMemory")
        if found and found[2]:
            size = parse_size(found[2], MIB)
            attrs["GPUsMinMemory"] = str(size) if size is not None else self.check_expr(found)
        found = self.command("gpus_minimum_runtime", "GPUsMinRuntime")
        if found and found[2]:
            attrs["GPUsMinRuntime"] = _cuda_runtime(found[2]) or self.check_expr(found)
        props = set()
        if "RequireGPUs" in attrs:
            tree = parse_expr(attrs["RequireGPUs"])
            props = references(tree, _GPU_PROPERTIES)[0]
            bare = {n.name.lower() for n in walk(tree) if isinstance(n, AttrRef)}
            for name in sorted(bare - props - _SCOPE_NAMES):  # a device's or the job's
                if name not in _GPU_JOB_ATTRS and self.vars.knob("MY." + name) is None:
                    raise self.bad(
                        require,  # type: ignore[arg-type]
                        f"{name!r} is not a GPU property (one of {', '.join(_GPU_NAMES)}) "
                        "nor an attribute of the job",
                    )
        clauses = [
            clause
            for attr, prop, clause in _GPU_LIMIT_CLAUSES
            if attr in attrs and prop not in props
        ]
        if clauses:
            if "RequireGPUs" in attrs:
                clauses.insert(0, _and_operand(attrs["RequireGPUs"]))
            attrs["RequireGPUs"] = " && ".join(clauses)
        return attrs

    def amount(self, found: tuple[str, int, str], what: str) -> str:
        """A request written as a number (checked) or as an expression (kept as it is)."""
        try:
            value = evaluate_constant(found[2])
        except ValueError:
            return self.check_expr(found)
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise self.bad(found, f"expected {what}")
        if not _fits(value):
            raise self.bad(found, _OUT_OF_RANGE)
        return _number_text(value)

    def requirements(self, ad: dict[str, str]) -> str:
        user = self.command("requirements")
        text = self.check_expr(user) if user and user[2] else None
        try:
            return self.job_requirements(ad, text)
        except ValueError as e:
            raise self.bad(user, str(e)) if user else self.fail(str(e)) from None

    def preferences(self, _: int) -> dict[str, str]:
        """Rank, JobPrio and JobLeaseDuration."""
        rank = self.command("rank", "preferences")
        prio = self.command("priority", "prio")
        attrs = {
            "Rank": self.check_expr(rank) if rank and rank[2] else "0.0",
            "JobPrio": str(self.integer(prio)) if prio and prio[2] else "0",
        }
        universe = self.command("universe")
        name = universe[2].lower() if universe and universe[2] else "vanilla"
        if name not in _NO_RECONNECT:  # HTCondor's universeCanReconnect (and grid)
            attrs["JobLeaseDuration"] = DEFAULT_LEASE
        lease = self.command("job_lease_duration")
        if lease and lease[2]:
            text = self.check_expr(lease)
            if re.fullmatch(r"\d+", text) and 0 < int(text) < 20:
                self.warn(f"{self.source}:{lease[1]}: JobLeaseDuration under 20 s; using 20")
                text = "20"
            attrs["JobLeaseDuration"] = text
        return attrs

    def warn(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)

    def accounting(self, _: int) -> dict[str, str]:
        """AcctGroup, AcctGroupUser, AccountingGroup, and nice_user's attributes."""
        attrs: dict[str, str] = {}
        group = self.command("accounting_group")
        user = self.command("accounting_group_user")
        nice = self.command("nice_user")
        group_name = group[2] if group and group[2] else None
        if nice and nice[2]:
            word = nice[2].lower()
            if word not in ("true", "false", "yes", "no", "1", "0"):
                raise self.bad(nice, "expected True or False")
            if word in ("true", "yes", "1"):
                attrs["MaxJobRetirementTime"] = "0"
                if group_name is None:
                    group_name = NICE_USER_GROUP
                elif group_name != NICE_USER_GROUP:
                    self.warn(
                        f"{self.source}:{nice[1]}: nice_user conflicts with accounting_group "
                        "and is ignored for accounting"
                    )
        user_name = user[2] if user and user[2] else None
        if group_name is None and user_name is None:
            return attrs
        for found in (group, user):
            if found and found[2] and not _NAME_OK.match(found[2]):
                raise self.bad(found, "not a valid accounting name")
        user_name = user_name or self.owner
        attrs["AcctGroupUser"] = quote(user_name)
        if group_name is not None:
            attrs["AcctGroup"] = quote(group_name)
            attrs["AccountingGroup"] = quote(f"{group_name}.{user_name}")
        else:
            attrs["AccountingGroup"] = quote(user_name)
        return attrs

    def limits(self, _: int) -> dict[str, str]:
        """ConcurrencyLimits from concurrency_limits or concurrency_limits_expr."""
        names = self.command("concurrency_limits")
        expr = self.command("concurrency_limits_expr")
        if names and names[2]:
            if expr and expr[2]:
                raise self.bad(
                    names, "concurrency_limits and concurrency_limits_expr can't be used together"
                )
            items = [x for x in _LIMIT_SEP.split(names[2].lower()) if x]
            for item in items:
                if not valid_limit(item):
                    raise self.bad(
                        names, f"invalid concurrency limit {item!r} (expected name[.sub][:count])"
                    )
            return {"ConcurrencyLimits": quote(",".join(sorted(items)))} if items else {}
        if expr and expr[2]:
            return {"ConcurrencyLimits": self.check_expr(expr)}
        return {}

    def records(self, _: int) -> dict[str, str]:
        """Attributes that are only recorded: batch name, directories and file names."""
        attrs: dict[str, str] = {}
        batch = self.command("batch_name")
        if batch and batch[2]:
            attrs["JobBatchName"] = quote(batch[2].strip('"'))
        given: dict[str, str] = {}
        for name, attr in (
            ("initialdir", "Iwd"),
            ("input", "In"),
            ("output", "Out"),
            ("error", "Err"),
            ("log", "UserLog"),
        ):
            found = self.command(name)
            if found and found[2]:
                attrs[attr] = quote(found[2])
                given[attr] = found[2]
        if self.iwd:  # condor_submit: Iwd absolute (the folder it ran in), the log under it
            iwd = posixpath.normpath(posixpath.join(self.iwd, given.get("Iwd", "")))
            attrs["Iwd"] = quote(iwd)
            if "UserLog" in given:
                attrs["UserLog"] = quote(posixpath.normpath(posixpath.join(iwd, given["UserLog"])))
        return attrs

    def hold(self, _: int) -> dict[str, str]:
        """``hold = true``: queued held, with condor_submit's code and reason."""
        found = self.command("hold")
        if not found or not found[2]:
            return {}
        held = _BOOL_WORDS.get(found[2].lower())
        if held is None:
            raise self.bad(found, "expected True or False")
        if not held:
            return {}
        return {
            "JobStatus": "5",
            "HoldReasonCode": str(HOLD_CODE_SUBMITTED_ON_HOLD),
            "HoldReason": quote("submitted on hold at user's request"),
        }

    def policy(self, _: int) -> dict[str, str]:
        """The job policy expressions (condor_submit's SetPeriodicExpressions and
        SetJobRetries): periodic_hold / _release / _remove / _vacate, on_exit_hold,
        on_exit_remove, their reasons and subcodes, the allowed durations, and the
        retries max_retries, success_exit_code and retry_until fold into OnExitRemove."""
        attrs: dict[str, str] = {}
        for name, attr in _POLICY_COMMANDS:
            found = self.command(name, attr)
            if found and found[2]:
                attrs[attr] = self.check_expr(found)
        retries = self.command("max_retries", "JobMaxRetries")
        success = self.command("success_exit_code", "JobSuccessExitCode")
        until = self.command("retry_until")
        if not any(f and f[2] for f in (retries, success, until)):
            return attrs
        attrs.setdefault("OnExitHold", "false")
        attrs["JobMaxRetries"] = str(
            self.integer(retries) if retries and retries[2] else DEFAULT_JOB_MAX_RETRIES
        )
        code_check = "0"
        if success and success[2]:
            attrs["JobSuccessExitCode"] = str(self.integer(success))
            code_check = "JobSuccessExitCode"
        if until and until[2]:
            code_check += " || " + self.retry_until(until)
        remove = f"NumJobCompletions > JobMaxRetries || ExitCode =?= {code_check}"
        if "OnExitRemove" in attrs:
            remove += " || " + _or_operand(attrs["OnExitRemove"])
        attrs["OnExitRemove"] = remove
        return attrs

    def retry_until(self, found: tuple[str, int, str]) -> str:
        """An exit code that ends the retries (``ExitCode =?= N``) or an expression."""
        text = found[2]
        try:
            tree = parse_expr(text)
        except ClassAdSyntaxError:
            raise self.bad(found, "must be an integer or boolean expression") from None
        if not any(references(tree)):
            try:
                value = evaluate_constant(text)
            except ValueError:
                value = None
            if isinstance(value, int) and not isinstance(value, bool):
                if not -(2**31) <= value < 2**31:
                    raise self.bad(found, "must be an integer or boolean expression")
                return f"ExitCode =?= {value}"
        return _or_operand(text)

    def forced_attributes(self, _: int) -> dict[str, str]:
        """``+Attr``/``MY.Attr``, last, replacing a built-in attribute of the same name."""
        attrs: dict[str, str] = {}
        for knob in self.vars.knobs():
            if knob.name[:3].lower() != "my.":
                continue
            attr = knob.name[3:]
            value = self.value(knob)
            if not value:
                raise self.fail(f"+{attr} has no value", knob.line)
            self.check_expr((knob.name, knob.line, value))
            attrs[_CANONICAL.get(attr.lower(), attr)] = value
        return attrs


def valid_owner(name: str) -> bool:
    """Whether ``name`` can own jobs (no blanks, quotes, backslashes or commas)."""
    return bool(name) and bool(_NAME_OK.match(name))


def valid_limit(item: str) -> bool:
    """HTCondor's ParseConcurrencyLimit: ``name[.sub][:count]``, the names valid attribute
    names (the count is read with strtod, so anything after the colon passes)."""
    name = item.partition(":")[0]
    head, dot, sub = name.partition(".")
    return bool(_ATTR_NAME.fullmatch(head)) and (not dot or bool(_ATTR_NAME.fullmatch(sub)))


def parse_submit(
    text: str,
    source: str = "<submit>",
    *,
    owner: str,
    cluster_id: int = 1,
    qdate: int = 0,
    validate: Callable[[str], object] | None = None,
    item_files: Mapping[str, str] | None = None,
    env: Mapping[str, str] | None = None,
    max_jobs: int = MAX_JOBS_PER_SUBMISSION,
    host: SubmitHost | None = None,
    requirements: RequirementsMemo | None = None,
    iwd: str = "",
) -> SubmitResult:
    """Job ads for a submit description, as condor_submit would queue them.

    ``owner`` is the submitting user (``Owner``; ``User`` is ``owner@mockpool``),
    ``cluster_id`` and ``qdate`` are the schedd's. ``validate``, if given (e.g.
    ``mockpool.classad.parse_expr``), is called on every expression the user wrote
    (requirements, rank, job_lease_duration, ``+Attr``) and may reject it by raising.
    ``item_files`` (path as written -> text) and ``env`` (``$ENV`` name -> value) are what
    the submitting side read for the description (:func:`submit_inputs`); nothing else is
    read. More than ``max_jobs`` jobs is refused. ``host`` is the submit machine (its Arch,
    OpSys, FileSystemDomain and Requirements knobs); ``requirements`` keeps the
    Requirements worked out for it across submits (a schedd's, of the same ``host``).
    ``iwd``, the submitting side's folder (absolute), makes ``Iwd`` and ``UserLog``
    absolute as condor_submit does (empty: both as written).
    Every problem raises ``SubmitError`` naming ``source`` and the line.
    """
    if not valid_owner(owner):
        raise SubmitError(f"{source}: {owner!r} is not a valid owner name")
    submit = _Submit(
        source,
        owner,
        cluster_id,
        qdate,
        validate,
        item_files=item_files,
        env=env,
        max_jobs=max_jobs,
        host=host,
        requirements=requirements,
        iwd=iwd,
    )
    try:
        submit.run(text)
    except RecursionError:  # defensive: nesting is bounded where it can occur
        raise SubmitError(f"{source}: input nested too deeply") from None
    return SubmitResult(cluster_id, submit.procs, submit.warnings)


@dataclass
class SubmitInputs:
    """What the submitting side reads for a description and sends with it."""

    item_files: dict[str, str] = field(default_factory=dict)  # path as written -> text
    env: dict[str, str] = field(default_factory=dict)  # $ENV names -> values (set ones only)
    iwd: str = ""  # the submitting side's folder (absolute): condor_submit's Iwd


def submit_inputs(
    text: str,
    source: str = "<submit>",
    *,
    read_item_file: Callable[[str], str],
    environ: Mapping[str, str],
    glob: Callable[[str, str], list[str]] | None = None,
) -> SubmitInputs:
    """The item files and environment variables a description names, read on the
    submitting side: ``glob(pattern, "files" | "dirs" | "any")`` (sorted paths) for each
    ``queue ... matching`` pattern, ``read_item_file(path)`` for each ``queue ... from <file>`` and ``include`` (raising
    OSError or ValueError when it cannot), ``environ`` for each ``$ENV(NAME)``. Runs the
    description's variables and queue statements (not its jobs), so a path made of macros
    is found as the schedd will expand it; a ``$ENV`` name made of macros is not sent.
    SubmitError names the line of a file that cannot be read or a queue statement in error.
    """
    env = {
        name: environ[name] for name in dict.fromkeys(_ENV_NAME.findall(text)) if name in environ
    }
    scan = _Submit(source, "scan", 0, 0, None, env=env, read_item_file=read_item_file, glob=glob)
    try:
        scan.run(text)
    except RecursionError:
        raise SubmitError(f"{source}: input nested too deeply") from None
    for included in scan.item_files.values():  # an included file's $ENV names too
        for name in _ENV_NAME.findall(included):
            if name in environ:
                env.setdefault(name, environ[name])
    return SubmitInputs(scan.item_files, env)
