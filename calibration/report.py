"""The calibration report in words: a project's labels (:mod:`calibration.summary`) as
Markdown or plain text, and the sentences and tables its readers share.

``to_markdown`` and ``to_text`` render a :class:`calibration.summary.ProjectReport`;
``format_estimate``, ``interval_note`` and ``undefined_notes`` say an estimate and how it was
made; ``plan_text`` and ``power_sentence`` say in words what a ``calibration.power`` plan
resolves; ``heading_lines``, ``table_lines`` and ``plain`` build the text of every report.
``calibration.report_html`` renders the same data as one self-contained HTML file.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Sequence

import numpy as np

from calibration.bootstrap import MIN_GROUPS, Estimate
from calibration.formatting import fixed, markdown_escape
from calibration.power import PlanSummary, required_n
from calibration.summary import ASSUMED_DISCORDANT, PowerSummary, ProjectReport, TaskVerdicts, few_queries_warning


def format_estimate(e: Estimate, digits: int = 3, undefined: str = "n/a", *, why: bool = True) -> str:
    """``0.512 [0.480, 0.540]``; no brackets without an interval. An undefined value reads
    ``undefined (why)`` when the estimate says why (``undefined`` alone with ``why=False``),
    else ``undefined``.

    >>> format_estimate(Estimate("kappa", 0.5123, 0.48, 0.54, 40))
    '0.512 [0.480, 0.540]'
    >>> nan = float("nan")
    >>> format_estimate(Estimate("kappa", nan, nan, nan, 1, why="computed on 1 item"))
    'undefined (computed on 1 item)'
    """
    if np.isnan(e.value):
        if e.why:
            return f"undefined ({e.why})" if why else "undefined"
        return undefined
    if np.isnan(e.low):
        return fixed(e.value, digits)
    return f"{fixed(e.value, digits)} [{fixed(e.low, digits)}, {fixed(e.high, digits)}]"


def interval_note(n_boot: int, n_groups: int | None, ci: float, seed: int | None) -> str:
    """One sentence saying how the intervals were made."""
    if n_boot == 0:
        return "No intervals (n_boot=0)."
    if n_groups is not None and n_groups < MIN_GROUPS:
        return (
            f"No intervals: the labels come from {_count(n_groups, 'query', 'queries')}, and resampling "
            "queries needs at least two (labels within a query are not independent)."
        )
    unit = f"cluster bootstrap over {_count(n_groups, 'query', 'queries')}" if n_groups is not None else "bootstrap over items"
    note = f"Intervals: {ci:.0%} percentile, {unit}, {n_boot} resamples, seed {seed}."
    warning = few_queries_warning(n_boot, n_groups)
    return f"{note} {warning}" if warning else note


def undefined_notes(estimates: Iterable[Estimate]) -> list[str]:
    """One line per reason some statistics are undefined: ``kappa, kappa_linear: undefined: why``.

    >>> nan = float("nan")
    >>> undefined_notes([Estimate("kappa", nan, nan, nan, 1, why="one item"), Estimate("agreement", 1.0, nan, nan, 1)])
    ['kappa: undefined: one item']
    """
    by_reason: dict[str, list[str]] = {}
    for e in estimates:
        if np.isnan(e.value) and e.why:
            by_reason.setdefault(e.why, []).append(e.statistic)
    return [f"{', '.join(names)}: undefined: {why}" for why, names in by_reason.items()]


def _count(n: int, one: str, many: str | None = None) -> str:
    """``n`` with the noun in the right number: 1 query, 2 queries."""
    return f"{n} {one if n == 1 else (many or one + 's')}"


def _points(x: float) -> str:
    """A proportion in points: 0.0886 -> ``8.9``."""
    return fixed(100 * x, 1)


def _change(x: float) -> str:
    """A target difference as written by a person: 0.03 -> ``3``, 0.025 -> ``2.5``."""
    return f"{round(100 * x, 1):g}"


#: The difference (a proportion) quoted when a set is too small to resolve any: 10 points.
QUOTED_DELTA = 0.10


def power_sentence(p: PowerSummary) -> str:
    """What ``p.n`` labelled queries can resolve, in one sentence; in words when the minimum
    detectable difference is beyond the 100-point scale."""
    if p.paired.mdd > 1.0:
        needed = required_n(QUOTED_DELTA, "paired", discordant=ASSUMED_DISCORDANT, alpha=p.paired.alpha, power=p.paired.power)
        return (
            f"With {_count(p.n, 'labelled query', 'labelled queries')}, this set cannot resolve any difference yet: "
            f"two systems would have to differ by more than the whole 100-point scale to be detected. It needs "
            f"~{needed} queries to detect a {_change(QUOTED_DELTA)}-point difference between two systems "
            f"(paired, discordant share {ASSUMED_DISCORDANT} assumed, {p.paired.power:.0%} power, α={p.paired.alpha:g})."
        )
    return (
        f"With {_count(p.n, 'labelled query', 'labelled queries')}, one system's accuracy near 50% is known to "
        f"±{_points(p.accuracy.half_width)} points, and two systems compared on the same queries "
        f"(discordant share {ASSUMED_DISCORDANT}, assumed) must differ by at least "
        f"{_points(p.paired.mdd)} points to be detected ({p.paired.power:.0%} power, α={p.paired.alpha:g})."
    )


_WIDTH_LINES = {
    "accuracy": "half-width, one accuracy (p={s.p:g})",
    "unpaired": "half-width, unpaired difference (p={s.p:g})",
    "paired": "half-width, paired difference (d={s.discordant:g})",
    "per_query": "half-width, per-query differences (sd={s.sd:g})",
}


def plan_text(s: PlanSummary) -> list[str]:
    """A power plan as ``goldpool plan`` prints it: one sentence, then one line per number."""
    lines = [_plan_sentence(s)]
    lines += [f"{_WIDTH_LINES[d].format(s=s)}: ±{_points(w)} points" for d, w in s.half_width]
    if s.mdd is not None:
        mdd = "beyond the 100-point scale" if s.mdd > 1.0 else f"{_points(s.mdd)} points"
        lines.append(f"minimum detectable difference ({s.design.replace('_', '-')}): {mdd}")
    if s.delta is not None:
        lines.append(f"questions needed for {_change(s.delta)} points: {s.n_required}")
    if s.inflation != 1.0:
        lines.append(f"judge inflation 1/(Se+Sp-1): ×{s.inflation:.2f}")
    return lines


def _plan_note(s: PlanSummary) -> str:
    given = {"unpaired": f"p={s.p}", "paired": f"d={s.discordant}", "per_query": f"sd={s.sd}"}[s.design]
    name = {"unpaired": "unpaired", "paired": "paired", "per_query": "paired per-query"}[s.design]
    judge = "" if s.sensitivity is None else f", judge Se={s.sensitivity:g} Sp={s.specificity:g}"
    return f"{name}, {given}, {s.power:.0%} power, α={s.alpha:g}{judge}"


def _plan_sentence(s: PlanSummary) -> str:
    who = "this judge and " if s.sensitivity is not None else ""
    note = _plan_note(s)
    if s.n is None or s.mdd is None:
        return f"Detecting a {_change(s.delta or 0.0)}-point change needs {s.n_required} questions ({note})."
    if s.mdd > 1.0:
        delta = s.delta if s.delta is not None else QUOTED_DELTA
        needed = s.n_required if s.delta is not None else required_n(
            delta, s.design, p=s.p, discordant=s.discordant, sd=s.sd, alpha=s.alpha, power=s.power,  # type: ignore[arg-type]
            sensitivity=s.sensitivity, specificity=s.specificity,
        )
        return (
            f"With {who}{_count(s.n, 'question')} this set cannot resolve any difference yet: the minimum detectable "
            f"difference is beyond the 100-point scale ({note}); it needs ~{needed} questions to detect a "
            f"{_change(delta)}-point difference."
        )
    widths = dict(s.half_width)
    if s.delta is not None:
        verdict = "can" if s.mdd <= s.delta else "cannot"
        return (
            f"With {who}{s.n} questions you {verdict} resolve a {_change(s.delta)}-point change: the minimum "
            f"detectable difference is {_points(s.mdd)} points ({note}); {s.n_required} questions would detect it."
        )
    if s.design == "unpaired":
        return (
            f"With {who}{s.n} questions an accuracy near {s.p:.0%} is known to ±{_points(widths['accuracy'])} points, "
            f"and two systems on different questions to ±{_points(widths['unpaired'])} points; the minimum detectable "
            f"difference is {_points(s.mdd)} points ({note})."
        )
    ratio = ""
    if "unpaired" in widths:
        ratio = f", {widths['unpaired'] / widths[s.design]:.2f} times narrower than unpaired (±{_points(widths['unpaired'])})"
    return (
        f"With {who}{s.n} questions a paired comparison is known to ±{_points(widths[s.design])} points{ratio}; "
        f"the minimum detectable difference is {_points(s.mdd)} points ({note})."
    )


def plain(text: str) -> str:
    """``text`` for a terminal: control characters (an escape sequence's ESC among them) shown
    as U+FFFD, nothing else changed (a terminal draws no Markdown, so nothing is escaped).

    >>> plain("ann_1 *x* \\x1b[31m") == "ann_1 *x* \\ufffd[31m"
    True
    """
    return "".join("\ufffd" if unicodedata.category(c) == "Cc" else c for c in text)


def heading_lines(level: int, text: str, *, markdown: bool) -> list[str]:
    """A heading: ``# text`` in Markdown; in plain text, ``text`` underlined (= then -)."""
    if markdown:
        return ["#" * level + " " + text]
    return [text, ("=" if level == 1 else "-") * len(text)]


def table_lines(header: Sequence[str], rows: Iterable[Sequence[object]], *, markdown: bool) -> list[str]:
    """A table: Markdown pipes, or plain text in columns padded to their widest cell.

    Cells are given ready (escaped for Markdown, :func:`plain` for text) by the caller.

    >>> print("\\n".join(table_lines(["who", "n"], [("ann_1", 5), ("b", 12)], markdown=False)))
    who    n
    -----  --
    ann_1  5
    b      12
    """
    cells = [[str(c) for c in header], *([str(c) for c in row] for row in rows)]
    if markdown:
        out = ["| " + " | ".join(cells[0]) + " |", "|" + "---|" * len(header)]
        return out + ["| " + " | ".join(row) + " |" for row in cells[1:]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    line = lambda row: "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()  # noqa: E731
    return [line(cells[0]), "  ".join("-" * w for w in widths), *map(line, cells[1:])]


def to_markdown(report: ProjectReport) -> str:
    """The project report as Markdown (for the app); annotator names, which people type, are
    escaped."""
    return "\n".join(_report_lines(report, markdown=True)) + "\n"


def to_text(report: ProjectReport) -> str:
    """The project report as plain text for a terminal: the same content as
    :func:`to_markdown`, with underlined headings, aligned columns and nothing escaped."""
    return "\n".join(_report_lines(report, markdown=False)) + "\n"


def _report_lines(report: ProjectReport, *, markdown: bool) -> list[str]:
    name = markdown_escape if markdown else plain
    lines = [
        *heading_lines(1, "Calibration report", markdown=markdown),
        "",
        f"{_count(report.n_judgments, 'relevance judgment')} on {_count(report.n_items, 'pool entry', 'pool entries')} of "
        f"{_count(report.n_queries, 'query', 'queries')} by {_count(len(report.annotators), 'annotator')}; "
        f"{_count(report.n_overlap_items, 'item')} labelled by two or more annotators.",
    ]
    if report.tasks:
        lines.append(tasks_sentence(report.tasks))
    lines += ["", *heading_lines(2, "Inter-annotator agreement (items labelled more than once)", markdown=markdown), ""]
    if report.overlap is None:
        lines.append("No item has been labelled by two annotators yet: assign some overlap to measure agreement.")
    else:
        lines.append(interval_note(report.n_boot, report.overlap.n_groups, report.overlap.ci, report.seed))
        lines.append("Kappa and agreement pool every pair of annotators on each shared item; alpha uses all annotators at once.")
        lines.append(PAIRS_NOTE)
        lines.append("")
        shown = [report.overlap.get("kappa_quadratic")] + ([report.alpha_ordinal] if report.alpha_ordinal else [])
        shown += [report.overlap.get("agreement"), report.overlap.get("majority_baseline")]
        lines += table_lines(["statistic", "value [95% interval]", "n"],
                             [(e.statistic, format_estimate(e), e.n) for e in shown], markdown=markdown)
    lines += ["", *heading_lines(2, "Each annotator against the others", markdown=markdown), ""]
    lines += table_lines(
        ["annotator", "labels", "pairs compared", "quadratic kappa [95% interval]"],
        [
            (name(r.annotator), r.n_labels, r.n_shared, format_estimate(r.kappa_quadratic) if r.kappa_quadratic else "n/a")
            for r in report.per_annotator
        ],
        markdown=markdown,
    )
    lines += ["", *heading_lines(2, "Label distributions", markdown=markdown), ""]
    lines += table_lines(
        ["annotator", *map(str, report.grades), "total"],
        [(name(who), *counts.values(), sum(counts.values())) for who, counts in report.distributions.items()],
        markdown=markdown,
    )
    lines += ["", *heading_lines(2, "What this golden set can resolve", markdown=markdown), ""]
    lines.append(power_sentence(report.power) if report.power else "No labelled queries yet.")
    if report.tasks:
        lines += ["", *heading_lines(2, "Verdicts on the other tasks", markdown=markdown), "", TASKS_NOTE, ""]
        lines += table_lines(TASK_HEADER, task_rows(report.tasks), markdown=markdown)
    return lines


#: What the n of a pooled agreement counts, and so what its confusion matrix sums to.
PAIRS_NOTE = ("n counts annotator pairs on shared items (an item three annotators labelled gives three pairs); "
              "the confusion matrix of the HTML report counts the same pairs, so its cells sum to n.")
#: Under the table of the other tasks' verdicts.
TASKS_NOTE = ("People's current verdicts per task (faithfulness items include answers' whole-answer items, "
              "ANSWER_ID@faithfulness). Agreement and unweighted kappa pool every pair of annotators on each item two "
              "or more labelled; n counts those pairs. A judge against people on these tasks: calibrate --judge NAME; "
              "the generation metrics they give: answer-metrics.")
TASK_HEADER = ("task", "verdicts", "items", "annotators", "items labelled twice or more", "pairs",
               "agreement [95% interval]", "kappa [95% interval]")


def task_rows(tasks: Sequence[TaskVerdicts]) -> list[tuple[object, ...]]:
    """One row per task of :data:`TASK_HEADER`."""
    return [(t.task, t.n_verdicts, t.n_items, len(t.annotators), t.n_overlap_items, t.n_pairs,
             "n/a" if t.agreement is None else format_estimate(t.agreement),
             "n/a" if t.kappa is None else format_estimate(t.kappa)) for t in tasks]


def tasks_sentence(tasks: Sequence[TaskVerdicts]) -> str:
    """``Beside them: 2038 claims verdicts on 2038 items (see Verdicts on the other tasks).``"""
    return ("Beside them: " + ", ".join(f"{_count(t.n_verdicts, f'{t.task} verdict')} on {_count(t.n_items, 'item')}"
                                         for t in tasks)
            + " (see \"Verdicts on the other tasks\" below).")
