"""The actor host's own duties (beyond its daemons): the live loop's lag probe."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from mockpool import rpc
from mockpool.auth import make_secret
from mockpool.config import parse_config
from mockpool.pool.host import LAG_PROBE_INTERVAL, DaemonHost


async def test_a_live_host_reports_lag_though_no_daemon_sleeps_on_the_clock(
    tmp_path: Path,
) -> None:
    host = DaemonHost(
        "central",
        secret=make_secret(),
        config=parse_config("", "<test>"),
        state_dir=str(tmp_path / "central"),
        transport=rpc.GRPC,
    )
    await host.serve()
    # time scale 600: a probe every LAG_PROBE_INTERVAL pool s is every 1/600 real s
    await host.run(600.0, time.time(), only=[])  # no daemon loop runs
    try:
        for _ in range(500):
            lag = (await host.status())["lag"]
            if lag["wakeups"] >= 3:
                break
            await asyncio.sleep(LAG_PROBE_INTERVAL / 600)
        assert lag["wakeups"] >= 3 and lag["max"] >= 0.0
    finally:
        await host.stop()
    # the probe stops with the host (a task left behind would outlive the actor's pool)
    assert not [t for t in asyncio.all_tasks() if "_probe_lag" in repr(t.get_coro())]
