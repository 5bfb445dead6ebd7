"""The report of the judge-assisted estimates of ``eval`` and ``compare`` (``--judge --sample``,
:func:`labeler.retrieval.judge_assisted.estimate`): one table, printed or as one HTML page,
with the lines said before it and after it.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import Any

from calibration.formatting import fixed
from calibration.report_figures import estimate_figures, with_figures
from calibration.report_page import STYLE, html_table, page_head, wide

#: The columns of an estimate table, as ``eval``/``compare --judge --sample`` print them.
ESTIMATE_HEADER = ("run", "metric", "estimate", "95% interval", "people only", "95% interval", "judge only", "method")


def _cell(value: float | None) -> str:
    return fixed(value, 4, missing="n/a")


def estimate_rows(result: dict[str, dict[str, Any]]) -> list[tuple[str, ...]]:
    """One row of :data:`ESTIMATE_HEADER` cells per run and metric of the estimate's result
    (RUN -> METRIC -> :class:`calibration.judge_assisted.Combined`); a metric the design cannot
    estimate says why in its last cell."""
    rows = []
    for run, cells in result.items():
        for metric, c in cells.items():
            if c.why:
                rows.append((run, metric, "n/a", "", "n/a", "", _cell(c.judge_only), f"not estimated: {c.why}"))
                continue
            rows.append((run, metric, _cell(c.value), f"[{_cell(c.low)}, {_cell(c.high)}]", _cell(c.people_only),
                         f"[{_cell(c.people_low)}, {_cell(c.people_high)}]", _cell(c.judge_only),
                         c.method + (f" (λ {c.lam:.2f})" if c.lam is not None else "")))
    return rows


def to_text(intro: Sequence[str], rows: Sequence[Sequence[str]], notes: Sequence[str]) -> list[str]:
    """The lines printed: ``intro``, the table of :func:`estimate_rows` in columns, ``notes``."""
    return [*intro, *(f"{row[0]:<24}{row[1]:<14}{row[2]:>10}  {row[3]:<20}{row[4]:>12}  {row[5]:<20}{row[6]:>11}  {row[7]}"
                      for row in [ESTIMATE_HEADER, *rows]), *notes]


def to_html(title: str, intro: Sequence[str], rows: Sequence[Sequence[str]], notes: Sequence[str], *,
            result: dict[str, dict[str, Any]] | None = None, baseline: str | None = None) -> str:
    """The estimate table (:func:`estimate_rows`) as one self-contained HTML page, with the
    lines said before it (``intro``) and after it (``notes``), as the text prints them; every
    text escaped. With the estimate's ``result``, a forest plot of each run's estimates first
    (of its differences from ``baseline`` when given)."""
    parts = [page_head(title), f"<style>{STYLE}</style></head><body>", f"<h1>{escape(title)}</h1>",
             *(f"<p>{escape(line)}</p>" for line in intro), wide(html_table(ESTIMATE_HEADER, rows)),
             *(f"<p class='note'>{escape(line)}</p>" for line in notes), "</body></html>\n"]
    figures = estimate_figures(result, baseline=baseline) if result else []
    return with_figures("\n".join(parts), figures)
