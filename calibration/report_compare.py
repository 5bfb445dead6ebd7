"""The run comparison of ``goldpool compare --html`` (:class:`calibration.compare.Comparison`) as one
self-contained HTML page: the table of numbers, then per run its sentence and its sorted
per-query differences as bars on labelled axes (an inline SVG). Every name is escaped.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

from calibration.compare import Comparison
from calibration.report_figures import comparison_figures, with_figures
from calibration.report_page import STYLE, html_table, page_head, wide


def to_html(comparisons: Sequence[Comparison], title: str = "Run comparison") -> str:
    """One self-contained HTML page: a forest plot of each run's difference from the baseline
    with its interval and MDD, the table of numbers (as ``goldpool compare`` prints it), then per run its sentence and its sorted per-query differences as bars on labelled axes
    (an inline SVG; every name escaped)."""
    header = ["run", "baseline", "queries", "mean baseline", "mean run", "difference", "95% interval", "p",
              "p (Holm)", "sd(δ)", "MDD"]
    rows = [[c.run, c.baseline, f"{c.n:,}", f"{c.mean_baseline:.4f}", f"{c.mean_run:.4f}", f"{c.delta:+.4f}",
             f"[{c.low:+.4f}, {c.high:+.4f}]", f"{c.p_value:.4f}", f"{c.p_adjusted:.4f}", f"{c.sd:.4f}", f"{c.mdd:.4f}"]
            for c in comparisons]
    table = html_table(header, rows)
    metric = comparisons[0].metric if comparisons else ""
    parts = [page_head(title),
             f"<style>{STYLE}</style></head><body>", f"<h1>{escape(title)}</h1>",
             f"<h2>{escape(metric)}: each run against the baseline</h2>", wide(table),
             "<p class='note'>difference: mean of run − baseline over the queries both score, with a 95% bootstrap "
             "interval over queries; p: paired randomisation test (Holm-corrected across runs); MDD: the smallest "
             "difference this set resolves (80% power, α = 0.05).</p>"]
    for c in comparisons:
        parts.append(f"<h2>{escape(c.run)} against {escape(c.baseline)}</h2>")
        parts.append(f"<p>{escape(c.sentence)}</p>")
        parts.append(_deltas_svg(c))
    parts.append("</body></html>\n")
    return with_figures("\n".join(parts), comparison_figures(comparisons, metric))


def _ticks(top: float) -> list[float]:
    """Tick values of a round step on each side of zero, out to the first one at or beyond
    ``top`` (so every bar ends within the ticks): 2 to 4 a side.

    >>> _ticks(0.37)
    [-0.4, -0.3, -0.2, -0.1, 0.0, 0.1, 0.2, 0.3, 0.4]
    >>> _ticks(0.08)
    [-0.08, -0.06, -0.04, -0.02, 0.0, 0.02, 0.04, 0.06, 0.08]
    """
    raw = top / 4
    step = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1.0
    step = next(m * step for m in (1, 2, 5, 10) if m * step >= raw)
    count = math.ceil(top / step - 1e-9)
    return [round(i * step, 10) for i in range(-count, count + 1)]


def _deltas_svg(c: Comparison, width: int = 900, height: int = 260) -> str:
    """The per-query differences, sorted, as bars: a y axis of the difference with ticks, an x
    axis of the queries in that order, zero, the mean (dashed) and its interval (shaded)."""
    items = sorted(c.deltas.items(), key=lambda kv: kv[1])
    top = max([abs(v) for _, v in items] + [abs(c.low), abs(c.high)], default=1.0) or 1.0
    ticks = _ticks(top)
    top = max(top, abs(ticks[0]))
    left, right, upper, lower = 70, 20, 20, 50
    plot_w, plot_h = width - left - right, height - upper - lower
    bar = plot_w / max(1, len(items))

    def y(v: float) -> float:
        return upper + plot_h / 2 - v / top * (plot_h / 2)

    body = []
    if not (math.isnan(c.low) or math.isnan(c.high)):
        body.append(f"<rect x='{left}' y='{y(c.high):.2f}' width='{plot_w}' height='{max(y(c.low) - y(c.high), 0.5):.2f}' "
                    "fill='#999' fill-opacity='0.18'><title>95% interval of the mean difference</title></rect>")
    for t in ticks:
        body.append(f"<line x1='{left - 5}' x2='{left + plot_w}' y1='{y(t):.2f}' y2='{y(t):.2f}' "
                    f"stroke='{'#666' if t == 0 else '#e3e3e3'}'/>")
        shown = f"{t:+g}" if t else "0"
        body.append(f"<text x='{left - 8}' y='{y(t) + 4:.2f}' text-anchor='end' font-size='11'>{shown}</text>")
    for i, (query_id, value) in enumerate(items):
        h = abs(value) / top * (plot_h / 2)
        colour = "#2a7" if value > 0 else "#c44"
        body.append(f"<rect x='{left + i * bar:.2f}' y='{(y(value) if value > 0 else y(0)):.2f}' width='{max(bar - 1, 0.5):.2f}' "
                    f"height='{h:.2f}' fill='{colour}'><title>{escape(query_id)}: {value:+.4f}</title></rect>")
    if not math.isnan(c.delta):
        body.append(f"<line x1='{left}' x2='{left + plot_w}' y1='{y(c.delta):.2f}' y2='{y(c.delta):.2f}' stroke='#222' "
                    f"stroke-dasharray='6 4'><title>mean difference {c.delta:+.4f}</title></line>")
    axis_y = upper + plot_h
    body.append(f"<line x1='{left}' x2='{left + plot_w}' y1='{axis_y}' y2='{axis_y}' stroke='#666'/>")
    body.append(f"<line x1='{left}' x2='{left}' y1='{upper}' y2='{axis_y}' stroke='#666'/>")
    n = len(items)
    for k in sorted({1, *(round(n * f) for f in (0.25, 0.5, 0.75)), n} - {0}) if n else []:
        x = left + (k - 0.5) * bar
        body.append(f"<line x1='{x:.2f}' x2='{x:.2f}' y1='{axis_y}' y2='{axis_y + 5}' stroke='#666'/>")
        body.append(f"<text x='{x:.2f}' y='{axis_y + 17}' text-anchor='middle' font-size='11'>{k}</text>")
    body.append(f"<text x='{left + plot_w / 2}' y='{height - 8}' text-anchor='middle' font-size='12'>"
                f"queries, sorted by difference (n = {n:,}); dashed: mean {c.delta:+.4f}, shaded: its 95% interval</text>")
    ylabel = escape(f"{c.metric}, run − baseline")
    body.append(f"<text transform='translate(14 {upper + plot_h / 2:.1f}) rotate(-90)' text-anchor='middle' "
                f"font-size='12'>{ylabel}</text>")
    label = escape(f"{c.run} minus {c.baseline}, {c.metric}, per query (sorted); mean {c.delta:+.4f}")
    return (f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}' viewBox='0 0 {width} {height}' "
            f"role='img' aria-label='{label}'><title>{label}</title>{''.join(body)}</svg>")
