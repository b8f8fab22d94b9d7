"""The collector's core: its ad store, its own ad, its housekeeping and its timers.

Housekeeping follows HTCondor's collector: the housekeeper runs every CLASSAD_LIFETIME
seconds (``scheduleHousekeeper(CLASSAD_LIFETIME)``), first one CLASSAD_LIFETIME after
start, and drops ads older than their lifetime; so a dead daemon's ad lingers for between
one and two lifetimes, as in a real pool. CLASSAD_LIFETIME <= 0 turns housekeeping off
(HTCondor's "no housekeeper"). A test or launcher may pass ``housekeeping_interval``.

The collector holds its own ad (MyType "Collector"), as HTCondor's ``sendCollectorAd``
does: Name is COLLECTOR_NAME (with ``@<host>`` added when it has no ``@``), else the
host; it carries the pool totals HTCondor publishes (HostsTotal, HostsClaimed,
HostsUnclaimed, HostsOwner, RunningJobs, IdleJobs, MachineAds, SubmitterAds). It is
refreshed every COLLECTOR_UPDATE_INTERVAL (900), or CLASSAD_LIFETIME if that is shorter,
so that it never expires.

Events: "ad_expired" (ad_type, name) for each ad the housekeeper drops, "ad_invalidated"
(ad_type, name) for each ad an invalidating update removes.

The core answers the daemon contract (``contract.py``): :meth:`Collector.deliver` takes
CollectorAdvertise, CollectorQuery and CollectorSnapshotRequest and puts the reply
(AdvertiseAck, QueryReply, SnapshotReply; a refusal as an ``Undeliverable`` carrying the
gRPC code a live call ends with) in the ``Ready`` it returns; :meth:`Collector.tick` runs
the timers due. The collector sends nothing of its own. Its counters are ``stats``.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..classad import ClassAd
from ..classad.tree import Expr
from ..config import ConfigDict
from ..contract import Peer, Ready, Undeliverable
from ..messages import (
    AdvertiseAck,
    CollectorAdvertise,
    CollectorQuery,
    CollectorSnapshotRequest,
    QueryReply,
    SnapshotReply,
)
from .selfad import collector_ad
from .store import (
    MACHINE_PRIVATE,
    AdRecord,
    AdStore,
    CollectorError,
    CollectorSnapshot,
    CostlyConstraint,
    PrivateAdsRefused,
    matching,
    projection_keys,
)

if TYPE_CHECKING:
    from ..auth import Principal

__all__ = ["PRIVATE_REFUSED", "Collector", "CollectorUpdate", "refusal_code"]

# who may read MachinePrivate ads (they hold claim ids): HTCondor's NEGOTIATOR level
# (Role values; auth.py is the live shell's, a core compares the role's value)
_PRIVATE_READERS = ("negotiator", "admin")
PRIVATE_REFUSED = (
    f"{MACHINE_PRIVATE} ads hold claim ids: only the negotiator or an admin may read them"
)
_NO_AD_TYPE = 'Query needs an ad_type (e.g. "Machine", "Scheduler")'


def refusal_code(exc: CollectorError) -> str:
    """The gRPC status a refused query or snapshot ends with."""
    if isinstance(exc, PrivateAdsRefused):
        return "PERMISSION_DENIED"
    if isinstance(exc, CostlyConstraint):
        return "RESOURCE_EXHAUSTED"
    return "INVALID_ARGUMENT"


@dataclass(frozen=True)
class CollectorUpdate:
    """One update as the collector received it: an ad to store, or to invalidate (its
    Name names the ads to drop), or the reason its bytes did not decode."""

    index: int  # its place in its request, for error lines
    ad_type: str
    ad: ClassAd | None
    # the ad's bytes as sent (the store answers queries with them); None: an ad handed
    # over in-process, encoded when a query needs it
    raw: bytes | None = None
    invalidate: bool = False
    stable_prefix: int = 0  # the sender's repeating part (see AdStore.update)
    name: str = ""  # the ad's Name, for the error line of an ad that did not decode
    error: str = ""  # why it did not decode


_SELF_AD, _HOUSEKEEPING = "self ad", "housekeeping"


class Collector:
    """One collector daemon's state and decisions."""

    def __init__(
        self,
        config: ConfigDict,
        *,
        housekeeping_interval: float | None = None,
        ad_epoch: int = 0,
        duty_cycle: Callable[[], float] | None = None,
    ) -> None:
        cfg = config.for_subsystem("COLLECTOR")
        self.classad_lifetime = cfg.get_int("CLASSAD_LIFETIME")
        self.update_interval = cfg.get_int("COLLECTOR_UPDATE_INTERVAL")
        self._configured_name = cfg.get_str("COLLECTOR_NAME", "").strip()
        if housekeeping_interval is None and self.classad_lifetime > 0:
            housekeeping_interval = float(self.classad_lifetime)
        self.housekeeping_interval = housekeeping_interval
        # the own ad is refreshed before it could expire
        refresh = float(self.update_interval)
        if self.classad_lifetime > 0:
            refresh = min(refresh, float(self.classad_lifetime))
        self._intervals = {_SELF_AD: refresh, _HOUSEKEEPING: housekeeping_interval or 0.0}
        self._due: dict[str, float] = {}
        self.store = AdStore(self.classad_lifetime, ad_epoch=ad_epoch)
        # what random() in the ads draws from: the collector's own, seeded by the pool's
        # seed (a virtual run replays its draws); a query draws from its own (store.py)
        self.store.rng = random.Random(f"{config.seed}:collector:random()")
        self.name = ""
        self.address = ""
        self.host = ""
        # the loop's RecentDaemonCoreDutyCycle: measured live, read when the own ad is
        # made (none given: the ``duty_cycle`` attribute, 0.0 as in virtual time)
        self.duty_cycle = 0.0
        self._duty_cycle = duty_cycle or (lambda: self.duty_cycle)
        self._start_time = 0
        self._self_seq = 0
        self._events: list[tuple[str, dict[str, Any]]] = []
        self.stats = {
            "updates_refused": 0,
            "invalidations": 0,
            "expired": 0,
            "advertise_calls": 0,
            "queries": 0,
            "snapshots": 0,
            "snapshot_deltas": 0,  # snapshots that carried only the ads updated since
            "snapshot_slot_ads": 0,  # slot ads the snapshots carried
        }

    def name_on(self, host: str) -> str:
        """The collector's Name on ``host``."""
        name = self._configured_name
        if name:
            return name if "@" in name else f"{name}@{host}"
        return host

    # -- time -------------------------------------------------------------------------
    def start(self, now: float, host: str, address: str) -> Ready:
        """Begin: the own ad now, the first refresh and housekeeping one interval on."""
        self.name, self.address, self.host = self.name_on(host), address, host
        self._start_time = self.store.ad_epoch + int(now)  # DaemonStartTime, a date
        self.publish_self_ad(now)
        self._due = {timer: now + step for timer, step in self._intervals.items() if step > 0}
        return self._ready()

    def tick(self, now: float) -> Ready:
        """The contract's tick: run the timers due (nothing is sent)."""
        self.on_wakeup(now)
        return self._ready()

    def next_wakeup(self) -> float | None:
        """When the collector next has something to do (None: never)."""
        return min(self._due.values(), default=None)

    def on_wakeup(self, now: float) -> None:
        """Run what is due by ``now``: the own ad's refresh, then housekeeping; each
        timer keeps its period (a late round does not shift the next)."""
        for timer, due in list(self._due.items()):
            if due > now:
                continue
            self._due[timer] = max(due + self._intervals[timer], now)
            if timer == _SELF_AD:
                self.publish_self_ad(now)
            else:
                self.housekeep(now)

    def housekeep(self, now: float) -> list[tuple[str, str]]:
        """One housekeeper round: drop stale ads, one "ad_expired" event each."""
        removed = self.store.expire(now)
        for ad_type, name in removed:
            self._events.append(("ad_expired", {"ad_type": ad_type, "name": name}))
        self.stats["expired"] += len(removed)
        return removed

    def publish_self_ad(self, now: float) -> None:
        """Store the collector's own ad with fresh pool totals."""
        self._self_seq += 1
        ad = collector_ad(
            self.store,
            name=self.name,
            address=self.address,
            start_time=self._start_time,
            sequence=self._self_seq,
            update_interval=self.update_interval,
            now=self.store.ad_epoch + int(now),
            machine=self.host,
            duty_cycle=self._duty_cycle(),
        )
        self.store.update("Collector", ad, now, owned=True)

    # -- updates ----------------------------------------------------------------------
    def advertise(self, updates: Iterable[CollectorUpdate], now: float) -> tuple[int, list[str]]:
        """Apply each update on its own: (how many were applied, an error line for each
        refused one)."""
        accepted = 0
        errors: list[str] = []
        for u in updates:
            try:
                if u.error:
                    raise CollectorError(u.error)
                assert u.ad is not None
                if u.invalidate:
                    name = self.store.ad_name(u.ad_type, u.ad, now)
                    for ad_type, gone in self.store.invalidate(u.ad_type, name):
                        self.stats["invalidations"] += 1
                        self._events.append(("ad_invalidated", {"ad_type": ad_type, "name": gone}))
                else:
                    self.store.update(
                        u.ad_type, u.ad, now, u.raw, owned=True, stable_prefix=u.stable_prefix
                    )
                accepted += 1
            except CollectorError as exc:
                self.stats["updates_refused"] += 1
                date, rng = self.store.ad_epoch + now, self.store.rng
                name = u.name or (
                    u.ad.get_value("Name", "", now=date, rng=rng) if u.ad is not None else ""
                )
                shown = repr(name) if isinstance(name, str) and name else ""
                label = " ".join(p for p in (u.ad_type, shown) if p)
                errors.append(f"update {u.index} ({label or '?'}): {exc}")
        return accepted, errors

    # -- the contract -----------------------------------------------------------------
    def deliver(self, msg: Any, sender: Peer, now: float) -> Ready:
        """Answer one request; its reply (or refusal) goes to ``sender.address``."""
        ready = Ready()
        if isinstance(msg, CollectorAdvertise):
            self.stats["advertise_calls"] += 1
            accepted, errors = self.advertise(msg.updates, now)
            ready.send(sender.address, AdvertiseAck(msg.corr, accepted, errors))
        elif isinstance(msg, CollectorQuery):
            try:
                keep = projection_keys(msg.projection)
                records = self.query(msg.ad_type, msg.constraint, sender.principal, now)
                reply: Any = QueryReply(msg.corr, [r.projected(keep) for r in records])
            except CollectorError as exc:
                reply = Undeliverable(msg, refusal_code(exc), str(exc))
            ready.send(sender.address, reply)
        elif isinstance(msg, CollectorSnapshotRequest):
            try:
                reply = SnapshotReply(msg.corr, self.snapshot(msg, now))
            except CollectorError as exc:
                reply = Undeliverable(msg, refusal_code(exc), str(exc))
            ready.send(sender.address, reply)
        else:
            raise TypeError(f"the collector takes no {type(msg).__name__}")
        return self._ready(ready)

    def _ready(self, ready: Ready | None = None) -> Ready:
        """``ready`` (or a new one) with the events since the last call."""
        ready = ready or Ready()
        name = self.name
        ready.events += [(name, kind, fields) for kind, fields in self.drain_events()]
        return ready

    # -- reads --------------------------------------------------------------------------
    def date(self, now: float) -> float:
        """Pool time ``now`` as the date time() reads in a constraint."""
        return self.store.ad_epoch + now

    def candidates(
        self, ad_type: str, principal: Principal | None, *, typed: bool = False
    ) -> list[AdRecord]:
        """Every record a query of ``ad_type`` by ``principal`` chooses from (counted as
        a query): MachinePrivate only for the negotiator or an admin (PrivateAdsRefused);
        ``typed``: an empty type is refused (a Query names one; a CEDAR query's table
        may be empty)."""
        self.stats["queries"] += 1
        ad_type = ad_type.strip()
        if typed and not ad_type:
            raise CollectorError(_NO_AD_TYPE)
        private = ad_type.lower() == MACHINE_PRIVATE.lower()
        if private and (principal is None or principal.role not in _PRIVATE_READERS):
            raise PrivateAdsRefused(PRIVATE_REFUSED)
        return self.store.candidates(ad_type, allow_private=private)

    def query(
        self, ad_type: str, constraint: str | Expr | None, principal: Principal | None, now: float
    ) -> list[AdRecord]:
        """The records of a Query (unprojected): CollectorError when refused."""
        records = self.candidates(ad_type, principal, typed=True)
        return matching(records, constraint, self.date(now))

    def snapshot(self, req: CollectorSnapshotRequest, now: float) -> CollectorSnapshot:
        """The negotiator's slot ads (and their private ones): CollectorError when the
        request is refused."""
        self.stats["snapshots"] += 1
        since: Any = req.since
        snap = self.store.snapshot(req.constraint, req.projection, now, since, columns=req.columns)
        self.stats["snapshot_deltas"] += snap.delta
        self.stats["snapshot_slot_ads"] += len(snap.slots)
        return snap

    def drain_events(self) -> list[tuple[str, dict[str, Any]]]:
        """What happened since the last call: (kind, fields), oldest first."""
        out, self._events = self._events, []
        return out

    def status(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "address": self.address,
            "ads": self.store.counts(),
            "total_ads": len(self.store),
            "updates": self.store.updates,
            **self.stats,
        }
