"""A negotiator's snapshot between cycles: what it costs when few slots changed.

    python bench/snapshot_delta.py [--slots 10000 100000] [--changed 100] [--rounds 20]

A collector's store holds ``--slots`` one-cpu static slots (16 to a machine, from real
startd ``Machine`` cores) and their private ads. Each round, ``--changed`` slots send a
new ad (a State change, the private ad with it), then the negotiator's snapshot is taken
since the last one and merged into the ads it holds (``AdStore.snapshot`` with ``since``,
``HeldSlotAds.merge``), as the central manager's negotiator does before each cycle.
Prints, per pool size, the milliseconds of one round's snapshot and merge (the median
of the rounds; the updates themselves are not timed), and the slot rows the delta
carried.
"""

from __future__ import annotations

import argparse
import statistics
import time

from mockpool.classad import ClassAd
from mockpool.collector.store import AdStore
from mockpool.config import parse_config
from mockpool.negotiator.held_ads import HeldSlotAds, SnapshotPart
from mockpool.startd.machine import Machine

CPUS = 16


def fill(store: AdStore, slots: int) -> list[tuple[ClassAd, ClassAd]]:
    cfg = parse_config(
        f"NUM_CPUS = {CPUS}\nMEMORY = 65536\nNUM_SLOTS_TYPE_1 = {CPUS}\nSLOT_TYPE_1 = 1/{CPUS}\n"
    )
    pairs = []
    for i in range(slots // CPUS):
        m = Machine(f"node{i:06d}", cfg, "127.0.0.1:1", 0, 0.0)
        for pub, priv in zip(m.public_ads(0.0), m.private_ads(), strict=True):
            store.update("Machine", pub, 0.0, owned=True)
            store.update("MachinePrivate", priv, 0.0, owned=True)
            pairs.append((pub, priv))
    return pairs


def merge(held: HeldSlotAds, store: AdStore, now: float) -> int:
    snap = store.snapshot(now=now, since=held.since())
    held.merge(
        snap.epoch,
        snap.seq,
        snap.delta,
        SnapshotPart([r.ad for r in snap.slots], snap.slot_order, snap.slot_rows),
        SnapshotPart([r.ad for r in snap.private], snap.private_order, snap.private_rows),
        snap.same_order,
    )
    return len(snap.slot_rows)


def run(slots: int, changed: int, rounds: int) -> tuple[float, int]:
    store, held = AdStore(), HeldSlotAds()
    pairs = fill(store, slots)
    merge(held, store, 1.0)  # the first cycle's whole snapshot
    merge(held, store, 2.0)  # the first delta (after the ads it was taken at)
    times, carried = [], 0
    for r in range(rounds):
        now = 10.0 * (r + 1)
        for k in range(changed):
            pub, priv = pairs[(r * changed + k * 7919) % len(pairs)]
            ad = pub.copy()
            ad["State"] = "Claimed" if r % 2 == 0 else "Unclaimed"
            store.update("Machine", ad, now, owned=True)
            store.update("MachinePrivate", priv.copy(), now, owned=True)
        t = time.perf_counter()
        carried = merge(held, store, now)
        times.append(time.perf_counter() - t)
    return statistics.median(times), carried


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--slots", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--changed", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=20)
    ns = ap.parse_args()
    for slots in ns.slots:
        t, carried = run(slots, ns.changed, ns.rounds)
        print(
            f"slots {slots:,}  changed {ns.changed} a round  "
            f"snapshot + merge {t * 1e3:.2f} ms  (the delta carried {carried} slots)"
        )


if __name__ == "__main__":
    main()
