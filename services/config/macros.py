"""Macro expansion, shared by configuration files and submit descriptions.

What is expanded (HTCondor manual, "Configuration File Macros" and "Function Macros"):

- ``$(NAME)``: the value of NAME, itself expanded; an undefined NAME gives "".
- ``$(NAME:default)``: the default (expanded in place) when NAME's raw text is undefined or
  empty (``$(E:d)`` with ``E = $(NOPE)`` is "", as in HTCondor).
- ``$ENV(VAR)`` / ``$ENV(VAR:default)``: an environment variable; unset and without a
  default, ``unset_env`` (configuration passes ``UNDEFINED``, the text HTCondor writes).
- ``$INT(NAME)`` / ``$INT(NAME,fmt)``, ``$REAL(NAME)`` / ``$REAL(NAME,fmt)``: NAME's value
  (or the argument itself when it is not a defined name) evaluated as a constant expression
  and printed with a C format (default ``%d`` / ``%.16G``).
- ``$CHOICE(index, LISTNAME)`` / ``$CHOICE(index, a, b, c)``: the index-th item (from 0).
- ``$SUBSTR(NAME, start[, length])``: Python-like negative indices, as HTCondor documents.
- ``$EVAL(NAME)`` / ``$EVAL(expr)``: NAME's value (or the text itself), expanded, evaluated as
  a ClassAd expression with no ad; a string result is used as is, any other result as
  ClassAd text (``3``, ``true``, ``undefined``, ``error``); text that does not parse gives
  nothing, or its expanded text when it held a macro.
- ``$RANDOM_INTEGER(min, max[, step])`` and ``$RANDOM_CHOICE(a, b, c)`` /
  ``$RANDOM_CHOICE(LISTNAME)``: drawn from the caller's seed, so the same seed gives the
  same pool (the draw depends on the knob's name and the macro's place in it, not on how
  often it is looked up).
- ``$$(...)`` is match-time substitution and is kept (macros inside it are expanded, as
  HTCondor's search goes on inside it); ``$(DOLLAR)`` gives ``$``.

Where a macro is, and what is only text, is HTCondor's rule (:mod:`.macroscan`): ``$(A * 2)``,
an unterminated ``$(`` or ``$(X:a-b)`` stay as written; every function's argument ends at
the first ``)`` (``$EVAL(min(3,4))`` is the argument ``min(3,4``, then a stray ``)``), so an
expression with parentheses goes in a knob: ``$EVAL(KNOB)``. As HTCondor's expand_macro, each
replacement is read again with the text after it, and ``$(DOLLAR)`` becomes ``$`` last.

Differences from HTCondor: a macro cycle (``A = $(B)``, ``B = $(A)``) is an error here, where
HTCondor 25 hangs; an error in ``$INT``, ``$REAL``, ``$CHOICE``, ``$SUBSTR`` or
``$RANDOM_INTEGER`` is an error (a daemon stops on it; the Python bindings expand it to
nothing); ``$INT`` and ``$REAL`` of infinity or NaN, and
``$INT`` of a value beyond 64 bits, are errors, where HTCondor prints ``INF``/``NAN`` or the
garbage of an undefined conversion (``$INT(1e999)`` is -9223372036854775808); the other
function macros (``$STRING``, ``$F...``, ``$DIRNAME``, ``$BASENAME``) are refused.
"""

from __future__ import annotations

import math
import os
import random
import re
from collections.abc import Callable, Iterator, Mapping

from . import macroscan
from .constexpr import evaluate_constant
from .errors import MacroError

Lookup = Callable[[str], "str | None"]  # name -> raw (unexpanded) text, None if undefined

MAX_EXPANDED = 1 << 20  # characters; a guard against definitions that double at each level
MAX_DEPTH = 64  # macros inside macros; a longer chain is refused, not a RecursionError
MAX_STEPS = 100_000  # replacements in one expansion (HTCondor would loop for ever)

_NAME = re.compile(r"[A-Za-z0-9_.]+\Z")
_LONG = re.compile(r"\s*[+-]?\d+")


def _clip(text: str, width: int = 60) -> str:
    """``text`` shortened for a message."""
    return text if len(text) <= width else text[: width - 3] + "..."


def _finite(call: str, text: str, value: float, *, integer: bool) -> int | float:
    """``value`` as ``$INT`` (truncated to a 64-bit integer) or ``$REAL`` (a double) print it.

    Infinity, NaN and, for ``$INT``, a value outside the 64-bit range are refused: HTCondor
    prints ``INF``/``NAN`` for ``$REAL`` and, for ``$INT``, whatever its undefined
    double-to-integer conversion gives (-9223372036854775808 on x86), neither of which
    any knob can use as a number.
    """
    try:
        real = float(value)
    except OverflowError:  # an integer literal beyond a double's range
        real = math.inf if value > 0 else -math.inf
    if math.isnan(real):
        raise MacroError(f"{call}: {text!r} is not a number (NaN)")
    if math.isinf(real):
        raise MacroError(f"{call}: {text!r} is infinite")
    if not integer:
        return real
    whole = int(value)
    if not -(2**63) <= whole < 2**63:
        raise MacroError(f"{call}: {text!r} is beyond the range of a 64-bit integer")
    return whole


def _split_top(body: str, sep: str, maxsplit: int = -1) -> list[str]:
    """Splits ``body`` at ``sep`` outside parentheses."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(body):
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == sep and depth == 0 and maxsplit != 0:
            parts.append(body[start:i])
            start = i + 1
            maxsplit -= 1
    parts.append(body[start:])
    return parts


def macro_spans(text: str) -> Iterator[tuple[int, int, str, str]]:
    """Macro uses in ``text`` in one pass: (start, end, function, body), end exclusive.

    ``function`` is "" for ``$(...)``, else the name (``ENV``, ``INT``...); found as HTCondor
    finds them (:mod:`.macroscan`): text that is not a macro (``$(A * 2)``, an unterminated
    ``$(``, ``$$(...)``) is not listed.
    """
    for span in macroscan.spans(text):
        yield span.start, span.end, span.func, span.body


def substitute_self(raw: str, name: str, previous: str | None) -> str:
    """Replaces ``$(name)`` in ``name``'s own new definition by its previous raw value.

    HTCondor expands a self-reference at definition time, so ``A = $(A) more`` appends to
    the old value; with no previous value the ``:default`` (or "") is used.
    """
    out, pos = [], 0
    for span in macroscan.spans(raw):
        if span.func != "" or span.name.lower() != name.lower():
            continue
        out.append(raw[pos : span.start])
        out.append(previous if previous else (span.default or ""))
        pos = span.end
    out.append(raw[pos:])
    return "".join(out)


class _Expander:
    def __init__(self, lookup: Lookup, env: Mapping[str, str], seed: int) -> None:
        self.lookup = lookup
        self.env = env
        self.seed = seed
        self.unset_env = ""  # what $ENV(NAME) of an unset NAME gives, without a default
        self.draws = 0  # random macros drawn so far, for a seed per draw
        self.stack: list[str] = []  # names being expanded, as spelled where referenced
        self.cache: dict[str, str | None] = {}
        self.depth = 0
        self.steps = 0  # macros replaced, against an expansion that never ends

    def value(self, name: str) -> str | None:
        key = name.lower()
        keys = [n.lower() for n in self.stack]
        if key in keys:
            cycle = " -> ".join([*self.stack[keys.index(key) :], name])
            raise MacroError(f"macro cycle: {cycle}")
        if key in self.cache:
            return self.cache[key]
        if key == "dollar":
            return "$"
        raw = self.lookup(name)
        if raw is not None:
            self.stack.append(name)
            try:
                raw = self.text(raw)
            except MacroError as e:
                e.chain = e.chain or tuple(self.stack)  # where it arose, innermost last
                raise
            finally:
                self.stack.pop()
        self.cache[key] = raw
        return raw

    def text(self, text: str) -> str:
        """``text`` expanded as HTCondor's expand_macro does: each macro is replaced and the
        search goes on from where it was, so a default (inserted as written) and whatever
        a value forms with the text after it are expanded in place; ``$(DOLLAR)`` is kept
        for :func:`expand` to turn into ``$`` at the end."""
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise MacroError(f"macros nested more than {MAX_DEPTH} deep")
        pos = 0
        while (span := macroscan.next_macro(text, pos)) is not None:
            self.steps += 1
            if self.steps > MAX_STEPS:
                raise MacroError(f"expansion does not end (more than {MAX_STEPS} macros)")
            if span.func == "":
                # HTCondor takes the default when the raw value is empty, not the expansion
                raw = self.lookup(span.name) if span.name.lower() != "dollar" else "$"
                replacement = (self.value(span.name) or "") if raw else (span.default or "")
            elif span.func == "ENV":
                found = self.env.get(span.name)
                if found is None:
                    found = span.default if span.default is not None else self.unset_env
                replacement = found
            else:
                replacement = self.call(span.func, span.body)
            text = text[: span.start] + replacement + text[span.end :]
            if len(text) > MAX_EXPANDED:
                raise MacroError(f"expansion longer than {MAX_EXPANDED} characters")
            pos = span.start
        self.depth -= 1
        return text

    def name(self, text: str) -> str:
        return self.text(text).strip() if "$" in text else text.strip()

    def call(self, func: str, body: str) -> str:
        if func in ("INT", "REAL"):
            return self.number(func, body)
        if func == "CHOICE":
            return self.choice(body)
        if func == "SUBSTR":
            return self.substr(body)
        if func == "EVAL":
            return self.eval(body)
        if func == "RANDOM_INTEGER":
            return self.random_integer(body)
        if func == "RANDOM_CHOICE":
            return self.random_choice(body)
        raise MacroError(f"${func}() is not supported by mockpool")

    def operand(self, text: str) -> str:
        """A function argument: the value of the macro it names, else the text itself."""
        name = self.name(text)
        if _NAME.match(name) and (value := self.value(name)) is not None:
            return value
        return name

    def number(self, func: str, body: str) -> str:
        arg, *fmt = _split_top(body, ",", 1)
        text = self.operand(arg)
        call = f"${func}({_clip(arg.strip())})"
        try:
            value = evaluate_constant(text)
        except ValueError as e:
            raise MacroError(f"{call}: {_clip(text)!r} is not a number ({e})") from None
        if isinstance(value, bool):
            raise MacroError(f"{call}: {_clip(text)!r} is not a number")
        number = _finite(call, _clip(text), value, integer=func == "INT")
        form = fmt[0] if fmt else ("%d" if func == "INT" else "%.16G")
        try:
            # a format with no conversion is printed as it is (HTCondor's snprintf)
            out = form % number if "%" in form.replace("%%", "") else form.replace("%%", "%")
        except (TypeError, ValueError, OverflowError) as e:
            raise MacroError(f"{call}: bad format {form!r} ({e})") from None
        return out + ".0" if func == "REAL" and fmt and "." not in out else out

    def index(self, text: str) -> int:
        value = self.operand(text)
        try:
            result = evaluate_constant(value)
        except ValueError:
            result = None
        if isinstance(result, bool) or not isinstance(result, int):
            raise MacroError(f"{value!r} is not an integer index")
        return result

    def choice(self, body: str) -> str:
        args = _split_top(body, ",")
        if len(args) < 2:
            raise MacroError("$CHOICE() needs an index and a list")
        index = self.index(args[0])
        if len(args) == 2:
            listed = self.value(self.name(args[1]))
            if listed is None:
                raise MacroError(f"$CHOICE(): no list named {args[1].strip()!r}")
            items = listed.split(",")
        else:
            items = [self.text(a) for a in args[1:]]
        if not 0 <= index < len(items):
            raise MacroError(f"$CHOICE(): index {index} is out of range")
        return items[index].strip()

    def eval(self, body: str) -> str:
        """As HTCondor's ``$EVAL``: an argument that does not parse gives its expanded text
        when it held a macro, else nothing (neither is an error there)."""
        from ..classad import ClassAdSyntaxError, MissingEvalInput, evaluate, parse_expr
        from ..classad.tree import format_value_condor

        name = body.strip()
        raw = self.lookup(name) if _NAME.match(name) else None
        source = body if raw is None else raw
        if raw is not None:
            text = self.value(name) or ""
        else:
            text = self.text(body) if "$" in body else body
        text = macroscan.replace_dollars(text)
        try:
            expr = parse_expr(text)
        except (ClassAdSyntaxError, ValueError):
            return text if "$" in source else ""
        # random() draws from the seed, as $RANDOM_INTEGER does (not counted as one of its
        # draws); the configuration has no clock, so time() is refused
        where = self.stack[0].lower() if self.stack else ""
        rng = random.Random(f"{self.seed}:{where}:$EVAL")
        try:
            value = evaluate(expr, now=None, rng=rng)
        except MissingEvalInput:
            raise MacroError(
                f"$EVAL({_clip(body)}): time() has no value in the configuration (it is read "
                "before the pool's clock runs)"
            ) from None
        return value if isinstance(value, str) else format_value_condor(value)

    def rng(self) -> random.Random:
        """A generator for the next draw: the seed, the knob being expanded, the draw's rank."""
        self.draws += 1
        where = self.stack[0].lower() if self.stack else ""
        return random.Random(f"{self.seed}:{where}:{self.draws}")

    def random_integer(self, body: str) -> str:
        args = [a.strip() for a in body.split(",")]
        if len(args) < 2 or not all(_LONG.fullmatch(a) for a in args[:3]):
            raise MacroError(f"$RANDOM_INTEGER({body}): expected integers min, max[, step]")
        low, high = int(args[0]), int(args[1])
        step = int(args[2]) if len(args) > 2 else 1
        if step < 1:
            raise MacroError(f"$RANDOM_INTEGER({body}): invalid step")
        if low > high:
            raise MacroError(f"$RANDOM_INTEGER({body}): min > max")
        return str(low + self.rng().randrange((step + high - low) // step) * step)

    def random_choice(self, body: str) -> str:
        items = [a.strip() for a in body.split(",")]
        if len(items) == 1 and (listed := self.value(items[0])) is not None:
            items = [a.strip() for a in listed.split(",")]
        items = [a for a in items if a]
        if not items:
            raise MacroError(f"$RANDOM_CHOICE({body}): the list is empty")
        return self.rng().choice(items)

    def substr(self, body: str) -> str:
        args = _split_top(body, ",")
        if len(args) not in (2, 3):
            raise MacroError("$SUBSTR() takes a name, a start and an optional length")
        text = self.value(self.name(args[0])) or ""
        start = self.index(args[1])
        start = max(0, len(text) + start) if start < 0 else min(start, len(text))
        if len(args) == 2:
            return text[start:]
        length = self.index(args[2])
        end = len(text) + length if length < 0 else start + length
        return text[start:end] if end > start else ""


def expand(
    text: str,
    lookup: Lookup,
    *,
    env: Mapping[str, str] | None = None,
    name: str | None = None,
    seed: int = 0,
    unset_env: str = "",
) -> str:
    """Expands every macro in ``text``; ``lookup`` gives the raw text of a name.

    Lookups are lazy, so a name sees the definitions as they are now; cycles raise
    ``MacroError`` naming the chain. ``name`` is the macro whose value ``text`` is, so that
    a cycle through it is reported from it.
    """
    expander = _Expander(lookup, os.environ if env is None else env, seed)
    expander.unset_env = unset_env
    if name is not None:
        expander.stack.append(name)
    try:
        return macroscan.replace_dollars(expander.text(text))
    except MacroError as e:
        e.chain = e.chain or tuple(expander.stack)
        raise


def referenced_names(text: str) -> list[str]:
    """The macro names ``text`` reads (``$(A)``, ``$(A:default)``, ``$INT(A)``, ...), in
    order, nested ones included; [] for text whose macros do not parse."""
    names: list[str] = []
    try:
        spans = list(macro_spans(text))
    except MacroError:
        return names
    for _, _, func, body in spans:
        if func in ("$", "ENV", "RANDOM_INTEGER"):
            continue
        first = re.split(r"[:,]", body, maxsplit=1)[0].strip()
        if _NAME.match(first):
            names.append(first)
        names.extend(referenced_names(body))
    return names
