"""Write the small job history that the trace-replay tests ship with (tests/data/trace/).

    python scripts/make_trace.py [--seed 11] [--jobs 20] [--out tests/data/trace]

Writes the same jobs three ways: ``history.json`` as ``condor_history -json`` prints it
(a JSON array, attributes sorted, expressions as ``"\\/Expr(...)\\/"``), ``history.long``
as ``condor_history -long`` prints it (``Name = value`` lines, a blank line after each ad)
and ``history.swf`` in the Standard Workload Format (18 fields, ``;`` header). Everything
is drawn from ``--seed`` (numpy's default generator), so the files are the same on every
run; a unit test regenerates them and compares.

The jobs: three owners (alice with no group, bob in ``group_a`` named by AcctGroup, carol
in ``group_b`` named only by AccountingGroup), arrivals about 15 s apart with some jobs
sharing a cluster and a QDate, durations of 30 to 120 s, 1 or 2 cpus, memory as a number,
disk as HTCondor's default expression (``RequestDisk = DiskUsage``) on some jobs, one job
without RemoteWallClockTime (its run time is CompletionDate - JobCurrentStartDate), one job
removed before it ran and one removed while running (JobStatus 3).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

EPOCH = 1_700_000_000  # the trace's first QDate
OWNERS = {"alice": (1, ""), "bob": (2, "group_a"), "carol": (3, "group_b")}
GIDS = {"": -1, "group_a": 1, "group_b": 2}
SCHEDD = "submit.example.org"


def make_jobs(seed: int, n: int) -> list[dict[str, object]]:
    rng = np.random.default_rng(seed)
    jobs: list[dict[str, object]] = []
    t = EPOCH
    cluster = 100
    while len(jobs) < n:
        cluster += 1
        t += int(rng.integers(5, 26))
        owner = ["alice", "bob", "carol"][int(rng.integers(0, 3))]
        procs = int(rng.choice([1, 1, 2]))
        duration = int(rng.choice([30, 45, 60, 90, 120]))
        cpus = int(rng.choice([1, 1, 2]))
        memory = int(rng.choice([256, 512, 1024]))
        for proc in range(min(procs, n - len(jobs))):
            wait = int(rng.integers(0, 30))
            jobs.append(
                {
                    "ClusterId": cluster,
                    "ProcId": proc,
                    "Owner": owner,
                    "QDate": t,
                    "start": t + wait,
                    "duration": duration,
                    "cpus": cpus,
                    "memory": memory,
                    "disk_expr": bool(rng.integers(0, 2)),
                    "disk_usage": int(rng.integers(100, 5000)),
                }
            )
    # two removals: the 6th job before it ran, the 13th while it ran
    jobs[5]["removed_idle"] = True
    jobs[12]["removed_running"] = True
    jobs[8]["no_wallclock"] = True
    return jobs


def job_ad(j: dict[str, object]) -> dict[str, object]:
    """The job's history ad; expressions as HTCondor's JSON writes them (``/Expr(...)/``)."""
    owner = str(j["Owner"])
    group = OWNERS[owner][1]
    qdate, start, duration = int(j["QDate"]), int(j["start"]), int(j["duration"])  # type: ignore[call-overload]
    ad: dict[str, object] = {
        "Args": str(duration),
        "ClusterId": j["ClusterId"],
        "Cmd": "/bin/sleep",
        "DiskUsage": j["disk_usage"],
        "GlobalJobId": f"{SCHEDD}#{j['ClusterId']}.{j['ProcId']}#{qdate}",
        "JobUniverse": 5,
        "Owner": owner,
        "ProcId": j["ProcId"],
        "QDate": qdate,
        "RequestCpus": j["cpus"],
        "RequestDisk": "/Expr(DiskUsage)/" if j["disk_expr"] else j["disk_usage"],
        "RequestMemory": j["memory"],
        "User": f"{owner}@example.org",
    }
    if owner == "bob":
        ad |= {"AcctGroup": group, "AcctGroupUser": owner, "AccountingGroup": f"{group}.{owner}"}
    elif owner == "carol":
        ad["AccountingGroup"] = f"{group}.{owner}"
    if j.get("removed_idle"):
        ad |= {
            "JobStatus": 3,
            "LastJobStatus": 1,
            "EnteredCurrentStatus": qdate + 20,
            "RemoteWallClockTime": 0.0,
            "RemoveReason": f"via condor_rm (by user {owner})",
        }
    elif j.get("removed_running"):
        ad |= {
            "JobStatus": 3,
            "LastJobStatus": 2,
            "JobStartDate": start,
            "JobCurrentStartDate": start,
            "EnteredCurrentStatus": start + duration // 2,
            "RemoteWallClockTime": float(duration // 2),
            "RemoveReason": f"via condor_rm (by user {owner})",
        }
    else:
        ad |= {
            "JobStatus": 4,
            "LastJobStatus": 2,
            "JobStartDate": start,
            "JobCurrentStartDate": start,
            "CompletionDate": start + duration,
            "EnteredCurrentStatus": start + duration,
            "ExitCode": 0,
            "RemoteWallClockTime": float(duration),
        }
        if j.get("no_wallclock"):
            del ad["RemoteWallClockTime"]
    return dict(sorted(ad.items(), key=lambda kv: kv[0].lower()))


def to_json(ads: list[dict[str, object]]) -> str:
    """As condor_history -json: ``[``, the ads (2-space indent) separated by ``,`` lines, ``]``."""
    body = "\n,\n".join(json.dumps(ad, indent=2) for ad in ads)
    # HTCondor escapes the slashes of its expression marker
    return "[\n" + body.replace('"/Expr(', '"\\/Expr(').replace(')/"', ')\\/"') + "\n]\n"


def _old_value(v: object) -> str:
    if isinstance(v, str):
        if v.startswith("/Expr(") and v.endswith(")/"):
            return v[6:-2]
        return json.dumps(v)
    if isinstance(v, float):
        return repr(v)
    return str(v)


def to_long(ads: list[dict[str, object]]) -> str:
    """As condor_history -long: ``Name = value`` lines, a blank line after each ad."""
    return "".join("".join(f"{k} = {_old_value(v)}\n" for k, v in ad.items()) + "\n" for ad in ads)


def to_swf(jobs: list[dict[str, object]], seed: int) -> str:
    t0 = int(jobs[0]["QDate"])  # type: ignore[call-overload]
    lines = [
        "; Version: 2.2",
        f"; Computer: mockpool test trace (scripts/make_trace.py --seed {seed})",
        "; UnixStartTime: " + str(t0),
        f"; MaxJobs: {len(jobs)}",
        f"; MaxRecords: {len(jobs)}",
        "; Note: the jobs of history.json; user ids alice=1 bob=2 carol=3, groups a=1 b=2",
        ";",
    ]
    for n, j in enumerate(jobs, 1):
        owner = str(j["Owner"])
        uid, group = OWNERS[owner]
        qdate, start, duration = int(j["QDate"]), int(j["start"]), int(j["duration"])  # type: ignore[call-overload]
        cpus, memory = int(j["cpus"]), int(j["memory"])  # type: ignore[call-overload]
        wait, run, status = start - qdate, duration, 1
        if j.get("removed_idle"):
            wait, run, status = 20, -1, 5
        elif j.get("removed_running"):
            run, status = duration // 2, 5
        fields = [n, qdate - t0, wait, run, cpus, -1, -1, cpus, -1]
        fields += [memory * 1024 // cpus, status, uid, GIDS[group], 1, 1, -1, -1, -1]
        lines.append(" ".join(f"{f:>6}" for f in fields))
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--jobs", type=int, default=20)
    ap.add_argument("--out", type=Path, default=Path("tests/data/trace"))
    args = ap.parse_args()
    jobs = make_jobs(args.seed, args.jobs)
    ads = [job_ad(j) for j in jobs]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "history.json").write_text(to_json(ads))
    (args.out / "history.long").write_text(to_long(ads))
    (args.out / "history.swf").write_text(to_swf(jobs, args.seed))
    print(f"wrote {len(ads)} jobs to {args.out}/history.json, history.long and history.swf")


if __name__ == "__main__":
    main()
