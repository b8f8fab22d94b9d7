"""Errors of the configuration language."""

from __future__ import annotations


class ConfigError(ValueError):
    """A bad configuration: the message names the file, line, knob and problem."""


class MacroError(ValueError):
    """A macro that cannot be expanded (unterminated, cyclic, bad function call).

    Raised by :mod:`.macros` without a location; callers that know the file and line
    (``ConfigDict``, the submit parser) re-raise it with one. ``chain`` is the names being
    expanded where it arose, outermost first (the knob asked for, then the macros it read).
    """

    chain: tuple[str, ...] = ()
