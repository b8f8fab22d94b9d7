"""Job policy: the periodic and on-exit expressions (HTCondor's UserPolicy).

The pure rules first (``schedd.policy``), then the schedd core carrying them out. Every
time and count below is worked out by hand from the times passed in.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from builders.cores import cid, job_ad, make_schedd, start_job, v

from mockpool.classad import parse_ad
from mockpool.config import ConfigError, parse_config
from mockpool.schedd.policy import (
    PolicyVerdict,
    SystemPolicy,
    at_exit,
    periodic,
    short_duration,
)
from mockpool.schedd.records import JobExit
from mockpool.schedd.schedd import COMPLETED, HELD, IDLE, RUNNING
from mockpool.schedd.submit import SubmitError, parse_submit

IDLE_, RUNNING_, REMOVED_, HELD_ = 1, 2, 3, 5
NONE = SystemPolicy()
SLEEP = "executable = /bin/sleep\narguments = 60\n"


def ad(text: str):  # a job ad from new-syntax attributes
    return parse_ad("[" + text + "]")


def system(config: str) -> SystemPolicy:
    return SystemPolicy.from_config(parse_config(config, "<test>"))


# --------------------------------------------------------------------------- the rules


def test_periodic_hold_fires_with_htcondors_reason_and_code() -> None:
    job = ad("JobStatus = 1; QDate = 50; PeriodicHold = time() - QDate > 100")
    assert periodic(job, IDLE_, 150.0, NONE) is None  # 100 > 100 is false
    assert periodic(job, IDLE_, 151.0, NONE) == PolicyVerdict(
        "hold",
        "The job attribute PeriodicHold expression 'time() - QDate > 100' evaluated to TRUE",
        3,
        0,
    )


def test_a_number_fires_when_it_truncates_to_non_zero_and_undefined_never() -> None:
    for value, fires in (("0.5", False), ("1.5", True), ("-1", True), ("0", False)):
        job = ad(f"PeriodicRemove = {value}")
        assert (periodic(job, IDLE_, 0.0, NONE) is not None) is fires, value
    for value in ("undefined", "NoSuchAttr", '"yes"', "error"):
        assert periodic(ad(f"PeriodicRemove = {value}"), IDLE_, 0.0, NONE) is None


def test_the_jobs_own_reason_and_subcode_replace_the_default() -> None:
    job = ad(
        'PeriodicHold = true; PeriodicHoldReason = strcat("over ", 2, " hours");'
        " PeriodicHoldSubCode = 40 + 2"
    )
    assert periodic(job, RUNNING_, 0.0, NONE) == PolicyVerdict("hold", "over 2 hours", 3, 42)


def test_order_hold_before_remove_release_only_when_held_and_not_by_the_user() -> None:
    both = ad("PeriodicHold = true; PeriodicRemove = true; PeriodicRelease = true")
    assert periodic(both, IDLE_, 0.0, NONE).action == "hold"  # type: ignore[union-attr]
    # held: no hold, release comes before remove ...
    by_policy = ad(
        "PeriodicHold = true; PeriodicRemove = true; PeriodicRelease = true; HoldReasonCode = 3"
    )
    assert periodic(by_policy, HELD_, 0.0, NONE).action == "release"  # type: ignore[union-attr]
    # ... but a job its user held is never released by policy
    by_user = ad("PeriodicRelease = true; PeriodicRemove = true; HoldReasonCode = 1")
    assert periodic(by_user, HELD_, 0.0, NONE).action == "remove"  # type: ignore[union-attr]
    # a Completed job is not held; a Removed job has no periodic policy at all
    assert periodic(both, 4, 0.0, NONE).action == "remove"  # type: ignore[union-attr]
    assert periodic(both, REMOVED_, 0.0, NONE) is None


def test_system_max_releases_counts_the_jobs_holds() -> None:
    policy = system("SYSTEM_MAX_RELEASES = 2")
    job = ad("PeriodicRelease = true; HoldReasonCode = 3; NumHolds = 1")
    assert periodic(job, HELD_, 0.0, policy).action == "release"  # type: ignore[union-attr]
    job = ad("PeriodicRelease = true; HoldReasonCode = 3; NumHolds = 2")
    assert periodic(job, HELD_, 0.0, policy) is None


def test_system_macros_come_after_the_jobs_own_with_code_26() -> None:
    policy = system(
        "SYSTEM_PERIODIC_HOLD = JobStatus == 2 && time() - JobCurrentStartDate > 3600\n"
        "SYSTEM_PERIODIC_HOLD_SUBCODE = 7\n"
        'SYSTEM_PERIODIC_HOLD_REASON = strcat("ran past ", 3600, " s")\n'
        "SYSTEM_PERIODIC_REMOVE = NumHolds > 3\n"
    )
    job = ad("JobStatus = 2; JobCurrentStartDate = 100")
    assert periodic(job, RUNNING_, 3700.0, policy) is None
    assert periodic(job, RUNNING_, 3701.0, policy) == PolicyVerdict(
        "hold", "ran past 3600 s", 26, 7
    )
    job = ad("JobStatus = 5; NumHolds = 4; HoldReasonCode = 26")
    assert periodic(job, HELD_, 0.0, policy) == PolicyVerdict(
        "remove",
        "The system macro SYSTEM_PERIODIC_REMOVE expression 'NumHolds > 3' evaluated to TRUE",
        26,
        0,
    )
    # the job's own expression is looked at first
    own = ad("JobStatus = 2; JobCurrentStartDate = 100; PeriodicHold = true")
    assert periodic(own, RUNNING_, 3701.0, policy).code == 3  # type: ignore[union-attr]


def test_named_system_policies_come_first_in_list_order_then_the_plain_knob() -> None:
    # HTCondor's policy lists: SYSTEM_PERIODIC_HOLD_NAMES names the policies, each with
    # its own _REASON and _SUBCODE; the reason quotes the knob as written
    policy = system(
        "SYSTEM_PERIODIC_HOLD_NAMES = long, Big names long\n"
        "SYSTEM_PERIODIC_HOLD_long = JobStatus==2 && time()-JobCurrentStartDate>100\n"
        "SYSTEM_PERIODIC_HOLD_long_SUBCODE = 1\n"
        "SYSTEM_PERIODIC_HOLD_Big = RequestMemory > 4096\n"
        'SYSTEM_PERIODIC_HOLD_Big_REASON = "too big"\n'
        "SYSTEM_PERIODIC_HOLD = true\n"
    )
    assert [r.text for r in policy.hold] == [
        "JobStatus==2 && time()-JobCurrentStartDate>100",
        "RequestMemory > 4096",
        "true",
    ]
    both = ad("JobStatus = 2; JobCurrentStartDate = 0; RequestMemory = 8192")
    assert periodic(both, RUNNING_, 101.0, policy) == PolicyVerdict(
        "hold",
        "The system macro SYSTEM_PERIODIC_HOLD expression "
        "'JobStatus==2 && time()-JobCurrentStartDate>100' evaluated to TRUE",
        26,
        1,
    )
    assert periodic(both, RUNNING_, 50.0, policy) == PolicyVerdict("hold", "too big", 26, 0)
    small = ad("JobStatus = 1; RequestMemory = 100")
    assert periodic(small, IDLE_, 50.0, policy).reason == (  # type: ignore[union-attr]
        "The system macro SYSTEM_PERIODIC_HOLD expression 'true' evaluated to TRUE"
    )


def test_a_literal_false_system_macro_is_dropped_and_a_bad_one_names_its_line() -> None:
    assert not system("SYSTEM_PERIODIC_HOLD = false\nSYSTEM_PERIODIC_REMOVE = 0\n").any
    assert not system("SYSTEM_PERIODIC_HOLD_NAMES = a\nSYSTEM_PERIODIC_HOLD_a = 0\n").any
    with pytest.raises(
        ConfigError, match=r"<test>:2: SYSTEM_PERIODIC_REMOVE = \"\(1 \+\": syntax error"
    ):
        system("SYSTEM_PERIODIC_HOLD = true\nSYSTEM_PERIODIC_REMOVE = (1 +\n")
    with pytest.raises(ConfigError, match=r"<test>:2: SYSTEM_PERIODIC_HOLD_a = \"x ==\": syntax"):
        system("SYSTEM_PERIODIC_HOLD_NAMES = a\nSYSTEM_PERIODIC_HOLD_a = x ==\n")


def test_allowed_durations_hold_a_running_job_with_codes_46_and_47() -> None:
    job = ad("JobCurrentStartDate = 100; AllowedJobDuration = 3600")
    assert periodic(job, RUNNING_, 3699.0, NONE) is None
    assert periodic(job, RUNNING_, 3700.0, NONE) == PolicyVerdict(
        "hold", "The job exceeded allowed job duration of 1:00:00", 46
    )
    job = ad("JobCurrentStartDate = 100; AllowedExecuteDuration = 90")
    assert periodic(job, RUNNING_, 190.0, NONE) is None  # execute: strictly more than
    assert periodic(job, RUNNING_, 191.0, NONE) == PolicyVerdict(
        "hold", "The job exceeded allowed execute duration of 01:30", 47
    )
    assert periodic(job, IDLE_, 5000.0, NONE) is None  # only a running job


def test_format_time_short() -> None:
    got = [short_duration(n) for n in (0, 30, 90, 3600, 86400, 90061, 864000)]
    assert got == ["00:00", "00:30", "01:30", "1:00:00", "1+00:00:00", "1+01:01:01", "10+00:00:00"]


def test_timer_remove_and_periodic_vacate() -> None:
    job = ad("TimerRemove = 500")
    assert periodic(job, IDLE_, 500.0, NONE) is None
    assert periodic(job, IDLE_, 501.0, NONE).action == "remove"  # type: ignore[union-attr]
    vacate = ad("PeriodicVacate = true")
    assert periodic(vacate, RUNNING_, 0.0, NONE) == PolicyVerdict(
        "vacate", "The job attribute PeriodicVacate expression 'true' evaluated to TRUE", 1000
    )
    assert periodic(vacate, IDLE_, 0.0, NONE) is None


def test_at_exit_hold_requeue_or_complete() -> None:
    held = ad("ExitCode = 1; OnExitHold = ExitCode != 0")
    assert at_exit(held, 0.0, NONE) == PolicyVerdict(
        "hold", "The job attribute OnExitHold expression 'ExitCode != 0' evaluated to TRUE", 3
    )
    again = ad("ExitCode = 1; OnExitRemove = ExitCode == 0")
    assert at_exit(again, 0.0, NONE) == PolicyVerdict(
        "requeue", "The job attribute OnExitRemove expression 'ExitCode == 0' evaluated to FALSE"
    )
    # undefined, or no expression: the job completes
    assert at_exit(ad("OnExitRemove = Nope"), 0.0, NONE).action == "complete"
    assert at_exit(ad("ExitCode = 0"), 0.0, NONE).action == "complete"
    # a periodic remove that fires at the exit completes the job (the shadow's terminateJob)
    assert at_exit(ad("PeriodicRemove = true; OnExitRemove = false"), 0.0, NONE).action == (
        "complete"
    )


# --------------------------------------------------------------------------- submit


def policy_attrs(text: str) -> dict[str, str]:
    (job,) = parse_submit(SLEEP + text + "\nqueue\n", owner="alice").procs
    keep = ("Periodic", "OnExit", "JobMaxRetries", "JobSuccessExitCode", "Allowed")
    return {k: val for k, val in job.items() if k.startswith(keep)}


def test_submit_commands_become_the_policy_attributes() -> None:
    got = policy_attrs(
        'periodic_hold = time() - QDate > 60\nperiodic_hold_reason = "slow"\n'
        "PeriodicRelease = true\nperiodic_remove = NumHolds > 2\non_exit_hold = ExitCode != 0\n"
        "allowed_job_duration = 3600"
    )
    assert got == {
        "PeriodicHold": "time() - QDate > 60",
        "PeriodicHoldReason": '"slow"',
        "PeriodicRelease": "true",
        "PeriodicRemove": "NumHolds > 2",
        "OnExitHold": "ExitCode != 0",
        "AllowedJobDuration": "3600",
    }
    assert policy_attrs("") == {}  # no defaults inserted (SUBMIT_INSERT_DEFAULT_POLICY_EXPRS)


def test_retries_fold_into_on_exit_remove_as_condor_submit_writes_it() -> None:
    assert policy_attrs("max_retries = 3") == {
        "JobMaxRetries": "3",
        "OnExitHold": "false",
        "OnExitRemove": "NumJobCompletions > JobMaxRetries || ExitCode =?= 0",
    }
    assert policy_attrs("success_exit_code = 7\nretry_until = 42") == {
        "JobMaxRetries": "2",  # DEFAULT_JOB_MAX_RETRIES
        "JobSuccessExitCode": "7",
        "OnExitHold": "false",
        "OnExitRemove": (
            "NumJobCompletions > JobMaxRetries || ExitCode =?= JobSuccessExitCode"
            " || ExitCode =?= 42"
        ),
    }
    got = policy_attrs("max_retries = 1\nretry_until = a ? b : c\non_exit_remove = x ? y : z")
    assert got["OnExitRemove"] == (
        "NumJobCompletions > JobMaxRetries || ExitCode =?= 0 || (a ? b : c) || (x ? y : z)"
    )


def test_a_bad_retry_until_or_max_retries_names_its_line() -> None:
    with pytest.raises(SubmitError, match=r'<submit>:3: retry_until = "x ==": must be an'):
        policy_attrs("retry_until = x ==")
    with pytest.raises(SubmitError, match=r'<submit>:3: max_retries = "many": expected an int'):
        policy_attrs("max_retries = many")


# --------------------------------------------------------------------------- the schedd


def round_at(s, now: float):
    return s.policy_round(s.policy_due(now), now)


def test_a_periodic_hold_fires_at_the_round_after_it_becomes_true(tmp_path: Path) -> None:
    s = make_schedd(tmp_path / "q.sqlite", 0.0)
    s.submit(SLEEP + "periodic_hold = time() - QDate > 100\nqueue 2\n", "a.sub", "alice", 10.0)
    s.drain_events()
    assert s.next_policy_time() == 60.0  # PERIODIC_EXPR_INTERVAL after the schedd started
    assert s.policy_due(59.0) == [] and s.next_policy_time() == 60.0
    assert s.policy_due(60.0) == [(1, 0), (1, 1)] and s.next_policy_time() == 120.0
    assert s.policy_round([(1, 0), (1, 1)], 60.0) is None  # 50 > 100: no
    out = round_at(s, 120.0)  # 110 > 100: both held
    assert out is not None and not out.releases
    for job in ("1.0", "1.1"):
        a = job_ad(s, job)
        assert v(a, "JobStatus") == HELD and v(a, "HoldReasonCode") == 3
        assert v(a, "HoldReason") == (
            "The job attribute PeriodicHold expression 'time() - QDate > 100' evaluated to TRUE"
        )
        assert v(a, "NumHolds") == 1 and v(a, "EnteredCurrentStatus") == 120
    assert [k for k, _ in s.drain_events()] == ["hold", "hold"]
    # what the queue stored survives a restart of the schedd
    again = make_schedd(tmp_path / "q.sqlite", 200.0)
    assert v(job_ad(again, "1.0"), "HoldReasonCode") == 3


def test_a_running_job_held_by_policy_gives_its_claim_back(tmp_path: Path) -> None:
    s = make_schedd(tmp_path / "q.sqlite", 0.0)
    s.submit(
        SLEEP + "periodic_hold = JobStatus == 2 && NumJobStarts >= 1\nqueue\n", "a", "alice", 0
    )
    claim = start_job(s, "1.0", 1, 30.0)
    assert v(job_ad(s, "1.0"), "JobStatus") == RUNNING
    out = round_at(s, 60.0)
    assert out is not None and out.releases["exec1:1"] == [claim]
    a = job_ad(s, "1.0")
    assert v(a, "JobStatus") == HELD and v(a, "RemoteWallClockTime") == 30.0
    assert claim not in s.claims


def test_system_policy_applies_to_every_job_and_interval_zero_turns_it_off(
    tmp_path: Path,
) -> None:
    s = make_schedd(
        tmp_path / "a.sqlite",
        0.0,
        "SYSTEM_PERIODIC_REMOVE = JobPrio < 0\nPERIODIC_EXPR_INTERVAL = 30",
    )
    s.submit(SLEEP + "priority = -1\nqueue\n" + "priority = 0\nqueue\n", "a", "alice", 0.0)
    s.drain_events()
    assert s.policy_due(30.0) == [(1, 0), (1, 1)]  # a system policy looks at every job
    assert s.policy_round([(1, 0), (1, 1)], 30.0) is not None
    assert sorted(s.jobs) == [(1, 1)]
    (kind, fields), *_ = s.drain_events()
    assert kind == "remove" and fields["job"] == "1.0"
    assert fields["reason"] == (
        "The system macro SYSTEM_PERIODIC_REMOVE expression 'JobPrio < 0' evaluated to TRUE"
    )
    off = make_schedd(tmp_path / "b.sqlite", 0.0, "PERIODIC_EXPR_INTERVAL = 0")
    assert off.next_policy_time() is None and off.policy_due(1e9) == []
    # a job that left between the turns of a round is passed over
    assert s.policy_round([(1, 0), (9, 9)], 60.0) is None


def exit_of(s, claim: str, job: str, end: float, code: int = 0) -> None:
    cluster, proc = map(int, job.split("."))
    s.on_job_exits([JobExit(claim, cluster, proc, 0.0, end, exit_code=code)], end)


def test_max_retries_runs_a_failing_job_again_until_its_retries_are_spent(
    tmp_path: Path,
) -> None:
    s = make_schedd(tmp_path / "q.sqlite", 0.0)
    s.submit(SLEEP + "max_retries = 1\nqueue\n", "a", "alice", 0.0)
    s.drain_events()
    claim = start_job(s, "1.0", 1, 10.0)
    exit_of(s, claim, "1.0", 70.0, code=3)  # 1 completion, not > 1 retries, code != 0
    a = job_ad(s, "1.0")
    assert v(a, "JobStatus") == IDLE and v(a, "NumJobCompletions") == 1
    assert v(a, "ExitCode") == 3
    events = dict(s.drain_events())
    assert events["requeue"]["reason"] == (
        "The job attribute OnExitRemove expression "
        "'NumJobCompletions > JobMaxRetries || ExitCode =?= 0' evaluated to FALSE"
    )
    claim = start_job(s, "1.0", 2, 80.0)
    exit_of(s, claim, "1.0", 140.0, code=3)  # 2 completions > 1: it leaves, Completed
    assert (1, 0) not in s.jobs
    ((_, _, hist),) = s.queue.history()
    assert hist["JobStatus"] == str(COMPLETED) and hist["NumJobCompletions"] == "2"


def test_on_exit_hold_holds_the_job_with_its_exit_code(tmp_path: Path) -> None:
    s = make_schedd(tmp_path / "q.sqlite", 0.0)
    s.submit(
        SLEEP + "on_exit_hold = ExitCode != 0\non_exit_hold_subcode = ExitCode\nqueue\n",
        "a",
        "alice",
        0.0,
    )
    claim = start_job(s, "1.0", 1, 10.0)
    exit_of(s, claim, "1.0", 70.0, code=9)
    a = job_ad(s, "1.0")
    assert v(a, "JobStatus") == HELD and v(a, "HoldReasonCode") == 3
    assert v(a, "HoldReasonSubCode") == 9 and v(a, "LastJobStatus") == RUNNING
    assert v(a, "RemoteHost") is None and v(a, "LastRemoteHost") == "slot1@exec1"


def test_a_job_without_policy_completes_as_before(tmp_path: Path) -> None:
    s = make_schedd(tmp_path / "q.sqlite", 0.0)
    s.submit(SLEEP + "queue\n", "a", "alice", 0.0)
    claim = start_job(s, "1.0", 1, 10.0)
    assert cid(1) == claim
    exit_of(s, claim, "1.0", 70.0, code=5)
    ((_, _, hist),) = s.queue.history()
    assert hist["ExitCode"] == "5" and hist["CompletionDate"] == "70"
