"""The collector's ad store: ads by (type, Name), refreshed by updates, dropped when stale.

Pure core: no gRPC, no clock. Every method takes ``now`` (pool seconds) and returns what
happened. Rules, from HTCondor's collector (``collector_engine.cpp``, ``collector.cpp``):

- An ad is keyed by its type and ``Name``; both compare without regard to case. Any MyType
  is accepted (HTCondor keeps unknown types in "generic" tables). An update replaces the
  whole stored ad and stamps ``LastHeardFrom`` (the date: ``ad_epoch + int(now)``); ``UpdateSequenceNumber`` is
  kept as the daemon sent it. An ad without ``MyType`` gets the update's type; one whose
  MyType names another type is refused (so a private ad says "MachinePrivate", the pool's
  convention, where HTCondor's collector relabels private ads "Machine").
- Expiry (the housekeeper): an ad goes when ``int(now) - last_heard > lifetime``
  (strictly greater, as HTCondor's ``cleanHashTable``), lifetime being the ad's
  ``ClassAdLifetime`` when it evaluates to an integer, else ``CLASSAD_LIFETIME`` (900). Between housekeeping rounds a
  stale ad is still stored and still answers queries, as in HTCondor.
- A startd's private ad ("MachinePrivate", its claim ids) lives beside its public slot ad
  under the same Name. Invalidating the public ad drops the private one too (HTCondor's
  INVALIDATE_STARTD_ADS clears both tables). HTCondor expires the two tables separately,
  but they always arrive in one message and so expire together; here the startd sends
  them as two updates, so removing a public ad (expiry or invalidation) also removes its
  private ad, and a private ad with no fresh updates still expires on its own clock.
- Queries evaluate the constraint with the ad as MY and no TARGET; an ad is selected
  when the value is ``true`` or a non-zero number (old ClassAd semantics, which
  HTCondor's daemons use: ``IsBooleanValueEquiv``). UNDEFINED, ERROR, strings, lists,
  ``false`` and 0 do not select. Private ads are never returned by :meth:`AdStore.query`.
- Projection keeps the listed attributes (names ignore case) plus ``MyType``: HTCondor's
  wire protocol sends an ad's type beside its attributes even when the query projects,
  so a projected result still says what it is. Snapshots also keep ``Name``, the key that
  joins a slot to its private ad. Listing an attribute an ad lacks adds nothing.

Each stored ad keeps its protobuf wire form (bytes of a ``mockpool.v1.ClassAd``) next to
it, so a query without projection never re-encodes ads: a negotiation cycle's snapshot of
10,000 slots is a concatenation of stored bytes.

Every update gets the store's next sequence number, and the store an epoch of its own (a
collector that restarts starts a new one). A snapshot asked for "since" an earlier one of
the same epoch names every ad it holds but carries only those updated after it: a
negotiator that keeps the ads of its last cycle is sent the few that changed, not the
10,000 that did not (HTCondor's negotiator fetches every ad every cycle; the allocation
is the same, the bytes are fewer). While no ad came, went or was renamed since, the ads
updated after it are found in a log of the updates, not by a scan of every ad.
"""

from __future__ import annotations

import bisect
import functools
import heapq
import logging
import random
import secrets
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..classad import ClassAd
from ..classad.tree import Expr, Literal
from ..packedcolumns import PackedColumn
from ..v1 import classad_pb2 as pb
from ..wire import ad_to_bytes, frame_field, iter_attribute_entries
from .columns import SlotColumns
from .errors import (
    BadColumns,
    BadConstraint,
    BadUpdate,
    CollectorError,
    CostlyConstraint,
    PrivateAdsRefused,
)
from .selection import (
    matching,
    parse_constraint,
    projection_keys,
    show_value,
)

log = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_CLASSAD_LIFETIME",
    "MACHINE",
    "MACHINE_PRIVATE",
    "MAX_COLUMNS",
    "STANDARD_TYPES",
    "AdRecord",
    "ANY_AD",
    "AdStore",
    "BadColumns",
    "BadConstraint",
    "CostlyConstraint",
    "BadUpdate",
    "CollectorError",
    "PrivateAdsRefused",
    "CollectorSnapshot",
    "matching",
    "parse_constraint",
    "projection_keys",
]

DEFAULT_CLASSAD_LIFETIME = 900  # HTCondor's CLASSAD_LIFETIME default
MACHINE = "Machine"
MACHINE_PRIVATE = "MachinePrivate"
ANY_AD = "Any"  # a query type, never an ad's: every public ad of every type
STANDARD_TYPES = (MACHINE, MACHINE_PRIVATE, "Scheduler", "Submitter", "Negotiator", "Collector")
_CANONICAL = {t.lower(): t for t in STANDARD_TYPES}
_PRIVATE_KEY = MACHINE_PRIVATE.lower()
_MACHINE_KEY = MACHINE.lower()
_SNAPSHOT_PROJECTED = frozenset({"mytype", "name"})
# slot columns one snapshot may ask for: a cycle's expressions read a few dozen
MAX_COLUMNS = 1024


# ----------------------------------------------------------------------------- wire bytes


def _scan_entries(buf: bytes) -> dict[str, bytes]:
    """Framed ``attributes`` entries of a serialised ClassAd by lower-case name (three
    times faster than parsing and re-serialising each attribute); ValueError or
    IndexError when the bytes are not in the plain shape, so the caller can parse."""
    out: dict[str, bytes] = {}
    for start, i, end in iter_attribute_entries(buf):
        name_len = buf[i + 1]
        out[buf[i + 2 : i + 2 + name_len].decode().lower()] = buf[start:end]
    return out


def _split_attributes(buf: bytes) -> dict[str, bytes]:
    try:
        return _scan_entries(buf)
    except (ValueError, IndexError):
        msg = pb.ClassAd.FromString(buf)
        return {a.name.lower(): frame_field(1, a.SerializeToString()) for a in msg.attributes}


@functools.lru_cache(maxsize=64)  # the same few stamps (this second's time, the types)
def _attribute_entry(name: str, value: int | str) -> bytes:
    """One ``ClassAd.attributes`` entry holding a literal, framed for appending."""
    attr = pb.Attribute(name=name)
    if isinstance(value, int):
        attr.literal.integer = value
    else:
        attr.literal.str = value
    return frame_field(1, attr.SerializeToString())


# ----------------------------------------------------------------------------- records


@dataclass(eq=False, slots=True)
class AdRecord:
    """One stored ad and what the store knows about it."""

    ad_type: str  # canonical spelling (first seen, or HTCondor's for standard types)
    name: str  # the ad's Name as the daemon spelled it
    ad: ClassAd  # owned by the store: never mutate
    last_heard: int  # LastHeardFrom, pool seconds
    lifetime: int  # seconds after last_heard that the ad stays (ClassAdLifetime or default)
    _wire: bytes | None = None
    _attr_wire: dict[str, bytes] | None = field(default=None, repr=False)
    # how many leading bytes of the wire form repeat from the sender's previous update
    # (its AdUpdate.stable_prefix; 0: none, or the bytes were not the sender's)
    stable_prefix: int = 0
    seq: int = 0  # the store's sequence number of the update that made this record
    order: int = 0  # when its Name was first stored (its place in its type's table)
    # a slot ad's State's first letter ("": an empty State, None: no string State)
    state: str | None = None
    # the ad as CEDAR sends it (cedar/collector_cmds.py), made when first asked for
    cedar: Any = field(default=None, repr=False)

    @property
    def deadline(self) -> int:
        """The last whole pool second it is not yet expired at."""
        return self.last_heard + self.lifetime

    def wire(self) -> bytes:
        """The whole ad as the bytes of a ``mockpool.v1.ClassAd`` (cached)."""
        if self._wire is None:
            self._wire = ad_to_bytes(self.ad)
        return self._wire

    def projected_wire(self, keep: frozenset[str] | None) -> bytes:
        """The ad's bytes with only the attributes in ``keep`` (lower-case); None = all."""
        if keep is None:
            return self.wire()
        attrs = self._attr_wire
        if attrs is None:
            # Split the stored bytes into framed attribute entries once per ad version;
            # every later projection of this version is a join of byte strings.
            attrs = self._attr_wire = _split_attributes(self.wire())
        return b"".join(attrs[k] for k in keep if k in attrs)

    def known_wire(self, keep: frozenset[str] | None) -> bytes | None:
        """``projected_wire(keep)`` if the ad's bytes are at hand (as received), else
        None (an ad handed over in-process is encoded only when something needs it)."""
        return None if self._wire is None else self.projected_wire(keep)

    def projected(self, keep: frozenset[str] | None) -> ClassAd:
        """A copy of the ad with only the attributes in ``keep`` (lower-case); None = all."""
        if keep is None:
            return self.ad.copy()
        out = ClassAd()
        for name in self.ad:
            if name.lower() in keep:
                out[name] = self.ad[name]
        return out


@dataclass(slots=True)
class CollectorSnapshot:
    """The negotiator's view: slot ads matching a constraint and their private ads.

    ``slot_order`` and ``private_order`` name every slot and private ad in order; a
    delta (``delta``) holds only the records updated since the asker's sequence number,
    at the positions ``slot_rows`` and ``private_rows`` give, and with ``same_order``
    names the ads as the snapshot it is against did (the reply leaves the names out)."""

    slots: list[AdRecord]
    private: list[AdRecord]  # private ads of those slots that have one, in slot order
    keep: frozenset[str] | None  # projection applied to slots (None = whole ads)
    now: float
    epoch: str = ""
    seq: int = 0
    delta: bool = False
    slot_order: list[str] = field(default_factory=list)
    slot_rows: list[int] = field(default_factory=list)
    private_order: list[str] = field(default_factory=list)
    private_rows: list[int] = field(default_factory=list)
    same_order: bool = False  # a delta naming the ads in the order the asker holds
    # the slot columns asked for, over every slot of the snapshot (a delta's included)
    columns: list[PackedColumn] = field(default_factory=list)

    def slot_ads(self) -> list[ClassAd]:
        return [r.projected(self.keep) for r in self.slots]

    def private_ads(self) -> list[ClassAd]:
        return [r.ad.copy() for r in self.private]

    def stable_prefixes(self) -> list[int]:
        """Each slot's ``stable_prefix`` hint, as its bytes go out (none when projected:
        a projection does not keep the sender's bytes)."""
        return [r.stable_prefix if self.keep is None else 0 for r in self.slots]


# ----------------------------------------------------------------------------- the store


class AdStore:
    """Ads by (type, Name), with HTCondor's lifetimes. Not thread-safe (one event loop)."""

    # updates the log keeps beyond twice the slot and private ads stored
    LOG_SLACK = 1024
    # a same-order delta of more updates than this share of the ads is found by a scan
    LOG_SCAN_SHARE = 0.25

    def __init__(
        self, classad_lifetime: int = DEFAULT_CLASSAD_LIFETIME, *, ad_epoch: int = 0
    ) -> None:
        self.classad_lifetime = int(classad_lifetime)
        # Unix time of pool time 0: LastHeardFrom is a date counted from it (records keep
        # pool seconds), and time() in constraints counts from it too
        self.ad_epoch = int(ad_epoch)
        self.rng: random.Random | None = None  # random() in the ads: the collector's (it sets it)
        # type key (lower) -> name key (lower) -> record
        self._tables: dict[str, dict[str, AdRecord]] = {}
        self._type_names: dict[str, str] = dict(_CANONICAL)
        self._spelled: dict[str, str] = {}  # an ad type as given -> its stored spelling
        self.updates = 0
        self.refused = 0
        self.epoch = secrets.token_hex(8)  # what a snapshot's sequence numbers count in
        self.seq = 0
        # the seq when an ad was last added, removed or renamed: a snapshot taken after it
        # names the ads of a type in the order of one taken now
        self._order_changed_at = 0
        self._names_stored = 0  # numbers each Name as first stored (AdRecord.order)
        # every ad by its deadline: type key -> deadline -> the name keys of the ads of
        # that type due then, and those (deadline, type key), the earliest first. Expiry
        # takes only the ads due, not a scan of 200,000.
        self._due: dict[str, dict[int, set[str]]] = {}
        self._deadlines: list[tuple[int, str]] = []
        # the slot ads by their State's first letter (AdRecord.state)
        self._states: Counter[str | None] = Counter()
        # Slot and private ad updates in order: their seqs, name keys and whether private
        # (three lists: no object per update for the garbage collector to walk). A delta
        # in the same order takes the ads updated since a seq from here, not from a scan
        # of every ad. Trimmed from the front; it holds every such update after
        # ``_log_from``.
        self._log_seq: list[int] = []
        self._log_key: list[str] = []
        self._log_private: list[bool] = []
        self._log_from = 0
        self._log_cap = 0  # the log's length past which it is measured against the ads
        # each slot's and private ad's place in a snapshot of every slot, by name key;
        # made again after an ad came, went or was renamed
        self._rows_made = False
        self._slot_row: dict[str, int] = {}
        self._private_row: dict[str, int] = {}
        self.columns = SlotColumns()  # what columnar snapshots ask for, kept as ads come
        # called with (old, new) when an ad whose CEDAR encoding was made is replaced
        self.on_replaced: Callable[[AdRecord, AdRecord], None] | None = None
        # called with each record stored and each removed: a replica's feed (cedar/query_worker.py)
        self.on_stored: Callable[[AdRecord], None] | None = None
        self.on_removed: Callable[[AdRecord], None] | None = None
        self._order_version = 0  # counts the changes of order (_order_changed)
        # the column rows of a snapshot of every slot, and the order version they are of
        self._every_slot_rows: tuple[int, np.ndarray] | None = None

    # -- updates ---------------------------------------------------------------
    def update(
        self,
        ad_type: str,
        ad: ClassAd,
        now: float,
        wire: bytes | None = None,
        *,
        owned: bool = False,
        stable_prefix: int = 0,
    ) -> AdRecord:
        """Store ``ad`` as the current ad of its type and Name; return its record.

        ``wire``: the ad's serialised ``mockpool.v1.ClassAd`` as received, kept so that
        queries need not re-encode; ``stable_prefix``: the sender's hint on those bytes
        (see ``AdUpdate.stable_prefix``), passed on with them in snapshots. The store
        keeps a copy of ``ad``, or ``ad`` itself when ``owned`` (the caller hands it over,
        e.g. freshly decoded, and never touches it again). Raises :class:`BadUpdate` and changes nothing (``ad`` included) when
        the type is empty, Name is missing or not a string, or MyType names another type.
        """
        try:
            record = self._make_record(ad_type, ad, now, wire, owned, stable_prefix)
        except BadUpdate:
            self.refused += 1
            raise
        type_key = record.ad_type.lower()
        self._type_names.setdefault(type_key, record.ad_type)
        self.seq += 1
        record.seq = self.seq
        table = self._tables.get(type_key)
        if table is None:
            table = self._tables[type_key] = {}
            self._due[type_key] = {}
        old = table.get(key := record.name.lower())
        if old is None or old.name != record.name:
            self._order_changed()
        # the Name moves to its new deadline (an update costs a set move, so expiry
        # never has to look at an ad that is not due)
        deadline = record.deadline
        by_deadline = self._due[type_key]
        if old is None:
            self._names_stored += 1
            record.order = self._names_stored
            was = None
        else:
            record.order = old.order
            was = old.deadline
        if was != deadline:
            if was is not None and (left := by_deadline.get(was)) is not None:
                left.discard(key)
            due = by_deadline.get(deadline)
            if due is None:
                due = by_deadline[deadline] = set()
                heapq.heappush(self._deadlines, (deadline, type_key))
            due.add(key)
        if type_key == _MACHINE_KEY:
            e = record.ad.lookup("State")  # a literal but for a rare ad
            state = (
                e.value
                if type(e) is Literal
                else record.ad.eval("State", now=self.ad_epoch + now, rng=self.rng)
            )
            record.state = state[:1] if type(state) is str else None
            if old is not None:
                self._states[old.state] -= 1
            self._states[record.state] += 1
            self.columns.put(key, record.ad)
        table[key] = record
        self.updates += 1
        if old is not None and old.cedar is not None and self.on_replaced is not None:
            self.on_replaced(old, record)
        if type_key in (_MACHINE_KEY, _PRIVATE_KEY):
            self._logged(type_key == _PRIVATE_KEY, key)
        if self.on_stored is not None:
            self.on_stored(record)
        return record

    def _order_changed(self) -> None:
        """An ad came, went or was renamed (at this seq): the rows made are no more."""
        self._order_changed_at = self.seq
        self._order_version += 1
        self._rows_made = False

    def _logged(self, private: bool, key: str) -> None:
        """Log the update just stored; past twice the ads stored, forget the older half."""
        self._log_seq.append(self.seq)
        self._log_key.append(key)
        self._log_private.append(private)
        if len(self._log_seq) > self._log_cap:
            stored = sum(len(self._tables.get(k, ())) for k in (_MACHINE_KEY, _PRIVATE_KEY))
            self._log_cap = 2 * stored + self.LOG_SLACK
            if len(self._log_seq) > self._log_cap:
                half = len(self._log_seq) // 2
                self._log_from = self._log_seq[half - 1]
                del self._log_seq[:half], self._log_key[:half], self._log_private[:half]

    def _removed(self, type_key: str, rec: AdRecord) -> None:
        """``rec`` left its table: it is due no more, nor counted."""
        if self.on_removed is not None:
            self.on_removed(rec)
        due = self._due[type_key].get(rec.deadline)
        if due is not None:
            due.discard(rec.name.lower())
        if type_key == _MACHINE_KEY:
            self._states[rec.state] -= 1
            self.columns.drop(rec.name.lower())

    def slot_states(self) -> Counter[str | None]:
        """The slot ads by their State's first letter ("": an empty State, None: no
        string State), kept as ads come and go."""
        return self._states

    def canonical_type(self, ad_type: str) -> str:
        """The spelling the store uses for ``ad_type``; BadUpdate when it is empty."""
        if not isinstance(ad_type, str):
            raise BadUpdate("ad update has no ad type (MyType)")
        known = self._spelled.get(ad_type)  # (every update asks: one look for a known type)
        if known is not None:
            return known
        stripped = ad_type.strip()
        if not stripped:
            raise BadUpdate("ad update has no ad type (MyType)")
        if stripped.lower() == ANY_AD.lower():
            raise BadUpdate(f'"{ANY_AD}" is a query type (every ad), not a type an ad can have')
        canonical = self._type_names.get(stripped.lower())
        if canonical is None:
            return stripped
        if len(self._spelled) < 1024:  # (a client's odd spellings are not kept forever)
            self._spelled[ad_type] = canonical  # a stored type's spelling never changes
        return canonical

    def ad_name(self, ad_type: str, ad: ClassAd, now: float = 0.0) -> str:
        """The ad's Name, the key it is stored under; BadUpdate when it has none."""
        canonical = self.canonical_type(ad_type)
        e = ad.lookup("Name")
        if type(e) is Literal:  # nearly every ad's: its value, without an evaluation
            name = e.value
        else:
            name = ad.eval("Name", now=self.ad_epoch + now, rng=self.rng) if e is not None else None
        if not isinstance(name, str):
            what = (
                "has no Name"
                if name is None
                else f"has a Name that is not a string ({show_value(name)})"
            )
            raise BadUpdate(f"{canonical} ad {what}")
        if not name:
            raise BadUpdate(f"{canonical} ad has an empty Name")
        if canonical == "Submitter":
            # A user submits through several schedds: HTCondor's collector keys submitter
            # ads by Name and ScheddName, so each schedd's ad for alice@domain is kept.
            schedd = (
                ad.eval("ScheddName", now=self.ad_epoch + now, rng=self.rng)
                if ad.lookup("ScheddName") is not None
                else None
            )
            if isinstance(schedd, str) and schedd:
                return f"{name}/{schedd}"
        return name

    def _make_record(
        self,
        ad_type: str,
        ad: ClassAd,
        now: float,
        wire: bytes | None,
        owned: bool,
        stable_prefix: int = 0,
    ) -> AdRecord:
        canonical = self.canonical_type(ad_type)
        name = self.ad_name(canonical, ad, now)
        e = ad.lookup("MyType")
        add_type = e is None
        if not add_type:
            my_type = (
                e.value
                if type(e) is Literal
                else ad.eval("MyType", now=self.ad_epoch + now, rng=self.rng)
            )
            if not isinstance(my_type, str) or my_type.lower() != canonical.lower():
                raise BadUpdate(
                    f"{canonical} ad {name!r} has MyType {show_value(my_type)}, not {canonical!r}"
                )
        # Validated: from here on nothing can fail, so the ad may be changed.
        stored = ad if owned else ad.copy()
        stamps: list[bytes] = []
        if add_type:
            stored["MyType"] = canonical
            stamps.append(_attribute_entry("MyType", canonical))
        last_heard = int(now)
        had_stamp = stored.lookup("LastHeardFrom") is not None
        stored["LastHeardFrom"] = self.ad_epoch + last_heard
        if had_stamp:
            wire = None  # the daemon's own LastHeardFrom is in the bytes: re-encode lazily
        elif wire is not None:
            stamps.append(_attribute_entry("LastHeardFrom", self.ad_epoch + last_heard))
            wire = wire + b"".join(stamps)
        lifetime = stored.eval("ClassAdLifetime", now=self.ad_epoch + now, rng=self.rng)
        if type(lifetime) is not int:  # absent, UNDEFINED, real, bool, ...: the default
            lifetime = self.classad_lifetime
        # the hint holds for the sender's bytes only (not for a lazy re-encoding)
        hint = stable_prefix if wire is not None and 0 < stable_prefix <= len(wire) else 0
        return AdRecord(canonical, name, stored, last_heard, lifetime, wire, stable_prefix=hint)

    def invalidate(self, ad_type: str, name: str) -> list[tuple[str, str]]:
        """Remove the ad of ``ad_type`` and ``name``; a slot ad takes its private ad along.

        Returns the (type, Name) pairs removed (empty when there was nothing to remove:
        invalidation is idempotent, as in HTCondor).
        """
        type_key = self.canonical_type(ad_type).lower()
        removed: list[tuple[str, str]] = []
        table = self._tables.get(type_key)
        rec = table.pop(name.lower(), None) if table else None
        if rec is not None:
            removed.append((rec.ad_type, rec.name))
            self._removed(type_key, rec)
        if type_key == _MACHINE_KEY:
            removed.extend(self._drop_private(name))
        if removed:
            self._order_changed()
        return removed

    def _drop_private(self, name: str) -> list[tuple[str, str]]:
        private = self._tables.get(_PRIVATE_KEY)
        rec = private.pop(name.lower(), None) if private else None
        if rec is None:
            return []
        self._removed(_PRIVATE_KEY, rec)
        return [(rec.ad_type, rec.name)]

    def expire(self, now: float) -> list[tuple[str, str]]:
        """Drop every ad not refreshed within its lifetime; return the (type, Name)
        dropped, types in the order first stored, each type's ads in its table's order.
        Only the ads due are looked at (by their deadlines, kept as they are stored)."""
        t = int(now)
        stale: list[tuple[str, AdRecord]] = []
        while self._deadlines and self._deadlines[0][0] < t:
            deadline, type_key = heapq.heappop(self._deadlines)
            table = self._tables[type_key]
            stale += [(type_key, table[k]) for k in self._due[type_key].pop(deadline, ())]
        place = {type_key: k for k, type_key in enumerate(self._tables)}
        stale.sort(key=lambda x: (place[x[0]], x[1].order))
        removed: list[tuple[str, str]] = []
        for type_key, rec in stale:
            del self._tables[type_key][rec.name.lower()]
            self._removed(type_key, rec)
            removed.append((rec.ad_type, rec.name))
        # A slot that went away takes its claim ids with it, fresh or not.
        gone = [name for ad_type, name in removed if ad_type.lower() == _MACHINE_KEY]
        for name in gone:
            removed.extend(self._drop_private(name))
        if removed:
            self._order_changed()
        return removed

    # -- reading -----------------------------------------------------------------
    def get(self, ad_type: str, name: str) -> AdRecord | None:
        table = self._tables.get(ad_type.lower())
        return table.get(name.lower()) if table else None

    def records(self, ad_type: str) -> Iterator[AdRecord]:
        table = self._tables.get(ad_type.lower())
        return iter(list(table.values())) if table else iter(())

    def counts(self) -> dict[str, int]:
        """Ads stored per type (canonical spelling), types with no ads left out."""
        return {self._type_names[k]: len(t) for k, t in self._tables.items() if t}

    def __len__(self) -> int:
        return sum(len(t) for t in self._tables.values())

    def select(
        self,
        ad_type: str,
        constraint: str | Expr | None,
        now: float,
        *,
        allow_private: bool = False,
    ) -> list[AdRecord]:
        """Stored records of ``ad_type`` whose constraint is true (unprojected).

        Raises :class:`BadConstraint` for a malformed constraint,
        :class:`CostlyConstraint` for one past its evaluation budget, and
        :class:`PrivateAdsRefused` for private ads unless ``allow_private``.
        """
        records = self.candidates(ad_type, allow_private=allow_private)
        return matching(records, constraint, self.ad_epoch + now)  # time(): a date

    def candidates(self, ad_type: str, *, allow_private: bool = False) -> list[AdRecord]:
        """Every stored record of ``ad_type``, in store order, before any constraint (a
        list of its own: :func:`matching` may read it while the store changes)."""
        if ad_type.lower() == _PRIVATE_KEY and not allow_private:
            raise PrivateAdsRefused(
                f"{MACHINE_PRIVATE} ads are private (claim ids): only the negotiator may read them"
            )
        if ad_type.lower() == ANY_AD.lower():  # every public ad (condor_status -any)
            return [
                r
                for key, t in sorted(self._tables.items())
                if key != _PRIVATE_KEY
                for r in t.values()
            ]
        return list(self._tables.get(ad_type.lower(), {}).values())

    def query(
        self,
        ad_type: str,
        constraint: str | Expr | None = "",
        projection: Sequence[str] = (),
        now: float = 0.0,
    ) -> list[ClassAd]:
        """Public ads of ``ad_type`` where ``constraint`` is true, projected (copies)."""
        keep = projection_keys(projection)
        return [r.projected(keep) for r in self.select(ad_type, constraint, now)]

    def snapshot(
        self,
        constraint: str | Expr | None = "",
        projection: Sequence[str] = (),
        now: float = 0.0,
        since: tuple[str, int] | None = None,
        columns: Sequence[str] = (),
    ) -> CollectorSnapshot:
        """Slot ads where ``constraint`` is true and the private ads of those slots.
        ``since``: the (epoch, seq) of a snapshot the asker holds; when it is this
        store's and nothing is projected, the snapshot is a delta against it.
        ``columns``: slot attributes sent as columns too, over every slot (at most
        ``MAX_COLUMNS``: BadColumns otherwise, and nothing is kept)."""
        columns = self.columns_asked(columns)
        snap, keys = self._snapshot(constraint, projection, now, since)
        if columns:
            every = parse_constraint(constraint) is None
            rows = self._every_slot_rows if every else None
            if rows is None or rows[0] != self._order_version:
                rows = (self._order_version, self.columns.rows(keys()))
                if every:
                    self._every_slot_rows = rows
            snap.columns = self.columns.pack(columns, rows[1])
        return snap

    def columns_asked(self, names: Iterable[str]) -> list[str]:
        """The column names of a snapshot request, each once; BadColumns when there are
        more than ``MAX_COLUMNS`` (every one is a column kept over every slot)."""
        first: dict[str, str] = {}
        for n in names:
            if n.strip():
                first.setdefault(n.lower(), n)
        out = list(first.values())
        if len(out) > MAX_COLUMNS:
            raise BadColumns(
                f"a snapshot may ask for at most {MAX_COLUMNS} slot columns, not {len(out)}"
            )
        return out

    def _snapshot(
        self,
        constraint: str | Expr | None,
        projection: Sequence[str],
        now: float,
        since: tuple[str, int] | None,
    ) -> tuple[CollectorSnapshot, Callable[[], list[str]]]:
        """The snapshot, and what gives the name keys of every slot it stands for."""
        expr = parse_constraint(constraint)
        keep = projection_keys(projection, _SNAPSHOT_PROJECTED)
        if (
            since is not None
            and expr is None
            and keep is None
            and since[0] == self.epoch
            and self._order_changed_at < since[1] <= self.seq
            and since[1] >= self._log_from
            and (found := self._same_order_delta(since[1], now)) is not None
        ):
            return found, lambda: list(self._tables.get(_MACHINE_KEY, {}))
        slots = self.select(MACHINE, expr, now)
        private_table = self._tables.get(_PRIVATE_KEY, {})
        private = [p for r in slots if (p := private_table.get(r.name.lower())) is not None]
        snap = CollectorSnapshot(slots, private, keep, now, self.epoch, self.seq)
        snap.slot_order = [r.name for r in slots]
        snap.private_order = [p.name for p in private]

        def keys() -> list[str]:
            return [r.name.lower() for r in slots]

        if since is None or keep is not None or since[0] != self.epoch or since[1] > self.seq:
            return snap, keys
        after = since[1]
        snap.delta = True
        # every slot ad, none added, removed or renamed since the asker's snapshot: the
        # same names in the same order (a constraint's selection may change with any update)
        snap.same_order = expr is None and after > self._order_changed_at
        snap.slot_rows = [k for k, r in enumerate(slots) if r.seq > after]
        snap.slots = [slots[k] for k in snap.slot_rows]
        snap.private_rows = [k for k, p in enumerate(private) if p.seq > after]
        snap.private = [private[k] for k in snap.private_rows]
        return snap, keys

    def _same_order_delta(self, after: int, now: float) -> CollectorSnapshot | None:
        """The snapshot of every slot since ``after``, when no ad came, went or was
        renamed since: the ads updated after it, found in the log (its names are left
        out: the asker holds them). None when the log holds more updates since than a
        quarter of the ads: a scan of the ads is then the cheaper way (the startds
        re-advertise every slot each UPDATE_INTERVAL)."""
        slots = self._tables.get(_MACHINE_KEY, {})
        private = self._tables.get(_PRIVATE_KEY, {})
        first = bisect.bisect_right(self._log_seq, after)
        if len(self._log_seq) - first > self.LOG_SCAN_SHARE * (len(slots) + len(private)):
            return None
        if not self._rows_made:
            self._slot_row = {key: k for k, key in enumerate(slots)}
            self._private_row = {
                key: k for k, key in enumerate(key for key in slots if key in private)
            }
            self._rows_made = True
        changed: tuple[set[str], set[str]] = (set(), set())  # slot, private
        for is_private, key in zip(self._log_private[first:], self._log_key[first:], strict=True):
            changed[is_private].add(key)
        slot_at = sorted((self._slot_row[key], key) for key in changed[0])
        # a private ad of a name with no slot ad is in no snapshot
        row = self._private_row.get
        private_at = sorted((k, key) for key in changed[1] if (k := row(key)) is not None)
        return CollectorSnapshot(
            [slots[key] for _, key in slot_at],
            [private[key] for _, key in private_at],
            None,
            now,
            self.epoch,
            self.seq,
            delta=True,
            slot_rows=[k for k, _ in slot_at],
            private_rows=[k for k, _ in private_at],
            same_order=True,
        )
