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

import math
import random

from ..claimid import from_sinful, make_claim_id, redact, sinful
from ..classad import ERROR, UNDEFINED, ClassAd, evaluate
from ..classad.evalmemo import EvalMemo
from ..config import ConfigDict, ConfigError
from .claiming import ClaimGrants
from .grants import JobExitRecord, StartdError, UnknownClaimError
from .jobruns import JobRuns
from .layout import machine_layout
from .leases import ClaimLeases
from .preempting import Preempting
from .slots import (
    CONSUMPTION_RESOURCES,
    MachineInfo,
    Slot,
    SlotClaim,
    SlotPolicy,
    current_ad,
    knob_where,
    machine_identity,
    private_ad,
    public_ad,
    type_knob,
)

__all__ = ["LEASE_EXPIRED", "WORKLIFE", "Machine"]

# HTCondor's startd log line when a claim's lease runs out (claim.cpp).
LEASE_EXPIRED = "claim lease expired (condor_schedd gone?)"

# HTCondor's reason when a claim ends after a job because CLAIM_WORKLIFE has passed
# (ResState.cpp, the Claimed/Idle -> Preempting transition).
WORKLIFE = "idle claim shutting down due to CLAIM_WORKLIFE"


class Machine(ClaimGrants, Preempting, JobRuns, ClaimLeases):
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
        memo: EvalMemo | None = None,
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
        # START and the jobs' Requirements, remembered (shared by a startd's machines)
        self.memo = memo if memo is not None else EvalMemo()
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
