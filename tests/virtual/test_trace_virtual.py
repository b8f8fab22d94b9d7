"""The shipped trace (tests/data/trace) replayed in virtual time: exact, job by job."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mockpool.classad import ClassAd, evaluate, parse_ads
from mockpool.pool.api import run_pool
from mockpool.pool.spec import parse_spec
from mockpool.pool.trace import TraceJob, read_trace, replay
from mockpool.pool.virtual import VIRTUAL_EPOCH

TRACE = Path(__file__).resolve().parents[1] / "data" / "trace" / "history.json"

# NEGOTIATOR_CYCLE_DELAY and NEGOTIATOR_MIN_INTERVAL are 0 here: with their defaults a
# virtual pool can spin at one instant when the cadence's `now - last_end < delay` rounds
# the other way from `last_end + delay` (reported to the lead with the trace work).
SPEC = """\
[pool]
clock = "virtual"
duration = 900
until_done = true

[config]
NEGOTIATOR_INTERVAL = 20
NEGOTIATOR_CYCLE_DELAY = 0
NEGOTIATOR_MIN_INTERVAL = 0

[[startds]]
count = 2
config = '''
NUM_CPUS = 4
MEMORY = 8192
'''

[[trace]]
file = "history.json"
compress = 2
shift = 10
"""


@pytest.fixture(scope="module")
def replayed(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, dict[str, TraceJob], dict[str, ClassAd]]:
    out = tmp_path_factory.mktemp("trace") / "out"
    spec = parse_spec(SPEC, "pool.toml", base_dir=TRACE.parent)
    summary = run_pool(spec, out)
    assert summary["jobs_submitted"] == 20 and not summary["workload_errors"]
    want = {j.job_id: j for j in replay(read_trace(TRACE).records, compress=2, shift=10)}
    ads = parse_ads((out / "ads" / "history.ads").read_text())
    ads += parse_ads((out / "ads" / "jobs.ads").read_text())
    return out, want, {str(a.get_value("MockTraceJob")): a for a in ads}


def test_completed_jobs_replay_exactly(
    replayed: tuple[Path, dict[str, TraceJob], dict[str, ClassAd]],
) -> None:
    out, want, got = replayed
    assert set(got) == set(want)
    submits = {}
    for line in (out / "events.jsonl").read_text().splitlines():
        e = json.loads(line)
        if e["kind"] == "submit":
            submits[e["cluster"]] = e["t"]
    done = [j for j in want.values() if j.remove_at is None]
    assert len(done) == 18
    for j in done:
        ad = got[j.job_id]
        assert ad.get_value("JobStatus") == 4, j.job_id
        assert submits[ad.get_value("ClusterId")] == j.at, j.job_id  # e.g. 10 + 253 / 2
        assert ad.get_value("QDate") == VIRTUAL_EPOCH + int(j.at), j.job_id
        assert ad.get_value("RemoteWallClockTime") == pytest.approx(j.duration, abs=1e-6)
        assert [ad.get_value(k) for k in ("RequestCpus", "RequestMemory", "RequestDisk")] == [
            j.cpus,
            j.memory,
            j.disk,
        ]
        assert (ad.get_value("Owner"), ad.get_value("AcctGroup") or "") == (
            j.owner,
            j.accounting_group,
        )


def test_each_removal_selects_exactly_its_job(
    replayed: tuple[Path, dict[str, TraceJob], dict[str, ClassAd]],
) -> None:
    # what the launcher will send (condor_rm -constraint) picks one job of the run's ads
    _, _, got = replayed
    spec = parse_spec(SPEC, "pool.toml", base_dir=TRACE.parent)
    assert [r.source for r in spec.removals] == ["history.json:123", "history.json:297"]
    for r in spec.removals:
        hits = [k for k, ad in got.items() if evaluate(r.constraint, ad) is True]
        assert hits == [r.constraint.split('"')[-2]], r.constraint


def test_removed_jobs_are_removed_at_their_trace_time(
    replayed: tuple[Path, dict[str, TraceJob], dict[str, ClassAd]],
) -> None:
    _, want, got = replayed
    removed = [j for j in want.values() if j.remove_at is not None]
    assert [(j.job_id, j.remove_at) for j in removed] == [("105.0", 58.0), ("110.0", 111.0)]
    for j in removed:
        assert got[j.job_id].get_value("JobStatus") == 3, j.job_id
        removed = got[j.job_id].get_value("EnteredCurrentStatus")
        assert removed == VIRTUAL_EPOCH + int(j.remove_at or 0)
