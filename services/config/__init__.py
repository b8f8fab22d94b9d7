"""HTCondor's configuration language: knobs, macros, defaults and startd slot types.

Public API (everything else in this package is private):

- ``parse_config(text, source="<inline>", base=None) -> ConfigDict`` and
  ``load_config(path, base=None) -> ConfigDict`` (which also reads LOCAL_CONFIG_DIR and
  LOCAL_CONFIG_FILE, see ``read_local_config``).
- ``ConfigDict``: case-insensitive, ordered knobs with their source file and line, expanded
  lazily on lookup; typed accessors ``get_str``, ``get_int``, ``get_float``, ``get_bool``,
  ``get_list``, ``get_expr``, ``get_size_mb``, ``get_size_kb``; ``unknown_knobs()``.
- ``DEFAULTS``: the knob defaults that lookups fall back to.
- ``slot_types(cfg, total_cpus, total_memory_mb, total_disk_kb) -> list[SlotTypeSpec]``.
- ``ConfigError``: every bad configuration, as ``file:line: KNOB = "value": problem``.
- ``expand_macros``, ``parse_size``, ``MIB``, ``KIB``: shared with the submit language.
"""

from .configdict import ConfigDict, Knob
from .defaults import DEFAULTS
from .errors import ConfigError, MacroError
from .macros import expand as expand_macros
from .parser import load_config, parse_config, read_local_config
from .slots import SlotTypeSpec, slot_types
from .units import KIB, MIB, parse_size

__all__ = [
    "DEFAULTS",
    "KIB",
    "MIB",
    "ConfigDict",
    "ConfigError",
    "Knob",
    "MacroError",
    "SlotTypeSpec",
    "expand_macros",
    "load_config",
    "parse_config",
    "parse_size",
    "read_local_config",
    "slot_types",
]
