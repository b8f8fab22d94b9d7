"""A kernel pool's output folder: what ``mockpool run`` writes for a pool on the event
loop (events.jsonl, NegotiatorLog, ads/, summary.json, the series), read from the cores
directly: an alive schedd's queue and history from the schedd, a crashed one's from its
queue on the simulated disk, the daemons' ads from the collector (none while it is down).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..pool.measures import measure, write_series
from ..pool.report import AD_FILES, summarize, without_finished, write_output
from ..pool.spececho import echo_spec
from ..schedd.stored import stored_in_memory

if TYPE_CHECKING:
    from ..classad import ClassAd
    from .pool import KernelPool

__all__ = ["collect"]


def _schedd_jobs(pool: KernelPool, name: str) -> tuple[list[ClassAd], list[ClassAd]]:
    node = pool.schedd_node(name)
    d = pool.actor(name)
    if node.alive and d.alive:
        core = node.core.core  # type: ignore[attr-defined]
        now = pool.kernel.now
        done = [ad.copy() for ad in core.history(now=now)]
        return without_finished([ad.copy() for ad in core.query(now=now)], done), done
    queue = pool.disk.existing_queue(f"schedd/{name}.sqlite")
    try:
        stored = stored_in_memory(queue, name)
    finally:
        queue.close()
    return stored.jobs, stored.history


def collect(pool: KernelPool, out: Path | None, real_seconds: float) -> dict[str, Any]:
    """The run's summary; its output folder written to ``out`` when given."""
    spec = pool.spec
    now = pool.kernel.now
    queue: list[ClassAd] = []
    history: list[ClassAd] = []
    for name in spec.schedd_names:
        q, h = _schedd_jobs(pool, name)
        queue += q
        history += h
    central_up = pool.actors["central"].alive
    found = {
        k: [ad.copy() for ad in pool.ads(t)] if central_up else [] for k, t in AD_FILES.items()
    }
    negotiator = pool.negotiator
    summary = summarize(
        now=now,
        real_seconds=real_seconds,
        time_scale=spec.time_scale,
        slots=found["slots"],
        jobs=queue + history,
        negotiator=found["negotiator"][0] if found["negotiator"] else None,
        negotiator_status=negotiator.core.status("") if negotiator is not None else {},
        host_status=[],
        jobs_submitted=sum(n for _, _, n in pool.submitted),
        workload_errors=pool.workload_errors,
        machines=len(spec.machine_names),
        start_date=pool.log_base,
    )
    summary["down_at_end"] = pool.down_daemons()
    summary["spec"] = echo_spec(spec)
    m = measure(
        pool.kernel.events,
        now=now,
        total_cpus=summary["total_cpus"],
        lag=summary["lag"],
        config=summary["spec"]["config"],
    )
    summary["measures"] = m.summary
    if out is not None:
        ads = {**found, "jobs": queue, "history": history}
        write_output(
            Path(out),
            events=pool.kernel.events,
            negotiator_log=pool.negotiator_log,
            ads=ads,
            summary=summary,
        )
        write_series(Path(out), m)
    return summary
