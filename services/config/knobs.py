"""The table of knobs the daemons read: name, type, which daemons read it, its check.

Defaults live beside it in :mod:`.defaults` (HTCondor's param table values); this table
says how a value is read and what range it must fall in, so that the pool spec can check
every knob of a pool, through each reading daemon's view (``NEGOTIATOR.X`` wins over
``X`` for the negotiator), before anything starts (:func:`check_knobs`), and
``mockpool config`` can list them. Ranges are mockpool's checks: values a daemon here
could not run with (HTCondor's own clamps differ knob by knob; see docs/config.md).

Knob families (``SLOT_TYPE_<N>``, ``GROUP_QUOTA_<group>``, ``<NAME>_LIMIT``, ...) are
checked by the code that reads them (``slot_types``, ``GroupConfig``, the limits).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..classad import parse_expr
from .configdict import ConfigDict
from .defaults import DEFAULTS
from .errors import ConfigError

__all__ = ["KNOBS", "KnobInfo", "check_knobs", "knob_rows"]

COLLECTOR, NEGOTIATOR, SCHEDD, STARTD = "collector", "negotiator", "schedd", "startd"


@dataclass(frozen=True)
class KnobInfo:
    name: str
    kind: str  # int, float, bool, size_mb, size_kb, str, list (ConfigDict.get_<kind>), expr
    daemons: tuple[str, ...]
    minimum: float | None = None
    maximum: float | None = None

    @property
    def default(self) -> str:
        return DEFAULTS.get(self.name, "")

    def read(self, cfg: ConfigDict) -> object:
        """The value as its daemons read it (ConfigError naming the knob's line if it
        cannot be read, or if it is out of range); None when neither the configuration
        nor the defaults give it a value (its daemons then do without)."""
        if not cfg.get_str(self.name).strip():  # unset, or a default of unset macros
            return None
        if self.kind == "expr":
            return cfg.get_expr(self.name, validate=parse_expr)
        value = getattr(cfg, f"get_{self.kind}")(self.name)
        if isinstance(value, int | float) and not isinstance(value, bool):
            low, high = self.minimum, self.maximum
            if (low is not None and value < low) or (high is not None and value > high):
                knob = cfg.blame(self.name)
                written = f"{knob.where}: {knob.name}" if knob is not None else self.name
                raise ConfigError(f"{written} = {value}: {self.range_text()}")
        return value

    def range_text(self) -> str:
        if self.minimum is not None and self.maximum is not None:
            return f"must be between {self.minimum:g} and {self.maximum:g}"
        if self.minimum is not None:
            return f"must be at least {self.minimum:g}"
        return f"must be at most {self.maximum:g}"


def _k(
    name: str,
    kind: str,
    *daemons: str,
    minimum: float | None = None,
    maximum: float | None = None,
) -> KnobInfo:
    return KnobInfo(name, kind, daemons, minimum, maximum)


KNOBS: dict[str, KnobInfo] = {
    k.name: k
    for k in (
        # negotiator: cadence and its limits
        _k("NEGOTIATOR_INTERVAL", "float", NEGOTIATOR, minimum=1),
        _k("NEGOTIATOR_MIN_INTERVAL", "float", NEGOTIATOR, minimum=0),
        _k("NEGOTIATOR_CYCLE_DELAY", "float", NEGOTIATOR, minimum=0),
        _k("NEGOTIATOR_MAX_TIME_PER_CYCLE", "float", NEGOTIATOR, minimum=0),
        _k("NEGOTIATOR_MAX_TIME_PER_SUBMITTER", "float", NEGOTIATOR, minimum=0),
        _k("NEGOTIATOR_MAX_TIME_PER_SCHEDD", "float", NEGOTIATOR, minimum=0),
        _k("NEGOTIATOR_MAX_TIME_PER_PIESPIN", "float", NEGOTIATOR, minimum=0),
        _k("NEGOTIATOR_RESOURCE_REQUEST_LIST_SIZE", "int", NEGOTIATOR, minimum=1),
        _k("NEGOTIATOR_UPDATE_INTERVAL", "float", NEGOTIATOR, minimum=1),
        _k("NEGOTIATION_CYCLE_STATS_LENGTH", "int", NEGOTIATOR, minimum=0, maximum=100),
        _k("NEGOTIATOR_INFORM_STARTD", "bool", NEGOTIATOR),
        # the accountant and fair share
        _k("PRIORITY_HALFLIFE", "float", NEGOTIATOR, minimum=1e-3),
        _k("DEFAULT_PRIO_FACTOR", "float", NEGOTIATOR, minimum=1),
        _k("NICE_USER_PRIO_FACTOR", "float", NEGOTIATOR, minimum=1),
        _k("NEGOTIATOR_USE_SLOT_WEIGHTS", "bool", NEGOTIATOR, STARTD),
        _k("SLOT_WEIGHT", "expr", NEGOTIATOR, STARTD),
        # matching order and preemption
        _k("NEGOTIATOR_PRE_JOB_RANK", "expr", NEGOTIATOR),
        _k("NEGOTIATOR_POST_JOB_RANK", "expr", NEGOTIATOR),
        _k("NEGOTIATOR_CONSIDER_PREEMPTION", "bool", NEGOTIATOR),
        _k("NEGOTIATOR_CONSIDER_EARLY_PREEMPTION", "bool", NEGOTIATOR),
        _k("PREEMPTION_REQUIREMENTS", "expr", NEGOTIATOR),
        _k("PREEMPTION_RANK", "expr", NEGOTIATOR),
        # group quotas
        _k("NEGOTIATOR_ALLOW_QUOTA_OVERSUBSCRIPTION", "bool", NEGOTIATOR),
        _k("GROUP_ACCEPT_SURPLUS", "bool", NEGOTIATOR),
        _k("GROUP_AUTOREGROUP", "bool", NEGOTIATOR),
        _k("GROUP_QUOTA_MAX_ALLOCATION_ROUNDS", "int", NEGOTIATOR, minimum=1),
        _k("GROUP_SORT_EXPR", "expr", NEGOTIATOR),
        _k("CONCURRENCY_LIMIT_DEFAULT", "float", NEGOTIATOR, minimum=0),
        # startd: layout, partitionable slots, policy, claims
        _k("NUM_CPUS", "int", STARTD, minimum=1),
        _k("MEMORY", "size_mb", STARTD, minimum=1),
        _k("RESERVED_MEMORY", "size_mb", STARTD, minimum=0),
        _k("DISK", "size_kb", STARTD, minimum=0),
        _k("MAX_SLOT_TYPES", "int", STARTD, minimum=1),
        _k("SLOT_TYPE_0_PARTITIONABLE", "bool", STARTD),
        _k("CONSUMPTION_POLICY", "bool", STARTD),
        _k("CONSUMPTION_CPUS", "expr", STARTD),
        _k("CONSUMPTION_MEMORY", "expr", STARTD),
        _k("CONSUMPTION_DISK", "expr", STARTD),
        _k("CLAIM_PARTITIONABLE_LEFTOVERS", "bool", STARTD),
        _k("MODIFY_REQUEST_EXPR_REQUESTCPUS", "expr", STARTD),
        _k("MODIFY_REQUEST_EXPR_REQUESTMEMORY", "expr", STARTD),
        _k("MODIFY_REQUEST_EXPR_REQUESTDISK", "expr", STARTD),
        _k("START", "expr", STARTD),
        _k("RANK", "expr", STARTD),
        _k("SUSPEND", "expr", STARTD),
        _k("CONTINUE", "expr", STARTD),
        _k("PREEMPT", "expr", STARTD),
        _k("KILL", "expr", STARTD),
        _k("WANT_SUSPEND", "expr", STARTD),
        _k("WANT_VACATE", "expr", STARTD),
        _k("IS_OWNER", "expr", STARTD),
        _k("UPDATE_INTERVAL", "float", STARTD, minimum=1),
        _k("CLAIM_WORKLIFE", "int", STARTD, minimum=-1),
        _k("ALIVE_INTERVAL", "int", STARTD, SCHEDD, minimum=1),
        _k("MAX_CLAIM_ALIVES_MISSED", "int", STARTD, minimum=1),
        _k("MATCH_TIMEOUT", "int", STARTD, minimum=0),
        _k("STARTD_ATTRS", "str", STARTD),
        # schedd and submit
        _k("JOB_DEFAULT_LEASE_DURATION", "int", SCHEDD, minimum=0),
        _k("SCHEDD_INTERVAL", "int", SCHEDD, minimum=1),
        _k("SCHEDD_MIN_INTERVAL", "int", SCHEDD, minimum=0),
        _k("SCHEDD_SEND_RESCHEDULE", "bool", SCHEDD),
        _k("SUBMIT_SEND_RESCHEDULE", "bool", SCHEDD),
        _k("MAX_JOBS_RUNNING", "int", SCHEDD, minimum=0),
        _k("MAX_JOBS_PER_SUBMISSION", "int", SCHEDD, minimum=1),
        _k("JOB_DEFAULT_REQUESTCPUS", "expr", SCHEDD),
        _k("JOB_DEFAULT_REQUESTMEMORY", "expr", SCHEDD),
        _k("JOB_DEFAULT_REQUESTDISK", "expr", SCHEDD),
        _k("PERIODIC_EXPR_INTERVAL", "int", SCHEDD, minimum=1),
        _k("SYSTEM_MAX_RELEASES", "int", SCHEDD),
        _k("WALL_CLOCK_CKPT_INTERVAL", "int", SCHEDD, minimum=1),
        _k("UID_DOMAIN", "str", SCHEDD),
        _k("DEFAULT_USERLOG_FORMAT_OPTIONS", "str", SCHEDD),
        _k("SIGNIFICANT_ATTRIBUTES", "list", SCHEDD),
        _k("ADD_SIGNIFICANT_ATTRIBUTES", "list", SCHEDD),
        _k("REMOVE_SIGNIFICANT_ATTRIBUTES", "list", SCHEDD),
        _k("IMMUTABLE_JOB_ATTRS", "list", SCHEDD),
        _k("PROTECTED_JOB_ATTRS", "list", SCHEDD),
        _k("SECURE_JOB_ATTRS", "list", SCHEDD),
        # what condor_submit's default Requirements read of the submit host
        _k("ARCH", "str", SCHEDD),
        _k("OPSYS", "str", SCHEDD),
        _k("FILESYSTEM_DOMAIN", "str", SCHEDD, STARTD),
        _k("APPEND_REQUIREMENTS", "str", SCHEDD),
        _k("APPEND_REQ_VANILLA", "str", SCHEDD),
        _k("SUBMIT_GENERATE_CUSTOM_RESOURCE_REQUIREMENTS", "bool", SCHEDD),
        # startd (the slot types themselves: config/slots.py)
        _k("NUM_SLOTS", "int", STARTD),
        _k("MOCK_GPUS", "int", STARTD),
        _k("STARTD_EXPRS", "str", STARTD),
        # collector
        _k("CLASSAD_LIFETIME", "int", COLLECTOR, minimum=1),
        _k("COLLECTOR_UPDATE_INTERVAL", "int", COLLECTOR, minimum=1),
        _k("COLLECTOR_NAME", "str", COLLECTOR),
    )
}


def check_knobs(cfg: ConfigDict, daemons: tuple[str, ...] = ()) -> None:
    """Read every knob of the table as each daemon that reads it would (only those of
    ``daemons``, when given): ConfigError, naming the knob's file and line, for the first
    that cannot be read or is out of range."""
    for info in KNOBS.values():
        for daemon in info.daemons:
            if not daemons or daemon in daemons:
                info.read(cfg.for_subsystem(daemon.upper()))


def knob_rows(daemon: str = "") -> list[tuple[str, str, str, str, str]]:
    """(name, type, range, daemons, default) for each knob, by name (of ``daemon`` only,
    when given): what ``mockpool config list`` prints."""
    rows = []
    for name in sorted(KNOBS):
        info = KNOBS[name]
        if daemon and daemon not in info.daemons:
            continue
        low, high = info.minimum, info.maximum
        limits = (
            f"{low:g}..{high:g}"
            if low is not None and high is not None
            else f">= {low:g}"
            if low is not None
            else f"<= {high:g}"
            if high is not None
            else ""
        )
        rows.append((name, info.kind, limits, ",".join(info.daemons), info.default))
    return rows
