"""The HTML report: every plot says what it shows, every image is a PNG, no run is refused."""

from __future__ import annotations

import base64
import json
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest

from mockpool.cli.main import main
from mockpool.pool.measures import MeasureError, measure
from mockpool.pool.plots import figures, render_html, write_report

DATA = Path(__file__).parent / "testdata" / "measures"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.images: list[dict[str, str | None]] = []
        self.captions: list[str] = []
        self._in_caption = False
        self._in_fig = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "img":
            self.images.append(dict(attrs))
        self._in_caption = tag == "b" and self._in_fig
        self._in_fig = (self._in_fig or tag == "figcaption") and tag != "img"

    def handle_data(self, data: str) -> None:
        if self._in_caption:
            self.captions.append(data)
            self._in_caption = False


def _measures():  # type: ignore[no-untyped-def]
    events = [json.loads(line) for line in (DATA / "two_slots.jsonl").read_text().splitlines()]
    return measure(events, now=120.0, total_cpus=2, bin_seconds=60)


def _run_folder(tmp_path: Path) -> Path:
    shutil.copy(DATA / "two_slots.jsonl", tmp_path / "events.jsonl")
    (tmp_path / "summary.json").write_text(
        json.dumps({"pool_seconds": 120.0, "total_cpus": 2, "cycles": 3, "matches": 3, "lag": {}})
    )
    return tmp_path


def test_every_plot_has_a_title_labelled_axes_a_legend_and_a_reading() -> None:
    figs = figures(_measures())
    # loading factor, utilisation, waits, fair share, cycles; durations are all 1 s here
    assert [p.caption.split()[0] for p in figs.plots] == [
        "Loading",
        "Utilisation",
        "Wait-time",
        "Fair",
        "Negotiation",
    ]
    for p in figs.plots:
        assert len(p.reading) > 40, p.caption  # a sentence on how to read it
        titled = [ax for ax in p.figure.axes if ax.get_title()]
        assert titled, p.caption
        for ax in p.figure.axes:
            assert "(" in ax.get_ylabel(), f"{p.caption}: y label {ax.get_ylabel()!r}"
        for ax in titled:
            assert ax.get_legend() is not None, f"{p.caption}: no legend"
        assert "(" in p.figure.axes[-1].get_xlabel() or "(" in titled[0].get_xlabel()


def test_an_empty_panel_is_left_out_with_a_note_saying_why() -> None:
    ev = [json.loads(line) for line in (DATA / "two_slots.jsonl").read_text().splitlines()]
    for e in ev:
        if e["kind"] == "cycle":
            e["duration"] = 0.0  # virtual time: a cycle costs nothing
    figs = figures(measure(ev, now=120.0, total_cpus=2, bin_seconds=60))
    cycles = next(p for p in figs.plots if p.caption.startswith("Negotiation"))
    assert len(cycles.figure.axes) == 2  # cadence and matches, no flat-zero durations
    assert any("durations: not drawn, every cycle took 0 pool s" in n for n in figs.notes)
    empty = figures(measure([], now=60.0, total_cpus=4))
    assert empty.plots == [] or all(p.caption != "Wait-time distribution" for p in empty.plots)
    assert any(n.startswith("Wait times: not drawn") for n in empty.notes)


def test_the_loading_factor_plot_draws_every_job_binned_by_duration() -> None:
    p = figures(_measures()).plots[0]
    ax = p.figure.axes[0]
    assert ax.get_lines()[0].get_label().startswith("theory")
    # two jobs (1.0 and 1.1, 30 s, C = 60) ended while others waited and had a next job
    # on their slot 60 s after they started: 30 / 60 = 0.5 at D/C = 0.5
    pts = ax.collections[-1].get_offsets()
    assert [tuple(map(float, xy)) for xy in pts] == [(0.5, 0.5)]


def test_the_page_embeds_every_plot_as_a_png_with_alt_text_and_a_caption() -> None:
    page = _Page()
    page.feed(render_html("run x", {"cycles": 3}, _measures()))
    assert len(page.images) == 5 and len(page.captions) == 5
    for img in page.images:
        src = img["src"] or ""
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1], validate=True).startswith(PNG_MAGIC)
        assert img["alt"]
    assert set(page.captions) == {img["alt"] for img in page.images}


def test_write_report_writes_one_html_file_into_the_run_folder(tmp_path: Path) -> None:
    path = write_report(_run_folder(tmp_path))
    assert path == tmp_path / "report.html"
    text = path.read_text()
    assert text.startswith("<!DOCTYPE html>") and "pool loading factor" in text
    assert "http://" not in text and "https://" not in text  # self-contained


def test_a_folder_without_a_run_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(MeasureError, match="holds no run"):
        write_report(tmp_path)
    assert main(["report", str(tmp_path)]) == 2
    assert "holds no run" in capsys.readouterr().err
    assert not (tmp_path / "report.html").exists()


def test_the_report_command_writes_the_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", str(_run_folder(tmp_path))]) == 0
    assert "report.html" in capsys.readouterr().out
