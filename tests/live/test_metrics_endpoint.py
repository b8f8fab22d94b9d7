"""A live pool serves Prometheus metrics on the port its spec names; they move."""

from __future__ import annotations

import socket
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


def _scrape(url: str) -> dict[str, float]:
    with urllib.request.urlopen(url, timeout=30) as r:
        text = r.read().decode()
    out: dict[str, float] = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[s.name] = out.get(s.name, 0.0) + s.value
    return out


def test_the_counters_move(ray_session: None) -> None:
    spec = load_spec(SPEC)
    spec.time_scale = 30
    spec.metrics_port = _free_port()
    with Pool(spec) as pool:
        assert pool.metrics_url == f"http://127.0.0.1:{spec.metrics_port}/metrics"
        first = _scrape(pool.metrics_url)
        assert pool.wait(lambda: len(pool.jobs("JobStatus == 4", history=True)) == 15, timeout=60)
        second = _scrape(pool.metrics_url)
    assert second["mockpool_negotiation_cycles_total"] > first["mockpool_negotiation_cycles_total"]
    assert second["mockpool_job_exits_total"] == 15
    assert second["mockpool_negotiation_matches_total"] >= 10  # claim reuse runs the rest
    assert "mockpool_slots" in second and "mockpool_clock_lag_seconds" in second
    # the server is gone with the pool
    with pytest.raises(OSError):
        _scrape(f"http://127.0.0.1:{spec.metrics_port}/metrics")
