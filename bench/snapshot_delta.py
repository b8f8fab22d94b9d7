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

Then the columnar snapshot a negotiator in another process asks for: the slot columns
one cycle reads (learnt from a cycle of one job shape), kept by the collector as the
updates arrive. Prints the milliseconds of the collector's delta snapshot with them, packed
and encoded (``SlotColumn`` messages), of the negotiator's checking them and building its match
columns from them, the megabytes sent, and, for comparison, the milliseconds of reading
the same columns from held ads (``SlotTable``, cold).
"""

from __future__ import annotations

import argparse
import statistics
import time

from mockpool.classad import ClassAd, parse_expr
from mockpool.classad.kernel import SlotTable
from mockpool.collector.store import AdStore
from mockpool.config import parse_config
from mockpool.negotiator import Accountant, CycleAds, ResourceRequest, negotiate
from mockpool.negotiator.cycleinput import CycleCarry, CycleConfig
from mockpool.negotiator.held_ads import HeldSlotAds, SnapshotPart
from mockpool.packedcolumns import column_from_pb, column_to_pb
from mockpool.startd.machine import Machine
from mockpool.v1 import collector_pb2 as cpb

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


def names_read(store: AdStore) -> list[str]:
    """The slot columns a cycle of one job shape reads."""
    snap = store.snapshot()
    job = ClassAd(
        ClusterId=1,
        ProcId=0,
        RequestCpus=1,
        RequestMemory=1024,
        RequestDisk=1000,
        Owner="alice",
        AutoClusterId=1,
        Submitter="alice@mockpool",
        ResourceRequestCount=100,
    )
    job["Requirements"] = parse_expr(
        'TARGET.Arch == "X86_64" && TARGET.OpSys == "LINUX" && TARGET.Memory >= RequestMemory'
    )
    job["Rank"] = parse_expr("TARGET.KFlops")
    carry = CycleCarry()
    negotiate(
        CycleAds([r.ad for r in snap.slots], [r.ad for r in snap.private]),
        [ResourceRequest.from_ad(job, "schedd1", "127.0.0.1:2")],
        Accountant(),
        CycleConfig.from_config(parse_config("")),
        1.0,
        columns=carry,
    )
    return carry.slots.names_built()


def columnar(slots: int, rounds: int) -> None:
    store = AdStore()
    fill(store, slots)
    names = names_read(store)
    store.snapshot(columns=names)  # the collector keeps them from here on
    held = [r.ad for r in store.snapshot().slots]
    store.update("Machine", held[0], 1.0)  # no ad has come since: a delta in the same order
    last = store.snapshot()
    order = [ad.eval("Name") for ad in held]
    pack, read, cold, sent = [], [], [], 0
    for _ in range(rounds):
        t = time.perf_counter()
        snap = store.snapshot(since=(last.epoch, last.seq), columns=names)  # a delta
        raw = [column_to_pb(c).SerializeToString() for c in snap.columns]
        pack.append(time.perf_counter() - t)
        sent = sum(map(len, raw))
        t = time.perf_counter()
        table = SlotTable(held, supplied={})
        for b in raw:
            col = column_from_pb(cpb.SlotColumn.FromString(b), order)
            col.column(table.pool)
        read.append(time.perf_counter() - t)
        t = time.perf_counter()
        table = SlotTable(held)
        table.gather(names)
        for name in names:
            table.column(name)
        cold.append(time.perf_counter() - t)
    med = statistics.median
    print(
        f"slots {slots:,}  {len(names)} columns ({sent / 2**20:.1f} MiB):  "
        f"collector packs {med(pack) * 1e3:.1f} ms, negotiator checks and builds "
        f"{med(read) * 1e3:.1f} ms; read from held ads instead {med(cold) * 1e3:.1f} ms"
    )


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
    for slots in ns.slots:
        columnar(slots, max(3, ns.rounds // 4))


if __name__ == "__main__":
    main()
