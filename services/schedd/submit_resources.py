"""Resource requests in a job ad: RequestCpus, RequestMemory, RequestDisk (with
condor_submit's defaults), RequestGPUs and custom ``request_<res>`` resources, a grid
job's requests, and a GPU job's RequireGPUs and GPUsMin/Max* limits
(submit_utils.cpp SetRequestResources, SetRequestGpus).

A mixin of :class:`.submit._Submit`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ..classad import parse_expr
from ..classad.numbers import INT64_MAX
from ..classad.refs import references
from ..classad.tree import AttrRef, Binary, Cond, walk
from ..config import parse_size
from ..config.constexpr import evaluate_constant
from ..config.units import KIB, MIB
from .submit_values import OUT_OF_RANGE, fits, number_text

if TYPE_CHECKING:
    from .submit import _Submit

# condor_submit's defaults (param table), already in the job ad's units
DEFAULT_REQUEST_CPUS = 1
DEFAULT_REQUEST_MEMORY_MB = 128
DEFAULT_REQUEST_DISK_KB = 1024 * 1024  # MAX({1024, (0 + 1) * 1.25}) * 1024

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

_VERSION = re.compile(r"(\d+)(?:\.(\d+))?\Z")


def cuda_version(text: str) -> str | None:
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


def _and_operand(text: str) -> str:
    """``text`` as an operand of ``&&``: in parentheses when its top operator binds looser."""
    tree = parse_expr(text)
    if (isinstance(tree, Binary) and tree.op == "||") or isinstance(tree, Cond):
        return f"({text})"
    return text


class ResourceRequests:
    """Request<Res> attributes and GPU limits (mixed into ``_Submit``)."""

    def size(self: _Submit, found: tuple[str, int, str], unit: int, example: str) -> str | None:
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
            if not fits(value):
                raise self.bad(found, OUT_OF_RANGE)
            size = int(value)
        if size > INT64_MAX:
            raise self.bad(found, OUT_OF_RANGE)
        return str(size)

    def resources(self: _Submit, _: int) -> dict[str, str]:
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

    def grid_resources(self: _Submit) -> dict[str, str]:
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

    def gpu_limits(self: _Submit) -> dict[str, str]:
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

    def amount(self: _Submit, found: tuple[str, int, str], what: str) -> str:
        """A request written as a number (checked) or as an expression (kept as it is)."""
        try:
            value = evaluate_constant(found[2])
        except ValueError:
            return self.check_expr(found)
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise self.bad(found, f"expected {what}")
        if not fits(value):
            raise self.bad(found, OUT_OF_RANGE)
        return number_text(value)
