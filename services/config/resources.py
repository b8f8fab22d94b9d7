"""Custom machine resources: ``MACHINE_RESOURCE_<name>`` and a mock GPU inventory.

HTCondor's startd (condor_startd.V6/ResAttributes.cpp, "Configuring STARTD for custom
resources" in the manual) reads, for each resource name:

- ``MACHINE_RESOURCE_<name> = N``: N interchangeable units (a count);
- ``MACHINE_RESOURCE_<name> = id1, id2, ...``: one unit per listed id (an asset list);
- ``MACHINE_RESOURCE_INVENTORY_<name> = <command>``: a command that prints
  ``Detected<name> = "id1, id2"`` and properties. ``use FEATURE : GPUs`` sets this one for
  GPUs with condor_gpu_discovery.

A mock machine runs no commands. Its GPUs come from a mock inventory given by knobs:

- ``MOCK_GPUS``: how many GPUs (default 0; a machine without the GPUs feature or a
  ``MACHINE_RESOURCE_GPUs`` has none);
- ``MOCK_GPU_DEVICE_NAME``, ``MOCK_GPU_CAPABILITY``, ``MOCK_GPU_MEMORY_MB``,
  ``MOCK_GPU_DRIVER_VERSION``, ``MOCK_GPU_MAX_SUPPORTED_VERSION``: their properties.

The devices get condor_gpu_discovery-style ids, ``GPU-`` and 8 hex digits, fixed by the
machine's name and the device's index. An inventory command for any other resource is an
error, naming the knob.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

from .configdict import ConfigDict
from .errors import ConfigError

__all__ = ["GPU_PROPERTY_ATTRS", "MachineResource", "machine_resources"]

_KNOB = re.compile(r"MACHINE_RESOURCE_(?!INVENTORY_|NAMES\Z)([A-Za-z]\w*)\Z", re.IGNORECASE)
_INVENTORY = re.compile(r"MACHINE_RESOURCE_INVENTORY_([A-Za-z]\w*)\Z", re.IGNORECASE)
_ID = re.compile(r"[A-Za-z0-9_.:/-]+\Z")
_STANDARD = {"cpus", "memory", "disk", "swap"}

# (knob, GPU property, default) of the mock inventory; properties as condor_gpu_discovery
# -properties reports them
_GPU_PROPERTIES = (
    ("MOCK_GPU_DEVICE_NAME", "DeviceName", "NVIDIA A100-SXM4-40GB"),
    ("MOCK_GPU_CAPABILITY", "Capability", 8.0),
    ("MOCK_GPU_MEMORY_MB", "GlobalMemoryMb", 40536),
    ("MOCK_GPU_DRIVER_VERSION", "DriverVersion", 12.2),
    ("MOCK_GPU_MAX_SUPPORTED_VERSION", "MaxSupportedVersion", 12020),
)
GPU_PROPERTY_ATTRS = tuple(prop for _, prop, _ in _GPU_PROPERTIES)


@dataclass(frozen=True)
class MachineResource:
    """One custom resource of a machine: its units, named by id when it has ids."""

    name: str  # as configured: GPUs, Fpgas
    count: int
    ids: tuple[str, ...] = ()  # empty for a plain count
    # per-id properties (GPUs: DeviceName, Capability, ...), the same for every device
    properties: tuple[tuple[str, str | int | float], ...] = field(default=())


def _gpu_id(machine: str, index: int) -> str:
    digest = hashlib.sha256(f"{machine}/{index}".encode()).hexdigest()
    return f"GPU-{digest[:8]}"


def _mock_gpus(cfg: ConfigDict, machine: str, name: str) -> MachineResource:
    count = cfg.get_int("MOCK_GPUS", 0)
    if count < 0:
        knob = cfg.knob("MOCK_GPUS")
        raise ConfigError(f"{knob.where if knob else 'MOCK_GPUS'}: MOCK_GPUS = {count}: negative")
    props: list[tuple[str, str | int | float]] = []
    for knob, prop, default in _GPU_PROPERTIES:
        if isinstance(default, str):
            props.append((prop, cfg.get_str(knob, default).strip() or default))
        elif isinstance(default, int):
            props.append((prop, cfg.get_int(knob, default)))
        else:
            props.append((prop, cfg.get_float(knob, default)))
    ids = tuple(_gpu_id(machine, i) for i in range(count))
    return MachineResource(name, count, ids, tuple(props))


def machine_resources(cfg: ConfigDict, machine: str) -> list[MachineResource]:
    """The custom resources one machine's configuration gives it, in name order."""
    found: dict[str, MachineResource] = {}
    for knob in cfg.knobs():
        if m := _KNOB.match(knob.name):
            name = m.group(1)
            if name.lower() in _STANDARD:
                continue
            text = cfg.get_str(knob.name).strip()
            if not text:
                continue
            where = f"{knob.where}: {knob.name} = {text!r}"
            if re.fullmatch(r"-?\d+(?:\.\d*)?", text):
                value = float(text)
                if value < 0 or not value.is_integer():
                    raise ConfigError(f"{where}: expected a whole number of units or a list of ids")
                found[name.lower()] = MachineResource(name, int(value))
                continue
            ids = tuple(x for x in re.split(r"[\s,]+", text) if x)
            bad = [x for x in ids if not _ID.match(x)]
            if bad:
                raise ConfigError(f"{where}: {bad[0]!r} is not a resource id")
            if len(set(ids)) != len(ids):
                raise ConfigError(f"{where}: an id is listed twice")
            found[name.lower()] = MachineResource(name, len(ids), ids)
    for knob in cfg.knobs():
        m = _INVENTORY.match(knob.name)
        if m is None or m.group(1).lower() in found or not cfg.get_str(knob.name).strip():
            continue
        if m.group(1).lower() != "gpus":
            raise ConfigError(
                f"{knob.where}: {knob.name}: mockpool runs no inventory commands; give "
                f"MACHINE_RESOURCE_{m.group(1)} (a count or a list of ids)"
            )
        found["gpus"] = _mock_gpus(cfg, machine, m.group(1))
    return [found[k] for k in sorted(found)]
