"""report.html in a real browser (headless Chromium): it renders, every image loads, no
console errors; a screenshot of each goes to $MOCKPOOL_SCREENSHOTS when set. Skipped,
saying so, where Chromium is not installed (.ci/run installs Debian's package)."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from mockpool.pool.plots import write_report

DATA = Path(__file__).parent / "testdata" / "measures"
BROWSER = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    BROWSER is None, reason="no chromium on PATH (apt-get install chromium; .ci/run does)"
)

# Appended to a copy of the page: after load, the page writes what it found into the DOM.
_PROBE = """<script>
window.addEventListener('load', () => {
  const imgs = [...document.images].map(i => ({alt: i.alt, w: i.naturalWidth, done: i.complete}));
  const pre = document.createElement('pre'); pre.id = 'probe';
  pre.textContent = JSON.stringify(imgs);
  document.body.appendChild(pre);
});
</script>"""


def _chromium(*args: str) -> subprocess.CompletedProcess[str]:
    assert BROWSER is not None
    return subprocess.run(
        [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--enable-logging=stderr", "--v=0", *args],
        capture_output=True, text=True, check=False,
    )  # fmt: skip


def _check(page: Path, name: str, tmp: Path) -> None:
    probe = tmp / f"{name}-probe.html"
    probe.write_text(page.read_text().replace("</body>", _PROBE + "</body>"))
    proc = _chromium("--virtual-time-budget=3000", "--dump-dom", probe.as_uri())
    found = re.search(r'<pre id="probe">(.*?)</pre>', proc.stdout, re.S)
    assert found, f"{name}: the page did not render (stderr: {proc.stderr[-2000:]})"
    images = json.loads(html.unescape(found.group(1)))
    assert images, f"{name}: no image"
    assert all(i["done"] and i["w"] > 0 for i in images), images
    console = [ln for ln in proc.stderr.splitlines() if "CONSOLE" in ln or "Uncaught" in ln]
    assert not console, console
    if out := os.environ.get("MOCKPOOL_SCREENSHOTS"):
        Path(out).mkdir(parents=True, exist_ok=True)
        shot = Path(out) / f"report-{name}.png"
        _chromium("--window-size=1100,4200", f"--screenshot={shot}", page.as_uri())
        assert shot.is_file()


def test_a_runs_report_renders_in_chromium(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(DATA / "two_slots.jsonl", run / "events.jsonl")
    (run / "summary.json").write_text(
        json.dumps({"pool_seconds": 140.0, "total_cpus": 2, "cycles": 3, "matches": 3, "lag": {}})
    )
    _check(write_report(run), "run", tmp_path)


def test_a_sweeps_report_renders_in_chromium(tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    table = [
        {"CLAIM_WORKLIFE": w, "NEGOTIATOR_INTERVAL": i, "seeds": 2,
         "loading_factor": lf, "loading_factor_ci95": 0.02, "wait_mean_s": 30.0 + lf,
         "cycles": 10, "cycle_seconds": 0.0, "time_to_fair_share_s": None}
        for w, lf in (("-1", 0.9), ("0", 0.6), ("600", 0.8))
        for i in ("30", "60")
    ]  # fmt: skip
    (sweep / "sweep.json").write_text(
        json.dumps(
            {
                "spec": "x.toml",
                "clock": "virtual",
                "knobs": {
                    "CLAIM_WORKLIFE": ["-1", "0", "600"],
                    "NEGOTIATOR_INTERVAL": ["30", "60"],
                },
                "seeds": [0, 1],
                "table": table,
            }
        )
    )
    _check(write_report(sweep), "sweep", tmp_path)
