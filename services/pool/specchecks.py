"""Checks a pool spec shares across its tables: the negotiator's and the schedd's knobs
and every knob of the table (before anything starts, named by file and line), and the
daemon names a pattern makes.
"""

from __future__ import annotations

import re
import string

from ..config import ConfigDict, ConfigError
from ..config.knobs import check_knobs as check_knob_table
from ..negotiator.cadence import Cadence, CadenceError
from ..negotiator.cycleinput import CycleConfig, NegotiatorInputError
from ..negotiator.groups import GroupConfig, GroupConfigError
from ..schedd.cadence import AdCadence, AdCadenceError
from ..schedd.schedd import ScheddKnobs
from .specmodel import SpecError


def check_knobs(config: ConfigDict, source: str) -> None:
    """The negotiator's and the schedd's knobs, checked before a pool starts so a bad one
    stops it there (SpecError with the knob's file and line, else ``source``)."""
    neg = config.for_subsystem("NEGOTIATOR")
    try:
        GroupConfig.from_config(neg)
        CycleConfig.from_config(neg)
        Cadence.from_config(neg)
        schedd = config.for_subsystem("SCHEDD")
        AdCadence.from_config(schedd, 0.0)
        ScheddKnobs.from_config(schedd)
    except (GroupConfigError, AdCadenceError) as e:
        raise SpecError(f"{knob_place(config, e.knob, source)}: {e}") from None
    except NegotiatorInputError as e:
        if e.knob is None:  # the message says where
            raise SpecError(placed(str(e), source)) from None
        raise SpecError(f"{knob_place(config, e.knob, source)}: {e}") from None
    except ConfigError as e:  # it names the knob's file and line
        raise SpecError(placed(str(e), source)) from None
    except CadenceError as e:  # "NEGOTIATOR_INTERVAL must be ...": the knob comes first
        raise SpecError(f"{knob_place(config, str(e).split(' ', 1)[0], source)}: {e}") from None
    try:  # then every knob of the table those daemons read (the startds': per group)
        check_knob_table(config, ("collector", "negotiator", "schedd"))
    except ConfigError as e:
        raise SpecError(placed(str(e), source)) from None


MAX_NAME = 255  # characters in a daemon's name


def format_names(pattern: str, count: int) -> tuple[str, ...]:
    """``pattern.format(n)`` for n from 1 to ``count``. ValueError (or IndexError, KeyError)
    for a bad pattern, and for one whose names could be huge: a field wider than 99
    characters or a width read from the number itself (``{0:{0}}``) would only exhaust
    memory."""
    if len(pattern) > MAX_NAME:
        raise ValueError(f"longer than {MAX_NAME} characters")
    for _, _, spec, _ in string.Formatter().parse(pattern):
        if spec and ("{" in spec or re.search(r"\d{3,}", spec)):
            raise ValueError(f"the field format {spec!r} is too wide")
    return tuple(pattern.format(n) for n in range(1, count + 1))


def knob_place(config: ConfigDict, name: str | None, fallback: str) -> str:
    """``file:line`` of the knob the configuration set that gives ``name`` its value."""
    knob = config.blame(name) if name else None
    return knob.where if knob is not None else fallback


_PLACE = re.compile(r"\S+?:\d+\b")


def placed(message: str, where: str) -> str:
    """``message`` as it is when it starts with its place (``file:line``), else after
    ``where`` (for checks that know the knob but not where it was set)."""
    return message if _PLACE.match(message) else f"{where}: {message}"
