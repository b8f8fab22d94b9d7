"""Make examples/sawtooth.png, the README's saw-tooth plot: a virtual-time sweep of
examples/sawtooth.toml over NEGOTIATOR_INTERVAL (D/C from 0.2 to 6) with claim reuse off
(CLAIM_WORKLIFE = 0) and on (-1), drawn as `mockpool report` draws a sweep.

    python scripts/make_sawtooth_plot.py [--out examples/sawtooth.png]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from mockpool.pool.plots import sweep_sawtooth
from mockpool.pool.sweep import run_sweep

ROOT = Path(__file__).resolve().parents[1]
INTERVALS = "1500,1000,600,400,300,250,200,150,120,100,75,60,50"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default=str(ROOT / "examples" / "sawtooth.png"))
    ns = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run_sweep(
            str(ROOT / "examples" / "sawtooth.toml"),
            [("CLAIM_WORKLIFE", ["0", "-1"]), ("NEGOTIATOR_INTERVAL", INTERVALS.split(","))],
            out=tmp,
            workers=1,
        )
        fig = sweep_sawtooth(json.loads((Path(tmp) / "sweep.json").read_text()))
    assert fig is not None
    fig.savefig(ns.out, format="png", dpi=90, bbox_inches="tight")
    print(f"wrote {ns.out}")


if __name__ == "__main__":
    main()
