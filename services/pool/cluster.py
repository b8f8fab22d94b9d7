"""A pool on an existing Ray cluster: joining it, and where the actors go.

``--address`` (``Pool(spec, address=...)``) names the cluster: ``host:port`` of its GCS,
``ray://host:port`` (Ray Client), or ``auto`` (the cluster this node belongs to). A
``host:port`` that does not answer fails in seconds, before Ray is asked (Ray itself
would retry for a minute or more).

Placement is Ray's: actors spread across nodes (Ray's ``SPREAD``) unless the spec's
``[placement]`` asks for ``central = "head"`` (the collector and negotiator, in one actor
or two, on the head node) or ``startds = "pack"`` (startd actors packed onto as few nodes as fit, through a
placement group). Nothing here picks nodes itself.
"""

from __future__ import annotations

import socket
from typing import Any

PROBE_SECONDS = 3.0  # how long an unreachable address may take to fail

__all__ = ["ClusterError", "join_cluster", "probe_address", "placement_options"]


class ClusterError(RuntimeError):
    """The cluster cannot be joined; the message says which address and why."""


def probe_address(address: str, timeout: float = PROBE_SECONDS) -> None:
    """Fail fast when ``host:port`` (or ``ray://host:port``) does not accept connections."""
    if address == "auto":
        return
    target = address.removeprefix("ray://")
    host, sep, port = target.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise ClusterError(f"--address {address!r}: expected host:port, ray://host:port or auto")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
            pass
    except OSError as e:
        raise ClusterError(
            f"cannot reach the Ray cluster at {address}: {e.strerror or e} "
            f"(is `ray start --head` running there, and the port open?)"
        ) from None


def join_cluster(address: str) -> None:
    """Connect this process to the Ray cluster at ``address`` (after a quick probe)."""
    import ray

    probe_address(address)
    try:
        ray.init(address=address, log_to_driver=False, configure_logging=False)
    except (ConnectionError, RuntimeError) as e:
        raise ClusterError(f"cannot join the Ray cluster at {address}: {e}") from None


def placement_options(
    spec_placement: dict[str, str], role: str, index: int, groups: Any
) -> dict[str, Any]:
    """Ray options for the ``index``-th actor of ``role`` under the spec's placement."""
    from ray.util.scheduling_strategies import (
        NodeAffinitySchedulingStrategy,
        PlacementGroupSchedulingStrategy,
    )

    if role in ("central", "negotiator") and spec_placement.get("central") == "head":
        import ray

        head = next(
            n["NodeID"]
            for n in ray.nodes()
            if n.get("Alive") and "node:__internal_head__" in n.get("Resources", {})
        )
        return {"scheduling_strategy": NodeAffinitySchedulingStrategy(head, soft=False)}
    if role == "startd" and spec_placement.get("startds") == "pack" and groups is not None:
        return {
            "num_cpus": PACK_CPU,
            "scheduling_strategy": PlacementGroupSchedulingStrategy(
                groups, placement_group_bundle_index=index
            ),
        }
    return {"scheduling_strategy": "SPREAD"}


PACK_CPU = 0.001  # a placement group's bundles need a resource: a sliver of a CPU


def pack_group(n: int) -> Any:
    """A PACK placement group of ``n`` startd bundles (ready when it returns)."""
    import ray
    from ray.util.placement_group import placement_group

    pg = placement_group([{"CPU": PACK_CPU}] * n, strategy="PACK")
    ray.get(pg.ready(), timeout=60)
    return pg
