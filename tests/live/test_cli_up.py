"""The CLI against a pool started with `mockpool up`: submit, q, status, hold, release,
rm, history, down — each a separate process talking gRPC with the pool's token."""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mockpool.pool.processes import Recorded, start_time

pytestmark = [pytest.mark.live, pytest.mark.slow]

SPEC = Path(__file__).resolve().parents[2] / "examples" / "pslot.toml"


def mockpool(*args: str, pool: Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, MOCKPOOL_HOME=str(pool))
    proc = subprocess.run(
        [sys.executable, "-m", "mockpool.cli.main", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
    )
    if check and proc.returncode != 0:
        raise AssertionError(
            f"mockpool {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
        )
    return proc


@pytest.fixture(scope="module")
def up_pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("pool")
    out = mockpool("up", str(SPEC), pool=home)
    assert "Pool up" in out.stdout
    try:
        yield home
    finally:
        if (home / "pool.json").exists():  # not already downed by the last test
            down = mockpool("down", pool=home, check=False)
            assert down.returncode == 0, down.stderr
        assert not (home / "pool.json").exists()


def test_secret_and_tokens_are_owner_only(up_pool: Path) -> None:
    assert stat.S_IMODE(up_pool.stat().st_mode) == 0o700
    assert stat.S_IMODE((up_pool / "tokens").stat().st_mode) == 0o700
    for f in ("secret", "tokens/read", "tokens/submit", "tokens/admin"):
        assert stat.S_IMODE((up_pool / f).stat().st_mode) == 0o600, f
    info = json.loads((up_pool / "pool.json").read_text())
    assert stat.S_IMODE(Path(info["state_dir"]).stat().st_mode) == 0o700
    queues = list(Path(info["state_dir"]).glob("schedd/*.sqlite*"))
    assert queues and all(stat.S_IMODE(q.stat().st_mode) == 0o600 for q in queues)


def test_token_create_and_users_act_only_on_their_own_jobs(up_pool: Path, tmp_path: Path) -> None:
    carol, dave = tmp_path / "carol.token", tmp_path / "dave.token"
    for user, path in (("carol", carol), ("dave", dave)):
        out = mockpool(
            "token", "create", "--user", user, "--role", "submit", "--out", str(path), pool=up_pool
        )
        assert f"Wrote a submit token for {user}" in out.stdout
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    sub = tmp_path / "one.sub"
    sub.write_text("executable = /bin/sleep\narguments = 100000\nrequest_cpus = 1\nqueue 1\n")
    cluster = (
        mockpool("submit", str(sub), "--token", str(carol), pool=up_pool)
        .stdout.split()[-1]
        .rstrip(".")
    )
    assert "carol" in mockpool("q", cluster, pool=up_pool).stdout
    # the invoking user's own submit token may not submit as carol
    refused = mockpool("submit", str(sub), "--owner", "carol", pool=up_pool, check=False)
    assert refused.returncode != 0 and "may not submit jobs as 'carol'" in refused.stderr
    # dave may not remove carol's job (condor_rm's words); carol may
    denied = mockpool("rm", f"{cluster}.0", "--token", str(dave), pool=up_pool, check=False)
    assert (
        denied.returncode == 1 and f"Permission denied to remove job {cluster}.0" in denied.stderr
    )
    assert (
        f"Job {cluster}.0 marked for removal"
        in mockpool("rm", f"{cluster}.0", "--token", str(carol), pool=up_pool).stdout
    )
    bad = mockpool("token", "create", "--role", "submit", pool=up_pool, check=False)
    assert bad.returncode == 2 and "give --user" in bad.stderr


def test_submit_q_status_hold_release_rm_history(up_pool: Path, tmp_path: Path) -> None:
    sub = tmp_path / "long.sub"
    sub.write_text("executable = /bin/sleep\narguments = 100000\nrequest_cpus = 1\nqueue 2\n")
    admin = str(up_pool / "tokens" / "admin")  # the queue superuser may submit as carol
    out = mockpool("submit", str(sub), "--owner", "carol", "--token", admin, pool=up_pool).stdout
    assert "2 job(s) submitted to cluster" in out
    cluster = out.strip().split()[-1].rstrip(".")

    q = mockpool("q", pool=up_pool).stdout
    assert "-- Schedd: schedd1" in q and "carol" in q and "Total for query" in q
    nobatch = mockpool("q", "-nobatch", cluster, pool=up_pool).stdout
    assert f"{cluster}.0" in nobatch and f"{cluster}.1" in nobatch and "sleep 100000" in nobatch

    status = mockpool("status", pool=up_pool).stdout
    assert "slot1@exec0001" in status and "Total" in status
    long = mockpool("status", "-long", pool=up_pool).stdout
    assert 'Name = "slot1@exec0001"' in long
    assert "schedd1" in mockpool("status", "-schedd", pool=up_pool).stdout
    assert "carol@mockpool" in mockpool("status", "-submitters", pool=up_pool).stdout
    assert "negotiator" in mockpool("status", "-negotiator", pool=up_pool).stdout.lower()

    assert (
        f"Job {cluster}.0 held"
        in mockpool("hold", f"{cluster}.0", "--token", admin, pool=up_pool).stdout
    )
    held = mockpool("q", "-long", f"{cluster}.0", pool=up_pool).stdout
    assert "JobStatus = 5" in held and "HoldReason" in held
    released = mockpool("release", f"{cluster}.0", "--token", admin, pool=up_pool).stdout
    assert f"Job {cluster}.0 released" in released
    out = mockpool("rm", cluster, "--token", admin, pool=up_pool).stdout
    assert out == f"All jobs in cluster {cluster} have been marked for removal\n"

    # condor_submit -terse / -batch-name / -queue / -append, and a constraint's one line
    bare = tmp_path / "bare.sub"
    bare.write_text("executable = /bin/sleep\narguments = 100000\n")
    terse = mockpool(
        "submit",
        str(bare),
        "-terse",
        "-batch-name",
        "nightly",
        "-queue",
        "2",
        "-append",
        "+Tag = 7",
        "--owner",
        "carol",
        "--token",
        admin,
        pool=up_pool,
    ).stdout
    c2 = terse.split(".", 1)[0]
    assert terse == f"{c2}.0 - {c2}.1\n"
    batch = mockpool("q", "-long", f"{c2}.1", pool=up_pool).stdout
    assert 'JobBatchName = "nightly"' in batch and "Tag = 7" in batch
    out = mockpool("hold", "-constraint", f"ClusterId == {c2}", "--token", admin, pool=up_pool)
    assert out.stdout == f"All jobs matching constraint (ClusterId == {c2}) have been held\n"

    unknown = mockpool("rm", "999.0", pool=up_pool, check=False)
    assert unknown.returncode == 1 and "999.0" in unknown.stderr


def test_bad_submit_file_names_line(up_pool: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.sub"
    bad.write_text("executable = /bin/sleep\nrequest_cpus = -2\nqueue\n")
    proc = mockpool("submit", str(bad), pool=up_pool, check=False)
    assert proc.returncode != 0 and f"{bad}:2" in proc.stderr


def test_history_shows_removed_jobs(up_pool: Path) -> None:
    hist = mockpool("history", pool=up_pool).stdout
    assert "carol" in hist and " X " in hist


def test_tools_without_a_pool_say_so(tmp_path: Path) -> None:
    proc = mockpool("q", pool=tmp_path, check=False)
    assert proc.returncode != 0 and "no pool is up" in proc.stderr


def test_submit_reads_item_files_on_the_users_side(up_pool: Path, tmp_path: Path) -> None:
    (tmp_path / "secs.txt").write_text("100000\n200000\n")
    (tmp_path / "job.sub").write_text(
        "executable = /bin/sleep\narguments = $(t)\nhold = true\nqueue t from secs.txt\n"
    )
    env = dict(os.environ, MOCKPOOL_HOME=str(up_pool))
    admin = str(up_pool / "tokens" / "admin")  # the queue superuser submits as dora
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "mockpool.cli.main",
            "submit",
            "job.sub",
            "--owner",
            "dora",
            "--token",
            admin,
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=240,
    )
    assert out.returncode == 0, out.stderr
    cluster = out.stdout.strip().split()[-1].rstrip(".")
    long = mockpool("q", "-long", cluster, pool=up_pool).stdout
    assert "MockDuration = 100000" in long and "MockDuration = 200000" in long
    assert long.count("JobStatus = 5") == 2 and "HoldReasonCode = 15" in long
    # an owner argument cannot widen the query; a non-id cannot reach rm
    evil = mockpool("q", 'x" || true || "', pool=up_pool, check=False)
    assert evil.returncode == 2 and "is not a" in evil.stderr
    assert mockpool("rm", "1 || true", pool=up_pool, check=False).returncode == 2
    mockpool("rm", cluster, "--token", admin, pool=up_pool)


def test_submit_over_max_jobs_per_submission(up_pool: Path, tmp_path: Path) -> None:
    sub = tmp_path / "many.sub"
    sub.write_text("executable = /bin/sleep\narguments = 1\nqueue 20001\n")
    proc = mockpool("submit", str(sub), pool=up_pool, check=False)
    assert proc.returncode != 0
    assert "Number of submitted jobs would exceed MAX_JOBS_PER_SUBMISSION" in proc.stderr


def test_analyze_explains_a_job_that_cannot_match(up_pool: Path, tmp_path: Path) -> None:
    sub = tmp_path / "big.sub"
    sub.write_text("executable = /bin/sleep\narguments = 60\nrequest_memory = 100GB\nqueue\n")
    admin = str(up_pool / "tokens" / "admin")  # the queue superuser submits as dave
    out = mockpool("submit", str(sub), "--owner", "dave", "--token", admin, pool=up_pool).stdout
    cluster = out.strip().split()[-1].rstrip(".")

    def analysis() -> str:
        return mockpool("analyze", f"{cluster}.0", pool=up_pool).stdout

    deadline = time.monotonic() + 120
    text = analysis()
    while "Reason for last match failure" not in text and time.monotonic() < deadline:
        time.sleep(0.5)
        text = analysis()
    assert "Reason for last match failure: no match found\n" in text
    assert re.search(r"-- Schedd: \S+ : <[^>]+> @ ", text), text  # condor_q's header
    assert f"The Requirements expression for job {cluster}.000 is\n" in text
    assert "    RequestMemory = 102400\n" in text
    assert "Step   Matched  Condition\n----- --------- ---------\n" in text
    assert "           0  TARGET.Memory >= RequestMemory\n" in text
    assert "Run analysis summary ignoring user priority.  Of 1 slots on 1 machines," in text
    assert "      1 slots are rejected by your job's requirements\n" in text
    assert "   No machines matched the job's constraints\n" in text
    mockpool("rm", cluster, "--token", admin, pool=up_pool)


def test_analyze_unknown_job_is_a_clear_error(up_pool: Path) -> None:
    proc = mockpool("analyze", "999.0", pool=up_pool, check=False)
    assert proc.returncode == 1 and "analyze: job 999.0 is not in the queue of" in proc.stderr
    proc = mockpool("analyze", "bogus", pool=up_pool, check=False)
    assert proc.returncode == 2 and "'bogus' is not a job id" in proc.stderr


def test_userprio_table_and_setters(up_pool: Path) -> None:
    def alice_charged() -> bool:
        return "alice@mockpool" in mockpool("userprio", "-allusers", pool=up_pool).stdout

    deadline = time.monotonic() + 60
    while not alice_charged():  # the demo's jobs are charged at the first cycle
        assert time.monotonic() < deadline, "alice never showed in userprio"
    out = mockpool("userprio", "-allusers", pool=up_pool).stdout
    lines = out.splitlines()
    assert lines[0].startswith("Last Priority Update: ")
    assert lines[2].startswith("User Name") and "Priority" in lines[2]
    assert any(line.startswith("Number of users: ") for line in lines)
    set_out = mockpool("userprio", "-setfactor", "alice@mockpool", "25", pool=up_pool).stdout
    assert set_out == "The priority factor of alice@mockpool was set to 25.000000\n"
    assert "     25.00 " in mockpool("userprio", "-allusers", pool=up_pool).stdout
    bad = mockpool("userprio", "-setfactor", "alice@mockpool", "0.5", pool=up_pool, check=False)
    assert bad.returncode != 0 and ">= 1" in bad.stderr
    bad = mockpool("userprio", "-setprio", "alice", "5", pool=up_pool, check=False)
    assert bad.returncode != 0 and "user@domain" in bad.stderr


def test_status_any_shows_every_ad_with_the_accounting_ads(up_pool: Path) -> None:
    # the negotiator publishes Accounting ads to the collector, as HTCondor's does, so a
    # query over every ad type sees them beside the daemons' own ads
    deadline = time.monotonic() + 60
    out = mockpool("status", "-any", pool=up_pool).stdout
    while "Accounting" not in out:
        assert time.monotonic() < deadline, out
        time.sleep(0.5)
        out = mockpool("status", "-any", pool=up_pool).stdout
    lines = out.splitlines()
    assert lines[0].split() == ["MyType", "TargetType", "Name"] and lines[1] == ""
    types = {line.split()[0] for line in lines[2:] if line.strip()}
    assert {"Accounting", "Machine", "Negotiator", "Scheduler", "Collector"} <= types
    assert "MachinePrivate" not in types  # claim ids never leave the collector this way
    assert any(line.startswith("Accounting ") and "alice@mockpool" in line for line in lines)
    long = mockpool(
        "status", "-any", "-long", "-constraint", 'MyType == "Accounting"', pool=up_pool
    ).stdout
    assert 'MyType = "Accounting"' in long and "PriorityFactor = " in long


def test_down_after_the_up_process_was_killed_ends_what_it_started(
    tmp_path: Path, listeners: Callable[[set[int]], list[Any]]
) -> None:
    home = tmp_path / "home"
    mockpool("up", str(SPEC), pool=home)
    info = json.loads((home / "pool.json").read_text())
    recorded = [Recorded.from_json(r) for r in info["processes"]]
    names = {r.name for r in recorded}
    assert {"gcs_server", "raylet"} <= names, names
    # Everything the pool listens on is loopback (Ray's servers included).
    sockets = listeners({info["pid"]} | {r.pid for r in recorded})
    assert {name for _, name, _, _, _ in sockets} >= {"gcs_server", "raylet"}
    assert [s for s in sockets if not s[4]] == []
    ray_dir = Path(info["ray"]["temp_dir"])
    assert ray_dir.is_dir() and Path(info["state_dir"]).is_dir()

    os.kill(info["pid"], signal.SIGKILL)
    assert wait_for(lambda: start_time(info["pid"]) is None, timeout=30)
    down = mockpool("down", pool=home)
    assert f"Pool process {info['pid']} was gone" in down.stdout
    assert wait_for(lambda: not any(r.alive() for r in recorded), timeout=60), [
        r for r in recorded if r.alive()
    ]
    left = sorted(p.name for p in home.iterdir())
    assert left == ["NegotiatorLog", "events.jsonl", "serve.log"], left  # logs stay
    assert not ray_dir.exists() and not Path(info["state_dir"]).exists()
    # a second down finds no pool
    again = mockpool("down", pool=home, check=False)
    assert again.returncode != 0 and "no pool is up" in again.stderr


def test_down_writes_the_output_folder_that_check_and_report_read(
    up_pool: Path, tmp_path: Path
) -> None:
    # last of the module's tests on up_pool: it takes the pool down
    out = tmp_path / "results"
    down = mockpool("down", "--out", str(out), pool=up_pool)
    assert f"Output written to {out}/" in down.stdout and "Pool down" in down.stdout
    for name in ("events.jsonl", "NegotiatorLog", "summary.json", "metrics.prom"):
        assert (out / name).is_file(), name
    assert (out / "ads" / "jobs.ads").is_file() and (out / "ads" / "slots.ads").is_file()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["jobs_submitted"] > 0 and summary["matches"] > 0
    checked = mockpool("check", str(out), pool=up_pool)
    assert "invariants hold" in checked.stdout, checked.stdout
    report = mockpool("report", str(out), pool=up_pool)
    assert (out / "report.html").is_file(), report.stdout
    assert not (up_pool / "pool.json").exists() and not (up_pool / "down.json").exists()


def wait_for(cond: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True
