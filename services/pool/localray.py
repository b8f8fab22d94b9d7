"""The Ray a local pool starts for itself: loopback only, in an owner-only folder.

Ray (2.60) binds its GCS, raylet, object manager, agents and every worker's gRPC server to
the node's IP, which on Linux it takes from the host's outward interface: a plain
``ray.init()`` listens on every interface. With the node IP set to loopback (and Ray told
not to swap ``127.0.0.1`` for the outward address, which it does unless
``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER`` is off) they all bind ``127.0.0.1``; the dashboard
and the metrics export are not started. Ray's session folder (logs, Unix sockets) goes
under a fresh 0700 folder instead of the world-readable ``/tmp/ray``, and Ray's
cluster-auth token file is owner-only before Ray reads it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import shutil
import stat
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..ownerfiles import private_dir

log = logging.getLogger(__name__)

__all__ = [
    "LocalRay",
    "private_ray_token",
    "ray_auth_token_path",
    "start_local_ray",
    "stop_local_ray",
]

LOOPBACK = "127.0.0.1"


@dataclass(frozen=True)
class LocalRay:
    """What a local Ray started here is: its session folder, the 0700 folder it lives in
    (removed by ``stop_local_ray``), and the address it listens on."""

    session_dir: str
    temp_dir: str
    node_ip: str


def ray_auth_token_path() -> Path | None:
    """The file Ray reads its cluster-auth token from (None: token in the environment or
    auth disabled)."""
    if (
        os.environ.get("RAY_AUTH_TOKEN")
        or os.environ.get("RAY_AUTH_MODE", "").lower() == "disabled"
    ):
        return None
    return Path(os.environ.get("RAY_AUTH_TOKEN_PATH") or Path.home() / ".ray" / "auth_token")


def private_ray_token() -> None:
    """Make Ray's token file owner-only: create it 0600 (as Ray would, but never readable by
    others), or narrow an existing one that Ray created with the umask's mode."""
    path = ray_auth_token_path()
    if path is None:
        return
    if path.exists():
        mode = stat.S_IMODE(path.stat().st_mode)
        if mode & 0o077:
            log.warning("Ray's auth token %s had mode %#o; narrowed to 0600", path, mode)
            os.chmod(path, 0o600)
        return
    private_dir(path.parent)
    with contextlib.suppress(FileExistsError):  # made meanwhile by another Ray: kept
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as f:
            f.write(secrets.token_hex(32))  # Ray's own format: 256 bits, hex, no newline


@contextlib.contextmanager
def _loopback_node_ip() -> Iterator[None]:
    """While Ray starts: keep ``127.0.0.1`` as the node IP. Ray reads the switch from the
    environment at import (so it is set there for a Ray not yet imported, and for the
    raylet and workers it spawns) and on the imported constant; both are put back after,
    so a later ``ray.init`` of this process (joining a cluster) is not affected."""
    env_name = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
    old_env = os.environ.get(env_name)
    os.environ[env_name] = "0"
    import ray._private.ray_constants as ray_constants

    old_constant = ray_constants.ENABLE_RAY_CLUSTER
    ray_constants.ENABLE_RAY_CLUSTER = False
    try:
        yield
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = old_constant
        if old_env is None:
            os.environ.pop(env_name, None)
        else:
            os.environ[env_name] = old_env


def start_local_ray(num_cpus: int, **init_kwargs: Any) -> LocalRay:
    """``ray.init`` a fresh local instance on loopback; ``stop_local_ray`` ends it."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    private_ray_token()
    import ray

    # Short path: Ray's Unix socket paths under it must stay below 108 bytes. Ray makes its
    # own folder 0777, so it goes inside one of ours (mkdtemp: 0700) that nobody else enters.
    temp_dir = tempfile.mkdtemp(
        prefix="mockpool-ray-", dir="/tmp" if os.path.isdir("/tmp") else None
    )
    try:
        with _loopback_node_ip():
            context = ray.init(
                address="local",
                num_cpus=num_cpus,
                include_dashboard=False,
                _node_ip_address=LOOPBACK,
                _temp_dir=os.path.join(temp_dir, "r"),
                **init_kwargs,
            )
    except BaseException:
        shutil.rmtree(temp_dir, ignore_errors=True)
        raise
    info = context.address_info
    node_ip = str(info.get("node_ip_address", ""))
    if node_ip != LOOPBACK:
        log.warning(
            "Ray's node IP is %s, not loopback: its servers listen beyond this host", node_ip
        )
    return LocalRay(str(info.get("session_dir", "")), temp_dir, node_ip)


def stop_local_ray(local: LocalRay) -> None:
    """Shut Ray down and remove its folder (session logs, sockets)."""
    import ray

    ray.shutdown()
    shutil.rmtree(local.temp_dir, ignore_errors=True)
