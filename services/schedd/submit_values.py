"""Values as a submit description gives them and a job ad holds them: ClassAd string
literals (``quote``), numbers that fit the job ad's types, ``arguments`` in HTCondor's old
and new syntax (``split_arguments``, ``join_arguments``), and how long a ``sleep`` job
runs (``sleep_duration``)."""

from __future__ import annotations

import math
import os
import re

from ..classad.numbers import INT64_MAX

_SLEEP_ARG = re.compile(r"(\d+(?:\.\d*)?|\.\d+)([smhd]?)\Z")
_SLEEP_UNIT = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}

OUT_OF_RANGE = "number out of range (integers are 64-bit, reals finite)"

BOOL_WORDS = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}

_ESCAPES = {c: f"\\{c:03o}" for c in range(32)} | {
    ord('"'): '\\"',
    ord("\\"): "\\\\",
    ord("\n"): "\\n",
    ord("\t"): "\\t",
}


def quote(text: str) -> str:
    """A ClassAd string literal (new syntax) holding ``text``."""
    return '"' + text.translate(_ESCAPES) + '"'


def fits(value: float) -> bool:
    """True when ``value`` can be a job ad number: finite and within 64-bit integers."""
    return math.isfinite(value) and abs(value) <= INT64_MAX


def number_text(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def split_arguments(text: str) -> tuple[list[str], bool]:
    """The words of an ``arguments`` value and whether it was old syntax (HTCondor's
    ArgList): new syntax is the whole value in double quotes (``""`` is a quote, single
    quotes group, ``''`` inside them is a quote); old syntax splits on whitespace and takes
    ``\\"`` for a quote, refusing a bare one. ValueError says what is wrong."""
    stripped = text.lstrip()
    if not stripped.startswith('"'):
        if (bad := re.search(r'(?<!\\)"', text)) is not None:
            raise ValueError(f"found illegal unescaped double-quote: {text[bad.start() :]}")
        return text.replace('\\"', '"').split(), True
    raw, pos = "", 1
    while True:
        if pos >= len(stripped):
            raise ValueError("unterminated double-quote")
        if stripped[pos] == '"':
            if stripped[pos + 1 : pos + 2] == '"':
                raw, pos = raw + '"', pos + 2
                continue
            break
        raw, pos = raw + stripped[pos], pos + 1
    if stripped[pos + 1 :].strip():
        raise ValueError(
            "unexpected characters following double-quote (repeat a double-quote to escape "
            f"it): {stripped[pos:]}"
        )
    words: list[str] = []
    word, in_word, k = "", False, 0
    while k < len(raw):
        c = raw[k]
        if c == "'":
            end = k + 1
            while True:
                if end >= len(raw):
                    raise ValueError(f"unbalanced quote starting here: {raw[k:]}")
                if raw[end] == "'":
                    if raw[end + 1 : end + 2] == "'":
                        word, end = word + "'", end + 2
                        continue
                    break
                word, end = word + raw[end], end + 1
            in_word, k = True, end + 1
        elif c in " \t\n\r":
            if in_word:
                words.append(word)
            word, in_word, k = "", False, k + 1
        else:
            word, in_word, k = word + c, True, k + 1
    if in_word:
        words.append(word)
    return words, False


def sleep_duration(cmd: str, words: list[str]) -> float | None:
    """The pool seconds a job runs when its executable is ``sleep`` with a first argument
    ``N[smhd]`` (None otherwise): how a mock job of ``/bin/sleep 60`` lasts a minute."""
    if not words or os.path.basename(cmd) != "sleep":
        return None
    m = _SLEEP_ARG.match(words[0])
    return None if m is None else float(m.group(1)) * _SLEEP_UNIT[m.group(2)]


def join_arguments(words: list[str]) -> str:
    """Words in HTCondor's new-syntax raw form (the job's Arguments): a space, tab, newline
    or single quote is put in single quotes (a quote doubled), runs of them in one pair."""
    out = ""
    for word in words:
        if out:
            out += " "
        if not word:
            out += "''"
        for c in word:
            if c in " \t\n\r'":
                out = out[:-1] if out.endswith("'") else out + "'"
                out += ("''" if c == "'" else c) + "'"
            else:
                out += c
    return out
