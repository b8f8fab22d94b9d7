"""A local pool listens on loopback only, Ray included, and keeps its secrets owner-only."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mockpool import Pool
from mockpool.pool.localray import LocalRay, ray_auth_token_path
from mockpool.pool.processes import descendants

pytestmark = [pytest.mark.live, pytest.mark.slow]


@pytest.fixture(scope="module")
def pool(ray_session: LocalRay) -> Iterator[Pool]:
    with Pool(time_scale=10) as p:
        p.submit("executable = /bin/sleep\narguments = 100000\nrequest_memory = 100\nqueue 1\n")
        assert p.wait(lambda: len(p.jobs("JobStatus == 2")) == 1, timeout=120)
        yield p


def mode(path: Path | str) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_the_pool_and_its_ray_listen_on_loopback_only(
    pool: Pool, listeners: Callable[[set[int]], list[Any]]
) -> None:
    pids = {os.getpid()} | {r.pid for r in descendants([os.getpid()])}
    sockets = listeners(pids)
    names = {name for _, name, _, _, _ in sockets}
    # not vacuous: Ray's own servers and the pool's gRPC servers (in actors) are seen
    assert {"gcs_server", "raylet"} <= names, names
    port = int(pool.collector_address.rsplit(":", 1)[1])
    assert any(p == port for _, _, _, p, _ in sockets)
    wide = [(pid, name, str(ip), p) for pid, name, ip, p, loopback in sockets if not loopback]
    assert wide == []


def test_secrets_and_state_are_owner_only(pool: Pool, ray_session: LocalRay) -> None:
    token = ray_auth_token_path()
    if token is not None:
        assert mode(token) == 0o600
    assert mode(ray_session.temp_dir) == 0o700  # Ray's logs and sockets
    assert mode(pool.state_dir) == 0o700
    queues = list(pool.state_dir.glob("schedd/*.sqlite*"))
    assert queues and all(mode(q) == 0o600 for q in queues), queues
    assert mode(pool.state_dir / "schedd") == 0o700
