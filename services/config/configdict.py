"""``ConfigDict``: knobs as written, expanded on lookup, read through typed accessors."""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from . import macros, typed
from .constexpr import evaluate_constant
from .defaults import DEFAULTS, is_known
from .errors import ConfigError, MacroError
from .units import KIB, MIB, parse_size

T = TypeVar("T")

_MISSING: Any = object()
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.]*\Z")
_INT = re.compile(r"[+-]?\d+\Z")
_FLOAT = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\Z")
_LIST_SEP = re.compile(r"[\s,]+")
_BUILT_IN = ("<defaults>", "<predefined>")  # sources of knobs no configuration file set


@dataclass(frozen=True)
class Knob:
    """One definition: the name as written, its raw text and where it came from."""

    name: str
    raw: str
    source: str
    line: int = 0

    @property
    def where(self) -> str:
        return f"{self.source}:{self.line}" if self.line else self.source


_parse_int = typed.parse_int
_parse_float = typed.parse_float
_parse_bool = typed.parse_bool  # yes/no/t/f are not booleans there: only if lines take them


def _parse_if_bool(text: str) -> bool:
    """An ``if`` condition: also HTCondor's "crufty" ``yes``/``no``/``t``/``f``."""
    word = text.strip().lower()
    if word in ("yes", "t"):
        return True
    if word in ("no", "f"):
        return False
    return _parse_bool(word)


def _size_parser(unit: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        size = parse_size(text, unit)
        if size is not None:
            return size
        value = evaluate_constant(text)
        if isinstance(value, bool) or not 0 <= value < math.inf:  # nan, inf: no size
            raise ValueError("not a size")
        return int(value)

    return parse


class ConfigDict(Mapping[str, str]):
    """Configuration knobs: case-insensitive, in definition order, expanded lazily.

    ``cfg[name]`` is the expanded value of a knob the configuration set (``KeyError``
    otherwise); iteration gives the names in order of first definition, spelled as last
    written. ``lookup`` and the typed accessors also see the predefined macros and the
    defaults table, in that order after the knobs. With ``subsystem`` set (see
    :meth:`for_subsystem`), ``SUBSYS.NAME`` wins over ``NAME``, in lookups and inside
    macros, as in HTCondor.
    """

    def __init__(
        self,
        defaults: Mapping[str, str] | None = None,
        *,
        env: Mapping[str, str] | None = None,
        seed: int = 0,
    ) -> None:
        table = DEFAULTS if defaults is None else defaults
        self.seed = seed  # for $RANDOM_INTEGER and $RANDOM_CHOICE
        self._knobs: dict[str, Knob] = {}
        self._defaults = {k.lower(): Knob(k, v, "<defaults>") for k, v in table.items()}
        self._predefined: dict[str, Knob] = {}
        self._env = env
        self.subsystem: str | None = None
        self.warnings: list[str] = []
        # Values are read far more often than knobs are set (a daemon reads its knobs
        # on every timer): each view memoizes ``_value`` per name, valid while the
        # generation of the knobs it shares is unchanged (``set`` bumps it).
        self._generation = [0]
        self._memo: dict[str, tuple[int, tuple[Knob, str] | None]] = {}

    # --- views and copies -------------------------------------------------------------

    def _view(self) -> ConfigDict:
        view = object.__new__(ConfigDict)
        view.__dict__.update(self.__dict__)
        view._memo = {}
        return view

    def copy(self) -> ConfigDict:
        """An independent copy (later ``set`` calls do not affect each other)."""
        other = self._view()
        other._knobs = dict(self._knobs)
        other._generation = [0]
        other.warnings = list(self.warnings)
        return other

    def for_subsystem(self, subsystem: str | None) -> ConfigDict:
        """A view that reads ``SUBSYSTEM.NAME`` before ``NAME`` (knobs are shared)."""
        view = self._view()
        view.subsystem = subsystem.lower() if subsystem else None
        return view

    def with_predefined(self, values: Mapping[str, object]) -> ConfigDict:
        """A view with extra predefined macros (``DETECTED_CPUS`` ...); knobs are shared."""
        view = self._view()
        view._predefined = dict(self._predefined)
        for name, value in values.items():
            view._predefined[name.lower()] = Knob(name, str(value), "<predefined>")
        return view

    # --- definitions ------------------------------------------------------------------

    def set(self, name: str, raw: str, source: str = "<set>", line: int = 0) -> Knob:
        """Defines ``name``; a later definition wins, and ``$(name)`` in ``raw`` means
        the previous value (HTCondor expands a self-reference at definition time)."""
        where = f"{source}:{line}" if line else source
        if not _NAME.match(name):
            raise ConfigError(f"{where}: {name!r} is not a valid knob name")
        raw = str(raw).strip()
        key = name.lower()
        try:
            previous = self._knobs.get(key)
            prefix, _, base = key.rpartition(".")
            # in SUBSYS.NAME, $(NAME) is also a self-reference (htcondor 25 agrees); a
            # submit file's MY.Attr is an attribute, not a subsystem override
            plain = self._knobs.get(base) or self._predefined.get(base) or self._defaults.get(base)
            if prefix and prefix != "my":
                raw = macros.substitute_self(raw, base, plain.raw if plain else None)
            else:
                previous = previous or plain
            raw = macros.substitute_self(raw, name, previous.raw if previous else None)
        except MacroError as e:
            raise ConfigError(f"{where}: {name} = {raw}: {e}") from None
        knob = Knob(name, raw, source, line)
        self._knobs[key] = knob  # a redefinition keeps the knob's place in the order
        self._generation[0] += 1
        return knob

    def update(self, values: Mapping[str, object], source: str = "<set>") -> None:
        """Defines several knobs (a pool spec's ``[config]`` table); values become text."""
        for name, value in values.items():
            self.set(name, str(value), source)

    # --- lookups ----------------------------------------------------------------------

    def knob(self, name: str) -> Knob | None:
        """The definition the configuration made for ``name`` (subsystem first), if any."""
        key = name.lower()
        if self.subsystem and (k := self._knobs.get(f"{self.subsystem}.{key}")):
            return k
        return self._knobs.get(key)

    def _raw(self, name: str) -> Knob | None:
        key = name.lower()
        return self.knob(name) or self._predefined.get(key) or self._defaults.get(key)

    def raw(self, name: str) -> str | None:
        """The unexpanded text ``name`` resolves to (knob, predefined macro or default)."""
        k = self._raw(name)
        return k.raw if k else None

    def is_defined(self, name: str) -> bool:
        return self._raw(name) is not None

    @property
    def _environ(self) -> Mapping[str, str]:
        return os.environ if self._env is None else self._env

    def expand(self, text: str, where: str = "<text>") -> str:
        """Expands the macros in ``text`` against this configuration."""
        try:
            return macros.expand(
                text, self.raw, env=self._environ, seed=self.seed, unset_env="UNDEFINED"
            )
        except MacroError as e:
            raise ConfigError(f"{where}: {e}") from None

    def _expanded(self, knob: Knob) -> str:
        try:
            return macros.expand(
                knob.raw,
                self.raw,
                env=self._environ,
                name=knob.name,
                seed=self.seed,
                unset_env="UNDEFINED",
            )
        except MacroError as e:
            name, where = knob.name, knob.where
            if knob.source in _BUILT_IN:  # blame the knob the user set that it reads
                user = next((k for n in reversed(e.chain) if (k := self.knob(n))), None)
                if user is not None:
                    name, where = f"{user.name} (read by {knob.name})", user.where
            raise ConfigError(f"{where}: {name}: {e}") from None

    def lookup(self, name: str) -> str | None:
        """The expanded value of ``name``, or None when nothing defines it."""
        k = self._raw(name)
        return self._expanded(k) if k else None

    def __getitem__(self, name: str) -> str:
        k = self.knob(name)
        if k is None:
            raise KeyError(name)
        return self._expanded(k)

    def __iter__(self) -> Iterator[str]:
        return (k.name for k in self._knobs.values())

    def __len__(self) -> int:
        return len(self._knobs)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.knob(name) is not None

    def knobs(self) -> list[Knob]:
        """Every definition, in order, with its source and line."""
        return list(self._knobs.values())

    def unknown_knobs(self) -> list[str]:
        """Knobs the configuration sets that mockpool does not read (kept, not used)."""
        return [k.name for k in self._knobs.values() if not is_known(k.name)]

    # --- typed accessors --------------------------------------------------------------

    def _value(self, name: str) -> tuple[Knob, str] | None:
        """The first non-empty value of knob, predefined macro, default (HTCondor treats
        an empty value as unset)."""
        key = name.lower()
        generation = self._generation[0]
        memo = self._memo.get(key)
        if memo is not None and memo[0] == generation:
            return memo[1]
        found = None
        for k in (self.knob(name), self._predefined.get(key), self._defaults.get(key)):
            if k is not None and (text := self._expanded(k).strip()):
                found = k, text
                break
        self._memo[key] = (generation, found)
        return found

    def _typed(self, name: str, default: Any, parse: Callable[[str], T], what: str) -> T:
        found = self._value(name)
        if found is None:
            if default is _MISSING:
                raise ConfigError(f"{name} is not set and has no default")
            return default
        knob, text = found
        try:
            return parse(text)
        except typed.Undefined:
            # HTCondor logs "is undefined, using default value" and goes on with the default
            fallback = self._defaults.get(name.lower())
            if knob.source not in _BUILT_IN and fallback is not None:
                try:
                    return parse(self._expanded(fallback))
                except ValueError:
                    pass
            if default is not _MISSING:
                return default
            raise ConfigError(
                f'{knob.where}: {knob.name} = "{text}" is undefined and has no default'
            ) from None
        except ValueError:
            user = self._user_knob_in(knob) if knob.source in _BUILT_IN else None
            if user is not None:  # a default made of the user's knob: the user's is wrong
                raise ConfigError(
                    f'{user.where}: {user.name} = "{user.raw}" (read by {knob.name} = '
                    f'"{text}"): expected {what}'
                ) from None
            raise ConfigError(f'{knob.where}: {knob.name} = "{text}": expected {what}') from None

    def blame(self, name: str) -> Knob | None:
        """The knob the configuration set that gives ``name`` its value: ``name``'s own,
        else the first one its default (or predefined macro) reads; None if neither."""
        knob = self.knob(name)
        if knob is not None:
            return knob
        raw = self._raw(name)
        return self._user_knob_in(raw) if raw is not None else None

    def _user_knob_in(self, knob: Knob) -> Knob | None:
        """The first knob the configuration set that a default's value reads, at any depth."""
        seen: set[str] = set()
        todo = [knob]
        while todo:
            for name in macros.referenced_names(todo.pop(0).raw):
                if name.lower() in seen:
                    continue
                seen.add(name.lower())
                if (user := self.knob(name)) is not None:
                    return user
                if (inner := self._raw(name)) is not None:
                    todo.append(inner)
        return None

    def get_str(self, name: str, default: str = "") -> str:
        found = self._value(name)
        return found[1] if found else default

    def get_int(self, name: str, default: Any = _MISSING) -> int:
        return self._typed(name, default, _parse_int, "an integer")

    def get_float(self, name: str, default: Any = _MISSING) -> float:
        return self._typed(name, default, _parse_float, "a number")

    def get_bool(self, name: str, default: Any = _MISSING) -> bool:
        return self._typed(name, default, _parse_bool, "a boolean (True or False)")

    def get_list(self, name: str, default: list[str] | None = None) -> list[str]:
        """Items separated by commas and/or whitespace."""
        found = self._value(name)
        if found is None:
            return list(default or [])
        return [item for item in _LIST_SEP.split(found[1]) if item]

    def get_size_mb(self, name: str, default: Any = _MISSING) -> int:
        """A memory size in MiB: ``4096``, ``4G``, ``4096 MB``, ``512K`` (rounded up)."""
        return self._typed(name, default, _size_parser(MIB), "a size in MB such as 4096 or 4G")

    def get_size_kb(self, name: str, default: Any = _MISSING) -> int:
        """A disk size in KiB: ``1048576``, ``1G``, ``100M`` (rounded up)."""
        return self._typed(name, default, _size_parser(KIB), "a size in KB such as 1048576 or 1G")

    def get_expr(
        self,
        name: str,
        default: str = "",
        validate: Callable[[str], object] | None = None,
    ) -> str:
        """The expression text of ``name``; ``validate`` (e.g. ``classad.parse_expr``) may
        reject it by raising, which becomes a ``ConfigError`` naming the knob."""
        found = self._value(name)
        if found is None:
            return default
        knob, text = found
        if validate is not None:
            try:
                validate(text)
            except Exception as e:  # the validator's own error type is not known here
                raise ConfigError(f'{knob.where}: {knob.name} = "{text}": {e}') from None
        return text

    def __repr__(self) -> str:
        return f"<ConfigDict {len(self._knobs)} knobs>"
