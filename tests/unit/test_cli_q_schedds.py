"""Which schedds `q` asks, and how it prints several: without flags the first by name
(condor_q asks the local schedd), -global every one (a `-- Schedd:` block each, by
name), -submitter those holding that submitter's ad (`-- Submitter:` blocks). Run
through cmd_q with a stand-in client over three schedds' queues (no pool)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest

from mockpool.classad import ClassAd, evaluate, parse_ad
from mockpool.cli import job_cmds
from mockpool.cli.main import build_parser

BASE = 1732269600  # 2024-11-22 10:00:00 UTC


def _job(cluster: int, owner: str, status: int = 1) -> ClassAd:
    return parse_ad(
        f'[ ClusterId = {cluster}; ProcId = 0; Owner = "{owner}"; JobStatus = {status};'
        f' QDate = {BASE}; Cmd = "/bin/sleep"; Args = "5" ]'
    )


QUEUES = {  # three schedds, given out of name order
    "schedd3": [_job(1, "carol")],
    "schedd1": [_job(1, "alice"), _job(2, "bob", 5)],
    "schedd2": [],
}


class FakeClient:
    async def query(
        self, ad_type: str, constraint: str = "", projection: Any = ()
    ) -> list[ClassAd]:
        if ad_type == "Scheduler":
            return [
                parse_ad(f'[ Name = "{n}"; MyAddress = "<10.0.0.{n[-1]}:9618>" ]') for n in QUEUES
            ]
        if ad_type == "Submitter":
            return [
                parse_ad(
                    f'[ Name = "{j.get_value("Owner")}@pool"; ScheddName = "{n}";'
                    f' ScheddIpAddr = "<10.0.0.{n[-1]}:9618>"; Machine = "host{n[-1]}" ]'
                )
                for n, jobs in QUEUES.items()
                for j in jobs
            ]
        return []

    async def schedd_address(self, name: str = "") -> tuple[str, str]:
        first = name or sorted(QUEUES)[0]
        return first, f"10.0.0.{first[-1]}:9618"

    async def jobs(
        self, constraint: str = "", projection: Any = (), *, schedd: str = "", **_: Any
    ) -> tuple[list[ClassAd], ClassAd]:
        jobs = QUEUES[schedd]
        return [j for j in jobs if not constraint or evaluate(constraint, j) is True], ClassAd()


@pytest.fixture(autouse=True)
def fake_pool(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    monkeypatch.setattr(
        job_cmds, "_with_client", lambda ns, role, body: asyncio.run(body(FakeClient(), {}))
    )
    monkeypatch.setattr(job_cmds, "_date_now", lambda info: BASE + 60)
    monkeypatch.setattr(job_cmds, "_width", lambda piped: piped)
    yield
    monkeypatch.undo()
    time.tzset()


def q(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    ns = build_parser().parse_args(["q", *args])
    assert ns.func(ns) == 0
    return capsys.readouterr().out


def headers(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("-- ")]


def test_plain_q_asks_the_first_schedd_by_name_and_names_its_sinful(
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = q(capsys, "-nobatch")
    assert headers(out) == ["-- Schedd: schedd1 : <10.0.0.1:9618> @ 11/22/24 10:01:00"]
    assert "alice" in out and "carol" not in out


def test_global_prints_a_block_per_schedd_in_name_order(capsys: pytest.CaptureFixture[str]) -> None:
    out = q(capsys, "-global", "-nobatch")
    assert headers(out) == [
        f"-- Schedd: schedd{n} : <10.0.0.{n}:9618> @ 11/22/24 10:01:00" for n in (1, 2, 3)
    ]
    assert out.count("Total for query") == 3
    assert "Total for query: 0 jobs" in out.split("-- Schedd: schedd3")[0].split("schedd2")[1]


def test_global_af_has_no_headers_and_json_is_one_list(capsys: pytest.CaptureFixture[str]) -> None:
    assert q(capsys, "-global", "-af", "Owner", "ClusterId") == "alice 1\nbob 2\ncarol 1\n"
    out = q(capsys, "-global", "-json", "-attributes", "Owner")
    assert out == (
        '[\n{\n  "Owner": "alice"\n}\n,\n{\n  "Owner": "bob"\n}\n,\n{\n  "Owner": "carol"\n}\n]\n'
    )


def test_submitter_asks_the_schedds_with_its_ad(capsys: pytest.CaptureFixture[str]) -> None:
    out = q(capsys, "-submitter", "carol")
    assert headers(out) == [
        "-- Submitter: carol@pool : <10.0.0.3:9618> : host3 @ 11/22/24 10:01:00"
    ]
    assert "carol" in out and "alice" not in out


def test_submitter_and_name_together_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    ns = build_parser().parse_args(["q", "-submitter", "carol", "-name", "schedd1"])
    assert ns.func(ns) == 2
    assert "cannot query both" in capsys.readouterr().err
