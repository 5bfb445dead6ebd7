"""The reports' pictures (:mod:`calibration.plots`) as SVG: where each point and band is drawn,
text escaped, and, in real Chromium at 1400 px, every label inside the picture and apart."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from browser_helpers import BROWSER, launch
from calibration.plots import BatchPoint, Point, batch_plot, forest_plot, nice_ticks
from plot_fixtures import HOSTILE, WEEKS, page

SVG = "{http://www.w3.org/2000/svg}"


def _tree(svg: str) -> ET.Element:
    return ET.fromstring(svg)  # well-formed XML: every text escaped


def _points(root: ET.Element) -> list[tuple[float, float]]:
    """The circles drawn for values (below the legend)."""
    return [(float(c.get("cx")), float(c.get("cy"))) for c in root.iter(f"{SVG}circle") if float(c.get("cy")) > 70]


def _axis(root: ET.Element) -> tuple[float, float]:
    axis = next(line for line in root.iter(f"{SVG}line") if line.get("stroke") == "#888")
    return float(axis.get("x1")), float(axis.get("x2"))


def test_forest_rows_are_sorted_and_points_sit_at_their_values() -> None:
    svg = forest_plot([Point("a", "m", 0.2, 0.1, 0.3), Point("b", "m", 0.8, 0.7, 0.9), Point("c", "m", 0.5, 0.4, 0.6)],
                      title="t")
    root = _tree(svg)
    rows = [t.text for t in root.iter(f"{SVG}text") if t.get("text-anchor") == "end"]
    assert rows == ["b", "c", "a"]
    circles = _points(root)
    assert [cy for _, cy in circles] == sorted(cy for _, cy in circles)  # b on top, a at the bottom
    # The axis runs from tick 0.0 at x0 to tick 1.0 at x1: a value v sits at x0 + v (x1 - x0).
    x0, x1 = _axis(root)
    assert [cx for cx, _ in circles] == pytest.approx([x0 + v * (x1 - x0) for v in (0.8, 0.5, 0.2)])


def test_the_mdd_is_a_band_around_zero_and_the_reference_is_drawn() -> None:
    root = _tree(forest_plot([Point("A − B", "d", 0.05, -0.02, 0.12, mdd=0.1)], title="t"))
    bands = [r for r in root.iter(f"{SVG}rect") if r.find(f"{SVG}title") is not None]
    (band,) = bands
    assert band.find(f"{SVG}title").text == "MDD ±0.1"
    ticks = nice_ticks(-0.1, 0.12)
    lo, hi = ticks[0], ticks[-1]
    x0, x1 = _axis(root)
    assert float(band.get("width")) == pytest.approx(0.2 / (hi - lo) * (x1 - x0), abs=0.2)
    assert any(line.get("stroke-dasharray") for line in root.iter(f"{SVG}line"))  # the line at 0


def test_undefined_values_say_so_and_draw_nothing() -> None:
    root = _tree(forest_plot([Point("a", "m", float("nan"), float("nan"), float("nan")), Point("b", "m", 0.5, 0.4, 0.6),
                              Point("b", "k", 0.1, 0.0, 0.2)], title="t"))
    assert "m: n/a" in [t.text for t in root.iter(f"{SVG}text")]
    assert len(_points(root)) == 1  # b's m; its k is a square


def test_batch_lines_break_where_a_batch_has_no_value() -> None:
    points = [BatchPoint("s", b, v, v - 0.1, v + 0.1) for b, v in (("w1", 0.5), ("w2", 0.6), ("w4", 0.7), ("w5", 0.6))]
    root = _tree(batch_plot(points, title="t", batches=["w1", "w2", "w3", "w4", "w5"]))
    assert len(list(root.iter(f"{SVG}polyline"))) == 2  # w1-w2 and w4-w5
    assert len(list(root.iter(f"{SVG}polygon"))) == 2  # a band under each
    assert [t.text for t in root.iter(f"{SVG}text") if t.text in ("w1", "w3", "w5")] == ["w1", "w3", "w5"]


def test_every_text_is_escaped() -> None:
    svg = page()
    assert "<img" not in svg and "&lt;img src=x onerror=" in svg
    assert "<script" not in svg and "http://" not in svg.replace('xmlns="http://www.w3.org/2000/svg"', "")


def test_nice_ticks_cover_the_range_in_round_steps() -> None:
    for low, high in ((0, 1), (-0.13, 0.08), (0.61, 0.64), (3, 970), (0.5, 0.5)):
        ticks = nice_ticks(low, high)
        assert ticks[0] <= low and ticks[-1] >= high and 2 <= len(ticks) <= 12
        steps = {round(b - a, 9) for a, b in zip(ticks, ticks[1:])}
        assert len(steps) == 1
        mantissa = float(f"{steps.pop():e}".split("e")[0])
        assert mantissa in (1.0, 2.0, 2.5, 5.0)


_BOXES = """() => [...document.querySelectorAll('svg')].map(svg => {
  const box = svg.getBoundingClientRect();
  return {svg: [box.left, box.top, box.right, box.bottom],
          texts: [...svg.querySelectorAll('text')].map(t => { const b = t.getBoundingClientRect();
            return [t.textContent, b.left, b.top, b.right, b.bottom, t.getAttribute('text-anchor')]; })};
})"""


@pytest.mark.parametrize("viewport", [1400])
@BROWSER[0]
@BROWSER[1]
def test_the_pictures_read_in_chromium_at_1400_px(tmp_path: Path, viewport: int) -> None:
    from playwright.sync_api import sync_playwright

    (tmp_path / "plots.html").write_text(page(), encoding="utf-8")
    with sync_playwright() as p:
        browser = launch(p)
        try:
            tab = browser.new_page(viewport={"width": viewport, "height": 900})
            tab.goto((tmp_path / "plots.html").as_uri())
            assert tab.evaluate("() => window.hacked") is None  # the markup in a name did not run
            pictures = tab.evaluate(_BOXES)
            shot = tab.screenshot(full_page=True, path=str(tmp_path / "plots.png"))
        finally:
            browser.close()
    assert len(pictures) == 3
    for picture in pictures:
        left, top, right, bottom = picture["svg"]
        assert right <= viewport  # nothing scrolls sideways
        for text, *box, _ in picture["texts"]:
            assert left - 0.5 <= box[0] and box[2] <= right + 0.5 and top <= box[1] and box[3] <= bottom, (text, box)
        labels = [t for t in picture["texts"] if t[5] == "end" and not re.fullmatch(r"-?[\d.]+", t[0])]
        for a, b in zip(labels, labels[1:]):
            assert a[4] <= b[2] + 0.5, (a, b)  # row labels one under the other, not overlapping
    names = [t[0] for t in pictures[0]["texts"]]
    assert HOSTILE[:29] + "…" in names  # shown as the text it is, cut to fit  # shown as the text it is
    from PIL import Image

    image = Image.open(tmp_path / "plots.png").convert("RGB")
    assert image.width == viewport and image.height >= sum(p["svg"][3] - p["svg"][1] for p in pictures)
    colours = image.getcolors(maxcolors=1 << 20)
    assert colours is not None and len(colours) > 50  # drawn, not blank
    assert shot[:8] == b"\x89PNG\r\n\x1a\n"
    assert WEEKS[0] in [t[0] for t in pictures[2]["texts"]]
