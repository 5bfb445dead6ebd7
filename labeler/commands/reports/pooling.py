"""The report of ``simulate-pooling --html``: relevant found against judgments, one line per strategy.

One self-contained file: inline SVG and CSS, no script, nothing fetched. Every name is
escaped.
"""

from __future__ import annotations

from html import escape

__all__ = ["simulation_html"]

WIDTH, HEIGHT, MARGIN = 720, 420, 60
COLOURS = ("#1b6ca8", "#c0392b", "#27ae60", "#8e44ad", "#d68910", "#17202a", "#7f8c8d")


def _scale(result: dict) -> tuple[float, float]:
    curves = [p for s in result["strategies"].values() for p in s["curve"]]
    base = result["baseline"]
    x_max = max([p[0] for p in curves] + [base["judgments"], 1])
    y_max = max([p[1] for p in curves] + [base["relevant_found"], 1])
    return float(x_max), float(y_max)


def _svg(result: dict) -> str:
    x_max, y_max = _scale(result)
    plot_w, plot_h = WIDTH - 2 * MARGIN, HEIGHT - 2 * MARGIN

    def at(x: float, y: float) -> tuple[str, str]:
        return f"{MARGIN + plot_w * x / x_max:.1f}", f"{HEIGHT - MARGIN - plot_h * y / y_max:.1f}"

    def xy(x: float, y: float) -> str:
        return ",".join(at(x, y))

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" role="img" '
        'aria-label="relevant found against judgments">',
        f'<line x1="{MARGIN}" y1="{HEIGHT - MARGIN}" x2="{WIDTH - MARGIN}" y2="{HEIGHT - MARGIN}" stroke="#000"/>',
        f'<line x1="{MARGIN}" y1="{MARGIN}" x2="{MARGIN}" y2="{HEIGHT - MARGIN}" stroke="#000"/>',
        f'<text x="{WIDTH / 2}" y="{HEIGHT - 15}" text-anchor="middle">judgments ({int(x_max)} at the right edge)</text>',
        f'<text x="15" y="{HEIGHT / 2}" transform="rotate(-90 15 {HEIGHT / 2})" text-anchor="middle">'
        f"relevant found ({int(y_max)} at the top)</text>",
    ]
    base = result["baseline"]
    cx, cy = at(base["judgments"], base["relevant_found"])
    parts.append(f'<circle cx="{cx}" cy="{cy}" r="5" fill="none" stroke="#000">'
                 f"<title>baseline: {base['judgments']} judgments, {base['relevant_found']} relevant</title></circle>")
    for i, (name, s) in enumerate(result["strategies"].items()):
        colour = COLOURS[i % len(COLOURS)]
        points = " ".join(xy(x, y) for x, y in [[0, 0], *s["curve"]])
        parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{points}">'
                     f"<title>{escape(name)}</title></polyline>")
        parts.append(f'<text x="{WIDTH - MARGIN + 5}" y="{MARGIN + 16 * i}" fill="{colour}">{escape(name)}</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def _table(result: dict) -> str:
    rows = []
    for name, s in result["strategies"].items():
        to90 = s["judgments_to_90"]
        stopping = s.get("stopping", {})
        share = stopping.get("share_at_or_above_target")
        rows.append(
            f"<tr><td>{escape(name)}</td><td>{'never' if to90 is None else to90}</td>"
            f"<td>{s['found_at_baseline_budget']}</td><td>{stopping.get('stopped', '-')}</td>"
            f"<td>{'-' if share is None else f'{share:.0%}'}</td></tr>"
        )
    return (
        "<table><tr><th>strategy</th><th>judgments to 90% of the baseline's relevant</th>"
        "<th>relevant at the baseline's budget</th><th>queries stopped</th>"
        "<th>of those at/above target recall</th></tr>" + "".join(rows) + "</table>"
    )


def simulation_html(result: dict, title: str = "Pooling replay") -> str:
    """The page for a ``simulate-pooling`` result (:func:`labeler.retrieval.adaptive.simulate`)."""
    base = result["baseline"]
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{escape(title)}</title><style>body{{font-family:sans-serif;margin:2em}}"
        "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px}</style></head><body>"
        f"<h1>{escape(title)}</h1><p>Baseline (depth union judged in full): {base['judgments']} judgments, "
        f"{base['relevant_found']} relevant found (circle). Queries replayed: {result.get('queries', '-')}.</p>"
        f"{_svg(result)}{_table(result)}</body></html>\n"
    )
