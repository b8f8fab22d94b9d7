"""Every `status` and `userprio` flag of issue 41 on one live pool (the quiet pool: one
2-cpu partitionable machine, alice's three idle jobs and bob's held one), its output
compared with golden files in tests/data/golden/status/ after dates and times are
normalised. MOCKPOOL_UPDATE_GOLDEN=1 rewrites the files."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from builders.live import QuietPool, run_cli

from mockpool.auth import Role
from mockpool.pool.serve import token_path

GOLDEN = Path(__file__).resolve().parent.parent / "data" / "golden" / "status"

_DATE = re.compile(r"\b\d{1,2}/\d{1,2}(/\d{4})? +\d\d:\d\d\b")
_SPAN = re.compile(r"\b\d+\+\d\d:\d[\d:]*")  # a span cut short too (20785+08:4)
_UNIX = re.compile(r"\b1[6-9]\d{8}\b")


# the collector's own ad refreshes its totals every 900 pool seconds (45 s here): when
# the test runs they are 0 or 1
_COUNTS = re.compile(r"(?<= )\d+(?= |$)", re.M)
VOLATILE = {"collector"}


def normalise(text: str) -> str:
    """Dates, durations and Unix times vary run to run; their places do not."""
    text = _DATE.sub(lambda m: "M/D hh:mm".ljust(len(m[0])), text)
    text = _SPAN.sub(lambda m: "D+hh:mm".rjust(len(m[0])), text)
    return _UNIX.sub("UNIXTIME", text)


CASES = {
    "name_machine": ("status", "exec0001"),
    "name_slot": ("status", "slot1@exec0001"),
    "name_unknown": ("status", "nosuchhost"),
    "compact": ("status", "-compact"),
    "compact_avail": ("status", "-compact", "-avail"),
    "compact_state": ("status", "-compact", "-state"),
    "compact_server": ("status", "-compact", "-server"),
    "compact_claimed": ("status", "-compact", "-claimed"),
    "total": ("status", "-total"),
    "total_schedd": ("status", "-schedd", "-total"),
    "claimed": ("status", "-claimed"),
    "avail": ("status", "-avail"),
    "run": ("status", "-run"),
    "state": ("status", "-state"),
    "server": ("status", "-server"),
    "master": ("status", "-master"),
    "startd": ("status", "-startd"),
    "collector": ("status", "-collector"),
    "wide": ("status", "-wide"),
    "sort": ("status", "-any", "-sort", "MyType", "-sort", "Name"),
    "af": ("status", "-af", "Name", "State", "Cpus"),
    "af_headings": ("status", "-af:h", "Name", "Memory/1024"),
    "format": ("status", "-format", "%s=", "Name", "-format", "%d\\n", "Cpus"),
    "userprio_af": ("userprio", "-allusers", "-af", "Name", "Priority"),
    "userprio_all": ("userprio", "-allusers", "-all"),
    "userprio_usage": ("userprio", "-allusers", "-usage"),
    "userprio_priority": ("userprio", "-allusers", "-priority"),
    "userprio_quotas": ("userprio", "-allusers", "-quotas"),
    "userprio_grouprollup": ("userprio", "-allusers", "-grouprollup"),
}


@pytest.fixture(scope="module")
def pool(quiet_pool: QuietPool) -> QuietPool:
    """The quiet pool once the negotiator has seen alice, the one idle submitter (her
    accountant record; bob's one job is held)."""
    import time

    deadline = time.monotonic() + 60
    while True:
        rc, out, _ = run_cli(quiet_pool.home, "userprio", "-allusers")
        if rc == 0 and "alice@" in out:
            return quiet_pool
        assert time.monotonic() < deadline, f"no accountant record for alice: {out}"
        time.sleep(0.2)


def test_every_flag_matches_its_golden_output(pool: QuietPool) -> None:
    update = bool(os.environ.get("MOCKPOOL_UPDATE_GOLDEN"))
    if update:
        GOLDEN.mkdir(parents=True, exist_ok=True)
    failed = []
    for name, args in CASES.items():
        rc, out, err = run_cli(pool.home, *args)
        assert rc == 0, f"{args}: {err}"
        got = normalise(out)
        if name in VOLATILE:
            got = _COUNTS.sub(lambda m: "N".rjust(len(m[0])), got)
        path = GOLDEN / f"{name}.txt"
        if update:
            path.write_text(got)
        elif got != path.read_text():
            failed.append(f"{' '.join(args)}:\n{got}")
    assert not failed, "\n".join(failed)


def test_names_select_by_name_or_machine(pool: QuietPool) -> None:
    """condor_status NAME: Name == NAME || Machine == NAME (ClassAd ==, any case)."""
    by_machine = run_cli(pool.home, "status", "EXEC0001")[1]
    by_slot = run_cli(pool.home, "status", "slot1@exec0001")[1]
    assert "slot1@exec0001" in by_machine and normalise(by_machine) == normalise(by_slot)
    assert run_cli(pool.home, "status", "nosuchhost")[1] == ""


def test_limit_keeps_the_first_ads(pool: QuietPool) -> None:
    rows = run_cli(pool.home, "status", "-any", "-limit", "3")[1].splitlines()[2:]
    assert len(rows) == 3
    assert run_cli(pool.home, "status", "-any", "-limit", "-1")[0] == 2


def test_json_and_total_with_compact(pool: QuietPool) -> None:
    rc, out, _ = run_cli(pool.home, "status", "-json")
    assert rc == 0 and [a["Name"] for a in json.loads(out)] == ["slot1@exec0001"]
    rc, out, err = run_cli(pool.home, "status", "-compact", "-total")
    assert "ignoring -compact option because -total option is also set" in err
    assert out == run_cli(pool.home, "status", "-total")[1]


def test_userprio_takes_a_token_and_resets_all(pool: QuietPool) -> None:
    read = token_path(pool.home, Role.READ)
    rc, out, _ = run_cli(pool.home, "userprio", "-allusers", "--token", str(read))
    assert rc == 0 and "alice@" in out
    rc, _, err = run_cli(pool.home, "userprio", "-resetall", "--token", str(read))
    assert rc != 0 and "admin" in err.lower()  # changing the accountant is an admin's
    rc, out, _ = run_cli(pool.home, "userprio", "-resetall")
    assert (rc, out) == (0, "The accumulated usage was reset for all users\n")
