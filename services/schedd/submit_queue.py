"""The queue statement of a submit description: its forms (``queue``, ``queue N``,
``queue ... in / from / matching``), the item lists and item files it names, slices, and
queuing its jobs with their live variables ($(Process), $(Step), $(ItemIndex), $(Item)...).

A mixin of :class:`.submit._Submit`; it reads the description's variables and builds
each job with the job-ad mixins.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ..config.constexpr import evaluate_constant
from ..config.lines import LineReader

if TYPE_CHECKING:
    from .submit import _Submit

_KEYWORD = re.compile(r"(?<![\w.])(in|from|matching)(?![\w.])", re.IGNORECASE)
_IDENT = re.compile(r"[A-Za-z_]\w*\Z")
_SLICE = re.compile(r"\[\s*(-?\d*)\s*(?::\s*(-?\d*)\s*(?::\s*(-?\d*)\s*)?)?\]")
_ITEM_SEP = re.compile(r"[\s,]+")
_MATCH_MODE = re.compile(r"(files|dirs|any)(?![\w.])", re.IGNORECASE)
# item_files key of a ``queue ... matching``'s names (a NUL never starts a path)
_MATCHING_KEY = "\0matching "
_ROW_SEP = re.compile(r"\s*,\s*|\s+")


class QueueStatements:
    """Queue statements and their items (mixed into ``_Submit``)."""

    def queue(self: _Submit, args: str, reader: LineReader) -> None:
        line = self.line
        self.live = {}
        self.static = {}
        self.static_sections = {}
        args = self.expand(args, line)
        count, names, rows, indices = self.queue_items(args, reader)
        if self.read_item_file is not None:
            return  # the submitting side only gathers item files
        if count * len(rows) + len(self.procs) > self.max_jobs:
            raise self.fail(
                f"Number of submitted jobs would exceed MAX_JOBS_PER_SUBMISSION ({self.max_jobs})",
                line,
            )
        template: dict[str, str] | None = None
        for index, row in zip(indices, rows):
            for step in range(count):
                proc = len(self.procs)
                if template is not None:
                    ad = dict(template)
                    ad["ProcId"] = str(proc)
                    self.procs.append(ad)
                    continue
                self.live = {
                    "cluster": str(self.cluster_id),
                    "clusterid": str(self.cluster_id),
                    "process": str(proc),
                    "procid": str(proc),
                    "step": str(step),
                    "itemindex": str(index),
                    "row": str(index),
                }
                if row is not None:
                    self.live.update({n.lower(): v for n, v in zip(names, row)})
                self.used_live = False
                ad = self.job(proc, line)
                self.procs.append(ad)
                if not self.used_live:  # nothing per-job: the rest differ only in ProcId
                    template = ad
        self.live = {}

    def queue_items(
        self: _Submit, args: str, reader: LineReader
    ) -> tuple[int, list[str], list[list[str] | None], list[int]]:
        """(count, variable names, rows of values, item indices) of a queue statement."""
        m = _KEYWORD.search(args)
        head = args[: m.start()] if m else args
        tokens = [t for t in _ITEM_SEP.split(head.strip()) if t]
        count_text = ""
        if not m:
            count_text = head.strip()
            tokens = []
        elif tokens and self.is_count(tokens[0]):
            count_text = tokens.pop(0)
        count = self.count(count_text) if count_text else 1
        if not m:
            return count, [], [None], [0]
        names = tokens or ["Item"]
        for name in names:
            if not _IDENT.match(name):
                raise self.fail(f"queue: {name!r} is not a variable name")
        keyword = m.group(1).lower()
        tail = args[m.end() :].strip()
        mode = "any"
        if keyword == "matching" and (qual := _MATCH_MODE.match(tail)):
            mode, tail = qual.group(1).lower(), tail[qual.end() :].strip()
        sliced = slice(None)
        if tail.startswith("["):
            sm = _SLICE.match(tail)
            if not sm:
                raise self.fail(f"queue: bad slice {tail[:20]!r}")
            parts = [int(p) if p else None for p in sm.groups()]
            if parts[2] is not None and parts[2] <= 0:
                raise self.fail("queue: a slice step must be positive")
            sliced = slice(*parts)
            tail = tail[sm.end() :].strip()
        if keyword in ("in", "matching") and len(names) > 1:
            raise self.fail(f"'queue ... {keyword}' takes one variable; use 'from' for several")
        lines = self.item_lines(tail, keyword, reader)
        if keyword == "matching":
            patterns = [item for ln in lines for item in _ITEM_SEP.split(ln) if item]
            lines = self.matches(patterns, mode)
        if keyword in ("in", "matching"):
            rows = [[item] for ln in lines for item in _ITEM_SEP.split(ln) if item]
        else:
            rows = []
            for ln in lines:
                ln = ln.strip()
                if ln and not ln.startswith("#"):
                    values = _ROW_SEP.split(ln, maxsplit=len(names) - 1)
                    rows.append(values + [""] * (len(names) - len(values)))
        indices = list(range(len(rows)))[sliced]
        return count, names, [rows[i] for i in indices], indices

    def is_count(self: _Submit, token: str) -> bool:
        try:
            evaluate_constant(token)
        except ValueError:
            return False
        return True

    def count(self: _Submit, text: str) -> int:
        try:
            value = evaluate_constant(text)
        except ValueError:
            value = None
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise self.fail(f"queue: {text!r} is not a number of jobs (or an unknown queue form)")
        return value

    def item_lines(self: _Submit, tail: str, keyword: str, reader: LineReader) -> list[str]:
        if not tail:
            raise self.fail(f"queue ... {keyword}: no items")
        if tail.startswith("("):
            close = tail.rfind(")")
            if close > 0:
                if tail[close + 1 :].strip():
                    raise self.fail(
                        f"queue: unexpected {tail[close + 1 :].strip()!r} after the list"
                    )
                return [tail[1:close]]
            lines = [tail[1:]] if tail[1:].strip() else []
            for number, ln in reader:
                if ln.startswith(")"):
                    if ln[1:].strip():
                        problem = f"unexpected {ln[1:].strip()!r} after the list"
                        raise self.fail(f"queue: {problem}", number)
                    return lines
                lines.append(ln)
            raise self.fail("queue: the item list has no closing ')'")
        if keyword in ("in", "matching"):
            return [tail]
        if tail.endswith("|"):
            raise self.fail("'queue ... from <command> |' is not supported by mockpool")
        return self.item_file(tail).splitlines()

    def matches(self: _Submit, patterns: list[str], mode: str) -> list[str]:
        """The paths the submitting user's ``queue ... matching`` patterns name: globbed on
        their side (files, dirs or any), each pattern's matches sorted, duplicates dropped,
        and sent along with the description."""
        key = f"{_MATCHING_KEY}{mode}\n" + "\n".join(patterns)
        if self.glob is not None:
            found: list[str] = []
            for pattern in patterns:
                try:
                    hits = self.glob(pattern, mode)
                except (OSError, ValueError) as e:
                    raise self.fail(f"queue ... matching {pattern}: {e}") from None
                if not hits:
                    self.warn(f"{self.source}:{self.line}: '{pattern}' does not match any files")
                found += [h for h in hits if h not in found]
            self.item_files[key] = "\n".join(found)
            return found
        text = self.item_files.get(key)
        if text is None:
            raise self.fail(
                "queue ... matching: the matching files were not sent with the submit (the "
                "schedd lists no folders; the submitting tool sends the names)"
            )
        return [name for name in text.split("\n") if name]

    def item_file(self: _Submit, path: str) -> str:
        return self.sent_file(path, "queue ... from")
