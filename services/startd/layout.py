"""A machine's resources and slot layout from its configuration: the one view of a
machine that the startd builds and the pool spec checks before anything starts.

A mock machine "detects" 1 cpu, 2048 MB of memory per cpu and 16 GiB of disk per cpu;
NUM_CPUS, MEMORY (less RESERVED_MEMORY) and DISK set in the config describe real ones
(HTCondor's startd detects the host's; here the host is simulated). Knobs are read as the
startd reads them (``STARTD.``-prefixed settings win), and the slot types are
:func:`mockpool.config.slot_types` over these totals, which refuses a layout that does not
fit with a ConfigError naming the knob.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..config import ConfigDict, slot_types
from ..config.resources import MachineResource, machine_resources
from ..config.slots import SlotTypeSpec

__all__ = [
    "DETECTED_CPUS",
    "DISK_KB_PER_CPU",
    "MEMORY_MB_PER_CPU",
    "MachineLayout",
    "machine_layout",
]

# What a mock machine "detects" when NUM_CPUS, MEMORY and DISK are not set.
DETECTED_CPUS = 1
MEMORY_MB_PER_CPU = 2048
DISK_KB_PER_CPU = 16 * 1024 * 1024


@dataclass(frozen=True)
class MachineLayout:
    cpus: int
    memory: int  # MB, RESERVED_MEMORY taken off
    disk: int  # KB
    detected_memory: int  # MB
    detected_disk: int  # KB
    resources: tuple[MachineResource, ...]  # custom resources (GPUs, ...), in name order
    slot_types: tuple[SlotTypeSpec, ...]


def machine_layout(config: ConfigDict, name: str) -> MachineLayout:
    """The machine ``name`` that ``config`` describes (ConfigError if it cannot be built)."""
    cfg = config.for_subsystem("STARTD")
    detected = {
        "DETECTED_CPUS": DETECTED_CPUS,
        "DETECTED_CPUS_LIMIT": DETECTED_CPUS,
        "DETECTED_CORES": DETECTED_CPUS,
        "DETECTED_PHYSICAL_CPUS": DETECTED_CPUS,
    }
    cpus = cfg.with_predefined(detected).get_int("NUM_CPUS")
    # (NUM_CPUS below 1 is refused by slot_types, naming the line that set it)
    detected_memory, detected_disk = MEMORY_MB_PER_CPU * cpus, DISK_KB_PER_CPU * cpus
    full = cfg.with_predefined({**detected, "DETECTED_MEMORY": detected_memory})
    memory = full.get_size_mb("MEMORY", detected_memory) - full.get_size_mb("RESERVED_MEMORY")
    disk = full.get_size_kb("DISK", detected_disk)
    resources = tuple(machine_resources(cfg, name))
    specs = slot_types(
        cfg, DETECTED_CPUS, detected_memory, detected_disk, {r.name: r.count for r in resources}
    )
    return MachineLayout(
        cpus, memory, disk, detected_memory, detected_disk, resources, tuple(specs)
    )
