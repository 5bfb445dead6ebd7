"""The report of ``goldpool answer-metrics`` (:class:`labeler.generation.metrics.AnswerMetrics`):
plain text, one table per system and one per paired comparison, and the same tables as one
self-contained HTML page.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import TYPE_CHECKING, Any

from calibration.formatting import fixed
from calibration.report_figures import answer_metric_figures, with_figures
from calibration.report_page import STYLE, html_table, page_head, wide
from labeler.generation.registry import ANSWER_METRICS, LABELS, LEFT_OUT, SOURCES

if TYPE_CHECKING:
    from labeler.generation.metrics import AnswerMetrics, Pair, Rate, SystemMetrics

_SOURCE_LABEL = {"text": "text rule", "people": "people", "judge": "judge", "ppi": "PPI++"}
_HEADER = ["metric", "source", "value", "interval", "answers", "questions", "words", "beside it"]
_PAIR_HEADER = ["metric", "source", "difference", "interval", "questions", "MDD", "reading"]


def _f(x: float | None, digits: int = 3, *, sign: bool = False) -> str:
    return fixed(x, digits, sign=sign, missing="-")


def _interval(low: float | None, high: float | None, *, sign: bool = False) -> str:
    return "" if low is None or high is None else f"[{_f(low, sign=sign)}, {_f(high, sign=sign)}]"


def _answers(n: int) -> str:
    return f"{n} answer{'' if n == 1 else 's'}"


def _left_out_note(x: Mapping[str, Any], source: str) -> str | None:
    """"left out: 7 answers with a claim people split on, ..." from ``x["left_out"]``."""
    counts = x.get("left_out")
    if not counts:
        return None
    who = "the judge" if source == "judge" else "people"
    words = {"empty": "empty (nothing to judge)", "no_claims": "with no claims (split-claims gives them some)",
             "split": f"with a claim {who} split on (no majority)", "unjudged": f"with a claim {who} gave no verdict on",
             "all_flagged": "whose every claim was flagged not one claim"}
    return "left out: " + ", ".join(f"{_answers(counts[k])} {words[k]}" for k in LEFT_OUT if counts.get(k))


def _claims_note(x: Mapping[str, Any]) -> list[str]:
    """The claims of the answers counted, judged and flagged on one denominator."""
    seen = x["claims"] + x["flagged"]
    per = f" ({x['claims_per_answer']:.1f} per answer)" if x.get("claims_per_answer") is not None else ""
    notes = [f"{seen} claims in these answers: {x['claims']} judged{per}, claim-weighted {_f(x.get('claim_weighted'))}"]
    if x.get("flag_rate") is not None:
        notes.append(f"{x['flagged']} of the {seen} flagged not one claim ({x['flag_rate']:.1%})")
    if x.get("flagged_left_out"):
        notes.append(f"{x['flagged_left_out']} more flagged in answers left out")
    return notes


def _supported_note(x: Mapping[str, Any]) -> list[str]:
    notes = [f"{x['from_whole']} from a whole-answer verdict, {x['from_claims']} from claims"]
    if x.get("disagree"):
        notes.append(f"{_answers(x['disagree'])} whose claims say otherwise (the whole-answer verdict counts)")
    return notes


def _note(metric: str, source: str, r: Rate) -> str:
    left = _left_out_note(r.extra, source) if source != "ppi" else None
    if r.why:
        return "; ".join(n for n in (r.why, left) if n)
    notes = []
    if metric == "faithfulness" and "claims" in r.extra:
        notes += _claims_note(r.extra)
    if metric == "supported_answers" and "from_whole" in r.extra:
        notes += _supported_note(r.extra)
    if left:
        notes.append(left)
    if metric == "abstention" and source == "text" and "agreement" in r.extra:
        notes.append(agreement_note(r.extra["agreement"]))
    if source == "ppi":
        x = r.extra
        empty = f", {x['n_empty']} empty (known)" if x.get("n_empty") else ""
        notes.append(f"lambda {x['lambda']:.2f}: {x['n_labelled']} labelled by people, {x['n_unlabelled']} by the judge only"
                     + empty)
    if r.extra.get("weighted"):
        outside = r.extra.get("n_outside_sample")
        notes.append("each labelled answer of the sample weighs 1/its inclusion probability"
                     + (f"; {_answers(outside)} labelled outside the sample left out" if outside else ""))
    return "; ".join(notes)


def agreement_note(a: Mapping[str, Any]) -> str:
    """The text rule's agreement with people, in one line."""
    if not a.get("n"):
        return "no answer with people's answer relevance verdict to check the rule against"
    kappa = "" if a.get("kappa") is None else f", kappa {_f(a['kappa'])} {_interval(a.get('kappa_low'), a.get('kappa_high'))}"
    answers = "answer" if a["n"] == 1 else "answers"
    return (f"against people on {a['n']} {answers}: agree {a['agree']}, disagree {a['disagree']} "
            f"(rule only {a['text_only']}, people only {a['people_only']}){kappa}; "
            f"sensitivity {_f(a.get('sensitivity'), 2)}, precision {_f(a.get('precision'), 2)}")


def _rows(s: SystemMetrics, judged: bool) -> list[list[str]]:
    rows = []
    for metric in ANSWER_METRICS:
        sources = SOURCES if judged else ("people",)
        if metric == "abstention":
            sources = ("text", *sources)
        for i, source in enumerate(sources):
            r = s.rates[metric][source]
            rows.append([LABELS[metric] if i == 0 else "", _SOURCE_LABEL.get(source, source), _f(r.value),
                         _interval(r.low, r.high), str(r.n), str(r.questions),
                         "-" if r.words is None else f"{r.words:.1f}", _note(metric, source, r)])
    return rows


def pair_rows(pairs: Sequence[Pair]) -> list[list[str]]:
    """One row per (metric, source) of two systems paired (answer-metrics and nugget-metrics)."""
    rows = []
    last = None
    for p in pairs:
        if p.difference is None:
            reading = p.why or ""
        elif p.low is not None and p.high is not None and p.low <= 0.0 <= p.high:
            reading = "no difference shown (one below the MDD would go unseen)"
        else:
            reading = f"{p.a if p.difference > 0 else p.b} higher"
        rows.append([LABELS[p.metric] if p.metric != last else "", _SOURCE_LABEL[p.source],
                     _f(p.difference, sign=True), _interval(p.low, p.high, sign=True), str(p.n), _f(p.mdd), reading])
        last = p.metric
    return rows


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], indent: str = "  ") -> list[str]:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header) - 1)]
    lines = []
    for row in [header, *rows]:
        cells = [str(c).ljust(w) if i < 2 else str(c).rjust(w) for i, (c, w) in enumerate(zip(row, widths))]
        lines.append((indent + "  ".join(cells) + "  " + str(row[-1])).rstrip())
    return lines


def pairs_by_systems(pairs: Sequence[Pair]) -> dict[tuple[str, str], list[Pair]]:
    grouped: dict[tuple[str, str], list[Pair]] = {}
    for p in pairs:
        grouped.setdefault((p.a, p.b), []).append(p)
    return grouped


def _intro(m: AnswerMetrics) -> list[str]:
    who = (f"people, judge {m.judge!r}, and PPI++ (people where they labelled, the judge everywhere)"
           if m.judge else "people (give --judge NAME for a judge's values and PPI++)")
    return [f"Generation metrics from {who}.",
            f"{m.ci:.0%} intervals, clustered by question: rates by a Wilson interval at the design-effect sample "
            "size, PPI++ normal; all kept inside [0, 1]; the judge's interval is its sampling spread only (its bias "
            "is unknown: compare it with people's). Faithfulness is the mean over answers of supported / "
            "judged claims; supported answers the share of answers wholly supported (the whole-answer verdict where "
            "given, else every claim supported); both are shown with correctness, answer relevance and the "
            "abstention rate, since an answer that declines is perfectly faithful; words: mean answer length of the answers counted.",
            "Abstention: the text rule reads every answer (a declining answer with no answer of its own); people "
            "and the judge say DECLINES on answer relevance (which then counts as not addressing the question); "
            "the text rule's agreement with people is on the non-empty answers people judged."]


def to_text(m: AnswerMetrics) -> str:
    """The metrics as plain text: one table per system, then the paired comparisons."""
    lines = _intro(m)
    for s in m.systems:
        words = "" if s.words is None else f", mean {s.words:.1f} words"
        lines += ["", f"{s.system}: {s.answers} answers{words}", *_table(_HEADER, _rows(s, m.judge is not None))]
    if len(m.systems) > 1 and not m.pairs:
        lines += ["", "No two systems answered 2 or more of the same questions: no paired comparison."]
    for (a, b), pairs in pairs_by_systems(m.pairs).items():
        lines += ["", f"{a} - {b}, paired on the questions both answered (MDD: the smallest true difference "
                      "found 80% of the time at alpha 0.05)", *_table(_PAIR_HEADER, pair_rows(pairs))]
    return "\n".join(lines) + "\n"


def to_html(m: AnswerMetrics, title: str = "Generation metrics", *, card: str | None = None) -> str:
    """The metrics as one self-contained HTML page (every name from the data escaped): the
    forest plots of the rates and of the paired differences first, then the tables, with the
    judge's calibration ``card`` line at the end when given."""
    parts = [page_head(title),
             f"<style>{STYLE}</style></head><body><h1>{escape(title)}</h1>"]
    parts += [f"<p class='note'>{escape(line)}</p>" for line in _intro(m)]
    for s in m.systems:
        words = "" if s.words is None else f", mean {s.words:.1f} words"
        parts.append(f"<section><h2>{escape(s.system)}</h2><p>{s.answers} answers{escape(words)}</p>"
                     f"{wide(html_table(_HEADER, _rows(s, m.judge is not None)))}</section>")
    for (a, b), pairs in pairs_by_systems(m.pairs).items():
        parts.append(f"<section><h2>{escape(a)} &minus; {escape(b)}</h2><p>Paired on the questions both answered."
                     f"</p>{wide(html_table(_PAIR_HEADER, pair_rows(pairs)))}</section>")
    if card:
        parts.append(f"<p>{escape(card)}</p>\n")
    parts.append("</body></html>")
    return with_figures("".join(parts), answer_metric_figures(m.as_dict()))
