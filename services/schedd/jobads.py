"""Jobs that arrive as ready-made ClassAds, and edits of queued jobs' attributes.

HTCondor's own submitters (``htcondor2.Schedd.submit``, condor_submit) expand the submit
description themselves and send the schedd a cluster ad and one ad per proc through the
queue management protocol (qmgmt); ``condor_qedit`` and ``Schedd.edit`` set attributes of
queued jobs through it. The schedd checks what arrives (src/condor_schedd.V6/qmgmt.cpp,
``SetAttribute`` and ``ModifyAttrCheck``); this module holds those checks as pure
functions over attribute texts (name -> ClassAd expression text, as the queue stores them):

- Owner is forced to the authenticated user: ``Owner = undefined`` (what submitters send)
  becomes the user; a string naming someone else is refused ("Setting owner to bob when
  active owner is alice is not permitted"), and so is an Owner that is not a string.
  User is the user's ``owner@UID_DOMAIN``, as mockpool's own submit writes it.
- Attribute names are ClassAd names (a letter or ``_``, then letters, digits and ``_``);
  values must parse; numbers must fit 64 bits (the core's record check).
- SECURE_JOB_ATTRS (x509 and token attributes, OsUser, TotalSubmitProcs) are the schedd's
  own: a submit's values are dropped silently (IGNORE_ATTEMPTS_TO_SET_SECURE_JOB_ATTRS,
  default true), an edit's too.
- The schedd sets ClusterId and ProcId (forced into the cluster and proc ad), GlobalJobId,
  and, as mockpool's submit does, QDate and EnteredCurrentStatus from the pool's clock.
  Defaults a description submit gets and a ready-made ad may lack (RequestCpus 1,
  RequestMemory 128, RequestDisk 1048576, JobLeaseDuration 2400, JobPrio 0, JobUniverse
  5) are filled in, and ``/bin/sleep N`` gets its MockDuration.
- Edits: IMMUTABLE_JOB_ATTRS (Owner, ClusterId, JobUniverse, ProcId, MyType, TargetType,
  User, OsUser, plus the knob's) may not change; PROTECTED_JOB_ATTRS only by a queue
  superuser; only the job's owner (or a superuser) may edit it. mockpool also refuses an
  edit of JobStatus (HTCondor lets the owner write it; here a job's state changes only
  through the schedd's own actions, so its counts and claims stay right).

Refusals are :class:`JobAdError` with HTCondor's errno (EACCES, EINVAL, ENOENT) and words.
"""

from __future__ import annotations

import errno
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ..classad import ClassAdSyntaxError, parse_expr
from ..classad.tree import Literal
from ..config import ConfigDict
from .submit import UID_DOMAIN
from .submit_policy import DEFAULT_LEASE
from .submit_resources import (
    DEFAULT_REQUEST_CPUS,
    DEFAULT_REQUEST_DISK_KB,
    DEFAULT_REQUEST_MEMORY_MB,
)
from .submit_values import quote, sleep_duration, split_arguments

__all__ = [
    "EditSpec",
    "JobAdError",
    "JobAttrRules",
    "check_edit",
    "ready_made",
]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# param_info.in's SYSTEM_* lists (HTCondor 25)
SYSTEM_IMMUTABLE = (
    "Owner",
    "ClusterId",
    "JobUniverse",
    "ProcId",
    "MyType",
    "TargetType",
    "User",
    "OsUser",
)
SYSTEM_SECURE = (
    "x509userProxySubject",
    "x509UserProxyEmail",
    "x509UserProxyVOName",
    "x509UserProxyFirstFQAN",
    "x509UserProxyFQAN",
    "TotalSubmitProcs",
    "AuthTokenSubject",
    "AuthTokenIssuer",
    "AuthTokenGroups",
    "AuthTokenId",
    "AuthTokenScopes",
    "AuthTokenProject",
    "OsUser",
)
# what the schedd sets itself at submit, whatever the ad says
_SCHEDD_SET = frozenset({"clusterid", "procid", "globaljobid", "qdate", "enteredcurrentstatus"})
# the job states a submit may queue a job in: Idle, or Held (hold = true)
_SUBMIT_STATES = ("1", "5")
_DEFAULTS = {
    "RequestCpus": str(DEFAULT_REQUEST_CPUS),
    "RequestMemory": str(DEFAULT_REQUEST_MEMORY_MB),
    "RequestDisk": str(DEFAULT_REQUEST_DISK_KB),
    "JobLeaseDuration": DEFAULT_LEASE,
    "JobPrio": "0",
    "JobUniverse": "5",
}


class JobAdError(ValueError):
    """A refused ad or edit; ``errno`` is HTCondor's (EACCES, EINVAL, ENOENT)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.errno = code


@dataclass(frozen=True)
class JobAttrRules:
    """The schedd's attribute lists (lower-case names), from its configuration."""

    immutable: frozenset[str]
    protected: frozenset[str]
    secure: frozenset[str]

    @classmethod
    def from_config(cls, config: ConfigDict) -> JobAttrRules:
        def names(*lists: Iterable[str]) -> frozenset[str]:
            return frozenset(n.lower() for names in lists for n in names)

        return cls(
            immutable=names(
                SYSTEM_IMMUTABLE, config.get_list("IMMUTABLE_JOB_ATTRS"), ["JobStatus"]
            ),
            protected=names(config.get_list("PROTECTED_JOB_ATTRS")),
            secure=names(SYSTEM_SECURE, config.get_list("SECURE_JOB_ATTRS")),
        )


@dataclass(frozen=True)
class EditSpec:
    """One edit of a transaction: attribute ``name`` of the jobs named by ``job_ids``
    ("12.0") and/or selected by ``constraint`` set to ``value`` (expression text; None:
    delete it)."""

    job_ids: tuple[str, ...]
    constraint: str
    name: str
    value: str | None


def _check_name(name: str, where: str) -> None:
    if not _NAME.match(name):
        raise JobAdError(errno.EINVAL, f"Got invalid attribute named {name} for job {where}")


def _check_value(name: str, text: str, where: str) -> str:
    """``text`` as the queue stores it; EINVAL when it is not an expression."""
    if not text.strip() or "\n" in text:
        raise JobAdError(
            errno.EINVAL,
            f"Received invalid attribute value '{text}' for job {where}; ignoring",
        )
    try:
        parse_expr(text)
    except ClassAdSyntaxError as exc:
        raise JobAdError(
            errno.EINVAL, f"Received invalid attribute value '{text}' for job {where}: {exc}"
        ) from None
    return text.strip()


def _owner_text(given: str | None, owner: str) -> str:
    """The Owner the schedd stores for ``given`` (the ad's text, None: not set)."""
    if given is None or given.strip().lower() == "undefined":
        return quote(owner)
    expr = parse_expr(given)
    value = expr.value if isinstance(expr, Literal) else None
    if not isinstance(value, str):
        raise JobAdError(
            errno.EACCES, f"Unable to set owner to {given} as it is not a valid owner string"
        )
    if value != owner:
        raise JobAdError(
            errno.EACCES,
            f"Setting owner to {value} when active owner is {owner} is not permitted",
        )
    return quote(owner)


def _user_text(given: str | None, owner: str) -> str:
    user = f"{owner}@{UID_DOMAIN}"
    if given is not None and given.strip().lower() != "undefined":
        expr = parse_expr(given)
        value = expr.value if isinstance(expr, Literal) else None
        if value != user and value != owner:
            raise JobAdError(
                errno.EACCES,
                f"Setting user to {given} when active user is {user} is not permitted",
            )
    return quote(user)


def _mock_duration(full: Mapping[str, str]) -> str | None:
    """MockDuration for a ready-made ad of ``/bin/sleep N`` (None: none to give)."""
    try:
        cmd = parse_expr(full.get("Cmd", '""'))
        arguments = full.get("Arguments")
        if arguments is not None:
            text = parse_expr(arguments)
            words = (
                split_arguments('"' + text.value.replace('"', '""') + '"')[0]
                if isinstance(text, Literal) and isinstance(text.value, str)
                else []
            )
        else:
            args = parse_expr(full.get("Args", '""'))
            words = (
                args.value.split()
                if isinstance(args, Literal) and isinstance(args.value, str)
                else []
            )
    except (ClassAdSyntaxError, ValueError):
        return None
    if not (isinstance(cmd, Literal) and isinstance(cmd.value, str)):
        return None
    seconds = sleep_duration(cmd.value, words)
    if seconds is None:
        return None
    return str(int(seconds)) if seconds.is_integer() else repr(seconds)


def ready_made(
    cluster_ad: Mapping[str, str],
    proc_ads: Sequence[Mapping[str, str]],
    *,
    owner: str,
    cluster: int,
    qdate: int,
    rules: JobAttrRules,
) -> list[dict[str, str]]:
    """Each proc's whole ad (the cluster's attributes under its own), as the queue takes
    it, from a cluster ad and proc ads as a qmgmt client sends them. Every proc ad has a
    distinct ProcId >= 0 (NewProc gave it); QDate is ``qdate``, the schedd's date of the
    submit. JobAdError says what is refused."""
    where = f"{cluster}.-1"
    base: dict[str, str] = {}
    for name, text in cluster_ad.items():
        _check_name(name, where)
        if name.lower() in rules.secure or name.lower() in _SCHEDD_SET:
            continue
        base[name] = _check_value(name, text, where)
    owner_text = _owner_text(_get(cluster_ad, "Owner"), owner)
    user_text = _user_text(_get(cluster_ad, "User"), owner)
    seen: set[int] = set()
    out: list[dict[str, str]] = []
    for ad in proc_ads:
        proc_text = (_get(ad, "ProcId") or "").strip()
        if not proc_text.isdigit() or int(proc_text) in seen:
            raise JobAdError(
                errno.EINVAL, f"proc ad of cluster {cluster} with bad ProcId {proc_text!r}"
            )
        proc = int(proc_text)
        seen.add(proc)
        here = f"{cluster}.{proc}"
        full = dict(base)
        for name, text in ad.items():
            _check_name(name, here)
            if name.lower() in rules.secure or name.lower() in _SCHEDD_SET:
                continue
            full[name] = _check_value(name, text, here)
        # Owner and User are cluster attributes (a proc's are ignored, as qmgmt does)
        _canonical(full, "Owner", "User", "JobStatus")
        full["Owner"], full["User"] = owner_text, user_text
        status = (_get(ad, "JobStatus") or _get(cluster_ad, "JobStatus") or "1").strip()
        if status not in _SUBMIT_STATES:
            raise JobAdError(
                errno.EINVAL, f"job {here}: JobStatus {status} at submit (1 Idle or 5 Held)"
            )
        full["JobStatus"] = status
        for name, default in _DEFAULTS.items():
            if _get(full, name) is None:
                full[name] = default
        if _get(full, "MockDuration") is None and (seconds := _mock_duration(full)) is not None:
            full["MockDuration"] = seconds
        full["ClusterId"], full["ProcId"], full["QDate"] = str(cluster), str(proc), str(qdate)
        out.append(full)
    return sorted(out, key=lambda t: int(t["ProcId"]))


def _get(texts: Mapping[str, str], name: str) -> str | None:
    """The text of ``name`` whatever the case the ad spelled it in."""
    if name in texts:
        return texts[name]
    lower = name.lower()
    return next((v for k, v in texts.items() if k.lower() == lower), None)


def _canonical(texts: dict[str, str], *names: str) -> None:
    """Drop other spellings of ``names`` (the canonical one was just set)."""
    for name in names:
        lower = name.lower()
        for k in [k for k in texts if k.lower() == lower and k != name]:
            del texts[k]


def check_edit(
    name: str,
    value: str | None,
    where: str,
    *,
    rules: JobAttrRules,
    superuser: bool,
) -> tuple[bool, str | None]:
    """Whether an edit of ``name`` in job ``where`` is applied (an edit of a secure
    attribute is ignored, as the schedd does), and the text it stores (None: delete the
    attribute); JobAdError when it is refused."""
    _check_name(name, where)
    lower = name.lower()
    if lower in rules.secure:
        return False, None
    if lower in rules.immutable:
        raise JobAdError(errno.EACCES, f"Attempt to edit immutable attribute {name} in job {where}")
    if lower in rules.protected and not superuser:
        raise JobAdError(
            errno.EACCES,
            f"Unauthorized setting of protected attribute {name} denied in job {where}",
        )
    return True, None if value is None else _check_value(name, value, where)
