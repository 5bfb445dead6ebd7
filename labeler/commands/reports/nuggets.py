"""``nugget-metrics`` as text and as one HTML page: rendering only, the numbers come computed
(:class:`labeler.generation.nuggets.NuggetMetrics`)."""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import TYPE_CHECKING, Any

from calibration.formatting import fixed
from calibration.report import plain, table_lines
from calibration.report_page import STYLE, html_table, page_head, wide
from labeler.commands.reports.answer_metrics import pair_rows, pairs_by_systems
from labeler.generation.registry import LABELS as _LABELS
from labeler.generation.registry import NUGGET_METRICS as METRICS

if TYPE_CHECKING:
    from labeler.generation.metrics import Rate
    from labeler.generation.nuggets import NuggetMetrics, SystemNuggets

_SOURCE = {"people": "people", "judge": "judge", "ppi": "PPI++"}
_WHY = {"no_nuggets": "to a question without nuggets", "no_vital": "to a question without a vital nugget",
        "split": "with a nugget people split on (no majority)", "unjudged": "with a nugget not labelled"}
HEADER = ["score", "source", "value", "interval", "answers", "questions", "words", "beside it"]
PAIR_HEADER = ["score", "source", "difference", "interval", "questions", "MDD", "reading"]


def _f(x: float | None, *, sign: bool = False) -> str:
    return fixed(x, 3, sign=sign, missing="-")


def _interval(low: float | None, high: float | None, *, sign: bool = False) -> str:
    return "" if low is None or high is None else f"[{_f(low, sign=sign)}, {_f(high, sign=sign)}]"


def _answers(n: int) -> str:
    return f"{n} answer{'' if n == 1 else 's'}"


def note(source: str, r: Rate) -> str:
    """What stands beside one value: why answers are left out, PPI++'s weight and parts."""
    x: Mapping[str, Any] = r.extra
    notes = [r.why] if r.why else []
    left = x.get("left_out") or {}
    if left:
        notes.append("left out: " + ", ".join(f"{_answers(n)} {_WHY[k]}" for k, n in left.items()))
    if x.get("n_empty") and source != "ppi":
        notes.append(f"{x['n_empty']} empty (score 0, known)")
    if source == "ppi" and "lambda" in x:
        empty = f", {x['n_empty']} empty (known)" if x.get("n_empty") else ""
        notes.append(f"lambda {x['lambda']:.2f}: {x['n_labelled']} labelled by people, {x['n_unlabelled']} by the "
                     f"judge only{empty}")
    return "; ".join(notes)


def rows(s: SystemNuggets, judged: bool) -> list[list[str]]:
    """One row per (score, source) of a system."""
    out = []
    for metric in METRICS:
        for i, source in enumerate(("people", "judge", "ppi") if judged else ("people",)):
            r = s.rates[metric][source]
            out.append([_LABELS[metric] if i == 0 else "", _SOURCE[source], _f(r.value), _interval(r.low, r.high),
                        str(r.n), str(r.questions), "-" if r.words is None else f"{r.words:.1f}", note(source, r)])
    return out


def intro(m: NuggetMetrics) -> list[str]:
    """The report's opening lines: what the numbers are and what they stand on."""
    who = (f"people, judge {m.judge!r}, and PPI++ (people where they labelled, the judge everywhere)" if m.judge
           else "people (give --judge NAME for a judge's values and PPI++)")
    on = f"the nuggets of version {m.version!r}" if m.version else "the current nuggets"
    n = m.nuggets
    return [(f"Nugget scores from {who}, on {on}: {n.get('nuggets', 0)} nuggets ({n.get('vital', 0)} vital) of "
            f"{n.get('queries', 0)} questions."),
            (f"Per answer: all = mean support over the question's nuggets (support 1, partial 0.5), vital = the same "
            f"over its vital nuggets, strict = full support only; per system, the mean over answers. {m.ci:.0%} "
            "intervals clustered by question (Wilson at the design-effect size; PPI++ normal), inside [0, 1]; the "
            "judge's interval is its sampling spread only. Answers to questions without nuggets are left out and "
            "counted (and those without a vital nugget, from the vital scores); an empty answer scores 0. words: "
            "mean answer length of the answers counted.")]


def _system_line(s: SystemNuggets) -> str:
    words = "" if s.words is None else f", mean {s.words:.1f} words"
    gone = sum(a.why == "no_nuggets" for a in s.people)
    return f"{s.system}: {_answers(s.answers)}{words}" + (f"; {gone} to questions without nuggets" if gone else "")


def to_text(m: NuggetMetrics) -> str:
    """The scores as plain text: one table per system, then the paired comparisons."""
    lines = intro(m)
    for s in m.systems:
        lines += ["", plain(_system_line(s)),
                  *table_lines(HEADER, [[plain(c) for c in row] for row in rows(s, m.judge is not None)], markdown=False)]
    for (a, b), pairs in pairs_by_systems(m.pairs).items():
        lines += ["", plain(f"{a} - {b}, paired on the questions both answered (MDD: the smallest true difference "
                            "found 80% of the time at alpha 0.05)"),
                  *table_lines(PAIR_HEADER, pair_rows(pairs), markdown=False)]
    return "\n".join(lines) + "\n"


def to_html(m: NuggetMetrics, title: str = "Nugget scores") -> str:
    """The scores as one self-contained HTML page (every text from the data escaped)."""
    parts = [page_head(title), f"<style>{STYLE}</style></head><body><h1>{escape(title)}</h1>"]
    parts += [f"<p class='note'>{escape(line)}</p>" for line in intro(m)]
    for s in m.systems:
        parts.append(f"<section><h2>{escape(s.system)}</h2><p>{escape(_system_line(s))}</p>"
                     f"{wide(html_table(HEADER, rows(s, m.judge is not None)))}</section>")
    for (a, b), pairs in pairs_by_systems(m.pairs).items():
        parts.append(f"<section><h2>{escape(a)} &minus; {escape(b)}</h2><p>Paired on the questions both answered.</p>"
                     f"{wide(html_table(PAIR_HEADER, pair_rows(pairs)))}</section>")
    parts.append("</body></html>\n")
    return "".join(parts)
