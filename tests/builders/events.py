"""A run's events, made by hand from a model."""

from __future__ import annotations


def saturated_events(jobs: int, slots: int, d: float, c: float) -> list[dict]:
    """A run's events with no claim reuse: ``jobs`` jobs of ``d`` s queued at 0 on ``slots``
    one-cpu slots, negotiation cycles starting at k·``c``, each slot matched again at the
    first cycle after its job ends (the saw-tooth's model; strictly after: a job that ends
    at the instant a cycle starts is not seen by it, as in a real pool)."""
    import math

    events: list[dict] = [
        {
            "t": 0.0,
            "daemon": "schedd1",
            "kind": "submit",
            "cluster": 1,
            "procs": jobs,
            "submitter": "a@pool",
        }
    ]
    free = [c] * slots
    for n in range(jobs):
        s = n % slots
        start, end = free[s], free[s] + d
        free[s] = (math.floor(end / c) + 1) * c
        ids = {"slot": f"slot{s}@m", "job": f"1.{n}", "claim": f"c{n}"}
        events += [
            {
                "t": start,
                "daemon": "m",
                "kind": "claim",
                **ids,
                "schedd": "schedd1",
                "submitter": "a@pool",
            },
            {
                "t": start,
                "daemon": "m",
                "kind": "activate",
                **ids,
                "start": start,
                "end": end,
                "cpus": 1,
            },
            {"t": end, "daemon": "m", "kind": "job_exit", **ids, "start": start, "end": end},
        ]
    last = max(e["t"] for e in events)
    events += [
        {
            "t": k * c,
            "daemon": "negotiator",
            "kind": "cycle",
            "cycle": k,
            "duration": 0.0,
            "matches": 0,
        }
        for k in range(1, int(last // c) + 3)
    ]
    return sorted(events, key=lambda e: e["t"])
