"""Prediction-powered estimates of a metric from a judge's labels and the annotators' labels.

Metrics (``--metric``), each the mean over items of a per-item value:

- ``mean-relevance``: the relevance grade (0-3) of a pool entry;
- ``relevant-share``: 1 when the grade is at least ``threshold``, the relevance level
  (default 1, trec_eval's ``-l`` default, as every other command), else 0;
- ``faithfulness-rate``: 1 when the response is SUPPORTED, else 0;
- ``win-rate``: 1 when response A wins, 0.5 for a tie, 0 when B wins (the judge's two orders
  combined: a flip is a tie).

An item's human value is the mean over its annotators. Items with both a judge label and human
labels are the labelled set, items with only the judge's label the unlabelled set; items with
human labels and no usable judge label are left out (counted). PPI assumes the labelled items
are a random sample of all items: label a random subset, not the hard cases.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import sqlite_utils

from calibration import CalibrationError
from calibration.judges import combine_orders
from calibration.ppi import MeanEstimates, ppi_mean
from labeler.generation.abstention import is_abstention
from labeler.generation.registry import BY_NAME, ITEM_METRICS
from labeler.judges import JudgeError
from labeler.store.labels import latest_judgments
from labeler.store.verdicts import latest_human_verdicts, latest_judge_verdicts, list_items
from labeler.store.vocabulary import RELEVANCE_LEVEL, Caller

#: The relevance metrics (means over pool entries) -> the range of an entry's value; the
#: generation ones are the registry's item metrics (:mod:`labeler.generation.registry`).
_RELEVANCE = {"mean-relevance": (0.0, 3.0), "relevant-share": (0.0, 1.0)}
METRICS = (*_RELEVANCE, *ITEM_METRICS)
#: The task whose labels each metric is a mean of (the judge's card for it goes beside the numbers).
METRIC_TASK = {**dict.fromkeys(_RELEVANCE, "relevance"), **{m: BY_NAME[m].task for m in ITEM_METRICS}}
_WIN = {"A": 1.0, "TIE": 0.5, "B": 0.0}
#: The range each metric's per-item value lives in: estimates and intervals are kept inside it.
BOUNDS = {**_RELEVANCE, **{m: BY_NAME[m].bounds for m in ITEM_METRICS}}


@dataclass(frozen=True, slots=True)
class MetricEstimate:
    """A metric's estimates (``calibration.ppi.MeanEstimates``) for classic PPI and PPI++."""

    judge: str
    metric: str
    threshold: int  # the relevance level of relevant-share
    classic: MeanEstimates
    tuned: MeanEstimates
    n_left_out: int  # items with human labels but no usable judge label
    ci: float = 0.95
    #: faithfulness-rate: (items whose response is empty or declines, items estimated over). An
    #: abstention is perfectly faithful and useless, so the rate is never shown without it.
    abstention: tuple[int, int] | None = None

    def as_dict(self) -> dict[str, Any]:
        """The numbers for JSON; each interval is ``{value, low, high, n}`` (``null`` when undefined)."""
        t, c = self.tuned, self.classic
        return {
            "judge": self.judge, "metric": self.metric, "threshold": self.threshold if self.metric == "relevant-share" else None,
            "relevance_level": self.threshold if self.metric == "relevant-share" else None,
            "ci": self.ci, "n_labelled": t.n_labelled, "n_unlabelled": t.n_unlabelled, "n_left_out": self.n_left_out,
            "ppi": c.ppi.as_dict(), "ppi_plus_plus": t.ppi.as_dict(), "lambda": t.lam,
            "human_only": t.human_only.as_dict(), "judge_only": t.judge_only,
            "human_labels_worth": t.worth, "human_labels_worth_classic": c.worth,
            "abstention": None if self.abstention is None else {
                "abstained": self.abstention[0], "items": self.abstention[1],
                "rate": self.abstention[0] / self.abstention[1] if self.abstention[1] else None},
        }


def _value(metric: str, label: object, threshold: int) -> float:
    if metric == "mean-relevance":
        return float(label)  # type: ignore[arg-type]
    if metric == "relevant-share":
        return float(int(label) >= threshold)  # type: ignore[call-overload]
    if metric == "faithfulness-rate":
        return float(label == "SUPPORTED")
    return _WIN[label]  # type: ignore[index]


def _judge_values(db, judge: str, task: str, metric: str, threshold: int, caller) -> dict:
    rows = [r for r in latest_judge_verdicts(db, judge, caller=caller) if r.task == task]
    if task == "relevance":
        return {(r.query_id, r.doc_id): _value(metric, r.verdict, threshold) for r in rows if r.verdict is not None}
    got: dict[str, dict] = defaultdict(dict)
    for r in rows:
        got[r.item_id][r.shown_order] = r.verdict
    out = {}
    for item_id, orders in got.items():
        if task == "pairwise" and ("AB" in orders or "BA" in orders):
            label = combine_orders(orders.get("AB"), orders.get("BA"), asked_both="AB" in orders and "BA" in orders)
        else:
            label = orders.get(None)
        if label is not None:
            out[item_id] = _value(metric, label, threshold)
    return out


def _human_values(db, task: str, metric: str, threshold: int, caller) -> dict:
    values: dict[object, list[float]] = defaultdict(list)
    if task == "relevance":
        for j in latest_judgments(db, caller=caller):
            values[(j.query_id, j.doc_id)].append(_value(metric, j.relevance, threshold))
    else:
        for v in latest_human_verdicts(db, caller=caller):
            if v.kind == task:
                values[v.item_id].append(_value(metric, v.verdict, threshold))
    return {k: sum(v) / len(v) for k, v in values.items()}


def estimate(
    db: sqlite_utils.Database, judge: str, metric: str, *, threshold: int = RELEVANCE_LEVEL, ci: float = 0.95,
    caller: Caller,
) -> MetricEstimate:
    """The metric by PPI and PPI++, beside the human-only and judge-only estimates (admin only).

    Raises:
        JudgeError: an unknown metric, or too few labelled/unlabelled items.
    """
    if metric not in METRICS:
        raise JudgeError(f"metric {metric!r}: choose one of {', '.join(METRICS)}")
    task = METRIC_TASK[metric]
    judged = _judge_values(db, judge, task, metric, threshold, caller)
    human = _human_values(db, task, metric, threshold, caller)
    labelled = sorted((k for k in judged if k in human), key=str)
    unlabelled = [judged[k] for k in sorted(judged, key=str) if k not in human]
    y = [human[k] for k in labelled]
    f = [judged[k] for k in labelled]
    try:
        classic = ppi_mean(y, f, unlabelled, ci=ci, tuned=False, bounds=BOUNDS[metric])
        tuned = ppi_mean(y, f, unlabelled, ci=ci, tuned=True, bounds=BOUNDS[metric])
    except CalibrationError as exc:
        raise JudgeError(f"judge {judge!r}, {metric}: {exc}") from None
    abstention = _abstention(db, set(judged) | set(human)) if task == "faithfulness" else None
    return MetricEstimate(judge, metric, threshold, classic, tuned, sum(1 for k in human if k not in judged), ci,
                          abstention)


def _abstention(db: sqlite_utils.Database, item_ids: set) -> tuple[int, int]:
    """(items among ``item_ids`` whose response is empty or declines, items)."""
    responses = [i.response or "" for i in list_items(db, "faithfulness") if i.item_id in item_ids]
    return sum(map(is_abstention, responses)), len(responses)
