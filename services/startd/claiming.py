"""Granting claims: a claim request checked against the slot (its Start, the match, the
job's requests), a static slot claimed whole, a partitionable slot carved into a dynamic
slot sized by the job's requests or its consumption policy, and the claim ids it hands
out.

A mixin of :class:`.machine.Machine`; its methods use the machine's own slots.
"""

from __future__ import annotations

import math
import random
from typing import TYPE_CHECKING

from ..claimid import from_sinful, redact
from ..classad import ClassAd, evaluate
from .grants import ClaimGrant, ClaimRefusedError, InvalidJobError
from .slots import CONSUMPTION_RESOURCES, Slot, SlotClaim, current_ad, eval_number, is_true

if TYPE_CHECKING:
    from .machine import Machine


def _fits(pslot: Slot, pad: ClassAd, request: ClassAd, now: float, rng: random.Random) -> bool:
    """Whether ``request`` fits what ``pslot`` has left (HTCondor's WithinResourceLimits,
    a missing request aside: the carve refuses or defaults it)."""
    have = [("Cpus", pslot.cpus), ("Memory", pslot.memory), ("Disk", pslot.disk)]
    for res, units in [*have, *pslot.custom.items()]:
        value = eval_number(request, f"Request{res}", pad, now=now, rng=rng)
        if value is not None and value > units:
            return False
    return True


def concurrency_limits_of(job_ad: ClassAd, slot_ad: ClassAd, now: float, rng: random.Random) -> str:
    """The job's ConcurrencyLimits evaluated against the slot ("" if not a string)."""
    value = job_ad.eval("ConcurrencyLimits", slot_ad, now=now, rng=rng)
    return value if isinstance(value, str) else ""


class ClaimGrants:
    """Claim requests and carving (mixed into ``Machine``)."""

    # --- claims -----------------------------------------------------------------------

    def request_claim(
        self: Machine,
        claim_id: str,
        slot_name: str,
        job_ad: ClassAd,
        schedd_name: str,
        schedd_address: str,
        owner: str,
        now: float,
        *,
        leftovers: bool = False,
    ) -> ClaimGrant:
        """Claim a slot for a schedd with an offered id; a partitionable slot is carved.

        ``leftovers``: the schedd can use the p-slot's leftovers (see the module docstring).
        """
        held = self._held.get(claim_id)
        if held is not None:
            holder = held.claim.schedd_name if held.claim else "?"
            raise ClaimRefusedError(
                f"claim id {redact(claim_id)} is already claimed ({held.name}, by {holder})"
            )
        slot = self._offers.get(claim_id)
        if slot is None:
            raise self._unknown(claim_id)
        if slot_name and slot_name != slot.name:
            raise ClaimRefusedError(
                f"claim id {redact(claim_id)} is for {slot.name}, not {slot_name}"
            )
        if not schedd_address:
            raise ClaimRefusedError("a claim request must give the schedd's address")
        if not owner:
            raise ClaimRefusedError("a claim request must give the owner (submitter)")
        if slot.claim is not None:
            return self._preempt(slot, claim_id, job_ad, schedd_name, schedd_address, owner, now)
        if slot.kind == "Partitionable":
            grant = self._carve(slot, claim_id, job_ad, schedd_name, schedd_address, owner, now)
            if leftovers and self._leftovers and slot.policy.consumption is None:
                grant = ClaimGrant(
                    grant.claim_id,
                    grant.slot_name,
                    grant.slot_ad,
                    leftover_claim_id=slot.claim_id,
                    leftover_ad=self._ad_copy(slot, now),
                )
            return grant
        ad = current_ad(slot, self.info, now, self._sequence)
        self._check_match(slot, ad, job_ad, now)
        slot.claim = self._new_claim(claim_id, ad, job_ad, schedd_name, schedd_address, owner, now)
        slot.set_state("Claimed", "Idle", now)
        slot.matched_until = 0.0
        del self._offers[claim_id]
        self._held[claim_id] = slot
        self._offer_preempt_id(slot)
        self._changed()
        return ClaimGrant(claim_id, slot.name, self._ad_copy(slot, now))

    def _job_id(self: Machine, job: ClassAd, now: float) -> str:
        """The job's id for a message (a stand-in when the ad lacks one)."""
        at, rng = self.ad_epoch + now, self.eval_rng
        cluster, proc = job.eval("ClusterId", now=at, rng=rng), job.eval("ProcId", now=at, rng=rng)
        if isinstance(cluster, int) and isinstance(proc, int):
            return f"{cluster}.{proc}"
        return "<job without ClusterId/ProcId>"

    def _check_match(
        self: Machine, slot: Slot, slot_ad: ClassAd, job_ad: ClassAd, now: float
    ) -> None:
        at, rng, memo = self.ad_epoch + now, self.eval_rng, self.memo
        if not is_true(memo.eval(slot_ad, "Start", job_ad, now=at, rng=rng)):
            raise ClaimRefusedError(
                f"{slot.name}: START is not true for job {self._job_id(job_ad, now)}"
            )
        if not is_true(memo.eval(job_ad, "Requirements", slot_ad, now=at, rng=rng)):
            raise ClaimRefusedError(
                f"job {self._job_id(job_ad, now)}: its Requirements are not true on {slot.name}"
            )

    def _new_claim(
        self: Machine,
        claim_id: str,
        slot_ad: ClassAd,
        job_ad: ClassAd,
        schedd_name: str,
        schedd_address: str,
        owner: str,
        now: float,
    ) -> SlotClaim:
        at, rng = self.ad_epoch + now, self.eval_rng
        rank = slot_ad.eval("Rank", job_ad, now=at, rng=rng)
        if isinstance(rank, bool):  # EvalFloat reads a boolean RANK as 1 or 0
            rank = float(rank)
        elif not isinstance(rank, int | float) or not math.isfinite(rank):
            rank = None
        user = job_ad.eval("User", now=at, rng=rng)
        lease = eval_number(job_ad, "JobLeaseDuration", slot_ad, now=at, rng=rng)
        host = from_sinful(schedd_address)
        return SlotClaim(
            concurrency_limits=concurrency_limits_of(job_ad, slot_ad, at, rng),
            claim_id=claim_id,
            schedd_name=schedd_name,
            schedd_address=schedd_address,
            owner=owner,
            user=user if isinstance(user, str) and user else owner,
            client_machine=host.rpartition(":")[0] or host,
            rank=float(rank) if rank is not None else 0.0,
            claimed_at=now,
            last_heard=now,
            lease_duration=float(lease) if lease and lease > 0 else self._default_lease,
        )

    def _edited_request(
        self: Machine, slot: Slot, slot_ad: ClassAd, job_ad: ClassAd, now: float
    ) -> ClassAd:
        """The job with MODIFY_REQUEST_EXPR_* applied (evaluated with the job as MY)."""
        edits: dict[str, int] = {}
        at, rng = self.ad_epoch + now, self.eval_rng
        for attr, expr in slot.policy.modify_request:
            value = evaluate(expr, job_ad, slot_ad, now=at, rng=rng)
            if (
                isinstance(value, int | float)
                and not isinstance(value, bool)
                and math.isfinite(value)
                and value != job_ad.eval(attr, slot_ad, now=at, rng=rng)
            ):
                edits[attr] = int(value)  # HTCondor keeps the integer (long long) value
        if not edits:
            return job_ad
        edited = job_ad.copy()
        for attr, value in edits.items():
            edited[attr] = value
        return edited

    def _consumed_request(
        self: Machine, pslot: Slot, pad: ClassAd, job_ad: ClassAd, now: float
    ) -> ClassAd:
        """The job with Request<Res> read as its consumption on ``pslot`` (a missing request
        counts as 0 while evaluating, as in HTCondor's cp_compute_consumption)."""
        assert pslot.policy.consumption is not None
        target = job_ad.copy()
        for res in CONSUMPTION_RESOURCES:
            if target.lookup(f"Request{res}") is None:
                target[f"Request{res}"] = 0
        for res, _ in pslot.policy.custom_consumption:
            if target.lookup(f"Request{res}") is None:
                target[f"Request{res}"] = 0
        out = job_ad.copy()
        consumption = [*zip(CONSUMPTION_RESOURCES, pslot.policy.consumption)]
        consumption += list(pslot.policy.custom_consumption)
        for res, expr in consumption:
            value = evaluate(expr, pad, target, now=self.ad_epoch + now, rng=self.eval_rng)
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise ClaimRefusedError(
                    f"{pslot.name}: Consumption{res} is {value!r} for job {self._job_id(job_ad, now)}, "
                    "not a number >= 0"
                )
            out[f"Request{res}"] = value
        return out

    def _carve(
        self: Machine,
        pslot: Slot,
        claim_id: str,
        job_ad: ClassAd,
        schedd_name: str,
        schedd_address: str,
        owner: str,
        now: float,
    ) -> ClaimGrant:
        pad = current_ad(pslot, self.info, now, self._sequence)
        if pslot.policy.consumption is not None:
            request = self._consumed_request(pslot, pad, job_ad, now)
        else:
            request = self._edited_request(pslot, pad, job_ad, now)
            at, rng = self.ad_epoch + now, self.eval_rng
            if not is_true(pad.eval("Start", request, now=at, rng=rng)) or not _fits(
                pslot, pad, request, at, rng
            ):
                # the edit made START or WithinResourceLimits false: HTCondor retries
                # with the request as sent
                request = job_ad
        self._check_match(pslot, pad, request, now)
        amounts: dict[str, int] = {}
        for attr, unit in (("RequestCpus", "cpus"), ("RequestMemory", "MB"), ("RequestDisk", "KB")):
            value = eval_number(request, attr, pad, now=self.ad_epoch + now, rng=self.eval_rng)
            if value is None:
                if attr != "RequestCpus":
                    raise InvalidJobError(
                        f"job {self._job_id(job_ad, now)} has no numeric {attr}: a partitionable slot "
                        "cannot size a dynamic slot without it"
                    )
                value = 1  # HTCondor's default cpu request
            if value < 0:
                raise InvalidJobError(
                    f"job {self._job_id(job_ad, now)}: {attr} is negative ({value})"
                )
            amounts[unit] = int(value)
        for res in pslot.custom:
            value = eval_number(
                request, f"Request{res}", pad, now=self.ad_epoch + now, rng=self.eval_rng
            )
            if value is not None and value < 0:
                raise InvalidJobError(
                    f"job {self._job_id(job_ad, now)}: Request{res} is negative ({value})"
                )
            amounts[res] = math.ceil(value or 0)
        have = {"cpus": pslot.cpus, "MB": pslot.memory, "KB": pslot.disk, **pslot.custom}
        short = [f"{amounts[u]} {u} (has {have[u]})" for u in have if amounts[u] > have[u]]
        if short:
            raise ClaimRefusedError(
                f"{pslot.name} cannot be split for job {self._job_id(job_ad, now)}: it asks for "
                + ", ".join(short)
            )
        taken = {
            res: self._pick_ids(pslot, res, amounts[res], request, pad, now)
            for res in pslot.ids
            if amounts[res]
        }
        sub = pslot.lowest_free_sub_id()
        dslot = Slot(
            name=f"slot{pslot.slot_id}_{sub}@{self.name}",
            slot_id=pslot.slot_id,
            sub_id=sub,
            kind="Dynamic",
            policy=pslot.policy,
            cpus=amounts["cpus"],
            memory=amounts["MB"],
            disk=amounts["KB"],
            total_cpus=amounts["cpus"],
            total_memory=amounts["MB"],
            total_disk=amounts["KB"],
            claim_id=self._new_id(),
            state="Claimed",
            activity="Idle",
            entered_state=now,
            entered_activity=now,
            parent=pslot,
            custom={res: amounts[res] for res in pslot.custom},
            total_custom={res: amounts[res] for res in pslot.custom},
            ids={res: taken.get(res, []) for res in pslot.ids},
        )
        # RANK and the lease are evaluated against the partitionable slot the job matched
        dslot.claim = self._new_claim(
            dslot.claim_id, pad, job_ad, schedd_name, schedd_address, owner, now
        )
        pslot.touch()
        pslot.cpus -= dslot.cpus
        pslot.memory -= dslot.memory
        pslot.disk -= dslot.disk
        for res, units in dslot.custom.items():
            pslot.custom[res] -= units
        for res, ids in dslot.ids.items():
            pslot.ids[res] = [i for i in pslot.ids[res] if i not in ids]
        pslot.children[sub] = dslot
        # the used id is spent: a fresh one takes its place in the offer
        fresh = self._new_id()
        del self._offers[claim_id]
        if claim_id == pslot.claim_id:
            pslot.claim_id = fresh
        else:
            pslot.claim_id_list[pslot.claim_id_list.index(claim_id)] = fresh
        self._offers[fresh] = pslot
        self._slots[dslot.name] = dslot
        self._held[dslot.claim_id] = dslot
        self._offer_preempt_id(dslot)
        self._changed()
        return ClaimGrant(dslot.claim_id, dslot.name, self._ad_copy(dslot, now))

    def _pick_ids(
        self: Machine, pslot: Slot, res: str, units: int, request: ClassAd, pad: ClassAd, now: float
    ) -> list[str]:
        """The first ``units`` free ids of ``res``; with a Require<Res> expression, the
        first ones whose property ad satisfies it (as countMatches reads them)."""
        free = pslot.ids[res]
        require = request.lookup(f"Require{res}")
        if require is not None:
            props = self._device_ads.get(res, {})
            at, rng = self.ad_epoch + now, self.eval_rng
            free = [
                d
                for d in free
                if d in props and is_true(evaluate(require, props[d], request, now=at, rng=rng))
            ]
        if len(free) < units:
            raise ClaimRefusedError(
                f"{pslot.name} cannot be split for job {self._job_id(request, now)}: it asks for "
                f"{units} {res} matching Require{res} (has {len(free)})"
            )
        return free[:units]
