"""A java universe job's attributes as condor_submit writes them (submit_utils.cpp).

``executable`` names the class file; the starter runs the JVM. With file transfer on
(``should_transfer_files`` YES or IF_NEEDED), condor_submit sets ``Cmd = "java"`` and
``TransferExecutable = false``, and, when the job lists input files, adds the class file
(its full path) and the ``jar_files`` to ``TransferInput``; with transfer off, ``Cmd`` is the
class file's full path. A job with no executable (a container's entry point) has
``TransferExecutable = false`` too. ``jar_files`` is kept as written in ``JarFiles`` (any universe), and
``java_vm_args`` gives ``JavaVMArgs`` (old syntax) or ``JavaVMArguments`` (new, quoted).
Recorded from HTCondor 24.12's submit code: tests/conformance/submit_corpus/113-117.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Mapping

from ..classad import evaluate, parse_expr

JAVA_UNIVERSE = "10"


def _unquote(value: str) -> str:
    """The string a job ad's string literal holds (a literal: no clock, no generator)."""
    text = evaluate(parse_expr(value), now=None, rng=None)
    return text if isinstance(text, str) else ""


def java_attrs(
    ad: Mapping[str, str],
    *,
    executable: str,
    jar_files: str | None,
    vm_args: str | None,
    vm_args_new: bool,
    iwd: str,
    quote: Callable[[str], str],
) -> dict[str, str]:
    """What the java universe changes or adds to ``ad`` (the job's other attributes, as
    ClassAd text); ``vm_args`` is the JVM arguments' attribute text (old syntax as
    written, new syntax already in HTCondor's raw form), ``vm_args_new`` which one."""
    out: dict[str, str] = {}
    if jar_files:
        out["JarFiles"] = quote(jar_files)
    if not executable:  # a container job that runs its image's entry point
        out["TransferExecutable"] = "false"
    if ad.get("JobUniverse") != JAVA_UNIVERSE:
        return out
    if vm_args is not None:
        out["JavaVMArguments" if vm_args_new else "JavaVMArgs"] = quote(vm_args)
    full = posixpath.join(iwd, executable) if iwd else executable
    if _unquote(ad.get("ShouldTransferFiles", '"IF_NEEDED"')).upper() == "NO":
        out["Cmd"] = quote(full)
        return out
    out["Cmd"] = quote("java")
    out["TransferExecutable"] = "false"
    listed = ad.get("TransferInput")
    if listed:  # only a job that lists input files gets the class and jars added
        jars = [j.strip() for j in (jar_files or "").split(",") if j.strip()]
        out["TransferInput"] = quote(",".join([_unquote(listed), full, *jars]))
    return out
