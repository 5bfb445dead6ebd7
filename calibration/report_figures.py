"""The pictures of the HTML reports, from the results they print (:mod:`calibration.plots`).

Each function takes a result as its JSON has it (``as_dict()``, the command's contract) or
its value objects, and returns SVG figures; :func:`with_figures` puts figures into a finished
report page, under its heading, so a renderer adds its pictures with one call:

- :func:`answer_metric_figures`: ``answer-metrics`` — every system's rates on one axis
  (a forest plot), and per metric the paired differences with their MDD;
- :func:`comparison_figures`: ``compare`` — each run's paired difference from the baseline
  with the MDD;
- :func:`batch_figures`: ``answer-metrics --by batch`` — per metric, each system's line over
  the batches with its interval band;
- :func:`estimate_figures`: ``eval`` / ``compare`` with ``--judge --sample`` — each run's
  combined estimate of each metric (or its difference from the baseline) with its interval;
- :func:`stage_figures`: ``stages`` — each stage of each system with its interval, and the
  paired differences of two systems with the MDD;
- :func:`judge_figures`: ``calibrate --judge`` — each judge's agreement and kappa with people
  per task, beside the people's own ceiling;
- :func:`share_figures`: ``diagnose`` — the share of the answers in each outcome, Wilson 95%.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from calibration.plots import BatchPoint, Point, batch_plot, forest_plot
from calibration.stats import wilson

__all__ = ["answer_metric_figures", "batch_figures", "comparison_figures", "estimate_figures", "judge_figures",
           "share_figures", "stage_figures", "with_figures"]
#: z of a 95% interval (the shares of :func:`share_figures`).
_Z95 = 1.959963984540054

#: The rates of ``answer-metrics`` drawn, in the report's order, with their names on the page.
RATES = {"faithfulness": "faithfulness", "supported_answers": "supported answers", "correctness": "correctness",
         "answer-relevance": "answer relevance", "abstention": "abstention"}
#: Which source a figure draws, the first a metric has: PPI++ combines people and the judge.
SOURCES = ("ppi", "people", "judge", "text")
_SOURCE_NAMES = {"ppi": "PPI++", "people": "people", "judge": "judge", "text": "text rule"}


def with_figures(page: str, figures: Sequence[str]) -> str:
    """``page`` (a whole HTML report) with ``figures`` under its first heading (before its
    ``</body>`` when it has none); the page unchanged when there is no figure."""
    if not figures:
        return page
    block = "<section class='figures'>" + "".join(figures) + "</section>"
    at = page.find("</h1>")
    if at >= 0:
        at += len("</h1>")
        return page[:at] + block + page[at:]
    at = page.rfind("</body>")
    return page[:at] + block + page[at:] if at >= 0 else page + block


def _source(estimates: Mapping[str, Any]) -> str | None:
    return next((s for s in SOURCES if isinstance(estimates.get(s), Mapping)
                 and estimates[s].get("value") is not None), None)


def _number(value: Any) -> float:
    return float("nan") if value is None else float(value)


def answer_metric_figures(result: Mapping[str, Any]) -> list[str]:
    """The forest plot of every system's rates and, per metric, of the paired differences
    with the MDD, from ``answer-metrics``'s JSON (``systems``, ``pairs``)."""
    points = []
    for system, metrics in (result.get("systems") or {}).items():
        for metric, name in RATES.items():
            source = _source(metrics.get(metric) or {})
            if source is None:
                continue
            e = metrics[metric][source]
            points.append(Point(system, f"{name} ({_SOURCE_NAMES[source]})", _number(e.get("value")),
                                _number(e.get("low")), _number(e.get("high")), n=e.get("n")))
    figures = []
    if points:
        figures.append(forest_plot(points, title=f"Rates per system ({_coverage(result)} intervals)",
                                   axis="share of answers"))
    for metric, name in RATES.items():
        pairs = [p for p in result.get("pairs") or [] if p.get("metric") == metric]
        source = next((s for s in SOURCES if any(p.get("source") == s for p in pairs)), None)
        rows = [Point(f"{p['a']} − {p['b']}", f"{name} difference ({_SOURCE_NAMES.get(source, source)})",
                      _number(p.get("difference")), _number(p.get("low")), _number(p.get("high")),
                      mdd=p.get("mdd"), n=p.get("n")) for p in pairs if p.get("source") == source]
        if any(math.isfinite(r.value) for r in rows):
            figures.append(forest_plot(rows, title=f"Paired differences in {name} (same questions)",
                                       axis=f"difference in {name}", sort=False))
    return figures


def _coverage(result: Mapping[str, Any]) -> str:
    ci = result.get("ci")
    return f"{ci:.0%}" if isinstance(ci, int | float) else "95%"


def comparison_figures(comparisons: Sequence[Any], metric: str) -> list[str]:
    """Each run's paired difference from the baseline, its interval and the MDD, from
    ``compare``'s comparisons (objects or dicts with run, baseline, delta, low, high, mdd, n)."""
    rows = []
    for c in comparisons:
        get = c.get if isinstance(c, Mapping) else lambda k, c=c: getattr(c, k, None)
        rows.append(Point(f"{get('run')} − {get('baseline')}", f"{metric} difference", _number(get("delta")),
                          _number(get("low")), _number(get("high")), mdd=get("mdd"), n=get("n")))
    if not rows:
        return []
    return [forest_plot(rows, title=f"{metric}: paired differences from the baseline",
                        axis=f"difference in {metric}", sort=False)]


def batch_figures(by_batch: Mapping[str, Mapping[str, Mapping[str, Any]]], batches: Sequence[str]) -> list[str]:
    """Per metric, each system's value over ``batches`` with its interval band, from
    ``{system: {batch: {metric: {source: {value, low, high, n}}}}}``."""
    figures = []
    for metric, name in RATES.items():
        points = []
        for system, per_batch in by_batch.items():
            for batch in batches:
                estimates = (per_batch.get(batch) or {}).get(metric) or {}
                source = _source(estimates)
                if source is not None:
                    e = estimates[source]
                    points.append(BatchPoint(f"{system} ({_SOURCE_NAMES[source]})", batch, _number(e.get("value")),
                                             _number(e.get("low")), _number(e.get("high")), n=e.get("n")))
        if points:
            figures.append(batch_plot(points, title=f"{name.capitalize()} per batch", axis="batch", batches=batches))
    return figures


def estimate_figures(runs: Mapping[str, Mapping[str, Any]], *, baseline: str | None = None) -> list[str]:
    """Each run's judge-assisted estimate of each metric, ``{RUN: {METRIC: {value, low, high}}}``
    (the ``runs`` of ``eval --judge --sample --json``, or value objects with ``as_dict()``);
    with ``baseline``, the differences from it, drawn around 0."""
    points = []
    for run, metrics in runs.items():
        for metric, cell in metrics.items():
            e = cell.as_dict() if hasattr(cell, "as_dict") else cell
            points.append(Point(run if baseline is None else f"{run} − {baseline}", metric, _number(e.get("value")),
                                _number(e.get("low")), _number(e.get("high")), n=e.get("n_people")))
    if not points:
        return []
    what = "differences from the baseline" if baseline else "estimates"
    return [forest_plot(points, title=f"Judge-assisted {what}, people and judge combined (95% intervals)",
                        reference=0.0 if baseline else None, sort=baseline is None,
                        axis="difference" if baseline else "metric value")]


def _get(x: Any, key: str) -> Any:
    return x.get(key) if isinstance(x, Mapping) else getattr(x, key, None)


def stage_figures(systems: Mapping[str, Mapping[str, Any]], labels: Mapping[str, str],
                  comparison: tuple[str, Mapping[str, Any]] | None = None) -> list[str]:
    """Each stage (a row, in ``labels``' order) of each system (a series) with its interval,
    from ``{SYSTEM: {STAGE: {mean, low, high, n}}}`` (or value objects); with ``comparison``
    (``(name, {STAGE: {delta, low, high, mdd, n} or None})``), the paired differences with the MDD."""
    points = [Point(labels[key], system, _number(_get(v, "mean")), _number(_get(v, "low")), _number(_get(v, "high")),
                    n=_get(v, "n")) for system, stages in systems.items() for key, v in stages.items() if key in labels]
    if not any(math.isfinite(p.value) for p in points):
        return []
    figures = [forest_plot(points, title="Each stage per system (95% bootstrap intervals over questions)",
                           axis="mean over questions", sort=False)]
    if comparison is not None:
        name, stages = comparison
        rows = [Point(labels[key], name, _number(_get(c, "delta")), _number(_get(c, "low")), _number(_get(c, "high")),
                      mdd=_get(c, "mdd"), n=_get(c, "n")) for key, c in stages.items() if c is not None and key in labels]
        if rows:
            figures.append(forest_plot(rows, title=f"{name}: paired differences per stage (grey: the MDD)",
                                       axis="difference", sort=False))
    return figures


def judge_figures(judges: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> list[str]:
    """Each judge and task (a row) with its agreement and kappa with people and the people's own
    kappa (the ceiling), from ``calibrate --judge``'s JSON ``judges`` ({JUDGE: {TASK: {...}}})."""
    points = []
    for judge, tasks in judges.items():
        for task, t in tasks.items():
            for series, e in (("agreement", t.get("agreement")), ("kappa", t.get("kappa")),
                              ("people's kappa (ceiling)", (t.get("human_ceiling") or {}).get("kappa"))):
                if isinstance(e, Mapping) and e.get("value") is not None:
                    points.append(Point(f"{judge}: {task}", series, _number(e["value"]), _number(e.get("low")),
                                        _number(e.get("high")), n=e.get("n")))
    if not points:
        return []
    return [forest_plot(points, title="Judges against people (95% intervals)", axis="agreement, kappa",
                        sort=False)]


def share_figures(counts: Mapping[str, int], total: int, *, title: str, axis: str = "share of the answers") -> list[str]:
    """Each count's share of ``total`` (a row each, in order) with its Wilson 95% interval."""
    if total <= 0:
        return []
    points = []
    for name, count in counts.items():
        low, high = wilson(count / total, total, _Z95)
        points.append(Point(name, "share", count / total, low, high, n=count))
    return [forest_plot(points, title=title, axis=axis, sort=False)]
