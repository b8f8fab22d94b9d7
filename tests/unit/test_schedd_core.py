"""The schedd core: job states with HTCondor's attributes, user actions, claims, ads.

Every number below is worked out by hand from the times passed in.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from builders.cores import ALICE, MACHINE_IDENTITY, cid, job_ad, v
from builders.cores import make_schedd as make
from builders.cores import start_job as start

from mockpool.classad import ClassAd
from mockpool.schedd.records import (
    ActivationOutcome,
    ClaimOutcome,
    ConstraintError,
    CostlyConstraint,
    JobExit,
    MatchNotice,
    RejectionNotice,
    ScheddError,
)
from mockpool.schedd.schedd import COMPLETED, HELD, IDLE, REMOVED, RUNNING, Schedd
from mockpool.schedd.submit import SubmitError

SLEEP = "executable = /bin/sleep\narguments = 60\n"


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "schedd1.sqlite"


# --------------------------------------------------------------------------- submit


def test_submit_sets_htcondor_attributes(path: Path) -> None:
    s = make(path)
    assert s.submit(SLEEP + "queue 2\n", "job.sub", "alice", 10.0) == (1, 2)
    ad = job_ad(s, "1.1")
    assert v(ad, "ClusterId") == 1 and v(ad, "ProcId") == 1
    assert v(ad, "QDate") == 10 and v(ad, "EnteredCurrentStatus") == 10
    assert v(ad, "JobStatus") == IDLE and v(ad, "NumJobStarts") == 0
    assert v(ad, "RemoteWallClockTime") == 0.0
    assert v(ad, "GlobalJobId") == "schedd1#1.1#10"
    assert v(ad, "Owner") == "alice" and v(ad, "MockDuration") == 60
    assert s.drain_events() == [
        ("submit", {"cluster": 1, "procs": 2, "owner": "alice", "submitter": ALICE})
    ]


def test_malformed_submit_raises_and_stores_nothing(path: Path) -> None:
    s = make(path)
    with pytest.raises(SubmitError, match=r"bad\.sub:2: "):
        s.submit("executable = /bin/sleep\nrequest_cpus = (1\nqueue\n", "bad.sub", "alice", 1.0)
    assert s.jobs == {} and s.queue.next_cluster_id == 1 and s.queue.load_jobs() == []
    assert s.submit(SLEEP + "queue\n", "ok.sub", "alice", 2.0) == (1, 1)


def test_owner_cannot_be_set_to_another_user_in_the_description(path: Path) -> None:
    # HTCondor's schedd refuses SetAttribute(Owner) to anyone but the submitter, and
    # fills in the submitter for UNDEFINED.
    s = make(path)
    for line in ('+Owner = "bob"', 'MY.Owner = "bob"', "+Owner = 3"):
        with pytest.raises(
            SubmitError, match=r"a.sub: Owner may not be set to .*submitting user 'alice'"
        ):
            s.submit(SLEEP + line + "\nqueue\n", "a.sub", "alice", 0.0)
    assert s.status()["jobs"] == 0
    assert s.submit(SLEEP + '+Owner = "alice"\nqueue\n', "a.sub", "alice", 0.0) == (1, 1)
    assert s.submit(SLEEP + "+Owner = undefined\nqueue\n", "a.sub", "alice", 0.0) == (2, 1)
    assert v(job_ad(s, "2.0"), "Owner") == "alice"


def test_request_id_is_idempotent(path: Path) -> None:
    s = make(path)
    assert s.submit(SLEEP + "queue 3\n", "a.sub", "alice", 1.0, request_id="r-1") == (1, 3)
    assert s.submit(SLEEP + "queue 3\n", "a.sub", "alice", 2.0, request_id="r-1") == (1, 3)
    assert len(s.jobs) == 3
    assert s.submit(SLEEP + "queue 3\n", "a.sub", "alice", 3.0, request_id="r-2") == (2, 3)
    s.queue.close()
    s2 = make(path)  # remembered across a restart
    assert s2.submit(SLEEP + "queue 3\n", "a.sub", "alice", 4.0, request_id="r-1") == (1, 3)
    assert len(s2.jobs) == 6


# --------------------------------------------------------------------------- the job's life


def test_job_life_times(path: Path) -> None:
    """Submit at 10, match/claim/activate at 40, exit at 100."""
    s = make(path)
    s.submit(SLEEP + "queue\n", "a.sub", "alice", 10.0)
    claim = start(s, "1.0", 1, 40.0)
    ad = job_ad(s, "1.0")
    assert v(ad, "JobStatus") == RUNNING and v(ad, "LastJobStatus") == IDLE
    assert v(ad, "EnteredCurrentStatus") == 40
    assert v(ad, "JobStartDate") == 40 and v(ad, "JobCurrentStartDate") == 40
    assert v(ad, "NumJobStarts") == 1 and v(ad, "RemoteHost") == "slot1@exec1"
    assert s.claims_by_startd() == {"exec1:1": [claim]}

    out = s.on_job_exits(
        [JobExit(claim, 1, 0, 40.0, 100.0, exit_code=0, slot_name="slot1@exec1")], 100.0
    )
    assert dict(out.releases) == {"exec1:1": [claim]}
    assert s.jobs == {} and s.claims_by_startd() == {}
    (h,) = s.history()
    assert v(h, "JobStatus") == COMPLETED and v(h, "LastJobStatus") == RUNNING
    assert v(h, "JobStartDate") == 40 and v(h, "CompletionDate") == 100
    assert v(h, "RemoteWallClockTime") == 60.0 and v(h, "ExitCode") == 0
    assert v(h, "EnteredCurrentStatus") == 100 and v(h, "QDate") == 10
    kinds = [k for k, _ in s.drain_events()]
    assert kinds == [
        "submit",
        "job_matched",
        "claim_held",
        "job_started",
        "job_completed",
        "claim_dropped",
    ]


def test_run_time_accumulates_over_hold_and_rerun(path: Path) -> None:
    s = make(path)
    s.submit(SLEEP + "queue\n", "a.sub", "alice", 0.0)
    claim = start(s, "1.0", 1, 40.0)
    results, out = s.act("hold", ["1.0"], "", "", "alice", 70.0)
    assert [r.ok for r in results] == [True]
    assert dict(out.releases) == {"exec1:1": [claim]}
    ad = job_ad(s, "1.0")
    assert v(ad, "JobStatus") == HELD and v(ad, "LastJobStatus") == RUNNING
    assert v(ad, "RemoteWallClockTime") == 30.0  # 70 - 40
    assert v(ad, "HoldReason") == "via condor_hold (by user alice)"
    assert v(ad, "HoldReasonCode") == 1 and v(ad, "HoldReasonSubCode") == 0
    assert v(ad, "RemoteHost") is None and v(ad, "LastRemoteHost") == "slot1@exec1"
    assert s.claims_by_startd() == {}

    results, _ = s.act("release", ["1.0"], "", "", "alice", 80.0)
    assert results[0].ok
    ad = job_ad(s, "1.0")
    assert v(ad, "JobStatus") == IDLE and v(ad, "LastJobStatus") == HELD
    assert (
        v(ad, "HoldReason") is None and v(ad, "LastHoldReason") == "via condor_hold (by user alice)"
    )
    assert v(ad, "ReleaseReason") == "via condor_release (by user alice)"

    claim2 = start(s, "1.0", 2, 100.0)
    s.on_job_exits([JobExit(claim2, 1, 0, 100.0, 150.0)], 150.0)
    (h,) = s.history()
    assert v(h, "RemoteWallClockTime") == 80.0  # 30 + 50
    assert v(h, "NumJobStarts") == 2
    assert v(h, "JobStartDate") == 40 and v(h, "JobCurrentStartDate") == 100
    assert v(h, "CompletionDate") == 150


def test_removed_running_job_leaves_once_its_claim_is_released(path: Path) -> None:
    s = make(path)
    s.submit(SLEEP + "queue\n", "a.sub", "alice", 0.0)
    claim = start(s, "1.0", 1, 10.0)
    results, out = s.act("remove", ["1.0"], "", "", "alice", 25.0)
    assert results[0].ok and dict(out.releases) == {"exec1:1": [claim]}
    ad = job_ad(s, "1.0")
    assert v(ad, "JobStatus") == REMOVED and v(ad, "RemoteWallClockTime") == 15.0
    assert v(ad, "RemoveReason") == "via condor_rm (by user alice)"
    assert s.schedd_ad(25.0).get_value("TotalRemovedJobs") == 1
    # the startd reports the killed job: ignored, the job was already accounted
    s.on_job_exits([JobExit(claim, 1, 0, 10.0, 26.0)], 26.0)
    assert v(job_ad(s, "1.0"), "RemoteWallClockTime") == 15.0
    s.on_releases_done([claim], 27.0, answered=True)
    assert s.jobs == {}
    (h,) = s.history()
    assert v(h, "JobStatus") == REMOVED


def test_evicted_job_goes_back_to_idle(path: Path) -> None:
    s = make(path)
    s.submit(SLEEP + "queue\n", "a.sub", "alice", 0.0)
    claim = start(s, "1.0", 1, 10.0)
    s.on_job_exits([JobExit(claim, 1, 0, 10.0, 50.0, reason="claim lease expired")], 51.0)
    ad = job_ad(s, "1.0")
    assert v(ad, "JobStatus") == IDLE and v(ad, "LastJobStatus") == RUNNING
    assert v(ad, "RemoteWallClockTime") == 40.0 and v(ad, "RemoteHost") is None
    (req,) = s.resource_requests()
    assert v(req, "ResourceRequestCount") == 1


def test_lost_claim_evicts_its_job(path: Path) -> None:
    s = make(path)
    s.submit(SLEEP + "queue\n", "a.sub", "alice", 0.0)
    claim = start(s, "1.0", 1, 10.0)
    s.on_claims_lost([claim], 30.0)
    ad = job_ad(s, "1.0")
    assert v(ad, "JobStatus") == IDLE and v(ad, "RemoteWallClockTime") == 20.0
    assert s.claims_by_startd() == {}


def test_restart_keeps_running_jobs_on_their_claims(path: Path) -> None:
    s = make(path)
    s.submit(SLEEP + "queue 2\n", "a.sub", "alice", 0.0)
    claim = start(s, "1.0", 1, 10.0)
    s.queue.close()
    s2 = make(path, 20.0)
    assert s2.claims_by_startd() == {"exec1:1": [claim]}
    assert s2.status()["running"] == 1 and s2.status()["idle"] == 1
    s2.on_job_exits([JobExit(claim, 1, 0, 10.0, 70.0)], 70.0)
    (h,) = s2.history()
    # counted from the restart, as HTCondor's reconnect shadow (wallclock.py): 70 - 20
    assert v(h, "RemoteWallClockTime") == 50.0 and v(h, "CompletionDate") == 70


# --------------------------------------------------------------------------- claims


def test_matches_take_jobs_by_priority_then_id_and_group_by_startd(path: Path) -> None:
    s = make(path)
    s.submit(SLEEP + "queue 2\n", "a.sub", "alice", 0.0)  # 1.0, 1.1 prio 0
    s.submit(SLEEP + "priority = 5\nqueue\n", "b.sub", "alice", 0.0)  # 2.0 prio 5
    out = s.on_matches(
        [
            MatchNotice(ALICE, 1, "slot1@a", cid(1, "a:1"), "a:1"),
            MatchNotice(ALICE, 1, "slot1@b", cid(2, "b:1"), "b:1"),
            MatchNotice(ALICE, 1, "slot2@a", cid(3, "a:1"), "a:1"),
            MatchNotice(ALICE, 1, "slot3@a", cid(4, "a:1"), "a:1"),  # no idle job left
            MatchNotice(ALICE, 1, "slot1@b", cid(2, "b:1"), "b:1"),  # claim id already used
        ],
        1.0,
    )
    assert out.accepted == 3 and out.dropped == 2
    assert [r.job_id for r in out.claims["a:1"]] == ["2.0", "1.1"]
    assert [r.job_id for r in out.claims["b:1"]] == ["1.0"]
    assert all(r.owner == ALICE for rs in out.claims.values() for r in rs)
    # reserved jobs stay Idle but are not requested again
    assert s.status()["idle"] == 3 and s.resource_requests() == []


def test_refused_claim_returns_the_job(path: Path) -> None:
    s = make(path)
    s.submit(SLEEP + "queue\n", "a.sub", "alice", 0.0)
    s.on_matches([MatchNotice(ALICE, 1, "slot1@a", cid(1), "exec1:1")], 1.0)
    out = s.on_claim_results([ClaimOutcome(cid(1), False, "claim id not valid")], 2.0)
    assert not out
    (req,) = s.resource_requests()
    assert v(req, "ResourceRequestCount") == 1
    assert s.claims == {}


def test_carved_dynamic_slot_claim_id_is_used_from_then_on(path: Path) -> None:
    s = make(path)
    s.submit(SLEEP + "queue\n", "a.sub", "alice", 0.0)
    s.on_matches([MatchNotice(ALICE, 1, "slot1@exec1", cid(1), "exec1:1")], 1.0)
    out = s.on_claim_results(
        [ClaimOutcome(cid(1), True, claim_id=cid(9), slot_name="slot1_1@exec1")], 1.0
    )
    (act,) = out.activations["exec1:1"]
    assert act.claim_id == cid(9) and v(act.job_ad, "MockDuration") == 60
    s.on_activation_results([ActivationOutcome(cid(9), True, start_time=1.5)], 2.0)
    assert v(job_ad(s, "1.0"), "RemoteHost") == "slot1_1@exec1"
    assert v(job_ad(s, "1.0"), "JobCurrentStartDate") == 1
    assert s.claims_by_startd() == {"exec1:1": [cid(9)]}


def test_job_held_while_claiming_releases_the_claim_on_answer(path: Path) -> None:
    s = make(path)
    s.submit(SLEEP + "queue\n", "a.sub", "alice", 0.0)
    s.on_matches([MatchNotice(ALICE, 1, "slot1@a", cid(1), "exec1:1")], 1.0)
    results, out = s.act("hold", ["1.0"], "", "", "alice", 2.0)
    assert results[0].ok and not out
    out = s.on_claim_results([ClaimOutcome(cid(1), True, claim_id=cid(1))], 3.0)
    assert dict(out.releases) == {"exec1:1": [cid(1)]} and not out.activations
    assert s.status()["reserved"] == 0


def test_failed_activation_returns_the_job_and_releases(path: Path) -> None:
    s = make(path)
    s.submit(SLEEP + "queue\n", "a.sub", "alice", 0.0)
    s.on_matches([MatchNotice(ALICE, 1, "slot1@a", cid(1), "exec1:1")], 1.0)
    s.on_claim_results([ClaimOutcome(cid(1), True, claim_id=cid(1))], 1.0)
    out = s.on_activation_results([ActivationOutcome(cid(1), False, "slot went away")], 2.0)
    assert dict(out.releases) == {"exec1:1": [cid(1)]}
    assert v(job_ad(s, "1.0"), "JobStatus") == IDLE
    assert len(s.resource_requests()) == 1


def test_max_jobs_running_caps_matches(path: Path) -> None:
    s = make(path, config="MAX_JOBS_RUNNING = 1")
    s.submit(SLEEP + "queue 2\n", "a.sub", "alice", 0.0)
    out = s.on_matches(
        [
            MatchNotice(ALICE, 1, "s1@a", cid(1), "exec1:1"),
            MatchNotice(ALICE, 1, "s2@a", cid(2), "exec1:1"),
        ],
        1.0,
    )
    assert out.accepted == 1 and out.dropped == 1


# --------------------------------------------------------------------------- rm / hold / release


def test_action_rules_and_error_texts(path: Path) -> None:
    s = make(path)
    s.submit(SLEEP + "queue 3\n", "a.sub", "alice", 0.0)  # 1.0 1.1 1.2
    start(s, "1.0", 1, 5.0)

    def act(action: str, *ids: str, constraint: str = "") -> list[tuple[str, bool, str]]:
        results, _ = s.act(action, list(ids), constraint, "", "alice", 10.0)
        return [(r.job_id, r.ok, r.error) for r in results]

    assert act("release", "1.1") == [("1.1", False, "Job 1.1 not held to be released")]
    assert act("release", "1.0") == [("1.0", False, "Job 1.0 not held to be released")]
    assert act("hold", "1.1") == [("1.1", True, "")]
    assert act("hold", "1.1") == [("1.1", False, "Job 1.1 already held")]
    assert act("remove", "99.0") == [("99.0", False, "Job 99.0 not found")]
    assert act("hold", "1.7") == [("1.7", False, "Job 1.7 not found")]
    assert act("remove", "x.y") == [
        ("x.y", False, "Invalid job id 'x.y': expected cluster or cluster.proc")
    ]
    assert act("remove", "7") == [("7", False, "Couldn't find/remove all jobs in cluster 7")]
    assert act("release", "1") == [("1.1", True, "")]  # the whole cluster: only 1.1 was held
    assert act("remove", "1.0") == [("1.0", True, "")]  # running: waits for its release
    assert act("remove", "1.0") == [("1.0", False, "Job 1.0 already marked for removal")]
    assert act("hold", "1.0") == [("1.0", False, "Job 1.0 already marked for removal")]
    assert act("hold", constraint="ProcId >= 1") == [("1.1", True, ""), ("1.2", True, "")]
    assert act("hold", constraint="ProcId >= 1") == [
        ("", False, "Couldn't find/hold all jobs matching constraint (ProcId >= 1)")
    ]
    assert act("remove", "1") == [("1.1", True, ""), ("1.2", True, "")]
    assert s.status() == {
        "idle": 0,
        "running": 0,
        "held": 0,
        "removed": 1,
        "jobs": 1,
        "claims": 0,
        "reserved": 0,
        "by_status": {1: 0, 2: 0, 3: 1, 5: 0},  # 1.0 removed, waiting for its release
        "left_queue": {3: 2},  # 1.1 and 1.2, removed while idle or held: gone at once
    }
    assert [v(h, "ProcId") for h in s.history()] == [2, 1]


def test_a_user_acts_only_on_their_own_jobs(path: Path) -> None:
    # As the schedd answers condor_rm run by a user who is not a queue superuser:
    # another owner's job named by id is refused per job; a constraint (or -all) selects
    # among the user's own jobs only.
    s = make(path)
    s.submit(SLEEP + "queue 2\n", "a.sub", "alice", 0.0)  # 1.0 1.1
    s.submit(SLEEP + "queue 1\n", "b.sub", "bob", 0.0)  # 2.0

    def act(
        action: str, *ids: str, constraint: str = "", user: str | None = "bob"
    ) -> list[tuple[str, bool, str]]:
        results, _ = s.act(
            action, list(ids), constraint, "", user or "admin", 10.0, only_owner=user
        )
        return [(r.job_id, r.ok, r.error) for r in results]

    assert act("remove", "1.0") == [("1.0", False, "Permission denied to remove job 1.0")]
    assert act("hold", "1") == [
        ("1.0", False, "Permission denied to hold job 1.0"),
        ("1.1", False, "Permission denied to hold job 1.1"),
    ]
    # permission is checked before the job's state (1.0 is not held)
    assert act("release", "1.0") == [("1.0", False, "Permission denied to release job 1.0")]
    assert act("hold", "2.0", "1.1") == [
        ("2.0", True, ""),
        ("1.1", False, "Permission denied to hold job 1.1"),
    ]
    assert act("release", constraint="true") == [("2.0", True, "")]
    assert act("hold", constraint="ClusterId == 1") == [
        ("", False, "Couldn't find/hold all jobs matching constraint (ClusterId == 1)")
    ]
    assert [v(job_ad(s, j), "JobStatus") for j in ("1.0", "1.1", "2.0")] == [IDLE, IDLE, IDLE]
    # a queue superuser (only_owner None) acts on every job
    assert act("hold", constraint="true", user=None) == [
        ("1.0", True, ""),
        ("1.1", True, ""),
        ("2.0", True, ""),
    ]


def test_bad_action_or_constraint_changes_nothing(path: Path) -> None:
    s = make(path)
    s.submit(SLEEP + "queue\n", "a.sub", "alice", 0.0)
    with pytest.raises(ConstraintError, match="bad constraint"):
        s.act("remove", ["1.0"], "ProcId ==", "", "alice", 1.0)
    with pytest.raises(ScheddError, match="unknown action 'suspend'"):
        s.act("suspend", ["1.0"], "", "", "alice", 1.0)
    with pytest.raises(ScheddError, match="no job ids and no constraint"):
        s.act("remove", [], "", "", "alice", 1.0)
    assert v(job_ad(s, "1.0"), "JobStatus") == IDLE


def test_reason_given_is_kept(path: Path) -> None:
    s = make(path)
    s.submit(SLEEP + "queue\n", "a.sub", "alice", 0.0)
    s.act("hold", ["1.0"], "", "disk full", "admin", 1.0)
    assert v(job_ad(s, "1.0"), "HoldReason") == "disk full"


# --------------------------------------------------------------------------- autoclusters


def test_autoclusters(path: Path) -> None:
    s = make(path)
    s.submit("executable = /bin/sleep\narguments = $(Process)\nqueue 3\n", "a.sub", "alice", 0.0)
    s.submit(SLEEP + "request_memory = 4GB\nqueue 2\n", "b.sub", "alice", 0.0)
    s.submit("executable = /bin/sleep\narguments = 7\nqueue 4\n", "c.sub", "bob", 0.0)
    ids = {k: j.autocluster for k, j in s.jobs.items()}
    # differing only in Args: one autocluster; RequestMemory differs: another
    assert ids[(1, 0)] == ids[(1, 1)] == ids[(1, 2)] == 1
    assert ids[(2, 0)] == ids[(2, 1)] == 2
    assert ids[(3, 0)] == 1  # bob's jobs have alice's signature ...
    reqs = {
        (v(r, "Submitter"), v(r, "AutoClusterId")): v(r, "ResourceRequestCount")
        for r in s.resource_requests()
    }
    # ... but different submitters never share a request
    assert reqs == {(ALICE, 1): 3, (ALICE, 2): 2, ("bob@mockpool", 1): 4}
    assert [v(r, "Submitter") for r in s.resource_requests("bob@mockpool")] == ["bob@mockpool"]
    (r,) = [r for r in s.resource_requests() if v(r, "AutoClusterId") == 2]
    assert v(r, "RequestMemory") == 4096
    assert "RequestMemory" in str(v(r, "AutoClusterAttrs")).split(",")


def test_separate_submits_of_one_description_share_their_values(path: Path) -> None:
    """A Poisson workload submits one job at a time: equal numbers and plain strings are
    one expression object each (as parsed texts are), so the autocluster memo, which
    goes by object, knows the second job's signature without writing it out."""
    s = make(path)
    for n in range(2):
        s.submit(SLEEP + f"arguments = {60 + n}\nqueue\n", "p.sub", "alice", float(n))
    one, two = s.jobs[(1, 0)].ad, s.jobs[(2, 0)].ad
    for name in ("RequestCpus", "RequestMemory", "FileSystemDomain", "Requirements"):
        assert one.lookup(name) is two.lookup(name), name
    assert one.lookup("Args") is not two.lookup("Args")
    assert s.jobs[(1, 0)].autocluster == s.jobs[(2, 0)].autocluster


def test_attributes_referenced_by_requirements_are_significant(path: Path) -> None:
    s = make(path)
    base = "executable = /bin/sleep\nrequirements = TARGET.Site == MY.Site\n"
    s.submit(base + '+Site = "a"\nqueue\n', "a.sub", "alice", 0.0)
    s.submit(base + '+Site = "b"\nqueue\n', "b.sub", "alice", 0.0)
    s.submit(SLEEP + '+Color = "red"\nqueue\n', "c.sub", "alice", 0.0)
    s.submit(SLEEP + '+Color = "blue"\nqueue\n', "d.sub", "alice", 0.0)
    ids = {k[0]: j.autocluster for k, j in s.jobs.items()}
    assert ids[1] != ids[2]  # Site is read by Requirements
    assert ids[3] == ids[4]  # Color is not
    assert "site" in job_ad(s, "1.0").get_value("AutoClusterAttrs").lower().split(",")


def test_significant_attributes_from_config(path: Path) -> None:
    s = make(path, config="SIGNIFICANT_ATTRIBUTES = RequestCpus")
    s.submit(SLEEP + "request_memory = 1GB\nqueue\n", "a.sub", "alice", 0.0)
    s.submit(SLEEP + "request_memory = 2GB\nqueue\n", "b.sub", "alice", 0.0)
    assert s.jobs[(1, 0)].autocluster == s.jobs[(2, 0)].autocluster


# --------------------------------------------------------------------------- ads and queries


def test_schedd_and_submitter_ads(path: Path) -> None:
    s = make(path, 5.0)
    s.submit(SLEEP + "queue 3\n", "a.sub", "alice", 10.0)  # 1.0 runs, 1.1 held, 1.2 idle
    s.submit(
        SLEEP + "request_cpus = 2\naccounting_group = group_physics\nqueue 2\n",
        "b.sub",
        "bob",
        10.0,
    )
    start(s, "1.0", 1, 20.0)
    s.act("hold", ["1.1"], "", "", "alice", 21.0)
    ad = s.schedd_ad(30.0)
    assert v(ad, "MyType") == "Scheduler" and v(ad, "Name") == "schedd1"
    assert v(ad, "MyAddress") == "<127.0.0.1:9618>"
    assert (v(ad, "TotalIdleJobs"), v(ad, "TotalRunningJobs"), v(ad, "TotalHeldJobs")) == (3, 1, 1)
    assert v(ad, "TotalRemovedJobs") == 0 and v(ad, "TotalJobAds") == 5
    assert v(ad, "NumUsers") == 2 and v(ad, "DaemonStartTime") == 5
    subs = {v(a, "Name"): a for a in s.submitter_ads(30.0)}
    assert sorted(subs) == [ALICE, "group_physics.bob@mockpool"]
    a = subs[ALICE]
    assert v(a, "MyType") == "Submitter" and v(a, "ScheddName") == "schedd1"
    assert (v(a, "IdleJobs"), v(a, "RunningJobs"), v(a, "HeldJobs")) == (1, 1, 1)
    assert v(a, "MyAddress") == "<127.0.0.1:9618>"
    b = subs["group_physics.bob@mockpool"]
    assert (v(b, "IdleJobs"), v(b, "WeightedIdleJobs"), v(b, "RunningJobs")) == (2, 4, 0)
    # a submitter with no jobs left has no ad
    s.act("remove", ["2"], "", "", "bob", 31.0)
    assert [v(a, "Name") for a in s.submitter_ads(31.0)] == [ALICE]


def test_a_submitter_left_without_jobs_is_invalidated_until_the_collector_has_it(
    path: Path,
) -> None:
    s = make(path)
    s.submit(SLEEP + "queue 1\n", "a.sub", "alice", 0.0)
    s.submit(SLEEP + "queue 1\n", "b.sub", "bob", 0.0)
    ads, gone = s.submitter_updates(1.0)
    assert [v(a, "Name") for a in ads] == [ALICE, "bob@mockpool"] and gone == []
    s.submitters_advertised()
    s.act("remove", ["2"], "", "", "bob", 2.0)
    ads, gone = s.submitter_updates(3.0)
    assert [v(a, "Name") for a in ads] == [ALICE]
    assert [(v(g, "Name"), v(g, "ScheddName")) for g in gone] == [("bob@mockpool", "schedd1")]
    # not acknowledged (the collector was down): asked again; once it has it, not again
    assert [v(g, "Name") for g in s.submitter_updates(4.0)[1]] == ["bob@mockpool"]
    s.submitters_advertised()
    assert s.submitter_updates(5.0)[1] == []


def test_query_constraint_projection_limit(path: Path) -> None:
    s = make(path)
    s.submit(SLEEP + "queue 4\n", "a.sub", "alice", 0.0)
    ads = s.query("ProcId >= 1", ["ProcId", "Owner", "NoSuchAttr"], limit=2)
    assert [dict((k, v(a, k)) for k in a) for a in ads] == [
        {"ProcId": 1, "Owner": "alice"},
        {"ProcId": 2, "Owner": "alice"},
    ]
    with pytest.raises(ConstraintError):
        s.query("ProcId >=")
    s.act("remove", ["1.0", "1.1", "1.2"], "", "", "alice", 1.0)
    assert [v(h, "ProcId") for h in s.history(limit=2)] == [2, 1]
    assert [v(h, "ProcId") for h in s.history("ProcId == 0", ["ProcId"])] == [0]


def test_exit_overtaking_its_activation_answer_still_completes(path: Path) -> None:
    s = make(path)
    s.submit(SLEEP + "queue\n", "a.sub", "alice", 0.0)
    s.on_matches([MatchNotice(ALICE, 1, "slot1@a", cid(1), "exec1:1")], 1.0)
    s.on_claim_results([ClaimOutcome(cid(1), True, claim_id=cid(1), slot_name="slot1@a")], 1.0)
    out = s.on_job_exits([JobExit(cid(1), 1, 0, 2.0, 3.0)], 3.0)
    assert dict(out.releases) == {"exec1:1": [cid(1)]}
    # the late answer finds the claim gone and changes nothing
    assert not s.on_activation_results([ActivationOutcome(cid(1), True, start_time=2.0)], 3.5)
    (h,) = s.history()
    assert (v(h, "JobStartDate"), v(h, "CompletionDate"), v(h, "RemoteWallClockTime")) == (
        2,
        3,
        1.0,
    )
    assert s.status()["reserved"] == 0


# --------------------------------------------------------------------------- preemption


def test_preempted_job_is_idle_accounted_and_runs_again(path: Path) -> None:
    """Started at 10, preempted at 50, matched again and started at 80, done at 140."""
    s = make(path)
    s.submit(SLEEP + "queue\n", "a.sub", "alice", 0.0)
    claim = start(s, "1.0", 1, 10.0)
    s.on_job_exits(
        [JobExit(claim, 1, 0, 10.0, 50.0, reason="preempted by bob@mockpool (user priority)")], 50.0
    )
    ad = job_ad(s, "1.0")
    assert v(ad, "JobStatus") == IDLE and v(ad, "EnteredCurrentStatus") == 50
    assert v(ad, "RemoteWallClockTime") == 40.0 and v(ad, "LastVacateTime") == 50
    assert v(ad, "VacateReason") == "preempted by bob@mockpool (user priority)"
    assert v(ad, "LastRemoteHost") == "slot1@exec1" and v(ad, "NumJobStarts") == 1
    claim2 = start(s, "1.0", 2, 80.0)
    ad = job_ad(s, "1.0")
    assert v(ad, "NumJobStarts") == 2 and v(ad, "JobStartDate") == 10
    assert v(ad, "NumMatches") == 2 and v(ad, "LastMatchTime") == 80
    assert v(ad, "JobCurrentStartDate") == 80 and v(ad, "JobLastStartDate") == 10
    s.on_job_exits([JobExit(claim2, 1, 0, 80.0, 140.0)], 140.0)
    (h,) = s.history()
    assert v(h, "JobStatus") == COMPLETED and v(h, "RemoteWallClockTime") == 100.0


def test_preempting_claim_waits_for_retirement(path: Path) -> None:
    s = make(path)
    s.submit(SLEEP + "queue\n", "a.sub", "alice", 0.0)
    host, claim = "exec1:1", cid(1)
    s.on_matches([MatchNotice(ALICE, 1, "slot1@exec1", claim, host)], 10.0)
    out = s.on_claim_results([ClaimOutcome(claim, True, claim_id=claim, ready_time=300.0)], 10.0)
    assert not out.activations and s.next_ready_time() == 300.0
    assert s.claims_by_startd() == {host: [claim]}  # kept alive while it waits
    assert not s.activate_ready(299.0).activations
    out = s.activate_ready(300.0)
    assert [a.job_id for a in out.activations[host]] == ["1.0"] and s.next_ready_time() is None
    s.on_activation_results([ActivationOutcome(claim, True, start_time=300.0)], 300.0)
    assert v(job_ad(s, "1.0"), "JobStatus") == RUNNING


def test_held_job_gives_up_its_waiting_claim(path: Path) -> None:
    s = make(path)
    s.submit(SLEEP + "queue\n", "a.sub", "alice", 0.0)
    claim = cid(1)
    s.on_matches([MatchNotice(ALICE, 1, "slot1@exec1", claim, "exec1:1")], 10.0)
    s.on_claim_results([ClaimOutcome(claim, True, claim_id=claim, ready_time=300.0)], 10.0)
    (res,), out = s.act("hold", ["1.0"], "", "", "alice", 20.0)
    assert res.ok and out.releases["exec1:1"] == [claim]
    assert claim not in s.claims and s.next_ready_time() is None


def test_rejection_reason_on_the_named_job(path: Path) -> None:
    s = make(path)
    s.submit(SLEEP + "queue 2\n", "a.sub", "alice", 0.0)
    s.on_rejections(
        [
            RejectionNotice(1, 0, "PREEMPTION_REQUIREMENTS == False", 42.5),
            RejectionNotice(9, 9, "x", 1.0),
        ],
        43.0,
    )
    assert v(job_ad(s, "1.0"), "LastRejMatchReason") == "PREEMPTION_REQUIREMENTS == False"
    assert v(job_ad(s, "1.0"), "LastRejMatchTime") == 42
    assert v(job_ad(s, "1.1"), "LastRejMatchReason") is None  # HTCondor marks the job it was told
    s.queue.close()
    assert v(job_ad(make(path), "1.0"), "LastRejMatchReason") == "PREEMPTION_REQUIREMENTS == False"


# --- partitionable slot leftovers (CLAIM_PARTITIONABLE_LEFTOVERS) --------------------------


def pslot_ad(cpus: int, memory: int, start: str = "true") -> ClassAd:
    from mockpool.classad import parse_expr

    ad = ClassAd(
        Name="slot1@exec1",
        Cpus=cpus,
        Memory=memory,
        Disk=10_000_000,
        PartitionableSlot=True,
        **MACHINE_IDENTITY,
    )
    ad["Start"] = parse_expr(start)
    ad["Requirements"] = parse_expr("START")
    return ad


def test_claim_requests_ask_for_leftovers_as_configured(path: Path) -> None:
    s = make(path)
    s.submit(SLEEP + "queue\n", "a.sub", "alice", 0.0)
    out = s.on_matches([MatchNotice(ALICE, 1, "slot1@exec1", cid(1), "exec1:1")], 1.0)
    assert out.claims["exec1:1"][0].leftovers is True  # default $(NEGOTIATOR_USE_SLOT_WEIGHTS)
    s2 = make(path.with_name("s2.sqlite"), config="CLAIM_PARTITIONABLE_LEFTOVERS = False\n")
    s2.submit(SLEEP + "queue\n", "a.sub", "alice", 0.0)
    out = s2.on_matches([MatchNotice(ALICE, 1, "slot1@exec1", cid(1), "exec1:1")], 1.0)
    assert out.claims["exec1:1"][0].leftovers is False


def test_leftovers_claimed_for_the_best_matching_idle_job(path: Path) -> None:
    s = make(path)
    s.submit(SLEEP + "request_memory = 1024\nqueue 3\n", "a.sub", "alice", 0.0)  # 1.0-1.2
    s.submit(SLEEP + "request_memory = 8192\npriority = 9\nqueue\n", "b.sub", "alice", 0.0)  # 2.0
    s.submit(SLEEP + "request_memory = 512\nqueue\n", "c.sub", "bob", 0.0)  # 3.0, another user
    s.on_matches([MatchNotice(ALICE, 1, "slot1@exec1", cid(1), "exec1:1")], 1.0)
    # the p-slot was carved; 3 cpus and 3072 MB are left under a new claim id
    out = s.on_claim_results(
        [
            ClaimOutcome(
                cid(1),
                True,
                claim_id=cid(9),
                slot_name="slot1_1@exec1",
                leftover_claim_id=cid(2),
                leftover_slot_ad=pslot_ad(3, 3072),
            )
        ],
        1.0,
    )
    assert [a.job_id for a in out.activations["exec1:1"]] == ["1.0"]
    # 2.0 has the higher priority but 8192 MB does not fit; bob's job is not alice's
    (req,) = out.claims["exec1:1"]
    assert (req.claim_id, req.job_id, req.slot_name, req.leftovers) == (
        cid(2),
        "1.1",
        "slot1@exec1",
        True,
    )
    assert s.claims[cid(2)].state == "requesting" and s.status()["reserved"] == 2
    # that claim's leftovers go on to the next job; with nothing left that fits, none
    out = s.on_claim_results(
        [
            ClaimOutcome(
                cid(2),
                True,
                claim_id=cid(10),
                slot_name="slot1_2@exec1",
                leftover_claim_id=cid(3),
                leftover_slot_ad=pslot_ad(2, 2048),
            )
        ],
        1.0,
    )
    assert [r.job_id for r in out.claims["exec1:1"]] == ["1.2"]
    out = s.on_claim_results(
        [
            ClaimOutcome(
                cid(3),
                True,
                claim_id=cid(11),
                slot_name="slot1_3@exec1",
                leftover_claim_id=cid(4),
                leftover_slot_ad=pslot_ad(1, 1024),
            )
        ],
        1.0,
    )
    assert not out.claims and cid(4) not in s.claims
    assert sorted(a.job_id for a in out.activations["exec1:1"]) == ["1.2"]


def test_leftovers_not_used_by_jobs_with_concurrency_limits_or_refused_by_start(path: Path) -> None:
    s = make(path)
    s.submit(SLEEP + "concurrency_limits = db\nqueue 2\n", "a.sub", "alice", 0.0)
    s.on_matches([MatchNotice(ALICE, 1, "slot1@exec1", cid(1), "exec1:1")], 1.0)
    out = s.on_claim_results(
        [
            ClaimOutcome(
                cid(1),
                True,
                claim_id=cid(9),
                leftover_claim_id=cid(2),
                leftover_slot_ad=pslot_ad(3, 3072),
            )
        ],
        1.0,
    )
    assert not out.claims  # HTCondor: leftovers carry no MatchedConcurrencyLimits
    s2 = make(path.with_name("s2.sqlite"))
    s2.submit(SLEEP + "queue 2\n", "a.sub", "alice", 0.0)
    s2.on_matches([MatchNotice(ALICE, 1, "slot1@exec1", cid(1), "exec1:1")], 1.0)
    out = s2.on_claim_results(
        [
            ClaimOutcome(
                cid(1),
                True,
                claim_id=cid(9),
                leftover_claim_id=cid(2),
                leftover_slot_ad=pslot_ad(3, 3072, start="TARGET.ClusterId > 5"),
            )
        ],
        1.0,
    )
    assert not out.claims


def test_costly_constraint_refused_and_nothing_changes(path: Path) -> None:
    s = make(path)
    s.submit(SLEEP + "queue 3\n", "a.sub", "alice", 0.0)
    # PCRE2 to its match limit for each job (a distinct subject): past the request's budget
    poison = 'regexp("(a+)+$", strcat("' + "a" * 30 + '", ProcId, "!"))'
    with pytest.raises(CostlyConstraint, match=r"constraint .*regexp.* is too costly"):
        s.query(poison, now=1.0)
    with pytest.raises(CostlyConstraint):
        s.act("hold", [], poison, "", "alice", 1.0)
    assert [v(j.ad, "JobStatus") for j in s.jobs.values()] == [IDLE, IDLE, IDLE]
    assert len(s.query('regexp("^a", Owner)', now=1.0)) == 3  # ordinary ones still answer


# --------------------------------------------------------------------------- keepalives


def test_keepalives_per_startd_at_each_claims_own_period(path: Path) -> None:
    """Job 1.0 (lease 60: every min(300, 20) = 20 s) claimed at 10 on exec1; job 2.0
    (lease 2400: every 300 s) claimed at 15 on exec2."""
    s = make(path)
    s.submit(SLEEP + "job_lease_duration = 60\nqueue\n", "a.sub", "alice", 0.0)
    s.submit(SLEEP + "queue\n", "b.sub", "alice", 0.0)
    assert s.next_keepalive() is None
    c1 = start(s, "1.0", 1, 10.0)
    c2 = start(s, "2.0", 2, 15.0, host="exec2:1")
    assert s.next_keepalive() == 30
    assert s.keepalives_due(29.0) == {}
    assert s.keepalives_due(30.0) == {"exec1:1": [c1]}
    s.on_keepalive_answer([c1], [], 30.0)
    assert s.next_keepalive() == 50
    # at 315 both are due: exec1 (since 50), exec2 (15 + 300)
    assert s.keepalives_due(315.0) == {"exec1:1": [c1], "exec2:1": [c2]}
    s.on_keepalive_answer([c1, c2], [], 315.0)
    assert s.next_keepalive() == 335
    s.on_claims_lost([c1], 320.0)  # the startd did not know it: dropped, job idle again
    assert v(job_ad(s, "1.0"), "JobStatus") == IDLE
    assert s.next_keepalive() == 615
    s.on_claims_lost([c2], 320.0)
    assert s.next_keepalive() is None and s.keepalives_due(1000.0) == {}


def test_an_alive_round_says_when_the_next_is_due(path: Path) -> None:
    """The same claims through alive_round: exec1 (every 20 s, lease 60, claimed at 10)
    and exec2 (every 300 s, claimed at 15). A round that sends exec1's keepalive at 30
    says 30 + 20 = 50 is next; at 50, 70; at 60 nothing is sent: still 70. With no answer
    after 90, exec1's claim is given up at 200 (heard at 90, lease 60): exec2's at 315
    is next."""
    s = make(path)
    s.submit(SLEEP + "job_lease_duration = 60\nqueue\n", "a.sub", "alice", 0.0)
    s.submit(SLEEP + "queue\n", "b.sub", "alice", 0.0)
    c1 = start(s, "1.0", 1, 10.0)
    c2 = start(s, "2.0", 2, 15.0, host="exec2:1")
    for now, nxt in ((30.0, 50), (50.0, 70), (70.0, 90), (90.0, 110)):
        assert s.alive_round(now)[1] == {"exec1:1": [c1]} and s.alive_next == nxt
        s.on_keepalive_answer([c1], [], now)
        if now == 50.0:
            assert s.alive_round(60.0)[1] == {} and s.alive_next == 70
    _given_up, sent = s.alive_round(200.0)
    assert sent == {} and v(job_ad(s, "1.0"), "JobStatus") == IDLE
    assert s.alive_next == 315 == s.next_keepalive()
    assert s.alive_round(315.0)[1] == {"exec2:1": [c2]} and s.alive_next == 615


def test_keepalive_period_floor_is_ten_seconds(path: Path) -> None:
    s = make(path, config="ALIVE_INTERVAL = 5\n")
    s.submit(SLEEP + "queue\n", "a.sub", "alice", 0.0)
    start(s, "1.0", 1, 0.0)
    assert s.next_keepalive() == 10


def static_slot_ad(cpus: int = 1, memory: int = 2048, start: str = "true") -> ClassAd:
    from mockpool.classad import parse_expr

    ad = ClassAd(Name="slot1@exec1", Cpus=cpus, Memory=memory, Disk=10_000_000, **MACHINE_IDENTITY)
    ad["Start"] = parse_expr(start)
    ad["Requirements"] = parse_expr("START")
    return ad


def claimed(s: Schedd, now: float, slot_ad: ClassAd, n: int = 1) -> str:
    """Match the best idle job of alice's autocluster 1 onto slot1@exec1 with its ad,
    claim and activate it at ``now``; the claim id."""
    s.on_matches([MatchNotice(ALICE, 1, "slot1@exec1", cid(n), "exec1:1")], now)
    s.on_claim_results(
        [ClaimOutcome(cid(n), True, claim_id=cid(n), slot_name="slot1@exec1", slot_ad=slot_ad)],
        now,
    )
    s.on_activation_results([ActivationOutcome(cid(n), True, start_time=now)], now)
    return cid(n)


def exit_(s: Schedd, claim: str, job: str, start: float, end: float, reason: str = ""):  # type: ignore[no-untyped-def]
    cluster, proc = (int(x) for x in job.split("."))
    exits = [JobExit(claim, cluster, proc, start, end, 0, "slot1@exec1", reason)]
    return s.on_job_exits(exits, end)


def test_claim_reuse_runs_the_next_job_on_the_same_claim(path: Path) -> None:
    """Three 60 s jobs, one claim: 1.0 at 10-70, 1.1 at 70-130, 1.2 at 130-190."""
    s = make(path)
    s.submit(SLEEP + "request_memory = 1024\nqueue 3\n", "a.sub", "alice", 0.0)
    claim = claimed(s, 10.0, static_slot_ad())
    for job, nxt, t in (("1.0", "1.1", 70.0), ("1.1", "1.2", 130.0)):
        out = exit_(s, claim, job, t - 60, t)
        assert not out.releases and not out.claims
        assert [(a.claim_id, a.job_id) for a in out.activations["exec1:1"]] == [(claim, nxt)]
        s.on_activation_results([ActivationOutcome(claim, True, start_time=t)], t)
        ad = job_ad(s, nxt)
        assert v(ad, "JobStatus") == RUNNING and v(ad, "JobCurrentStartDate") == t
        assert v(ad, "RemoteHost") == "slot1@exec1"
    out = exit_(s, claim, "1.2", 130.0, 190.0)
    assert dict(out.releases) == {"exec1:1": [claim]}  # nothing left to run: released
    assert [v(h, "CompletionDate") for h in s.history()] == [190, 130, 70]
    kinds = [k for k, _ in s.drain_events()]
    assert kinds.count("claim_reuse") == 2 and kinds.count("job_matched") == 1


def test_a_claim_the_startd_closed_with_its_job_is_forgotten_not_reused_nor_released(
    path: Path,
) -> None:
    """HTCondor's JOB_EXITED_AND_CLAIM_CLOSING (CLAIM_WORKLIFE passed on the startd): two
    idle jobs could reuse the claim, but the exit says it is closing, so 1.1 stays Idle
    for the next cycle, the claim is dropped here, and no release goes out (the startd
    ended it)."""
    s = make(path)
    s.submit(SLEEP + "request_memory = 1024\nqueue 3\n", "a.sub", "alice", 0.0)
    claim = claimed(s, 10.0, static_slot_ad())
    exits = [JobExit(claim, 1, 0, 10.0, 70.0, 0, "slot1@exec1", "", claim_closing=True)]
    out = s.on_job_exits(exits, 70.0)
    assert not out.releases and not out.activations and not out.claims
    assert claim not in s.claims
    assert [v(h, "CompletionDate") for h in s.history()] == [70]
    assert [v(job_ad(s, j), "JobStatus") for j in ("1.1", "1.2")] == [IDLE, IDLE]
    kinds = [k for k, _ in s.drain_events()]
    assert "claim_reuse" not in kinds and kinds.count("claim_dropped") == 1


def test_an_idle_claim_is_released_at_once_whatever_unused_claim_timeout_says(
    path: Path,
) -> None:
    """UNUSED_CLAIM_TIMEOUT is the dedicated (parallel universe) scheduler's knob
    (param_info.in tags it ``schedd,dedicated_scheduler``): a vanilla job's claim with
    nothing left to run is released when its job ends, as HTCondor's schedd does."""
    s = make(path, config="UNUSED_CLAIM_TIMEOUT = 600")
    s.submit(SLEEP + "request_memory = 1024\nqueue 1\n", "a.sub", "alice", 0.0)
    claim = claimed(s, 10.0, static_slot_ad())
    out = exit_(s, claim, "1.0", 10.0, 70.0)
    assert dict(out.releases) == {"exec1:1": [claim]}


def test_claim_reuse_takes_only_a_fitting_matching_job_of_the_same_submitter(path: Path) -> None:
    s = make(path)
    s.submit(SLEEP + "request_memory = 1024\nqueue\n", "a.sub", "alice", 0.0)  # 1.0
    s.submit(SLEEP + "request_memory = 4096\npriority = 5\nqueue\n", "b.sub", "alice", 0.0)
    s.submit(SLEEP + "request_memory = 512\nqueue\n", "c.sub", "bob", 0.0)  # 3.0: bob's
    s.submit(SLEEP + "concurrency_limits = lic\nqueue\n", "d.sub", "alice", 0.0)  # 4.0
    s.submit(SLEEP + 'requirements = TARGET.Name == "other"\nqueue\n', "e.sub", "alice", 0.0)
    s.submit(SLEEP + "request_memory = 2048\nqueue\n", "f.sub", "alice", 0.0)  # 6.0
    claim = claimed(s, 1.0, static_slot_ad(memory=2048))
    assert v(job_ad(s, "1.0"), "JobStatus") == RUNNING  # the match was autocluster 1's
    # On exit, 2.0 has the best priority but 4096 MB does not fit the 2048 MB slot,
    # bob's 3.0 is bob's, 4.0 has a concurrency limit (left to the negotiator), and
    # 5.0's Requirements refuse the slot: 6.0 runs.
    out = exit_(s, claim, "1.0", 1.0, 61.0)
    assert [a.job_id for a in out.activations["exec1:1"]] == ["6.0"]


def test_an_evicted_job_gives_its_claim_back_and_a_refused_activation_releases(
    path: Path,
) -> None:
    s = make(path)
    s.submit(SLEEP + "queue 3\n", "a.sub", "alice", 0.0)
    claim = claimed(s, 1.0, static_slot_ad())
    out = exit_(s, claim, "1.0", 1.0, 30.0, reason="lease expired")
    assert dict(out.releases) == {"exec1:1": [claim]} and not out.activations
    claim = claimed(s, 40.0, static_slot_ad(), n=2)
    out = exit_(s, claim, "1.0", 40.0, 100.0)
    (act,) = out.activations["exec1:1"]
    # the startd refuses it (CLAIM_WORKLIFE passed): the job is idle, the claim released
    out = s.on_activation_results([ActivationOutcome(claim, False, "CLAIM_WORKLIFE")], 100.0)
    assert dict(out.releases) == {"exec1:1": [claim]}
    assert v(job_ad(s, act.job_id), "JobStatus") == IDLE
    assert len(s.resource_requests()) == 1


def test_the_schedd_gives_up_a_claim_whose_startd_is_silent_for_a_whole_lease(
    path: Path,
) -> None:
    """Lease 60, claimed and running at 10; keepalives at 30 and 50 get no answer: at
    10 + 60 = 70 the schedd gives up (HTCondor's shadow: "Job disconnected too long"),
    the job is Idle again with its 60 s of run accounted, and the claim is released."""
    s = make(path)
    s.submit(SLEEP + "job_lease_duration = 60\nqueue\n", "a.sub", "alice", 0.0)
    c1 = start(s, "1.0", 1, 10.0)
    s.drain_events()
    assert s.alive_round(30.0)[1] == {"exec1:1": [c1]}  # sent, never answered
    assert s.alive_round(50.0)[1] == {"exec1:1": [c1]}
    assert s.next_keepalive() == 70
    out, due = s.alive_round(69.9)
    assert not out and v(job_ad(s, "1.0"), "JobStatus") == RUNNING
    out, due = s.alive_round(70.0)
    assert out.releases == {"exec1:1": [c1]} and due == {}
    ad = job_ad(s, "1.0")
    assert v(ad, "JobStatus") == IDLE and v(ad, "RemoteWallClockTime") == 60.0
    kinds = [k for k, _ in s.drain_events()]
    assert kinds[0] == "reconnect_failed" and "claim_dropped" in kinds
    assert s.claims == {} and s.next_keepalive() is None


def test_an_answered_keepalive_moves_the_schedds_deadline(path: Path) -> None:
    s = make(path)
    s.submit(SLEEP + "job_lease_duration = 60\nqueue\n", "a.sub", "alice", 0.0)
    c1 = start(s, "1.0", 1, 10.0)
    s.alive_round(30.0)
    s.on_keepalive_answer([c1], [], 31.0)
    assert s.alive_round(70.0)[0].releases == {}  # heard at 31: gives up at 91
    assert v(job_ad(s, "1.0"), "JobStatus") == RUNNING
    assert s._keepalive_times()[2] == 91.0  # the earliest end of a lease


def test_a_restarted_schedd_asks_its_startds_at_once_and_reconnects(path: Path) -> None:
    """Restart at 100 (claim made at 10, lease 2400): the loaded claim is asked about at
    once; the startd knows it: the job runs on ("job_reconnected"). A second job's claim
    is unknown to its startd: that job is Idle again."""
    s = make(path)
    s.submit(SLEEP + "queue 2\n", "a.sub", "alice", 0.0)
    c1 = start(s, "1.0", 1, 10.0)
    c2 = start(s, "1.1", 2, 10.0, host="exec2:1")
    s.queue.close()
    r = make(path, now=100.0)
    assert r.next_keepalive() == 100.0
    out, due = r.alive_round(100.0)
    assert not out
    assert due == {"exec1:1": [c1], "exec2:1": [c2]}
    r.drain_events()
    r.on_keepalive_answer([c1], [], 100.5)
    r.on_keepalive_answer([c2], [c2], 100.5)
    events = r.drain_events()
    assert ("job_reconnected", "1.0") in [(k, f.get("job")) for k, f in events]
    assert v(job_ad(r, "1.0"), "JobStatus") == RUNNING
    assert v(job_ad(r, "1.1"), "JobStatus") == IDLE
    assert r.next_keepalive() == 400.0  # asked again 300 s after it was sent


def _activating(s: Schedd, now: float) -> str:
    """One job (lease 90 s) matched and claimed at ``now``, its activation in flight."""
    s.submit(SLEEP + "job_lease_duration = 90\nqueue\n", "a.sub", "alice", 0.0)
    claim = cid(1)
    s.on_matches([MatchNotice(ALICE, 1, "slot1@exec1", claim, "exec1:1")], now)
    out = s.on_claim_results(
        [ClaimOutcome(claim, True, claim_id=claim, slot_name="slot1@exec1")], now
    )
    assert [a.claim_id for a in out.activations["exec1:1"]] == [claim]
    s.drain_events()
    return claim


def _unanswered(s: Schedd) -> str:
    """As :func:`_activating` at 10, the activation's answer lost at 12."""
    claim = _activating(s, 10.0)
    lost = ActivationOutcome(claim, False, "no answer from the startd", answered=False)
    s.on_activation_results([lost], 12.0)
    return claim


def test_an_unanswered_activation_keeps_its_job_until_the_startd_answers_a_release(
    path: Path,
) -> None:
    s = make(path)
    claim = _activating(s, 10.0)
    lost = ActivationOutcome(
        claim, False, "ActivateClaims failed: DEADLINE_EXCEEDED", answered=False
    )
    out = s.on_activation_results([lost], 12.0)
    # the job may be running there: the claim is released, the job is not matched again
    assert dict(out.releases) == {"exec1:1": [claim]}
    assert s.resource_requests() == [] and claim not in s.claims
    (event,) = [f for k, f in s.drain_events() if k == "activate_unanswered"]
    assert event["job"] == "1.0" and event["until"] == 102.0  # 12 + the 90 s lease
    # the release is sent again every min(ALIVE_INTERVAL, lease / 3) = 30 s until answered
    assert s.next_keepalive() == 42.0
    s.on_releases_done([claim], 20.0, answered=False)  # the call failed: still waiting
    assert s.resource_requests() == []
    out, _due = s.alive_round(42.0)
    assert dict(out.releases) == {"exec1:1": [claim]} and s.next_keepalive() == 72.0
    s.on_releases_done([claim], 43.0, answered=True)  # the startd holds it no more
    (req,) = s.resource_requests()
    assert req.get_value("ResourceRequestCount") == 1
    assert [k for k, _f in s.drain_events()] == ["activate_settled"]
    assert s.next_keepalive() is None


def test_an_unanswered_activation_frees_its_job_when_the_claims_lease_is_over(
    path: Path,
) -> None:
    s = make(path)
    claim = _unanswered(s)
    for t in (42.0, 72.0):  # releases lost each time
        out, _ = s.alive_round(t)
        assert dict(out.releases) == {"exec1:1": [claim]}
    out, _ = s.alive_round(101.0)
    assert s.resource_requests() == []
    out, _ = s.alive_round(102.0)  # the startd's lease on the claim is over: job ended
    assert not out and len(s.resource_requests()) == 1
    settled = [f for k, f in s.drain_events() if k == "activate_settled"]
    assert settled == [{"job": "1.0", "slot": "slot1@exec1", "why": "the claim's lease is over"}]


def test_a_refused_activation_frees_its_job_at_once(path: Path) -> None:
    s = make(path)
    claim = _activating(s, 10.0)
    refused = ActivationOutcome(claim, False, "claim id ... is no longer valid")
    out = s.on_activation_results([refused], 12.0)
    assert dict(out.releases) == {"exec1:1": [claim]}
    assert len(s.resource_requests()) == 1 and s.next_keepalive() is None


def test_a_job_held_and_released_while_its_activation_is_unanswered_stays_off_the_market(
    path: Path,
) -> None:
    s = make(path)
    claim = _unanswered(s)
    results, _out = s.act("hold", ["1.0"], "", "", "alice", 20.0)
    assert results[0].ok and job_ad(s, "1.0").get_value("JobStatus") == HELD
    results, _out = s.act("release", ["1.0"], "", "", "alice", 25.0)
    assert results[0].ok and job_ad(s, "1.0").get_value("JobStatus") == IDLE
    assert s.resource_requests() == []  # it may still be running at the startd
    s.on_releases_done([claim], 43.0, answered=True)
    assert len(s.resource_requests()) == 1
    assert s.status()["reserved"] == 0
