"""Generation metrics per batch: ``answer-metrics --by batch``.

Each system's answers are split by the batch they were imported in; each batch gets the rates
``answer-metrics`` gives a system (:func:`labeler.generation.metrics.system_metrics`: people,
the judge, PPI++, intervals clustered by question), and each batch is compared with the one
before it (batches in name order: dates and ISO weeks sort so):

- **paired** where questions repeat: when at least 2 questions, and at least half of the
  smaller batch's questions, have a value in both (per metric and source: a sample of each
  batch may hold other questions), the mean per-question change on them, as systems are
  compared (:func:`calibration.clustered.paired_difference`; PPI++'s by
  :func:`calibration.clustered.ppi_paired_difference`);
- **unpaired** otherwise: the difference of the two batches' means of per-question values,
  Welch's standard error, its MDD (:func:`calibration.clustered.unpaired_difference`); PPI++'s
  from the two batches' PPI++ intervals (normal, so their half-widths give the SEs).

A change is ``after − before``. With a designed sample (``--sample``), people's values weigh
1/π in each batch's rates, and people's and PPI++'s changes are those of two independent
estimates (their difference, the SE from their intervals); the judge's and the text rule's,
on every answer, are as above.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlite_utils

from calibration.clustered import paired_difference, ppi_paired_difference, unpaired_difference
from calibration.stats import normal_quantile, z_for
from labeler.generation.metrics import (DECLINED, METRICS, Design, SystemMetrics, _by_unit, outcomes, sample_design,
                                        system_metrics)
from labeler.generation.outcomes import Outcome
from labeler.store import StoreError
from labeler.store import answers as store
from labeler.store.answer_records import answer_batches
from labeler.store.vocabulary import Caller


@dataclass(frozen=True, slots=True)
class Change:
    """One system's change of one metric from one source between two consecutive batches."""

    system: str
    metric: str
    source: str
    before: str
    after: str
    paired: bool
    difference: float | None  # after − before
    low: float | None
    high: float | None
    mdd: float | None
    n: int  # questions it stands on (paired: in both batches; unpaired: of both)
    why: str | None = None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"system": self.system, "metric": self.metric, "source": self.source,
                               "before": self.before, "after": self.after, "paired": self.paired,
                               "difference": self.difference, "low": self.low, "high": self.high, "mdd": self.mdd,
                               "n": self.n}
        if self.why:
            out["undefined"] = self.why
        return out


@dataclass(frozen=True, slots=True)
class BatchMetrics:
    """Every system's rates per batch and the changes between consecutive batches."""

    systems: Mapping[str, Mapping[str, SystemMetrics]]  # system -> batch -> its metrics
    changes: Sequence[Change]
    batches: Sequence[str]  # every batch, in order
    judge: str | None
    ci: float

    def as_dict(self) -> dict[str, Any]:
        """``{"by": "batch", "batches": [...], "systems": {NAME: {BATCH: {"answers", "words",
        METRIC: {SOURCE: {value, low, high, n, ...}}}}}, "changes": [...], "judge", "ci", "metrics"}``."""
        return {
            "by": "batch", "batches": list(self.batches),
            "systems": {name: {batch: {"answers": m.answers, "words": m.words,
                                       **{metric: {src: r.as_dict() for src, r in m.rates[metric].items()}
                                          for metric in METRICS}}
                               for batch, m in per.items()} for name, per in self.systems.items()},
            "changes": [c.as_dict() for c in self.changes],
            "judge": self.judge, "ci": self.ci, "metrics": list(METRICS),
        }


def batch_metrics(db: sqlite_utils.Database, systems: Sequence[str] = (), *, judge: str | None = None,
                  ci: float = 0.95, sample: str | None = None, caller: Caller) -> BatchMetrics:
    """The metrics of ``systems`` (every one when empty) per batch, and their changes (admin
    only); with ``sample``, of its system in the batches it was drawn from, people's values on
    its answers alone, each weighing 1/π.

    Raises:
        StoreError: an unknown system or sample; the caller is not an admin; no answers.
    """
    design = None if sample is None else sample_design(db, sample, systems)
    names = [design.system] if design else list(dict.fromkeys(systems)) or store.systems(db)
    if not names:
        raise StoreError("no answers in the project: import a system's answers with `goldpool import-answers`")
    weights = None if design is None else design.probabilities
    only = None if design is None else design.batch
    result: dict[str, dict[str, SystemMetrics]] = {}
    changes: list[Change] = []
    every: set[str] = set()
    for name in names:
        people = _split(outcomes(db, name, caller=caller), batch_of := answer_batches(db, name), only)
        judged = None if judge is None else _split(outcomes(db, name, judge=judge, caller=caller), batch_of, only)
        order = sorted(people)
        every.update(order)
        result[name] = {b: system_metrics(name, people[b], None if judged is None else judged[b], ci, weights)
                        for b in order}
        for before, after in zip(order, order[1:]):
            changes += _changes(name, before, after, people, judged, result[name], ci, weights)
    return BatchMetrics(result, changes, sorted(every), judge, ci)


def _split(found: Sequence[Outcome], batch_of: Mapping[str, str], only: str | None = None) -> dict[str, list[Outcome]]:
    out: dict[str, list[Outcome]] = {}
    for o in found:
        if only is None or batch_of[o.answer_id] == only:
            out.setdefault(batch_of[o.answer_id], []).append(o)
    return out


def repeats(a: Mapping[str, float], b: Mapping[str, float]) -> bool:
    """Whether two batches' per-question values are compared paired: at least 2 questions, and
    at least half of the smaller batch's questions, have a value in both.

    >>> repeats({"q1": 1.0, "q2": 0.0, "q3": 1.0}, {"q2": 1.0, "q3": 1.0, "q9": 0.0, "q8": 1.0})
    True
    >>> repeats({"q1": 1.0, "q2": 0.0, "q3": 1.0}, {"q3": 1.0, "q9": 0.0})
    False
    """
    shared = len(a.keys() & b.keys())
    return shared >= 2 and 2 * shared >= min(len(a), len(b))


def _changes(system: str, before: str, after: str, people: Mapping[str, Sequence[Outcome]],
             judged: Mapping[str, Sequence[Outcome]] | None, metrics: Mapping[str, SystemMetrics],
             ci: float, design: Design | None = None) -> list[Change]:
    """Every metric's change from every source, each paired or not by the questions that have
    a value in both batches (:func:`repeats`): a sample of each batch may hold other questions.
    With a ``design``, people's and PPI++'s from their weighted rates (:func:`_from_rates`)."""
    out = []
    for metric in METRICS:
        value = DECLINED if metric == "abstention" else metric
        sides = {"text": (people, "abstention")} if metric == "abstention" else {}
        if design is None:
            sides["people"] = (people, value)
        else:
            out.append(_from_rates(system, metric, before, after, metrics, ci, "people"))
        if judged is not None:
            sides["judge"] = (judged, value)
        for source, (found, of) in sides.items():
            a, b = _by_unit(found[before], of), _by_unit(found[after], of)
            paired = repeats(a, b)
            d = (paired_difference if paired else unpaired_difference)(b, a, ci=ci)
            out.append(_change(system, metric, source, before, after, paired, d, len(a.keys() & b.keys()) if paired
                               else len(a) + len(b)))
        if judged is not None and design is not None:
            out.append(_from_rates(system, metric, before, after, metrics, ci, "ppi"))
        elif judged is not None:
            a, b = _by_unit(people[before], value), _by_unit(people[after], value)
            if repeats(a, b):
                d = ppi_paired_difference({u: b[u] - a[u] for u in a.keys() & b.keys()},
                                          _shared_differences(judged, before, after, value), ci=ci)
                out.append(_change(system, metric, "ppi", before, after, True, d, 0 if d is None else d.n,
                                   why="PPI++ needs questions of both batches the judge labelled and people did not"))
            else:
                out.append(_from_rates(system, metric, before, after, metrics, ci, "ppi"))
    return out


def _shared_differences(judged: Mapping[str, Sequence[Outcome]], before: str, after: str,
                        value: str) -> dict[str, float]:
    a, b = _by_unit(judged[before], value), _by_unit(judged[after], value)
    return {u: b[u] - a[u] for u in a.keys() & b.keys()}


def _change(system: str, metric: str, source: str, before: str, after: str, paired: bool, d: Any, n: int,
            why: str | None = None) -> Change:
    if d is None:
        why = why or ("fewer than 2 questions with a value in both batches" if paired else
                      "fewer than 2 questions with a value in a batch")
        return Change(system, metric, source, before, after, paired, None, None, None, None, n, why=why)
    return Change(system, metric, source, before, after, paired, d.difference, d.low, d.high, d.mdd, d.n)


_SOURCE_NAMES = {"ppi": "PPI++", "people": "people's"}


def _from_rates(system: str, metric: str, before: str, after: str, metrics: Mapping[str, SystemMetrics],
               ci: float, source: str) -> Change:
    """The change of two independent estimates of ``source`` (PPI++'s, or any on a designed
    sample): their difference, the SE from their intervals."""
    a, b = metrics[before].rates[metric][source], metrics[after].rates[metric][source]
    if a.value is None or b.value is None or a.low is None or b.low is None:
        return Change(system, metric, source, before, after, False, None, None, None, None, a.questions + b.questions,
                      why=f"no {_SOURCE_NAMES[source]} value in a batch")
    z = z_for(ci)
    se = math.sqrt(((a.high - a.low) / (2 * z)) ** 2 + ((b.high - b.low) / (2 * z)) ** 2)
    d = b.value - a.value
    mdd = (normal_quantile(0.975) + normal_quantile(0.8)) * se
    return Change(system, metric, source, before, after, False, d, max(-1.0, d - z * se), min(1.0, d + z * se), mdd,
                  a.questions + b.questions)
