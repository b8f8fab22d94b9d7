"""One execute machine: its slots, the claims on them, the jobs "running" there.

Pure: no clock, no network. Every method takes ``now`` (pool seconds) and returns what
happened; the shell (``service.py``) sends ads, exits and events. The rules are HTCondor's
startd (condor_startd.V6: Resource.cpp, command.cpp, claim.cpp, ResState.cpp):

- A machine has NUM_CPUS, MEMORY (MB) and DISK (KB), divided into slots by
  :func:`mockpool.config.slot_types`, as :func:`.layout.machine_layout` reads them (the
  pool spec checks a machine with the same function). A mock machine detects 1 cpu,
  2048 MB of memory per cpu and 16 GiB of disk per cpu: set NUM_CPUS, MEMORY and DISK to
  describe real ones.
  Static and partitionable slots are numbered slot1..slotN in type order; dynamic slots
  are ``slot<parent>_<k>`` with k the lowest free index (HTCondor's IdDispenser).
- Claim ids (``<host:port?alias=machine>#birthday#seq#secret``): an unclaimed static slot
  offers one (its Capability); a partitionable slot offers its Capability and, with a
  consumption policy, NUM_CLAIMS more ids in ClaimIdList (default ceil(Cpus);
  SLOT_TYPE_<N>_NUM_CLAIMS). A claim request must bring an id this machine offers right
  now: an id it never issued, one already used, or one held by a claim is refused. Any
  refused request re-advertises the machine's slots at once (:meth:`Machine.refresh`).
- A claim request is granted when the slot's START is true with the job as TARGET and the
  job's Requirements are true with the slot as TARGET (UNDEFINED counts as false). A
  partitionable slot with a consumption policy carves a dynamic slot of the job's
  Consumption<Res> (evaluated with the job as TARGET); one without first edits the request
  with MODIFY_REQUEST_EXPR_REQUESTCPUS / _REQUESTMEMORY / _REQUESTDISK (defaults quantize
  to 1 cpu, 128 MB, 1024 KB; an edit that makes START false is dropped, as with HTCondor's
  MUST_MODIFY_REQUEST_EXPRS = False), then carves exactly the edited request: RequestCpus
  (default 1), RequestMemory and RequestDisk (required). The used id is replaced by a
  fresh one and the dynamic slot's claim gets a new id of its own.
- Leftovers (command.cpp ``accept_request_claim``): when the schedd asks for them and the
  p-slot has no consumption policy and CLAIM_PARTITIONABLE_LEFTOVERS is true (default
  $(NEGOTIATOR_USE_SLOT_WEIGHTS)), the grant also carries the p-slot's new Capability and
  its ad, so the schedd may claim what is left for another of its jobs at once.
- A claim publishes the job's ConcurrencyLimits (evaluated against the slot at claim and
  at activation) on the claimed slot's ad, for the negotiator's pool-wide count.
- Activation runs the job for its MockDuration (pool seconds, evaluated against the slot).
  A job without a usable MockDuration (missing, not a number, negative) is refused: a
  mock startd cannot know how long it would run. The job exits at exactly start +
  MockDuration with exit code 0 and the slot goes back to Claimed/Idle.
- Release: a static slot becomes Unclaimed/Idle with a fresh id; a dynamic slot is deleted
  and its resources go back to its parent. A running job is killed without an exit record
  (the schedd that released the claim knows).

Preemption (command.cpp ``request_claim``, Resource.cpp ``evalRetirementRemaining``): a
claimed static or dynamic slot offers a preempting claim id. A claim request with it is
refused if the slot's RANK of the new job is below the claim's CurrentRank; otherwise the
new claim is granted and the running job is evicted -- at once, or, when
MaxJobRetirementTime (MAXJOBRETIREMENTTIME against the job, lowered by the job's own
MaxJobRetirementTime) leaves it time, when that retirement ends (Claimed/Retiring until
then; a job that ends first exits normally). The eviction is a job exit with a reason
for the old schedd; the slot then belongs to the new claim (Claimed/Idle), whose
``ClaimGrant.ready`` says when it may be activated. Releasing either claim meanwhile
ends the preemption: the old one hands the slot over at once, the new one cancels it.

Leases (claim.cpp ``leaseExpired``): a claim's lease is the job's JobLeaseDuration
(evaluated against the slot at claim time; submit sets 2400 by default), else
MAX_CLAIM_ALIVES_MISSED x ALIVE_INTERVAL. Claiming, activating and every keepalive from
the holder renew it. A claim not heard from for a whole lease ends at
``last_heard + lease``: its job is killed without an exit record (the schedd is presumed
gone; if it is not, its next keepalive learns the claim is unknown) and the slot is
released as by :meth:`Machine.release` (a dynamic slot's resources go back to its parent).
:meth:`Machine.next_wakeup` says when the machine next needs :meth:`Machine.tick`, which
takes what is due in time order however late it comes (a startd back from a pause): a
claim whose lease ran out first ends at its deadline, and its job, planned to end later,
never exits.

Known differences: no Matched state (the startd hears of a match only with the claim
request), so MATCH_TIMEOUT has nothing to time; no Owner state, vacating (an evicted job
leaves at once) or suspension yet. CLAIM_WORKLIFE: a claim past it when its job exits
is closing (the exit says so) and ends with the job, as HTCondor's deactivate_claim and
the Idle -> Preempting transition do, at once here; an activation of an expired claim is
refused. The startd checks the job's Requirements as well as its own (HTCondor's startd
re-checks only its own side).
"""

from __future__ import annotations

import heapq
import math
import random
from dataclasses import dataclass, field

from ..claimid import from_sinful, make_claim_id, redact, sinful
from ..classad import ERROR, UNDEFINED, ClassAd, evaluate
from ..config import ConfigDict, ConfigError
from .layout import machine_layout
from .slots import (
    CONSUMPTION_RESOURCES,
    MachineInfo,
    RunningJob,
    Slot,
    SlotClaim,
    SlotPolicy,
    current_ad,
    eval_number,
    is_true,
    knob_where,
    machine_identity,
    private_ad,
    public_ad,
    type_knob,
)

__all__ = [
    "ActivationGrant",
    "ClaimGrant",
    "ClaimRefusedError",
    "InvalidJobError",
    "JobExitRecord",
    "LeaseExpiry",
    "Machine",
    "Release",
    "StartdError",
    "Tick",
    "UnknownClaimError",
]

# HTCondor's startd log line when a claim's lease runs out (claim.cpp).
LEASE_EXPIRED = "claim lease expired (condor_schedd gone?)"

# HTCondor's reason when a claim ends after a job because CLAIM_WORKLIFE has passed
# (ResState.cpp, the Claimed/Idle -> Preempting transition).
WORKLIFE = "idle claim shutting down due to CLAIM_WORKLIFE"


class StartdError(ValueError):
    """A request the startd refuses; the message names the problem. Nothing changed."""


class UnknownClaimError(StartdError):
    """A claim id this machine does not hold or offer."""


class ClaimRefusedError(StartdError):
    """A valid id, but the slot will not take this claim or job now."""


class InvalidJobError(StartdError):
    """The job ad lacks what the startd needs (ClusterId, MockDuration, requests)."""


@dataclass(frozen=True)
class ClaimGrant:
    claim_id: str  # the claim now held (a new id for a carved dynamic slot)
    slot_name: str
    slot_ad: ClassAd
    ready: float = 0.0  # a preempting claim: when the retiring job will have left
    preempts: str = ""  # a preempting claim: the claim it takes the slot from
    leftover_claim_id: str = ""  # the p-slot's fresh Capability, when leftovers were sent
    leftover_ad: ClassAd | None = None  # the p-slot after the carve


@dataclass(frozen=True)
class ActivationGrant:
    claim_id: str
    slot_name: str
    job_id: str
    start: float
    end: float
    cpus: int = 1  # the slot's Cpus: what the job keeps busy (for loading-factor measures)


@dataclass(frozen=True)
class Release:
    claim_id: str
    slot_name: str
    killed_job: str | None  # "12.0" when a running job was killed
    slot_ad: ClassAd  # the static slot, or the partitionable parent that got resources back


@dataclass(frozen=True)
class JobExitRecord:
    claim_id: str
    cluster: int
    proc: int
    start: float
    end: float
    exit_code: int
    slot_name: str
    schedd_name: str
    schedd_address: str
    reason: str = ""
    # the claim ended with its job (CLAIM_WORKLIFE passed, or a preempting claim took
    # the slot): the slot is already released; ``closed_by`` says why, when not worklife
    claim_closing: bool = False
    closed_by: str = ""

    @property
    def job_id(self) -> str:
        return f"{self.cluster}.{self.proc}"


@dataclass(frozen=True)
class LeaseExpiry:
    """A claim ended because its schedd was not heard from for a whole lease."""

    claim_id: str
    slot_name: str
    schedd_name: str
    last_heard: float
    lease_duration: float
    killed_job: str | None  # "12.0" when a running job was killed
    slot_ad: ClassAd  # as in Release: the static slot or the parent that got resources back
    alive_interval: float  # the startd's ALIVE_INTERVAL

    @property
    def deadline(self) -> float:
        return self.last_heard + self.lease_duration

    @property
    def keepalive_interval(self) -> float:
        """How often the holder was to send keepalives: min(ALIVE_INTERVAL, lease / 3),
        at least 10 s (the schedd's rule)."""
        return max(10.0, min(self.alive_interval, self.lease_duration / 3))


@dataclass(frozen=True)
class Tick:
    """What :meth:`Machine.tick` did: jobs that ended (or were evicted) and leases that ran out."""

    exits: list[JobExitRecord]
    expired: list[LeaseExpiry]
    unmatched: list[str] = field(default_factory=list)  # slots whose match timed out


def _retirement(
    slot: Slot, slot_ad: ClassAd, job_ad: ClassAd, now: float, rng: random.Random
) -> float:
    """MaxJobRetirementTime for a job starting on ``slot``: the startd's, evaluated with
    the job as TARGET (not a number: 0), lowered by the job's own if smaller."""
    value = evaluate(slot.policy.max_job_retirement_time, slot_ad, job_ad, now=now, rng=rng)
    mine = float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0
    own = eval_number(job_ad, "MaxJobRetirementTime", slot_ad, now=now, rng=rng)
    if own is not None and own < mine:
        mine = float(own)
    return mine if math.isfinite(mine) else 0.0


def _limits(job_ad: ClassAd, slot_ad: ClassAd, now: float, rng: random.Random) -> str:
    """The job's ConcurrencyLimits evaluated against the slot ("" if not a string)."""
    value = job_ad.eval("ConcurrencyLimits", slot_ad, now=now, rng=rng)
    return value if isinstance(value, str) else ""


def _fits(pslot: Slot, pad: ClassAd, request: ClassAd, now: float, rng: random.Random) -> bool:
    """Whether ``request`` fits what ``pslot`` has left (HTCondor's WithinResourceLimits,
    a missing request aside: the carve refuses or defaults it)."""
    have = [("Cpus", pslot.cpus), ("Memory", pslot.memory), ("Disk", pslot.disk)]
    for res, units in [*have, *pslot.custom.items()]:
        value = eval_number(request, f"Request{res}", pad, now=now, rng=rng)
        if value is not None and value > units:
            return False
    return True


class Machine:
    """A simulated execute machine: slots, claims and running jobs."""

    def __init__(
        self,
        name: str,
        config: ConfigDict,
        address: str,
        birthday: int,
        now: float,
        *,
        rng: random.Random | None = None,
        ad_epoch: int = 0,
    ) -> None:
        if not name or "@" in name:
            raise ConfigError(f"machine name {name!r} must be non-empty and have no '@'")
        cfg = config.for_subsystem("STARTD")
        self.name = name
        self.address = sinful(address)
        self.birthday = int(birthday)
        # Unix time of pool time 0: the slot ads' dates count from it, and so does time()
        # in the policy expressions evaluated here (``self.ad_epoch + now``)
        self.ad_epoch = int(ad_epoch)
        # Many machines share one server address, so their claim ids carry the machine as
        # a sinful-string parameter (HTCondor's "alias"): ids of two machines never share
        # a prefix, and a redacted id still says which machine issued it.
        self._id_prefix = f"<{from_sinful(address)}?alias={name}>"
        self._seq = 0
        self._rng = rng  # claim-id secrets: seeded in a virtual run, else the OS's CSPRNG
        # what random() in the policy expressions evaluated here draws from: the machine's
        # own, seeded by the pool's seed (a virtual run replays its draws)
        self.eval_rng = random.Random(f"{config.seed}:{name}:random()")
        layout = machine_layout(config, name)
        cpus, memory, disk = layout.cpus, layout.memory, layout.disk
        resources, specs = layout.resources, layout.slot_types
        custom_names = tuple(r.name for r in resources)
        # the ids of each id resource, handed out to slots in order
        free_ids = {r.name: list(r.ids) for r in resources if r.ids}
        maxc = cfg.get_int("MAX_CLAIM_ALIVES_MISSED") * cfg.get_int("ALIVE_INTERVAL")
        self._leftovers = cfg.get_bool("CLAIM_PARTITIONABLE_LEFTOVERS")
        self._default_lease = float(maxc)
        self._match_timeout = float(cfg.get_int("MATCH_TIMEOUT"))
        self._alive_interval = float(cfg.get_int("ALIVE_INTERVAL"))
        # -1: a claim runs jobs forever; N: no new job once the claim is older than N s
        self._worklife = cfg.get_int("CLAIM_WORKLIFE")
        self._slots: dict[str, Slot] = {}  # every slot by Name, dynamic ones included
        self._top: list[Slot] = []  # static and partitionable, in SlotID order
        self._offers: dict[str, Slot] = {}  # claim ids a claim request may bring
        self._held: dict[str, Slot] = {}  # claim ids of claims held by schedds
        self._ends: list[tuple[float, int, str]] = []  # (job end, tiebreak, claim id), lazy
        self._tiebreak = 0
        self._removed: list[str] = []  # dynamic slots deleted since the last take_removed
        self._evicted: list[JobExitRecord] = []  # preempted jobs not yet reported
        # claims a preempting claim took over with no job on them: (slot, claim id, why)
        self._taken_over: list[tuple[str, str, str]] = []
        self._version = 0
        self._advertised_version = -1
        self._sequence = 0
        n = 0
        for spec in specs:
            policy = SlotPolicy.from_config(cfg, spec.type_id, custom_names)
            for _ in range(spec.count):
                n += 1
                kind = "Partitionable" if spec.partitionable else "Static"
                custom = dict(spec.custom)
                ids = {}
                for res, units in custom.items():
                    if res in free_ids:
                        ids[res], free_ids[res] = free_ids[res][:units], free_ids[res][units:]
                slot = Slot(
                    name=f"slot{n}@{name}",
                    slot_id=n,
                    sub_id=0,
                    kind=kind,
                    policy=policy,
                    cpus=spec.cpus,
                    memory=spec.memory_mb,
                    disk=spec.disk_kb,
                    total_cpus=spec.cpus,
                    total_memory=spec.memory_mb,
                    total_disk=spec.disk_kb,
                    claim_id=self._new_id(),
                    entered_state=now,
                    entered_activity=now,
                    custom=custom,
                    total_custom=dict(custom),
                    ids=ids,
                )
                self._offers[slot.claim_id] = slot
                if spec.partitionable and policy.consumption is not None:
                    count = policy.num_claims or max(1, math.ceil(spec.cpus))
                    slot.claim_id_list = [self._new_id() for _ in range(count)]
                    for cid in slot.claim_id_list:
                        self._offers[cid] = slot
                self._slots[slot.name] = slot
                self._top.append(slot)
        self.info = MachineInfo(
            name,
            self.address,
            self.birthday,
            cpus,
            memory,
            disk,
            n,
            machine_identity(cfg, name),
            resources,
            self.ad_epoch,
            detected_cpus=cpus,
            detected_memory=layout.detected_memory,
        )
        self._cfg = cfg
        self._resource_ids = {r.name: r.ids for r in resources if r.ids}
        # each device's property ad, for Require<Res>: its own top-level ad, so that a
        # name it lacks is the job's (the ads published in slot ads are nested in them)
        self._device_ads = {
            r.name: {d: ClassAd({"Id": d, **dict(r.properties)}) for d in r.ids}
            for r in resources
            if r.properties
        }

    def check_policies(self) -> None:
        """Refuse a SLOT_WEIGHT or consumption expression that is not a number for a slot of
        this machine (consumption: for a one-cpu, 1024 MB, 1024 KB job), naming the knob
        (ConfigError). Once per configuration, when a pool starts: not per machine."""
        checked: set[int] = set()
        for slot in self._top:
            if slot.policy.type_id not in checked:
                checked.add(slot.policy.type_id)
                self._check_policy(self._cfg, slot)

    def _check_policy(self, cfg: ConfigDict, slot: Slot) -> None:
        ad = public_ad(slot, self.info, 0.0, 0)
        probe = ClassAd(RequestCpus=1, RequestMemory=1024, RequestDisk=1024)
        checks = [("SLOT_WEIGHT", slot.policy.slot_weight, None)]
        if slot.kind == "Partitionable" and slot.policy.consumption is not None:
            checks += [
                (f"CONSUMPTION_{res.upper()}", expr, probe)
                for res, expr in zip(CONSUMPTION_RESOURCES, slot.policy.consumption)
            ]
        for knob, expr, target in checks:
            value = evaluate(expr, ad, target, now=self.ad_epoch, rng=self.eval_rng)
            if value is UNDEFINED and target is not None:
                continue  # may name a job attribute this probe lacks
            if isinstance(value, bool) or not isinstance(value, int | float):
                type_id = slot.policy.type_id
                shown = "ERROR" if value is ERROR else repr(value)
                raise ConfigError(
                    f"{knob_where(cfg, type_id, knob)} = {type_knob(cfg, type_id, knob)!r}: "
                    f"evaluates to {shown} on {slot.name}, not a number"
                )

    # --- bookkeeping ------------------------------------------------------------------

    def _new_id(self) -> str:
        self._seq += 1
        return make_claim_id(self._id_prefix, self.birthday, self._seq, self._rng)

    def _changed(self) -> None:
        self._version += 1

    def refresh(self) -> None:
        """Advertise every slot again at once, changed or not: after a refused claim
        request (HTCondor's abort_claim changes the slot's state, which sends its ad),
        so a negotiator that matched a stale or unfit ad sees the slots as they are."""
        for slot in self._slots.values():
            slot.touch()
        self._changed()

    @property
    def dirty(self) -> bool:
        """Whether the ads changed since :meth:`mark_clean` (the shell advertises then)."""
        return self._version != self._advertised_version

    @property
    def version(self) -> int:
        return self._version

    def mark_clean(self, version: int | None = None) -> None:
        """The ads as of ``version`` (default: now) reached the collector."""
        self._advertised_version = self._version if version is None else version

    def take_removed(self) -> list[str]:
        """Names of dynamic slots deleted since the last call (to invalidate their ads)."""
        out, self._removed = self._removed, []
        return out

    # --- queries ----------------------------------------------------------------------

    @property
    def slots(self) -> dict[str, Slot]:
        """Every slot by Name (read-only use: change slots through the methods)."""
        return self._slots

    def slot(self, name: str) -> Slot:
        try:
            return self._slots[name]
        except KeyError:
            raise StartdError(f"{self.name} has no slot {name!r}") from None

    def holds(self, claim_id: str) -> bool:
        return claim_id in self._held

    def offered_claim_ids(self) -> list[str]:
        return list(self._offers)

    def claim(self, claim_id: str) -> SlotClaim:
        """The claim with this id: a slot's current claim, or the preempting claim waiting
        for the current job to retire (each has its own holder)."""
        slot = self._held.get(claim_id)
        if slot is None or slot.claim is None:
            raise self._unknown(claim_id)
        if slot.preempting is not None and slot.preempting.claim_id == claim_id:
            return slot.preempting
        return slot.claim

    def next_sequence(self) -> int:
        """The UpdateSequenceNumber of the next advertisement of this machine's ads."""
        self._sequence += 1
        return self._sequence

    def ordered_slots(self) -> list[Slot]:
        """Every slot in ad order: by SlotID, each dynamic slot after its parent."""
        out: list[Slot] = []
        for slot in self._top:
            out.append(slot)
            if slot.children:
                out.extend(slot.children[k] for k in sorted(slot.children))
        return out

    def public_ads(self, now: float) -> list[ClassAd]:
        """Every slot's "Machine" ad, time accounting counted up to ``now``."""
        seq = self.next_sequence()
        return [public_ad(s, self.info, now, seq) for s in self.ordered_slots()]

    def private_ads(self) -> list[ClassAd]:
        """Every slot's "MachinePrivate" ad (Capability, ClaimIdList)."""
        return [private_ad(s, self.info) for s in self.ordered_slots()]

    def slot_ad(self, name: str, now: float) -> ClassAd:
        return public_ad(self.slot(name), self.info, now, self._sequence)

    def _ad_copy(self, slot: Slot, now: float) -> ClassAd:
        # through the cache: the next policy check of this slot reuses the build
        return current_ad(slot, self.info, now, self._sequence).copy()

    def _unknown(self, claim_id: str) -> UnknownClaimError:
        head = f"{self._id_prefix}#{self.birthday}#"
        shown = redact(claim_id)
        if claim_id.startswith(head):
            seq = claim_id[len(head) :].partition("#")[0]
            if seq.isdigit() and 0 < int(seq) <= self._seq:
                return UnknownClaimError(
                    f"claim id {shown} is no longer valid at {self.name} (already used or released)"
                )
        return UnknownClaimError(f"claim id {shown} was not issued by {self.name}")

    # --- claims -----------------------------------------------------------------------

    def request_claim(
        self,
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

    # --- preemption -------------------------------------------------------------------

    def _offer_preempt_id(self, slot: Slot) -> None:
        """A claimed slot offers a fresh id for a preempting claim request."""
        self._withdraw_preempt_id(slot)
        slot.preempt_id = self._new_id()
        self._offers[slot.preempt_id] = slot
        slot.touch()

    def _withdraw_preempt_id(self, slot: Slot) -> None:
        if slot.preempt_id:
            self._offers.pop(slot.preempt_id, None)
            slot.preempt_id = ""
            slot.touch()

    def _preempt(
        self,
        slot: Slot,
        claim_id: str,
        job_ad: ClassAd,
        schedd_name: str,
        schedd_address: str,
        owner: str,
        now: float,
    ) -> ClaimGrant:
        """A claim request with the slot's preempting id: evict the current claim's job
        (now, or when its retirement ends) and give the slot to the new claim."""
        old = slot.claim
        assert old is not None
        ad = current_ad(slot, self.info, now, self._sequence)
        self._check_match(slot, ad, job_ad, now)
        new = self._new_claim(claim_id, ad, job_ad, schedd_name, schedd_address, owner, now)
        if new.rank < old.rank:
            raise ClaimRefusedError(
                f"{slot.name}: RANK of job {self._job_id(job_ad, now)} is {new.rank:g}, below the "
                f"current claim's {old.rank:g}: not preempting"
            )
        new.job_ad = job_ad
        self._withdraw_preempt_id(slot)
        self._held[claim_id] = slot
        slot.preempting = new
        job = old.job
        end = min(job.end, job.start + job.retirement) if job is not None else now
        self._changed()
        if end <= now:
            self._hand_over(slot, now, evict=True)
            return ClaimGrant(
                claim_id, slot.name, self._ad_copy(slot, now), now, preempts=old.claim_id
            )
        slot.retire_end = end
        slot.set_state("Claimed", "Retiring", now)
        self._tiebreak += 1
        heapq.heappush(self._ends, (end, self._tiebreak, old.claim_id))
        return ClaimGrant(claim_id, slot.name, self._ad_copy(slot, now), end, preempts=old.claim_id)

    def _hand_over(self, slot: Slot, now: float, *, evict: bool, reported: bool = False) -> None:
        """The slot's current claim ends (its job evicted if ``evict``); the preempting
        claim takes the slot, Claimed/Idle. The end of the current claim is reported
        with its evicted job, or alone, unless ``reported`` (its schedd released it; its
        job's exit says it closed)."""
        old, new = slot.claim, slot.preempting
        assert old is not None and new is not None
        job = old.job
        why = "startd RANK" if new.rank > old.rank else "user priority"
        reason = f"preempted by {new.owner} ({why})"
        if job is None and not reported:
            self._taken_over.append((slot.name, old.claim_id, reason))
        if evict and job is not None:
            self._evicted.append(
                JobExitRecord(
                    claim_id=old.claim_id,
                    cluster=job.cluster,
                    proc=job.proc,
                    start=job.start,
                    end=now,
                    exit_code=0,
                    slot_name=slot.name,
                    schedd_name=old.schedd_name,
                    schedd_address=old.schedd_address,
                    reason=reason,
                    claim_closing=True,
                    closed_by=reason,
                )
            )
        self._held.pop(old.claim_id, None)
        new.claimed_at = now
        slot.claim, slot.preempting, slot.retire_end = new, None, 0.0
        slot.claim_id = new.claim_id
        slot.set_state("Claimed", "Idle", now)
        self._offer_preempt_id(slot)
        self._changed()

    def take_taken_over(self) -> list[tuple[str, str, str]]:
        """Claims with no job that a preempting claim ended since the last call: (slot
        name, claim id, why)."""
        out, self._taken_over = self._taken_over, []
        return out

    def take_evicted(self) -> list[JobExitRecord]:
        """Jobs evicted by a preemption since the last call (the shell reports them)."""
        out, self._evicted = self._evicted, []
        return out

    def _job_id(self, job: ClassAd, now: float) -> str:
        """The job's id for a message (a stand-in when the ad lacks one)."""
        at, rng = self.ad_epoch + now, self.eval_rng
        cluster, proc = job.eval("ClusterId", now=at, rng=rng), job.eval("ProcId", now=at, rng=rng)
        if isinstance(cluster, int) and isinstance(proc, int):
            return f"{cluster}.{proc}"
        return "<job without ClusterId/ProcId>"

    def _check_match(self, slot: Slot, slot_ad: ClassAd, job_ad: ClassAd, now: float) -> None:
        if not is_true(slot_ad.eval("Start", job_ad, now=self.ad_epoch + now, rng=self.eval_rng)):
            raise ClaimRefusedError(
                f"{slot.name}: START is not true for job {self._job_id(job_ad, now)}"
            )
        if not is_true(
            job_ad.eval("Requirements", slot_ad, now=self.ad_epoch + now, rng=self.eval_rng)
        ):
            raise ClaimRefusedError(
                f"job {self._job_id(job_ad, now)}: its Requirements are not true on {slot.name}"
            )

    def _new_claim(
        self,
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
            concurrency_limits=_limits(job_ad, slot_ad, at, rng),
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

    def _edited_request(self, slot: Slot, slot_ad: ClassAd, job_ad: ClassAd, now: float) -> ClassAd:
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

    def _consumed_request(self, pslot: Slot, pad: ClassAd, job_ad: ClassAd, now: float) -> ClassAd:
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
        self,
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
        self, pslot: Slot, res: str, units: int, request: ClassAd, pad: ClassAd, now: float
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

    # --- jobs -------------------------------------------------------------------------

    def activate(self, claim_id: str, job_ad: ClassAd, now: float) -> ActivationGrant:
        """Start a job on an idle claim; it runs for its MockDuration."""
        slot = self._held.get(claim_id)
        if slot is None or slot.claim is None:
            raise self._unknown(claim_id)
        if slot.claim.claim_id != claim_id:
            raise ClaimRefusedError(
                f"{slot.name} is still retiring its job until {slot.retire_end:g}: "
                f"activate the preempting claim {redact(claim_id)} then"
            )
        claim = slot.claim
        if claim.job is not None:
            raise ClaimRefusedError(
                f"claim {redact(claim_id)} on {slot.name} is already running job "
                f"{claim.job.cluster}.{claim.job.proc}"
            )
        age = now - claim.claimed_at
        if self._worklife_expired(claim, now):
            raise ClaimRefusedError(
                f"claim {redact(claim_id)} on {slot.name} is {age:g} s old: past "
                f"CLAIM_WORKLIFE ({self._worklife} s), it takes no new job"
            )
        at, rng = self.ad_epoch + now, self.eval_rng
        cluster, proc = (
            job_ad.eval("ClusterId", now=at, rng=rng),
            job_ad.eval("ProcId", now=at, rng=rng),
        )
        for attr, value in (("ClusterId", cluster), ("ProcId", proc)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InvalidJobError(f"job ad has no valid {attr} (got {value!r})")
        ad = current_ad(slot, self.info, now, self._sequence)
        duration = eval_number(job_ad, "MockDuration", ad, now=at, rng=rng)
        if duration is None or duration < 0:
            shown = job_ad.eval("MockDuration", now=at, rng=rng)
            raise InvalidJobError(
                f"job {cluster}.{proc} has no usable MockDuration (got {shown}): give "
                "+MockDuration = <pool seconds> or run /bin/sleep N"
            )
        exit_code = 0
        if job_ad.lookup("MockExitCode") is not None:
            code = eval_number(job_ad, "MockExitCode", ad, now=at, rng=rng)
            if not isinstance(code, int) or not -(2**31) <= code < 2**31:
                raise InvalidJobError(
                    f"job {cluster}.{proc} has no usable MockExitCode (got "
                    f"{job_ad.eval('MockExitCode', now=at, rng=rng)}): give an integer exit code"
                )
            exit_code = code
        self._check_match(slot, ad, job_ad, now)
        gjid = job_ad.eval("GlobalJobId", now=at, rng=rng)
        if not isinstance(gjid, str) or not gjid:
            qdate = eval_number(job_ad, "QDate", None, now=at, rng=rng) or 0
            gjid = f"{claim.schedd_name}#{cluster}.{proc}#{int(qdate)}"
        job = RunningJob(
            cluster,
            proc,
            gjid,
            start=now,
            end=now + float(duration),
            retirement=_retirement(slot, ad, job_ad, at, rng),
            exit_code=exit_code,
        )
        claim.job = job
        claim.activations += 1
        claim.concurrency_limits = _limits(job_ad, ad, at, rng)
        claim.last_heard = now
        slot.set_state("Claimed", "Busy", now)
        self._tiebreak += 1
        heapq.heappush(self._ends, (job.end, self._tiebreak, claim_id))
        self._changed()
        return ActivationGrant(
            claim_id, slot.name, f"{cluster}.{proc}", job.start, job.end, slot.cpus
        )

    def _worklife_expired(self, claim: SlotClaim, now: float) -> bool:
        """HTCondor's Resource::claimWorklifeExpired: after its first job, a claim older
        than CLAIM_WORKLIFE takes no more (0: one job per claim; -1: no limit)."""
        age = now - claim.claimed_at
        return claim.activations > 0 and self._worklife >= 0 and age > self._worklife

    def _live_end(self, end: float, claim_id: str) -> bool:
        slot = self._held.get(claim_id)
        if slot is None or slot.claim is None or slot.claim.claim_id != claim_id:
            return False
        job = slot.claim.job
        retiring = slot.preempting is not None and slot.retire_end == end
        return job is not None and (job.end == end or retiring)

    def next_event_time(self) -> float | None:
        """Pool time of the earliest job exit or eviction, or None when none is due."""
        while self._ends and not self._live_end(self._ends[0][0], self._ends[0][2]):
            heapq.heappop(self._ends)
        return self._ends[0][0] if self._ends else None

    def advance(self, now: float) -> list[JobExitRecord]:
        """Finish every job whose end time is <= ``now`` (their slots go Claimed/Idle, or
        to the preempting claim), and evict those whose retirement ended."""
        exits: list[JobExitRecord] = []
        while self._ends and self._ends[0][0] <= now:
            end, _, claim_id = heapq.heappop(self._ends)
            if not self._live_end(end, claim_id):
                continue
            slot = self._held[claim_id]
            claim = slot.claim
            assert claim is not None and claim.job is not None
            if slot.preempting is not None and claim.job.end > end:  # retirement is over
                self._hand_over(slot, end, evict=True)
                continue
            job, claim.job = claim.job, None
            slot.set_state("Claimed", "Idle", job.end)  # accounted to the exact exit time
            # HTCondor's deactivate_claim: a claim past its worklife is closing; the
            # startd ends it (Claimed/Idle -> Preempting -> Unclaimed at once here) and
            # tells the schedd, which neither reuses it nor releases it
            # a job that retired in time ends its claim too: the preempting one takes over
            taker = slot.preempting
            closing = taker is not None or self._worklife_expired(claim, job.end)
            closed_by = f"preempted by {taker.owner} (retired)" if taker is not None else ""
            exits.append(
                JobExitRecord(
                    claim_id=claim_id,
                    cluster=job.cluster,
                    proc=job.proc,
                    start=job.start,
                    end=job.end,
                    exit_code=job.exit_code,
                    slot_name=slot.name,
                    schedd_name=claim.schedd_name,
                    schedd_address=claim.schedd_address,
                    claim_closing=closing,
                    closed_by=closed_by,
                )
            )
            if taker is not None:  # retired in time: the new claim takes over
                self._hand_over(slot, job.end, evict=False, reported=True)
            elif closing:
                self.release(claim_id, job.end)
        if exits:
            self._changed()
        return self.take_evicted() + exits

    def release(self, claim_id: str, now: float) -> Release:
        """End a claim; a running job is killed. A dynamic slot is deleted."""
        slot = self._held.get(claim_id)
        if slot is None or slot.claim is None:
            raise self._unknown(claim_id)
        if slot.preempting is not None:
            return self._release_during_preemption(slot, claim_id, now)
        job = slot.claim.job
        killed = f"{job.cluster}.{job.proc}" if job is not None else None
        del self._held[claim_id]
        slot.claim = None
        self._withdraw_preempt_id(slot)
        self._changed()
        if slot.kind == "Dynamic":
            parent = slot.parent
            assert parent is not None
            parent.touch()
            parent.cpus += slot.cpus
            parent.memory += slot.memory
            parent.disk += slot.disk
            for res, units in slot.custom.items():
                parent.custom[res] += units
            for res, ids in slot.ids.items():  # back in the machine's order
                order = {d: k for k, d in enumerate(self._resource_ids[res])}
                parent.ids[res] = sorted([*parent.ids[res], *ids], key=order.__getitem__)
            del parent.children[slot.sub_id]
            del self._slots[slot.name]
            self._removed.append(slot.name)
            return Release(claim_id, slot.name, killed, self._ad_copy(parent, now))
        slot.claim_id = self._new_id()
        self._offers[slot.claim_id] = slot
        slot.set_state("Unclaimed", "Idle", now)
        return Release(claim_id, slot.name, killed, self._ad_copy(slot, now))

    def _release_during_preemption(self, slot: Slot, claim_id: str, now: float) -> Release:
        """The preempting claim's schedd gives up: the job stops retiring. The current
        claim's schedd lets go: its job is killed and the preempting claim takes over."""
        new = slot.preempting
        assert new is not None and slot.claim is not None
        if claim_id == new.claim_id:
            del self._held[claim_id]
            slot.preempting, slot.retire_end = None, 0.0
            slot.set_state("Claimed", "Busy", now)
            self._offer_preempt_id(slot)
            self._changed()
            return Release(claim_id, slot.name, None, self._ad_copy(slot, now))
        job = slot.claim.job
        killed = f"{job.cluster}.{job.proc}" if job is not None else None
        self._hand_over(slot, now, evict=False, reported=True)
        return Release(claim_id, slot.name, killed, self._ad_copy(slot, now))

    # --- leases -----------------------------------------------------------------------

    def _held_claims(self) -> list[SlotClaim]:
        out = []
        for cid, slot in self._held.items():
            if slot.preempting is not None and slot.preempting.claim_id == cid:
                out.append(slot.preempting)
            elif slot.claim is not None:
                out.append(slot.claim)
        return out

    def next_lease_deadline(self) -> float | None:
        """The earliest time a held claim's lease runs out, or None with no claims."""
        return min((c.last_heard + c.lease_duration for c in self._held_claims()), default=None)

    def next_wakeup(self) -> float | None:
        """When :meth:`tick` next has something to do: a job end, an eviction, a lease
        deadline or a match timeout (None: nothing is due until a request comes)."""
        times = [t for t in (self.next_event_time(), self.next_lease_deadline()) if t is not None]
        times += [s.matched_until for s in self._top if s.state == "Matched"]
        return min(times, default=None)

    def match_info(self, claim_ids: list[str], now: float) -> list[str]:
        """The negotiator matched these ids (NEGOTIATOR_INFORM_STARTD): each one that is an
        Unclaimed static slot's current id puts that slot in Matched until it is claimed
        or MATCH_TIMEOUT passes (claim.cpp start_match_timer). Returns the ids refused
        (unknown, claimed, a preempting id, or a partitionable slot's)."""
        refused = []
        for cid in claim_ids:
            slot = self._offers.get(cid)
            if (
                slot is None
                or slot.claim_id != cid
                or slot.state != "Unclaimed"
                or slot.kind != "Static"
            ):
                refused.append(cid)
                continue
            slot.set_state("Matched", "Idle", now)
            slot.matched_until = now + self._match_timeout
            self._changed()
        return refused

    def _match_timeouts(self, now: float) -> list[str]:
        """Matched slots never claimed within MATCH_TIMEOUT: Unclaimed again, their claim
        id unchanged (claim.cpp match_timed_out)."""
        out = []
        for slot in self._top:
            if slot.state == "Matched" and slot.matched_until <= now:
                slot.set_state("Unclaimed", "Idle", slot.matched_until)
                slot.matched_until = 0.0
                out.append(slot.name)
        if out:
            self._changed()
        return out

    def expire_leases(self, now: float) -> list[LeaseExpiry]:
        """End every claim whose lease ran out by ``now``, in deadline order (each at its
        deadline, so slot times are accounted to the exact moment)."""
        due = sorted(
            (c.last_heard + c.lease_duration, c.claim_id, c)
            for c in self._held_claims()
            if c.last_heard + c.lease_duration <= now
        )
        out = []
        for deadline, cid, claim in due:
            if cid not in self._held:  # ended with an earlier one (its preemption partner)
                continue
            rel = self.release(cid, deadline)
            out.append(
                LeaseExpiry(
                    cid,
                    rel.slot_name,
                    claim.schedd_name,
                    claim.last_heard,
                    claim.lease_duration,
                    rel.killed_job,
                    rel.slot_ad,
                    self._alive_interval,
                )
            )
        return out

    def tick(self, now: float) -> Tick:
        """Everything due by ``now``, in time order, however long since the last tick (a
        paused startd catches up in one): a claim whose lease ran out ends at its
        deadline, its job killed (HTCondor's startd kills the starter when the claim
        lease expires), so a job planned to end after that never exits; a job that ends
        no later than its lease deadline exits normally."""
        exits: list[JobExitRecord] = []
        expired: list[LeaseExpiry] = []
        while (deadline := self.next_lease_deadline()) is not None and deadline <= now:
            exits += self.advance(deadline)  # what ended by then, before the lease
            ended = self.expire_leases(deadline)
            if not ended:  # every claim due by ``deadline`` ends in expire_leases
                break
            expired += ended
        exits += self.advance(now)
        return Tick(exits, expired, self._match_timeouts(now))

    def keepalive(self, claim_ids: list[str], now: float) -> list[str]:
        """Record that the schedd was heard from; returns the ids this machine lacks."""
        unknown = []
        for cid in claim_ids:
            slot = self._held.get(cid)
            if slot is None or slot.claim is None:
                unknown.append(cid)
            elif slot.preempting is not None and slot.preempting.claim_id == cid:
                slot.preempting.last_heard = now
            else:
                slot.claim.last_heard = now
        return unknown
