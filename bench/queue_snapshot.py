"""Speed of two hot paths that unit tests only check for correctness.

- the schedd core: one submit of 10,000 jobs (parse, autoclusters, one SQLite transaction);
- the collector store: a snapshot of 10,000 slot ads served from their stored wire bytes.

    python bench/queue_snapshot.py [--repeat 5]

Prints the best and median of the repeats, in seconds.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from mockpool.classad import ClassAd, parse_expr
from mockpool.collector.store import AdStore
from mockpool.config import parse_config
from mockpool.schedd.queue import JobQueue
from mockpool.schedd.schedd import Schedd
from mockpool.v1 import collector_pb2
from mockpool.wire import ad_to_pb, frame_field


def submit_10000(folder: Path) -> float:
    schedd = Schedd("schedd1", JobQueue(folder / "q.sqlite"), parse_config("", "<bench>"), 0.0)
    t = time.perf_counter()
    schedd.submit("executable = /bin/sleep\narguments = 60\nqueue 10000\n", "a.sub", "alice", 0.0)
    elapsed = time.perf_counter() - t
    schedd.queue.close()
    return elapsed


def snapshot_10000() -> float:
    template = ClassAd()
    template["MyType"] = "Machine"
    for k in range(34):
        template[f"Attr{k}"] = k
    template["State"] = "Unclaimed"
    template["Start"] = parse_expr(
        "TARGET.RequestCpus <= MY.Cpus && TARGET.RequestMemory <= MY.Memory"
    )
    msg = ad_to_pb(template)
    name_attr = msg.attributes.add(name="Name")
    store = AdStore()
    for i in range(10_000):
        name = f"slot{i % 16 + 1}@exec{i // 16:04d}"
        name_attr.literal.str = name
        ad = template.copy()
        ad["Name"] = name
        store.update("Machine", ad, 0.0, msg.SerializeToString(), owned=True)
    t = time.perf_counter()
    snap = store.snapshot(now=1.0)
    blob = b"".join(frame_field(1, r.wire()) for r in snap.slots)
    elapsed = time.perf_counter() - t
    assert len(collector_pb2.SnapshotReply.FromString(blob).slots) == 10_000
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    subs, snaps = [], []
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory() as d:
            subs.append(submit_10000(Path(d)))
        snaps.append(snapshot_10000())
    for what, xs in (("submit 10,000 jobs", subs), ("snapshot 10,000 slots", snaps)):
        print(f"{what:24s} best {min(xs):.3f} s   median {statistics.median(xs):.3f} s")


if __name__ == "__main__":
    main()
