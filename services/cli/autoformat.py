"""HTCondor's `-af`/`-autoformat`, `-format` and `-json` output over ClassAds: one print
mask shared by `q`, `status` and `history` (HTCondor's AttrListPrintMask,
src/condor_utils/ad_printmask.cpp, and CondorClassAdListWriter's JSON form).

Pure functions: ``take_format_args`` pulls the formatting arguments out of a command
line (they take a variable number of words and a ``-af:opts`` suffix argparse cannot
read), ``render`` prints ads through the mask, ``format_json`` prints ads as the tools'
``-json``. ``format_parser`` makes a subcommand parser that does the first for you and
leaves the mask in ``ns.printmask``."""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..classad import ERROR, UNDEFINED, ClassAd, ClassAdSyntaxError, evaluate, parse_expr
from ..classad.ad import to_expr
from ..classad.oldstrings import new_to_old
from ..classad.refs import references
from ..classad.textio import format_old_real
from ..classad.tree import AdExpr, AttrRef, Expr, ListExpr, Literal, Unary, unparse
from ..tooltime import TOOL_RNG, wall_now

# -- ClassAd text as HTCondor's printers write it ------------------------------------

# Outside string literals and quoted names: a real as the condor unparser writes it
# (%.15E), the meta-comparison operators, and a minus on a number, which the unparser
# writes " -2" (a unary operator) where HTCondor's parser has read one literal, -2.
_TOKENS = re.compile(
    r"\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'|(?:^| )-(?=\d)"
    r"|(?<![\w.])-?\d\.\d{15}E[+-]\d{2,3}(?![\w.])|=\?=|=!="
)


def _rewrite(text: str, real: bool, meta: bool) -> str:
    def sub(m: re.Match[str]) -> str:
        t = m.group(0)
        if t[0] in "\"'":
            return t
        if t in (" -", "-"):
            return "-"
        if t == "=?=":
            return "is" if meta else t
        if t == "=!=":
            return "isnt" if meta else t
        return format_old_real(float(t)) if real else t

    return _TOKENS.sub(sub, text)


def old_text(e: Expr) -> str:
    """An expression as HTCondor's old-syntax unparser writes it (condor_q -long, -af:r):
    reals as %.16G, lists `{ 1,2 }`, strings with only `"` escaped."""
    return new_to_old(_rewrite(unparse(e, condor=True), real=True, meta=False))


def value_text(v: Any, *, quote_strings: bool) -> str:
    """An evaluated value as `%v` (strings bare) or `%V` (strings quoted) prints it."""
    if isinstance(v, str) and not quote_strings:
        return v
    if v is UNDEFINED:
        return "undefined"
    if v is ERROR:
        return "error"
    return old_text(to_expr(v))


# -- printf conversions ----------------------------------------------------------------

_CONVERSION = re.compile(
    r"%(?P<flags>[-+ #0']*)(?P<width>\*|\d+)?(?:\.(?P<prec>\*|\d*))?"
    r"(?P<length>[hlLqjzt]*)(?P<letter>[A-Za-z%])"
)
_KINDS = {
    **dict.fromkeys("diouxX", "int"),
    **dict.fromkeys("eEfFgGaA", "float"),
    "c": "char",
    "C": "char",
    "s": "string",
    "S": "string",
    "v": "value",
    "V": "value",
    "r": "raw",
    "R": "raw",
}
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "f": "\f", "v": "\v"}


def collapse_escapes(text: str) -> str:
    r"""``\n``, ``\t``... in a -format string as HTCondor collapses them (the shell
    passes them as two characters)."""
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), text, flags=re.DOTALL)


@dataclass(frozen=True)
class Printf:
    """One printf format with at most one conversion (HTCondor reads only the first)."""

    text: str
    kind: str | None  # int, float, char, string, value, raw; None: printed as it is
    letter: str = ""
    python: str = ""  # the format with the conversion in Python's spelling

    @staticmethod
    def parse(text: str, where: str) -> Printf:
        convs = [m for m in _CONVERSION.finditer(text) if m.group("letter") != "%"]
        if not convs:
            return Printf(text, None)
        if len(convs) > 1:
            raise ValueError(f"{where}: {text!r} has {len(convs)} conversions; one is allowed")
        m = convs[0]
        letter = m.group("letter")
        kind = _KINDS.get(letter)
        if kind is None or "*" in (m.group("width") or "") + (m.group("prec") or ""):
            raise ValueError(f"{where}: %{letter} in {text!r} is not a conversion HTCondor prints")
        flags = m.group("flags").replace("'", "")
        spec = f"%{flags}{m.group('width') or ''}"
        if m.group("prec") is not None:
            spec += f".{m.group('prec') or 0}"
        py_letter = {"value": "s", "raw": "s", "string": "s", "char": "c"}.get(
            kind, "d" if letter in "iu" else letter
        )
        python = text[: m.start()] + spec + py_letter + text[m.end() :]
        try:
            python % (0 if kind in ("int", "char", "float") else "")
        except (TypeError, ValueError):
            raise ValueError(f"{where}: {text!r} is not a printf format") from None
        return Printf(text, kind, letter, python)


# -- the print mask ----------------------------------------------------------------------


@dataclass
class Column:
    attr: str  # an attribute name or an expression
    fmt: Printf | None  # None: the job id column (ClusterId.ProcId)
    heading: str | None = None
    label: str = ""  # `Name = ` of -af:l
    autowidth: bool = False


@dataclass
class PrintMask:
    """What -af and -format asked for: columns and the separators around them."""

    columns: list[Column] = field(default_factory=list)
    row_prefix: str = ""
    col_prefix: str = ""
    col_suffix: str = ""
    row_suffix: str = ""

    @property
    def attributes(self) -> list[str]:
        """Attribute names (lower case) the columns read: a projection a query may ask for."""
        names: list[str] = []
        for c in self.columns:
            refs = ["clusterid", "procid"] if c.fmt is None else _refs(c.attr)
            names += [n for n in refs if n not in names]
        return names

    def add_autoformat(self, options: str, attrs: Sequence[str], where: str = "-af") -> None:
        """HTCondor's parse_autoformat_args: options `,` `n` `g` `t` `l` `V` `r`/`o`
        `h` `j` (`T`/`Y`, time and date columns, are not supported)."""
        label = capv = raw = headings = jobid = False
        row_pre, col_pre, col_suf = "", " ", ""
        for ch in options:
            if ch == ",":
                col_suf = ","
            elif ch == "n":
                col_suf = "\n"
            elif ch == "g":
                col_pre, row_pre = "", "\n"
            elif ch == "t":
                col_pre = "\t"
            elif ch == "l":
                label = True
            elif ch == "V":
                capv = True
            elif ch in "ro":
                raw = True
            elif ch == "h":
                headings = True
            elif ch == "j":
                jobid = True
            elif ch in "TY":
                raise ValueError(
                    f"{where}:{options}: the :{ch} (time/date) option is not supported"
                )
        self.row_prefix, self.col_prefix, self.col_suffix = row_pre, col_pre, col_suf
        self.row_suffix = "\n"
        headings = headings or any(c.heading is not None for c in self.columns)
        if jobid:
            self.columns.append(
                Column(
                    "ClusterId",
                    None,
                    heading=" ID" if headings else None,
                    label="ID = " if label else "",
                    autowidth=headings,
                )
            )
        letter = "r" if raw else "V" if capv else "v"
        for attr in attrs:
            _check_expr(attr, where)
            heading = lbl = None
            if headings:
                heading = attr
            elif label:
                lbl = f"{attr} = "
            self.columns.append(
                Column(
                    attr,
                    Printf.parse("%" + letter, where),
                    heading=heading,
                    label=lbl or "",
                    autowidth=headings,
                )
            )

    def add_format(self, fmt: str, attr: str) -> None:
        """``-format FMT ATTR``: one printf conversion over one attribute or expression."""
        _check_expr(attr, "-format")
        self.columns.append(Column(attr, Printf.parse(collapse_escapes(fmt), "-format")))


def _check_expr(attr: str, where: str) -> None:
    try:
        parse_expr(attr)
    except ClassAdSyntaxError as e:
        raise ValueError(f"{where}: {attr!r} is not an attribute or expression: {e}") from None


def _refs(text: str) -> list[str]:
    """Attribute names (lower case) an expression reads: what a projection must fetch."""
    try:
        internal, external = references(parse_expr(text))
    except ClassAdSyntaxError:
        return []
    return sorted(internal | external)


def take_format_args(args: Sequence[str]) -> tuple[list[str], PrintMask | None]:
    """Remove ``-af[:opts] ATTR...``, ``-autoformat[:opts] ATTR...`` and ``-format FMT
    ATTR`` from a command line (an attribute list ends at the next word starting with
    ``-``, as HTCondor's tools read it). Returns the rest and the mask (None if none)."""
    rest: list[str] = []
    mask: PrintMask | None = None
    i = 0
    while i < len(args):
        a = args[i]
        m = re.fullmatch(r"--?(af|autoformat)(?::(.*))?", a, flags=re.DOTALL)
        if m:
            j = i + 1
            while j < len(args) and not args[j].startswith("-"):
                j += 1
            if j == i + 1:
                raise ValueError(f"{a}: needs at least one attribute or expression")
            mask = mask or PrintMask()
            mask.add_autoformat(m.group(2) or "", args[i + 1 : j], a)
            i = j
        elif re.fullmatch(r"--?format", a):
            if i + 2 >= len(args):
                raise ValueError(f"{a}: needs a format and an attribute (-format FMT ATTR)")
            mask = mask or PrintMask()
            mask.add_format(args[i + 1], args[i + 2])
            i += 3
        else:
            rest.append(a)
            i += 1
    return rest, mask


# -- rendering ---------------------------------------------------------------------------


def _eval(ad: ClassAd, attr: str, now: float | None) -> tuple[bool, Any]:
    """(in the ad as an attribute, its value): time() is ``now`` (the pool's date),
    else the wall clock, as HTCondor's tools read it."""
    at = wall_now(now)
    if ad.lookup(attr) is not None:
        return True, ad.eval(attr, now=at, rng=TOOL_RNG)
    return False, evaluate(attr, ad, now=at, rng=TOOL_RNG)


def _raw(ad: ClassAd, attr: str) -> str:
    e = ad.lookup(attr)
    if e is not None:
        return old_text(e)
    parsed = parse_expr(attr)
    return "undefined" if isinstance(parsed, AttrRef) else old_text(parsed)


def _number(v: Any) -> float | int | None:
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, (int, float)):
        return v
    return None


def cell(col: Column, ad: ClassAd, now: float | None = None) -> str:
    """One column's text for one ad (HTCondor's AttrListPrintMask::render + display);
    a value that does not suit its conversion prints nothing."""
    if col.fmt is None:
        at = wall_now(now)
        c, p = ad.eval("ClusterId", now=at, rng=TOOL_RNG), ad.eval("ProcId", now=at, rng=TOOL_RNG)
        if _number(c) is None or _number(p) is None:
            return col.label
        return f"{col.label}{int(c)}.{int(p)}"
    f = col.fmt
    if f.kind is None:
        return col.label + f.text
    text = _convert(f, ad, col.attr, now)
    return "" if text is None else col.label + text


def _convert(f: Printf, ad: ClassAd, attr: str, now: float | None) -> str | None:
    kind = f.kind
    if kind == "raw":
        return f.python % _raw(ad, attr)
    in_ad, v = _eval(ad, attr, now)
    if kind == "string":
        if isinstance(v, str):
            return f.python % v
        # %s over an attribute that is not a string unparses it (HTCondor's special case)
        return f.python % _raw(ad, attr) if in_ad else None
    if kind in ("int", "char"):
        n = _number(v)
        if n is None or (isinstance(n, float) and not math.isfinite(n)):
            return None
        return f.python % int(n)
    if kind == "float":
        n = _number(v)
        return None if n is None else f.python % float(n)
    return f.python % value_text(v, quote_strings=f.letter == "V")


def render(mask: PrintMask, ads: Iterable[ClassAd], *, now: float | None = None) -> str:
    """The ads through the mask: a heading line first when a column has one, autowidth
    columns padded (left-aligned) to their widest value or heading."""
    cols = mask.columns
    rows = [[cell(c, ad, now) for c in cols] for ad in ads]
    widths = [0] * len(cols)
    for i, c in enumerate(cols):
        if c.autowidth:
            widths[i] = max([len(c.heading or "")] + [len(r[i]) for r in rows])
    out: list[str] = []
    if any(c.heading is not None for c in cols) and rows:
        heads: list[str] = []
        for c in cols:
            if c.heading is None:
                break
            heads.append(c.heading)
        out.append(_row(mask, heads, widths))
    out += [_row(mask, r, widths) for r in rows]
    return "".join(out)


def _row(mask: PrintMask, cells: Sequence[str], widths: Sequence[int]) -> str:
    parts = [mask.row_prefix]
    n = len(mask.columns)
    for i, text in enumerate(cells):
        if i > 0:
            parts.append(mask.col_prefix)
        parts.append(text.ljust(widths[i]) if widths[i] else text)
        if i + 1 < n:
            parts.append(mask.col_suffix)
    parts.append(mask.row_suffix)
    return "".join(parts)


# -- JSON ----------------------------------------------------------------------------------


def _json_string(s: str) -> str:
    out = ['"']
    for ch in s:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch in "\n\t\r\b\f":
            out.append({"\n": "\\n", "\t": "\\t", "\r": "\\r", "\b": "\\b", "\f": "\\f"}[ch])
        elif ord(ch) < 32 or ord(ch) == 127:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _json_expr(e: Expr, indent: str) -> str:
    """One attribute's value as ClassAdJsonUnParser writes it."""
    if isinstance(e, Literal):
        v = e.value
        if v is UNDEFINED:
            return "null"
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, int):
            return str(v)
        if isinstance(v, float) and math.isfinite(v):
            return format_old_real(v)
        if isinstance(v, str):
            return _json_string(v)
    if isinstance(e, Unary) and e.op == "-" and isinstance(e.operand, Literal):
        v = e.operand.value
        if type(v) is int:
            return str(-v)
        if type(v) is float and math.isfinite(v):
            return format_old_real(-v)
    if isinstance(e, AdExpr):
        return _json_ad(e.ad, indent)
    if isinstance(e, ListExpr):
        inner = indent + "  "
        items = [inner + _json_expr(x, inner) for x in e.items]
        return "[\n" + ",\n".join(items) + ("\n" if items else "") + indent + "]"
    text = _rewrite(unparse(e, condor=True), real=False, meta=True)
    return '"\\/Expr(' + _json_string(text)[1:-1] + ')\\/"'


def _json_ad(ad: ClassAd, indent: str, names: Iterable[str] | None = None) -> str:
    inner = indent + "  "
    keys = sorted(ad if names is None else [n for n in names if n in ad], key=str.lower)
    lines = [f"{inner}{_json_string(k)}: {_json_expr(ad[k], inner)}" for k in keys]
    return "{\n" + ",\n".join(lines) + ("\n" if lines else "") + indent + "}"


def format_json(ads: Iterable[ClassAd], attributes: Sequence[str] | None = None) -> str:
    """The ads as condor_q/condor_status/condor_history -json print them: ``[``, each ad
    an object of its attributes sorted (case ignored), ``,`` between ads, ``]``; nothing
    at all for no ads (CondorClassAdListWriter). ``attributes``: only these."""
    out: list[str] = []
    for ad in ads:
        text = _json_ad(ad, "", attributes)
        if text == "{\n}":
            continue  # an ad with none of the attributes prints nothing
        out.append(("[\n" if not out else ",\n") + text + "\n")
    return "".join(out) + ("]\n" if out else "")


def project(ads: Iterable[ClassAd], attributes: Sequence[str]) -> Iterator[ClassAd]:
    """Each ad cut to ``attributes`` (-attributes A,B): the ones it has, in ad order."""
    wanted = {a.lower() for a in attributes}
    for ad in ads:
        cut = ClassAd()
        for name, e in ad.pairs():
            if name.lower() in wanted:
                cut[name] = e
        yield cut


def split_attributes(text: str) -> list[str]:
    """``-attributes A,B C``: names split at commas and spaces."""
    return [a for a in re.split(r"[,\s]+", text) if a]


# -- argparse ------------------------------------------------------------------------------


class FormatArgsParser(argparse.ArgumentParser):
    """A subcommand parser that takes -af/-autoformat/-format out of its arguments first
    (argparse cannot read ``-af:th`` nor a list that ends at the next flag) and leaves
    the print mask in ``ns.printmask`` (None when none was given)."""

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        import sys

        try:
            rest, mask = take_format_args(list(sys.argv[1:] if args is None else args))
        except ValueError as e:
            self.error(str(e))
        ns, extras = super().parse_known_args(rest, namespace)
        ns.printmask = mask
        return ns, extras


def format_parser(
    sub: argparse._SubParsersAction,  # type: ignore[type-arg]
    name: str,
    **kwargs: Any,
) -> argparse.ArgumentParser:
    """``sub.add_parser(name, ...)`` as a FormatArgsParser, with -af/-format in its help."""
    kwargs.setdefault(
        "epilog",
        "also: -af[:,ngtlVrhj] ATTR... / -autoformat (columns), -format FMT ATTR (printf), "
        "as HTCondor's tools",
    )
    saved = sub._parser_class
    sub._parser_class = FormatArgsParser
    try:
        return sub.add_parser(name, **kwargs)  # type: ignore[no-any-return]
    finally:
        sub._parser_class = saved
