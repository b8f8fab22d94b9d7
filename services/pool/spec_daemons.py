"""The spec's daemon tables, parsed: ``[placement]``, ``[config]`` (and a group's
config tables), ``[accountant]``, ``[[startds]]`` and ``[[schedds]]``.

A mixin of :class:`.spec.SpecBuilder`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ..config import ConfigDict, ConfigError, load_config, parse_config, read_local_config
from ..config.knobs import check_knobs as check_knob_table
from ..negotiator.preemption import check_negotiator_config
from ..startd.layout import machine_layout
from ..startd.machine import Machine
from .faultkinds import FaultError
from .faults import Fault, check_plan, parse_fault
from .layout import actor_plans
from .specchecks import check_knobs, format_names, placed
from .specmodel import (
    ACCOUNTANT_KEYS,
    MAX_MACHINES,
    MAX_SCHEDDS,
    SCHEDD_KEYS,
    STARTD_KEYS,
    MachineGroup,
    PoolSpec,
    ScheddGroup,
    SpecError,
)

if TYPE_CHECKING:
    from .spec import SpecBuilder


class DaemonTables:
    """The daemon tables (mixed into ``SpecBuilder``)."""

    def _placement(self: SpecBuilder, tbl: Any) -> dict[str, str]:
        """``[placement]``: ``central = "any" | "head"``, ``startds = "spread" | "pack"``
        (on a Ray cluster; Ray's SPREAD by default), ``negotiator = "central" | "own"``."""
        if not isinstance(tbl, dict):
            raise self.fail(None, None, "placement", "must be a table")
        allowed = {
            "central": ("any", "head"),
            "startds": ("spread", "pack"),
            "negotiator": ("central", "own"),
        }
        self._unknown(tbl, set(allowed), "placement", None)
        for key, value in tbl.items():
            if value not in allowed[key]:
                raise self.fail(
                    "placement",
                    None,
                    key,
                    f"must be one of {', '.join(allowed[key])}, got {value!r}",
                )
        return dict(tbl)

    def _faults(self: SpecBuilder, data: dict[str, Any], spec: PoolSpec) -> list[Fault]:
        """``[[faults]]``: checked against the pool's daemons before anything starts."""
        faults: list[Fault] = []
        for i, t in enumerate(self._list(data, "faults")):
            where = f"{self.source}:{self.lines.table_start('faults', i) or 1}: [[faults]] #{i + 1}"
            try:
                faults.extend(parse_fault(t, where))
            except FaultError as e:
                raise SpecError(str(e)) from None
        try:
            return check_plan(faults, actor_plans(spec))
        except FaultError as e:
            raise SpecError(str(e)) from None

    def _config(self: SpecBuilder, tbl: Any, seed: int) -> ConfigDict:
        if not isinstance(tbl, dict):
            raise self.fail(None, None, "config", "must be a table of HTCondor knobs")
        try:
            config = self._config_table(tbl, ConfigDict(seed=seed), "config", None)
            check_negotiator_config(config)
            config.get_int("MAX_JOBS_PER_SUBMISSION")  # read at submits
        except ConfigError as e:
            where = f"{self.source}:{self.lines.table_start('config', None) or 1}: [config]"
            raise SpecError(placed(str(e), where)) from None
        return config

    def _config_table(
        self: SpecBuilder, tbl: dict[str, Any], base: ConfigDict, table: str, index: int | None
    ) -> ConfigDict:
        """``file`` first, then the ``text`` block (HTCondor config as it is), then single
        knobs, each on top of the one before."""
        if "file" in tbl:
            path = tbl["file"]
            if not isinstance(path, str):
                raise self.fail(table, index, "file", "must be a path")
            base = load_config(self.base_dir / path, base)
        if "text" in tbl:
            text = tbl["text"]
            if not isinstance(text, str):
                raise self.fail(table, index, "text", "must be a string of HTCondor config lines")
            prefix = "\n" * self.lines.value_start(table, index, "text")
            before = base
            base = read_local_config(
                parse_config(prefix + text, self.source, base), self.base_dir, before=before
            )
        lines: list[str] = []
        for k, v in tbl.items():
            if k in ("file", "text"):
                continue
            if isinstance(v, bool):
                v = "True" if v else "False"
            elif isinstance(v, list):
                v = ", ".join(str(x) for x in v)
            elif isinstance(v, dict):
                raise self.fail(
                    table,
                    index,
                    k,
                    "is a table: a TOML key with a dot makes one; "
                    "put dotted knob names in the text = '''...''' block",
                )
            elif not isinstance(v, (int, float, str)):
                raise self.fail(table, index, k, f"must be a string, number or boolean, got {v!r}")
            line = self.lines.key(table, index, k)
            if line and line <= len(lines):  # knobs sharing a line: { A = 1, B = 2 }
                base = parse_config("\n".join(lines), self.source, base)
                lines = []
            # One knob per physical line at its own line number, so ConfigError points there.
            lines.extend([""] * max(0, line - 1 - len(lines)))
            lines.append(f"{k} = {v}".replace("\n", " "))
        return parse_config("\n".join(lines), self.source, base)

    def _negotiator_config(self: SpecBuilder, config: ConfigDict) -> None:
        check_knobs(config, f"{self.source}:{self.lines.table_start('config', None) or 1}")

    def _accountant_line(self: SpecBuilder, name: str, key: str | None) -> int:
        path = ("accountant", name, *((key,) if key else ()))
        return self.lines.path(*path) or 1

    def _accountant(self: SpecBuilder, tbl: Any) -> dict[str, dict[str, float]]:
        if not isinstance(tbl, dict):
            raise self.fail(None, None, "accountant", 'must be tables: [accountant."user@domain"]')
        out: dict[str, dict[str, float]] = {}
        for name, values in tbl.items():

            def bad(key: str | None, problem: str, name: str = name) -> SpecError:
                return SpecError(
                    f"{self.source}:{self._accountant_line(name, key)}: "
                    f'[accountant."{name}"]{" " + key if key else ""}: {problem}'
                )

            if not isinstance(values, dict):
                raise bad(None, "must be a table with factor and/or priority")
            for k, v in values.items():
                if k not in ACCOUNTANT_KEYS:
                    raise bad(
                        k, f"unknown key (expected one of {', '.join(sorted(ACCOUNTANT_KEYS))})"
                    )
                if isinstance(v, bool) or not isinstance(v, (int, float)):
                    raise bad(k, f"must be a number, got {v!r}")
            if "factor" in values and not values["factor"] >= 1:
                raise bad("factor", f"must be >= 1, got {values['factor']!r}")
            if "priority" in values and not values["priority"] >= 0.5:
                raise bad("priority", f"must be >= 0.5, got {values['priority']!r}")
            out[name] = {k: float(v) for k, v in values.items()}
        return out

    def _inline(self: SpecBuilder, table: str, index: int, key: str, text: str) -> str:
        return "\n" * self.lines.value_start(table, index, key) + text

    def _startds(
        self: SpecBuilder, t: dict[str, Any], i: int, pool_cfg: ConfigDict
    ) -> MachineGroup:
        self._unknown(t, STARTD_KEYS, "startds", i)
        count = self._num(t, "startds", i, "count", 1, int, 1, maximum=MAX_MACHINES)
        per_actor = self._num(t, "startds", i, "machines_per_actor", min(count, 1000), int, 1)
        pattern = t.get("name", "exec{:04d}" if i == 0 else f"exec{i}_{{:04d}}")
        if not isinstance(pattern, str):
            raise self.fail("startds", i, "name", "must be a string pattern such as 'exec{:04d}'")
        try:
            names = format_names(pattern, count)
        except (IndexError, KeyError, ValueError) as e:
            raise self.fail("startds", i, "name", f"bad name pattern {pattern!r}: {e}") from None
        if count > 1 and len(set(names)) != count:
            raise self.fail(
                "startds",
                i,
                "name",
                f"pattern {pattern!r} gives every machine the same name; use {{}}",
            )
        bad = next((n for n in names if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.\-]*", n)), None)
        if bad is not None:
            raise self.fail("startds", i, "name", f"{bad!r} is not a valid machine name")
        cfg = pool_cfg
        try:
            if "config_file" in t:
                if not isinstance(t["config_file"], str):
                    raise self.fail("startds", i, "config_file", "must be a path")
                cfg = load_config(self.base_dir / t["config_file"], cfg)
            if isinstance(t.get("config"), dict):
                cfg = self._config_table(t["config"], cfg, "startds.config", i)
            elif "config" in t:
                if not isinstance(t["config"], str):
                    raise self.fail(
                        "startds", i, "config", "must be a string of HTCondor config lines"
                    )
                cfg = parse_config(
                    self._inline("startds", i, "config", t["config"]), self.source, cfg
                )
            machine_layout(cfg, names[0])  # the startd's own view: refuses what does not fit
            check_knob_table(cfg, ("startd",))
            for knob in ("START", "RANK", "SLOT_WEIGHT"):
                if cfg.is_defined(knob):
                    cfg.get_expr(knob)
            # the startd's own checks: slot policies, SLOT_WEIGHT and consumption types
            Machine(names[0], cfg, "127.0.0.1:0", 0, 0.0).check_policies()
        except ConfigError as e:
            where = (
                f"{self.source}:{self.lines.table_start('startds', i) or 1}: [[startds]] #{i + 1}"
            )
            raise SpecError(placed(str(e), where)) from None
        return MachineGroup(names, per_actor, cfg)

    def _schedds(
        self: SpecBuilder, t: dict[str, Any], i: int, taken: set[str], groups: int
    ) -> ScheddGroup:
        self._unknown(t, SCHEDD_KEYS, "schedds", i)
        count = self._num(t, "schedds", i, "count", 1, int, 1, maximum=MAX_SCHEDDS)
        per_actor = self._num(t, "schedds", i, "per_actor", count, int, 1)
        pattern = t.get("name", "schedd{}" if groups == 1 else f"schedd{i + 1}_{{}}")
        if not isinstance(pattern, str):
            raise self.fail("schedds", i, "name", "must be a string pattern such as 'schedd{}'")
        try:
            names = format_names(pattern, count)
        except (IndexError, KeyError, ValueError) as e:
            raise self.fail("schedds", i, "name", f"bad name pattern {pattern!r}: {e}") from None
        for n in names:
            if n.lower() in taken or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.@\-]*", n):
                raise self.fail("schedds", i, "name", f"schedd name {n!r} is invalid or used twice")
            taken.add(n.lower())
        return ScheddGroup(names, per_actor)

    def _schedd(self: SpecBuilder, t: dict[str, Any], table: str, i: int, spec: PoolSpec) -> str:
        schedds = spec.schedd_names
        which = t.get("schedd", 0)
        if isinstance(which, bool) or not isinstance(which, (int, str)):
            raise self.fail(table, i, "schedd", "must be a schedd index or name")
        if isinstance(which, int):
            if not 0 <= which < len(schedds):
                raise self.fail(
                    table, i, "schedd", f"index {which} out of range (0..{len(schedds) - 1})"
                )
            return schedds[which]
        match = [n for n in schedds if n.lower() == which.lower()]
        if not match:
            raise self.fail(table, i, "schedd", f"no schedd named {which!r}")
        return match[0]
