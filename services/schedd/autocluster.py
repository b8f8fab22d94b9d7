"""Autoclusters: jobs with equal significant attributes are one resource request.

How HTCondor's schedd decides (src/condor_schedd.V6/autocluster.cpp, ``AutoCluster::config``
and ``JobCluster::getClusterid``):

- The significant attributes are ``SIGNIFICANT_ATTRIBUTES`` when the admin sets it;
  otherwise the list the negotiator computes (every job attribute that some slot ad
  references, ``compute_significant_attrs``) joined with the schedd's minimal set
  (Requirements, Rank, ConcurrencyLimits, ...), plus ``ADD_SIGNIFICANT_ATTRIBUTES`` and
  minus ``REMOVE_SIGNIFICANT_ATTRIBUTES``.
- A job's signature is each significant attribute's expression text, then the job's own
  attributes those expressions reference (``MY.x`` or a bare ``x``; never ``TARGET.x``,
  never CurrentTime), in case-insensitive name order. Equal signatures share an
  AutoClusterId.

mockpool's negotiator does not send its list over the wire, so the default stands in for
it: the schedd's minimal set plus the job attributes that the default startd and
consumption policies read (RequestCpus/Memory/Disk, JobUniverse). ``set_negotiator_attributes``
is the hook for a negotiator-supplied list (a change regroups every job, as in HTCondor).
Requests are per (submitter, autocluster): jobs of different submitters never share one,
even with equal ids (HTCondor's resource request lists are per submitter).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence

from ..classad import ClassAd, unparse
from ..classad.tree import AttrRef, Expr, Select, walk
from ..config import ConfigDict

__all__ = [
    "DEFAULT_SIGNIFICANT_ATTRIBUTES",
    "MINIMAL_SIGNIFICANT_ATTRIBUTES",
    "Autoclusters",
    "IdleIndex",
    "significant_attributes",
]

# Always significant (the schedd's MinimalSigAttrs and the attributes it always adds).
MINIMAL_SIGNIFICANT_ATTRIBUTES: tuple[str, ...] = (
    "Requirements",
    "Rank",
    "ConcurrencyLimits",
    "NiceUser",
)
# Stand-in for the negotiator's list: job attributes the default slot policies read.
DEFAULT_SIGNIFICANT_ATTRIBUTES: tuple[str, ...] = (
    *MINIMAL_SIGNIFICANT_ATTRIBUTES,
    "RequestCpus",
    "RequestMemory",
    "RequestDisk",
    "JobUniverse",
)
_NEVER = frozenset({"currenttime"})
_SCOPES = frozenset({"my", "target", "parent"})
_MEMO_LIMIT = 50_000


def _dedupe(names: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    out = []
    for n in names:
        if n.lower() not in seen:
            seen.add(n.lower())
            out.append(n)
    return out


def significant_attributes(config: ConfigDict, negotiator: Sequence[str] = ()) -> list[str]:
    """The significant attribute list, as HTCondor's ``AutoCluster::config`` builds it."""
    configured = config.get_list("SIGNIFICANT_ATTRIBUTES")
    if configured:
        return _dedupe(configured)
    base = list(negotiator) if negotiator else list(DEFAULT_SIGNIFICANT_ATTRIBUTES)
    base += MINIMAL_SIGNIFICANT_ATTRIBUTES
    base += config.get_list("ADD_SIGNIFICANT_ATTRIBUTES")
    banned = {n.lower() for n in config.get_list("REMOVE_SIGNIFICANT_ATTRIBUTES")}
    return [n for n in _dedupe(base) if n.lower() not in banned]


def _own_references(expr: Expr) -> set[str]:
    """Names ``expr`` may read from its own ad: bare names and ``MY.x`` (lower case)."""
    out: set[str] = set()
    for node in walk(expr):
        if isinstance(node, AttrRef):
            if not node.absolute and node.name.lower() not in _SCOPES:
                out.add(node.name.lower())
        elif (
            isinstance(node, Select)
            and isinstance(node.base, AttrRef)
            and node.base.name.lower() == "my"
        ):
            out.add(node.name.lower())
    return out


class Autoclusters:
    """Signature -> AutoClusterId for one schedd. Ids start at 1 and are never reused."""

    def __init__(self, significant: Sequence[str]) -> None:
        self.significant: tuple[str, ...] = tuple(_dedupe(significant))
        self._sig_lower = frozenset(n.lower() for n in self.significant)
        self._ids: dict[str, int] = {}
        self._next_id = 1
        # Jobs of one submit share expression objects (the ad of "queue 10000" is copied),
        # so signatures are memoised by the identity of the expressions they read. The
        # memo holds the expressions themselves, so an id can never be reused by another.
        self._refs_memo: dict[
            tuple[int, ...], tuple[tuple[Expr | None, ...], tuple[str, ...], frozenset[str]]
        ] = {}
        self._id_memo: dict[
            tuple[int, ...], tuple[tuple[Expr | None, ...], int, tuple[str, ...]]
        ] = {}

    @classmethod
    def from_config(cls, config: ConfigDict) -> Autoclusters:
        return cls(significant_attributes(config))

    def __len__(self) -> int:
        return len(self._ids)

    def _expanded(
        self, ad: ClassAd, sig_exprs: Sequence[Expr | None]
    ) -> tuple[tuple[str, ...], frozenset[str]]:
        """The ad's own attributes the significant expressions reference, transitively
        (sorted), and every name they may read from the ad, defined there or not."""
        found: set[str] = set()
        touched: set[str] = set(self._sig_lower)
        todo = [e for e in sig_exprs if e is not None]
        while todo:
            for name in _own_references(todo.pop()):
                touched.add(name)
                if name in found or name in self._sig_lower or name in _NEVER:
                    continue
                expr = ad.lookup(name)
                if expr is None:  # not the job's: a slot attribute (or undefined)
                    continue
                found.add(name)
                todo.append(expr)
        return tuple(sorted(found)), frozenset(touched)

    def assign(self, ad: ClassAd) -> tuple[int, tuple[str, ...], frozenset[str]]:
        """(AutoClusterId, attributes in the signature, lower-case names the signature
        may read) of a job ad. A job differing from another of the same id only in
        attributes outside the third item has the same id."""
        sig_exprs = tuple(ad.lookup(n) for n in self.significant)
        key = tuple(map(id, sig_exprs))
        hit = self._refs_memo.get(key)
        if hit is not None and all(a is b for a, b in zip(hit[0], sig_exprs)):
            refs, touched = hit[1], hit[2]
        else:
            refs, touched = self._expanded(ad, sig_exprs)
            self._remember(self._refs_memo, key, (sig_exprs, refs, touched))
        ref_exprs = tuple(ad.lookup(n) for n in refs)
        all_exprs = sig_exprs + ref_exprs
        names = (*self.significant, *refs)
        full_key = key + tuple(map(id, ref_exprs))
        hit2 = self._id_memo.get(full_key)
        if hit2 is not None and hit2[2] == refs and all(a is b for a, b in zip(hit2[0], all_exprs)):
            return hit2[1], names, touched
        signature = "\n".join(
            f"{n.lower()} = {unparse(e) if e is not None else ''}" for n, e in zip(names, all_exprs)
        )
        acid = self._ids.get(signature)
        if acid is None:
            acid = self._ids[signature] = self._next_id
            self._next_id += 1
        self._remember(self._id_memo, full_key, (all_exprs, acid, refs))
        return acid, names, touched

    @staticmethod
    def _remember(memo: dict, key: tuple, value: tuple) -> None:  # type: ignore[type-arg]
        if len(memo) >= _MEMO_LIMIT:
            memo.clear()
        memo[key] = value

    def set_negotiator_attributes(self, config: ConfigDict, names: Sequence[str]) -> bool:
        """Hook for a negotiator-computed list; True when the list changed (the caller
        must then reassign every job, as HTCondor clears its autoclusters)."""
        new = tuple(significant_attributes(config, names))
        if [n.lower() for n in new] == [n.lower() for n in self.significant]:
            return False
        self.__init__(new)  # type: ignore[misc]
        return True


class IdleIndex:
    """Idle, unreserved jobs per (submitter, autocluster), in the order matches take them.

    Order: JobPrio descending, then cluster and proc ascending (HTCondor's job priority
    order within a submitter). A heap per group with lazy deletion: entries of jobs that
    left the group are skipped when they surface; ``count`` is exact.
    """

    def __init__(self) -> None:
        self._heaps: dict[tuple[str, int], list[tuple[int, int, int]]] = {}
        self._members: dict[tuple[str, int], set[tuple[int, int]]] = {}

    def add(self, group: tuple[str, int], prio: int, cluster: int, proc: int) -> None:
        members = self._members.setdefault(group, set())
        if (cluster, proc) in members:
            return
        members.add((cluster, proc))
        heapq.heappush(self._heaps.setdefault(group, []), (-prio, cluster, proc))

    def discard(self, group: tuple[str, int], cluster: int, proc: int) -> None:
        members = self._members.get(group)
        if members is not None:
            members.discard((cluster, proc))
            if not members:
                del self._members[group]
                self._heaps.pop(group, None)

    def pop(self, group: tuple[str, int]) -> tuple[int, int] | None:
        """Take the first job of ``group`` out of the index; None when it has none."""
        members = self._members.get(group)
        heap = self._heaps.get(group)
        while members and heap:
            _, cluster, proc = heapq.heappop(heap)
            if (cluster, proc) in members:
                self.discard(group, cluster, proc)
                return cluster, proc
        return None

    def first(self, group: tuple[str, int]) -> tuple[int, int] | None:
        """The job ``pop`` would take, left in place."""
        members = self._members.get(group)
        heap = self._heaps.get(group)
        while members and heap:
            _, cluster, proc = heap[0]
            if (cluster, proc) in members:
                return cluster, proc
            heapq.heappop(heap)
        return None

    def count(self, group: tuple[str, int]) -> int:
        return len(self._members.get(group, ()))

    def groups(self) -> list[tuple[str, int]]:
        return sorted(self._members)
