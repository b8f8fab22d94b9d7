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

Where it lives: this module reads the description (variables, macros, conditionals,
includes) and is the front door (``parse_submit``, ``submit_inputs``); the queue statement
is :mod:`.submit_queue`, one job's ad :mod:`.submit_jobad`, its resource requests
:mod:`.submit_resources`, its priority, accounting, limits, hold and policy
:mod:`.submit_policy`, and the value forms (``quote``, arguments) :mod:`.submit_values`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from ..classad import parse_expr
from ..classad.numbers import out_of_range_number
from ..config import (
    DEFAULTS,
    ConfigDict,
    ConfigError,
    Knob,
    MacroError,
    expand_macros,
)
from ..config.conditions import Conditions, evaluate_condition
from ..config.lines import LineReader
from .requirements import RequirementsMemo, SubmitHost
from .submit_jobad import JobAdBuilder
from .submit_policy import JobPolicyCommands, valid_owner
from .submit_queue import QueueStatements
from .submit_resources import ResourceRequests
from .submit_values import OUT_OF_RANGE, quote

UID_DOMAIN = "mockpool"
# the schedd's knob, at its default when a submit is parsed without a schedd's config
MAX_JOBS_PER_SUBMISSION = int(DEFAULTS["MAX_JOBS_PER_SUBMISSION"])

_ATTR = re.compile(r"(?:\+|MY\.)([A-Za-z_]\w*)\s*=(.*)\Z", re.IGNORECASE | re.DOTALL)
_ASSIGN = re.compile(r"([A-Za-z_][\w.]*)\s*=(.*)\Z", re.DOTALL)
_QUEUE = re.compile(r"queue(?![\w.])(?!\s*=)\s*(.*)\Z", re.IGNORECASE | re.DOTALL)
_INCLUDE = re.compile(r"@?include(?![\w.])(?!\s*=)\s*(.*)\Z", re.IGNORECASE | re.DOTALL)
_CONDITIONAL = re.compile(
    r"(if|elif|else|endif)(?![\w.])(?!\s*=)\s*(.*)\Z", re.IGNORECASE | re.DOTALL
)
MAX_INCLUDE_DEPTH = 10
_ENV_NAME = re.compile(r"\$ENV\(\s*([A-Za-z_]\w*)\s*[:)]", re.IGNORECASE)


class SubmitError(ValueError):
    """A bad submit description: ``source:line: problem``."""


@dataclass
class SubmitResult:
    """The jobs of one submit description: ``procs[i]`` is job ``cluster_id.i``."""

    cluster_id: int
    procs: list[dict[str, str]]
    warnings: list[str] = field(default_factory=list)


class _Submit(QueueStatements, JobAdBuilder, ResourceRequests, JobPolicyCommands):
    """One reading of a submit description: its variables and their expansion, its lines
    (conditionals, includes, queue statements), and the jobs it queues. The queue
    statement, the job ad's groups, the resource requests and the policy attributes are
    the mixins' (:mod:`.submit_queue`, :mod:`.submit_jobad`, :mod:`.submit_resources`,
    :mod:`.submit_policy`); the shared state is set here."""

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
            raise self.bad(found, f"{OUT_OF_RANGE}: {number}")
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

    def warn(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)


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
