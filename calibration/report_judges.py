"""The judges-against-people report as text, Markdown and one self-contained HTML page, built from
its JSON (``{"judges": {NAME: {TASK: {...}}}, "n_boot", "seed", "relevance_level", "nuggets"}``:
what ``labeler.judges.report.JudgeReport.as_dict`` returns): a leaderboard of every judge and
task, then each task's details, then each nugget judge's run level (the order of systems, what
people kept of its nuggets).

Every function takes the report's JSON or an object whose ``as_dict()`` gives it. Every text
from the data is escaped (Markdown: :func:`calibration.formatting.markdown_escape`, HTML:
:func:`html.escape`); plain text shows control characters as U+FFFD.
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any, Protocol

import numpy as np

from calibration.formatting import fixed, markdown_escape
from calibration.report import heading_lines, plain, table_lines
from calibration.report_figures import judge_figures, with_figures
from calibration.report_html import confusion_svg
from calibration.report_page import STYLE, collapsed, html_table, page_head, wide

#: The verdict a person gives a "claim" that is not one checkable claim (the claims task's flag).
FLAG = "NOT_ONE_CLAIM"
#: The leaderboard's columns.
BOARD_HEADER = ["judge", "task", "n", "agreement", "kappa", "unweighted kappa", "human ceiling kappa", "majority baseline",
                "position consistency", "first-slot preference", "unparseable", "tokens/verdict", "s/verdict"]


class _HasDict(Protocol):
    def as_dict(self) -> dict[str, Any]: ...


Report = Mapping[str, Any] | _HasDict


def _data(report: Report) -> Mapping[str, Any]:
    return report if isinstance(report, Mapping) else report.as_dict()


def _fmt(e: Mapping[str, Any] | None) -> str:
    """An estimate's JSON (``{value, low, high, n}``, ``undefined``: why) as
    :func:`calibration.report.format_estimate` writes the estimate: ``0.512 [0.480, 0.540]``.

    >>> _fmt({"value": 0.5123, "low": 0.48, "high": 0.54, "n": 40}), _fmt(None)
    ('0.512 [0.480, 0.540]', 'n/a')
    >>> _fmt({"value": None, "low": None, "high": None, "n": 1, "undefined": "one item"})
    'undefined (one item)'
    """
    if e is None:
        return "n/a"
    if e["value"] is None:
        return f"undefined ({e['undefined']})" if e.get("undefined") else "n/a"
    if e["low"] is None:
        return fixed(e["value"])
    return f"{fixed(e['value'])} [{fixed(e['low'])}, {fixed(e['high'], missing='nan')}]"


def confusion_note(n_items: int, n_pairs: int) -> str:
    """What the confusion matrix counts, beside the n of the table (items)."""
    return (f"one count per person's verdict on an item the judge also judged: {n_pairs} comparison"
            f"{'s' if n_pairs != 1 else ''} on the n = {n_items} item{'s' if n_items != 1 else ''} above (an item two "
            "people labelled counts twice); agreement and kappa are over the same comparisons.")


def flag_note(n: int) -> str:
    """What the claims comparison leaves out, in words."""
    return (f"{n} claim{'s' if n != 1 else ''} a person flagged as not one checkable claim ({FLAG}) "
            f"{'are' if n != 1 else 'is'} left out of the judge's agreement with people and of the human ceiling: "
            "a flag judges how the answer was split, and a judge is never asked it.")


def retest_line(d: Mapping[str, Any]) -> str:
    """A task's JSON (its ``retest``, ``kappa`` and ``human_ceiling``): the judge against itself,
    beside its agreement with people and people's ceiling, in words."""
    r = d.get("retest")
    if r is None or r["repeats"] <= 1:
        return ("Test-retest: not measured (one call an item; run-judge --repeats 2 or more asks each item again "
                "and combines the calls by majority).")
    return (f"Test-retest over {r['repeats']} repeats, n = {r['n']} items ({r['n_pairs']} pairs of repeats): kappa "
            f"{_fmt(r['kappa'])}, flip rate {_fmt(r['flip_rate'])}, {r['ties']} tied; beside kappa with people "
            f"{_fmt(d['kappa'])} and people's ceiling {_fmt(d['human_ceiling']['kappa'])}. Every figure here rests on "
            "the majority verdict of the repeats.")


def _per_verdict(x: float | None, digits: int) -> str:
    return "n/a" if x is None else f"{x:.{digits}f}"


def board(report: Report) -> tuple[list[str], list[list[str]]]:
    """The leaderboard: a header and one row of formatted statistics per (judge, task)."""
    rows = []
    for name, tasks in _data(report)["judges"].items():
        for task, t in tasks.items():
            rows.append([name, task, str(t["n"]), _fmt(t["agreement"]), _fmt(t["kappa"]), _fmt(t["kappa_unweighted"]),
                         _fmt(t["human_ceiling"]["kappa"]), _fmt(t["majority_baseline"]), _fmt(t["position_consistency"]),
                         _fmt(t["first_slot_preference"]), _fmt(t["unparseable_rate"]),
                         _per_verdict(t["tokens_per_verdict"], 1), _per_verdict(t["seconds_per_verdict"], 2)])
    return list(BOARD_HEADER), rows


def to_markdown(report: Report, max_disagreements: int = 10) -> str:
    """The judges side by side (a leaderboard), then each task's details, as Markdown."""
    return "\n".join(_report_lines(_data(report), max_disagreements, markdown=True)) + "\n"


def to_text(report: Report, max_disagreements: int = 10) -> str:
    """The same report as plain text for a terminal: underlined headings, aligned columns,
    nothing escaped (control characters shown as U+FFFD)."""
    return "\n".join(_report_lines(_data(report), max_disagreements, markdown=False)) + "\n"


def _report_lines(data: Mapping[str, Any], max_disagreements: int, *, markdown: bool) -> list[str]:
    text = markdown_escape if markdown else plain
    header, rows = board(data)
    lines = [*heading_lines(1, "Judges against people", markdown=markdown), "",
             "Kappa is quadratic for relevance, linear for nugget support, unweighted otherwise; the human ceiling compares people with each other "
             "on the items the judge also labelled. Intervals: 95% cluster bootstrap over queries (the question, for "
             f"items other than pool entries), {data['n_boot']} resamples, seed {data['seed']}; rates: Wilson.", ""]
    lines += table_lines(header, [[text(row[0]), *row[1:]] for row in rows], markdown=markdown)
    for name, tasks in data["judges"].items():
        for task in tasks:
            lines += ["", *heading_lines(2, f"{text(name)}: {task}", markdown=markdown), "",
                      *task_lines(data, name, task, max_disagreements, markdown=markdown)]
    for name, c in data.get("nuggets", {}).items():
        lines += ["", *heading_lines(2, f"{text(name)}: nuggets, run level", markdown=markdown), "",
                  *(text(line) for line in nugget_lines(c))]
    return lines


def nugget_lines(c: Mapping[str, Any]) -> list[str]:
    """A judge's run-level nugget calibration (its JSON) in lines: Kendall's τ of the systems'
    order per score, then its nuggetizer shares."""
    lines = []
    for metric, e in c["order"].items():
        lines.append(f"Kendall's tau of the systems' order by {metric}, judge against people: "
                     + (f"{_fmt(e)} over {e['n']} questions" if e is not None else f"n/a ({c['order_undefined']})"))
    s = c.get("nuggetizer")
    if s is not None:
        lines.append(f"As nuggetizer: {s['proposals']} proposals, {s['pending']} not decided yet; of those decided, kept "
                     f"{_fmt(s['kept'])}, edited {_fmt(s['edited'])}, dropped {_fmt(s['dropped'])}; people's own "
                     f"nuggets on those {s['questions']} questions (missed by it): {_fmt(s['missed'])}.")
    return lines


def task_markdown(report: Report, name: str, task: str, max_disagreements: int = 10) -> list[str]:
    """Markdown lines of one judge's task: MDD sentence, prompts, human ceiling, biases, confusion
    and the first ``max_disagreements`` disagreements (every text from the data escaped)."""
    return task_lines(report, name, task, max_disagreements, markdown=True)


def _where(x: Mapping[str, Any]) -> str:
    return x.get("item_id") or f"{x['query_id']} / {x['doc_id']}"


def task_lines(report: Report, name: str, task: str, max_disagreements: int = 10, *, markdown: bool) -> list[str]:
    """The lines of one judge's task (:func:`task_markdown`), as Markdown or as plain text."""
    text = markdown_escape if markdown else plain
    d = _data(report)["judges"][name][task]
    lines = [d["power"]["sentence"], ""]
    hashes = d["prompt_hashes"]
    if len(hashes) > 1:
        lines += [f"Verdicts under {len(hashes)} prompts ({', '.join(hashes)}): the latest verdict of each item counts.", ""]
    ceiling = d["human_ceiling"]
    lines.append(f"Human ceiling on the {ceiling['n']} items two or more people labelled: agreement "
                 f"{_fmt(ceiling['agreement'])}, kappa {_fmt(ceiling['kappa'])}.")
    lines.append(retest_line(d))
    if task == "claims":
        lines.append(flag_note(d["n_flagged_left_out"]))
    if "verbosity" in d:  # a pairwise task
        for label, r in (("Verbosity (longer answer wins)", d["verbosity"]),
                         (f"Self-preference (family {text(d['judge_family'] or 'unknown')})", d["self_preference"])):
            lines.append(f"{label}: " + ("no qualifying pair." if r is None else
                         f"judge {_fmt(r['judge'])}, people {_fmt(r['human'])}, difference {_fmt(r['difference'])}."))
    if d["confusion"] is not None:
        labels = d["confusion"]["labels"]
        lines += ["", "Confusion (rows people, columns judge): " + confusion_note(d["n"], d["n_pairs"]), ""]
        lines += table_lines(["", *map(str, labels)],
                             [[str(lab), *map(str, row)] for lab, row in zip(labels, d["confusion"]["table"], strict=True)],
                             markdown=markdown)
    if max_disagreements <= 0:
        return lines
    shown = d["disagreements"][:max_disagreements]
    lines += ["", f"{len(d['disagreements'])} disagreements" + (f" (first {len(shown)}):" if shown else ".")]
    for x in shown:
        lines.append(f"- {text(str(_where(x)))}: {text(x['annotator'])} {x['human']}, judge {x['judge']}")
    return lines


def to_html(report: Report, title: str = "Judges against people") -> str:
    """The same report as one self-contained HTML page (every text from the data escaped).

    Readable with thousands of disagreements: the leaderboard scrolls sideways in its own box
    when wider than the page, and each task's disagreements are a collapsed list; a forest plot
    of each judge's agreement and kappa beside people's own opens it."""
    data = _data(report)
    header, rows = board(data)
    parts = [page_head(title), f"<style>{STYLE}</style></head><body><h1>{escape(title)}</h1>",
             wide(html_table(header, rows))]
    for name, tasks in data["judges"].items():
        for task, d in tasks.items():
            parts += [f"<h2>{escape(name)}: {escape(task)}</h2>", f"<p>{escape(d['power']['sentence'])}</p>",
                      f"<p>{escape(retest_line(d))}</p>"]
            if task == "claims":
                parts.append(f"<p>{escape(flag_note(d['n_flagged_left_out']))}</p>")
            if d["confusion"] is not None:
                parts.append(f"<p class='note'>Confusion: {escape(confusion_note(d['n'], d['n_pairs']))}</p>")
                parts.append(confusion_svg(d["confusion"]["labels"], np.asarray(d["confusion"]["table"]), "rows: people",
                                           "columns: judge"))
            found = d["disagreements"]
            if not found:
                parts.append("<p>No disagreement between the judge and people.</p>")
                continue
            parts.append(collapsed(
                f"{len(found):,} disagreement{'s' if len(found) != 1 else ''} between the judge and people (open to list)",
                html_table(["item", "annotator", "people", "judge"],
                           [(_where(x), x["annotator"], x["human"], x["judge"]) for x in found])))
    for name, c in data.get("nuggets", {}).items():
        parts.append(f"<h2>{escape(name)}: nuggets, run level</h2>" + "".join(f"<p>{escape(x)}</p>" for x in nugget_lines(c)))
    parts.append("</body></html>\n")
    return with_figures("\n".join(parts), judge_figures(data["judges"]))
