"""The pure negotiation cycle at scale: one `negotiate()` over a synthetic pool.

    python bench/negotiate_cycle.py [--slots 10000] [--autoclusters 1000] [--jobs 100000]
                                    [--submitters 200] [--pslot-fraction 0.5]
                                    [--groups tree|none] [--transfer IF_NEEDED|YES]
                                    [--by-slot] [--profile]
    python bench/negotiate_cycle.py --growth      # 1k to 100k slots, slots x autoclusters

Slot ads come from real startd `Machine` cores: ``--pslot-fraction`` of the slots (by
cpus) are 16-cpu partitionable slots with a consumption policy (the negotiator splits
them), the rest one-cpu static slots, 16 to a machine. Resource requests come from real
schedd cores: each submitter submits one job per autocluster (its own request_memory and
request_cpus), then each request asks for ``jobs / autoclusters`` idle jobs, so a million
idle jobs need not be written to SQLite. With ``--groups tree`` the submitters sit in a
three-level group tree (4 groups x 5 subgroups x 2 leaves, dynamic quotas, surplus
accepted at the leaves). With ``--transfer IF_NEEDED`` (condor_submit's default) every
job's Requirements compare FileSystemDomain, one per machine, in an ``||`` with
HasFileTransfer: the cycle decides them per class in three-valued logic; ``YES`` jobs do
not read it. ``--by-slot`` runs the slot-by-slot cycle (every slot its own class), the
reference the class-based cycle must agree with.

Each submitter's autoclusters ask for 512 + 8k MB (every 7th for 2 cpus), k counting its
own autoclusters, so submitters share job shapes, as users of one pool running the same
workflows do; the cycle remembers a request's answers for the next request of the same
shape (.memo). ``--shapes distinct`` counts k over the whole pool instead: every
autocluster a shape of its own, the case where nothing is remembered.

``--ads decoded`` gives the cycle the slot ads as the live negotiator has them, decoded
from the collector's bytes (equal attributes share their trees and literals, which the
cycle's column building uses); the decoding, the live negotiator's phase 1, is timed
apart.

The garbage collector runs at the pool daemons' pace (``gctune``).

Prints cycle seconds (wall and CPU), matches per second, the time of each phase, the
number of slot classes, the rows the requests were evaluated on and remembered, and
the peak memory of the process (ru_maxrss).
"""

from __future__ import annotations

import argparse
import cProfile
import dataclasses
import os
import pstats
import resource
import tempfile
import time

from mockpool import gctune
from mockpool.config import parse_config
from mockpool.negotiator.accountant import Accountant
from mockpool.negotiator.cycle import negotiate
from mockpool.negotiator.cycleinput import CycleAds, CycleConfig, ResourceRequest, requests_from_ads
from mockpool.schedd.queue import JobQueue
from mockpool.schedd.schedd import Schedd
from mockpool.startd.machine import Machine
from mockpool.wire import AdDecoder, ad_to_bytes

CPUS = 16


def tree_config(top: int = 4, mid: int = 5, leaf: int = 2) -> tuple[str, list[str]]:
    names, lines, leaves = [], [], []
    for a in range(top):
        ga = f"group_{a}"
        names.append(ga)
        lines.append(f"GROUP_QUOTA_DYNAMIC_{ga} = {1 / top}")
        for b in range(mid):
            gb = f"{ga}.sub{b}"
            names.append(gb)
            lines.append(f"GROUP_QUOTA_DYNAMIC_{gb} = {1 / mid}")
            for c in range(leaf):
                gc = f"{gb}.leaf{c}"
                names.append(gc)
                leaves.append(gc)
                lines.append(f"GROUP_QUOTA_DYNAMIC_{gc} = {1 / leaf}")
                lines.append(f"GROUP_ACCEPT_SURPLUS_{gc} = True")
    return "GROUP_NAMES = " + ", ".join(names) + "\n" + "\n".join(lines) + "\n", leaves


def make_slots(slots: int, pslot_fraction: float) -> CycleAds:
    """``slots`` cpus: a fraction as 16-cpu p-slots, the rest as one-cpu static slots."""
    p_machines = round(slots * pslot_fraction / CPUS)
    s_machines = max(0, (slots - p_machines * CPUS) // CPUS)
    static = parse_config(
        f"NUM_CPUS = {CPUS}\nMEMORY = 65536\nNUM_SLOTS_TYPE_1 = {CPUS}\nSLOT_TYPE_1 = 1/{CPUS}\n"
    )
    part = parse_config(
        f"NUM_CPUS = {CPUS}\nMEMORY = 65536\nSLOT_TYPE_0_PARTITIONABLE = True\n"
        "CONSUMPTION_POLICY = True\n"
    )
    ads, private = [], []
    for i in range(s_machines + p_machines):
        cfg = static if i < s_machines else part
        m = Machine(f"node{i:06d}", cfg, "127.0.0.1:1", 0, 0.0)
        ads += m.public_ads(0.0)
        private += m.private_ads()
    return CycleAds(ads, private)


def make_requests(
    autoclusters: int,
    jobs: int,
    submitters: int,
    groups: list[str] | None,
    d: str,
    transfer: str = "IF_NEEDED",
    distinct: bool = False,
) -> list[ResourceRequest]:
    """``autoclusters`` requests spread over ``submitters`` (4 schedds), each asking for
    ``jobs // autoclusters`` idle jobs."""
    per_ac = max(1, jobs // autoclusters)
    schedds = [
        Schedd(f"schedd{k}", JobQueue(os.path.join(d, f"q{k}.db")), parse_config(""), 0.0)
        for k in range(4)
    ]
    first = 0
    for u in range(submitters):
        mine = autoclusters // submitters + (1 if u < autoclusters % submitters else 0)
        if not mine:
            continue
        s = schedds[u % len(schedds)]
        # one job per autocluster: request_memory varies, every 7th asks for 2 cpus;
        # distinct: request_disk (KiB) differs in every autocluster of the pool too
        rows = [(512 + 8 * k, 2 if k % 7 == 6 else 1, 1024 + first + k) for k in range(mine)]
        first += mine
        cols = "mem, cpus, disk" if distinct else "mem, cpus"
        items = "\n".join(", ".join(map(str, r if distinct else r[:2])) for r in rows)
        disk = "request_disk=$(disk)\n" if distinct else ""
        group = f"accounting_group = {groups[u % len(groups)]}\n" if groups else ""
        s.submit(
            f"executable=/bin/sleep\narguments=600\nshould_transfer_files={transfer}\n"
            f"request_memory=$(mem)\n{disk}"
            f"request_cpus=$(cpus)\n{group}queue {cols} from (\n{items}\n)",
            "bench.sub",
            f"user{u:03d}",
            0.0,
        )
    out = []
    for s in schedds:
        reqs, errors = requests_from_ads(s.resource_requests(), s.name, "127.0.0.1:3")
        assert not errors, errors
        for r in reqs:
            r.ad["ResourceRequestCount"] = per_ac
            out.append(dataclasses.replace(r, count=per_ac))
        s.queue.close()
    return out


def decoded(snapshot: CycleAds) -> tuple[CycleAds, float]:
    """The ads as the live negotiator has them: through the wire and its decoder (equal
    attributes share their trees and literals); the seconds decoding took."""
    decoder = AdDecoder()
    raw = [ad_to_bytes(a) for a in snapshot.slots], [ad_to_bytes(a) for a in snapshot.private_ads]
    t0 = time.perf_counter()
    out = CycleAds(decoder.decode_bytes(raw[0]), decoder.decode_bytes(raw[1]))
    return out, time.perf_counter() - t0


def run_once(ns: argparse.Namespace, slots: int, autoclusters: int, jobs: int) -> dict:
    snapshot = make_slots(slots, ns.pslot_fraction)
    decode_secs = None
    if ns.ads == "decoded":
        snapshot, decode_secs = decoded(snapshot)
    group_text, leaves = tree_config() if ns.groups == "tree" else ("", None)
    with tempfile.TemporaryDirectory() as d:
        requests = make_requests(
            autoclusters, jobs, ns.submitters, leaves, d, ns.transfer, ns.shapes == "distinct"
        )
    config = CycleConfig.from_config(parse_config(group_text))
    if ns.by_slot:
        config = dataclasses.replace(config, slot_classes=False)
    prof = cProfile.Profile() if ns.profile else None
    # A daemon's gctune.Keeper freezes what the process holds (the negotiator's decoded
    # snapshot) within a tenth of a second: the cycle's collections do not walk it.
    gctune.Keeper().tick()
    t0 = time.perf_counter()
    c0 = time.process_time()
    if prof:
        prof.enable()
    result = negotiate(
        snapshot,
        requests,
        Accountant(),
        config,
        0.0,
        timer=lambda: time.perf_counter() - t0,
        cpu_timer=time.process_time,
    )
    if prof:
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(25)
    secs, cpu = time.perf_counter() - t0, time.process_time() - c0
    s = result.stats
    return {
        "slots": len(snapshot.slots),
        "requests": len(requests),
        "matches": len(result.matches),
        "secs": secs,
        "cpu": cpu,
        "phases": (s.duration_phase1, s.duration_phase2, s.duration_phase3, s.duration_phase4),
        "classes": s.slot_classes,
        "rows": (s.rows_evaluated, s.rows_remembered, s.requests_by_slot, s.orders_remembered),
        "decode_secs": decode_secs,
    }


def report(r: dict) -> None:
    p = r["phases"]
    print(
        f"slots {r['slots']:,}  requests {r['requests']:,}  matches {r['matches']:,}  "
        f"classes {r['classes']:,}  cycle {r['secs']:.3f} s (cpu {r['cpu']:.3f} s)  "
        f"{r['matches'] / r['secs']:,.0f} matches/s"
    )
    print(
        f"  phase 1 {p[0]:.3f} s  phase 2 {p[1]:.3f} s  phase 3 {p[2]:.3f} s  "
        f"phase 4 {p[3]:.3f} s  peak memory {peak_mib():,.0f} MiB"
    )
    ev, kept, by_slot, orders = r["rows"]
    print(
        f"  answers: {ev:,} rows evaluated, {kept:,} remembered; {by_slot:,} requests slot by "
        f"slot; {orders:,} requests took a same-shaped one's candidate order"
    )
    if r["decode_secs"] is not None:
        print(f"  (the ads decoded from the wire beforehand in {r['decode_secs']:.3f} s)")


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--slots", type=int, default=10_000)
    ap.add_argument("--autoclusters", type=int, default=1_000)
    ap.add_argument("--jobs", type=int, default=100_000)
    ap.add_argument("--submitters", type=int, default=200)
    ap.add_argument("--pslot-fraction", type=float, default=0.5)
    ap.add_argument("--groups", choices=("tree", "none"), default="tree")
    ap.add_argument(
        "--transfer",
        choices=("IF_NEEDED", "YES"),
        default="IF_NEEDED",
        help="should_transfer_files: IF_NEEDED jobs read FileSystemDomain, YES jobs do not",
    )
    ap.add_argument("--by-slot", action="store_true", help="every slot its own class")
    ap.add_argument(
        "--shapes",
        choices=("shared", "distinct"),
        default="shared",
        help="submitters share job shapes, or every autocluster has its own",
    )
    ap.add_argument(
        "--ads",
        choices=("made", "decoded"),
        default="made",
        help="slot ads as the startd cores make them, or as the live negotiator decodes "
        "them from the collector (equal attributes share their trees and literals)",
    )
    ap.add_argument("--growth", action="store_true", help="1k to 100k slots")
    ap.add_argument("--profile", action="store_true")
    ns = ap.parse_args()
    gctune.paced()  # the garbage collector's pace in the pool's daemons
    if not ns.growth:
        report(run_once(ns, ns.slots, ns.autoclusters, ns.jobs))
        return
    print("slots x autoclusters: cycle seconds")
    for slots in (1_000, 10_000, 100_000):
        for acs in (10, 100, 1_000, 10_000):
            r = run_once(ns, slots, acs, 10 * slots)
            print(
                f"  {slots:>7,} x {acs:>6,}: {r['secs']:7.3f} s  matches {r['matches']:>7,}  "
                f"classes {r['classes']:>6,}"
            )


if __name__ == "__main__":
    main()
