"""Generation metrics per batch: ``answer-metrics --by batch``.

Each system's answers are split by the batch they were imported in; each batch gets the rates
``answer-metrics`` gives a system (:func:`labeler.generation.metrics.system_metrics`: people,
the judge, PPI++, intervals clustered by question), and each batch is compared with the one
before it (batches in name order: dates and ISO weeks sort so):

- **paired** where questions repeat: when at least 2 questions, and at least half of the
  smaller batch's questions, are in both, the mean per-question change on them, as systems
  are compared (:func:`labeler.generation.metrics.compare`);
- **unpaired** otherwise: the difference of the two batches' means of per-question values,
  Welch's standard error, its MDD (:func:`calibration.clustered.unpaired_difference`); PPI++'s
  from the two batches' PPI++ intervals (normal, so their half-widths give the SEs).

A change is ``after − before``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlite_utils

from labeler.generation.metrics import (DECLINED, METRICS, SystemMetrics, _by_unit, compare, outcomes, system_metrics)
from labeler.generation.outcomes import Outcome
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
                  ci: float = 0.95, caller: Caller) -> BatchMetrics:
    """The metrics of ``systems`` (every one when empty) per batch, and their changes (admin only).

    Raises:
        StoreError: an unknown system; the caller is not an admin; no answers.
    """
    from labeler.store import StoreError

    names = list(dict.fromkeys(systems)) or store.systems(db)
    if not names:
        raise StoreError("no answers in the project: import a system's answers with `goldpool import-answers`")
    result: dict[str, dict[str, SystemMetrics]] = {}
    changes: list[Change] = []
    every: set[str] = set()
    for name in names:
        people = _split(outcomes(db, name, caller=caller), batch_of := answer_batches(db, name))
        judged = None if judge is None else _split(outcomes(db, name, judge=judge, caller=caller), batch_of)
        order = sorted(people)
        every.update(order)
        result[name] = {b: system_metrics(name, people[b], None if judged is None else judged[b], ci) for b in order}
        for before, after in zip(order, order[1:]):
            changes += _changes(name, before, after, people, judged, result[name], ci)
    return BatchMetrics(result, changes, sorted(every), judge, ci)


def _split(found: Sequence[Outcome], batch_of: Mapping[str, str]) -> dict[str, list[Outcome]]:
    out: dict[str, list[Outcome]] = {}
    for o in found:
        out.setdefault(batch_of[o.answer_id], []).append(o)
    return out


def _paired(people: Mapping[str, Sequence[Outcome]], before: str, after: str) -> tuple[bool, int]:
    a, b = {o.unit for o in people[before]}, {o.unit for o in people[after]}
    shared = len(a & b)
    return shared >= 2 and 2 * shared >= min(len(a), len(b)), shared


def _changes(system: str, before: str, after: str, people: Mapping[str, Sequence[Outcome]],
             judged: Mapping[str, Sequence[Outcome]] | None, metrics: Mapping[str, SystemMetrics],
             ci: float) -> list[Change]:
    paired, _shared = _paired(people, before, after)
    if paired:
        return [Change(system, p.metric, p.source, before, after, True, p.difference, p.low, p.high, p.mdd, p.n, p.why)
                for p in compare(after, before, people, judged, ci)]
    out = []
    for metric in METRICS:
        value = DECLINED if metric == "abstention" else metric
        sides = {"text": (people, "abstention")} if metric == "abstention" else {}
        sides["people"] = (people, value)
        if judged is not None:
            sides["judge"] = (judged, value)
        for source, (found, of) in sides.items():
            out.append(_unpaired(system, metric, source, before, after, _by_unit(found[before], of),
                                 _by_unit(found[after], of), ci))
        if judged is not None:
            out.append(_ppi_unpaired(system, metric, before, after, metrics, ci))
    return out


def _unpaired(system: str, metric: str, source: str, before: str, after: str, a: Mapping[str, float],
              b: Mapping[str, float], ci: float) -> Change:
    from calibration.clustered import unpaired_difference

    d = unpaired_difference(b, a, ci=ci)
    if d is None:
        return Change(system, metric, source, before, after, False, None, None, None, None, len(a) + len(b),
                      why="fewer than 2 questions with a value in a batch")
    return Change(system, metric, source, before, after, False, d.difference, d.low, d.high, d.mdd, d.n)


def _ppi_unpaired(system: str, metric: str, before: str, after: str, metrics: Mapping[str, SystemMetrics],
                  ci: float) -> Change:
    """The change of two independent PPI++ estimates: their difference, SE from their intervals."""
    from calibration.stats import normal_quantile, z_for

    a, b = metrics[before].rates[metric]["ppi"], metrics[after].rates[metric]["ppi"]
    if a.value is None or b.value is None or a.low is None or b.low is None:
        return Change(system, metric, "ppi", before, after, False, None, None, None, None, a.questions + b.questions,
                      why="no PPI++ value in a batch")
    z = z_for(ci)
    se = math.sqrt(((a.high - a.low) / (2 * z)) ** 2 + ((b.high - b.low) / (2 * z)) ** 2)
    d = b.value - a.value
    mdd = (normal_quantile(0.975) + normal_quantile(0.8)) * se
    return Change(system, metric, "ppi", before, after, False, d, max(-1.0, d - z * se), min(1.0, d + z * se), mdd,
                  a.questions + b.questions)
