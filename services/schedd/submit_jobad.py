"""Building one job's ad from a submit description: the attribute groups in
condor_submit's order (each built once per queue statement unless it uses live
variables), the universe and container image, the executable and its arguments, java
jobs, file transfer, recorded names and folders, the Requirements, and ``+Attr`` /
``MY.Attr`` last.

A mixin of :class:`.submit._Submit`; the resource requests and the policy attributes
are built by :mod:`.submit_resources` and :mod:`.submit_policy`.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from .javajob import java_attrs
from .requirements import url_methods
from .submit_resources import cuda_version
from .submit_values import (
    BOOL_WORDS,
    OUT_OF_RANGE,
    fits,
    join_arguments,
    number_text,
    quote,
    sleep_duration,
    split_arguments,
)

if TYPE_CHECKING:
    from .submit import _Submit

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


def _image_kind(image: str) -> str:
    """The job attribute condor_submit sets for a container_image's kind."""
    image = image.strip()
    if image.startswith("docker:"):
        return "WantDockerImage"
    return "WantSIF" if image.endswith(".sif") else "WantSandboxImage"


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


class JobAdBuilder:
    """One job's ad, group by group (mixed into ``_Submit``)."""

    def job(self: _Submit, proc: int, queue_line: int) -> dict[str, str]:
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

    def section(
        self: _Submit, build: Callable[[int], dict[str, str]], queue_line: int
    ) -> dict[str, str]:
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

    def universe(self: _Submit, _: int) -> dict[str, str]:
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

    def transfer(self: _Submit, _: int) -> dict[str, str]:
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
                word = BOOL_WORDS.get(found[2].lower())
                if word is None:
                    raise self.bad(found, "expected True or False")
                attrs[attr] = "true" if word else "false"
        cuda = self.command("cuda_version")
        if cuda and cuda[2]:
            version = cuda_version(cuda[2])
            if version is None:
                raise self.bad(cuda, "must be of the form 'x' or 'x.y' (positive integers)")
            attrs["CUDAVersion"] = version
        methods = url_methods(attrs)
        if methods:
            attrs["WantTransferPluginMethods"] = quote(",".join(methods))
        return attrs

    def executable(self: _Submit, queue_line: int) -> dict[str, str]:
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
            if not fits(seconds) and args is not None:
                raise self.bad(args, f"{OUT_OF_RANGE}: sleep {words[0]}")
            attrs["MockDuration"] = number_text(seconds)
        return attrs

    def java(self: _Submit, queue_line: int) -> dict[str, str]:
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

    def arguments(self: _Submit, found: tuple[str, int, str]) -> tuple[list[str], bool]:
        try:
            return split_arguments(found[2])
        except ValueError as e:
            raise self.bad(found, str(e)) from None

    def requirements(self: _Submit, ad: dict[str, str]) -> str:
        user = self.command("requirements")
        text = self.check_expr(user) if user and user[2] else None
        try:
            return self.job_requirements(ad, text)
        except ValueError as e:
            raise self.bad(user, str(e)) if user else self.fail(str(e)) from None

    def records(self: _Submit, _: int) -> dict[str, str]:
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

    def forced_attributes(self: _Submit, _: int) -> dict[str, str]:
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
