"""The output folder of ``mockpool run`` and its ``summary.json``.

Every key, the fair-share and preemption measures and the report are defined in
``docs/measures.md`` (this table is its short form; ``spec`` echoes the run's spec).

Folder layout (``--out DIR``):

- ``events.jsonl``: one event per line, sorted by pool time: ``{"t": <pool s>, "daemon":
  <name>, "kind": <kind>, ...ids}``. Claim ids appear redacted (``<addr>#<birthday>#<seq>#...``).
- ``NegotiatorLog``: the negotiator's log in HTCondor's format.
- ``ads/``: final ads in old ClassAd syntax, as ``condor_status -long`` and ``condor_q
  -long`` print them (sorted attributes, private ones left out, a blank line after each): ``slots.ads``, ``schedds.ads``, ``submitters.ads``,
  ``negotiator.ads``, ``collector.ads``, ``jobs.ads`` (queue) and ``history.ads``.
- ``metrics.prom``: the pool's Prometheus metrics at the end, in the text format
  (``services/pool/metrics.py``; a live pool with ``metrics_port`` serves them too).
- ``summary.json``, with these keys:

  ===================== ===========================================================
  ``pool_seconds``      pool time when the run stopped
  ``start_date``        the date (Unix time) of pool time 0: every date in the ads
                        (QDate, ...) is it plus pool seconds (a virtual run's is fixed:
                        2026-01-01 00:00:00 UTC)
  ``real_seconds``      wall-clock run time (start of pool time 0 to stop)
  ``time_scale``        pool seconds per real second asked for
  ``achieved_scale``    pool seconds actually covered per real second
  ``machines``          number of machines; ``slots``: slot ads at the end
  ``total_cpus``        sum of the machines' TotalCpus
  ``cycles``            negotiation cycles run
  ``matches``           matches made, over all cycles
  ``jobs``              job counts by state name (Idle, Running, Removed, Completed,
                        Held), queue and history together
  ``jobs_submitted``    jobs queued by the workload; ``workload_errors``: refused items
  ``down_at_end``       daemons down when the run stopped (a schedd's jobs then come
                        from its queue file; with the collector down, no ads)
  ``cpu_utilisation``   busy cpu-seconds / (total cpus x pool seconds): Σ over jobs of
                        run time x RequestCpus (run time: RemoteWallClockTime, plus the
                        current run of a running job)
  ``slot_states``       final slot ads by State
  ``lag``               per actor: wakeups and mean/max lateness of its loops in pool
                        seconds (its daemons' timers and, live, a probe every pool
                        second; a pool that cannot keep up shows it here)
  ``peak_rss_mb``       per actor and in total: peak resident memory
  ``negotiator``        the last cycle's statistics, from the negotiator ad
  ``measures``          the run's measures (:mod:`.measures`), keys below
  ===================== ===========================================================

  ``measures`` (pool seconds throughout; a statistics block is ``count``, ``mean``,
  ``max``, ``p50``, ``p90``, ``p95``, ``p99``):

  ========================= =======================================================
  ``window``                [first job start, first cycle start after the last job end]:
                            the loading factors' span (see :mod:`.measures`)
  ``negotiation_interval``  median time between negotiation cycle starts (C; shorter
                            than NEGOTIATOR_INTERVAL when submits ask for a reschedule)
  ``pool_loading_factor``   Σ job run time x slot cpus / (total cpus x window)
  ``slot_loading_factor``   statistics over slots of each slot's busy time / window
  ``duration_classes``      per distinct job duration D (at most 12): ``duration``,
                            ``d_over_c``, measured ``loading_factor`` of the slots that
                            ran only that duration, ``theory`` (the saw-tooth), ``slots``
  ``idle_gaps``             statistics of the gaps between consecutive jobs on a slot
  ``wait``                  statistics of queue-to-start times; ``never_started``
  ``throughput_per_hour``   jobs finished per pool hour over the window
  ``jobs_started``          jobs that ran; ``jobs_finished``: jobs that exited
  ``cycle_duration``        statistics of negotiation cycle durations
  ``matches_per_cycle``     statistics of matches per cycle
  ``usage``                 per ``submitter:<name>`` and ``group:<name>``:
                            ``cpu_seconds``, ``mean_share`` of the pool's cpus and
                            ``mean_target`` (a group: its quota / total cpus; a
                            submitter: an equal share among submitters with demand);
                            a group also ``time_to_quota``: from its first queued job
                            to the end of the first interval its share reached its
                            quota (None: never)
  ``clock_lag``             worst and mean lateness of the daemons' loops (``lag``)
  ========================= =======================================================

- CSV time series: ``jobs.csv`` (one row per job run: queue date, start, end, wait),
  ``slots.csv`` (per slot: jobs, busy seconds, loading factor, mean idle gap),
  ``utilisation.csv`` (per interval of C: busy cpus, utilisation, completions, idle
  jobs), ``usage.csv`` (per interval, submitter and group: busy cpus, share, target)
  and ``cycles.csv`` (per cycle: start, duration, matches).
- ``report.html`` (``mockpool report DIR`` or ``mockpool run --report``): the measures
  and their plots in one self-contained page (:mod:`.plots`).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..classad import ClassAd
from ..cli.layouts import format_long, format_q_long
from ..jobstates import QUEUE_STATES


def _num(ad: ClassAd, name: str, default: float = 0.0) -> float:
    v = ad.get_value(name, default)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else default


def job_counts(jobs: Sequence[ClassAd]) -> dict[str, int]:
    counts = Counter(QUEUE_STATES.get(int(_num(j, "JobStatus")), "Unknown") for j in jobs)
    out = {name: counts.pop(name, 0) for name in QUEUE_STATES.values()}
    return out | dict(counts)  # any unknown status last


def without_finished(queue: Sequence[ClassAd], history: Sequence[ClassAd]) -> list[ClassAd]:
    """One schedd's queue less the jobs its history holds: read one after the other
    from a running pool, a job that left the queue between the two reads is in both,
    and its history ad is the later."""
    done = {(a.get_value("ClusterId"), a.get_value("ProcId")) for a in history}
    return [a for a in queue if (a.get_value("ClusterId"), a.get_value("ProcId")) not in done]


def busy_cpu_seconds(jobs: Sequence[ClassAd], now: float, start_date: float = 0.0) -> float:
    """Σ run time x RequestCpus at pool time ``now`` (the ads' dates count from
    ``start_date``)."""
    total = 0.0
    date = start_date + now
    for j in jobs:
        run = _num(j, "RemoteWallClockTime")
        if int(_num(j, "JobStatus")) == 2:
            run += max(0.0, date - _num(j, "JobCurrentStartDate", date))
        total += run * _num(j, "RequestCpus", 1.0)
    return total


def total_cpus(slots: Sequence[ClassAd]) -> float:
    per_machine: dict[str, float] = {}
    for s in slots:
        per_machine[str(s.get_value("Machine", ""))] = _num(s, "TotalCpus")
    return sum(per_machine.values())


# the output folder's ad files (ads/<name>.ads) and the collector's ad type of each
AD_FILES = {
    "slots": "Machine",
    "schedds": "Scheduler",
    "submitters": "Submitter",
    "negotiator": "Negotiator",
    "collector": "Collector",
}


def summarize(
    *,
    now: float,
    real_seconds: float,
    time_scale: float,
    slots: Sequence[ClassAd],
    jobs: Sequence[ClassAd],
    negotiator: ClassAd | None,
    negotiator_status: dict[str, Any],
    host_status: Sequence[dict[str, Any]],
    jobs_submitted: int,
    workload_errors: Sequence[str],
    machines: int,
    start_date: float = 0.0,
) -> dict[str, Any]:
    cpus = total_cpus(slots)
    stats: dict[str, Any] = {}
    if negotiator is not None:
        for name in negotiator:
            if name.startswith("LastNegotiationCycle") and name.endswith("0"):
                v = negotiator.get_value(name)
                if isinstance(v, (int, float, str, bool)):
                    stats[name] = v
    peak = {f"{h['role']}:{h['pid']}": round(h["peak_rss_mb"], 1) for h in host_status}
    return {
        "pool_seconds": round(now, 3),
        "start_date": start_date,
        "real_seconds": round(real_seconds, 3),
        "time_scale": time_scale,
        "achieved_scale": round(now / real_seconds, 3) if real_seconds > 0 else None,
        "machines": machines,
        "slots": len(slots),
        "total_cpus": cpus,
        "cycles": int(negotiator_status.get("cycles", 0)),
        "matches": int(negotiator_status.get("matches", 0)),
        "jobs": job_counts(jobs),
        "jobs_submitted": jobs_submitted,
        "workload_errors": list(workload_errors),
        "cpu_utilisation": round(busy_cpu_seconds(jobs, now, start_date) / (cpus * now), 4)
        if cpus and now > 0
        else 0.0,
        "slot_states": dict(Counter(str(s.get_value("State", "")) for s in slots)),
        "lag": {f"{h['role']}:{h['pid']}": h.get("lag") for h in host_status},
        "peak_rss_mb": {"actors": peak, "total": round(sum(peak.values()), 1)},
        "negotiator": stats,
    }


# one encoder for every event line (json.dumps given options makes an encoder a call)
_EVENT_JSON = json.JSONEncoder(separators=(",", ":"))


def event_line(event: dict[str, Any]) -> str:
    """An event as its line of events.jsonl (newline included)."""
    return _EVENT_JSON.encode(event) + "\n"


def write_output(
    out: Path,
    *,
    events: Sequence[dict[str, Any]],
    negotiator_log: Sequence[str],
    ads: dict[str, Sequence[ClassAd]],
    summary: dict[str, Any],
) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with (out / "events.jsonl").open("w") as f:
        f.writelines(map(event_line, events))
    (out / "NegotiatorLog").write_text("".join(line + "\n" for line in negotiator_log))
    (out / "ads").mkdir(exist_ok=True)
    for name, group in ads.items():
        # condor_q -long for jobs, condor_status -long for daemon ads
        text = format_q_long(group) if name in ("jobs", "history") else format_long(group)
        (out / "ads" / f"{name}.ads").write_text(text)
    (out / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")


def _measure_lines(m: dict[str, Any] | None) -> list[str]:
    if not m or m.get("pool_loading_factor") is None:
        return []
    wait = m["wait"]
    waits = (
        f"waits: mean {wait['mean']:g} s, p95 {wait['p95']:g} s"
        if wait.get("mean") is not None
        else "no job started"
    )
    lines = [
        f"Loading factor {m['pool_loading_factor']:.3f} (C = {m['negotiation_interval'] or 0:g} pool s); "
        f"{waits}; {m['throughput_per_hour']:g} jobs per pool hour"
    ]
    cad = m.get("cadence") or {}
    if cad.get("median_gap") is not None:
        why = (
            f": {cad['early_gaps']} of {cad['gaps']} cycles came early on a reschedule"
            if cad["early_gaps"]
            else ""
        )
        lines.append(
            f"C is the median gap between cycle starts; NEGOTIATOR_INTERVAL is "
            f"{cad['configured_interval']:g} s{why}"
        )
    fs, pre = m.get("fair_share") or {}, m.get("preemption") or {}
    if fs.get("intervals"):
        ttfs = fs.get("time_to_fair_share")
        lines.append(
            "Time to fair share "
            + (f"{ttfs:g} pool s" if ttfs is not None else "not reached")
            + f"; work lost to preemption {pre.get('cpu_seconds', 0):g} cpu s "
            f"({pre.get('runs', 0)} evicted runs)"
        )
    return lines


def format_summary(s: dict[str, Any]) -> str:
    """The few lines ``mockpool run`` prints at the end."""
    jobs = "  ".join(f"{k} {v}" for k, v in s["jobs"].items())
    states = "  ".join(f"{k} {v}" for k, v in sorted(s["slot_states"].items()))
    worst = max((lag["max"] for lag in s["lag"].values() if lag), default=0.0)
    lines = [
        f"Pool ran {s['pool_seconds']:.0f} pool s in {s['real_seconds']:.1f} real s "
        f"(time scale {s['time_scale']:g}, achieved {s['achieved_scale'] or 0:g})",
        f"Machines {s['machines']}  slots {s['slots']}  cpus {s['total_cpus']:g}",
        f"Negotiation cycles {s['cycles']}  matches {s['matches']}",
        f"Jobs: {jobs}  (submitted {s['jobs_submitted']})",
        f"Slots: {states}",
        f"CPU utilisation {100 * s['cpu_utilisation']:.1f}%",
        *_measure_lines(s.get("measures")),
        f"Peak memory of all actors {s['peak_rss_mb']['total']:.0f} MiB; worst loop lag {worst:.2f} pool s",
    ]
    if s.get("down_at_end"):
        lines.append(f"Down at the end: {', '.join(s['down_at_end'])}")
    if s["workload_errors"]:
        lines.append(f"Workload errors ({len(s['workload_errors'])}):")
        lines.extend(f"  {e}" for e in s["workload_errors"])
    return "\n".join(lines)
