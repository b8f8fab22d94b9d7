"""Reading HTCondor configuration text into a ``ConfigDict``.

Supported (HTCondor manual, "Introduction to Configuration"): ``NAME = value`` with or
without spaces, case-insensitive names with an optional ``SUBSYS.`` prefix, continuation
lines, ``#`` comments, ``[section]`` lines (ignored), multi-line values ``NAME @=tag`` ...
``@tag``, ``if``/``elif``/``else``/``endif`` on ``defined NAME``, ``version <op> x.y[.z]``,
``true``/``false``/``yes``/``no``/``1``/``0`` or ``$(NAME)``, ``include [ifexist] : file``,
``error : text``, ``warning : text``, and metaknobs ``use CATEGORY : name[(args)][, ...]``
for HTCondor's ROLE, FEATURE, POLICY and SECURITY templates (:mod:`.metaknobs`; SECURITY
ones set their ALLOW_*/SEC_* knobs, which mockpool keeps but does not use, with a note in
``ConfigDict.warnings``). A template's knobs carry the file and line of its ``use``. A
``use`` of a template HTCondor does not have, command includes (``include : cmd |``,
``include command``) and ``if`` conditions beyond those raise ``ConfigError``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from . import metaknobs
from .conditions import Conditions, evaluate_condition
from .configdict import ConfigDict
from .errors import ConfigError, MacroError
from .lines import LineReader

_ASSIGN = re.compile(r"([A-Za-z0-9_][A-Za-z0-9_.]*)\s*=(.*)\Z", re.DOTALL)
# NAME += value, NAME +,= value, NAME +&&= value (config.cpp: CONFIG_PLUS_SEP_CHARSET)
_PLUS = re.compile(r"([A-Za-z0-9_][A-Za-z0-9_.]*)\s+\+([,;|&*]?)(\2?)=(.*)\Z", re.DOTALL)
_MULTILINE = re.compile(r"([A-Za-z0-9_][A-Za-z0-9_.]*)\s*@=\s*(\S*)\s*\Z")
_DIRECTIVE = re.compile(
    r"(@?include|use|error|warning|if|elif|else|endif)(?![\w.])(?!\s*=)\s*(.*)\Z",
    re.IGNORECASE | re.DOTALL,
)
_USE = re.compile(r"(\w+)\s*(?:\((.*)\))?\s*\Z", re.DOTALL)
MAX_INCLUDE_DEPTH = 10


class _Parser:
    def __init__(self, cfg: ConfigDict, source: str, depth: int, at: int = 0) -> None:
        self.cfg = cfg
        self.source = source
        self.depth = depth
        self.at = at  # inside a metaknob: the line of its ``use``, which every knob carries
        self.line = 0
        self.conds = Conditions()

    def fail(self, problem: str) -> ConfigError:
        return ConfigError(f"{self.source}:{self.line}: {problem}")

    @property
    def active(self) -> bool:
        return self.conds.active

    def run(self, text: str) -> None:
        reader = LineReader(text)
        for self.line, line in reader:
            self.line = self.at or self.line
            if m := _DIRECTIVE.match(line):
                self.directive(m.group(1).lower(), m.group(2).strip())
            elif not self.active:
                continue
            elif m := _MULTILINE.match(line):
                self.cfg.set(m.group(1), self.multiline(reader, m.group(2)), self.source, self.line)
            elif m := _PLUS.match(line):
                self.cfg.set(
                    m.group(1),
                    self.plus(m.group(1), m.group(2), m.group(3), m.group(4)),
                    self.source,
                    self.line,
                )
            elif m := _ASSIGN.match(line):
                self.cfg.set(m.group(1), m.group(2), self.source, self.line)
            elif line.startswith("["):
                continue  # "[Section]" lines without an operator are ignored, as in HTCondor
            else:
                raise self.fail(f"cannot parse {line[:60]!r}: expected NAME = value")
        try:
            self.conds.close()
        except ValueError as e:
            raise self.fail(str(e)) from None

    def plus(self, name: str, sep: str, double: str, rhs: str) -> str:
        """``NAME +<sep>= rhs``: the current raw value, the separator and ``rhs`` (a space
        alone, ``sep`` alone, or `` sepsep `` when doubled); just ``rhs`` when unset or empty."""
        current = self.cfg.raw(name)
        rhs = rhs.strip()
        if not current:
            return rhs
        joint = f" {sep}{sep} " if double else (sep or " ")
        return current + joint + rhs

    def multiline(self, reader: LineReader, tag: str) -> str:
        start, lines = self.line, []
        while (raw := reader.raw_line()) is not None:
            if raw[1].strip() == "@" + tag:
                return "\n".join(lines)
            lines.append(raw[1].strip())
        self.line = start
        raise self.fail(f"multi-line value without its closing '@{tag}'")

    def directive(self, word: str, rest: str) -> None:
        if word in ("if", "elif", "else", "endif"):
            self.conditional(word, rest)
        elif not self.active:
            return
        elif word in ("include", "@include"):
            self.include(rest)
        elif word == "use":
            self.use(rest)
        else:
            message = rest[1:].strip() if rest.startswith(":") else rest
            if word == "error":
                raise self.fail(f"error: {message}")
            self.cfg.warnings.append(f"{self.source}:{self.line}: warning: {message}")

    def conditional(self, word: str, rest: str) -> None:
        try:
            self.conds.step(word, rest, self.condition)
        except ValueError as e:
            raise self.fail(str(e)) from None

    def condition(self, text: str) -> bool:
        def expand(t: str) -> str:
            try:
                return self.cfg.expand(t, f"{self.source}:{self.line}")
            except ConfigError as e:
                raise self.fail(str(e)) from None

        return evaluate_condition(text, self.cfg.is_defined, expand)

    def include(self, rest: str) -> None:
        options, colon, target = rest.partition(":")
        opts = options.lower().split()
        target = target.strip()
        if not colon or target.endswith("|") or "command" in opts or "into" in opts:
            raise self.fail("only 'include [ifexist] : <file>' is supported (not commands)")
        if self.depth >= MAX_INCLUDE_DEPTH:
            raise self.fail("includes nested too deeply")
        try:
            target = self.cfg.expand(target, f"{self.source}:{self.line}")
        except ConfigError as e:
            raise self.fail(str(e)) from None
        path = Path(target)
        if not path.is_absolute() and self.source not in ("<inline>", ""):
            path = Path(os.path.dirname(self.source) or ".") / path
        try:
            if not path.exists() and "ifexist" in opts:
                return
            text = path.read_text()
        except (OSError, ValueError) as e:  # ValueError: a NUL in the name
            raise self.fail(
                f"cannot include {target!r}: {getattr(e, 'strerror', None) or e}"
            ) from None
        _Parser(self.cfg, str(path), self.depth + 1).run(text)

    def use(self, rest: str) -> None:
        category, colon, items = rest.partition(":")
        category = category.strip()
        if not colon or not category or not items.strip():
            raise self.fail(f"cannot parse 'use {rest}': expected use CATEGORY : template")
        for item in _split_items(items):
            m = _USE.match(item)
            if not m:
                raise self.fail(
                    f"cannot parse 'use {category} : {item}': expected template[(args)]"
                )
            self.use_one(category, m.group(1), m.group(2) or "")

    def use_one(self, category: str, name: str, args: str) -> None:
        body = metaknobs.template(category, name)
        if body is None:
            known = (
                ", ".join(metaknobs.names(category))
                or "none: use ROLE, FEATURE, POLICY or SECURITY"
            )
            raise self.fail(
                f"use {category} : {name}: HTCondor has no such template (known: {known})"
            )
        if self.depth >= MAX_INCLUDE_DEPTH:
            raise self.fail(f"use {category} : {name}: metaknobs nested too deeply")
        if category.upper() == "SECURITY":
            self.cfg.warnings.append(
                f"{self.source}:{self.line}: note: use SECURITY : {name} sets HTCondor's ALLOW_* "
                "and SEC_* knobs, which mockpool keeps but does not use (its daemons check pool tokens)"
            )
        text = metaknobs.expand_args(body, args)
        inner = _Parser(self.cfg, self.source, self.depth + 1, at=self.line)
        try:
            inner.run(text)
        except ConfigError as e:
            problem = str(e).split(": ", 1)[1] if str(e).startswith(f"{self.source}:") else str(e)
            raise self.fail(f"use {category} : {name}: {problem}") from None


def _split_items(text: str) -> list[str]:
    """``A(1, 2), B`` -> ``["A(1, 2)", "B"]``: commas outside parentheses separate templates."""
    items, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "," and depth == 0:
            items.append(text[start:i].strip())
            start = i + 1
    items.append(text[start:].strip())
    return [i for i in items if i]


def parse_config(text: str, source: str = "<inline>", base: ConfigDict | None = None) -> ConfigDict:
    """Parses configuration ``text``; definitions go on top of a copy of ``base``.

    Errors raise ``ConfigError`` as ``source:line: problem``.
    """
    cfg = base.copy() if base is not None else ConfigDict()
    try:
        _Parser(cfg, source, 0).run(text)
    except MacroError as e:  # defensive: ConfigDict converts these itself
        raise ConfigError(f"{source}: {e}") from None
    except RecursionError:  # defensive: nesting is bounded where it can occur
        raise ConfigError(f"{source}: input nested too deeply") from None
    return cfg


def _read(path: str | os.PathLike[str], base: ConfigDict | None) -> ConfigDict:
    try:
        text = Path(path).read_text()
    except (OSError, ValueError) as e:  # ValueError: a NUL in the name, or not UTF-8
        raise ConfigError(f"{path}: cannot read: {getattr(e, 'strerror', None) or e}") from None
    return parse_config(text, os.fspath(path), base)


def load_config(path: str | os.PathLike[str], base: ConfigDict | None = None) -> ConfigDict:
    """Reads a configuration file and then its local files, as HTCondor reads the top
    file (see :func:`read_local_config`); ``source`` in messages is ``path`` as given."""
    cfg = _read(path, base)
    return read_local_config(cfg, Path(path).parent, before=base)


_EXCLUDE = "LOCAL_CONFIG_DIR_EXCLUDE_REGEXP"


def read_local_config(
    cfg: ConfigDict, folder: str | os.PathLike[str], before: ConfigDict | None = None
) -> ConfigDict:
    """The files that ``LOCAL_CONFIG_DIR`` and ``LOCAL_CONFIG_FILE`` name, read on top of
    ``cfg`` as HTCondor does after its top config file (condor_config.cpp): every file of
    each LOCAL_CONFIG_DIR folder in name order (skipping names LOCAL_CONFIG_DIR_EXCLUDE_REGEXP
    matches), then each LOCAL_CONFIG_FILE in turn (a file that changes the list switches to
    the new list, less the files done), then LOCAL_CONFIG_DIR again if that changed. Relative
    paths are taken from ``folder``. Knobs already set in ``before`` (an outer config) do not
    count as this file's own lists. A missing file or folder is an error, as with HTCondor's
    default REQUIRE_LOCAL_CONFIG_FILE = True; a command (``... |``) is refused."""

    def own(name: str) -> str:
        knob = cfg.knob(name)
        if knob is None or (before is not None and before.knob(name) == knob):
            return ""
        return cfg.expand(knob.raw, knob.where).strip()

    def where(name: str) -> str:
        knob = cfg.knob(name)
        return f"{knob.where}: {name}" if knob else name

    def resolve(item: str) -> Path:
        p = Path(item)
        return p if p.is_absolute() else Path(folder) / p

    def required(name: str, path: Path) -> None:
        if cfg.get_bool("REQUIRE_LOCAL_CONFIG_FILE", True) and not path.exists():
            raise ConfigError(f"{where(name)}: {path} does not exist")

    def directories(dirlist: str) -> None:
        nonlocal cfg
        pattern = cfg.get_str(_EXCLUDE, _EXCLUDE_DEFAULT)
        try:
            exclude = re.compile(pattern)
        except re.error as e:
            raise ConfigError(f"{where(_EXCLUDE)}: not a valid regular expression ({e})") from None
        for item in _LIST.split(dirlist):
            if not item:
                continue
            path = resolve(item)
            required("LOCAL_CONFIG_DIR", path)
            if not path.is_dir():
                continue
            for name in sorted(os.listdir(path)):
                file = path / name
                if not exclude.search(name) and not file.is_dir():
                    cfg = _read(file, cfg)

    def files(value: str) -> None:
        nonlocal cfg
        done: list[str] = []
        todo = [i for i in _LIST.split(value) if i]
        while todo:
            item = todo.pop(0)
            if item.endswith("|"):
                raise ConfigError(f"{where('LOCAL_CONFIG_FILE')}: commands are not run ({item})")
            path = resolve(item)
            required("LOCAL_CONFIG_FILE", path)
            if path.exists():
                cfg = _read(path, cfg)
            done.append(item)
            new = own("LOCAL_CONFIG_FILE")
            if new != value:
                value = new
                todo = [i for i in _LIST.split(new) if i and i not in done]

    dirlist = own("LOCAL_CONFIG_DIR")
    if dirlist:
        directories(dirlist)
    if local := own("LOCAL_CONFIG_FILE"):
        files(local)
    newdir = own("LOCAL_CONFIG_DIR")
    if newdir and newdir != dirlist:
        directories(newdir)
    return cfg


_LIST = re.compile(r"[\s,]+")
_EXCLUDE_DEFAULT = (
    r"^((\..*)|(.*\.pl)|(.*\.py)|(.*\.sh)|(.*~)|(#.*)|(.*\.rpmsave)|(.*\.rpmnew)"
    r"|(.*\.dpkg-old)|(.*\.dpkg-dist)|(.*\.cfsaved))$"
)
