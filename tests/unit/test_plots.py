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

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "img":
            self.images.append(dict(attrs))
        self._in_caption = tag == "figcaption"

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


def test_every_plot_has_a_title_labelled_axes_and_a_legend() -> None:
    figs = figures(_measures())
    assert len(figs) == 5
    for caption, fig in figs:
        # twin axes (a second y scale) share the main axes' title and x label
        main_axes = [ax for ax in fig.axes if ax.get_title()]
        assert main_axes, caption
        for ax in fig.axes:
            assert ax.get_ylabel(), f"{caption}: an axis has no y label"
            assert "(" in ax.get_ylabel(), f"{caption}: y label {ax.get_ylabel()!r} gives no unit"
        for ax in main_axes:
            assert ax.get_xlabel() and "(" in ax.get_xlabel(), (
                f"{caption}: x label {ax.get_xlabel()!r}"
            )
            assert ax.get_legend() is not None, f"{caption}: no legend"


def test_the_saw_tooth_plot_draws_theory_and_the_measured_point() -> None:
    (_, fig), *_ = figures(_measures())
    ax = fig.axes[0]
    theory, points = ax.get_lines()
    assert max(theory.get_ydata()) == pytest.approx(1.0, abs=1e-2)
    assert list(points.get_xdata()) == [0.5] and list(points.get_ydata()) == [0.5455]


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
