"""mockpool.pool.processes: record a pool's processes, end them by pid and start time."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mockpool.pool import processes
from mockpool.pool.processes import Recorded

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")

# A parent that starts a child and both sleep: a tiny stand-in for the holder and Ray.
TREE = (
    "import subprocess, sys, time; "
    # the marker is built at run time: only the child's command line holds it
    "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)', 'MA' + 'RK']); "
    "time.sleep(600)"
)


@pytest.fixture
def tree() -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen([sys.executable, "-c", TREE])
    try:
        yield proc
    finally:
        for r in processes.descendants([proc.pid]):
            processes.end([r], grace=0)
        proc.kill()
        proc.wait()


def children(proc: subprocess.Popen[bytes]) -> list[Recorded]:
    while not (found := processes.record(proc.pid)):  # the child is on its way
        assert proc.poll() is None
        time.sleep(0.05)
    return found


def test_record_names_descendants_by_pid_and_start_time(tree: subprocess.Popen[bytes]) -> None:
    (child,) = children(tree)
    assert child.alive() and child.start == processes.start_time(child.pid)
    assert Recorded.from_json(child.to_json()) == child
    # the same pid with another start time is another process: not alive, never signalled
    impostor = Recorded(child.pid, child.start + 1, child.name)
    assert not impostor.alive()
    assert processes.end([impostor], grace=0) == []
    assert child.alive()


def test_end_terminates_recorded_processes_and_their_descendants(
    tree: subprocess.Popen[bytes],
) -> None:
    (child,) = children(tree)
    holder = Recorded(tree.pid, processes.start_time(tree.pid) or -1, "python")
    ended = processes.end([holder], grace=30)
    assert {r.pid for r in ended} == {tree.pid, child.pid}
    tree.wait()
    assert not child.alive()


def test_end_finds_orphans_by_a_marker_in_their_command_line(tree: subprocess.Popen[bytes]) -> None:
    (child,) = children(tree)
    ended = processes.end([], marker="MARK", grace=30)  # nothing recorded: found by marker
    assert [r.pid for r in ended] == [child.pid]
    assert tree.poll() is None  # the parent's command line does not carry the marker
