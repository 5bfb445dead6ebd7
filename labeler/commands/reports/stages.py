"""The report of ``goldpool stages`` (:class:`labeler.diagnosis.stages.StagesReport`): the lines it
prints and the same numbers as one self-contained HTML page.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from html import escape

from calibration.formatting import fixed
from calibration.report_figures import stage_figures, with_figures
from calibration.report_page import STYLE, html_table, page_head, wide
from labeler.diagnosis.stages import StageComparison, StagesReport, SystemStages, stage_labels


def sources_text(sources: Mapping[str, int]) -> str:
    """Where the values came from, people first.

    >>> sources_text({"none": 3, "j1": 60, "people": 40})
    '40 by people, 60 by judge j1, 3 without a verdict'
    """
    parts = []
    for by, n in sorted(sources.items(), key=lambda kv: (kv[0] != "people", kv[0] == "none", kv[0])):
        parts.append(f"{n} without a verdict" if by == "none" else f"{n} by people" if by == "people" else f"{n} by judge {by}")
    return ", ".join(parts)


def _num(x: float, digits: int = 3) -> str:
    return fixed(x, digits, missing="n/a")


def to_text(report: StagesReport) -> list[str]:
    """The lines ``goldpool stages`` prints: each stage of each system, what the numbers stand
    on, and the comparison of two systems."""
    labels = stage_labels(report.k)
    lines = [f"golden: {report.golden} (content hash {report.content_hash[:12]}); relevant: grade >= "
             f"{report.relevance_level}; k = {report.k}"]
    width = max(len(v) for v in labels.values()) + 2
    lines.append(f"{'stage':<{width}}" + "".join(f"{s.system:>34}" for s in report.systems))
    for key in report.systems[0].stages:
        cells = []
        for s in report.systems:
            v = s.stages[key]
            cells.append(f"{_num(v.mean)} [{_num(v.low)}, {_num(v.high)}] n={v.n}")
        lines.append(f"{labels[key]:<{width}}" + "".join(f"{c:>34}" for c in cells))
    for s in report.systems:
        lines += _system_notes(s)
    if report.comparison is not None:
        lines += _comparison_lines(report.comparison, labels, width)
    return lines


def _system_notes(s: SystemStages) -> list[str]:
    notes = [f"{s.questions} questions of the version answered", f"{s.no_relevant} without a relevant chunk"]
    if s.unlinked:
        notes.append(f"{s.unlinked} answers not questions of the version (left out)")
    if s.no_retrieved == s.questions:
        notes.append("imported without retrieved_ids: no retrieval stage")
    elif s.no_retrieved:
        notes.append(f"{s.no_retrieved} answers without retrieved_ids (retrieval scores 0)")
    notes.append(f"abstained {s.abstained}, mean answer length {s.mean_words:.1f} words")
    return [f"{s.system}: " + "; ".join(notes),
            f"  verdicts: correctness {sources_text(s.sources['correct'])}; faithfulness "
            f"{sources_text(s.sources['faithfulness'])}"]


def _comparison_lines(c: StageComparison, labels: Mapping[str, str], width: int) -> list[str]:
    lines = ["", c.sentence, f"{'stage':<{width}}{'paired':>8}{'difference':>12}  {'95% interval':<20}{'p':>8}{'MDD':>8}"]
    for key in c.stages:
        x = c.stages[key]
        if x is None:
            lines.append(f"{labels[key]:<{width}}{0:>8}  (fewer than two paired questions)")
            continue
        lines.append(f"{labels[key]:<{width}}{x.n:>8}{x.delta:>+12.3f}  {f'[{x.low:+.3f}, {x.high:+.3f}]':<20}"
                     f"{x.p_value:>8.4f}{_num(x.mdd) if x.mdd <= 1 else 'beyond':>8}")
    return lines


def to_html(report: StagesReport) -> str:
    """The report as one self-contained HTML page (every name escaped): the stages of every
    system as a forest plot (and the paired differences with their MDD) above the tables."""
    labels = stage_labels(report.k)
    title = f"Stages of {' and '.join(s.system for s in report.systems)} on {report.golden}"

    def num(x: float) -> str:
        return "n/a" if math.isnan(x) else f"{x:.3f}"

    header = ["stage", *(s.system for s in report.systems)]
    rows = []
    for key in report.systems[0].stages:
        cells = [labels[key]]
        for s in report.systems:
            v = s.stages[key]
            cells.append(f"{num(v.mean)} [{num(v.low)}, {num(v.high)}] (n={v.n})")
        rows.append(cells)
    parts = [page_head(title), f"<style>{STYLE}</style></head><body>", f"<h1>{escape(title)}</h1>",
             f"<p class='note'>version {escape(report.version)} (content hash {escape(report.content_hash[:12])}); a chunk "
             f"is relevant from grade {report.relevance_level}; k = {report.k}.</p>", wide(html_table(header, rows))]
    for s in report.systems:
        parts.append(f"<p class='note'>{escape(s.system)}: correctness {escape(sources_text(s.sources['correct']))}; "
                     f"faithfulness {escape(sources_text(s.sources['faithfulness']))}.</p>")
    if report.comparison is not None:
        c = report.comparison
        parts.append(f"<h2>{escape(c.system)} against {escape(c.baseline)}</h2><p>{escape(c.sentence)}</p>")
        head = ["stage", "paired questions", "difference", "95% interval", "p", "MDD"]
        body = []
        for key in c.stages:
            x = c.stages[key]
            body.append([labels[key], "0", "", "", "", ""] if x is None else
                        [labels[key], str(x.n), f"{x.delta:+.3f}", f"[{x.low:+.3f}, {x.high:+.3f}]", f"{x.p_value:.4f}",
                         f"{x.mdd:.3f}" if x.mdd <= 1 else "beyond"])
        parts.append(wide(html_table(head, body)))
    parts.append("</body></html>\n")
    c = report.comparison
    figures = stage_figures({s.system: s.stages for s in report.systems}, labels,
                            None if c is None else (f"{c.system} − {c.baseline}", c.stages))
    return with_figures("\n".join(parts), figures)
