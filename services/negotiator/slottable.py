"""The cycle's slots (CycleSlots): one SlotTable of the snapshot's slot ads with what the
cycle reads of them every time (names, states, weights, claim ids, consumption policies,
remote priorities), the slot classes and p-slot states the candidate search walks, and
what each match deducts.
"""

from __future__ import annotations

import math
import random
import struct
from collections.abc import Sequence
from typing import TypeVar

import numpy as np

from ..classad import ClassAd, evaluate
from ..classad import vector as V
from ..classad.kernel import ColumnCarry, CompiledExpr, KernelStats, SlotTable, Varying
from ..classad.refs import DynamicReference
from ..classad.tree import AttrRef, Expr, Literal, Select
from .accountant import Accountant
from .claimids import (
    NOT_LITERAL,
    PrivateAds,
    address_of_sinful,
    literal_name,
    startd_address_of,
    string_attr,
)
from .consumption import PslotConsumption, minus, preserve_int
from .cycleinput import NO_RANK, RESOURCES, CycleAds, CycleCarry, CycleConfig
from .fit import PslotFit
from .limits import ConcurrencyLimits
from .memo import AnswerMemo
from .preemption import NO_PREEMPTION, preempted_user_key
from .slotclasses import ClassView, SlotClasses, WatchedAd, WideTaint, job_reach, referenced_attrs
from .slotusage import ACCOUNTING_NAMES, accounting_name, slot_usage


def numbers_of(v: V.Vec, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(float values, is-a-number mask) of a Vec; booleans count as 1/0 as in the kernel."""
    tags = v.tags()
    out = np.zeros(n, dtype=np.float64)
    ok = np.zeros(n, dtype=bool)
    if v.i is not None:
        m = (tags == V.I) | (tags == V.B)
        out[m] = np.broadcast_to(v.i, (n,))[m]
        ok |= m
    if v.f is not None:
        m = tags == V.R
        out[m] = np.broadcast_to(v.f, (n,))[m]
        ok |= m
    ok &= np.isfinite(out)
    return out, ok


def scalar_number(value: object) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)) and math.isfinite(value):
        return float(value)
    return None


def rank_number(value: object) -> float:
    """A job's Rank as the kernel reads it (``kernel.match._as_float``): a number or a
    boolean, else 0."""
    if type(value) is bool or type(value) is int:
        return float(int(value))
    return value if type(value) is float else 0.0


T = TypeVar("T")

_MY = AttrRef("MY")


def _my(name: str) -> Expr:
    return Select(_MY, name)


# The slot columns a cycle reads whatever its expressions (and the roots of what they
# reach): read in one pass over the ads.
_READ_EVERY_CYCLE = (
    "PartitionableSlot",
    "MachineResources",
    "State",
    "RetirementTimeRemaining",
    *RESOURCES,
    *(f"Consumption{res}" for res in RESOURCES),
    "SlotWeight",
    "Requirements",
    "Rank",
    "CurrentRank",
    "ConcurrencyLimits",
    "PreemptingConcurrencyLimits",
)


class CycleSlots:
    """The cycle's slots: one table, what is still on offer, what p-slots have left."""

    def __init__(
        self,
        snapshot: CycleAds,
        cfg: CycleConfig,
        stats: KernelStats,
        now: float,
        jobs: Sequence[ClassAd] = (),
        carry: CycleCarry | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.now = now  # the date the slots' and jobs' expressions see (time(), CurrentTime)
        self.rng = rng  # what random() in them draws from: the negotiator's own
        self.ads = list(snapshot.slots)
        # every slot, for the phase-2 masks
        self._carry = None if carry is None else carry.slots
        self.table = SlotTable(self.ads, carry=self._carry, supplied=snapshot.slot_columns)
        self.cfg = cfg
        self.kstats = stats
        n = self.n = len(self.ads)
        t = self.table
        # the columns the cycle reads: those of every cycle and the names the jobs'
        # expressions reach, in one pass over the ads (the slots' own expressions may
        # reach a few more: referenced_attrs reads those)
        jobs = list(jobs)
        self.fit: PslotFit | None = None  # known below; _reach_from reads it
        on_jobs = self._on_jobs(jobs) if cfg.slot_classes else None
        t.gather(
            [
                *_READ_EVERY_CYCLE,
                *(on_jobs or ()),
                *(() if carry is not None else ("MyAddress",)),
            ]
        )
        empty = ClassAd()

        def mask(text: str) -> np.ndarray:
            return CompiledExpr(text).requirements_mask(
                t, empty, "target", stats=stats, now=self.now, rng=self.rng
            )

        self.is_p = mask("PartitionableSlot =?= true")
        self.has_cp = self._consumption_policy(empty)
        self.unclaimed = mask('State == "Unclaimed"')
        self.claimed = mask('State == "Claimed"')
        self.names = self._names(empty, None if carry is None else carry.slots)
        # read with the columns: a match need not read the slot's (cold) ad for it
        self._my_address: list[Expr | None] = t.objects("MyAddress")
        # Claim ids from the private ads, joined by Name.
        private = PrivateAds(
            snapshot.private_ads, None if carry is None else carry.private, now, rng
        )
        # Claimed slots stay candidates when preemption is considered (not p-slots, nor
        # jobs with retirement left unless early preemption): trimStartdAds.
        offered = self.unclaimed.copy()
        if cfg.consider_preemption:
            preemptible = self.claimed & ~self.is_p
            if not cfg.consider_early_preemption:
                preemptible &= ~mask("RetirementTimeRemaining > 0")
            offered |= preemptible
        self.claims, with_ids = private.claims(self.names, np.flatnonzero(offered), self.has_cp)
        has_claim = np.zeros(n, dtype=bool)
        has_claim[with_ids] = True
        self.alive = offered & has_claim
        self.n_alive = int(self.alive.sum())
        # whether any candidate is Claimed (preemption can happen at all this cycle)
        self.any_claimed = bool((self.alive & self.claimed).any())
        self.no_claim_id = int((self.unclaimed & ~has_claim).sum())
        self.remote_prio: dict[int, tuple[float, float]] = {}  # Claimed rows: (EUP, in use)
        self._deducted: set[int] = set()  # p-slots split this cycle
        # the p-slots matched whole are held to WithinResourceLimits (.fit)
        fit_rows = self.alive & self.is_p & ~self.has_cp
        self.fit = (
            PslotFit.of(t, fit_rows, stats=stats, now=now, rng=rng) if fit_rows.any() else None
        )
        # Requests are evaluated per slot class (see .slotclasses), on a table of one
        # representative ad per class whose p-slot rows follow the cycle's deductions.
        # Names with a value per machine (FileSystemDomain) are left out of the key of
        # the grouped slots; a request that reads one is evaluated slot by slot.
        # Claimed slots form classes too, apart from the Unclaimed ones and by the user
        # they would preempt (what they answer and RemoteUserPrio follow from that and
        # the names in the key).
        reached = self._referenced(jobs, on_jobs)
        claimed_rows = np.flatnonzero(self.alive & self.claimed & ~self.has_cp)
        self.classes = SlotClasses.build(
            t,
            self.alive,
            self.alive & ~self.has_cp & (self.unclaimed | self.claimed),
            self.alive & self.has_cp,
            None if reached is None else set(reached),
            self.resources,
            wide_above=max(64, int(math.sqrt(n))),
            apart=preempted_user_key(t, claimed_rows) if len(claimed_rows) else None,
        )
        self.view = self._view(self.classes)
        # a request's answers, remembered per request shape for the next one like it
        self.memo = None if reached is None else AnswerMemo(list(reached), len(self.resources))
        # A job's Requirements that read a wide name may still be decided per class in
        # three-valued logic (condor_submit's FileSystemDomain clause): see WideTaint.
        self.taint = (
            WideTaint.of(reached, self.classes.wide)
            if reached is not None and self.classes.wide
            else None
        )
        # the classes of several slots, and the names that may differ among them: one
        # for the cycle, so a request tree's walk is remembered across requests
        self.varies = (
            Varying(self.view.sizes > 1, self.taint.tainted) if self.taint is not None else None
        )
        self._fine: ClassView | None = None
        self.weight_cache: dict[tuple[int, bytes], float] = {}
        self._weight_now: dict[int, float] = {}  # p-slots' weights, by row (weight_now)
        self._owned_by_row: dict[int, list[tuple[int, str]]] = {}  # see _owned
        self._last_keys: tuple[int, bytes, tuple[tuple, tuple | None]] | None = None
        self._bases: list[int] | None = None  # see cache_keys
        self._wide_bases: list[int] | None = None
        # match_cost's last answer (row, consumption, weight after): the deduction that
        # follows it reads the weight from here
        self._costed: tuple[int, np.ndarray, float, list[float]] | None = None
        # Resources left (p-slots change during the cycle) and slot weights.
        # Custom resources (GPUs, MACHINE_RESOURCE_<name>) are rows after Cpus/Memory/Disk;
        # a slot without one has none of it and its jobs consume none (cp_deduct_assets
        # walks the slot's own MachineResources).
        self._avail = np.zeros((len(self.resources), n))
        for k, res in enumerate(self.resources):
            values = CompiledExpr(_my(res)).eval(
                t, empty, "target", stats=stats, now=self.now, rng=self.rng
            )
            vals, ok = numbers_of(values, n)
            self._avail[k] = vals if k < len(RESOURCES) else np.where(self.owns[k] & ok, vals, 0.0)
        # A p-slot's resources as floats once it is matched (a deduction is a few float
        # subtractions, not array operations), written into the array before it is read
        # whole; the bytes of the floats key what is remembered of a p-slot holding them.
        self._left: dict[int, list[float]] = {}
        self._unwritten: set[int] = set()
        self._held_bytes = struct.Struct(f"={len(self.resources)}d").pack
        self.weight = self._weights(empty)
        # the same, as lists: read once a match
        self.weights: list[float] = self.weight.tolist()
        self.p_slot: list[bool] = self.is_p.tolist()
        self.cp_slot: list[bool] = self.has_cp.tolist()
        self.current: dict[int, ClassAd] = {}  # p-slots changed this cycle: their ads now
        has_limits = (
            t.column("ConcurrencyLimits").present | t.column("PreemptingConcurrencyLimits").present
        )
        self.limits = ConcurrencyLimits(
            cfg.limit_max, [self.ads[r] for r in np.flatnonzero(has_limits)], now=now, rng=rng
        )
        # Expressions compiled once a cycle.
        self.pre = CompiledExpr(cfg.pre_job_rank) if cfg.pre_job_rank is not None else None
        self.post = CompiledExpr(cfg.post_job_rank) if cfg.post_job_rank is not None else None
        self.cons_exprs = [
            (f"Consumption{res}", CompiledExpr(_my(f"Consumption{res}"))) for res in self.resources
        ]
        # A negotiator rank that reaches no resource (nor a wide name) has one value per
        # p-slot and request for the whole cycle: the re-offer test remembers it.
        changing = {r.lower() for r in self.resources} | set(self.classes.wide)
        self._rank_fixed = tuple(
            e is not None
            and (reach := referenced_attrs(t, jobs, [e], [])) is not None
            and changing.isdisjoint(reach)
            for e in (cfg.pre_job_rank, cfg.post_job_rank)
        )
        # (pre/post, row, id(job)) -> (job, rank): the job is held, so its id stays its
        # own (the re-offer test is also given a request's short-lived copies)
        self._rank_memo: dict[tuple[int, int, int], tuple[ClassAd, float]] = {}

    def _names(self, empty: ClassAd, carry: ColumnCarry | None) -> list[str]:
        """Each slot's Name (a literal, as startds send it, is kept with a carry: read
        again only where the ad was replaced; an expression is evaluated each cycle)."""
        if carry is None:
            reads = ClassAd.string_values(self.ads, "Name", empty, now=self.now, rng=self.rng)
        else:
            reads = carry.per_row("Name", self.ads, literal_name, reads=("name",))
        # (the kinds read, in one C loop: ``in`` would compare each name with the marks)
        kinds = set(map(type, reads))
        if type(NOT_LITERAL) in kinds:
            reads = [
                string_attr(ad, "Name", empty, self.now, self.rng) if x is NOT_LITERAL else x
                for ad, x in zip(self.ads, reads, strict=True)
            ]
            kinds = set(map(type, reads))
        if type(None) not in kinds:
            return reads  # type: ignore[return-value]
        return [x if x is not None else f"<slot {r}>" for r, x in enumerate(reads)]

    def _consumption_policy(self, empty: ClassAd) -> np.ndarray:
        """cp_supports_policy: a p-slot with MachineResources and Consumption<Res> for each
        of them but Swap. Sets ``resources`` (Cpus, Memory, Disk, then the custom ones the
        policy slots list) and ``owns`` (which slot lists which resource)."""
        out = np.zeros(self.n, dtype=bool)
        self.resources: tuple[str, ...] = RESOURCES
        self.owns = np.ones((len(RESOURCES), self.n), dtype=bool)
        prow = np.flatnonzero(self.is_p)
        if not len(prow):
            return out
        t = self.table
        mres = (
            CompiledExpr(_my("MachineResources"))
            .eval(t, empty, "target", stats=self.kstats, now=self.now, rng=self.rng)
            .to_values(t.pool)
        )
        by_text: dict[str, list[int]] = {}
        for r in prow:
            if isinstance(mres[r], str):
                by_text.setdefault(mres[r], []).append(int(r))
        for text, rows in by_text.items():
            ok = np.ones(len(rows), dtype=bool)
            for asset in text.replace(",", " ").split():
                if asset.lower() != "swap":
                    ok &= t.column(f"Consumption{asset}").present[rows]
            out[np.array(rows)[ok]] = True
        # attribute names are case-insensitive: "GPUs" and "Gpus" are one resource
        spelling: dict[str, str] = {}
        custom: dict[str, set[int]] = {}
        for text, rows in by_text.items():
            for asset in text.replace(",", " ").split():
                key = asset.lower()
                if key not in ("swap", "cpus", "memory", "disk"):
                    spelling.setdefault(key, asset)
                    custom.setdefault(key, set()).update(r for r in rows if out[r])
        keys = sorted(k for k, rs in custom.items() if rs)
        if keys:
            self.resources = RESOURCES + tuple(spelling[k] for k in keys)
            owns = np.zeros((len(keys), self.n), dtype=bool)
            for k, key in enumerate(keys):
                owns[k, sorted(custom[key])] = True
            self.owns = np.vstack([self.owns, owns])
        return out

    def _weights(self, empty: ClassAd) -> np.ndarray:
        if not self.cfg.use_slot_weights:
            return np.ones(self.n)
        t = self.table
        own, ok_own = numbers_of(
            CompiledExpr(_my("SlotWeight")).eval(
                t, empty, "target", stats=self.kstats, now=self.now, rng=self.rng
            ),
            self.n,
        )
        dflt, ok_dflt = numbers_of(
            CompiledExpr(self.cfg.slot_weight).eval(
                t, empty, "target", stats=self.kstats, now=self.now, rng=self.rng
            ),
            self.n,
        )
        present = t.column("SlotWeight").present
        w = np.where(present, own, dflt)
        ok = np.where(present, ok_own, ok_dflt) & (w >= 0)
        return np.where(ok, w, 1.0)

    def _reach_from(self, resources: Sequence[str]) -> tuple[list[Expr], list[str]]:
        """Where the cycle's expressions start: the negotiator's own, and the names it
        reads of every slot and job (``resources``: the slots' resources)."""
        cfg = self.cfg
        roots = [
            e
            for e in (
                cfg.pre_job_rank,
                cfg.post_job_rank,
                cfg.slot_weight,
                cfg.preemption_requirements,
                cfg.preemption_rank,
            )
            if e is not None
        ]
        names = ["Requirements", "Rank", "CurrentRank", "SlotWeight", "ConcurrencyLimits"]
        if self.fit is not None:  # its names key the classes and the request shapes
            roots += self.fit.exprs
            names.append("MachineResources")
        return roots, names + [f"Consumption{res}" for res in resources]

    def _on_jobs(self, jobs: Sequence[ClassAd]) -> dict[str, list[Expr]] | None:
        """``job_reach`` from the standard resources' names (None: unknowable)."""
        try:
            return job_reach(jobs, *self._reach_from(RESOURCES))
        except DynamicReference:
            return None

    def _referenced(
        self, jobs: Sequence[ClassAd], on_jobs: dict[str, list[Expr]] | None
    ) -> dict[str, list[Expr]] | None:
        """The attributes this cycle's expressions can reach, with the expressions they
        hold (None: unknowable)."""
        if on_jobs is None:
            return None
        return referenced_attrs(self.table, jobs, *self._reach_from(self.resources), on_jobs)

    def _view(self, classes: SlotClasses, grouped: bool = True) -> ClassView:
        cfg = self.cfg
        pbase = None
        if grouped and cfg.slot_classes:
            pbase = classes.base_wide if classes.base_wide is not None else classes.base
        view = ClassView(
            self.ads,
            classes,
            self.alive,
            self.has_cp,
            ~self.unclaimed,
            (cfg.preemption_requirements, cfg.preemption_rank),
            self.kstats,
            pbase,
            self.owns,
            self.resources,
            now=self.now,
            rng=self.rng,
        )
        view.dirty.update(self._deducted)
        if self.remote_prio:
            rows = np.fromiter(self.remote_prio, dtype=np.int64)
            prio, used = (np.array(v) for v in zip(*self.remote_prio.values(), strict=True))
            view.table.set_numbers("RemoteUserPrio", classes.of[rows], prio)
            view.table.set_numbers("RemoteUserResourcesInUse", classes.of[rows], used)
        return view

    def fine(self) -> ClassView:
        """Every live slot its own class: for a request that reads a wide name."""
        if self._fine is None:
            self._fine = self._view(
                SlotClasses.build(self.table, self.alive, self.alive, self.alive, None, ()),
                grouped=False,
            )
        return self._fine

    def views(self) -> list[ClassView]:
        return [self.view] if self._fine is None else [self.view, self._fine]

    def kill(self, row: int) -> None:
        """Row ``row`` is no longer a candidate this cycle."""
        if self.alive[row]:
            self.alive[row] = False
            self.n_alive -= 1
            self.view.kill(row)
            if self._fine is not None:
                self._fine.kill(row)

    def kill_rows(self, rows: list[int]) -> None:
        """``kill`` of each of ``rows`` (live, distinct): a run's static slots at once."""
        if len(rows) < 16:  # numpy's fixed cost is more than a few kills
            for row in rows:
                self.kill(row)
            return
        at = np.asarray(rows, dtype=np.int64)
        self.alive[at] = False
        self.n_alive -= len(at)
        for view in self.views():
            view.kill_rows(at)

    def add_remote_prios(self, acct: Accountant) -> None:
        """RemoteUserPrio and RemoteUserResourcesInUse on the Claimed candidates (as a
        float, as HTCondor's addRemoteUserPrios assigns it)."""
        view = self.view
        by_user = view.preempt.prio_inputs()  # Claimed classes: one remote user each
        if not by_user:
            return
        crows = np.fromiter((c for cs in by_user.values() for c in cs), dtype=np.int64)
        prio = np.array([float(np.float32(acct.eup(u))) for u, cs in by_user.items() for _ in cs])
        used = np.array([acct.resources_used(u) for u, cs in by_user.items() for _ in cs])
        view.table.set_numbers("RemoteUserPrio", crows, prio)
        view.table.set_numbers("RemoteUserResourcesInUse", crows, used)
        members = view.classes.members
        self.remote_prio = {
            r: inserted
            for c, inserted in zip(
                crows.tolist(), zip(prio.tolist(), used.tolist(), strict=True), strict=True
            )
            for r in members[c].tolist()
        }

    def usage(self) -> tuple[dict[str, float], dict[str, int]]:
        """``slot_usage`` of the cycle's slots; carried, a slot's accounting name is read
        again only where its ad was replaced."""
        carry = self._carry
        now, rng = self.now, self.rng
        names = (
            None
            if carry is None
            else carry.per_row(
                "accounting",
                self.ads,
                lambda ad: accounting_name(ad, now, rng),
                reads=ACCOUNTING_NAMES,
            )
        )
        return slot_usage(self.ads, self.weight, self.claimed, names, now=now, rng=rng)

    def offer_with_remote_prio(self, row: int) -> ClassAd:
        """The Claimed slot's ad with the attributes the cycle inserted (HTCondor sends
        them to the schedd with the offer); copied only for a slot being matched."""
        prio, used = self.remote_prio.get(row, (None, None))
        ad = self.ad(row)
        if prio is None:
            return ad
        ad = self.current[row] = ad.copy()
        ad["RemoteUserPrio"] = prio
        ad["RemoteUserResourcesInUse"] = preserve_int(used)
        return ad

    # -- the current state of one slot --------------------------------------------------
    def startd_address(self, row: int, offer: ClassAd) -> str:
        """host:port of the startd holding ``row``, as ``offer`` (its ad, or a copy the
        cycle changed) names it."""
        e = self._my_address[row]
        if type(e) is Literal and offer is self.ads[row]:
            return address_of_sinful(e.value) if isinstance(e.value, str) else ""
        return startd_address_of(offer, self.now, self.rng)

    def ad(self, row: int) -> ClassAd:
        ad = self.current.get(row)
        return ad if ad is not None else self.ads[row]

    @property
    def avail(self) -> np.ndarray:
        """Resources left, (resources, slots), with every deduction made so far."""
        if self._unwritten:
            rows = sorted(self._unwritten)
            self._avail[:, rows] = np.array([self._left[r] for r in rows]).T
            self._unwritten.clear()
        return self._avail

    def left(self, row: int) -> list[float]:
        """What p-slot ``row`` holds now, a float per resource (never change it)."""
        got = self._left.get(row)
        if got is None:
            got = self._left[row] = self._avail[:, row].tolist()
        return got

    def held_keys(self, row: int) -> tuple[tuple, tuple | None]:
        """``cache_keys`` of what p-slot ``row`` holds now."""
        return self._keys_after(row, self.left(row))

    def cache_keys(self, row: int, held: bytes) -> tuple[tuple, tuple | None]:
        """The keys of what is remembered about p-slot ``row`` holding ``held``: its
        base class's, and the one p-slots alike but for a wide name share (for what
        provably did not read it)."""
        if self._bases is None:  # each p-slot's base class (and shared key), as ints
            wide = self.classes.base_wide
            self._bases = self.classes.base.tolist()
            self._wide_bases = None if wide is None else [-1 - w for w in wide.tolist()]
        key = (self._bases[row], held)
        wide_bases = self._wide_bases
        shared = (wide_bases[row], held) if wide_bases is not None and key[0] >= 0 else None
        return key, shared

    def cached_weight(self, row: int, avail: list[float]) -> float | None:
        return self._cached_weight(*self._keys_after(row, avail))

    def _keys_after(self, row: int, avail: list[float]) -> tuple[tuple, tuple | None]:
        """``cache_keys`` of p-slot ``row`` holding ``avail`` (the last answer kept: the
        deduction that follows match_cost, and the re-offer that follows the deduction,
        ask for what the p-slot holds just then)."""
        held = self._held_bytes(*avail)
        last = self._last_keys
        if last is not None and last[0] == row and last[1] == held:
            return last[2]
        keys = self.cache_keys(row, held)
        self._last_keys = (row, held, keys)
        return keys

    def _cached_weight(self, key: tuple, shared: tuple | None) -> float | None:
        w = self.weight_cache.get(key) if key[0] >= 0 else None
        if w is None and shared is not None:
            w = self.weight_cache.get(shared)
        return w

    def slot_weight(self, ad: ClassAd, row: int, avail: list[float]) -> float:
        """The SlotWeight of p-slot ``row``'s ad ``ad`` holding ``avail``; remembered per
        base class and resources left."""
        if not self.cfg.use_slot_weights:
            return 1.0
        key, shared = self._keys_after(row, avail)
        w = self._cached_weight(key, shared)
        if w is None:
            watched = WatchedAd.of(ad, self.classes.wide)
            e = watched.lookup("SlotWeight") or self.cfg.slot_weight
            v = scalar_number(evaluate(e, watched, None, now=self.now, rng=self.rng))
            w = v if v is not None and v >= 0 else 1.0
            if shared is not None and not watched.read:
                self.weight_cache[shared] = w
            elif key[0] >= 0:
                self.weight_cache[key] = w
        return w

    def deduct(self, row: int, cons: np.ndarray) -> float:
        """Take ``cons`` from p-slot ``row``; returns the cost W(S) - W(S')."""
        before = self.ad(row)
        w0 = self.weight_now(row)
        costed, self._costed = self._costed, None
        # match_cost's, on these same resources (none deducted since)
        same = costed is not None and costed[0] == row and costed[1] is cons
        left = costed[3] if same else minus(self.left(row), cons)  # type: ignore[index]
        self._left[row] = left
        self._unwritten.add(row)
        # A fresh copy each time: the ad offered with an earlier match must not change.
        ad = self.current[row] = self._holding(row, before, left)
        self._deducted.add(row)
        self.view.dirty.add(row)
        if self._fine is not None:
            self._fine.dirty.add(row)
        if not self.cfg.use_slot_weights:
            return 1.0
        if same:
            w1 = costed[2]  # type: ignore[index]
        else:
            w1 = self.slot_weight(ad, row, left)
        self._weight_now[row] = w1
        return w0 - w1

    def _holding(self, row: int, ad: ClassAd, left: list[float]) -> ClassAd:
        """A copy of p-slot ``row``'s ``ad`` holding the resources ``left`` (whole
        numbers as integers, as preserve_int writes them)."""
        out = ad.copy()
        out.set_literals(
            [(res, int(v) if (v := left[k]).is_integer() else v) for k, res in self._owned(row)]
        )
        return out

    def _owned(self, row: int) -> list[tuple[int, str]]:
        """(index, name) of each resource p-slot ``row`` lists."""
        got = self._owned_by_row.get(row)
        if got is None:
            owns = self.owns[:, row].tolist()
            got = self._owned_by_row[row] = [
                (k, res) for k, res in enumerate(self.resources) if owns[k]
            ]
        return got

    def weight_now(self, row: int) -> float:
        """The SlotWeight of p-slot ``row`` as it stands (what its last deduction left)."""
        w = self._weight_now.get(row)
        if w is None:
            w = self._weight_now[row] = self.slot_weight(self.ad(row), row, self.left(row))
        return w

    def match_cost(self, row: int, cons_of: PslotConsumption) -> float:
        """What matching ``row`` would cost, without taking it (cp_deduct_assets' test
        mode): a static slot's weight, a p-slot's W(S) - W(S') (what the request's job,
        ``cons_of``, consumes of it)."""
        cons = cons_of.get(row) if self.p_slot[row] else None
        if cons is None:
            return self.weights[row]
        if not self.cfg.use_slot_weights:
            return 1.0
        left = minus(self.left(row), cons)
        w1 = self.cached_weight(row, left)
        if w1 is None:
            w1 = self.slot_weight(self._holding(row, self.ad(row), left), row, left)
        self._costed = (row, cons, w1, left)
        return self.weight_now(row) - w1

    def flush(self, view: ClassView) -> None:
        """Bring a view's resource columns up to date (once per request, not per match)."""
        view.sync(self.avail, self.owns, self.resources)

    # -- per request ------------------------------------------------------------------
    def consumption(self, view: ClassView, job: ClassAd, crows: np.ndarray) -> np.ndarray:
        """(len(crows), resources) consumption of ``job`` on the p-slot classes ``crows``;
        NaN where invalid, 0 of a resource the slot does not list."""
        t = view.table
        rows = view.reps[crows]
        out = np.full((len(crows), len(self.resources)), np.nan)
        for k, (_attr, own) in enumerate(self.cons_exprs):
            vals, ok = numbers_of(
                own.eval(
                    t, job, "target", stats=self.kstats, now=self.now, rng=self.rng, rows=crows
                ),
                len(crows),
            )
            out[:, k] = np.where(self.owns[k, rows], np.where(ok, vals, np.nan), 0.0)
        return out

    def scalar_consumption(self, job: ClassAd, row: int, ad: ClassAd | None = None) -> np.ndarray:
        ad = ad if ad is not None else self.ad(row)
        out: list[float] = []
        for (attr, _own), own in zip(self.cons_exprs, self.owns[:, row].tolist(), strict=True):
            e = ad.lookup(attr) if own else None
            v = (
                scalar_number(evaluate(e, ad, job, now=self.now, rng=self.rng))
                if e is not None
                else None
            )
            out.append(0.0 if not own else math.nan if v is None else v)
        return np.array(out)

    def _rank_values(self, view: ClassView, ce: CompiledExpr, job: ClassAd, rows: np.ndarray):
        """A negotiator rank over the class rows ``rows``, as single-precision floats
        (HTCondor keeps them in a float); NO_RANK where not a finite number."""
        vals, ok = numbers_of(
            ce.eval(
                view.table, job, "target", stats=self.kstats, now=self.now, rng=self.rng, rows=rows
            ),
            len(rows),
        )
        with np.errstate(over="ignore"):
            single = vals.astype(np.float32).astype(np.float64)
        return np.where(ok & np.isfinite(single), single, NO_RANK)

    def job_ranks(
        self, view: ClassView, job: ClassAd, rows: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """NEGOTIATOR_PRE_JOB_RANK and NEGOTIATOR_POST_JOB_RANK of the class rows ``rows``."""
        none = np.full(len(rows), NO_RANK)
        return (
            none if self.pre is None else self._rank_values(view, self.pre, job, rows),
            none if self.post is None else self._rank_values(view, self.post, job, rows),
        )

    def preemption_rank(
        self, view: ClassView, job: ClassAd, rows: np.ndarray, state: np.ndarray
    ) -> np.ndarray:
        """PREEMPTION_RANK of the class rows ``rows`` where preempting (``state``)."""
        out = np.full(len(rows), NO_RANK)
        preempting = np.flatnonzero(state != NO_PREEMPTION)
        if view.preempt.rank is not None and len(preempting):
            out[preempting] = self._rank_values(view, view.preempt.rank, job, rows[preempting])
        return out

    def scalar_ranks(
        self, job: ClassAd, row: int, ad: ClassAd | None = None
    ) -> tuple[float, float, float]:
        ad = ad if ad is not None else self.ad(row)

        def neg_rank(e: Expr | None, which: int) -> float:
            if e is None:
                return NO_RANK
            key = (which, row, id(job)) if self._rank_fixed[which] else None
            if key is not None and (hit := self._rank_memo.get(key)) is not None:
                return hit[1]
            v = scalar_number(evaluate(e, ad, job, now=self.now, rng=self.rng))
            v32 = float(np.float32(v)) if v is not None else NO_RANK
            out = v32 if math.isfinite(v32) else NO_RANK
            if key is not None:
                self._rank_memo[key] = (job, out)
            return out

        rank_e = job.lookup("Rank")
        rank = (
            scalar_number(evaluate(rank_e, job, ad, now=self.now, rng=self.rng))
            if rank_e is not None
            else None
        )
        return neg_rank(self.cfg.pre_job_rank, 0), rank or 0.0, neg_rank(self.cfg.post_job_rank, 1)
