"""The pool's event kinds: who emits each, its fields, what it means.

One table for the readers that used to keep their own idea of an event: the daemons that
emit them (a test scans the source against this table, and the kernel's whole-pool tests
check every event they write with :func:`event_problem`) and docs/python-api.md (its events
table is rendered from here; a test keeps it fresh).

Every event also has ``t`` (pool seconds), ``daemon`` (the emitting daemon's name) and
``kind``. A kind is emitted by the daemon that owns its fact; ``job_evicted`` is the one
kind two daemons emit, each from its own side, with its own fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["COMMON", "EVENT_KINDS", "EventKind", "EventShape", "event_problem", "render_table"]

COMMON = ("t", "daemon", "kind")


@dataclass(frozen=True)
class EventShape:
    """The fields one daemon gives a kind: always there, and there only sometimes
    (``groups``: optional fields that come together, written in one bracket)."""

    fields: tuple[str, ...]
    groups: tuple[tuple[str, ...], ...] = ()

    @property
    def optional(self) -> frozenset[str]:
        return frozenset(f for g in self.groups for f in g)

    def fits(self, keys: set[str]) -> bool:
        return set(self.fields) <= keys and keys <= set(self.fields) | self.optional


@dataclass(frozen=True)
class EventKind:
    name: str
    shapes: Mapping[str, EventShape]  # emitting daemon (negotiator, schedd, ...) -> fields
    meaning: str
    doc_fields: str = ""  # the docs' field cell where the fields are not a plain list

    @property
    def daemons(self) -> tuple[str, ...]:
        return tuple(self.shapes)


def _kind(
    name: str,
    daemon: str,
    fields: str,
    meaning: str,
    *groups: str,
    doc_fields: str = "",
) -> EventKind:
    shape = EventShape(tuple(fields.split()), tuple(tuple(g.split()) for g in groups))
    return EventKind(name, {daemon: shape}, meaning, doc_fields)


_FAULT_GROUPS = ("peer duration fraction delay skew", "peer_daemons")
_FAULT_FIELDS = "fault target actors daemons"

EVENT_KINDS: dict[str, EventKind] = {
    k.name: k
    for k in (
        # the negotiator: the cycle and what it matched
        _kind(
            "cycle",
            "negotiator",
            "cycle start duration matches charged",
            "a negotiation cycle ended (`quotas`: the groups' quotas it assigned)",
            "quotas",
        ),
        _kind(
            "match",
            "negotiator",
            "job autocluster slot submitter schedd claim",
            "a job matched a slot",
        ),
        _kind(
            "reject",
            "negotiator",
            "job autocluster submitter schedd reason",
            "a request matched nothing this cycle",
        ),
        # the collector: ads that left it
        _kind(
            "ad_expired",
            "collector",
            "ad_type name",
            "an ad passed its lifetime (CLASSAD_LIFETIME)",
        ),
        _kind(
            "ad_invalidated",
            "collector",
            "ad_type name",
            "an ad withdrawn by its daemon (an invalidate update)",
        ),
        # the schedd: the job's side
        _kind("submit", "schedd", "cluster procs owner submitter", "jobs queued"),
        _kind(
            "rejected",
            "schedd",
            "job reason submitter",
            "the negotiator's reason for not serving the job, set on it (LastRejMatchReason)",
        ),
        _kind("job_matched", "schedd", "job slot claim submitter", "the schedd took a match"),
        _kind("claim_held", "schedd", "job slot claim submitter", "the startd granted the claim"),
        _kind(
            "claim_refused", "schedd", "slot claim error", "the startd refused the claim request"
        ),
        _kind(
            "leftover_match",
            "schedd",
            "job slot claim submitter",
            "a job placed in a claim's leftovers (CLAIM_PARTITIONABLE_LEFTOVERS)",
        ),
        _kind("job_started", "schedd", "job slot claim submitter", "the activation succeeded"),
        _kind("activate_failed", "schedd", "job slot error", "the startd refused the activation"),
        _kind(
            "activate_unanswered",
            "schedd",
            "job slot claim error until",
            "an activation went unanswered: the job is kept off the market until `until`",
        ),
        _kind(
            "activate_settled",
            "schedd",
            "job slot why",
            "an unanswered activation is settled (the release answered, or the lease ran out)",
        ),
        _kind(
            "claim_reuse",
            "schedd",
            "job slot claim submitter",
            "a claim reused for the next job (CLAIM_WORKLIFE)",
        ),
        _kind(
            "job_completed",
            "schedd",
            "job slot submitter exit_code",
            "a job left the queue completed",
        ),
        EventKind(
            "job_evicted",
            {
                "schedd": EventShape(("job", "slot", "reason")),
                "startd": EventShape(("slot", "job", "claim", "start", "end", "reason")),
            },
            "a job was evicted (preempted, vacated by policy)",
        ),
        _kind(
            "job_exit_ignored",
            "schedd",
            "job slot claim why",
            "an exit on a claim the schedd gave up",
        ),
        _kind(
            "job_reconnected",
            "schedd",
            "job slot claim",
            "a restarted schedd got its running job back",
        ),
        _kind(
            "reconnect_failed",
            "schedd",
            "job slot claim reason heard lease",
            "the schedd gave up a claim whose startd did not answer for a lease",
        ),
        _kind(
            "claim_lost",
            "schedd",
            "slot claim",
            "the startd no longer holds the claim (its keepalive said so): the job is evicted",
        ),
        _kind(
            "claim_dropped",
            "schedd",
            "slot claim",
            "the schedd forgot a claim (and asked its startd to release it, unless the startd "
            "closed it)",
        ),
        _kind(
            "hold", "schedd", "job submitter code reason", "a job held (HoldReasonCode, HoldReason)"
        ),
        _kind("release_hold", "schedd", "job submitter reason", "a held job released"),
        _kind("remove", "schedd", "job submitter reason", "a job removed"),
        _kind("vacate", "schedd", "job submitter reason", "a running job vacated by its policy"),
        _kind(
            "requeue",
            "schedd",
            "job submitter reason",
            "a job that exited goes back to idle (OnExitRemove false: it runs again)",
        ),
        _kind(
            "bad_record",
            "schedd",
            "job where problem",
            "a record the schedd could not read (dropped, logged)",
        ),
        _kind(
            "user_log_failed",
            "schedd",
            "job path error",
            "the job event log could not be written (once per file)",
        ),
        # the startd: the slot's side
        _kind(
            "claim",
            "startd",
            "slot job claim schedd submitter cpus memory disk",
            "a slot claimed (what the slot holds)",
            "preempts",
        ),
        _kind(
            "slot_matched",
            "startd",
            "claim",
            "a slot in the Matched state (NEGOTIATOR_INFORM_STARTD)",
        ),
        _kind(
            "match_timeout",
            "startd",
            "slot message",
            "a Matched slot that got no claim (MATCH_TIMEOUT)",
        ),
        _kind(
            "activate",
            "startd",
            "slot job claim start end cpus",
            "a job started; `end` is when it will end",
        ),
        _kind("job_exit", "startd", "slot job claim start end", "a job ended"),
        _kind(
            "release",
            "startd",
            "slot claim",
            "a claim ended (a job killed with it; a preemption's reason)",
            "job killed",
            "reason",
        ),
        _kind(
            "lease_expired",
            "startd",
            "slot claim schedd last_heard lease deadline interval message",
            "the schedd was not heard from for the claim's lease: \"claim lease expired "
            '(condor_schedd gone?)" (`t` is the deadline)',
            "job",
        ),
        # the master: deaths, restarts and faults
        _kind("daemon_died", "master", "actor daemons cause", "an actor or a daemon died"),
        _kind(
            "daemon_restarted",
            "master",
            "actor daemons address down cause",
            "it came back after `down` pool seconds",
        ),
        _kind("fault_start", "master", _FAULT_FIELDS, "a fault began", *_FAULT_GROUPS),
        _kind(
            "fault_end",
            "master",
            _FAULT_FIELDS,
            "it ended",
            *_FAULT_GROUPS,
            doc_fields="as `fault_start`: `fault`, `target`, [...], `actors`, `daemons`, "
            "[`peer_daemons`]",
        ),
        _kind(
            "fault_failed",
            "master",
            "fault target error",
            "a fault could not be injected",
            *_FAULT_GROUPS[:1],
            doc_fields="`fault`, `target`, ..., `error`",
        ),
    )
}


def event_problem(event: Mapping[str, Any]) -> str | None:
    """Why an event does not fit its kind (None when it does): an unknown kind, a missing
    field or one its kind never has."""
    kind = EVENT_KINDS.get(event.get("kind"))  # type: ignore[arg-type]
    if kind is None:
        return f"unknown event kind {event.get('kind')!r}"
    keys = set(event) - set(COMMON)
    if any(shape.fits(keys) for shape in kind.shapes.values()):
        return None
    shape = next(iter(kind.shapes.values())) if len(kind.shapes) == 1 else None
    if shape is None:
        return f"{kind.name}: fields {sorted(keys)} fit none of its daemons' ({', '.join(kind.daemons)})"
    missing = sorted(set(shape.fields) - keys)
    extra = sorted(keys - set(shape.fields) - shape.optional)
    parts = ([f"missing {missing}"] if missing else []) + ([f"unknown {extra}"] if extra else [])
    return f"{kind.name}: " + ", ".join(parts)


def _cell(shape: EventShape) -> str:
    def names(fs: tuple[str, ...]) -> str:
        return ", ".join(f"`{f}`" for f in fs)

    return ", ".join([names(shape.fields)] + [f"[{names(g)}]" for g in shape.groups])


def render_table() -> str:
    """docs/python-api.md's events table (the text after its ``<!-- events -->`` marker)."""
    rows = ["| kind | from | fields | what happened |", "|---|---|---|---|"]
    for kind in EVENT_KINDS.values():
        if kind.doc_fields:
            cell = kind.doc_fields
        elif len(kind.shapes) == 1:
            cell = _cell(next(iter(kind.shapes.values())))
        else:
            cell = "; ".join(f"{d}: {_cell(s)}" for d, s in kind.shapes.items())
        rows.append(f"| `{kind.name}` | {', '.join(kind.daemons)} | {cell} | {kind.meaning} |")
    return "\n".join(rows)
