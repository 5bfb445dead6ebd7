"""How the judge commands show two judges compared and the items a judge and people part on:
plain text for a terminal (control characters shown as U+FFFD) and one self-contained HTML page
(every text from the data escaped)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from html import escape
from typing import Any

from calibration import format_estimate
from calibration.report import plain
from calibration.report_page import STYLE, page_head

#: Characters of each text a terminal listing shows (the HTML page shows them whole).
TEXT_CHARS = 300


def _fmt(e: Any) -> str:
    return "n/a" if e is None else format_estimate(e)


def paired_text(c: Any) -> str:
    """A :class:`labeler.judges.paired.JudgeComparison` in words, one block per task."""
    lines = [f"{plain(c.a)} against {plain(c.b)} with people on the same items (A - B; 95% paired cluster bootstrap "
             f"over queries, {c.n_boot} resamples, seed {c.seed}):"]
    for task, p in c.tasks.items():
        kappa = "quadratic kappa" if p.weights == "quadratic" else "kappa"
        lines += ["", f"{task}: n = {p.n_items} items ({p.n_pairs} comparisons with people), the judges differ on "
                      f"{p.n_changed}",
                  f"  agreement: A {_fmt(p.agreement_a)}, B {_fmt(p.agreement_b)}, difference {_fmt(p.agreement_difference)}",
                  f"  {kappa}: A {_fmt(p.kappa_a)}, B {_fmt(p.kappa_b)}, difference {_fmt(p.kappa_difference)}"]
        lines.append("  " + verdict_of(p.kappa_difference, c.a, c.b))
    for task, why in c.skipped.items():
        lines += ["", f"{task}: not compared ({why})"]
    return "\n".join(lines) + "\n"


def verdict_of(d: Any, a: str, b: str) -> str:
    """What a difference of kappa says, in words."""
    if d.low != d.low or d.high != d.high:  # NaN: no interval
        return "no interval (too few queries): no evidence either way."
    if d.low > 0:
        return f"{plain(a)} agrees with people better than {plain(b)} (the interval is above 0)."
    if d.high < 0:
        return f"{plain(b)} agrees with people better than {plain(a)} (the interval is below 0)."
    return "the interval holds 0: no evidence that either agrees with people better on these items."


def _line(text: str) -> str:
    flat = plain(" ".join(text.split()))
    return flat if len(flat) <= TEXT_CHARS else flat[:TEXT_CHARS] + "…"


def _people(people: dict[str, str]) -> str:
    return ", ".join(f"{name} {label}" for name, label in people.items())


def disagreement_title(d: Any) -> str:
    """``f2: bob UNSUPPORTED, judge SUPPORTED``: an item, each person's label, the judge's."""
    return f"{d.item}: {_people(d.people)}, judge {d.judge}"


def disagreements_text(judge: str, found: Sequence[Any]) -> str:
    """The listing of ``goldpool disagreements``: a count per task, then each item with its texts."""
    per_task = Counter(d.task for d in found)
    unanimous = sum(d.unanimous for d in found)
    head = (f"{len(found)} item{'s' if len(found) != 1 else ''} where judge {plain(judge)} and people disagree"
            + (f" ({', '.join(f'{t}: {n}' for t, n in per_task.items())})" if found else "")
            + f"; {unanimous} on which the people are unanimous, listed first.")
    lines = [head]
    for d in found:
        lines += ["", f"[{d.task}] {plain(disagreement_title(d))}" + (" (people unanimous)" if d.unanimous else " (people split)")]
        lines += [f"  {name}: {_line(text)}" for name, text in d.texts.items()]
    return "\n".join(lines) + "\n"


def disagreements_html(judge: str, found: Sequence[Any]) -> str:
    """The same listing as one self-contained HTML page, every text escaped and shown whole."""
    title = f"Where judge {judge} and people disagree"
    parts = [page_head(title), f"<style>{STYLE} pre{{white-space:pre-wrap;margin:0}}</style></head><body><h1>{escape(title)}</h1>",
             f"<p>{len(found)} items; those on which the people are unanimous first.</p>"]
    for d in found:
        people = escape(_people(d.people)) + (" (unanimous)" if d.unanimous else " (split)")
        rows = "".join(f"<tr><th>{escape(name)}</th><td><pre>{escape(text)}</pre></td></tr>" for name, text in d.texts.items())
        parts.append(f"<h2>{escape(d.task)}: {escape(d.item)}</h2><p>judge <b>{escape(d.judge)}</b>; people: {people}</p>"
                     f"<table>{rows}</table>")
    parts.append("</body></html>\n")
    return "\n".join(parts)
