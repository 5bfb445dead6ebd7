"""The project report as one self-contained HTML file with inline SVG plots.

No scripts, fonts or styles are fetched from anywhere: the file works offline and can be mailed.
Every piece of text from the data (annotator names, labels) is escaped. The page's pieces (style
sheet, table, boxes) are :mod:`calibration.report_page`'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

import numpy as np

from calibration.bootstrap import Estimate
from calibration.report import (PAIRS_NOTE, TASK_HEADER, TASKS_NOTE, ProjectReport, _count, format_estimate, interval_note,
                                power_sentence, task_rows, tasks_sentence)
from calibration.report_page import STYLE, html_table, page_head, wide


def _svg(width: int, height: int, body: Sequence[str], title: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}">'
        f"<title>{escape(title)}</title>" + "".join(body) + "</svg>"
    )


def _text(x: float, y: float, text: str, anchor: str = "middle", size: int = 12) -> str:
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" font-size="{size}">{escape(text)}</text>'


def confusion_svg(labels: Sequence[object], table: np.ndarray, row_name: str, col_name: str) -> str:
    """Heatmap of a contingency table: darker cells hold more items, counts printed inside."""
    k = len(labels)
    cell, left, top = 44, 40, 40
    peak = max(int(table.max()), 1)
    body = [_text(left + k * cell / 2, 15, col_name), _text(left, top + k * cell + 20, row_name, "start")]
    for i in range(k):
        body.append(_text(left - 8, top + i * cell + cell / 2 + 4, str(labels[i]), "end"))
        body.append(_text(left + i * cell + cell / 2, top - 6, str(labels[i])))
        for j in range(k):
            shade = int(table[i, j]) / peak
            x, y = left + j * cell, top + i * cell
            body.append(f'<rect x="{x}" y="{y}" width="{cell}" height="{cell}" fill="rgb(33,102,172)" fill-opacity="{shade:.3f}" stroke="#999"/>')
            colour = "#fff" if shade > 0.55 else "#222"
            body.append(f'<text x="{x + cell / 2}" y="{y + cell / 2 + 4}" text-anchor="middle" font-size="12" fill="{colour}">{int(table[i, j])}</text>')
    return _svg(max(left + k * cell + 20, 260), top + k * cell + 30, body, "confusion heatmap")


def intervals_svg(estimates: Sequence[Estimate]) -> str:
    """Each statistic as a dot with its interval, on a common axis from min(0, low) to 1."""
    shown = [e for e in estimates if not np.isnan(e.value)]
    lo = min([0.0] + [e.low for e in shown if not np.isnan(e.low)] + [e.value for e in shown])
    labels = [f"{e.statistic} (n={e.n})" for e in shown]
    left, width, row = max(170, 7 * max(map(len, labels), default=0) + 20), 360, 26

    def x(v: float) -> float:
        return left + (v - lo) / (1.0 - lo) * width if 1.0 > lo else left

    body = [f'<line x1="{x(lo)}" y1="10" x2="{x(1.0)}" y2="10" stroke="#999"/>']
    body += [_text(x(t), 24 + row * len(shown), f"{t:g}") for t in np.linspace(lo, 1.0, 5).round(2)]
    for i, e in enumerate(shown):
        y = 24 + i * row
        body.append(_text(left - 10, y + 4, labels[i], "end"))
        if not np.isnan(e.low):
            body.append(f'<line x1="{x(e.low):.1f}" y1="{y}" x2="{x(e.high):.1f}" y2="{y}" stroke="#2166ac" stroke-width="2"/>')
        body.append(f'<circle cx="{x(e.value):.1f}" cy="{y}" r="4" fill="#b2182b"/>')
    return _svg(left + width + 30, 40 + row * len(shown), body, "agreement with intervals")


def mdd_svg(curve: Sequence[tuple[int, float]], current: int) -> str:
    """Paired minimum detectable difference (points) against the number of queries (log axis)."""
    left, top, width, height = 60, 40, 420, 200
    ns = np.array([n for n, _ in curve], dtype=float)
    mdd = np.array([m for _, m in curve]) * 100
    lx_min, lx_max = np.log10(ns.min()), np.log10(ns.max())
    y_max = float(mdd.max())

    def px(n: float) -> float:
        return left + (np.log10(n) - lx_min) / (lx_max - lx_min or 1.0) * width

    def py(m: float) -> float:
        return top + height - m / y_max * height

    points = " ".join(f"{px(n):.1f},{py(m):.1f}" for n, m in zip(ns, mdd, strict=True))
    body = [
        f'<polyline points="{points}" fill="none" stroke="#2166ac" stroke-width="2"/>',
        f'<line x1="{left}" y1="{top + height}" x2="{left + width}" y2="{top + height}" stroke="#999"/>',
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + height}" stroke="#999"/>',
        _text(left + width / 2, top + height + 32, "labelled queries (log scale)"),
        _text(10, 14, "MDD (points)", "start"),
    ]
    for n in [10, 30, 100, 300, 1000, 3000, 10000]:
        if ns.min() <= n <= ns.max():
            body.append(_text(px(n), top + height + 16, str(n)))
    for m in np.linspace(0, y_max, 5):
        body.append(_text(left - 6, py(m) + 4, f"{m:.0f}", "end"))
    current_mdd = float(np.interp(current, ns, mdd))
    body.append(f'<circle cx="{px(current):.1f}" cy="{py(current_mdd):.1f}" r="5" fill="#b2182b"/>')
    body.append(_text(px(current) + 8, py(current_mdd) - 8, f"now: n={current}, {current_mdd:.1f} points", "start"))
    return _svg(left + width + 40, top + height + 45, body, "minimum detectable difference against n")


def to_html(report: ProjectReport, title: str = "Calibration report") -> str:
    """The whole report as one HTML document (inline CSS and SVG, no scripts)."""
    parts = [
        page_head(title),
        f"<style>{STYLE}</style></head><body><h1>{escape(title)}</h1>",
        f"<p>{_count(report.n_judgments, 'relevance judgment')} on {_count(report.n_items, 'pool entry', 'pool entries')} of "
        f"{_count(report.n_queries, 'query', 'queries')} by {_count(len(report.annotators), 'annotator')}; "
        f"{_count(report.n_overlap_items, 'item')} labelled by two or more annotators.</p>",
    ]
    if report.tasks:
        parts.append(f"<p>{escape(tasks_sentence(report.tasks))}</p>")
    parts.append("<h2>Inter-annotator agreement (items labelled more than once)</h2>")
    if report.overlap is None:
        parts.append("<p>No item has been labelled by two annotators yet: assign some overlap to measure agreement.</p>")
    else:
        o = report.overlap
        shown = [o.get("kappa_quadratic")] + ([report.alpha_ordinal] if report.alpha_ordinal else [])
        shown += [o.get("agreement"), o.get("majority_baseline")]
        parts.append(f"<p class='note'>{escape(interval_note(report.n_boot, o.n_groups, o.ci, report.seed))} "
                     "Kappa and agreement pool every pair of annotators on each shared item; alpha uses all annotators at once. "
                     f"{escape(PAIRS_NOTE)}</p>")
        parts.append(html_table(["statistic", "value [95% interval]", "n"], [(e.statistic, format_estimate(e), e.n) for e in shown]))
        parts.append(intervals_svg(shown))
        parts.append("<h3>Confusion of annotator pairs (first name in order: rows)</h3>")
        parts.append(confusion_svg(o.confusion.labels, o.confusion.table, "rows: first annotator", "columns: second annotator"))
    parts.append("<h2>Each annotator against the others</h2>")
    parts.append(wide(html_table(
        ["annotator", "labels", "pairs compared", "quadratic kappa [95% interval]"],
        [(r.annotator, r.n_labels, r.n_shared, format_estimate(r.kappa_quadratic) if r.kappa_quadratic else "n/a") for r in report.per_annotator],
    )))
    parts.append("<h2>Label distributions</h2>")
    parts.append(wide(html_table(
        ["annotator", *map(str, report.grades), "total"],
        [(name, *counts.values(), sum(counts.values())) for name, counts in report.distributions.items()],
    )))
    parts.append("<h2>What this golden set can resolve</h2>")
    if report.power is None:
        parts.append("<p>No labelled queries yet.</p>")
    else:
        parts.append(f"<p>{escape(power_sentence(report.power))}</p>")
        parts.append(mdd_svg(report.power.curve, report.power.n))
    if report.tasks:
        parts.append("<h2>Verdicts on the other tasks</h2>")
        parts.append(f"<p class='note'>{escape(TASKS_NOTE)}</p>")
        parts.append(wide(html_table(list(TASK_HEADER), task_rows(report.tasks))))
    parts.append("</body></html>\n")
    return "\n".join(parts)
