"""Slot types of a startd: how NUM_CPUS, MEMORY and DISK are divided into slots.

The rules are HTCondor's startd (condor_startd.V6/slot_builder.cpp: ``countTypes``,
``buildSlotRequest``, ``buildCpuAttrs``; ResAttributes.cpp: ``AvailAttributes``) and the
manual ("Dividing System Resources in Multi-core Machines"):

- A type N counts only when ``NUM_SLOTS_TYPE_<N>`` is set and non-zero, for N from 1 to
  ``MAX_SLOT_TYPES``. ``SLOT_TYPE_<N>`` without it has no effect.
- With no such type, the machine is evenly divided by the default type 0: one
  partitionable slot when ``SLOT_TYPE_0_PARTITIONABLE`` (default True since HTCondor 23.0),
  else ``NUM_SLOTS`` static slots (default ``NUM_CPUS``).
- ``SLOT_TYPE_<N>`` is a fraction (``1/4``), a percentage (``25%``), or a list of
  ``resource=share`` items, where a share is a percentage, fraction, absolute amount
  (``cpus=2``, ``memory=4096`` or ``4G``, ``disk=10G``; disk in KB without a suffix) or
  ``auto``; a bare percentage in the list is the share of every resource not named. Items
  are separated by commas when there are commas, else by whitespace. Resource names match by
  any prefix of cpus, ram, memory, disk, swap or virtualmemory (``c``, ``mem``, ``d``).
- Percentages and fractions are of the machine total (truncated; at least 1 cpu, 1 MB and,
  for an explicit disk share, 1024 KB). Explicit amounts are taken first, slot by slot in
  type order; then every ``auto`` share of a resource is the remainder divided by the number
  of slots with an ``auto`` share of it (and an unspecified share is ``auto``).
- Asking for more than the machine has is a ``ConfigError`` here (HTCondor's startd makes
  what fits and reports the rest as broken), as is an ``auto`` share under 1 cpu, 1 MB or
  1 KB.

Custom machine resources (GPUs, ``MACHINE_RESOURCE_<name>``, see :mod:`.resources`) are
shared the same way, named exactly (``gpus=1``), with no minimum per slot; a percentage or
``auto`` of a resource the machine lacks is ignored and an amount is an error, as in
HTCondor.

Known differences: fractional CPUs are rounded down; swap is parsed and ignored; ``K``
for memory converts to MB (HTCondor ignores suffixes smaller than the unit); the
``min``/``minimal`` share and backfill slot types are not supported.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from .configdict import ConfigDict, Knob
from .errors import ConfigError

RESOURCES = ("cpus", "memory", "disk")
# Bounds on one machine, far past real hardware, short of numbers that would only exhaust
# memory (a consumption policy gives a partitionable slot a claim id per cpu).
MAX_SLOTS = 100_000
MAX_TOTALS = {"cpus": 100_000, "memory": 2**40, "disk": 2**50}  # MB of memory, KB of disk
_UNITS = {"cpus": "cpus", "memory": "MB of memory", "disk": "KB of disk"}
_NATIVE_BYTES = {"memory": 2**20, "disk": 2**10}
_SCALE = {"k": 1, "m": 2, "g": 3, "t": 4, "p": 5}
_AUTO = ("auto", 0.0)

_PERCENT = re.compile(r"(\d+(?:\.\d*)?|\.\d+)\s*%\Z")
_FRACTION = re.compile(r"(\d+(?:\.\d*)?)\s*/\s*(\d+(?:\.\d*)?)\Z")
_AMOUNT = re.compile(r"(\d+(?:\.\d*)?|\.\d+)\s*(?:([kKmMgGtTpP])[bB]?)?\Z")


@dataclass(frozen=True)
class SlotTypeSpec:
    """``count`` slots of type ``type_id``, each with these resources.

    ``type_id`` is the N of ``SLOT_TYPE_<N>``, or 0 for the default even division.
    """

    type_id: int
    count: int
    partitionable: bool
    cpus: int
    memory_mb: int
    disk_kb: int
    custom: tuple[tuple[str, int], ...] = ()  # (custom resource, units) per slot


def _share(text: str) -> tuple[str, float]:
    """("auto", 0), ("fraction", f) or ("amount:<suffix>", value); ValueError if bad."""
    word = text.strip()
    if word.lower() in ("auto", "automatic"):
        return _AUTO
    if m := _PERCENT.match(word):
        return "fraction", float(m.group(1)) / 100
    if m := _FRACTION.match(word):
        if float(m.group(2)) <= 0:
            raise ValueError(f"{word!r} divides by zero")
        return "fraction", float(m.group(1)) / float(m.group(2))
    if m := _AMOUNT.match(word):
        return f"amount:{(m.group(2) or '').lower()}", float(m.group(1))
    raise ValueError(f"{word!r} is not a percentage, fraction, amount or auto")


def _resource(name: str) -> str | None:
    """HTCondor matches any case-insensitive prefix of the standard resource names."""
    low = name.strip().lower()
    if not low:
        return None
    if "cpus".startswith(low):
        return "cpus"
    if "ram".startswith(low) or "memory".startswith(low):
        return "memory"
    if "swap".startswith(low) or "virtualmemory".startswith(low):
        return "swap"
    if "disk".startswith(low):
        return "disk"
    return None


def _items(text: str) -> list[str]:
    if "\n" in text:
        parts = text.split("\n")
    elif "," in text:
        parts = text.split(",")
    else:
        parts = text.split()
    return [p.strip() for p in parts if p.strip()]


def _amount(resource: str, kind: str, value: float, total: int, blanket: bool) -> int | None:
    """The amount of ``resource`` one slot asks for; None for auto."""
    if kind == "auto":
        return None
    if kind == "fraction":
        amount = int(value * total)
    else:
        suffix = kind.partition(":")[2]
        if resource == "cpus":
            if suffix:
                raise ValueError(f"cpus take no unit suffix ({suffix!r})")
            amount = int(value)
        elif suffix:
            amount = math.ceil(value * 1024 ** _SCALE[suffix] / _NATIVE_BYTES[resource])
        else:
            amount = math.ceil(value)
    floor = {"cpus": 1, "memory": 1, "disk": 0 if blanket else 1024}[resource]
    return max(amount, floor)


def _custom_amount(kind: str, value: float, total: int) -> int | None:
    """Units of a custom resource one slot asks for (no floor: a slot may have none)."""
    if kind == "auto":
        return None
    if kind == "fraction":
        return int(value * total)
    if kind.partition(":")[2]:
        raise ValueError(f"custom resources take no unit suffix ({kind.partition(':')[2]!r})")
    return int(value)


def _request(
    text: str, totals: dict[str, int], custom: dict[str, int] | None = None
) -> dict[str, int | None]:
    """Per-slot amounts of one slot type definition; None marks an auto share. ``custom``
    holds the machine's custom resources (lower-case name -> units), named exactly."""
    custom = custom or {}
    blanket = _AUTO
    named: dict[str, tuple[str, float]] = {}
    for item in _items(text):
        if "=" not in item:
            blanket = _share(item)
            if blanket[0].startswith("amount") or blanket[1] > 1:
                raise ValueError(
                    f"{item!r}: give a percentage (25%), a fraction (1/4), auto,"
                    " or resource=share items"
                )
            continue
        name, _, value = item.partition("=")
        # "gpus=1:constraint": constraints only matter for custom resources
        value = value.partition(":")[0]
        share = _share(value)
        if name.strip().lower() in custom:
            named[name.strip().lower()] = share
            continue
        resource = _resource(name)
        if resource is None:
            if share[0].startswith("amount") and share[1] > 0:
                raise ValueError(f"unknown resource {name.strip()!r}")
            continue  # a share of a resource this machine lacks is ignored, as in HTCondor
        if resource != "swap":
            named[resource] = share
    out = {r: _amount(r, *(named.get(r) or blanket), totals[r], r not in named) for r in RESOURCES}
    for r, total in custom.items():
        out[r] = _custom_amount(*(named.get(r) or blanket), total)
    return out


def slot_types(
    cfg: ConfigDict,
    total_cpus: int,
    total_memory_mb: int,
    total_disk_kb: int,
    custom: dict[str, int] | None = None,
) -> list[SlotTypeSpec]:
    """The slot types of a machine with these detected totals, as the startd builds them.

    NUM_CPUS, MEMORY (minus RESERVED_MEMORY) and DISK override the detected totals; NUM_CPUS
    may use ``$(DETECTED_CPUS)``, ``$(DETECTED_CPUS_LIMIT)`` and ``$(DETECTED_MEMORY)``.
    ``custom`` holds the machine's custom resources (name -> units): a slot type shares
    them as it shares cpus (``gpus=1``, a percentage, ``auto``; unnamed ones are auto),
    except that a slot may get none, and auto shares are the remainder divided evenly,
    rounded down.
    """
    names = {k.lower(): k for k in custom or {}}
    custom_totals = {k.lower(): v for k, v in (custom or {}).items()}
    cfg = cfg.with_predefined(
        {
            "DETECTED_CPUS": total_cpus,
            "DETECTED_CPUS_LIMIT": total_cpus,
            "DETECTED_CORES": total_cpus,
            "DETECTED_PHYSICAL_CPUS": total_cpus,
            "DETECTED_MEMORY": total_memory_mb,
        }
    )
    totals = {
        "cpus": cfg.get_int("NUM_CPUS"),
        "memory": cfg.get_size_mb("MEMORY", total_memory_mb) - cfg.get_size_mb("RESERVED_MEMORY"),
        "disk": cfg.get_size_kb("DISK", total_disk_kb),
    }
    for resource, total in totals.items():
        if total < (0 if resource == "disk" else 1) or total > MAX_TOTALS[resource]:
            knobs = ("NUM_CPUS",) if resource == "cpus" else ("DISK",)
            if resource == "memory":
                knobs = ("MEMORY", "RESERVED_MEMORY") if total < 1 else ("MEMORY",)
            raise ConfigError(
                f"{_where(cfg, *knobs)}: the machine has {total} {_UNITS[resource]}"
                + (f", more than the {MAX_TOTALS[resource]:,} mockpool models" if total > 0 else "")
            )

    # (type id, count, partitionable, definition text, knob for messages)
    layout: list[tuple[int, int, bool, str, Knob]] = []
    max_types = cfg.get_int("MAX_SLOT_TYPES")
    for knob in cfg.knobs():
        m = re.fullmatch(r"NUM_SLOTS_TYPE_(\d+)", knob.name, re.IGNORECASE)
        if m and int(m.group(1)) > max_types:
            raise ConfigError(
                f"{knob.where}: {knob.name}: type {m.group(1)} is beyond MAX_SLOT_TYPES ({max_types})"
            )
    for n in range(1, max_types + 1):
        count = cfg.get_int(f"NUM_SLOTS_TYPE_{n}", 0)
        if not 0 <= count <= MAX_SLOTS:
            raise ConfigError(
                f"{_where(cfg, f'NUM_SLOTS_TYPE_{n}')} = {count}: "
                + ("a negative number of slots" if count < 0 else f"more than {MAX_SLOTS:,} slots")
            )
        if count:
            name = f"SLOT_TYPE_{n}"
            # a type with no SLOT_TYPE_<N> is whole shares: its NUM_SLOTS_TYPE_<N> says how many
            knob = cfg.knob(name) or _knob(cfg, f"NUM_SLOTS_TYPE_{n}")
            partitionable = cfg.get_bool(f"SLOT_TYPE_{n}_PARTITIONABLE", False)
            layout.append((n, count, partitionable, cfg.get_str(name), knob))
    if not layout:
        partitionable = cfg.get_bool("SLOT_TYPE_0_PARTITIONABLE")
        count = cfg.get_int("NUM_SLOTS", 1 if partitionable else totals["cpus"])
        if count <= 0:
            return []
        # unset, NUM_SLOTS is one slot per cpu: NUM_CPUS says how many
        knob = _knob(cfg, "NUM_SLOTS", *(() if partitionable else ("NUM_CPUS",)))
        if count > MAX_SLOTS:
            raise ConfigError(f"{knob.where}: {knob.name}: more than {MAX_SLOTS:,} slots")
        layout.append((0, count, partitionable, "", knob))

    for type_id, *_ in layout:
        _check_num_claims(cfg, type_id)

    requests: list[dict[str, int | None]] = []
    for _, _, _, text, knob in layout:
        try:
            requests.append(_request(text, totals, custom_totals))
        except ValueError as e:
            raise ConfigError(f'{knob.where}: {knob.name} = "{text}": {e}') from None

    # explicit amounts first, then auto shares of what remains (buildCpuAttrs)
    remain = {**totals, **custom_totals}
    autos = dict.fromkeys((*RESOURCES, *custom_totals), 0)
    for (_, count, _, text, knob), request in zip(layout, requests):
        for r in (*RESOURCES, *custom_totals):
            if request[r] is None:
                autos[r] += count
                continue
            remain[r] -= count * request[r]
            if remain[r] < 0:
                have = {**totals, **custom_totals}[r]
                unit = _UNITS.get(r, names.get(r, r))
                raise ConfigError(
                    f'{knob.where}: {knob.name} = "{text}": the slot types ask for '
                    f"{have - remain[r]} {unit} but the machine has {have}"
                )
    share: dict[str, int] = {}
    for r in custom_totals:
        if autos[r]:
            share[r] = max(0, remain[r]) // autos[r]
    for r in RESOURCES:
        if not autos[r]:
            continue
        each = remain[r] / autos[r]
        if each < 1:
            knob = next(e[4] for e, q in zip(layout, requests) if q[r] is None)
            raise ConfigError(
                f"{knob.where}: {knob.name}: {autos[r]} slots share the remaining {remain[r]} "
                f"{_UNITS[r]}, less than 1 each"
            )
        share[r] = int(each + 0.1) if r == "cpus" else remain[r] // autos[r]

    specs = []
    for (type_id, count, partitionable, _, _), request in zip(layout, requests):
        amounts = {
            r: share[r] if request[r] is None else request[r] for r in (*RESOURCES, *custom_totals)
        }
        specs.append(
            SlotTypeSpec(
                type_id,
                count,
                partitionable,
                amounts["cpus"],
                amounts["memory"],
                amounts["disk"],
                tuple((names[r], amounts[r]) for r in custom_totals),
            )
        )
    return specs


def _check_num_claims(cfg: ConfigDict, type_id: int) -> None:
    """A partitionable slot with a consumption policy holds NUM_CLAIMS claim ids (the
    startd reads SLOT_TYPE_<N>_NUM_CLAIMS, else NUM_CLAIMS, and checks the rest): more
    than MAX_SLOTS is refused here, before the startd makes them."""
    for name in (f"SLOT_TYPE_{type_id}_NUM_CLAIMS", "NUM_CLAIMS"):
        knob = cfg.knob(name)
        if knob is None:
            continue
        text = cfg[knob.name].strip()
        if re.fullmatch(r"[+-]?\d+", text) and int(text) > MAX_SLOTS:
            raise ConfigError(f"{knob.where}: {knob.name} = {text}: more than {MAX_SLOTS:,} claims")
        return


def _knob(cfg: ConfigDict, *names: str) -> Knob:
    """The first of ``names`` the configuration set (or that a default of it reads), for
    messages; a stand-in without a place when it set none."""
    for name in names:
        if (knob := cfg.blame(name)) is not None:
            return knob
    return Knob(names[0], "", "<defaults>")


def _where(cfg: ConfigDict, *names: str) -> str:
    """``file:line: KNOB`` of the first of ``names`` the configuration set."""
    knob = _knob(cfg, *names)
    return f"{knob.where}: {knob.name}"
