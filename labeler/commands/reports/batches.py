"""``answer-metrics --by batch`` as text and as an HTML page, from its JSON object
(:meth:`labeler.generation.batches.BatchMetrics.as_dict`): render, never compute."""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any

from calibration.report_figures import batch_figures
from calibration.report_page import STYLE, html_table, page_head
from labeler.generation.registry import ANSWER_METRICS, LABELS

#: The source shown for a metric: the first that has a value (PPI++ combines people and the judge).
SOURCES = ("ppi", "people", "judge", "text")
_NAMES = {"ppi": "PPI++", "people": "people", "judge": "judge", "text": "text rule"}


def _f(x: float | None, *, sign: bool = False) -> str:
    return "n/a" if x is None else (f"{x:+.3f}" if sign else f"{x:.3f}")


def _rate(estimates: Mapping[str, Any]) -> str:
    source = next((s for s in SOURCES if (estimates.get(s) or {}).get("value") is not None), None)
    if source is None:
        return "n/a"
    e = estimates[source]
    return f"{_f(e['value'])} [{_f(e['low'])}, {_f(e['high'])}] {_NAMES[source]}, n={e['n']}"


def _change(c: Mapping[str, Any]) -> str:
    if c.get("difference") is None:
        return f"{LABELS[c['metric']]} ({_NAMES[c['source']]}): n/a ({c.get('undefined', 'undefined')})"
    return (f"{LABELS[c['metric']]} ({_NAMES[c['source']]}) {_f(c['difference'], sign=True)} "
            f"[{_f(c['low'], sign=True)}, {_f(c['high'], sign=True)}], MDD {_f(c['mdd'])}")


def _shown_changes(d: Mapping[str, Any], system: str) -> dict[tuple[str, str, bool, int], list[Mapping[str, Any]]]:
    """Per consecutive pair of batches, the change of each metric from the source its rate shows."""
    out: dict[tuple[str, str, bool, int], list[Mapping[str, Any]]] = {}
    per = d["systems"][system]
    for c in d["changes"]:
        if c["system"] != system:
            continue
        after = per[c["after"]][c["metric"]]
        shown = next((s for s in SOURCES if (after.get(s) or {}).get("value") is not None), None)
        if c["source"] == shown:
            out.setdefault((c["before"], c["after"], c["paired"], c["n"]), []).append(c)
    return out


def to_text(d: Mapping[str, Any]) -> str:
    """Per system, a row per batch (each metric's value, interval, source and n), then each
    change between consecutive batches, paired or not, with its MDD."""
    lines = []
    for system, per in d["systems"].items():
        lines.append(f"{system}: {len(per)} batch{'es' if len(per) != 1 else ''} ({d['ci']:.0%} intervals)")
        for batch, m in per.items():
            lines.append(f"  {batch}: {m['answers']} answers")
            lines += [f"    {LABELS[metric]}: {_rate(m[metric])}" for metric in ANSWER_METRICS]
        for (before, after, paired, n), changes in _shown_changes(d, system).items():
            how = f"paired on {n} questions in both" if paired else f"unpaired, {n} questions"
            lines.append(f"  {before} -> {after} ({how}):")
            lines += [f"    {_change(c)}" for c in changes]
        lines.append("")
    lines.append("A change whose interval holds 0 says nothing about changes smaller than its MDD (80% power).")
    return "\n".join(lines) + "\n"


def to_html(d: Mapping[str, Any], title: str = "Generation metrics per batch") -> str:
    """One page: per metric the batch plot (every system's line and band), then the tables."""
    parts = [page_head(title),
             f"<style>{STYLE}</style></head><body><h1>{escape(title)}</h1>",
             *batch_figures(d["systems"], d["batches"])]
    for system, per in d["systems"].items():
        parts.append(f"<h2>{escape(system)}</h2>")
        parts.append(html_table(["batch", "answers", *(LABELS[m] for m in ANSWER_METRICS)],
                                [[batch, m["answers"], *(_rate(m[metric]) for metric in ANSWER_METRICS)]
                                 for batch, m in per.items()]))
        rows = [[f"{before} → {after}", "paired" if paired else "unpaired", n, _change(c)]
                for (before, after, paired, n), changes in _shown_changes(d, system).items() for c in changes]
        if rows:
            parts.append(html_table(["batches", "design", "questions", "change (after − before), interval, MDD"], rows))
    parts.append("<p class='note'>A change whose interval holds 0 says nothing about changes smaller than its MDD "
                 "(80% power).</p></body></html>")
    return "".join(parts)
