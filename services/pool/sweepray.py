"""A sweep's points as Ray tasks on a cluster (``mockpool sweep --address ADDR``).

Each point not yet on disk becomes one task (one CPU, Ray's ``SPREAD`` strategy, so the
points go round the nodes rather than filling the first). A task runs its point's pool
(virtual time: every daemon in the task's process) into a folder of its node's own, adds
``node.json`` (the Ray node id and host it ran on), and hands the folder back packed;
the driver unpacks it into ``OUT/points/<point>/`` as a local sweep writes it (a
``.partial`` folder renamed when whole). No shared file system is needed, and a sweep
that is stopped resumes as a local one does: points already on disk are not run again.
"""

from __future__ import annotations

import io
import json
import shutil
import socket
import tarfile
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .cluster import ClusterError, join_cluster

__all__ = ["NODE_FILE", "run_on_cluster"]

NODE_FILE = "node.json"  # where a point ran: {"node_id", "hostname", "ip"}


def run_point_packed(spec: Any, name: str) -> bytes:
    """Run one point's pool here (a Ray worker) and return its folder as a .tar.gz."""
    import ray

    from .api import run_pool

    with tempfile.TemporaryDirectory(prefix="mockpool-point-") as tmp:
        out = Path(tmp) / name
        run_pool(spec, out)
        where = {
            "node_id": ray.get_runtime_context().get_node_id(),
            "hostname": socket.gethostname(),
            "ip": ray.util.get_node_ip_address(),
        }
        (out / NODE_FILE).write_text(json.dumps(where) + "\n")
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tar:
            tar.add(out, arcname=".")
        return buf.getvalue()


def unpack_point(packed: bytes, final: Path) -> dict[str, Any]:
    """Write a point's packed folder to ``final`` (whole or not at all); its summary."""
    partial = final.with_name(final.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(packed), mode="r:gz") as tar:
        tar.extractall(partial, filter="data")  # no absolute paths, links out or devices
    summary: dict[str, Any] = json.loads((partial / "summary.json").read_text())
    partial.rename(final)
    return summary


def run_on_cluster(
    address: str,
    points: Sequence[tuple[Any, Any]],
    folders: Path,
    done: Callable[[Any, dict[str, Any]], None],
) -> None:
    """Run ``points`` (``(point, spec)`` pairs) as tasks on the cluster at ``address``,
    unpacking each into ``folders / point.name`` and calling ``done(point, summary)`` as
    it arrives. Raises ``ClusterError`` when the cluster cannot be joined."""
    import ray

    join_cluster(address)
    try:
        task = ray.remote(run_point_packed).options(num_cpus=1, scheduling_strategy="SPREAD")
        refs = {task.remote(spec, point.name): point for point, spec in points}
        pending = list(refs)
        try:
            while pending:
                ready, pending = ray.wait(pending, num_returns=1)
                for ref in ready:
                    point = refs[ref]
                    try:
                        packed = ray.get(ref)
                    except ray.exceptions.RayError as e:
                        raise ClusterError(
                            f"point {point.name} failed on the cluster: {e}"
                        ) from None
                    done(point, unpack_point(packed, folders / point.name))
        except BaseException:
            for ref in pending:
                ray.cancel(ref, force=True)
            raise
    finally:
        ray.shutdown()
