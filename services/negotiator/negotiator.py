"""The negotiator daemon's core: what it keeps between cycles and what it decides around
one. The cycle itself is :func:`.cycle.negotiate`; the shell (``service.py``) fetches its
inputs, runs it, sends the matches and advertises, telling this core each step with
``now`` (and the CPU time it measured).

It holds the accountant (on disk: ``<state_dir>/accountant.json``, written atomically
after every cycle and every ``condor_userprio`` change, read back at a restart), the
group tree of the last cycle, the cadence, the cycle statistics history and the
NegotiatorLog lines not yet drained. It writes the NegotiatorLog's cycle-level lines
(HTCondor's "Couldn't fetch ads" / "Aborting negotiation cycle", "Failed to send ...
matches") and the negotiator's events: ``cycle``, and ``match``/``reject`` once a schedd
has its matches.
"""

from __future__ import annotations

import contextlib
import json
import logging
import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..claimid import redact, sinful
from ..classad import ClassAd
from ..config import ConfigDict
from ..durable import DiskFiles, Files
from .accountant import Accountant, AccountantError
from .accounting_ads import accounting_ads
from .cadence import Cadence
from .cycleinput import CycleCarry, CycleConfig
from .cycleoutput import CycleMatch, CycleRejection, CycleResult
from .durations import DurationHistogram
from .groups import GroupTree
from .held_ads import HeldSlotAds
from .log import LogLine, format_line
from .selfad import negotiator_ad
from .stats import StatsHistory

__all__ = ["LOG_BUFFER_LINES", "Negotiator"]

log = logging.getLogger(__name__)

ACCOUNTANT_FILE = "accountant.json"  # in the negotiator's state folder

LOG_BUFFER_LINES = 1_000_000  # lines kept for drain_log; older ones are dropped (counted)

Event = tuple[str, dict[str, Any]]  # (kind, ids)


class Negotiator:
    """One negotiator's state between cycles."""

    def __init__(
        self,
        name: str,
        config: ConfigDict,
        state: Path | Files,
        *,
        log_base_wall: float = 0.0,
        accountant: Accountant | None = None,
        priorities: Mapping[str, Mapping[str, float]] | None = None,
    ) -> None:
        self.name = name
        self.config = config
        # the accountant survives a crash (a folder: a file replaced atomically and
        # fsync'd at each write; a virtual run's simulated disk keeps it in memory)
        self.files: Files = DiskFiles(state) if isinstance(state, Path) else state
        self.log_base_wall = float(log_base_wall)
        # the ads' dates and time() in the expressions of a cycle count from the same date
        self.ad_epoch = int(log_base_wall)
        # what random() in the cycle's expressions draws from: the negotiator's own,
        # seeded by the pool's seed (a virtual run replays its draws)
        self.eval_rng = random.Random(f"{config.seed}:{name}:random()")
        self.cycle_config = CycleConfig.from_config(config)
        template = Accountant.from_config(config, self.cycle_config.groups)
        self.accountant = accountant or self._load_accountant(template, priorities or {})
        self.groups: GroupTree | None = None  # the group tree of the last cycle
        # the slot columns of the last cycle, for the next (most slots did not change)
        self.columns = CycleCarry()
        # the slot ads of the last snapshot: the next carries only those that changed
        self.slot_ads = HeldSlotAds()
        # userprio changes made while a cycle computes, replayed onto its accountant
        self._replay: list[tuple[str, str, float, float]] | None = None
        self.cadence = Cadence.from_config(config)
        self.history = StatsHistory(
            config.get_int("NEGOTIATION_CYCLE_STATS_LENGTH"), ad_epoch=self.ad_epoch
        )
        self.update_interval = config.get_float("NEGOTIATOR_UPDATE_INTERVAL")
        self.start_time = 0
        self.cycles = 0
        self.total_matches = 0
        self.durations = DurationHistogram()  # every cycle's, for the metrics
        self.peer_failures = 0
        self.log_dropped = 0
        self._log: list[str] = []
        self._events: list[Event] = []

    def snapshot_columns(self) -> list[str]:
        """The slot attributes to ask a columnar snapshot for: those the last cycle's
        expressions read (a cycle reads the same names as the one before, but for a
        new job's; what is not sent is read from the ads)."""
        return self.columns.slots.names_built()

    def started(self, now: float) -> None:
        self.start_time = int(now)
        self.cadence.next_due = now  # first cycle at start

    def drain_events(self) -> list[Event]:
        out, self._events = self._events, []
        return out

    def drain_log(self, limit: int | None = None) -> list[str]:
        """NegotiatorLog lines written since the last drain (the oldest ``limit``)."""
        out = self._log[:limit]
        del self._log[:limit]
        return out

    def _keep(self, lines: list[LogLine]) -> None:
        self._log.extend(format_line(x, self.log_base_wall) for x in lines)
        over = len(self._log) - LOG_BUFFER_LINES
        if over > 0:
            del self._log[:over]
            self.log_dropped += over

    # -- the accountant on disk -------------------------------------------------------
    def _load_accountant(
        self, template: Accountant, priorities: Mapping[str, Mapping[str, float]]
    ) -> Accountant:
        try:
            raw = self.files.read(ACCOUNTANT_FILE)
            if raw is not None:
                return Accountant.from_dict(json.loads(raw)).reconfigured(template)
        except (OSError, ValueError, AccountantError) as exc:
            # A damaged file must not stop the pool; it is kept aside for a person.
            log.error(
                "%s: cannot read %s (%s); starting from the spec's priorities",
                self.name,
                self.files.where(ACCOUNTANT_FILE),
                exc,
            )
            with contextlib.suppress(OSError):
                self.files.set_aside(ACCOUNTANT_FILE, ACCOUNTANT_FILE + ".bad")
        acct = template.copy()
        for name, values in priorities.items():
            if "factor" in values:
                acct.set_factor(name, float(values["factor"]))
            if "priority" in values:
                acct.set_priority(name, float(values["priority"]))
        return acct

    def save_accountant(self) -> None:
        """Write the accountant atomically (a crash leaves the old file or the new one)."""
        self.files.replace(ACCOUNTANT_FILE, json.dumps(self.accountant.to_dict()).encode())

    # -- condor_userprio ----------------------------------------------------------------
    def accounting_ads(self) -> list[ClassAd]:
        return accounting_ads(self.accountant, self.groups, self.name, self.ad_epoch)

    def userprio(self, action: str, name: str, value: float, now: float) -> list[ClassAd]:
        """Apply one condor_userprio change (AccountantError names a bad one): setfactor,
        setprio, setaccum (resource-seconds), setbegin and setlast (Unix dates),
        resetusage, resetall, delete; "" changes nothing."""
        self._apply(self.accountant.copy(), action, name, value, now, check=True)
        if action and self._replay is not None:
            self._replay.append((action, name, value, now))
        return self.accounting_ads()

    def _apply(
        self, acct: Accountant, action: str, name: str, value: float, now: float, *, check: bool
    ) -> None:
        if action == "setfactor":
            acct.set_factor(name, value)
        elif action == "setprio":
            acct.set_priority(name, value)
        elif action == "resetusage":
            acct.reset_usage(name, now)
        elif action == "resetall":
            acct.reset_all_usage(now)
        elif action == "setaccum":
            acct.set_accumulated_usage(name, value)
        elif action in ("setbegin", "setlast"):  # a date, kept in pool seconds
            setter = acct.set_begin_usage_time if action == "setbegin" else acct.set_last_usage_time
            setter(name, value - self.ad_epoch)
        elif action == "delete":
            if not acct.delete(name) and check:
                raise AccountantError(f"no accountant record named {name}")
        elif action:
            raise AccountantError(f"unknown userprio action {action!r}")
        if action:
            self.accountant = acct
            self.save_accountant()

    # -- one cycle, step by step ---------------------------------------------------------
    def cycle_aborted(self, start: float, now: float, why: str) -> None:
        """Phase 1 could not fetch the ads: HTCondor logs it and aborts, with no stats."""
        self.peer_failures += 1
        self._keep(
            [
                LogLine(start, "---------- Started Negotiation Cycle ----------"),
                LogLine(start, "Phase 1:  Obtaining ads from collector ..."),
                LogLine(now, f"Couldn't fetch ads: {why}"),
                LogLine(now, "Aborting negotiation cycle"),
            ]
        )

    def computing(self) -> None:
        """The cycle computes from here on: userprio changes are kept for replay."""
        self._replay = []

    def computed(self, result: CycleResult | None) -> None:
        """The cycle's accountant (with the userprio changes made meanwhile) and groups
        are the negotiator's now; None: the computation failed."""
        replay, self._replay = self._replay or [], None
        if result is None:
            return
        self.accountant = result.accountant
        for action, name, value, when in replay:
            self._apply(self.accountant.copy(), action, name, value, when, check=False)
        self.groups = result.groups
        try:
            self.save_accountant()
        except OSError as exc:
            log.error("%s: cannot write %s: %s", self.name, self.files.where(ACCOUNTANT_FILE), exc)

    def matches_sent(self, matches: list[CycleMatch], rejections: list[CycleRejection]) -> None:
        """One schedd has its matches and rejections: the negotiator's events for them."""
        for m in matches:
            self._events.append(
                (
                    "match",
                    {
                        "job": m.job_id,
                        "autocluster": m.autocluster_id,
                        "slot": m.slot_name,
                        "submitter": m.submitter,
                        "schedd": m.schedd,
                        "claim": redact(m.claim_id),
                    },
                )
            )
        for r in rejections:
            self._events.append(
                (
                    "reject",
                    {
                        "job": r.job_id,
                        "autocluster": r.autocluster_id,
                        "submitter": r.submitter,
                        "schedd": r.schedd,
                        "reason": r.reason,
                    },
                )
            )

    def matches_failed(
        self, result: CycleResult, schedd: str, address: str, matches: list[CycleMatch], now: float
    ) -> None:
        """A schedd did not take its matches: its submitters count as failed."""
        self.peer_failures += 1
        result.stats.submitters_failed |= {m.submitter for m in matches}
        result.log.append(
            LogLine(now, f"    Failed to send {len(matches)} matches to {schedd} {sinful(address)}")
        )

    def finish_cycle(
        self, result: CycleResult, start: float, now: float, cpu_time: float, failed: set[str]
    ) -> None:
        """The cycle is over: its statistics into the history, its log kept, its event."""
        result.stats.submitters_failed |= failed
        result.finish(now, cpu_time=cpu_time)
        self.cycles += 1
        self.total_matches += len(result.matches)
        self.history.push(result.stats)
        self.durations.observe(result.stats.duration)
        self._keep(result.log)
        # the groups' quotas as this cycle assigned them: the targets usage is measured against
        quotas = (
            {g.name: round(g.quota, 3) for g in result.groups.groups[1:]} if result.groups else {}
        )
        self._events.append(
            (
                "cycle",
                {
                    "cycle": self.cycles,
                    "start": round(start, 3),
                    "duration": round(result.stats.duration, 3),
                    "matches": len(result.matches),
                    "charged": result.stats.charged,
                    **({"quotas": quotas} if quotas else {}),
                },
            )
        )

    # -- the Negotiator ad -------------------------------------------------------------------
    def negotiator_ad(
        self, address: str, now: float, *, machine: str = "", duty_cycle: float = 0.0
    ) -> ClassAd:
        ad = negotiator_ad(
            self.name,
            address,
            start_time=self.ad_epoch + self.start_time,
            now=self.ad_epoch + now,
            update_interval=self.update_interval,
            machine=machine,
            duty_cycle=duty_cycle,
        )
        return self.history.publish(ad)

    def status(self, address: str) -> dict[str, Any]:
        latest = self.history.latest
        return {
            "name": self.name,
            "address": address,
            "cycles": self.cycles,
            "matches": self.total_matches,
            "next_cycle": self.cadence.next_due,
            "peer_failures": self.peer_failures,
            "log_lines_dropped": self.log_dropped,
            "last": latest.summary() if latest else None,
            "durations": self.durations.to_dict(),
        }
