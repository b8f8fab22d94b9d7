"""A live pool serves Prometheus metrics on the port its spec names; they move, they are
labelled with the daemons' own names, and a rate() over two real-time scrapes is per
real second."""

from __future__ import annotations

import socket
import time
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from mockpool import Pool
from mockpool.pool.spec import load_spec

pytestmark = [pytest.mark.live, pytest.mark.slow]

SPEC = Path(__file__).resolve().parents[2] / "examples" / "pslot.toml"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Scrape:
    """One scrape: every sample, and the real time it was taken at (its middle)."""

    def __init__(self, url: str) -> None:
        before = time.monotonic()
        with urllib.request.urlopen(url, timeout=30) as r:
            text = r.read().decode()
        after = time.monotonic()
        self.at = (before + after) / 2
        self.span = after - before
        self.samples = [s for fam in text_string_to_metric_families(text) for s in fam.samples]

    def total(self, name: str, **labels: str) -> float:
        return sum(
            s.value
            for s in self.samples
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())
        )

    def peak(self, name: str) -> float:
        return max((s.value for s in self.samples if s.name == name), default=0.0)

    def __contains__(self, name: str) -> bool:
        return any(s.name == name for s in self.samples)


def _rate(first: Scrape, second: Scrape, name: str, **labels: str) -> float:
    """PromQL's rate() over two scrapes: the counter's increase per real second."""
    return (second.total(name, **labels) - first.total(name, **labels)) / (second.at - first.at)


def test_the_counters_move(ray_session: None) -> None:
    spec = load_spec(SPEC)
    spec.time_scale = 30
    spec.metrics_port = _free_port()
    with Pool(spec) as pool:
        assert pool.metrics_url == f"http://127.0.0.1:{spec.metrics_port}/metrics"
        first = Scrape(pool.metrics_url)
        assert pool.wait(lambda: len(pool.jobs("JobStatus == 4", history=True)) >= 5, timeout=60)
        middle = Scrape(pool.metrics_url)
        assert pool.wait(lambda: len(pool.jobs("JobStatus == 4", history=True)) == 15, timeout=60)
        second = Scrape(pool.metrics_url)
        done = pool.jobs("JobStatus == 4", ["CompletionDate"], history=True)
        daemons = {*spec.schedd_names, *spec.machine_names, "collector", "negotiator"}
    completed = "mockpool_jobs_left_queue_total"
    assert second.total("mockpool_negotiation_cycles_total") > first.total(
        "mockpool_negotiation_cycles_total"
    )
    assert second.total("mockpool_job_exits_total") == 15
    assert second.total(completed, state="Completed") == 15
    assert second.total("mockpool_negotiation_matches_total") >= 10  # claim reuse runs the rest
    assert "mockpool_slots" in second and "mockpool_clock_lag_pool_seconds" in second
    # one label scheme: the daemons' own names, never an actor's
    labelled = {s.labels["daemon"] for s in second.samples if "daemon" in s.labels}
    assert labelled <= daemons and {"schedd1", "exec0001", "negotiator"} <= labelled

    # Pool time runs time_scale times as fast as real time, as its own gauges say.
    scale = second.total("mockpool_time_scale")
    assert scale == 30
    pool_rate = _rate(middle, second, "mockpool_time_pool_seconds")
    assert 0.8 * scale < pool_rate < 1.2 * scale

    # rate() of the completed-jobs counter over two real-time scrapes is jobs per real
    # second (rate() / the pool-time rate, per pool second): the jobs whose CompletionDate (a Unix date: start + pool seconds) fell
    # between the scrapes' pool times, over the real seconds between them. A job counts
    # when its schedd hears of its end, a little after its CompletionDate, and a scrape
    # reads its counters over a span of real time: a job ending that close to a scrape
    # may fall on either side of it.
    start = second.total("mockpool_start_time_seconds")
    t0, t1 = (start + s.total("mockpool_time_pool_seconds") for s in (middle, second))
    lag = max(s.peak("mockpool_clock_lag_pool_seconds") for s in (middle, second))
    slack = (max(middle.span, second.span) + 1.0) * scale + lag

    def ended(lo: float, hi: float) -> int:
        return sum(1 for j in done if lo <= j.get_value("CompletionDate", 0) <= hi)

    fewest, most = ended(t0 + slack, t1 - slack), ended(t0 - slack, t1 + slack)
    counted = second.total(completed, state="Completed") - middle.total(
        completed, state="Completed"
    )
    assert counted > 0 and fewest <= counted <= most, (fewest, counted, most, slack)

    # the server is gone with the pool
    with pytest.raises(OSError):
        Scrape(f"http://127.0.0.1:{spec.metrics_port}/metrics")
