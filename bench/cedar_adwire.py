"""How fast ads go onto the CEDAR wire: a collector's reply of 10,000 slot ads.

    python bench/cedar_adwire.py [--slots 10000] [--repeat 3]

Slot ads come from real startd ``Machine`` cores (16 one-cpu static slots a machine).
Prints, best of ``--repeat``:
- encoding every ad with no line made yet (``encode_ad``, the binding cache cleared),
- encoding again (each repeated binding's line made once: what a later query costs),
- a whole reply (1 before each ad, 0 after) built from ads already encoded (what a
  collector that keeps each ad's EncodedAd until it changes pays), plain and encrypted,
- a projected query (Name, State, Cpus, Memory),
- reading the reply back (``getClassAd``: the receiving side, for scale).
"""

from __future__ import annotations

import argparse
import time

from mockpool.cedar import adwire
from mockpool.cedar.adwire import encode_ad
from mockpool.cedar.stream import Builder, Message
from mockpool.config import parse_config
from mockpool.startd.machine import Machine

CPUS = 16


def make_slots(n: int) -> list:
    config = parse_config(
        f"NUM_CPUS = {CPUS}\nMEMORY = 65536\nNUM_SLOTS_TYPE_1 = {CPUS}\nSLOT_TYPE_1 = 1/{CPUS}\n"
    )
    ads = []
    for i in range((n + CPUS - 1) // CPUS):
        ads += Machine(f"node{i:06d}", config, "127.0.0.1:1", 0, 0.0).public_ads(0.0)
    return ads[:n]


def best(fn, repeat: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--slots", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3)
    ns = ap.parse_args()
    ads = make_slots(ns.slots)
    attrs = sum(len(a) for a in ads) / len(ads)
    print(f"{len(ads)} slot ads, {attrs:.0f} attributes each on average")

    def cold() -> list:
        adwire._LINES.clear()
        adwire._BY_BINDING.clear()
        return [encode_ad(a) for a in ads]

    t, encoded = best(cold, ns.repeat)
    print(f"encode, no line made yet:     {t:6.3f} s")
    t, encoded = best(lambda: [encode_ad(a) for a in ads], ns.repeat)
    print(f"encode, lines already made:   {t:6.3f} s")

    def reply(encrypted: bool) -> bytes:
        for e in encoded:  # a fresh render each time, as for a first query
            e._plain = e._encrypted = None
        out = Builder()
        for e in encoded:
            out.put_int(1).put_encoded_ad(e)
        return out.put_int(0).build(encrypted=encrypted)

    t, data = best(lambda: reply(False), ns.repeat)
    print(f"reply from encoded ads:       {t:6.3f} s  ({len(data) / 2**20:.1f} MiB)")
    t, _ = best(lambda: reply(True), ns.repeat)
    print(f"  the same, encrypted stream: {t:6.3f} s")
    proj = ["Name", "State", "Cpus", "Memory"]

    def projected() -> bytes:
        out = Builder()
        for a in ads:
            out.put_int(1).put_ad(a, proj)
        return out.put_int(0).build()

    t, _ = best(projected, ns.repeat)
    print(f"projected reply (4 attrs):    {t:6.3f} s")

    def read_back() -> int:
        msg = Message(data)
        n = 0
        while msg.get_int() == 1:
            msg.get_ad()
            n += 1
        return n

    t, n = best(read_back, 1)
    print(f"read back {n} ads:          {t:6.3f} s")


if __name__ == "__main__":
    main()
