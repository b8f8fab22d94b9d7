"""The pytest plugin (registered as ``pytest11: mockpool``): live pools as fixtures.

```python
def test_jobs_complete(mockpool_factory):
    pool = mockpool_factory(config={"NEGOTIATOR_INTERVAL": 20}, time_scale=100)
    pool.submit("executable = /bin/sleep\\narguments = 60\\nqueue 4", owner="alice")
    assert pool.wait(lambda: len(pool.jobs("JobStatus == 4", history=True)) == 4, timeout=30)
    assert pool.negotiator_log.cycles[0].matches
```

- ``mockpool_ray`` (session): a local Ray on loopback with ``num_cpus`` pinned (2, or
  ``--mockpool-ray-cpus``), started once and shut down at the end; if Ray is already
  initialised it is used and left alone. Override it in a conftest to share your own.
- ``mockpool_factory``: ``factory(spec=None, *, config=None, **spec_overrides) -> Pool``
  (a spec path, TOML text or ``PoolSpec``; ``config`` adds HTCondor knobs); every pool
  it started is stopped at the end of the test.
- ``mockpool_pool``: one default pool (a 4-cpu machine, one schedd) for the test.
- ``mockpool_virtual_factory``: the same factory for pools in virtual time (every daemon
  in the test's process, no Ray): ``pool.wait`` and ``pool.sleep_until`` move its clock.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("mockpool")
    group.addoption(
        "--mockpool-ray-cpus", type=int, default=2, help="num_cpus of the test Ray instance"
    )


@pytest.fixture(scope="session")
def mockpool_ray(request: pytest.FixtureRequest) -> Iterator[None]:
    os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "0")
    import ray

    from .localray import start_local_ray, stop_local_ray

    local = None
    if not ray.is_initialized():
        local = start_local_ray(
            request.config.getoption("--mockpool-ray-cpus"), log_to_driver=False
        )
    try:
        yield
    finally:
        if local is not None:
            stop_local_ray(local)


@pytest.fixture
def mockpool_factory(mockpool_ray: None) -> Iterator[Callable[..., Any]]:
    from .api import Pool

    pools: list[Pool] = []

    def factory(spec: Any = None, *, config: Any = None, **overrides: Any) -> Pool:
        pool = Pool(spec, config=config, **overrides)
        pools.append(pool)
        return pool.start()

    try:
        yield factory
    finally:
        for pool in reversed(pools):
            pool.stop()


@pytest.fixture
def mockpool_virtual_factory() -> Iterator[Callable[..., Any]]:
    from .api import Pool

    pools: list[Pool] = []

    def factory(spec: Any = None, *, config: Any = None, **overrides: Any) -> Pool:
        pool = Pool(spec, config=config, **{"clock": "virtual", **overrides})
        pools.append(pool)
        return pool.start()

    try:
        yield factory
    finally:
        for pool in reversed(pools):
            pool.stop()


@pytest.fixture
def mockpool_pool(mockpool_factory: Callable[..., Any]) -> Any:
    return mockpool_factory()
