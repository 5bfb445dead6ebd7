"""Static SVG pictures for the HTML reports: a forest plot and a batch plot.

- :func:`forest_plot`: per row (a system, a run, or a pair's difference) each series (a metric)
  as a point with its interval, all on one horizontal axis; rows sorted by their first series;
  for a paired difference the minimum detectable difference is drawn as a grey band around 0:
  a difference inside it is one the set cannot tell from none.
- :func:`batch_plot`: per series (a system's metric) a line over the batches, in order, with
  its interval as a band.

Pure functions of numbers and labels to one ``<svg>`` element: no script, no font or style
fetched, every text escaped (a system's name is data). Laid out at 1400 px wide, the width
the reports are read at, with 13-15 px text.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape

__all__ = ["BatchPoint", "Point", "batch_plot", "forest_plot", "nice_ticks"]

WIDTH = 1400
#: Okabe & Ito's colour-blind-safe palette (2008), without its yellow (too light on white).
COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#56B4E9", "#E69F00", "#000000")
MARKERS = ("circle", "square", "diamond", "triangle")
_FONT = "font-family=\"system-ui,sans-serif\""
_LABEL = 46  # characters of a value's label at the right of a forest plot (13 px text in 320 px)


@dataclass(frozen=True, slots=True)
class Point:
    """One estimate of a forest plot: ``series`` (a metric) of ``row`` (a system, run or pair)."""

    row: str
    series: str
    value: float
    low: float
    high: float
    mdd: float | None = None  # a paired difference's minimum detectable difference (drawn around 0)
    n: int | None = None


@dataclass(frozen=True, slots=True)
class BatchPoint:
    """One estimate of a batch plot: ``series`` (a system's metric) in ``batch``."""

    series: str
    batch: str
    value: float
    low: float
    high: float
    n: int | None = None


def _finite(*values: float | None) -> bool:
    return all(v is not None and math.isfinite(v) for v in values)


def nice_ticks(low: float, high: float, count: int = 6) -> list[float]:
    """Round tick values covering [low, high], about ``count`` of them (steps of 1, 2 or 5 × 10^k).

    >>> nice_ticks(0.0, 1.0)
    [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    >>> nice_ticks(-0.13, 0.08)
    [-0.15, -0.1, -0.05, 0.0, 0.05, 0.1]
    """
    if not high > low:
        high = low + 1.0
    raw = (high - low) / max(count - 1, 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    first = math.floor(low / step + 1e-9)
    last = max(math.ceil(high / step - 1e-9), first + 1)
    return [round(i * step, 10) + 0.0 for i in range(first, last + 1)]


def _number(v: float) -> str:
    return f"{v:.3g}" if abs(v) < 1000 else f"{v:,.0f}"


def _text(x: float, y: float, text: str, *, anchor: str = "start", size: int = 15, fill: str = "#222",
          weight: str = "normal") -> str:
    return (f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" font-size="{size}" font-weight="{weight}" '
            f'fill="{fill}" {_FONT}>{escape(text)}</text>')


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _marker(shape: str, x: float, y: float, colour: str, tip: str) -> str:
    title = f"<title>{escape(tip)}</title>"
    if shape == "square":
        return f'<rect x="{x - 5:.1f}" y="{y - 5:.1f}" width="10" height="10" fill="{colour}">{title}</rect>'
    if shape == "diamond":
        return (f'<polygon points="{x:.1f},{y - 7:.1f} {x + 7:.1f},{y:.1f} {x:.1f},{y + 7:.1f} {x - 7:.1f},{y:.1f}" '
                f'fill="{colour}">{title}</polygon>')
    if shape == "triangle":
        return (f'<polygon points="{x:.1f},{y - 7:.1f} {x + 6:.1f},{y + 5:.1f} {x - 6:.1f},{y + 5:.1f}" '
                f'fill="{colour}">{title}</polygon>')
    return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="6" fill="{colour}">{title}</circle>'


def _svg(height: float, body: Sequence[str], title: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height:.0f}" '
            f'viewBox="0 0 {WIDTH} {height:.0f}" role="img" aria-label="{escape(title)}" style="max-width:100%;height:auto">'
            f"<title>{escape(title)}</title>" + "".join(body) + "</svg>")


def _legend(series: Sequence[str], y: float, x: float = 20) -> list[str]:
    body = []
    for j, name in enumerate(series):
        body.append(_marker(MARKERS[j % len(MARKERS)], x + 6, y - 5, COLOURS[j % len(COLOURS)], name))
        label = _clip(name, 40)
        body.append(_text(x + 18, y, label, size=14))
        x += 40 + 8.5 * len(label)
    return body


def _series_order(names: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(names))


def _row_order(points: Sequence[Point], rows: list[str], series: list[str]) -> list[str]:
    """Rows by their first series' value, highest first (undefined last), ties by name."""
    first = {p.row: p.value for p in points if p.series == series[0] and _finite(p.value)}
    return sorted(rows, key=lambda r: (r not in first, -first.get(r, 0.0), r))


def forest_plot(points: Sequence[Point], *, title: str, axis: str = "", reference: float | None = None,
                sort: bool = True) -> str:
    """Each row's series as points with their intervals on one axis, as one ``<svg>``.

    Args:
        points: the estimates; a row's ``mdd`` (paired differences) draws a grey band
            [reference − mdd, reference + mdd] behind the row.
        title: the plot's heading (also its accessible name).
        axis: what the horizontal axis measures.
        reference: a value drawn as a vertical line (0 for differences; with an MDD, 0 by default).
        sort: rows by their first series, highest first; else in the order given.
    """
    series = _series_order([p.series for p in points])
    rows = _series_order([p.row for p in points])
    if sort and series:
        rows = _row_order(points, rows, series)
    if reference is None and any(p.mdd is not None for p in points):
        reference = 0.0
    by = {(p.row, p.series): p for p in points}
    values = [v for p in points for v in (p.low, p.high, p.value) if _finite(v)]
    values += [reference] if reference is not None else []
    values += [(reference or 0.0) + s * p.mdd for p in points if _finite(p.mdd) for s in (-1, 1)]
    ticks = nice_ticks(min(values, default=0.0), max(values, default=1.0))
    lo, hi = ticks[0], ticks[-1]
    left, right, top = 320, WIDTH - 350, 78
    step = max(36, 20 * len(series) + 14)

    def x(v: float) -> float:
        return left + (v - lo) / (hi - lo) * (right - left)

    bottom = top + step * len(rows)
    named = _named(points, by, series)
    body = [f'<rect x="0" y="0" width="{WIDTH}" height="{bottom + 70}" fill="#fff"/>',
            _text(20, 28, title, size=17, weight="600"), *_legend(series, 56)]
    for i, row in enumerate(rows):
        y0 = top + i * step
        if i % 2:
            body.append(f'<rect x="10" y="{y0:.1f}" width="{WIDTH - 20}" height="{step}" fill="#f5f5f5"/>')
        mdd = _row_mdd(by, row, series)
        if mdd is not None:
            centre = reference or 0.0
            body.append(f'<rect x="{x(centre - mdd):.1f}" y="{y0 + 3:.1f}" width="{x(centre + mdd) - x(centre - mdd):.1f}" '
                        f'height="{step - 6}" fill="#bbb" fill-opacity="0.45"><title>{escape(f"MDD ±{_number(mdd)}")}'
                        "</title></rect>")
        body.append(_text(left - 16, y0 + step / 2 + 5, _clip(row, 30), anchor="end"))
        body += _forest_row(by, row, series, y0, step, x, named)
    for t in ticks:
        body.append(f'<line x1="{x(t):.1f}" y1="{top}" x2="{x(t):.1f}" y2="{bottom}" stroke="#ddd"/>')
        body.append(_text(x(t), bottom + 20, _number(t), anchor="middle", size=13))
    if reference is not None:
        body.append(f'<line x1="{x(reference):.1f}" y1="{top - 4}" x2="{x(reference):.1f}" y2="{bottom}" stroke="#555" '
                    'stroke-dasharray="4 3"/>')
    body.append(f'<line x1="{left}" y1="{bottom}" x2="{right}" y2="{bottom}" stroke="#888"/>')
    note = "; grey band: the minimum detectable difference (80% power), a difference inside it cannot be told from 0" \
        if any(_finite(p.mdd) for p in points) else ""
    body.append(_text(left, bottom + 46, (axis + note) if axis else note.lstrip("; "), size=13, fill="#555"))
    return _svg(bottom + 70, body, title)


def _value_label(p: Point, mdd: float | None) -> str:
    """``value [low, high], n=N`` (and the row's MDD), or ``n/a``."""
    label = "n/a" if not _finite(p.value) else \
        _number(p.value) + (f" [{_number(p.low)}, {_number(p.high)}]" if _finite(p.low, p.high) else "")
    if p.n is not None:
        label += f", n={p.n}"
    return label + (f", MDD ±{_number(mdd)}" if mdd is not None else "")


def _row_mdd(by: Mapping[tuple[str, str], Point], row: str, series: Sequence[str]) -> float | None:
    return next((by[(row, s)].mdd for s in series if (row, s) in by and _finite(by[(row, s)].mdd)), None)


def _named(points: Sequence[Point], by: Mapping[tuple[str, str], Point], series: Sequence[str]) -> bool:
    """Whether each value label names its series: when every one fits (else the legend's
    colours and order name them)."""
    return len(series) > 1 and all(
        len(p.series) + 2 + len(_value_label(p, _row_mdd(by, p.row, series) if p.series == series[0] else None)) <= _LABEL
        for p in points)


def _forest_row(by: Mapping[tuple[str, str], Point], row: str, series: Sequence[str], y0: float, step: float, x,
                named: bool) -> list[str]:
    """One row's points, intervals and value labels (``named``: each label says its series)."""
    body = []
    k = len(series)
    mdd = _row_mdd(by, row, series)
    for j, name in enumerate(series):
        p = by.get((row, name))
        y = y0 + step / 2 + (j - (k - 1) / 2) * 20
        colour = COLOURS[j % len(COLOURS)]
        if p is None:
            continue
        label = _value_label(p, mdd if j == 0 else None)
        if named:
            label = f"{name}: {label}"
        body.append(_text(WIDTH - 335, y + 5, _clip(label, _LABEL), size=13, fill=colour))
        if not _finite(p.value):
            continue
        if _finite(p.low, p.high):
            body.append(f'<line x1="{x(p.low):.1f}" y1="{y:.1f}" x2="{x(p.high):.1f}" y2="{y:.1f}" stroke="{colour}" '
                        'stroke-width="2.5"/>')
            for end in (p.low, p.high):
                body.append(f'<line x1="{x(end):.1f}" y1="{y - 5:.1f}" x2="{x(end):.1f}" y2="{y + 5:.1f}" '
                            f'stroke="{colour}" stroke-width="2"/>')
        body.append(_marker(MARKERS[j % len(MARKERS)], x(p.value), y, colour, f"{row}, {name}: {label}"))
    return body


def batch_plot(points: Sequence[BatchPoint], *, title: str, axis: str = "", batches: Sequence[str] | None = None,
               height: int = 480) -> str:
    """Per series a line over the batches (in ``batches`` order, else as first given), its
    interval a band, as one ``<svg>``. A batch a series has no value in breaks its line."""
    order = list(batches) if batches is not None else _series_order([p.batch for p in points])
    series = _series_order([p.series for p in points])
    values = [v for p in points for v in (p.low, p.high, p.value) if _finite(v)]
    ticks = nice_ticks(min(values, default=0.0), max(values, default=1.0))
    lo, hi = ticks[0], ticks[-1]
    left, right, top, bottom = 110, WIDTH - 60, 84, height - 90
    gap = (right - left) / max(len(order) - 1, 1)

    def x(i: int) -> float:
        return left + (i * gap if len(order) > 1 else (right - left) / 2)

    def y(v: float) -> float:
        return bottom - (v - lo) / (hi - lo) * (bottom - top)

    body = [f'<rect x="0" y="0" width="{WIDTH}" height="{height}" fill="#fff"/>',
            _text(20, 28, title, size=17, weight="600"), *_legend(series, 58)]
    for t in ticks:
        body.append(f'<line x1="{left}" y1="{y(t):.1f}" x2="{right}" y2="{y(t):.1f}" stroke="#e3e3e3"/>')
        body.append(_text(left - 12, y(t) + 5, _number(t), anchor="end", size=13))
    every = max(1, math.ceil(len(order) * 110 / (right - left)))  # labels ~110 px apart at most
    for i, batch in enumerate(order):
        if i % every == 0 or i == len(order) - 1:
            body.append(_text(x(i), bottom + 24, _clip(batch, 16), anchor="middle", size=13))
    index = {b: i for i, b in enumerate(order)}
    for j, name in enumerate(series):
        mine = {p.batch: p for p in points if p.series == name and p.batch in index and _finite(p.value)}
        body += _batch_series(mine, order, j, x, y, name)
    body.append(f'<line x1="{left}" y1="{bottom}" x2="{right}" y2="{bottom}" stroke="#888"/>')
    body.append(_text(left, bottom + 56, axis or "batch", size=13, fill="#555"))
    return _svg(height, body, title)


def _batch_series(mine: dict[str, BatchPoint], order: Sequence[str], j: int, x, y, name: str) -> list[str]:
    colour = COLOURS[j % len(COLOURS)]
    body = []
    runs: list[list[int]] = []
    for i, batch in enumerate(order):
        if batch in mine:
            if runs and runs[-1][-1] == i - 1:
                runs[-1].append(i)
            else:
                runs.append([i])
    for run in runs:
        ps = [mine[order[i]] for i in run]
        if all(_finite(p.low, p.high) for p in ps) and len(run) > 1:
            upper = [f"{x(i):.1f},{y(p.high):.1f}" for i, p in zip(run, ps, strict=True)]
            lower = [f"{x(i):.1f},{y(p.low):.1f}" for i, p in zip(reversed(run), reversed(ps), strict=True)]
            body.append(f'<polygon points="{" ".join(upper + lower)}" fill="{colour}" fill-opacity="0.16" stroke="none"/>')
        if len(run) > 1:
            line = " ".join(f"{x(i):.1f},{y(p.value):.1f}" for i, p in zip(run, ps, strict=True))
            body.append(f'<polyline points="{line}" fill="none" stroke="{colour}" stroke-width="2.5"/>')
        for i, p in zip(run, ps, strict=True):
            if _finite(p.low, p.high):
                body.append(f'<line x1="{x(i):.1f}" y1="{y(p.low):.1f}" x2="{x(i):.1f}" y2="{y(p.high):.1f}" '
                            f'stroke="{colour}" stroke-opacity="0.5" stroke-width="1.5"/>')
            tip = f"{name}, {p.batch}: {_number(p.value)}" + (
                f" [{_number(p.low)}, {_number(p.high)}]" if _finite(p.low, p.high) else "") + (
                f", n={p.n}" if p.n is not None else "")
            body.append(_marker(MARKERS[j % len(MARKERS)], x(i), y(p.value), colour, tip))
    return body
