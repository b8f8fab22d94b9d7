"""End to end: the shipped trace (tests/data/trace) replayed on a live pool, job by job."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from mockpool.classad import ClassAd, parse_ads
from mockpool.cli.main import main
from mockpool.pool.trace import TraceJob, read_trace, replay

pytestmark = [pytest.mark.live, pytest.mark.slow]

TRACE = Path(__file__).resolve().parents[1] / "data" / "trace" / "history.json"
COMPRESS = 2.0
# A live pool's clock starts before its daemons have all advertised and the launcher
# submits what is due at time 0 only then: shifting the trace puts every submit after that.
SHIFT = 40.0
# Live pool time runs on the wall clock at TIME_SCALE: a job's QDate is the whole pool
# second of its submit, and its run is measured between two messages, so both may be a
# little late under load (a real second of lateness is TIME_SCALE pool seconds).
TIME_SCALE = 20
# pool seconds: 200 ms real. A shared 2-core machine was seen submitting 2.6 to 3 pool s
# late (the launcher's feeder waits for the CPU too); trace times are tens of seconds
# apart, so a job submitted at the wrong trace time still fails
TOLERANCE = 4.0


def summary_start(out: Path) -> float:
    """The run's date of pool time 0 (the ads' dates count from it)."""
    return float(json.loads((out / "summary.json").read_text())["start_date"])


SPEC = f"""\
[pool]
time_scale = {TIME_SCALE}
duration = 900
until_done = true

[config]
NEGOTIATOR_INTERVAL = 20

[[startds]]
count = 2
config = '''
NUM_CPUS = 4
MEMORY = 8192
'''

[[trace]]
name = "shipped"
file = "{TRACE.as_posix()}"
compress = {COMPRESS}
shift = {SHIFT}
"""


@pytest.fixture(scope="module")
def replayed(
    ray_session: None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Path, dict[str, TraceJob], dict[str, ClassAd]]]:
    tmp = tmp_path_factory.mktemp("trace")
    spec = tmp / "pool.toml"
    spec.write_text(SPEC)
    out = tmp / "out"
    assert main(["run", str(spec), "--out", str(out)]) == 0
    want = {j.job_id: j for j in replay(read_trace(TRACE).records, compress=COMPRESS, shift=SHIFT)}
    ads = parse_ads((out / "ads" / "history.ads").read_text())
    ads += parse_ads((out / "ads" / "jobs.ads").read_text())
    got = {str(a.get_value("MockTraceJob")): a for a in ads}
    yield out, want, got


def test_every_trace_job_is_submitted_once(
    replayed: tuple[Path, dict[str, TraceJob], dict[str, ClassAd]],
) -> None:
    out, want, got = replayed
    summary = json.loads((out / "summary.json").read_text())
    assert summary["jobs_submitted"] == 20 and not summary["workload_errors"]
    assert set(got) == set(want)
    assert all(a.get_value("MockTrace") == "shipped" for a in got.values())


def test_completed_jobs_replay_their_submit_time_duration_and_shape(
    replayed: tuple[Path, dict[str, TraceJob], dict[str, ClassAd]],
) -> None:
    out, want, got = replayed
    # submit events: pool time of each cluster's submit, by cluster id
    submits = {}
    for line in (out / "events.jsonl").read_text().splitlines():
        e = json.loads(line)
        if e["kind"] == "submit":
            submits[e["cluster"]] = e["t"]
    checked = 0
    for job_id, j in want.items():
        if j.remove_at is not None:
            continue
        ad = got[job_id]
        assert ad.get_value("JobStatus") == 4, job_id
        assert submits[ad.get_value("ClusterId")] == pytest.approx(j.at, abs=TOLERANCE), job_id
        qdate = ad.get_value("QDate") - summary_start(out)
        assert qdate == pytest.approx(j.at, abs=TOLERANCE), job_id
        assert ad.get_value("RemoteWallClockTime") == pytest.approx(j.duration, abs=TOLERANCE), (
            job_id
        )
        shape = [ad.get_value(k) for k in ("RequestCpus", "RequestMemory", "RequestDisk", "Owner")]
        assert shape == [j.cpus, j.memory, j.disk, j.owner], job_id
        assert (ad.get_value("AcctGroup") or "") == j.accounting_group, job_id
        checked += 1
    assert checked == 18


def test_removed_jobs_are_removed_at_their_trace_time(
    replayed: tuple[Path, dict[str, TraceJob], dict[str, ClassAd]],
) -> None:
    out, want, got = replayed
    removed = [j for j in want.values() if j.remove_at is not None]
    assert len(removed) == 2
    for j in removed:
        ad = got[j.job_id]
        assert ad.get_value("JobStatus") == 3, j.job_id
        assert j.remove_at is not None
        removed_at = ad.get_value("EnteredCurrentStatus") - summary_start(out)
        assert removed_at == pytest.approx(j.remove_at, abs=TOLERANCE)
