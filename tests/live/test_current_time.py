"""End to end: CurrentTime and time() are the pool's date in every daemon, as its ads' dates;
every date in the schedd's, startd's, collector's and negotiator's ads (job and accounting
ads too) is a Unix time within the pool's run, as HTCondor's are.

Dates count from the pool's start date (pool time 0), and pool seconds (not the wall
clock's) after it. The machine's START opens 300 pool seconds after its startd began
(its DaemonStartTime, a date): a job queued at the start waits until then, and the
startd grants the claim only once its own clock says so. `status` and `q` constraints
see the same date.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from mockpool import Pool
from mockpool.classad import ClassAd

pytestmark = [pytest.mark.live, pytest.mark.slow]

OPENS = 300
SPEC = f"""
[pool]
time_scale = 60
duration = 3600
seed = 1

[config]
NEGOTIATOR_INTERVAL = 20
UPDATE_INTERVAL = 20

[[startds]]
name = "exec{{:04d}}"
count = 1
config = '''
NUM_CPUS = 2
MEMORY = 2048
START = CurrentTime >= DaemonStartTime + {OPENS} && time() >= DaemonStartTime + {OPENS}
'''

[[schedds]]
count = 1
"""
JOB = "executable = /bin/sleep\narguments = 60\nrequest_memory = 128\nqueue 1\n"
LONG = "executable = /bin/sleep\narguments = 36000\nrequest_memory = 128\nqueue 1\n"

# HTCondor's date attributes that mockpool's ads carry, by who writes them
DATES = {
    "job": (
        "QDate",
        "EnteredCurrentStatus",
        "JobStartDate",
        "JobCurrentStartDate",
        "LastMatchTime",
        "CompletionDate",
        "LastVacateTime",
        "LastRejMatchTime",
        "JobLastStartDate",
    ),
    "Machine": (
        "DaemonStartTime",
        "EnteredCurrentState",
        "EnteredCurrentActivity",
        "ClaimStartTime",
        "JobStart",
        "MyCurrentTime",
        "LastHeardFrom",
    ),
    "Scheduler": ("DaemonStartTime", "JobQueueBirthdate", "MyCurrentTime", "LastHeardFrom"),
    "Submitter": ("MyCurrentTime", "LastHeardFrom"),
    "Collector": ("DaemonStartTime", "MyCurrentTime", "LastHeardFrom"),
    "Negotiator": (
        "DaemonStartTime",
        "MyCurrentTime",
        "LastHeardFrom",
        "LastNegotiationCycleTime0",
        "LastNegotiationCycleEnd0",
    ),
    "Accounting": ("LastUpdate", "BeginUsageTime", "LastUsageTime"),
}
# those every ad of its kind must have here
REQUIRED = {
    "job": ("QDate", "EnteredCurrentStatus", "JobStartDate", "JobCurrentStartDate"),
    "Machine": ("DaemonStartTime", "EnteredCurrentState", "MyCurrentTime", "LastHeardFrom"),
    "Scheduler": ("DaemonStartTime", "MyCurrentTime", "LastHeardFrom"),
    "Collector": ("DaemonStartTime", "MyCurrentTime", "LastHeardFrom"),
    "Negotiator": ("DaemonStartTime", "MyCurrentTime", "LastNegotiationCycleTime0"),
    "Accounting": ("LastUpdate", "LastUsageTime"),
}


STARTED: list[float] = []  # the wall clock just before the pool started


@pytest.fixture(scope="module")
def pool(ray_session: None) -> Iterator[Pool]:
    STARTED.append(time.time())
    with Pool(SPEC) as p:
        yield p


def test_start_opens_at_pool_time_and_constraints_see_pool_time(pool: Pool) -> None:
    cluster, _ = pool.submit(JOB, owner="alice")
    assert pool.wait(lambda: len(pool.slots()) == 2, timeout=120)
    # the collector and the schedd evaluate constraints at the pool's date: its start
    # date plus pool seconds (ahead of the wall clock at a time scale of 60)
    start = int(pool.start_date)
    now = f"CurrentTime >= {start} && CurrentTime < {start} + 100000"
    assert len(pool.slots(f"{now} && time() == CurrentTime && MyCurrentTime <= time()")) == 2
    assert len(pool.jobs(f"{now} && QDate <= time()")) == 1
    assert pool.wait(lambda: pool.jobs(f"ClusterId == {cluster} && JobStatus == 2"), timeout=180)
    (job,) = pool.jobs(f"ClusterId == {cluster}")
    started = job.get_value("JobCurrentStartDate")
    assert isinstance(started, int) and started >= start + OPENS, (started, start)


def test_every_date_in_the_daemons_ads_is_a_unix_time_within_the_run(pool: Pool) -> None:
    # the first test's job completes; another runs: the queue, the history and a claimed
    # slot all carry their dates
    assert pool.wait(lambda: pool.jobs("JobStatus == 4", history=True), timeout=120)
    pool.submit(LONG, owner="alice")
    assert pool.wait(lambda: pool.jobs("JobStatus == 2"), timeout=120)
    assert pool.start_date == int(pool.start_date)  # a whole second
    assert STARTED[0] - 1 <= pool.start_date <= time.time()
    ads: dict[str, list[ClassAd]] = {
        "job": pool.jobs() + pool.jobs(history=True),
        **{t: pool.ads(t) for t in DATES if t not in ("job", "Accounting")},
        "Accounting": [a for a in pool.userprio() if a.get_value("IsAccountingGroup") is False],
    }
    first, last = pool.start_date, pool.start_date + pool.now + 1  # the run's dates so far
    seen: dict[str, set[str]] = {}
    for kind, names in DATES.items():
        assert ads[kind], f"no {kind} ads"
        for ad in ads[kind]:
            have = set()
            for name in names:
                value = ad.get_value(name)
                if value is None or (value == 0 and name in ("BeginUsageTime", "LastUsageTime")):
                    continue  # absent, or HTCondor's 0 for "never"
                assert isinstance(value, int) and not isinstance(value, bool), (kind, name, value)
                assert first <= value <= last, (kind, ad.get_value("Name"), name, value)
                have.add(name)
            missing = set(REQUIRED.get(kind, ())) - have
            if kind == "job" and ad.get_value("JobStatus") == 1:
                missing -= {"JobStartDate", "JobCurrentStartDate"}
            assert not missing, (kind, ad.get_value("Name"), missing)
            seen.setdefault(kind, set()).update(have)
    assert "CompletionDate" in seen["job"] and "ClaimStartTime" in seen["Machine"]
