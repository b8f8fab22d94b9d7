"""The schedd core's qmgmt entries: jobs as ready-made ads, edits (condor_qedit), vacate,
the result codes of ACT_ON_JOBS, and history's ``since``.

Each expected value is worked out by hand from the ads and times given.
"""

from __future__ import annotations

import errno
from pathlib import Path

import pytest
from builders.cores import ALICE, job_ad, v
from builders.cores import make_schedd as make
from builders.cores import start_job as start

from mockpool.config import parse_config
from mockpool.schedd.jobads import EditSpec, JobAdError, JobAttrRules, ready_made
from mockpool.schedd.queue import JobQueue
from mockpool.schedd.records import (
    AR_ALREADY_DONE,
    AR_BAD_STATUS,
    AR_NOT_FOUND,
    AR_PERMISSION_DENIED,
    AR_SUCCESS,
)
from mockpool.schedd.schedd import HELD, IDLE, RUNNING, Schedd
from mockpool.schedd.submit import SubmitError

SLEEP = "executable = /bin/sleep\narguments = 60\n"
RULES = JobAttrRules.from_config(parse_config("", "<test>"))
# a cluster ad as htcondor2 sends it (Owner undefined: the schedd fills in the user)
CLUSTER = {
    "ClusterId": "7",
    "Owner": "undefined",
    "Cmd": '"/bin/sleep"',
    "Arguments": '"90"',
    "Requirements": "true",
    "RequestMemory": "512",
    "QDate": "1700000000",
    "JobUniverse": "5",
    "OsUser": '"mallory"',  # secure: the schedd's own, dropped
}


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "schedd1.sqlite"


def procs(n: int, **extra: str) -> list[dict[str, str]]:
    return [{"ProcId": str(p), "JobStatus": "1", **extra} for p in range(n)]


# --------------------------------------------------------------------------- ready_made


def test_ready_made_forces_owner_ids_and_fills_defaults() -> None:
    (full,) = ready_made(CLUSTER, procs(1), owner="alice", qdate=100, cluster=3, rules=RULES)
    assert full["Owner"] == '"alice"' and full["User"] == '"alice@mockpool"'
    assert full["ClusterId"] == "3" and full["ProcId"] == "0"  # the schedd's id, not the ad's
    assert full["QDate"] == "100" and "OsUser" not in full  # the schedd's date; secure
    # condor_submit's defaults where the ad has none; its own RequestMemory kept
    assert (full["RequestCpus"], full["RequestMemory"], full["RequestDisk"]) == (
        "1",
        "512",
        "1048576",
    )
    assert (full["JobLeaseDuration"], full["JobPrio"], full["JobUniverse"]) == ("2400", "0", "5")
    assert full["MockDuration"] == "90"  # /bin/sleep 90


def test_ready_made_sleep_duration_from_old_args_and_units() -> None:
    cluster = {**CLUSTER, "Args": '"2m extra"'}
    del cluster["Arguments"]
    (full,) = ready_made(cluster, procs(1), owner="alice", qdate=100, cluster=1, rules=RULES)
    assert full["MockDuration"] == "120"  # 2 minutes
    given = {**CLUSTER, "MockDuration": "5"}
    (full,) = ready_made(given, procs(1), owner="alice", qdate=100, cluster=1, rules=RULES)
    assert full["MockDuration"] == "5"  # +MockDuration wins


@pytest.mark.parametrize(
    ("owner", "message"),
    [
        ('"bob"', "Setting owner to bob when active owner is alice is not permitted"),
        ("Cmd", "Unable to set owner to Cmd as it is not a valid owner string"),
    ],
)
def test_ready_made_refuses_another_owner(owner: str, message: str) -> None:
    with pytest.raises(JobAdError, match=message) as got:
        ready_made(
            {**CLUSTER, "Owner": owner}, procs(1), owner="alice", qdate=100, cluster=1, rules=RULES
        )
    assert got.value.errno == errno.EACCES


def test_ready_made_refuses_bad_names_values_ids_and_states() -> None:
    cases = [
        ({"1x": "3"}, {}, errno.EINVAL, "Got invalid attribute named 1x for job 1.-1"),
        ({"A": "(1 +"}, {}, errno.EINVAL, "Received invalid attribute value '\\(1 \\+' for job"),
        ({}, {"ProcId": "x"}, errno.EINVAL, "bad ProcId 'x'"),
        ({}, {"JobStatus": "2"}, errno.EINVAL, r"job 1.0: JobStatus 2 at submit \(1 Idle or 5"),
    ]
    for cluster_extra, proc_extra, code, message in cases:
        with pytest.raises(JobAdError, match=message) as got:
            ready_made(
                {**CLUSTER, **cluster_extra},
                [{"ProcId": "0", **proc_extra}],
                owner="alice",
                qdate=100,
                cluster=1,
                rules=RULES,
            )
        assert got.value.errno == code
    with pytest.raises(JobAdError, match="bad ProcId '0'"):  # given twice
        ready_made(
            CLUSTER,
            [{"ProcId": "0"}, {"ProcId": "0"}],
            owner="a",
            qdate=100,
            cluster=1,
            rules=RULES,
        )


# --------------------------------------------------------------------------- submit_ads


def test_submit_ads_queues_like_a_description_submit(path: Path) -> None:
    s = make(path)
    assert (s.reserve_cluster(), s.reserve_cluster()) == (1, 2)
    # a description submit meanwhile takes the next id after the handed-out ones
    assert s.submit(SLEEP + "queue\n", "a.sub", "bob", 5.0) == (3, 1)
    assert s.submit_ads(2, CLUSTER, procs(2), "alice", 10.0) == (2, 2)
    ad = job_ad(s, "2.1")
    assert v(ad, "Owner") == "alice" and v(ad, "ClusterId") == 2 and v(ad, "ProcId") == 1
    # the schedd's dates (pool time 10), not the client's QDate
    assert v(ad, "QDate") == 10 and v(ad, "EnteredCurrentStatus") == 10
    assert v(ad, "GlobalJobId") == "schedd1#2.1#10"
    assert v(ad, "JobStatus") == IDLE and v(ad, "NumJobStarts") == 0
    assert v(ad, "MockDuration") == 90
    assert s.drain_events()[-1] == (
        "submit",
        {"cluster": 2, "procs": 2, "owner": "alice", "submitter": ALICE},
    )
    assert [r.get_value("ResourceRequestCount") for r in s.resource_requests(ALICE)] == [2]
    # stored before the answer: a schedd started from the file has the jobs
    s.queue.close()
    again = Schedd("schedd1", JobQueue(path), parse_config("", "<test>"), 20.0)
    assert sorted(again.jobs) == [(2, 0), (2, 1), (3, 0)]
    assert v(job_ad(again, "2.0"), "Owner") == "alice"
    assert again.reserve_cluster() == 4  # never an id already used


def test_submit_ads_refusals_store_nothing(path: Path) -> None:
    s = make(path)
    c = s.reserve_cluster()
    with pytest.raises(JobAdError, match="cluster 5 was not handed out by NewCluster"):
        s.submit_ads(5, CLUSTER, procs(1), "alice", 1.0)
    with pytest.raises(JobAdError, match="Setting owner to bob"):
        s.submit_ads(c, {**CLUSTER, "Owner": '"bob"'}, procs(1), "alice", 1.0)
    with pytest.raises(JobAdError, match="out of range"):  # past 64 bits: the record check
        s.submit_ads(c, {**CLUSTER, "Big": "99999999999999999999"}, procs(1), "alice", 1.0)
    with pytest.raises(SubmitError, match=r'UserLog = "/tmp/x\.log": no logs here'):
        s.submit_ads(
            c,
            {**CLUSTER, "UserLog": '"/tmp/x.log"'},
            procs(1),
            "alice",
            1.0,
            log_refused="no logs here",
        )
    limited = make(path.with_name("b.sqlite"), config="MAX_JOBS_PER_SUBMISSION = 2")
    with pytest.raises(JobAdError, match=r"Current total is 3\. Limit is 2") as got:
        limited.submit_ads(limited.reserve_cluster(), CLUSTER, procs(3), "alice", 1.0)
    assert got.value.errno == errno.EINVAL
    assert s.jobs == {} and list(s.queue.history()) == []
    assert s.submit_ads(c, CLUSTER, procs(1), "alice", 2.0) == (1, 1)  # the id is still good
    with pytest.raises(JobAdError, match=r"cluster 1 was not handed out by NewCluster \(or is"):
        s.submit_ads(1, CLUSTER, procs(1), "alice", 2.0)


def test_submit_ads_write_the_user_log_as_a_description_submit(path: Path) -> None:
    s = make(path)
    logged = {**CLUSTER, "UserLog": '"/tmp/jobs.log"'}
    s.submit_ads(s.reserve_cluster(), logged, procs(2), "alice", 3.0)
    events = s.joblog.drain()
    assert [(e.path, e.code, e.cluster, e.proc, e.t) for e in events] == [
        ("/tmp/jobs.log", 0, 1, 0, 3.0),  # 000 Job submitted, at pool time 3
        ("/tmp/jobs.log", 0, 1, 1, 3.0),
    ]
    assert events[0].fields == {"host": "<127.0.0.1:9618>"}


def test_submit_ads_on_hold(path: Path) -> None:
    s = make(path)
    held = {**CLUSTER, "HoldReasonCode": "15", "HoldReason": '"submitted on hold"'}
    s.submit_ads(s.reserve_cluster(), held, procs(1, JobStatus="5"), "alice", 1.0)
    assert v(job_ad(s, "1.0"), "JobStatus") == HELD
    assert s.resource_requests() == []


# --------------------------------------------------------------------------- edit


def edit(
    ids: tuple[str, ...] = (), constraint: str = "", name: str = "Foo", value: str | None = "1"
):
    return EditSpec(tuple(ids), constraint, name, value)


def test_edit_by_ids_and_constraint_counts_and_stores(path: Path) -> None:
    s = make(path)
    s.submit(SLEEP + "queue 3\n", "a.sub", "alice", 0.0)  # 1.0 1.1 1.2
    assert s.edit(
        [edit(("1.0", "1.2"), value='"x"'), edit(constraint="ProcId >= 1", name="Bar")], 5.0
    ) == [2, 2]
    assert [v(job_ad(s, j), "Foo") for j in ("1.0", "1.1", "1.2")] == ["x", None, "x"]
    assert [v(job_ad(s, j), "Bar") for j in ("1.0", "1.1", "1.2")] == [None, 1, 1]
    assert s.edit([edit(("1.0",), name="Foo", value=None)], 6.0) == [1]  # a deletion
    assert v(job_ad(s, "1.0"), "Foo") is None
    s.queue.close()
    again = Schedd("schedd1", JobQueue(path), parse_config("", "<test>"), 7.0)
    assert v(job_ad(again, "1.2"), "Foo") == "x" and v(job_ad(again, "1.0"), "Foo") is None


def test_edit_refusals_change_nothing(path: Path) -> None:
    s = make(path)
    s.submit(SLEEP + "queue 2\n", "a.sub", "alice", 0.0)  # 1.0 1.1
    s.submit(SLEEP + "queue\n", "b.sub", "bob", 0.0)  # 2.0
    cases = [
        (edit(("1.5",)), errno.ENOENT, "Modifying attribute Foo in nonexistent job 1.5"),
        (edit(constraint="ProcId > 9"), errno.ENOENT, "no job matches constraint ProcId > 9"),
        (
            edit(("1.0",), name="Owner", value='"bob"'),
            errno.EACCES,
            "immutable attribute Owner in job 1.0",
        ),
        (
            edit(("1.0",), name="JobStatus", value="5"),
            errno.EACCES,
            "immutable attribute JobStatus",
        ),
        (edit(("1.0",), value="(1 +"), errno.EINVAL, "Received invalid attribute value '\\(1 \\+'"),
        (edit(("1.0",), name="a-b"), errno.EINVAL, "Got invalid attribute named a-b for job 1.0"),
        (
            edit(constraint="true"),
            errno.EACCES,
            r"User alice may not change attributes for jobs they do not own \(job 2.0\)",
        ),
    ]
    for spec, code, message in cases:
        with pytest.raises(JobAdError, match=message) as got:
            # the first edit would apply: all or nothing
            s.edit([edit(("1.1",), name="Early"), spec], 5.0, only_owner="alice")
        assert got.value.errno == code
    assert v(job_ad(s, "1.1"), "Early") is None
    # a queue superuser edits anyone's job; check_only changes nothing
    assert s.edit([edit(constraint="true")], 6.0, check_only=True) == [3]
    assert v(job_ad(s, "2.0"), "Foo") is None
    # a secure attribute is ignored, the edit still counts its job
    assert s.edit([edit(("1.0",), name="OsUser", value='"x"')], 6.0) == [1]
    assert v(job_ad(s, "1.0"), "OsUser") is None
    protected = make(path.with_name("p.sqlite"), config="PROTECTED_JOB_ATTRS = Secret")
    protected.submit(SLEEP + "queue\n", "a.sub", "alice", 0.0)
    with pytest.raises(JobAdError, match=r"protected attribute Secret denied in job 1\.0"):
        protected.edit([edit(("1.0",), name="Secret")], 1.0, only_owner="alice")
    assert protected.edit([edit(("1.0",), name="Secret")], 1.0) == [1]  # a superuser may


def test_edit_refiles_what_the_record_caches(path: Path) -> None:
    s = make(path)
    s.submit(SLEEP + "accounting_group = g\nqueue 2\n", "a.sub", "alice", 0.0)
    assert [r.get_value("ResourceRequestCount") for r in s.resource_requests()] == [2]
    # RequestCpus is significant: 1.1 gets its own autocluster
    s.edit([edit(("1.1",), name="RequestCpus", value="4")], 1.0)
    counts = sorted(
        (r.get_value("RequestCpus"), r.get_value("ResourceRequestCount"))
        for r in s.resource_requests()
    )
    assert counts == [(1, 1), (4, 1)]
    # another accounting group moves the job to another submitter; the edit keeps the
    # spelling the job's ad already has
    s.edit([edit(("1.0",), name="accountinggroup", value='"h.alice"')], 2.0)
    assert sorted(r.get_value("Submitter") for r in s.resource_requests()) == [
        "g.alice@mockpool",
        "h.alice@mockpool",
    ]
    assert s.jobs[(1, 0)].texts["AccountingGroup"] == '"h.alice"'
    assert "accountinggroup" not in s.jobs[(1, 0)].texts
    assert s.status()["idle"] == 2


# --------------------------------------------------------------------------- act


def test_vacate_sends_a_running_job_back_to_idle(path: Path) -> None:
    s = make(path)
    s.submit(SLEEP + "queue 2\n", "a.sub", "alice", 0.0)
    claim = start(s, "1.0", 1, 10.0)
    results, out = s.act("vacate", ["1.0", "1.1"], "", "", "alice", 40.0)
    assert [(r.job_id, r.ok, r.error, r.code) for r in results] == [
        ("1.0", True, "", AR_SUCCESS),
        ("1.1", False, "Job 1.1 not running to be vacated", AR_BAD_STATUS),
    ]
    ad = job_ad(s, "1.0")
    assert v(ad, "JobStatus") == IDLE and v(ad, "LastJobStatus") == RUNNING
    assert v(ad, "RemoteWallClockTime") == 30.0  # ran 10 .. 40
    assert v(ad, "VacateReason") == "via condor_vacate_job (by user alice)"
    assert v(ad, "VacateReasonCode") is None  # a user's vacate has no policy code
    assert dict(out.releases) == {"exec1:1": [claim]}
    results, _ = s.act("vacate", [], "true", "", "alice", 41.0)  # nothing running now
    assert [(r.job_id, r.code) for r in results] == [("", AR_NOT_FOUND)]


def test_act_result_codes(path: Path) -> None:
    s = make(path)
    s.submit(SLEEP + "queue 2\n", "a.sub", "alice", 0.0)  # 1.0 1.1
    s.submit(SLEEP + "queue\n", "b.sub", "bob", 0.0)  # 2.0

    def codes(action: str, *ids: str, constraint: str = "", **kw: object) -> list[tuple[str, int]]:
        results, _ = s.act(action, list(ids), constraint, "", "alice", 5.0, **kw)  # type: ignore[arg-type]
        return [(r.job_id, r.code) for r in results]

    assert codes("hold", "1.0", "9.0") == [("9.0", AR_NOT_FOUND), ("1.0", AR_SUCCESS)]
    assert codes("hold", "1.0") == [("1.0", AR_ALREADY_DONE)]
    assert codes("release", "1.1") == [("1.1", AR_BAD_STATUS)]
    assert codes("hold", "2.0", only_owner="alice") == [("2.0", AR_PERMISSION_DENIED)]
    # a bare constraint from htcondor2: another's jobs are denied, not left out
    assert codes("hold", constraint="true", only_owner="alice", others_denied=True) == [
        ("1.1", AR_SUCCESS),
        ("2.0", AR_PERMISSION_DENIED),
    ]
    assert codes("remove", "1.0") == [("1.0", AR_SUCCESS)]
    assert codes("hold", "1.0") == [("1.0", AR_NOT_FOUND)]  # removed while held: gone


# --------------------------------------------------------------------------- history


def test_history_since_stops_at_the_first_match_newest_first(path: Path) -> None:
    s = make(path)
    s.submit(SLEEP + "queue 4\n", "a.sub", "alice", 0.0)
    s.act("remove", ["1.0", "1.1", "1.2", "1.3"], "", "", "alice", 1.0)  # history: 1.3 newest
    procs_of = lambda ads: [v(a, "ProcId") for a in ads]  # noqa: E731
    assert procs_of(s.history()) == [3, 2, 1, 0]
    assert procs_of(s.history(since="ProcId == 1")) == [3, 2]  # 1.1 itself left out
    assert procs_of(s.history("ProcId != 2", since="ProcId == 0")) == [3, 1]
    assert procs_of(s.history(since="ProcId == 3")) == []
