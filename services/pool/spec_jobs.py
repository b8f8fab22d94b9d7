"""The spec's job tables, parsed: ``[[workload]]`` (and the jobs it generates),
``[import]``, ``[[trace]]`` and ``[[submit]]``.

A mixin of :class:`.spec.SpecBuilder`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ..classad import parse_expr
from ..config import ConfigDict, ConfigError, parse_config
from ..schedd.submit import SubmitError, parse_submit
from ..schedd.submit_policy import valid_owner
from ..startd.machine import Machine
from .importer import ImportedMachine, ImportError_, read_jobs, read_machines
from .specmodel import (
    IMPORT_KEYS,
    MAX_WORKLOAD_JOBS,
    NAME_PATTERN,
    SUBMIT_KEYS,
    TRACE_KEYS,
    WORKLOAD_KEYS,
    MachineGroup,
    PoolSpec,
    RemoveItem,
    SpecError,
    SubmitItem,
    TraceSummary,
)
from .submit_files import SubmitFileError, read_submit_inputs, read_user_file
from .trace import (
    FORMATS,
    ON_ERROR,
    TraceError,
    read_trace,
    remove_constraint,
    replay,
    submit_clusters,
)
from .workload import (
    Workload,
    WorkloadError,
    generate,
    parse_arrival,
    parse_distribution,
    submit_description,
)

if TYPE_CHECKING:
    from .spec import SpecBuilder


class JobTables:
    """The job tables (mixed into ``SpecBuilder``)."""

    def _workload(self: SpecBuilder, t: dict[str, Any], i: int, spec: PoolSpec) -> Workload:
        self._unknown(t, WORKLOAD_KEYS, "workload", i)
        schedd = self._schedd(t, "workload", i, spec)
        names: dict[str, str] = {}
        for key, default in (("owner", ""), ("accounting_group", ""), ("name", f"workload{i + 1}")):
            v = t.get(key, default)
            if not isinstance(v, str) or ((v or key == "owner") and not NAME_PATTERN.fullmatch(v)):
                raise self.fail(
                    "workload", i, key, f"must be a name (letters, digits, _ . -), got {v!r}"
                )
            names[key] = v
        jobs = self._num(t, "workload", i, "jobs", 1, int, 1, maximum=MAX_WORKLOAD_JOBS)
        if "duration" not in t:
            raise self.fail("workload", i, None, "needs duration (pool seconds, or a distribution)")
        try:
            return Workload(
                names["name"],
                names["owner"],
                schedd,
                jobs,
                duration=parse_distribution("duration", t["duration"]),
                arrival=parse_arrival("arrival", t.get("arrival", {"kind": "at_once"})),
                request_cpus=parse_distribution(
                    "request_cpus", t.get("request_cpus", 1), positive=True
                ),
                request_memory=parse_distribution(
                    "request_memory", t.get("request_memory", 128), positive=True
                ),
                request_disk=parse_distribution(
                    "request_disk", t.get("request_disk", 1024), positive=True
                ),
                accounting_group=names["accounting_group"],
            )
        except WorkloadError as e:
            raise self.fail("workload", i, e.key.split(".")[0], str(e)) from None

    def _generated(self: SpecBuilder, spec: PoolSpec) -> list[SubmitItem]:
        """The workloads' jobs as submit items (one per cluster), checked like [[submit]]."""
        out: list[SubmitItem] = []
        checked: set[str] = set()
        limit = spec.config.get_int("MAX_JOBS_PER_SUBMISSION")
        for c in generate(spec.workloads, spec.seed, max_per_cluster=limit):
            i = next(k for k, w in enumerate(spec.workloads) if w.name == c.workload)
            source = f"{self.source}:{self.lines.table_start('workload', i) or 1}"
            if c.workload not in checked:  # every cluster of a workload has the same form
                checked.add(c.workload)
                try:
                    parse_submit(
                        submit_description(c.form()), source, owner=c.owner, validate=parse_expr
                    )
                except SubmitError as e:
                    raise SpecError(f"{source}: [[workload]] #{i + 1}: {e}") from None
            out.append(SubmitItem(c.at, c.schedd, c.owner, submit_description(c), source))
        return out

    def _import_text(self: SpecBuilder, t: dict[str, Any], key: str) -> tuple[str, str] | None:
        path = t.get(key)
        if path is None:
            return None
        if not isinstance(path, str) or not path:
            raise self.fail("import", None, key, "must be a path")
        try:
            return read_user_file(self.base_dir / path), path
        except SubmitFileError as e:
            raise self.fail("import", None, key, str(e)) from None

    def _import_machines(self: SpecBuilder, t: Any, pool_cfg: ConfigDict) -> list[MachineGroup]:
        """[import] status: the machines of a condor_status -long dump, in families of
        machines whose configurations came out the same (see importer.py)."""
        if not isinstance(t, dict):
            raise self.fail(None, None, "import", "must be a table")
        self._unknown(t, IMPORT_KEYS, "import", None)
        found = self._import_text(t, "status")
        if found is None:
            return []
        text, path = found
        per_actor = self._num(t, "import", None, "machines_per_actor", 100, int, 1)
        try:
            machines = read_machines(text, path)
        except ImportError_ as e:
            raise SpecError(f"{e} ([import] at {self._at('import', None)})") from None
        families: dict[str, list[ImportedMachine]] = {}
        for m in machines:
            if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.\-]*", m.name):
                raise SpecError(f"{path}:{m.line}: {m.name!r} is not a valid machine name")
            families.setdefault(m.config, []).append(m)
        groups = []
        for config, members in families.items():
            first = members[0]
            try:
                cfg = parse_config(config, f"{path}:{first.line} (machine {first.name})", pool_cfg)
                Machine(first.name, cfg, "127.0.0.1:0", 0, 0.0).check_policies()
            except ConfigError as e:
                raise SpecError(f"{e} ([import] at {self._at('import', None)})") from None
            groups.append(MachineGroup(tuple(m.name for m in members), per_actor, cfg))
        return groups

    def _import_jobs(self: SpecBuilder, t: dict[str, Any], spec: PoolSpec) -> list[SubmitItem]:
        """[import] queue: the idle, running and held jobs of a condor_q -long dump,
        queued again at time 0."""
        found = self._import_text(t, "queue")
        if found is None:
            return []
        text, path = found
        duration = self._num(t, "import", None, "duration", 3600.0, float, 0, strict=True)
        schedd = self._schedd(t, "import", None, spec)
        try:
            jobs = read_jobs(text, path, duration=duration)
        except ImportError_ as e:
            raise SpecError(f"{e} ([import] at {self._at('import', None)})") from None
        items = []
        for job in jobs:
            source = f"{path}:{job.line}"
            try:
                parse_submit(job.description, source, owner=job.owner, validate=parse_expr)
            except SubmitError as e:
                raise SpecError(f"{source}: [import]: {e}") from None
            items.append(SubmitItem(0.0, schedd, job.owner, job.description, source))
        return items

    def _trace(
        self: SpecBuilder, t: dict[str, Any], i: int, spec: PoolSpec, taken: set[str]
    ) -> None:
        """A [[trace]]: its jobs as submit items, its removed jobs as removals."""
        self._unknown(t, TRACE_KEYS, "trace", i)
        name = t.get("name", f"trace{i + 1}")
        if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name) or name in taken:
            raise self.fail(
                "trace",
                i,
                "name",
                f"must be a name not used twice (letters, digits, _ . -), got {name!r}",
            )
        taken.add(name)
        path = t.get("file")
        if not isinstance(path, str) or not path:
            raise self.fail("trace", i, "file" if "file" in t else None, "needs file (a path)")
        fmt = t.get("format")
        if fmt is not None and fmt not in FORMATS:
            raise self.fail(
                "trace", i, "format", f"must be one of {', '.join(FORMATS)}, got {fmt!r}"
            )
        on_error = t.get("on_error", "refuse")
        if on_error not in ON_ERROR:
            raise self.fail(
                "trace", i, "on_error", f"must be one of {', '.join(ON_ERROR)}, got {on_error!r}"
            )
        removals = t.get("removals", True)
        if not isinstance(removals, bool):
            raise self.fail("trace", i, "removals", f"must be true or false, got {removals!r}")
        compress = self._num(t, "trace", i, "compress", 1.0, float, 0, strict=True)
        shift = self._num(t, "trace", i, "shift", 0.0, float, 0)
        limit = self._num(t, "trace", i, "limit", 0, int, 0)
        schedd = self._schedd(t, "trace", i, spec)
        try:
            read = read_trace(self.base_dir / path, fmt, on_error=on_error, source=path)
        except TraceError as e:
            raise SpecError(f"{e} ([[trace]] #{i + 1} at {self._at('trace', i)})") from None
        jobs = replay(read.records, compress=compress, shift=shift, limit=limit, removals=removals)
        limit_per = spec.config.get_int("MAX_JOBS_PER_SUBMISSION")
        checked: set[str] = set()
        for c in submit_clusters(jobs, name, max_per_cluster=limit_per):
            source = f"{path}:{c.line}"
            if c.owner not in checked:  # clusters differ in numbers only, owners in names
                checked.add(c.owner)
                try:
                    parse_submit(c.description, source, owner=c.owner, validate=parse_expr)
                except SubmitError as e:
                    raise SpecError(f"{source}: [[trace]] #{i + 1}: {e}") from None
            spec.submits.append(SubmitItem(c.at, schedd, c.owner, c.description, source))
        removed = [j for j in jobs if j.remove_at is not None]
        spec.removals.extend(
            RemoveItem(
                j.remove_at,
                schedd,
                remove_constraint(name, j.job_id),
                f"trace {name}: job {j.job_id} was removed",
                f"{path}:{j.line}",
            )
            for j in removed
            if j.remove_at is not None
        )
        spec.traces.append(TraceSummary(name, path, len(jobs), len(removed), tuple(read.skipped)))

    def _submit(self: SpecBuilder, t: dict[str, Any], i: int, spec: PoolSpec) -> SubmitItem:
        self._unknown(t, SUBMIT_KEYS, "submit", i)
        at = self._num(t, "submit", i, "at", 0.0, float, 0)
        schedd = self._schedd(t, "submit", i, spec)
        owner = t.get("owner", "")
        if not isinstance(owner, str) or not valid_owner(owner):
            raise self.fail(
                "submit", i, "owner", f"must name the submitting user (no blanks), got {owner!r}"
            )
        if ("description" in t) == ("file" in t):
            raise self.fail("submit", i, None, "needs exactly one of description or file")
        if "file" in t:
            path = self.base_dir / str(t["file"])
            try:
                text, source = read_user_file(path), str(t["file"])
            except SubmitFileError as e:
                raise self.fail("submit", i, "file", str(e)) from None
        else:
            if not isinstance(t["description"], str):
                raise self.fail("submit", i, "description", "must be a submit description string")
            text, source = self._inline("submit", i, "description", t["description"]), self.source
        try:
            inputs = read_submit_inputs(text, source, base_dir=self.base_dir)
            parse_submit(
                text,
                source,
                owner=owner,
                validate=parse_expr,
                item_files=inputs.item_files,
                env=inputs.env,
                max_jobs=spec.config.get_int("MAX_JOBS_PER_SUBMISSION"),
            )
        except (SubmitError, SubmitFileError) as e:
            raise SpecError(str(e)) from None
        return SubmitItem(at, schedd, owner, text, source, inputs)
