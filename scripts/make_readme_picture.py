"""Make docs/img/sawtooth.png, the README's small picture: the pool loading factor of
examples/sawtooth.toml (300 s jobs on 4 slots) in virtual time at a few negotiation
intervals, without claim reuse (CLAIM_WORKLIFE = 0: on the saw-tooth) and with it (-1:
near 1), over the theoretical saw-tooth D / (C·(⌊D/C⌋ + ⌈D/C - ⌊D/C⌋⌉)).

    python scripts/make_readme_picture.py [--out docs/img/sawtooth.png]

The full sweep is scripts/make_sawtooth_plot.py (examples/sawtooth.png).
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from mockpool.pool.measures import sawtooth
from mockpool.pool.sweep import run_sweep

ROOT = Path(__file__).resolve().parents[1]
DURATION = 300.0  # examples/sawtooth.toml's jobs
INTERVALS = ["1000", "400", "250", "200", "150", "120", "100", "75", "60"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default=str(ROOT / "docs" / "img" / "sawtooth.png"))
    ns = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run_sweep(
            str(ROOT / "examples" / "sawtooth.toml"),
            [("CLAIM_WORKLIFE", ["0", "-1"]), ("NEGOTIATOR_INTERVAL", INTERVALS)],
            out=tmp,
            workers=1,
        )
        table = json.loads((Path(tmp) / "sweep.json").read_text())["table"]
    fig, ax = plt.subplots(figsize=(6.0, 2.6))
    x = np.linspace(0.05, 5.2, 2000)
    ax.plot(x, [sawtooth(v) for v in x], color="0.6", lw=1, label="theory, no claim reuse")
    for worklife, label, marker in (("0", "measured, no reuse", "o"), ("-1", "with reuse", "s")):
        pts = sorted(
            (DURATION / float(r["NEGOTIATOR_INTERVAL"]), r["loading_factor"])
            for r in table
            if str(r["CLAIM_WORKLIFE"]) == worklife and r.get("loading_factor") is not None
        )
        ax.plot(*zip(*pts, strict=True), marker, ms=4, label=label)
    ax.set_xlabel("job duration D / negotiation interval C")
    ax.set_ylabel("loading factor")
    ax.set_ylim(0, 1.05)
    ax.set_xlim(0, 5.2)
    ax.legend(loc="lower right", fontsize=7, frameon=False)
    fig.tight_layout()
    Path(ns.out).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(ns.out, format="png", dpi=80)
    print(f"wrote {ns.out}")


if __name__ == "__main__":
    main()
