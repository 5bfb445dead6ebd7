"""The report of ``goldpool diagnose`` (:class:`labeler.diagnosis.diagnose.DiagnoseReport`): the
lines it prints and one self-contained HTML page with every wrong answer and its evidence.
"""

from __future__ import annotations

from html import escape

from calibration.report_figures import share_figures, with_figures
from calibration.report_page import STYLE, collapsed, html_table, page_head, wide
from labeler.commands.common import plural
from labeler.diagnosis.diagnose import ADVICE, OUTCOMES, PENDING, DiagnoseReport, offered_count


def _verdict(correct: bool | None) -> str:
    return "correct" if correct else "no verdict" if correct is None else "wrong"


def to_text(report: DiagnoseReport) -> list[str]:
    """The lines ``goldpool diagnose`` prints: counts per outcome, what to fix first, each
    question with its evidence, and the chunks offered to the pool."""
    source = "people" + (f", else judge {report.judge}" if report.judge else "")
    k = report.k
    lines = [f"{report.system} on {report.golden}: {report.answers} answers, {report.correct} correct, "
             f"{len(report.diagnoses)} wrong, {report.unjudged} without a verdict (verdicts: {source}); "
             f"relevant: grade >= {report.relevance_level}; k = {k}"]
    lines += [f"  {outcome:<18}{report.counts[outcome]:>6}" for outcome in (*OUTCOMES, PENDING)
              if outcome != PENDING or report.counts[outcome]]
    if report.first:
        lines.append(f"fix first: {ADVICE[report.first]}")
    for d in report.diagnoses:
        gold = "none" if d.gold_response is None else _verdict(d.gold_correct)
        lines.append(f"{d.query_id} [{d.outcome}] {d.why}; relevant in top {k}: {'yes' if d.relevant_in_top else 'no'}; "
                     f"gold-context answer: {gold}; holders: {', '.join(d.holders[:5]) or 'none'}"
                     f"{', ...' if len(d.holders) > 5 else ''}")
    n = offered_count(report.offered)
    if n and report.pool is None:
        lines.append(f"{plural(n, 'chunk')} outside the relevant set {'holds' if n == 1 else 'hold'} an answer: add "
                     f"{'it' if n == 1 else 'them'} to the pool with --add-to-pool so people label "
                     f"{'it' if n == 1 else 'them'}")
    elif n:
        lines.append(f"pool: {report.pool['added']} new entries to label (source answer-search), "  # type: ignore[index]
                     f"{report.pool['already_pooled']} already pooled")  # type: ignore[index]
    return lines


def to_html(report: DiagnoseReport) -> str:
    """The report as one self-contained HTML page (every text from the data escaped), the share
    of the answers in each outcome drawn with its interval above the tables."""
    title = f"Why {report.system}'s answers are wrong ({report.golden})"
    head = "<tr><th>outcome</th><th>questions</th><th>what to fix</th></tr>"
    rows = "".join(f"<tr><td>{escape(o)}</td><td>{report.counts[o]}</td><td>{escape(ADVICE[o])}</td></tr>"
                   for o in (*OUTCOMES, PENDING) if report.counts[o] or o != PENDING)
    parts = [page_head(title), f"<style>{STYLE}</style></head><body>", f"<h1>{escape(title)}</h1>",
             f"<p>{report.answers} answers to the version's questions: {report.correct} correct, {len(report.diagnoses)} "
             f"wrong, {report.unjudged} without a verdict.</p>", wide(f"<table>{head}{rows}</table>")]
    if report.first:
        parts.append(f"<p><b>Fix first:</b> {escape(ADVICE[report.first])}.</p>")
    header = ["query", "question", "reference", "answer", "gold-context answer", "evidence"]
    for outcome in (*OUTCOMES, PENDING):
        mine = [d for d in report.diagnoses if d.outcome == outcome]
        if not mine:
            continue
        table = html_table(header, [
            (d.query_id, d.question, d.reference or "", d.response,
             "" if d.gold_response is None else f"{d.gold_response} ({_verdict(d.gold_correct)})",
             f"{d.why}; relevant in top {report.k}: {'yes' if d.relevant_in_top else 'no'}; holders: "
             f"{', '.join(d.holders) or 'none'}") for d in mine])
        parts.append(collapsed(f"{outcome}: {len(mine)}", table))
    parts.append("</body></html>\n")
    shown = {"correct": report.correct, **{o: report.counts[o] for o in (*OUTCOMES, PENDING)
                                          if report.counts[o] or o != PENDING}, "without a verdict": report.unjudged}
    figures = share_figures(shown, report.answers, title=f"{report.system}: the answers by outcome (Wilson 95% intervals)")
    return with_figures("\n".join(parts), figures)
